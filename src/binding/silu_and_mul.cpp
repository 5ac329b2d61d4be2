// silu_and_mul and its backward: argument checks and dispatch to the kernels.
#include <torch/library.h>

#include "device.h"

namespace my_ops {
namespace {

void check_gated(const char *op, const at::Tensor &x) {
    check_input(op, "x", x);
    TORCH_CHECK(x.dim() >= 1, "my_ops.", op,
                ": expected x to have at least 1 dimension (..., 2 * d), but got a 0-D tensor");
    TORCH_CHECK(x.size(-1) % 2 == 0, "my_ops.", op,
                ": expected the last dimension of x to be even (gate and up halves of 2 * d), "
                "but got ", x.size(-1));
}

std::vector<int64_t> halved_shape(const at::Tensor &x) {
    auto shape = x.sizes().vec();
    shape.back() /= 2;
    return shape;
}

at::Tensor silu_and_mul(const at::Tensor &x) {
    check_gated("silu_and_mul", x);
    const auto xc = x.contiguous();
    auto out = at::empty(halved_shape(x), x.options());
    const int64_t d = x.size(-1) / 2, rows = rows_of(x);
    if (out.numel() == 0) return out;
    const auto dt = kernel_dtype(x);
    if (x.is_cuda()) {
        cuda_launch("silu_and_mul", x.device(), [&](void *stream) {
            return my_ops_silu_and_mul_cuda(dt, xc.const_data_ptr(), out.data_ptr(), rows, d, stream);
        });
    } else {
        cpu_parallel(rows, grain_for(d), [&](int64_t begin, int64_t end) {
            check_status("silu_and_mul",
                         my_ops_silu_and_mul_cpu(dt, element_ptr(xc, begin * 2 * d),
                                                 mutable_element_ptr(out, begin * d), end - begin, d));
        });
    }
    return out;
}

at::Tensor silu_and_mul_backward(const at::Tensor &grad_out, const at::Tensor &x) {
    constexpr const char *op = "silu_and_mul_backward";
    check_gated(op, x);
    check_like(op, "x", x, "grad_out", grad_out);
    TORCH_CHECK(grad_out.sizes() == at::IntArrayRef(halved_shape(x)), "my_ops.", op,
                ": expected grad_out to have shape ", at::IntArrayRef(halved_shape(x)),
                " (x with its last dimension halved), but got ", grad_out.sizes());
    const auto gc = grad_out.contiguous(), xc = x.contiguous();
    auto grad_x = at::empty(x.sizes(), x.options());
    const int64_t d = x.size(-1) / 2, rows = rows_of(x);
    if (grad_x.numel() == 0) return grad_x;
    const auto dt = kernel_dtype(x);
    if (x.is_cuda()) {
        cuda_launch(op, x.device(), [&](void *stream) {
            return my_ops_silu_and_mul_backward_cuda(dt, gc.const_data_ptr(), xc.const_data_ptr(),
                                                     grad_x.data_ptr(), rows, d, stream);
        });
    } else {
        cpu_parallel(rows, grain_for(3 * d), [&](int64_t begin, int64_t end) {
            check_status(op, my_ops_silu_and_mul_backward_cpu(
                                 dt, element_ptr(gc, begin * d), element_ptr(xc, begin * 2 * d),
                                 mutable_element_ptr(grad_x, begin * 2 * d), end - begin, d));
        });
    }
    return grad_x;
}

void register_kernels(torch::Library &m) {
    m.impl("silu_and_mul", &silu_and_mul);
    m.impl("silu_and_mul_backward", &silu_and_mul_backward);
}

}  // namespace
}  // namespace my_ops

TORCH_LIBRARY_IMPL(my_ops, CPU, m) { my_ops::register_kernels(m); }
TORCH_LIBRARY_IMPL(my_ops, CUDA, m) { my_ops::register_kernels(m); }
