/*
 * The element-wise CPU kernels for one element type, included once per dtype
 * by elementwise.c through for_each_dtype.h (T, ACC, LOAD, STORE, SUFFIX:
 * see there). No include guard, on purpose.
 */

static int MY_OPS_NAME(short_kernel)(const T *x, T *out, int64_t n) {
    const ACC scale = (ACC)MY_OPS_SHORT_KERNEL_SCALE;
    for (int64_t i = 0; i < n; ++i) out[i] = STORE(LOAD(x[i]) * scale);
    return MY_OPS_OK;
}

static int MY_OPS_NAME(mul)(const T *a, const T *b, T *out, int64_t n) {
    for (int64_t i = 0; i < n; ++i) out[i] = STORE(LOAD(a[i]) * LOAD(b[i]));
    return MY_OPS_OK;
}

static int MY_OPS_NAME(muladd)(const T *a, const T *b, double c, T *out, int64_t n) {
    const ACC addend = (ACC)c;
    for (int64_t i = 0; i < n; ++i) out[i] = STORE(LOAD(a[i]) * LOAD(b[i]) + addend);
    return MY_OPS_OK;
}

static int MY_OPS_NAME(add)(const T *a, const T *b, T *out, int64_t n) {
    for (int64_t i = 0; i < n; ++i) out[i] = STORE(LOAD(a[i]) + LOAD(b[i]));
    return MY_OPS_OK;
}
