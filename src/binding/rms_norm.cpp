// rms_norm, rms_norm_backward and fused_add_rms_norm: schemas, argument rules
// and dispatch to the RMSNorm kernels.
#include "../kernels/rms_norm.h"
#include "launch.h"

namespace my_ops {
namespace {

using api::Tensor;

// The weight may be wider than x (a float32 parameter beside bfloat16
// activations): outputs keep x's dtype, grad_weight has the weight's.
const OpRules rms_norm_op("rms_norm(Tensor x, Tensor weight, float eps) -> Tensor",
                          "x: dim>=1; weight: like_or_wider=x shape=last(x); eps: eps");
const OpRules rms_norm_backward_op(
    "rms_norm_backward(Tensor grad_out, Tensor x, Tensor weight, float eps) -> (Tensor, Tensor)",
    "grad_out: like=x shape=x; x: dim>=1; weight: like_or_wider=x shape=last(x); eps: eps");
// residual += x; x = rms_norm(residual, weight, eps), both in place.
const OpRules fused_add_rms_norm_op(
    "fused_add_rms_norm(Tensor(a!) x, Tensor(b!) residual, Tensor weight, float eps) -> ()",
    "x: dim>=1 written; residual: like=x shape=x written apart=x; "
    "weight: like_or_wider=x shape=last(x) apart=x apart=residual; eps: eps");

// grad_weight is summed over rows in float32 (float64 for float64).
api::ScalarType accumulator_of(const Tensor &x) {
    return x.scalar_type() == api::ScalarType::Double ? api::ScalarType::Double
                                                      : api::ScalarType::Float;
}

// A checked weight as the kernels take it (my_ops_rms_norm_weight_ok):
// contiguous, in x's dtype or, for 16-bit x, float32. A weight wider than
// that (float64 beside float32 or 16-bit x) is converted to float32 once: the
// arithmetic is float32 anyway, and the weight is one row.
struct KernelWeight {
    Tensor tensor;
    my_ops_dtype dtype;
};

KernelWeight kernel_weight(const Tensor &x, const Tensor &weight) {
    if (weight.scalar_type() == x.scalar_type())
        return {api::contiguous(weight), kernel_dtype(x)};
    return {api::contiguous(api::to_dtype(weight, api::ScalarType::Float)), MY_OPS_FLOAT32};
}

Tensor rms_norm(const Tensor &x, const Tensor &weight, double eps) {
    rms_norm_op.check({x, weight, eps});
    const Rows xr = rows_in_place(x);
    auto y = api::empty(api::sizes_of(x), x.scalar_type(), x);
    const int64_t hidden = x.size(-1), rows = rows_of(x);
    if (y.numel() == 0) return y;
    const auto dt = kernel_dtype(x);
    const KernelWeight w = kernel_weight(x, weight);
    run_kernel(
        rms_norm_op, x, rows, grain_for(hidden),
        [&](int64_t begin, int64_t end) {
            return my_ops_rms_norm_cpu(dt, w.dtype, element_ptr(xr.tensor, begin * xr.stride),
                                       xr.stride, w.tensor.const_data_ptr(),
                                       mutable_element_ptr(y, begin * hidden), end - begin, hidden,
                                       eps);
        },
        [&](void *stream) {
            return my_ops_rms_norm_cuda(dt, w.dtype, xr.tensor.const_data_ptr(), xr.stride,
                                        w.tensor.const_data_ptr(), y.mutable_data_ptr(), rows,
                                        hidden, eps, stream);
        });
    return y;
}

std::tuple<Tensor, Tensor> rms_norm_backward(const Tensor &grad_out, const Tensor &x,
                                             const Tensor &weight, double eps) {
    rms_norm_backward_op.check({grad_out, x, weight, eps});
    const Rows gr = rows_in_place(grad_out), xr = rows_in_place(x);
    const int64_t hidden = x.size(-1), rows = rows_of(x);
    auto grad_x = api::empty(api::sizes_of(x), x.scalar_type(), x);
    const auto dt = kernel_dtype(x);
    if (hidden == 0) return {grad_x, api::empty({0}, weight.scalar_type(), weight)};
    const KernelWeight w = kernel_weight(x, weight);
    if (x.is_cuda()) {
        // written as the kernels' weight type, converted to the weight's dtype if it is wider
        auto grad_weight = api::empty({hidden}, w.tensor.scalar_type(), weight);
        run_kernel(
            rms_norm_backward_op, x, 0, 1, [](int64_t, int64_t) { return 0; },
            [&](void *stream) {
                // per-block partial sums of grad_weight
                const int64_t partials =
                    my_ops_rms_norm_backward_cuda_partials(dt, w.dtype, rows, hidden);
                auto workspace = api::empty({partials, hidden}, accumulator_of(x), x);
                return my_ops_rms_norm_backward_cuda(
                    dt, w.dtype, gr.tensor.const_data_ptr(), gr.stride,
                    xr.tensor.const_data_ptr(), xr.stride, w.tensor.const_data_ptr(),
                    grad_x.mutable_data_ptr(), grad_weight.mutable_data_ptr(),
                    workspace.mutable_data_ptr(), partials, rows, hidden, eps, stream);
            });
        return {grad_x, api::to_dtype(grad_weight, weight.scalar_type())};
    }
    // One partial grad_weight row per chunk of rows (the kernel adds to it), summed at the end.
    const int64_t chunks = std::max<int64_t>(1, std::min<int64_t>(rows, api::num_threads()));
    auto partial = api::zeros({chunks, hidden}, api::ScalarType::Double, x);  // float64 for every dtype
    run_kernel(
        rms_norm_backward_op, x, chunks, 1,
        [&](int64_t begin, int64_t end) {
            for (int64_t c = begin; c < end; ++c) {
                const int64_t r0 = rows * c / chunks, r1 = rows * (c + 1) / chunks;
                const int status = my_ops_rms_norm_backward_cpu(
                    dt, w.dtype, element_ptr(gr.tensor, r0 * gr.stride), gr.stride,
                    element_ptr(xr.tensor, r0 * xr.stride), xr.stride, w.tensor.const_data_ptr(),
                    mutable_element_ptr(grad_x, r0 * hidden),
                    mutable_element_ptr(partial, c * hidden), r1 - r0, hidden, eps);
                if (status != MY_OPS_OK) return status;
            }
            return static_cast<int>(MY_OPS_OK);
        },
        [](void *) { return 0; });
    return {grad_x, api::sum_rows(partial, weight.scalar_type())};
}

void fused_add_rms_norm(Tensor x, Tensor residual, const Tensor &weight, double eps) {
    fused_add_rms_norm_op.check({x, residual, weight, eps});
    if (x.numel() == 0) return;
    // Rows are written in place; a layout the kernels cannot walk is worked on
    // in a contiguous copy, copied back at the end.
    Rows xr = rows_in_place(x), rr = rows_in_place(residual);
    const KernelWeight w = kernel_weight(x, weight);
    const int64_t hidden = x.size(-1), rows = rows_of(x);
    const auto dt = kernel_dtype(x);
    run_kernel(
        fused_add_rms_norm_op, x, rows, grain_for(hidden),
        [&](int64_t begin, int64_t end) {
            return my_ops_fused_add_rms_norm_cpu(
                dt, w.dtype, mutable_element_ptr(xr.tensor, begin * xr.stride), xr.stride,
                mutable_element_ptr(rr.tensor, begin * rr.stride), rr.stride,
                w.tensor.const_data_ptr(), end - begin, hidden, eps);
        },
        [&](void *stream) {
            return my_ops_fused_add_rms_norm_cuda(dt, w.dtype, xr.tensor.mutable_data_ptr(),
                                                  xr.stride, rr.tensor.mutable_data_ptr(),
                                                  rr.stride, w.tensor.const_data_ptr(), rows,
                                                  hidden, eps, stream);
        });
    if (xr.copied) api::copy_(x, xr.tensor);
    if (rr.copied) api::copy_(residual, rr.tensor);
}

template <typename Library> void register_kernels(Library &m) {
    m.impl("rms_norm", MY_OPS_KERNEL(rms_norm));
    m.impl("rms_norm_backward", MY_OPS_KERNEL(rms_norm_backward));
    m.impl("fused_add_rms_norm", MY_OPS_KERNEL(fused_add_rms_norm));
}

}  // namespace
}  // namespace my_ops

MY_OPS_FRAGMENT(m) {
    for (const auto *op : {&my_ops::rms_norm_op, &my_ops::rms_norm_backward_op,
                           &my_ops::fused_add_rms_norm_op})
        m.def(op->schema());
}
MY_OPS_CPU_AND_CUDA(my_ops::register_kernels)
