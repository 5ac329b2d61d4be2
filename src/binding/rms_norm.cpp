// rms_norm, rms_norm_backward, fused_add_rms_norm and its functional form: schemas,
// argument rules, and each op's CPU and CUDA kernel (registered per dispatch key at
// the end), which share the checks and the preparation of the arguments.
#include "../kernels/rms_norm.h"
#include "launch.h"

#include <optional>

namespace my_ops {
namespace {

using api::Tensor;

// The weight may be wider than x (a float32 parameter beside bfloat16
// activations): outputs keep x's dtype, grad_weight has the weight's.
const OpRules rms_norm_op("rms_norm(Tensor x, Tensor weight, float? eps=1e-06) -> Tensor",
                          "x: dim>=1; weight: like_or_wider=x shape=last(x); eps: eps=x");
const OpRules rms_norm_backward_op(
    "rms_norm_backward(Tensor grad_out, Tensor x, Tensor weight, float? eps=1e-06) -> "
    "(Tensor, Tensor)",
    "grad_out: like=x shape=x; x: dim>=1; weight: like_or_wider=x shape=last(x); eps: eps=x");
// residual += x; x = rms_norm(residual, weight, eps), both in place.
const OpRules fused_add_rms_norm_op(
    "fused_add_rms_norm(Tensor(a!) x, Tensor(b!) residual, Tensor weight, float? eps=1e-06) -> ()",
    "x: dim>=1 written; residual: like=x shape=x written apart=x; "
    "weight: like_or_wider=x shape=last(x) apart=x apart=residual; eps: eps=x");
// The same, as new tensors: (x, residual) -> (rms_norm(x + residual), x + residual), its
// kernels reading x and residual and writing the new tensors (no copies first). What an
// exported program calls in place of fused_add_rms_norm (python/my_ops/families/rms_norm.py):
// inside an AOTInductor package a refusal then leaves undefined outputs, which stop the call,
// where the in-place op's refusal is only logged (docs/deploying.md). It writes neither input,
// but in a package it gets the caller's tensors, which the copies back then write: so the
// in-place op's memory rules (each with elements of its own: an expanded one would have the
// copies write past its memory; x and residual apart), checked when the package runs.
const OpRules fused_add_rms_norm_functional_op(
    "fused_add_rms_norm_functional(Tensor x, Tensor residual, Tensor weight, float? eps=1e-06) -> "
    "(Tensor, Tensor)",
    "x: dim>=1 written; residual: like=x shape=x written apart=x; "
    "weight: like_or_wider=x shape=last(x) apart=x apart=residual; eps: eps=x");

// A checked weight as the kernels take it (my_ops_rms_norm_weight_ok):
// contiguous, in x's dtype or, for 16-bit x, float32. A weight wider than
// that (float64 beside float32 or 16-bit x) is converted to float32 once: the
// arithmetic is float32 anyway, and the weight is one row.
struct KernelWeight {
    Tensor tensor;
    my_ops_dtype dtype;
};

KernelWeight kernel_weight(const Tensor &x, const Tensor &weight) {
    if (weight.scalar_type() == x.scalar_type()) return {api::contiguous(weight), kernel_dtype(x)};
    return {api::contiguous(api::to_dtype(weight, api::ScalarType::Float)), MY_OPS_FLOAT32};
}

// ------------------------------------------------------------ rms_norm --

// rms_norm's arguments, checked, as both its kernels take them.
struct Forward {
    Rows xr;
    Tensor y;
    int64_t hidden, rows;
    my_ops_dtype dt;
};

Forward prepare_rms_norm(const Tensor &x, const Tensor &weight, std::optional<double> eps) {
    rms_norm_op.check({x, weight, eps});
    return {rows_in_place(x), api::empty(api::sizes_of(x), x.scalar_type(), x), x.size(-1),
            rows_of(x), kernel_dtype(x)};
}

Tensor rms_norm_cpu(const Tensor &x, const Tensor &weight, std::optional<double> eps_or_none) {
    Forward f = prepare_rms_norm(x, weight, eps_or_none);
    const double eps = eps_value(x, eps_or_none);
    if (f.y.numel() == 0) return f.y;
    const KernelWeight w = kernel_weight(x, weight);
    run_cpu(rms_norm_op, f.rows, grain_for(f.hidden), [&](int64_t begin, int64_t end) {
        return my_ops_rms_norm_cpu(f.dt, w.dtype, element_ptr(f.xr.tensor, begin * f.xr.stride),
                                   f.xr.stride, w.tensor.const_data_ptr(),
                                   mutable_element_ptr(f.y, begin * f.hidden), end - begin,
                                   f.hidden, eps);
    });
    return f.y;
}

#ifdef MY_OPS_WITH_CUDA
Tensor rms_norm_cuda(const Tensor &x, const Tensor &weight, std::optional<double> eps_or_none) {
    Forward f = prepare_rms_norm(x, weight, eps_or_none);
    const double eps = eps_value(x, eps_or_none);
    if (f.y.numel() == 0) return f.y;
    const KernelWeight w = kernel_weight(x, weight);
    run_cuda(rms_norm_op, x, [&](void *stream) {
        return my_ops_rms_norm_cuda(f.dt, w.dtype, f.xr.tensor.const_data_ptr(), f.xr.stride,
                                    w.tensor.const_data_ptr(), f.y.mutable_data_ptr(), f.rows,
                                    f.hidden, eps, stream);
    });
    return f.y;
}
#endif

// --------------------------------------------------- rms_norm_backward --

// rms_norm_backward's arguments, checked, as both its kernels take them.
struct Backward {
    Rows gr, xr;
    int64_t hidden, rows;
    Tensor grad_x;
    my_ops_dtype dt;
};

Backward prepare_backward(const Tensor &grad_out, const Tensor &x, const Tensor &weight,
                          std::optional<double> eps) {
    rms_norm_backward_op.check({grad_out, x, weight, eps});
    return {rows_in_place(grad_out),
            rows_in_place(x),
            x.size(-1),
            rows_of(x),
            api::empty(api::sizes_of(x), x.scalar_type(), x),
            kernel_dtype(x)};
}

// The weight's gradient of rows of no elements.
Tensor empty_grad_weight(const Tensor &weight) {
    return api::empty({0}, weight.scalar_type(), weight);
}

std::tuple<Tensor, Tensor> rms_norm_backward_cpu(const Tensor &grad_out, const Tensor &x,
                                                 const Tensor &weight,
                                                 std::optional<double> eps_or_none) {
    Backward b = prepare_backward(grad_out, x, weight, eps_or_none);
    const double eps = eps_value(x, eps_or_none);
    if (b.hidden == 0) return {b.grad_x, empty_grad_weight(weight)};
    const KernelWeight w = kernel_weight(x, weight);
    // One partial grad_weight row per chunk of rows (the kernel adds to it), summed at the end.
    const int64_t chunks = std::max<int64_t>(1, std::min<int64_t>(b.rows, api::num_threads()));
    // float64 for every dtype
    auto partial = api::zeros({chunks, b.hidden}, api::ScalarType::Double, x);
    run_cpu(rms_norm_backward_op, chunks, 1, [&](int64_t begin, int64_t end) {
        for (int64_t c = begin; c < end; ++c) {
            const int64_t r0 = b.rows * c / chunks, r1 = b.rows * (c + 1) / chunks;
            const int status = my_ops_rms_norm_backward_cpu(
                b.dt, w.dtype, element_ptr(b.gr.tensor, r0 * b.gr.stride), b.gr.stride,
                element_ptr(b.xr.tensor, r0 * b.xr.stride), b.xr.stride, w.tensor.const_data_ptr(),
                mutable_element_ptr(b.grad_x, r0 * b.hidden),
                mutable_element_ptr(partial, c * b.hidden), r1 - r0, b.hidden, eps);
            if (status != MY_OPS_OK) return status;
        }
        return static_cast<int>(MY_OPS_OK);
    });
    return {b.grad_x, api::sum_rows(partial, weight.scalar_type())};
}

#ifdef MY_OPS_WITH_CUDA
// grad_weight is summed over rows in float32 (float64 for float64).
api::ScalarType accumulator_of(const Tensor &x) {
    return x.scalar_type() == api::ScalarType::Double ? api::ScalarType::Double
                                                      : api::ScalarType::Float;
}

std::tuple<Tensor, Tensor> rms_norm_backward_cuda(const Tensor &grad_out, const Tensor &x,
                                                  const Tensor &weight,
                                                  std::optional<double> eps_or_none) {
    Backward b = prepare_backward(grad_out, x, weight, eps_or_none);
    const double eps = eps_value(x, eps_or_none);
    if (b.hidden == 0) return {b.grad_x, empty_grad_weight(weight)};
    const KernelWeight w = kernel_weight(x, weight);
    // written as the kernels' weight type, converted to the weight's dtype if it is wider
    auto grad_weight = api::empty({b.hidden}, w.tensor.scalar_type(), weight);
    run_cuda(rms_norm_backward_op, x, [&](void *stream) {
        // per-block partial sums of grad_weight, on the device run_cuda made current
        const int64_t partials =
            my_ops_rms_norm_backward_cuda_partials(b.dt, w.dtype, b.rows, b.hidden);
        auto workspace = api::empty({partials, b.hidden}, accumulator_of(x), x);
        return my_ops_rms_norm_backward_cuda(
            b.dt, w.dtype, b.gr.tensor.const_data_ptr(), b.gr.stride, b.xr.tensor.const_data_ptr(),
            b.xr.stride, w.tensor.const_data_ptr(), b.grad_x.mutable_data_ptr(),
            grad_weight.mutable_data_ptr(), workspace.mutable_data_ptr(), partials, b.rows,
            b.hidden, eps, stream);
    });
    return {b.grad_x, api::to_dtype(grad_weight, weight.scalar_type())};
}
#endif

// -------------------------------------------------- fused_add_rms_norm --

// fused_add_rms_norm's arguments, checked, as both its kernels take them;
// none when there is nothing to do. Rows are written in place; a layout the
// kernels cannot walk is worked on in a contiguous copy (copy_back).
struct FusedAdd {
    Rows xr, rr;
    KernelWeight w;
    int64_t hidden, rows;
    my_ops_dtype dt;
};

// The checked arguments as the kernels take them; none when there is nothing to do.
std::optional<FusedAdd> fused_add_of(const Tensor &x, const Tensor &residual,
                                     const Tensor &weight) {
    if (x.numel() == 0) return std::nullopt;
    return FusedAdd{rows_in_place(x), rows_in_place(residual), kernel_weight(x, weight), x.size(-1),
                    rows_of(x),       kernel_dtype(x)};
}

std::optional<FusedAdd> prepare_fused_add(const Tensor &x, const Tensor &residual,
                                          const Tensor &weight, std::optional<double> eps) {
    fused_add_rms_norm_op.check({x, residual, weight, eps});
    return fused_add_of(x, residual, weight);
}

// The functional form's results, new contiguous tensors of x's shape: (new x, new residual),
// which its kernels write from x's and residual's rows, read in place.
struct FusedAddResults {
    Tensor new_x, new_residual;
};

FusedAddResults new_results(const Tensor &x) {
    return {api::empty(api::sizes_of(x), x.scalar_type(), x),
            api::empty(api::sizes_of(x), x.scalar_type(), x)};
}

void copy_back(const FusedAdd &f, Tensor &x, Tensor &residual) {
    if (f.xr.copied) api::copy_(x, f.xr.tensor);
    if (f.rr.copied) api::copy_(residual, f.rr.tensor);
}

void run_fused_add_cpu(const OpRules &op, const FusedAdd &f, double eps) {
    run_cpu(op, f.rows, grain_for(f.hidden), [&](int64_t begin, int64_t end) {
        return my_ops_fused_add_rms_norm_cpu(
            f.dt, f.w.dtype, mutable_element_ptr(f.xr.tensor, begin * f.xr.stride), f.xr.stride,
            mutable_element_ptr(f.rr.tensor, begin * f.rr.stride), f.rr.stride,
            f.w.tensor.const_data_ptr(), end - begin, f.hidden, eps);
    });
}

void fused_add_rms_norm_cpu(Tensor x, Tensor residual, const Tensor &weight,
                            std::optional<double> eps_or_none) {
    std::optional<FusedAdd> f = prepare_fused_add(x, residual, weight, eps_or_none);
    const double eps = eps_value(x, eps_or_none);
    if (!f) return;
    run_fused_add_cpu(fused_add_rms_norm_op, *f, eps);
    copy_back(*f, x, residual);
}

std::tuple<Tensor, Tensor> fused_add_rms_norm_functional_cpu(const Tensor &x,
                                                             const Tensor &residual,
                                                             const Tensor &weight,
                                                             std::optional<double> eps_or_none) {
    fused_add_rms_norm_functional_op.check({x, residual, weight, eps_or_none});
    const FusedAddResults out = new_results(x);
    const std::optional<FusedAdd> f = fused_add_of(x, residual, weight);
    if (!f) return {out.new_x, out.new_residual};
    const double eps = eps_value(x, eps_or_none);
    run_cpu(fused_add_rms_norm_functional_op, f->rows, grain_for(f->hidden),
            [&](int64_t begin, int64_t end) {
                return my_ops_fused_add_rms_norm_out_cpu(
                    f->dt, f->w.dtype, element_ptr(f->xr.tensor, begin * f->xr.stride),
                    f->xr.stride, element_ptr(f->rr.tensor, begin * f->rr.stride), f->rr.stride,
                    f->w.tensor.const_data_ptr(), mutable_element_ptr(out.new_x, begin * f->hidden),
                    f->hidden, mutable_element_ptr(out.new_residual, begin * f->hidden), f->hidden,
                    end - begin, f->hidden, eps);
            });
    return {out.new_x, out.new_residual};
}

#ifdef MY_OPS_WITH_CUDA
void run_fused_add_cuda(const OpRules &op, const FusedAdd &f, const Tensor &on, double eps) {
    run_cuda(op, on, [&](void *stream) {
        return my_ops_fused_add_rms_norm_cuda(f.dt, f.w.dtype, f.xr.tensor.mutable_data_ptr(),
                                              f.xr.stride, f.rr.tensor.mutable_data_ptr(),
                                              f.rr.stride, f.w.tensor.const_data_ptr(), f.rows,
                                              f.hidden, eps, stream);
    });
}

void fused_add_rms_norm_cuda(Tensor x, Tensor residual, const Tensor &weight,
                             std::optional<double> eps_or_none) {
    std::optional<FusedAdd> f = prepare_fused_add(x, residual, weight, eps_or_none);
    const double eps = eps_value(x, eps_or_none);
    if (!f) return;
    run_fused_add_cuda(fused_add_rms_norm_op, *f, x, eps);
    copy_back(*f, x, residual);
}

std::tuple<Tensor, Tensor> fused_add_rms_norm_functional_cuda(const Tensor &x,
                                                              const Tensor &residual,
                                                              const Tensor &weight,
                                                              std::optional<double> eps_or_none) {
    fused_add_rms_norm_functional_op.check({x, residual, weight, eps_or_none});
    const FusedAddResults out = new_results(x);
    const std::optional<FusedAdd> f = fused_add_of(x, residual, weight);
    if (!f) return {out.new_x, out.new_residual};
    const double eps = eps_value(x, eps_or_none);
    run_cuda(fused_add_rms_norm_functional_op, x, [&](void *stream) {
        return my_ops_fused_add_rms_norm_out_cuda(
            f->dt, f->w.dtype, f->xr.tensor.const_data_ptr(), f->xr.stride,
            f->rr.tensor.const_data_ptr(), f->rr.stride, f->w.tensor.const_data_ptr(),
            out.new_x.mutable_data_ptr(), f->hidden, out.new_residual.mutable_data_ptr(), f->hidden,
            f->rows, f->hidden, eps, stream);
    });
    return {out.new_x, out.new_residual};
}
#endif

}  // namespace
}  // namespace my_ops

MY_OPS_FRAGMENT(m) {
    for (const auto *op :
         {&my_ops::rms_norm_op, &my_ops::rms_norm_backward_op, &my_ops::fused_add_rms_norm_op,
          &my_ops::fused_add_rms_norm_functional_op})
        m.def(op->schema());
}

MY_OPS_IMPL(CPU, m) {
    m.impl("rms_norm", MY_OPS_KERNEL(my_ops::rms_norm_cpu));
    m.impl("rms_norm_backward", MY_OPS_KERNEL(my_ops::rms_norm_backward_cpu));
    m.impl("fused_add_rms_norm", MY_OPS_KERNEL(my_ops::fused_add_rms_norm_cpu));
    m.impl("fused_add_rms_norm_functional",
           MY_OPS_KERNEL(my_ops::fused_add_rms_norm_functional_cpu));
}

#ifdef MY_OPS_WITH_CUDA
MY_OPS_IMPL(CUDA, m) {
    m.impl("rms_norm", MY_OPS_KERNEL(my_ops::rms_norm_cuda));
    m.impl("rms_norm_backward", MY_OPS_KERNEL(my_ops::rms_norm_backward_cuda));
    m.impl("fused_add_rms_norm", MY_OPS_KERNEL(my_ops::fused_add_rms_norm_cuda));
    m.impl("fused_add_rms_norm_functional",
           MY_OPS_KERNEL(my_ops::fused_add_rms_norm_functional_cuda));
}
#else
MY_OPS_IMPL(CUDA, m) {
    m.impl("rms_norm", MY_OPS_NO_CUDA_KERNEL(my_ops::rms_norm_op, my_ops::rms_norm_cpu));
    m.impl("rms_norm_backward",
           MY_OPS_NO_CUDA_KERNEL(my_ops::rms_norm_backward_op, my_ops::rms_norm_backward_cpu));
    m.impl("fused_add_rms_norm",
           MY_OPS_NO_CUDA_KERNEL(my_ops::fused_add_rms_norm_op, my_ops::fused_add_rms_norm_cpu));
    m.impl("fused_add_rms_norm_functional",
           MY_OPS_NO_CUDA_KERNEL(my_ops::fused_add_rms_norm_functional_op,
                                 my_ops::fused_add_rms_norm_functional_cpu));
}
#endif
