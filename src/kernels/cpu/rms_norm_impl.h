/*
 * The RMSNorm CPU kernels for one element type, included once per dtype by
 * rms_norm.c through for_each_dtype.h (T, ACC, LOAD, STORE, SUFFIX: see
 * there). No include guard, on purpose.
 *
 * The weight's conversion is written out in each kernel rather than called:
 * as a function (even always_inline) GCC schedules the kernels differently
 * from the macro-generated ones this file replaced; written out, the object
 * code is the same instruction for instruction.
 */

/* rows.h's sums over a row in ACC */
#define DOT MY_OPS_CAT(my_ops_dot_, ACC)
#define SUM_OF_SQUARES MY_OPS_CAT(my_ops_sum_of_squares_, ACC)

MY_OPS_MULTIVERSION static int MY_OPS_NAME(rms_norm)(my_ops_dtype weight_dtype, const T *x,
                                                     int64_t x_stride, const void *weight, T *y,
                                                     int64_t rows, int64_t hidden, double eps) {
    void *scratch[2];
    if (my_ops_alloc_scratch(scratch, 2, sizeof(ACC) * (size_t)hidden)) return MY_OPS_OUT_OF_MEMORY;
    ACC *w = scratch[0], *row = scratch[1];
    /* w[j] = weight[j] in ACC; weight is T, or float32 (checked by the caller) */
    if (weight_dtype == MY_OPS_FLOAT32)
        for (int64_t j = 0; j < hidden; ++j) w[j] = (ACC)((const float *)weight)[j];
    else
        for (int64_t j = 0; j < hidden; ++j) w[j] = LOAD(((const T *)weight)[j]);
    for (int64_t r = 0; r < rows; ++r) {
        const T *x_row = x + r * x_stride;
        T *y_row = y + r * hidden;
        for (int64_t j = 0; j < hidden; ++j) row[j] = LOAD(x_row[j]);
        const ACC mean_square = (ACC)(SUM_OF_SQUARES(row, hidden) / (double)hidden);
        const ACC rstd = (ACC)1 / MY_OPS_SQRT(mean_square + (ACC)eps);
        for (int64_t j = 0; j < hidden; ++j) y_row[j] = STORE(row[j] * rstd * w[j]);
    }
    my_ops_free_scratch(scratch, 2);
    return MY_OPS_OK;
}

/* dx = rstd * w * dy - x * rstd^3 / hidden * sum(w * dy * x);
   grad_weight_acc (double) += dy * x * rstd, a block of rows at a time */
MY_OPS_MULTIVERSION static int MY_OPS_NAME(rms_norm_backward)(
    my_ops_dtype weight_dtype, const T *grad_out, int64_t grad_out_stride, const T *x,
    int64_t x_stride, const void *weight, T *grad_x, double *grad_weight_acc, int64_t rows,
    int64_t hidden, double eps) {
    void *scratch[5];
    if (my_ops_alloc_scratch(scratch, 5, sizeof(ACC) * (size_t)hidden)) return MY_OPS_OUT_OF_MEMORY;
    ACC *w = scratch[0], *row = scratch[1], *dy = scratch[2], *wdy = scratch[3];
    ACC *dw_block = scratch[4];
    /* w[j] = weight[j] in ACC; weight is T, or float32 (checked by the caller) */
    if (weight_dtype == MY_OPS_FLOAT32)
        for (int64_t j = 0; j < hidden; ++j) w[j] = (ACC)((const float *)weight)[j];
    else
        for (int64_t j = 0; j < hidden; ++j) w[j] = LOAD(((const T *)weight)[j]);
    for (int64_t j = 0; j < hidden; ++j) dw_block[j] = 0;
    for (int64_t r = 0; r < rows; ++r) {
        const T *x_row = x + r * x_stride;
        const T *dy_row = grad_out + r * grad_out_stride;
        T *dx_row = grad_x + r * hidden;
        for (int64_t j = 0; j < hidden; ++j) {
            row[j] = LOAD(x_row[j]);
            dy[j] = LOAD(dy_row[j]);
            wdy[j] = w[j] * dy[j];
        }
        const ACC dot = (ACC)DOT(wdy, row, hidden);
        const ACC mean_square = (ACC)(SUM_OF_SQUARES(row, hidden) / (double)hidden);
        const ACC rstd = (ACC)1 / MY_OPS_SQRT(mean_square + (ACC)eps);
        const ACC coef = dot * rstd * rstd * rstd / (ACC)hidden;
        for (int64_t j = 0; j < hidden; ++j) {
            dx_row[j] = STORE(rstd * wdy[j] - coef * row[j]);
            dw_block[j] += dy[j] * row[j] * rstd;
        }
        if ((r + 1) % MY_OPS_SUM_BLOCK == 0 || r + 1 == rows) {
            for (int64_t j = 0; j < hidden; ++j) {
                grad_weight_acc[j] += (double)dw_block[j];
                dw_block[j] = 0;
            }
        }
    }
    my_ops_free_scratch(scratch, 5);
    return MY_OPS_OK;
}

/* residual_out = x + residual; y = rms_norm(residual_out): y and residual_out
 * are x and residual themselves (in place) or memory apart from them. */
MY_OPS_MULTIVERSION static int MY_OPS_NAME(fused_add_rms_norm)(
    my_ops_dtype weight_dtype, const T *x, int64_t x_stride, const T *residual,
    int64_t residual_stride, const void *weight, T *y, int64_t y_stride, T *residual_out,
    int64_t residual_out_stride, int64_t rows, int64_t hidden, double eps) {
    void *scratch[2];
    if (my_ops_alloc_scratch(scratch, 2, sizeof(ACC) * (size_t)hidden)) return MY_OPS_OUT_OF_MEMORY;
    ACC *w = scratch[0], *row = scratch[1];
    /* w[j] = weight[j] in ACC; weight is T, or float32 (checked by the caller) */
    if (weight_dtype == MY_OPS_FLOAT32)
        for (int64_t j = 0; j < hidden; ++j) w[j] = (ACC)((const float *)weight)[j];
    else
        for (int64_t j = 0; j < hidden; ++j) w[j] = LOAD(((const T *)weight)[j]);
    for (int64_t r = 0; r < rows; ++r) {
        const T *x_row = x + r * x_stride;
        const T *residual_row = residual + r * residual_stride;
        T *residual_out_row = residual_out + r * residual_out_stride;
        T *y_row = y + r * y_stride;
        for (int64_t j = 0; j < hidden; ++j) {
            /* round the sum to T first: the residual stream holds T values */
            const T sum = STORE(LOAD(x_row[j]) + LOAD(residual_row[j]));
            residual_out_row[j] = sum;
            row[j] = LOAD(sum);
        }
        const ACC mean_square = (ACC)(SUM_OF_SQUARES(row, hidden) / (double)hidden);
        const ACC rstd = (ACC)1 / MY_OPS_SQRT(mean_square + (ACC)eps);
        for (int64_t j = 0; j < hidden; ++j) y_row[j] = STORE(row[j] * rstd * w[j]);
    }
    my_ops_free_scratch(scratch, 2);
    return MY_OPS_OK;
}

#undef DOT
#undef SUM_OF_SQUARES
