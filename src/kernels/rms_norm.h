/*
 * The RMSNorm family: rms_norm, its backward, and fused_add_rms_norm
 * (cpu/rms_norm.c; cuda/rms_norm_forward.cu and cuda/rms_norm_backward.cu).
 * Rows of `hidden` elements with a row stride (common.h's conventions).
 */
#ifndef MY_OPS_KERNELS_RMS_NORM_H
#define MY_OPS_KERNELS_RMS_NORM_H

#include "common.h"

MY_OPS_EXTERN_C_BEGIN

/*
 * The RMSNorm kernels take their weight (and the CUDA backward writes
 * grad_weight) as `weight_dtype`: `dtype` itself, or float32 with float16 or
 * bfloat16 tensors, as mixed-precision training keeps its parameters in
 * float32 while activations are 16-bit. The weight is read as that type and
 * used in the accumulator type, so a float32 weight is not rounded to 16 bits.
 * Any other pair is refused (MY_OPS_BAD_DTYPE on the CPU, cudaErrorInvalidValue
 * on CUDA); a weight wider still (float64 with float32 or 16-bit tensors) is
 * the caller's to convert to float32 first: the arithmetic is float32 anyway.
 */
static inline int my_ops_rms_norm_weight_ok(my_ops_dtype dtype, my_ops_dtype weight_dtype) {
    return weight_dtype == dtype || (weight_dtype == MY_OPS_FLOAT32 &&
                                     (dtype == MY_OPS_FLOAT16 || dtype == MY_OPS_BFLOAT16));
}

/* ---------------------------------------------------------------- CPU -- */

/* y[r, :] = x[r, :] / sqrt(mean(x[r, :]^2) + eps) * weight; y is dense */
int my_ops_rms_norm_cpu(my_ops_dtype dtype, my_ops_dtype weight_dtype, const void *x,
                        int64_t x_stride, const void *weight, void *y, int64_t rows, int64_t hidden,
                        double eps);

/*
 * Backward of rms_norm over `rows` rows: writes grad_x (dense) and ADDS this
 * block of rows' contribution to grad_weight_acc[hidden], a float64
 * accumulator for every dtype (the caller sums the blocks and converts to the
 * weight's dtype): summed in float32 over many rows, the weight gradient drifted.
 */
int my_ops_rms_norm_backward_cpu(my_ops_dtype dtype, my_ops_dtype weight_dtype,
                                 const void *grad_out, int64_t grad_out_stride, const void *x,
                                 int64_t x_stride, const void *weight, void *grad_x,
                                 void *grad_weight_acc, int64_t rows, int64_t hidden, double eps);

/* residual += x (rounded to dtype); x = rms_norm(residual, weight, eps). In place. */
int my_ops_fused_add_rms_norm_cpu(my_ops_dtype dtype, my_ops_dtype weight_dtype, void *x,
                                  int64_t x_stride, void *residual, int64_t residual_stride,
                                  const void *weight, int64_t rows, int64_t hidden, double eps);

/*
 * The same into other rows: residual_out = x + residual (rounded to dtype);
 * y = rms_norm(residual_out, weight, eps). y and residual_out are either x and
 * residual themselves with their strides (the in-place form above) or memory
 * apart from x and residual (fused_add_rms_norm_functional's new tensors).
 */
int my_ops_fused_add_rms_norm_out_cpu(my_ops_dtype dtype, my_ops_dtype weight_dtype, const void *x,
                                      int64_t x_stride, const void *residual,
                                      int64_t residual_stride, const void *weight, void *y,
                                      int64_t y_stride, void *residual_out,
                                      int64_t residual_out_stride, int64_t rows, int64_t hidden,
                                      double eps);

/* --------------------------------------------------------------- CUDA -- */

int my_ops_rms_norm_cuda(my_ops_dtype dtype, my_ops_dtype weight_dtype, const void *x,
                         int64_t x_stride, const void *weight, void *y, int64_t rows,
                         int64_t hidden, double eps, void *stream);

/*
 * rms_norm backward on CUDA needs a workspace of `partials` x hidden elements
 * (float64 for float64, float32 otherwise) for per-block sums of grad_weight
 * (and, for rows too wide for one block to hold, each row's two statistics),
 * with partials = my_ops_rms_norm_backward_cuda_partials(dtype, weight_dtype,
 * rows, hidden) on the current device. grad_weight is written as weight_dtype.
 */
int64_t my_ops_rms_norm_backward_cuda_partials(my_ops_dtype dtype, my_ops_dtype weight_dtype,
                                               int64_t rows, int64_t hidden);
int my_ops_rms_norm_backward_cuda(my_ops_dtype dtype, my_ops_dtype weight_dtype,
                                  const void *grad_out, int64_t grad_out_stride, const void *x,
                                  int64_t x_stride, const void *weight, void *grad_x,
                                  void *grad_weight, void *workspace, int64_t partials,
                                  int64_t rows, int64_t hidden, double eps, void *stream);

int my_ops_fused_add_rms_norm_cuda(my_ops_dtype dtype, my_ops_dtype weight_dtype, void *x,
                                   int64_t x_stride, void *residual, int64_t residual_stride,
                                   const void *weight, int64_t rows, int64_t hidden, double eps,
                                   void *stream);

/* my_ops_fused_add_rms_norm_out_cpu's contract, on CUDA */
int my_ops_fused_add_rms_norm_out_cuda(my_ops_dtype dtype, my_ops_dtype weight_dtype, const void *x,
                                       int64_t x_stride, const void *residual,
                                       int64_t residual_stride, const void *weight, void *y,
                                       int64_t y_stride, void *residual_out,
                                       int64_t residual_out_stride, int64_t rows, int64_t hidden,
                                       double eps, void *stream);

MY_OPS_EXTERN_C_END

#endif /* MY_OPS_KERNELS_RMS_NORM_H */
