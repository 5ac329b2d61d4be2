// short_kernel, mul, muladd and add_out: argument checks and dispatch to the
// element-wise kernels.
#include <torch/library.h>

#include "device.h"

namespace my_ops {
namespace {

// Runs an element-wise kernel over n contiguous elements: parallel chunks on
// the CPU, one launch on CUDA.
template <typename CpuKernel, typename CudaLaunch>
void run_elementwise(const char *op, const at::Tensor &like, int64_t n, const CpuKernel &cpu,
                     const CudaLaunch &cuda) {
    if (n == 0) return;
    if (like.is_cuda()) {
        cuda_launch(op, like.device(), cuda);
    } else {
        cpu_parallel(n, grain_for(1), [&](int64_t begin, int64_t end) {
            check_status(op, cpu(begin, end - begin));
        });
    }
}

at::Tensor short_kernel(const at::Tensor &x) {
    check_input("short_kernel", "x", x);
    const auto xc = x.contiguous();
    auto out = at::empty(x.sizes(), x.options());
    const auto dt = kernel_dtype(x);
    run_elementwise(
        "short_kernel", x, x.numel(),
        [&](int64_t i, int64_t n) {
            return my_ops_short_kernel_cpu(dt, element_ptr(xc, i), mutable_element_ptr(out, i), n);
        },
        [&](void *stream) {
            return my_ops_short_kernel_cuda(dt, xc.const_data_ptr(), out.data_ptr(), x.numel(), stream);
        });
    return out;
}

void check_binary(const char *op, const at::Tensor &a, const at::Tensor &b) {
    check_input(op, "a", a);
    check_like(op, "a", a, "b", b);
    check_same_shape(op, "a", a, "b", b);
}

at::Tensor mul(const at::Tensor &a, const at::Tensor &b) {
    check_binary("mul", a, b);
    const auto ac = a.contiguous(), bc = b.contiguous();
    auto out = at::empty(a.sizes(), a.options());
    const auto dt = kernel_dtype(a);
    run_elementwise(
        "mul", a, a.numel(),
        [&](int64_t i, int64_t n) {
            return my_ops_mul_cpu(dt, element_ptr(ac, i), element_ptr(bc, i),
                                  mutable_element_ptr(out, i), n);
        },
        [&](void *stream) {
            return my_ops_mul_cuda(dt, ac.const_data_ptr(), bc.const_data_ptr(), out.data_ptr(),
                                   a.numel(), stream);
        });
    return out;
}

at::Tensor muladd(const at::Tensor &a, const at::Tensor &b, double c) {
    check_binary("muladd", a, b);
    const auto ac = a.contiguous(), bc = b.contiguous();
    auto out = at::empty(a.sizes(), a.options());
    const auto dt = kernel_dtype(a);
    run_elementwise(
        "muladd", a, a.numel(),
        [&](int64_t i, int64_t n) {
            return my_ops_muladd_cpu(dt, element_ptr(ac, i), element_ptr(bc, i), c,
                                     mutable_element_ptr(out, i), n);
        },
        [&](void *stream) {
            return my_ops_muladd_cuda(dt, ac.const_data_ptr(), bc.const_data_ptr(), c,
                                      out.data_ptr(), a.numel(), stream);
        });
    return out;
}

// out = a + b. `out` may be any strided tensor of the right shape, dtype and
// device, including a or b themselves; a non-contiguous `out` is filled
// through a contiguous buffer.
void add_out(const at::Tensor &a, const at::Tensor &b, const at::Tensor &out) {
    check_binary("add_out", a, b);
    check_like("add_out", "a", a, "out", out);
    check_same_shape("add_out", "a", a, "out", out);
    check_writable("add_out", "out", out);
    // out may be a or b itself (element i is read before it is written), but
    // not a different view of their memory.
    for (const auto *input : {&a, &b}) {
        const auto status = overlap_status(out, *input);
        const bool same = status == at::MemOverlapStatus::Full && out.strides() == input->strides();
        TORCH_CHECK(status == at::MemOverlapStatus::No || same, "my_ops.add_out: out overlaps ",
                    input == &a ? "a" : "b", " without being the same tensor; pass out=",
                    input == &a ? "a" : "b", " itself or a tensor that shares no memory with it");
    }
    const auto ac = a.contiguous(), bc = b.contiguous();
    const bool direct = out.is_contiguous();
    auto dest = direct ? out : at::empty(out.sizes(), out.options());
    const auto dt = kernel_dtype(a);
    run_elementwise(
        "add_out", a, a.numel(),
        [&](int64_t i, int64_t n) {
            return my_ops_add_cpu(dt, element_ptr(ac, i), element_ptr(bc, i),
                                  mutable_element_ptr(dest, i), n);
        },
        [&](void *stream) {
            return my_ops_add_cuda(dt, ac.const_data_ptr(), bc.const_data_ptr(), dest.data_ptr(),
                                   a.numel(), stream);
        });
    if (!direct) out.copy_(dest);
}

void register_kernels(torch::Library &m) {
    m.impl("short_kernel", &short_kernel);
    m.impl("mul", &mul);
    m.impl("muladd", &muladd);
    m.impl("add_out", &add_out);
}

}  // namespace
}  // namespace my_ops

TORCH_LIBRARY_IMPL(my_ops, CPU, m) { my_ops::register_kernels(m); }
TORCH_LIBRARY_IMPL(my_ops, CUDA, m) { my_ops::register_kernels(m); }
