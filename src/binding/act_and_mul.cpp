// The gated units silu_and_mul and gelu_and_mul and their backwards:
// schemas, argument rules, and each op's CPU and CUDA kernel (registered per
// dispatch key at the end) over the act_and_mul kernels, which take the
// activation as a parameter; the checks and preparation are shared.
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

// ------------------------------------------------------------- forward --

// A checked input as the forward kernels take it, and the output.
struct Forward {
    Rows xr;
    Tensor out;
    int64_t d, rows;
    my_ops_dtype dt;
};

Forward prepare_forward(const Tensor &x) {
    return {rows_in_place(x), api::empty(halved_shape(x), x.scalar_type(), x), x.size(-1) / 2,
            rows_of(x), kernel_dtype(x)};
}

Tensor act_and_mul_cpu(const OpRules &op, my_ops_activation act, const Tensor &x) {
    Forward f = prepare_forward(x);
    if (f.out.numel() == 0) return f.out;
    run_cpu(op, f.rows, grain_for(f.d), [&](int64_t begin, int64_t end) {
        return my_ops_act_and_mul_cpu(f.dt, act, element_ptr(f.xr.tensor, begin * f.xr.stride),
                                      f.xr.stride, mutable_element_ptr(f.out, begin * f.d),
                                      end - begin, f.d);
    });
    return f.out;
}

#ifdef MY_OPS_WITH_CUDA
Tensor act_and_mul_cuda(const OpRules &op, my_ops_activation act, const Tensor &x) {
    Forward f = prepare_forward(x);
    if (f.out.numel() == 0) return f.out;
    run_cuda(op, x, [&](void *stream) {
        return my_ops_act_and_mul_cuda(f.dt, act, f.xr.tensor.const_data_ptr(), f.xr.stride,
                                       f.out.mutable_data_ptr(), f.rows, f.d, stream);
    });
    return f.out;
}
#endif

// ------------------------------------------------------------ backward --

// Checked inputs as the backward kernels take them, and grad_x.
struct Backward {
    Rows gr, xr;
    Tensor grad_x;
    int64_t d, rows;
    my_ops_dtype dt;
};

Backward prepare_backward(const Tensor &grad_out, const Tensor &x) {
    return {
        rows_in_place(grad_out), rows_in_place(x), api::empty(api::sizes_of(x), x.scalar_type(), x),
        x.size(-1) / 2,          rows_of(x),       kernel_dtype(x)};
}

Tensor act_and_mul_backward_cpu(const OpRules &op, my_ops_activation act, const Tensor &grad_out,
                                const Tensor &x) {
    Backward b = prepare_backward(grad_out, x);
    if (b.grad_x.numel() == 0) return b.grad_x;
    run_cpu(op, b.rows, grain_for(3 * b.d), [&](int64_t begin, int64_t end) {
        return my_ops_act_and_mul_backward_cpu(
            b.dt, act, element_ptr(b.gr.tensor, begin * b.gr.stride), b.gr.stride,
            element_ptr(b.xr.tensor, begin * b.xr.stride), b.xr.stride,
            mutable_element_ptr(b.grad_x, begin * 2 * b.d), end - begin, b.d);
    });
    return b.grad_x;
}

#ifdef MY_OPS_WITH_CUDA
Tensor act_and_mul_backward_cuda(const OpRules &op, my_ops_activation act, const Tensor &grad_out,
                                 const Tensor &x) {
    Backward b = prepare_backward(grad_out, x);
    if (b.grad_x.numel() == 0) return b.grad_x;
    run_cuda(op, x, [&](void *stream) {
        return my_ops_act_and_mul_backward_cuda(
            b.dt, act, b.gr.tensor.const_data_ptr(), b.gr.stride, b.xr.tensor.const_data_ptr(),
            b.xr.stride, b.grad_x.mutable_data_ptr(), b.rows, b.d, stream);
    });
    return b.grad_x;
}
#endif

// ----------------------------------------------------------------- ops --
// Each op checks its arguments, then calls `run`, the gated unit of one
// device: act_and_mul_cpu or act_and_mul_cuda (their backwards for the
// backward ops). Registered once per dispatch key, instantiated with that
// key's function.

using RunForward = Tensor (*)(const OpRules &, my_ops_activation, const Tensor &);
using RunBackward = Tensor (*)(const OpRules &, my_ops_activation, const Tensor &, const Tensor &);

// Checked by the rules (one_of=none|tanh) before this is called.
my_ops_activation gelu_kind(const std::string &approximate) {
    return approximate == "tanh" ? MY_OPS_GELU_TANH : MY_OPS_GELU;
}

template <RunForward run> Tensor silu_and_mul(const Tensor &x) {
    silu_and_mul_op.check({x});
    return run(silu_and_mul_op, MY_OPS_SILU, x);
}

template <RunBackward run> Tensor silu_and_mul_backward(const Tensor &grad_out, const Tensor &x) {
    silu_and_mul_backward_op.check({grad_out, x});
    return run(silu_and_mul_backward_op, MY_OPS_SILU, grad_out, x);
}

template <RunForward run> Tensor gelu_and_mul(const Tensor &x, api::StringArg approximate_arg) {
    const std::string approximate(approximate_arg);
    gelu_and_mul_op.check({x, approximate});
    return run(gelu_and_mul_op, gelu_kind(approximate), x);
}

template <RunBackward run>
Tensor gelu_and_mul_backward(const Tensor &grad_out, const Tensor &x,
                             api::StringArg approximate_arg) {
    const std::string approximate(approximate_arg);
    gelu_and_mul_backward_op.check({grad_out, x, approximate});
    return run(gelu_and_mul_backward_op, gelu_kind(approximate), grad_out, x);
}

}  // namespace
}  // namespace my_ops

MY_OPS_FRAGMENT(m) {
    for (const auto *op : {&my_ops::silu_and_mul_op, &my_ops::silu_and_mul_backward_op,
                           &my_ops::gelu_and_mul_op, &my_ops::gelu_and_mul_backward_op})
        m.def(op->schema());
}

MY_OPS_IMPL(CPU, m) {
    using namespace my_ops;
    m.impl("silu_and_mul", MY_OPS_KERNEL(silu_and_mul<act_and_mul_cpu>));
    m.impl("silu_and_mul_backward", MY_OPS_KERNEL(silu_and_mul_backward<act_and_mul_backward_cpu>));
    m.impl("gelu_and_mul", MY_OPS_KERNEL(gelu_and_mul<act_and_mul_cpu>));
    m.impl("gelu_and_mul_backward", MY_OPS_KERNEL(gelu_and_mul_backward<act_and_mul_backward_cpu>));
}

#ifdef MY_OPS_WITH_CUDA
MY_OPS_IMPL(CUDA, m) {
    using namespace my_ops;
    m.impl("silu_and_mul", MY_OPS_KERNEL(silu_and_mul<act_and_mul_cuda>));
    m.impl("silu_and_mul_backward",
           MY_OPS_KERNEL(silu_and_mul_backward<act_and_mul_backward_cuda>));
    m.impl("gelu_and_mul", MY_OPS_KERNEL(gelu_and_mul<act_and_mul_cuda>));
    m.impl("gelu_and_mul_backward",
           MY_OPS_KERNEL(gelu_and_mul_backward<act_and_mul_backward_cuda>));
}
#else
MY_OPS_IMPL(CUDA, m) {
    using namespace my_ops;
    m.impl("silu_and_mul", MY_OPS_NO_CUDA_KERNEL(silu_and_mul_op, silu_and_mul<act_and_mul_cpu>));
    m.impl("silu_and_mul_backward",
           MY_OPS_NO_CUDA_KERNEL(silu_and_mul_backward_op,
                                 silu_and_mul_backward<act_and_mul_backward_cpu>));
    m.impl("gelu_and_mul", MY_OPS_NO_CUDA_KERNEL(gelu_and_mul_op, gelu_and_mul<act_and_mul_cpu>));
    m.impl("gelu_and_mul_backward",
           MY_OPS_NO_CUDA_KERNEL(gelu_and_mul_backward_op,
                                 gelu_and_mul_backward<act_and_mul_backward_cpu>));
}
#endif
