// silu_and_mul and its backward: schemas, argument rules and dispatch to the kernels.
#include "launch.h"

namespace my_ops {
namespace {

using api::Tensor;

const OpRules silu_and_mul_op("silu_and_mul(Tensor x) -> Tensor", "x: dim>=1 even");
const OpRules silu_and_mul_backward_op("silu_and_mul_backward(Tensor grad_out, Tensor x) -> Tensor",
                                       "grad_out: like=x shape=half(x); x: dim>=1 even");

std::vector<int64_t> halved_shape(const Tensor &x) {
    auto shape = api::sizes_of(x);
    shape.back() /= 2;
    return shape;
}

Tensor silu_and_mul(const Tensor &x) {
    silu_and_mul_op.check({x});
    const auto xc = api::contiguous(x);
    auto out = api::empty(halved_shape(x), x.scalar_type(), x);
    const int64_t d = x.size(-1) / 2, rows = rows_of(x);
    if (out.numel() == 0) return out;
    const auto dt = kernel_dtype(x);
    run_kernel(
        silu_and_mul_op, x, rows, grain_for(d),
        [&](int64_t begin, int64_t end) {
            return my_ops_silu_and_mul_cpu(dt, element_ptr(xc, begin * 2 * d),
                                           mutable_element_ptr(out, begin * d), end - begin, d);
        },
        [&](void *stream) {
            return my_ops_silu_and_mul_cuda(dt, xc.const_data_ptr(), out.mutable_data_ptr(), rows,
                                            d, stream);
        });
    return out;
}

Tensor silu_and_mul_backward(const Tensor &grad_out, const Tensor &x) {
    silu_and_mul_backward_op.check({grad_out, x});
    const auto gc = api::contiguous(grad_out), xc = api::contiguous(x);
    auto grad_x = api::empty(api::sizes_of(x), x.scalar_type(), x);
    const int64_t d = x.size(-1) / 2, rows = rows_of(x);
    if (grad_x.numel() == 0) return grad_x;
    const auto dt = kernel_dtype(x);
    run_kernel(
        silu_and_mul_backward_op, x, rows, grain_for(3 * d),
        [&](int64_t begin, int64_t end) {
            return my_ops_silu_and_mul_backward_cpu(dt, element_ptr(gc, begin * d),
                                                    element_ptr(xc, begin * 2 * d),
                                                    mutable_element_ptr(grad_x, begin * 2 * d),
                                                    end - begin, d);
        },
        [&](void *stream) {
            return my_ops_silu_and_mul_backward_cuda(dt, gc.const_data_ptr(), xc.const_data_ptr(),
                                                     grad_x.mutable_data_ptr(), rows, d, stream);
        });
    return grad_x;
}

template <typename Library> void register_kernels(Library &m) {
    m.impl("silu_and_mul", MY_OPS_KERNEL(silu_and_mul));
    m.impl("silu_and_mul_backward", MY_OPS_KERNEL(silu_and_mul_backward));
}

}  // namespace
}  // namespace my_ops

MY_OPS_FRAGMENT(m) {
    for (const auto *op : {&my_ops::silu_and_mul_op, &my_ops::silu_and_mul_backward_op})
        m.def(op->schema());
}
MY_OPS_CPU_AND_CUDA(my_ops::register_kernels)
