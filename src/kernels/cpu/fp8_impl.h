/*
 * The fp8-output CPU kernels for one element type (fp8.c includes it through
 * for_each_dtype.h: T, ACC, LOAD, STORE, SUFFIX). No include guard, on purpose.
 */

#define SUM_OF_SQUARES MY_OPS_CAT(my_ops_sum_of_squares_, ACC)
#define ABS_MAX MY_OPS_CAT(my_ops_abs_max_, ACC)
#define ACTIVATION MY_OPS_CAT(my_ops_activation_, ACC)
#define NARROW MY_OPS_CAT(my_ops_fp8_narrow_, ACC)

/* y / scale of one row as (y * pre) * inv (../fp8_convert.h): the static scale, or the
 * row's own (written to scales[r]; always a normal float, so pre is 1). */
typedef struct {
    ACC pre, inv;
} MY_OPS_NAME(fp8_factors);

static inline MY_OPS_NAME(fp8_factors)
    MY_OPS_NAME(fp8_row_factors)(my_ops_fp8_scaling s, int64_t r, ACC amax) {
    MY_OPS_NAME(fp8_factors) f;
    if (s.static_scale != NULL) {
        const float pre = my_ops_fp8_scale_prefactor(*s.static_scale);
        f.pre = (ACC)pre;
        f.inv = (ACC)1 / (ACC)(*s.static_scale * pre);
        return f;
    }
    /* (in ACC: a float64 amax past float's range gives a finite scale up to
       448 * FLT_MAX; past that the float32 scale is inf and the row's bytes 0) */
    ACC bound = amax;
    if (s.scale_ub != NULL && (ACC)*s.scale_ub < bound) bound = (ACC)*s.scale_ub;
    float scale = (float)(bound / (ACC)MY_OPS_FP8_MAX);
    scale = scale > MY_OPS_FP8_MIN_SCALE ? scale : MY_OPS_FP8_MIN_SCALE;
    s.scales[r] = scale;
    f.pre = 1;
    f.inv = (ACC)1 / (ACC)scale;
    return f;
}

static inline void MY_OPS_NAME(fp8_store)(const ACC *y, MY_OPS_NAME(fp8_factors) f, uint8_t *out,
                                          int64_t n) {
    /* (float64: narrowed to float rounded to odd, so rounded once; the conversion saturates) */
    for (int64_t j = 0; j < n; ++j) out[j] = my_ops_float_to_e4m3(NARROW(y[j] * f.pre * f.inv));
}

MY_OPS_MULTIVERSION static int MY_OPS_NAME(rms_norm_fp8)(my_ops_dtype weight_dtype, const T *x,
                                                         int64_t x_stride, T *residual,
                                                         int64_t res_stride, const void *weight,
                                                         uint8_t *out, my_ops_fp8_scaling scaling,
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
        if (residual != NULL) {
            T *res_row = residual + r * res_stride;
            for (int64_t j = 0; j < hidden; ++j) {
                const T sum = STORE(LOAD(x_row[j]) + LOAD(res_row[j]));
                res_row[j] = sum;
                row[j] = LOAD(sum);
            }
        } else {
            for (int64_t j = 0; j < hidden; ++j) row[j] = LOAD(x_row[j]);
        }
        const ACC mean_square = (ACC)(SUM_OF_SQUARES(row, hidden) / (double)hidden);
        const ACC rstd = (ACC)1 / MY_OPS_SQRT(mean_square + (ACC)eps);
        /* rstd * (x * w), as the CUDA kernels (whose amax is rstd * max |x * w|) */
        for (int64_t j = 0; j < hidden; ++j) row[j] = (row[j] * w[j]) * rstd;
        const ACC amax = scaling.static_scale ? 0 : ABS_MAX(row, hidden);
        MY_OPS_NAME(fp8_store)(row, MY_OPS_NAME(fp8_row_factors)(scaling, r, amax),
                               out + r * hidden, hidden);
    }
    my_ops_free_scratch(scratch, 2);
    return MY_OPS_OK;
}

static MY_OPS_ALWAYS_INLINE int MY_OPS_NAME(act_and_mul_fp8_body)(int act, const T *x,
                                                                  int64_t x_stride, uint8_t *out,
                                                                  my_ops_fp8_scaling scaling,
                                                                  int64_t rows, int64_t d) {
    void *scratch[1];
    if (my_ops_alloc_scratch(scratch, 1, sizeof(ACC) * (size_t)d)) return MY_OPS_OUT_OF_MEMORY;
    ACC *row = scratch[0];
    for (int64_t r = 0; r < rows; ++r) {
        const T *gate = x + r * x_stride;
        const T *up = gate + d;
        for (int64_t j = 0; j < d; ++j) row[j] = ACTIVATION(act, LOAD(gate[j])) * LOAD(up[j]);
        const ACC amax = scaling.static_scale ? 0 : ABS_MAX(row, d);
        MY_OPS_NAME(fp8_store)(row, MY_OPS_NAME(fp8_row_factors)(scaling, r, amax), out + r * d, d);
    }
    my_ops_free_scratch(scratch, 1);
    return MY_OPS_OK;
}

#define MY_OPS_ACT_AND_MUL_FP8_INSTANCE(name, ENUM, value)                                   \
    MY_OPS_MULTIVERSION static int MY_OPS_NAME(name##_and_mul_fp8)(                          \
        const T *x, int64_t x_stride, uint8_t *out, my_ops_fp8_scaling scaling, int64_t rows, \
        int64_t d) {                                                                         \
        return MY_OPS_NAME(act_and_mul_fp8_body)(value, x, x_stride, out, scaling, rows, d); \
    }
MY_OPS_ACTIVATIONS(MY_OPS_ACT_AND_MUL_FP8_INSTANCE)
#undef MY_OPS_ACT_AND_MUL_FP8_INSTANCE

#undef SUM_OF_SQUARES
#undef ABS_MAX
#undef ACTIVATION
#undef NARROW
