/*
 * fp8 output of the row-wise ops, for the fp8 GEMM that follows them
 * (cpu/fp8.c, cuda/fp8.cu): RMSNorm, the fused residual add + RMSNorm and a
 * gated unit (act_and_mul's activations), each written as float8 e4m3fn
 * bytes (fp8_convert.h) with
 *   - a static per-tensor scale: out = fp8(y / scale), scale one float32
 *     read from memory (a device pointer on CUDA: no host sync, CUDA graphs
 *     capture it);
 *   - or dynamic per-token scales: each row's scale = max(min(amax, ub) / 448,
 *     MY_OPS_FP8_MIN_SCALE) with amax the row's largest |y| and ub the
 *     optional upper bound (NULL: none), written to scales[row]; out = fp8(y / scale).
 * y is computed in float32 (float64 rows: in float64; RMSNorm's as
 * rstd * (x * w)) and never rounded to the rows' dtype before the
 * quantization (vLLM rounds the normalized value to it first), then rounded
 * once to fp8. y / scale is computed as (y * pre) * (1 / (scale * pre)) with
 * pre a power of two (fp8_convert.h): y times a rounded reciprocal, as vLLM
 * multiplies by 1 / scale (within an ulp of the quotient, so one fp8 step at
 * most, at a tie), with the special values of IEEE division for any float32
 * static scale, a subnormal one too (zero: +-448, NaN where y is 0).
 * NaN: a NaN y gives a NaN byte and does not count toward its row's amax (as
 * vLLM's kernels: the row's scale comes from its other values; a normalized
 * row with a NaN is all NaN, with the floor scale). A row of no values has
 * amax 0: the floor scale.
 * Rows with a row stride, as in common.h; out is dense bytes [rows, width],
 * scales dense float32 [rows].
 */
#ifndef MY_OPS_KERNELS_FP8_H
#define MY_OPS_KERNELS_FP8_H

#include "act_and_mul.h"
#include "common.h"
#include "fp8_convert.h"
#include "rms_norm.h"

MY_OPS_EXTERN_C_BEGIN

/* Where the scale of a call comes from: static_scale (one float) when not
 * NULL, else per token into scales (capped by *scale_ub when not NULL). */
typedef struct my_ops_fp8_scaling {
    const float *static_scale;
    float *scales;
    const float *scale_ub;
} my_ops_fp8_scaling;

/* ---------------------------------------------------------------- CPU -- */

/* out = fp8(rms_norm(x) * weight / scale); with a residual (not NULL): residual += x
 * first (rounded to the dtype, written back) and the norm of the sum. weight is
 * weight_dtype: dtype, or float32 with 16-bit rows (my_ops_rms_norm_weight_ok), as
 * rms_norm's; another pair is refused (MY_OPS_BAD_DTYPE, cudaErrorInvalidValue). */
int my_ops_rms_norm_fp8_cpu(my_ops_dtype dtype, my_ops_dtype weight_dtype, const void *x,
                            int64_t x_stride, void *residual, int64_t residual_stride,
                            const void *weight, uint8_t *out, my_ops_fp8_scaling scaling,
                            int64_t rows, int64_t hidden, double eps);
/* out = fp8(act(x[:, :d]) * x[:, d:] / scale) for x of shape [rows, 2d] */
int my_ops_act_and_mul_fp8_cpu(my_ops_dtype dtype, my_ops_activation act, const void *x,
                               int64_t x_stride, uint8_t *out, my_ops_fp8_scaling scaling,
                               int64_t rows, int64_t d);

/* --------------------------------------------------------------- CUDA -- */

int my_ops_rms_norm_fp8_cuda(my_ops_dtype dtype, my_ops_dtype weight_dtype, const void *x,
                             int64_t x_stride, void *residual, int64_t residual_stride,
                             const void *weight, uint8_t *out, my_ops_fp8_scaling scaling,
                             int64_t rows, int64_t hidden, double eps, void *stream);
int my_ops_act_and_mul_fp8_cuda(my_ops_dtype dtype, my_ops_activation act, const void *x,
                                int64_t x_stride, uint8_t *out, my_ops_fp8_scaling scaling,
                                int64_t rows, int64_t d, void *stream);

MY_OPS_EXTERN_C_END

#endif /* MY_OPS_KERNELS_FP8_H */
