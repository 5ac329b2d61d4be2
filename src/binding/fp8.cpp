// The fp8 family: RMSNorm, the fused add + RMSNorm and SiLU-and-mul written
// as float8 e4m3fn with a static per-tensor scale or dynamic per-token scales
// (src/kernels/fp8.h). Schemas and argument rules, then one CPU and one CUDA
// kernel per kind of op, each registered for its static and per-token ops.
// Inference ops: no autograd (python/my_ops/families/fp8.py refuses inputs
// that require grad).
#include <optional>
#include <tuple>

#include "../kernels/fp8.h"
#include "launch.h"

namespace my_ops {
namespace {

using api::Tensor;
using OptionalTensor = std::optional<Tensor>;

const OpRules rms_norm_fp8_op(
    "rms_norm_fp8(Tensor x, Tensor weight, Tensor scale, float? eps=1e-06) -> Tensor",
    "x: dim>=1; weight: like_or_wider=x shape=last(x); scale: scale=x; eps: eps=x");
const OpRules rms_norm_fp8_per_token_op(
    "rms_norm_fp8_per_token(Tensor x, Tensor weight, float? eps=1e-06, Tensor? scale_ub=None) -> "
    "(Tensor, Tensor)",
    "x: dim>=1; weight: like_or_wider=x shape=last(x); eps: eps=x; scale_ub: scale=x");
const OpRules fused_add_rms_norm_fp8_op(
    "fused_add_rms_norm_fp8(Tensor x, Tensor(a!) residual, Tensor weight, Tensor scale, "
    "float? eps=1e-06) -> Tensor",
    "x: dim>=1; residual: like=x shape=x written apart=x; "
    "weight: like_or_wider=x shape=last(x) apart=residual; scale: scale=x apart=residual; eps: "
    "eps=x");
const OpRules fused_add_rms_norm_fp8_per_token_op(
    "fused_add_rms_norm_fp8_per_token(Tensor x, Tensor(a!) residual, Tensor weight, float? "
    "eps=1e-06, "
    "Tensor? scale_ub=None) -> (Tensor, Tensor)",
    "x: dim>=1; residual: like=x shape=x written apart=x; "
    "weight: like_or_wider=x shape=last(x) apart=residual; eps: eps=x; scale_ub: scale=x "
    "apart=residual");
// The same, as new tensors: (out, new residual) and (out, scales, new residual), residual
// read, not written. What an exported program calls in place of the two fused ops
// (python/my_ops/families/fp8.py), the new residual then copied back: torch's own
// functionalization would call the in-place op on a clone of residual, so its memory rules
// would only ever see the clone, and a weight overlapping residual would be read unchanged and
// then overwritten by the copy back. In a package these get the caller's tensors, which the
// copy back writes: so the in-place op's rules (residual with elements of its own and apart
// from x, weight, scale and scale_ub), checked when the program runs.
const OpRules fused_add_rms_norm_fp8_functional_op(
    "fused_add_rms_norm_fp8_functional(Tensor x, Tensor residual, Tensor weight, Tensor scale, "
    "float? eps=1e-06) -> (Tensor, Tensor)",
    "x: dim>=1; residual: like=x shape=x written apart=x; "
    "weight: like_or_wider=x shape=last(x) apart=residual; scale: scale=x apart=residual; eps: "
    "eps=x");
const OpRules fused_add_rms_norm_fp8_per_token_functional_op(
    "fused_add_rms_norm_fp8_per_token_functional(Tensor x, Tensor residual, Tensor weight, "
    "float? eps=1e-06, Tensor? scale_ub=None) -> (Tensor, Tensor, Tensor)",
    "x: dim>=1; residual: like=x shape=x written apart=x; "
    "weight: like_or_wider=x shape=last(x) apart=residual; eps: eps=x; scale_ub: scale=x "
    "apart=residual");
const OpRules silu_and_mul_fp8_op("silu_and_mul_fp8(Tensor x, Tensor scale) -> Tensor",
                                  "x: dim>=1 even; scale: scale=x");
const OpRules silu_and_mul_fp8_per_token_op(
    "silu_and_mul_fp8_per_token(Tensor x, Tensor? scale_ub=None) -> (Tensor, Tensor)",
    "x: dim>=1 even; scale_ub: scale=x");

// The fp8 output of `shape` and, per token, the float32 scales [rows..., 1].
struct Outputs {
    Tensor out;
    std::optional<Tensor> scales;
};

Outputs make_outputs(const Tensor &x, std::vector<int64_t> shape, bool per_token) {
    Outputs o{api::empty(shape, api::ScalarType::Float8_e4m3fn, x), std::nullopt};
    if (per_token) {
        shape.back() = 1;
        o.scales = api::empty(shape, api::ScalarType::Float, x);
    }
    return o;
}

my_ops_fp8_scaling scaling_of(const OptionalTensor &scale, Outputs &o,
                              const OptionalTensor &scale_ub) {
    my_ops_fp8_scaling s{nullptr, nullptr, nullptr};
    if (scale) s.static_scale = static_cast<const float *>(scale->const_data_ptr());
    if (o.scales) s.scales = static_cast<float *>(o.scales->mutable_data_ptr());
    if (scale_ub) s.scale_ub = static_cast<const float *>(scale_ub->const_data_ptr());
    return s;
}

// The same scaling for the rows from `begin` on (a CPU chunk).
my_ops_fp8_scaling from_row(my_ops_fp8_scaling s, int64_t begin) {
    if (s.scales) s.scales += begin;
    return s;
}

// Runs the kernel of one device over `rows` rows of `width` values:
// cuda(stream) on CUDA, cpu(begin, end) over chunks of rows on the CPU (cuda
// is a generic lambda: its body, which names the CUDA kernels, is compiled
// only where it is called, in builds with CUDA).
template <bool kCuda, typename Cuda, typename Cpu>
void run_on_device(const OpRules &op, const Tensor &x, int64_t rows, int64_t width,
                   const Cuda &cuda, const Cpu &cpu) {
    if constexpr (kCuda) {
#ifdef MY_OPS_WITH_CUDA
        run_cuda(op, x, cuda);
#endif
    } else {
        run_cpu(op, rows, grain_for(width), cpu);
    }
}

// ------------------------------------------------------------- RMSNorm --
// x's rows (and the residual's, written in place: a layout the kernels cannot
// walk is worked on in a contiguous copy, copied back) into `o`.
template <bool kCuda>
void rms_norm_fp8_run(const OpRules &op, const Tensor &x, std::optional<Tensor> residual,
                      const Tensor &weight, const OptionalTensor &scale,
                      const OptionalTensor &scale_ub, double eps, Outputs &o) {
    const int64_t rows = rows_of(x), hidden = x.dim() > 0 ? x.size(-1) : 1;
    if (o.out.numel() == 0 && rows == 0) return;
    const Rows xr = rows_in_place(x);
    std::optional<Rows> rr;
    if (residual) rr = rows_in_place(*residual);
    // the weight as rms_norm's kernels take it: x's dtype, or (a wider one) float32
    const bool same = weight.scalar_type() == x.scalar_type();
    const Tensor w = api::contiguous(same ? weight : api::to_dtype(weight, api::ScalarType::Float));
    const my_ops_dtype dt = kernel_dtype(x), wdt = same ? dt : MY_OPS_FLOAT32;
    const my_ops_fp8_scaling s = scaling_of(scale, o, scale_ub);
    uint8_t *out = static_cast<uint8_t *>(o.out.mutable_data_ptr());
    run_on_device<kCuda>(
        op, x, rows, hidden,
        [&](auto stream) {
            return my_ops_rms_norm_fp8_cuda(dt, wdt, xr.tensor.const_data_ptr(), xr.stride,
                                            rr ? rr->tensor.mutable_data_ptr() : nullptr,
                                            rr ? rr->stride : 0, w.const_data_ptr(), out, s, rows,
                                            hidden, eps, stream);
        },
        [&](int64_t begin, int64_t end) {
            return my_ops_rms_norm_fp8_cpu(
                dt, wdt, element_ptr(xr.tensor, begin * xr.stride), xr.stride,
                rr ? mutable_element_ptr(rr->tensor, begin * rr->stride) : nullptr,
                rr ? rr->stride : 0, w.const_data_ptr(), out + begin * hidden, from_row(s, begin),
                end - begin, hidden, eps);
        });
    if (rr && rr->copied) api::copy_(*residual, rr->tensor);
}

template <bool kCuda>
Tensor rms_norm_fp8(const Tensor &x, const Tensor &weight, const Tensor &scale,
                    std::optional<double> eps) {
    rms_norm_fp8_op.check({x, weight, scale, eps});
    Outputs o = make_outputs(x, api::sizes_of(x), false);
    rms_norm_fp8_run<kCuda>(rms_norm_fp8_op, x, std::nullopt, weight, scale, std::nullopt,
                            eps_value(x, eps), o);
    return o.out;
}

template <bool kCuda>
std::tuple<Tensor, Tensor> rms_norm_fp8_per_token(const Tensor &x, const Tensor &weight,
                                                  std::optional<double> eps,
                                                  OptionalTensor scale_ub) {
    rms_norm_fp8_per_token_op.check({x, weight, eps, scale_ub});
    Outputs o = make_outputs(x, api::sizes_of(x), true);
    rms_norm_fp8_run<kCuda>(rms_norm_fp8_per_token_op, x, std::nullopt, weight, std::nullopt,
                            scale_ub, eps_value(x, eps), o);
    return {o.out, *o.scales};
}

template <bool kCuda>
Tensor fused_add_rms_norm_fp8(const Tensor &x, Tensor residual, const Tensor &weight,
                              const Tensor &scale, std::optional<double> eps) {
    fused_add_rms_norm_fp8_op.check({x, residual, weight, scale, eps});
    Outputs o = make_outputs(x, api::sizes_of(x), false);
    rms_norm_fp8_run<kCuda>(fused_add_rms_norm_fp8_op, x, residual, weight, scale, std::nullopt,
                            eps_value(x, eps), o);
    return o.out;
}

template <bool kCuda>
std::tuple<Tensor, Tensor> fused_add_rms_norm_fp8_per_token(const Tensor &x, Tensor residual,
                                                            const Tensor &weight,
                                                            std::optional<double> eps,
                                                            OptionalTensor scale_ub) {
    fused_add_rms_norm_fp8_per_token_op.check({x, residual, weight, eps, scale_ub});
    Outputs o = make_outputs(x, api::sizes_of(x), true);
    rms_norm_fp8_run<kCuda>(fused_add_rms_norm_fp8_per_token_op, x, residual, weight, std::nullopt,
                            scale_ub, eps_value(x, eps), o);
    return {o.out, *o.scales};
}

// The functional forms' new residual: a fresh contiguous copy of residual, which the in-place
// kernels then update (they read and write residual through one pointer, so they cannot write
// the sum into a tensor of its own).
Tensor new_residual_of(const Tensor &residual) {
    Tensor copy = api::empty(api::sizes_of(residual), residual.scalar_type(), residual);
    api::copy_(copy, residual);
    return copy;
}

template <bool kCuda>
std::tuple<Tensor, Tensor> fused_add_rms_norm_fp8_functional(const Tensor &x,
                                                             const Tensor &residual,
                                                             const Tensor &weight,
                                                             const Tensor &scale,
                                                             std::optional<double> eps) {
    fused_add_rms_norm_fp8_functional_op.check({x, residual, weight, scale, eps});
    Outputs o = make_outputs(x, api::sizes_of(x), false);
    Tensor new_residual = new_residual_of(residual);
    rms_norm_fp8_run<kCuda>(fused_add_rms_norm_fp8_functional_op, x, new_residual, weight, scale,
                            std::nullopt, eps_value(x, eps), o);
    return {o.out, new_residual};
}

template <bool kCuda>
std::tuple<Tensor, Tensor, Tensor> fused_add_rms_norm_fp8_per_token_functional(
    const Tensor &x, const Tensor &residual, const Tensor &weight, std::optional<double> eps,
    OptionalTensor scale_ub) {
    fused_add_rms_norm_fp8_per_token_functional_op.check({x, residual, weight, eps, scale_ub});
    Outputs o = make_outputs(x, api::sizes_of(x), true);
    Tensor new_residual = new_residual_of(residual);
    rms_norm_fp8_run<kCuda>(fused_add_rms_norm_fp8_per_token_functional_op, x, new_residual, weight,
                            std::nullopt, scale_ub, eps_value(x, eps), o);
    return {o.out, *o.scales, new_residual};
}

// --------------------------------------------------------- gated units --
template <bool kCuda>
void act_and_mul_fp8_run(const OpRules &op, my_ops_activation act, const Tensor &x,
                         const OptionalTensor &scale, const OptionalTensor &scale_ub, Outputs &o) {
    const int64_t rows = rows_of(x), d = x.size(-1) / 2;
    if (rows == 0) return;
    const Rows xr = rows_in_place(x);
    const my_ops_dtype dt = kernel_dtype(x);
    const my_ops_fp8_scaling s = scaling_of(scale, o, scale_ub);
    uint8_t *out = static_cast<uint8_t *>(o.out.mutable_data_ptr());
    run_on_device<kCuda>(
        op, x, rows, d,
        [&](auto stream) {
            return my_ops_act_and_mul_fp8_cuda(dt, act, xr.tensor.const_data_ptr(), xr.stride, out,
                                               s, rows, d, stream);
        },
        [&](int64_t begin, int64_t end) {
            return my_ops_act_and_mul_fp8_cpu(dt, act, element_ptr(xr.tensor, begin * xr.stride),
                                              xr.stride, out + begin * d, from_row(s, begin),
                                              end - begin, d);
        });
}

std::vector<int64_t> halved_shape(const Tensor &x) {
    auto shape = api::sizes_of(x);
    shape.back() /= 2;
    return shape;
}

template <bool kCuda> Tensor silu_and_mul_fp8(const Tensor &x, const Tensor &scale) {
    silu_and_mul_fp8_op.check({x, scale});
    Outputs o = make_outputs(x, halved_shape(x), false);
    act_and_mul_fp8_run<kCuda>(silu_and_mul_fp8_op, MY_OPS_SILU, x, scale, std::nullopt, o);
    return o.out;
}

template <bool kCuda>
std::tuple<Tensor, Tensor> silu_and_mul_fp8_per_token(const Tensor &x, OptionalTensor scale_ub) {
    silu_and_mul_fp8_per_token_op.check({x, scale_ub});
    Outputs o = make_outputs(x, halved_shape(x), true);
    act_and_mul_fp8_run<kCuda>(silu_and_mul_fp8_per_token_op, MY_OPS_SILU, x, std::nullopt,
                               scale_ub, o);
    return {o.out, *o.scales};
}

}  // namespace
}  // namespace my_ops

MY_OPS_FRAGMENT(m) {
    for (const auto *op :
         {&my_ops::rms_norm_fp8_op, &my_ops::rms_norm_fp8_per_token_op,
          &my_ops::fused_add_rms_norm_fp8_op, &my_ops::fused_add_rms_norm_fp8_per_token_op,
          &my_ops::fused_add_rms_norm_fp8_functional_op,
          &my_ops::fused_add_rms_norm_fp8_per_token_functional_op, &my_ops::silu_and_mul_fp8_op,
          &my_ops::silu_and_mul_fp8_per_token_op})
        m.def(op->schema());
}

// The eight ops with the kernels of one device (kCuda), or (no CUDA build) the
// CPU kernels' checks, then a refusal, for CUDA tensors.
#define MY_OPS_FP8_OPS(m, kCuda, WRAP)                                                           \
    m.impl("rms_norm_fp8", WRAP(rms_norm_fp8_op, rms_norm_fp8<kCuda>));                          \
    m.impl("rms_norm_fp8_per_token",                                                             \
           WRAP(rms_norm_fp8_per_token_op, rms_norm_fp8_per_token<kCuda>));                      \
    m.impl("fused_add_rms_norm_fp8", WRAP(fused_add_rms_norm_fp8_op, fused_add_rms_norm_fp8<kCuda>)); \
    m.impl("fused_add_rms_norm_fp8_per_token",                                                   \
           WRAP(fused_add_rms_norm_fp8_per_token_op, fused_add_rms_norm_fp8_per_token<kCuda>));  \
    m.impl("fused_add_rms_norm_fp8_functional",                                                  \
           WRAP(fused_add_rms_norm_fp8_functional_op, fused_add_rms_norm_fp8_functional<kCuda>)); \
    m.impl("fused_add_rms_norm_fp8_per_token_functional",                                        \
           WRAP(fused_add_rms_norm_fp8_per_token_functional_op,                                  \
                fused_add_rms_norm_fp8_per_token_functional<kCuda>));                            \
    m.impl("silu_and_mul_fp8", WRAP(silu_and_mul_fp8_op, silu_and_mul_fp8<kCuda>));              \
    m.impl("silu_and_mul_fp8_per_token",                                                         \
           WRAP(silu_and_mul_fp8_per_token_op, silu_and_mul_fp8_per_token<kCuda>))
#define MY_OPS_FP8_KERNEL(op, fn) MY_OPS_KERNEL(fn)

MY_OPS_IMPL(CPU, m) {
    using namespace my_ops;
    MY_OPS_FP8_OPS(m, false, MY_OPS_FP8_KERNEL);
}

MY_OPS_IMPL(CUDA, m) {
    using namespace my_ops;
#ifdef MY_OPS_WITH_CUDA
    MY_OPS_FP8_OPS(m, true, MY_OPS_FP8_KERNEL);
#else
    MY_OPS_FP8_OPS(m, false, MY_OPS_NO_CUDA_KERNEL);
#endif
}
