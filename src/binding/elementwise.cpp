// short_kernel, mul, muladd and add_out: schemas, argument rules and dispatch
// to the element-wise kernels.
#include "../kernels/elementwise.h"
#include "launch.h"

namespace my_ops {
namespace {

using api::Tensor;

const OpRules short_kernel_op("short_kernel(Tensor x) -> Tensor", "");
const OpRules mul_op("mul(Tensor a, Tensor b) -> Tensor", "b: like=a shape=a");
const OpRules muladd_op("muladd(Tensor a, Tensor b, float c) -> Tensor", "b: like=a shape=a");
// out may be a or b itself (element i is read before it is written), but not
// another view of their memory.
const OpRules add_out_op("add_out(Tensor a, Tensor b, Tensor(a!) out) -> ()",
                         "b: like=a shape=a; out: like=a shape=a written apart_or_same=a "
                         "apart_or_same=b");

// Runs an element-wise kernel over the n contiguous elements of `like`:
// parallel chunks on the CPU, one launch on CUDA.
template <typename Cpu, typename Cuda>
void run_elementwise(const OpRules &op, const Tensor &like, const Cpu &cpu, const Cuda &cuda) {
    if (like.numel() == 0) return;
    run_kernel(op, like, like.numel(), grain_for(1),
               [&](int64_t begin, int64_t end) { return cpu(begin, end - begin); }, cuda);
}

Tensor short_kernel(const Tensor &x) {
    short_kernel_op.check({x});
    const auto xc = api::contiguous(x);
    auto out = api::empty(api::sizes_of(x), x.scalar_type(), x);
    const auto dt = kernel_dtype(x);
    run_elementwise(
        short_kernel_op, x,
        [&](int64_t i, int64_t n) {
            return my_ops_short_kernel_cpu(dt, element_ptr(xc, i), mutable_element_ptr(out, i), n);
        },
        [&](void *stream) {
            return my_ops_short_kernel_cuda(dt, xc.const_data_ptr(), out.mutable_data_ptr(),
                                            x.numel(), stream);
        });
    return out;
}

Tensor mul(const Tensor &a, const Tensor &b) {
    mul_op.check({a, b});
    const auto ac = api::contiguous(a), bc = api::contiguous(b);
    auto out = api::empty(api::sizes_of(a), a.scalar_type(), a);
    const auto dt = kernel_dtype(a);
    run_elementwise(
        mul_op, a,
        [&](int64_t i, int64_t n) {
            return my_ops_mul_cpu(dt, element_ptr(ac, i), element_ptr(bc, i),
                                  mutable_element_ptr(out, i), n);
        },
        [&](void *stream) {
            return my_ops_mul_cuda(dt, ac.const_data_ptr(), bc.const_data_ptr(),
                                   out.mutable_data_ptr(), a.numel(), stream);
        });
    return out;
}

Tensor muladd(const Tensor &a, const Tensor &b, double c) {
    muladd_op.check({a, b, c});
    const auto ac = api::contiguous(a), bc = api::contiguous(b);
    auto out = api::empty(api::sizes_of(a), a.scalar_type(), a);
    const auto dt = kernel_dtype(a);
    run_elementwise(
        muladd_op, a,
        [&](int64_t i, int64_t n) {
            return my_ops_muladd_cpu(dt, element_ptr(ac, i), element_ptr(bc, i), c,
                                     mutable_element_ptr(out, i), n);
        },
        [&](void *stream) {
            return my_ops_muladd_cuda(dt, ac.const_data_ptr(), bc.const_data_ptr(), c,
                                      out.mutable_data_ptr(), a.numel(), stream);
        });
    return out;
}

// out = a + b; a non-contiguous out is filled through a contiguous buffer.
void add_out(const Tensor &a, const Tensor &b, Tensor out) {
    add_out_op.check({a, b, out});
    const auto ac = api::contiguous(a), bc = api::contiguous(b);
    const bool direct = out.is_contiguous();
    auto dest = direct ? out : api::empty(api::sizes_of(out), out.scalar_type(), out);
    const auto dt = kernel_dtype(a);
    run_elementwise(
        add_out_op, a,
        [&](int64_t i, int64_t n) {
            return my_ops_add_cpu(dt, element_ptr(ac, i), element_ptr(bc, i),
                                  mutable_element_ptr(dest, i), n);
        },
        [&](void *stream) {
            return my_ops_add_cuda(dt, ac.const_data_ptr(), bc.const_data_ptr(),
                                   dest.mutable_data_ptr(), a.numel(), stream);
        });
    if (!direct) api::copy_(out, dest);
}

template <typename Library> void register_kernels(Library &m) {
    m.impl("short_kernel", MY_OPS_KERNEL(short_kernel));
    m.impl("mul", MY_OPS_KERNEL(mul));
    m.impl("muladd", MY_OPS_KERNEL(muladd));
    m.impl("add_out", MY_OPS_KERNEL(add_out));
}

}  // namespace
}  // namespace my_ops

MY_OPS_FRAGMENT(m) {
    for (const auto *op : {&my_ops::short_kernel_op, &my_ops::mul_op, &my_ops::muladd_op,
                           &my_ops::add_out_op})
        m.def(op->schema());
}
MY_OPS_CPU_AND_CUDA(my_ops::register_kernels)
