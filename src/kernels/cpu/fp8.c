/*
 * fp8 output of RMSNorm, the fused add + RMSNorm and the gated units on the
 * CPU (../fp8.h). Each row goes once into a scratch row of the arithmetic
 * type (the norm's input, or act(gate) * up), then its scale, then its bytes.
 * The bodies are fp8_impl.h, once per dtype; the activations come from
 * ../activations.h as in act_and_mul.c.
 */
#include "../fp8.h"
#include "rows.h"

/* rms_norm_fp8_f32 .. act_and_mul_fp8_bf16 */
#define MY_OPS_IMPL "fp8_impl.h"
#include "for_each_dtype.h"
#undef MY_OPS_IMPL

int my_ops_rms_norm_fp8_cpu(my_ops_dtype dtype, my_ops_dtype weight_dtype, const void *x,
                            int64_t x_stride, void *residual, int64_t residual_stride,
                            const void *weight, uint8_t *out, my_ops_fp8_scaling scaling,
                            int64_t rows, int64_t hidden, double eps) {
    if (!my_ops_rms_norm_weight_ok(dtype, weight_dtype)) return MY_OPS_BAD_DTYPE;
#define CALL(S)                                                                                \
    rms_norm_fp8_##S(weight_dtype, x, x_stride, residual, residual_stride, weight, out, scaling, \
                     rows, hidden, eps)
    MY_OPS_DISPATCH(dtype, CALL);
#undef CALL
}

/* The instance for (act, dtype), as in act_and_mul.c. */
#define MY_OPS_ACTIVATION_DISPATCH(name, ENUM, value) \
    case ENUM: {                                      \
        MY_OPS_DISPATCH_WITH(dtype, CALL, name);      \
    }

int my_ops_act_and_mul_fp8_cpu(my_ops_dtype dtype, my_ops_activation act, const void *x,
                               int64_t x_stride, uint8_t *out, my_ops_fp8_scaling scaling,
                               int64_t rows, int64_t d) {
#define CALL(ACT, S) ACT##_and_mul_fp8_##S(x, x_stride, out, scaling, rows, d)
    switch (act) { MY_OPS_ACTIVATIONS(MY_OPS_ACTIVATION_DISPATCH) }
    return MY_OPS_BAD_ARGUMENT;
#undef CALL
}
