/*
 * Gated units on the CPU, forward and backward: out = act(gate) * up with
 * gate = x[:, :d] and up = x[:, d:]. One body for every activation and dtype
 * (act_and_mul_impl.h); the activations (value and derivative) are the small
 * functions of activations_impl.h.
 */
#include "../act_and_mul.h"
#include "rows.h"

#define GELU_TANH_K 0.79788456080286535588 /* sqrt(2 / pi) */
#define GELU_TANH_C 0.044715
#define INV_SQRT_2PI 0.39894228040143267794
#define INV_SQRT_2 0.70710678118654752440

/* silu_float, silu_grad_float, gelu_float, ... and the same for double */
#define ACC float
#define EXP my_ops_exp_f32
#define ERF erff
#include "activations_impl.h"
#undef ACC
#undef EXP
#undef ERF
#define ACC double
#define EXP exp
#define ERF erf
#include "activations_impl.h"
#undef ACC
#undef EXP
#undef ERF

/* silu_and_mul_f32 .. gelu_tanh_and_mul_backward_bf16: each activation for every dtype */
#define MY_OPS_IMPL "act_and_mul_impl.h"
#define ACT silu
#include "for_each_dtype.h"
#undef ACT
#define ACT gelu
#include "for_each_dtype.h"
#undef ACT
#define ACT gelu_tanh
#include "for_each_dtype.h"
#undef ACT
#undef MY_OPS_IMPL

/* Picks the instance for (act, dtype): CALL(ACT, S) must be an int expression. */
#define DISPATCH(act, dtype, CALL)                                    \
    switch (act) {                                                    \
    case MY_OPS_SILU: {                                               \
        MY_OPS_DISPATCH_WITH(dtype, CALL, silu);                      \
    }                                                                 \
    case MY_OPS_GELU: {                                               \
        MY_OPS_DISPATCH_WITH(dtype, CALL, gelu);                      \
    }                                                                 \
    case MY_OPS_GELU_TANH: {                                          \
        MY_OPS_DISPATCH_WITH(dtype, CALL, gelu_tanh);                 \
    }                                                                 \
    }                                                                 \
    return MY_OPS_BAD_ARGUMENT

int my_ops_act_and_mul_cpu(my_ops_dtype dtype, my_ops_activation act, const void *x,
                           int64_t x_stride, void *out, int64_t rows, int64_t d) {
#define CALL(ACT, S) ACT##_and_mul_##S(x, x_stride, out, rows, d)
    DISPATCH(act, dtype, CALL);
#undef CALL
}

int my_ops_act_and_mul_backward_cpu(my_ops_dtype dtype, my_ops_activation act, const void *grad_out,
                                    int64_t grad_out_stride, const void *x, int64_t x_stride,
                                    void *grad_x, int64_t rows, int64_t d) {
#define CALL(ACT, S) ACT##_and_mul_backward_##S(grad_out, grad_out_stride, x, x_stride, grad_x, rows, d)
    DISPATCH(act, dtype, CALL);
#undef CALL
}
