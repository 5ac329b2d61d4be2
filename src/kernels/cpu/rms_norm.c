/*
 * RMSNorm on the CPU: forward, backward and the fused residual-add variant.
 *
 * Each row is converted once into a scratch row of the accumulator type, so
 * the statistics and the output pass both run over plain floats; the weight
 * is converted once per call, from its own type (the rows' type, or float32
 * with 16-bit rows: my_ops_rms_norm_weight_ok). Sums over a row are blocked
 * (rows.h); the weight gradient adds each block of MY_OPS_SUM_BLOCK rows into
 * a double accumulator, so neither drifts with long rows or many rows.
 */
#include "../rms_norm.h"
#include "rows.h"

/* w[j] = weight[j] in the accumulator type; weight is T, or float32 (checked by the caller). */
#define LOAD_WEIGHT(T, ACC, LOAD)                                                         \
    do {                                                                                  \
        if (weight_dtype == MY_OPS_FLOAT32)                                               \
            for (int64_t j = 0; j < hidden; ++j) w[j] = (ACC)((const float *)weight)[j];  \
        else                                                                              \
            for (int64_t j = 0; j < hidden; ++j) w[j] = LOAD(((const T *)weight)[j]);     \
    } while (0)

#define DEFINE_RMS_NORM(S, T, ACC, LOAD, STORE)                                           \
    MY_OPS_MULTIVERSION static int rms_norm_##S(my_ops_dtype weight_dtype, const T *x,         \
                                                int64_t x_stride, const void *weight, T *y, \
                                                int64_t rows, int64_t hidden, double eps) { \
        void *scratch[2];                                                                 \
        if (my_ops_alloc_scratch(scratch, 2, sizeof(ACC) * (size_t)hidden)) return MY_OPS_OUT_OF_MEMORY; \
        ACC *w = scratch[0], *row = scratch[1];                                           \
        LOAD_WEIGHT(T, ACC, LOAD);                                                        \
        for (int64_t r = 0; r < rows; ++r) {                                              \
            const T *x_row = x + r * x_stride;                                            \
            T *y_row = y + r * hidden;                                                    \
            for (int64_t j = 0; j < hidden; ++j) row[j] = LOAD(x_row[j]);                 \
            const ACC mean_square = (ACC)(my_ops_sum_of_squares_##ACC(row, hidden) / (double)hidden); \
            const ACC rstd = (ACC)1 / MY_OPS_SQRT(mean_square + (ACC)eps);                \
            for (int64_t j = 0; j < hidden; ++j) y_row[j] = STORE(row[j] * rstd * w[j]);  \
        }                                                                                 \
        my_ops_free_scratch(scratch, 2);                                                         \
        return MY_OPS_OK;                                                                 \
    }                                                                                     \
                                                                                          \
    /* dx = rstd * w * dy - x * rstd^3 / hidden * sum(w * dy * x);                     \
       grad_weight_acc (double) += dy * x * rstd, a block of rows at a time */           \
    MY_OPS_MULTIVERSION static int rms_norm_backward_##S(                                 \
        my_ops_dtype weight_dtype, const T *grad_out, int64_t grad_out_stride, const T *x, \
        int64_t x_stride, const void *weight, T *grad_x, double *grad_weight_acc,          \
        int64_t rows, int64_t hidden, double eps) {                                       \
        void *scratch[5];                                                                 \
        if (my_ops_alloc_scratch(scratch, 5, sizeof(ACC) * (size_t)hidden)) return MY_OPS_OUT_OF_MEMORY; \
        ACC *w = scratch[0], *row = scratch[1], *dy = scratch[2], *wdy = scratch[3];      \
        ACC *dw_block = scratch[4];                                                       \
        LOAD_WEIGHT(T, ACC, LOAD);                                                        \
        for (int64_t j = 0; j < hidden; ++j) dw_block[j] = 0;                             \
        for (int64_t r = 0; r < rows; ++r) {                                              \
            const T *x_row = x + r * x_stride;                                            \
            const T *dy_row = grad_out + r * grad_out_stride;                             \
            T *dx_row = grad_x + r * hidden;                                              \
            for (int64_t j = 0; j < hidden; ++j) {                                        \
                row[j] = LOAD(x_row[j]);                                                  \
                dy[j] = LOAD(dy_row[j]);                                                  \
                wdy[j] = w[j] * dy[j];                                                    \
            }                                                                             \
            const ACC dot = (ACC)my_ops_dot_##ACC(wdy, row, hidden);                      \
            const ACC mean_square = (ACC)(my_ops_sum_of_squares_##ACC(row, hidden) / (double)hidden); \
            const ACC rstd = (ACC)1 / MY_OPS_SQRT(mean_square + (ACC)eps);                \
            const ACC coef = dot * rstd * rstd * rstd / (ACC)hidden;                      \
            for (int64_t j = 0; j < hidden; ++j) {                                        \
                dx_row[j] = STORE(rstd * wdy[j] - coef * row[j]);                         \
                dw_block[j] += dy[j] * row[j] * rstd;                                     \
            }                                                                             \
            if ((r + 1) % MY_OPS_SUM_BLOCK == 0 || r + 1 == rows) {                       \
                for (int64_t j = 0; j < hidden; ++j) {                                    \
                    grad_weight_acc[j] += (double)dw_block[j];                            \
                    dw_block[j] = 0;                                                      \
                }                                                                         \
            }                                                                             \
        }                                                                                 \
        my_ops_free_scratch(scratch, 5);                                                  \
        return MY_OPS_OK;                                                                 \
    }                                                                                     \
                                                                                          \
    MY_OPS_MULTIVERSION static int fused_add_rms_norm_##S(                                \
        my_ops_dtype weight_dtype, T *x, int64_t x_stride, T *residual,                   \
        int64_t residual_stride, const void *weight, int64_t rows, int64_t hidden,        \
        double eps) {                                                                     \
        void *scratch[2];                                                                 \
        if (my_ops_alloc_scratch(scratch, 2, sizeof(ACC) * (size_t)hidden)) return MY_OPS_OUT_OF_MEMORY; \
        ACC *w = scratch[0], *row = scratch[1];                                           \
        LOAD_WEIGHT(T, ACC, LOAD);                                                        \
        for (int64_t r = 0; r < rows; ++r) {                                              \
            T *x_row = x + r * x_stride;                                                  \
            T *residual_row = residual + r * residual_stride;                             \
            for (int64_t j = 0; j < hidden; ++j) {                                        \
                /* round the sum to T first: the residual stream holds T values */        \
                const T sum = STORE(LOAD(x_row[j]) + LOAD(residual_row[j]));              \
                residual_row[j] = sum;                                                    \
                row[j] = LOAD(sum);                                                       \
            }                                                                             \
            const ACC mean_square = (ACC)(my_ops_sum_of_squares_##ACC(row, hidden) / (double)hidden); \
            const ACC rstd = (ACC)1 / MY_OPS_SQRT(mean_square + (ACC)eps);                \
            for (int64_t j = 0; j < hidden; ++j) x_row[j] = STORE(row[j] * rstd * w[j]);  \
        }                                                                                 \
        my_ops_free_scratch(scratch, 2);                                                         \
        return MY_OPS_OK;                                                                 \
    }

MY_OPS_FOR_EACH_DTYPE(DEFINE_RMS_NORM)

int my_ops_rms_norm_cpu(my_ops_dtype dtype, my_ops_dtype weight_dtype, const void *x,
                        int64_t x_stride, const void *weight, void *y, int64_t rows,
                        int64_t hidden, double eps) {
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

int my_ops_fused_add_rms_norm_cpu(my_ops_dtype dtype, my_ops_dtype weight_dtype, void *x,
                                  int64_t x_stride, void *residual, int64_t residual_stride,
                                  const void *weight, int64_t rows, int64_t hidden, double eps) {
    if (!my_ops_rms_norm_weight_ok(dtype, weight_dtype)) return MY_OPS_BAD_DTYPE;
#define CALL(S)                                                                              \
    fused_add_rms_norm_##S(weight_dtype, x, x_stride, residual, residual_stride, weight, rows, \
                           hidden, eps)
    MY_OPS_DISPATCH(dtype, CALL);
#undef CALL
}
