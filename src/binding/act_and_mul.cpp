// The gated units silu_and_mul and gelu_and_mul and their backwards:
// schemas, argument rules and dispatch to the act_and_mul kernels, which take
// the activation as a parameter.
#include <string>

#include "../kernels/act_and_mul.h"
#include "launch.h"

namespace my_ops {
namespace {

using api::Tensor;

const OpRules silu_and_mul_op("silu_and_mul(Tensor x) -> Tensor", "x: dim>=1 even");
const OpRules silu_and_mul_backward_op("silu_and_mul_backward(Tensor grad_out, Tensor x) -> Tensor",
                                       "grad_out: like=x shape=half(x); x: dim>=1 even");
const OpRules gelu_and_mul_op("gelu_and_mul(Tensor x, str approximate=\"none\") -> Tensor",
                              "x: dim>=1 even; approximate: one_of=none|tanh");
const OpRules gelu_and_mul_backward_op(
    "gelu_and_mul_backward(Tensor grad_out, Tensor x, str approximate=\"none\") -> Tensor",
    "grad_out: like=x shape=half(x); x: dim>=1 even; approximate: one_of=none|tanh");

std::vector<int64_t> halved_shape(const Tensor &x) {
    auto shape = api::sizes_of(x);
    shape.back() /= 2;
    return shape;
}

Tensor act_and_mul(const OpRules &op, my_ops_activation act, const Tensor &x) {
    const Rows xr = rows_in_place(x);
    auto out = api::empty(halved_shape(x), x.scalar_type(), x);
    const int64_t d = x.size(-1) / 2, rows = rows_of(x);
    if (out.numel() == 0) return out;
    const auto dt = kernel_dtype(x);
    run_kernel(
        op, x, rows, grain_for(d),
        [&](int64_t begin, int64_t end) {
            return my_ops_act_and_mul_cpu(dt, act, element_ptr(xr.tensor, begin * xr.stride),
                                          xr.stride, mutable_element_ptr(out, begin * d),
                                          end - begin, d);
        },
        [&](void *stream) {
            return my_ops_act_and_mul_cuda(dt, act, xr.tensor.const_data_ptr(), xr.stride,
                                           out.mutable_data_ptr(), rows, d, stream);
        });
    return out;
}

Tensor act_and_mul_backward(const OpRules &op, my_ops_activation act, const Tensor &grad_out,
                            const Tensor &x) {
    const Rows gr = rows_in_place(grad_out), xr = rows_in_place(x);
    auto grad_x = api::empty(api::sizes_of(x), x.scalar_type(), x);
    const int64_t d = x.size(-1) / 2, rows = rows_of(x);
    if (grad_x.numel() == 0) return grad_x;
    const auto dt = kernel_dtype(x);
    run_kernel(
        op, x, rows, grain_for(3 * d),
        [&](int64_t begin, int64_t end) {
            return my_ops_act_and_mul_backward_cpu(
                dt, act, element_ptr(gr.tensor, begin * gr.stride), gr.stride,
                element_ptr(xr.tensor, begin * xr.stride), xr.stride,
                mutable_element_ptr(grad_x, begin * 2 * d), end - begin, d);
        },
        [&](void *stream) {
            return my_ops_act_and_mul_backward_cuda(dt, act, gr.tensor.const_data_ptr(), gr.stride,
                                                    xr.tensor.const_data_ptr(), xr.stride,
                                                    grad_x.mutable_data_ptr(), rows, d, stream);
        });
    return grad_x;
}

// Checked by the rules (one_of=none|tanh) before this is called.
my_ops_activation gelu_kind(const std::string &approximate) {
    return approximate == "tanh" ? MY_OPS_GELU_TANH : MY_OPS_GELU;
}

Tensor silu_and_mul(const Tensor &x) {
    silu_and_mul_op.check({x});
    return act_and_mul(silu_and_mul_op, MY_OPS_SILU, x);
}

Tensor silu_and_mul_backward(const Tensor &grad_out, const Tensor &x) {
    silu_and_mul_backward_op.check({grad_out, x});
    return act_and_mul_backward(silu_and_mul_backward_op, MY_OPS_SILU, grad_out, x);
}

Tensor gelu_and_mul(const Tensor &x, api::StringArg approximate_arg) {
    const std::string approximate(approximate_arg);
    gelu_and_mul_op.check({x, approximate});
    return act_and_mul(gelu_and_mul_op, gelu_kind(approximate), x);
}

Tensor gelu_and_mul_backward(const Tensor &grad_out, const Tensor &x,
                             api::StringArg approximate_arg) {
    const std::string approximate(approximate_arg);
    gelu_and_mul_backward_op.check({grad_out, x, approximate});
    return act_and_mul_backward(gelu_and_mul_backward_op, gelu_kind(approximate), grad_out, x);
}

template <typename Library> void register_kernels(Library &m) {
    m.impl("silu_and_mul", MY_OPS_KERNEL(silu_and_mul));
    m.impl("silu_and_mul_backward", MY_OPS_KERNEL(silu_and_mul_backward));
    m.impl("gelu_and_mul", MY_OPS_KERNEL(gelu_and_mul));
    m.impl("gelu_and_mul_backward", MY_OPS_KERNEL(gelu_and_mul_backward));
}

}  // namespace
}  // namespace my_ops

MY_OPS_FRAGMENT(m) {
    for (const auto *op : {&my_ops::silu_and_mul_op, &my_ops::silu_and_mul_backward_op,
                           &my_ops::gelu_and_mul_op, &my_ops::gelu_and_mul_backward_op})
        m.def(op->schema());
}
MY_OPS_CPU_AND_CUDA(my_ops::register_kernels)
