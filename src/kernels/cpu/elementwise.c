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

/* short_kernel_f32, mul_f32, muladd_f32, add_f32 .. the same for bf16 */
#define MY_OPS_IMPL "elementwise_impl.h"
#include "for_each_dtype.h"
#undef MY_OPS_IMPL

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
