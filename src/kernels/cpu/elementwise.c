/* Element-wise CPU kernels: short_kernel, mul, muladd, add. */
#include "../elementwise.h"
#include "dispatch.h"

size_t my_ops_dtype_size(my_ops_dtype dtype) {
    switch (dtype) {
    case MY_OPS_FLOAT32: return 4;
    case MY_OPS_FLOAT64: return 8;
    case MY_OPS_FLOAT16:
    case MY_OPS_BFLOAT16: return 2;
    }
    return 0;
}

#define DEFINE_ELEMENTWISE(S, T, ACC, LOAD, STORE)                                       \
    static int short_kernel_##S(const T *x, T *out, int64_t n) {                         \
        const ACC scale = (ACC)MY_OPS_SHORT_KERNEL_SCALE;                                \
        for (int64_t i = 0; i < n; ++i) out[i] = STORE(LOAD(x[i]) * scale);              \
        return MY_OPS_OK;                                                                \
    }                                                                                    \
    static int mul_##S(const T *a, const T *b, T *out, int64_t n) {                      \
        for (int64_t i = 0; i < n; ++i) out[i] = STORE(LOAD(a[i]) * LOAD(b[i]));         \
        return MY_OPS_OK;                                                                \
    }                                                                                    \
    static int muladd_##S(const T *a, const T *b, double c, T *out, int64_t n) {         \
        const ACC addend = (ACC)c;                                                       \
        for (int64_t i = 0; i < n; ++i)                                                  \
            out[i] = STORE(LOAD(a[i]) * LOAD(b[i]) + addend);                            \
        return MY_OPS_OK;                                                                \
    }                                                                                    \
    static int add_##S(const T *a, const T *b, T *out, int64_t n) {                      \
        for (int64_t i = 0; i < n; ++i) out[i] = STORE(LOAD(a[i]) + LOAD(b[i]));         \
        return MY_OPS_OK;                                                                \
    }

MY_OPS_FOR_EACH_DTYPE(DEFINE_ELEMENTWISE)

int my_ops_short_kernel_cpu(my_ops_dtype dtype, const void *x, void *out, int64_t n) {
#define CALL(S) short_kernel_##S(x, out, n)
    MY_OPS_DISPATCH(dtype, CALL);
#undef CALL
}

int my_ops_mul_cpu(my_ops_dtype dtype, const void *a, const void *b, void *out, int64_t n) {
#define CALL(S) mul_##S(a, b, out, n)
    MY_OPS_DISPATCH(dtype, CALL);
#undef CALL
}

int my_ops_muladd_cpu(my_ops_dtype dtype, const void *a, const void *b, double c, void *out,
                      int64_t n) {
#define CALL(S) muladd_##S(a, b, c, out, n)
    MY_OPS_DISPATCH(dtype, CALL);
#undef CALL
}

int my_ops_add_cpu(my_ops_dtype dtype, const void *a, const void *b, void *out, int64_t n) {
#define CALL(S) add_##S(a, b, out, n)
    MY_OPS_DISPATCH(dtype, CALL);
#undef CALL
}
