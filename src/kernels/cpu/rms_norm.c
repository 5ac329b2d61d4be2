/*
 * RMSNorm on the CPU: forward, backward and the fused residual-add variant.
 *
 * Each row is converted once into a scratch row of the accumulator type, so
 * the statistics and the output pass both run over plain floats; the weight
 * is converted once per call, from its own type (the rows' type, or float32
 * with 16-bit rows: my_ops_rms_norm_weight_ok). Sums over a row are blocked
 * (rows.h); the weight gradient adds each block of MY_OPS_SUM_BLOCK rows into
 * a double accumulator, so neither drifts with long rows or many rows.
 * The kernels are written once, in rms_norm_impl.h, for every dtype.
 */
#include "../rms_norm.h"
#include "rows.h"

/* rms_norm_f32 .. rms_norm_bf16 and the same of the backward and the fused add */
#define MY_OPS_IMPL "rms_norm_impl.h"
#include "for_each_dtype.h"
#undef MY_OPS_IMPL

int my_ops_rms_norm_cpu(my_ops_dtype dtype, my_ops_dtype weight_dtype, const void *x,
                        int64_t x_stride, const void *weight, void *y, int64_t rows, int64_t hidden,
                        double eps) {
    if (!my_ops_rms_norm_weight_ok(dtype, weight_dtype)) return MY_OPS_BAD_DTYPE;
#define CALL(S) rms_norm_##S(weight_dtype, x, x_stride, weight, y, rows, hidden, eps)
    MY_OPS_DISPATCH(dtype, CALL);
#undef CALL
}

int my_ops_rms_norm_backward_cpu(my_ops_dtype dtype, my_ops_dtype weight_dtype,
                                 const void *grad_out, int64_t grad_out_stride, const void *x,
                                 int64_t x_stride, const void *weight, void *grad_x,
                                 void *grad_weight_acc, int64_t rows, int64_t hidden, double eps) {
    if (!my_ops_rms_norm_weight_ok(dtype, weight_dtype)) return MY_OPS_BAD_DTYPE;
#define CALL(S)                                                                              \
    rms_norm_backward_##S(weight_dtype, grad_out, grad_out_stride, x, x_stride, weight, grad_x, \
                          grad_weight_acc, rows, hidden, eps)
    MY_OPS_DISPATCH(dtype, CALL);
#undef CALL
}

int my_ops_fused_add_rms_norm_out_cpu(my_ops_dtype dtype, my_ops_dtype weight_dtype, const void *x,
                                      int64_t x_stride, const void *residual,
                                      int64_t residual_stride, const void *weight, void *y,
                                      int64_t y_stride, void *residual_out,
                                      int64_t residual_out_stride, int64_t rows, int64_t hidden,
                                      double eps) {
    if (!my_ops_rms_norm_weight_ok(dtype, weight_dtype)) return MY_OPS_BAD_DTYPE;
#define CALL(S)                                                                                \
    fused_add_rms_norm_##S(weight_dtype, x, x_stride, residual, residual_stride, weight, y,    \
                           y_stride, residual_out, residual_out_stride, rows, hidden, eps)
    MY_OPS_DISPATCH(dtype, CALL);
#undef CALL
}

int my_ops_fused_add_rms_norm_cpu(my_ops_dtype dtype, my_ops_dtype weight_dtype, void *x,
                                  int64_t x_stride, void *residual, int64_t residual_stride,
                                  const void *weight, int64_t rows, int64_t hidden, double eps) {
    return my_ops_fused_add_rms_norm_out_cpu(dtype, weight_dtype, x, x_stride, residual,
                                             residual_stride, weight, x, x_stride, residual,
                                             residual_stride, rows, hidden, eps);
}
