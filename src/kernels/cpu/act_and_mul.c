/*
 * Gated units on the CPU, forward and backward: out = act(gate) * up with
 * gate = x[:, :d] and up = x[:, d:]. One body for every activation and dtype;
 * the activations (value and derivative) are the small functions below.
 */
#include "../act_and_mul.h"
#include "rows.h"

#define GELU_TANH_K 0.79788456080286535588 /* sqrt(2 / pi) */
#define GELU_TANH_C 0.044715
#define INV_SQRT_2PI 0.39894228040143267794
#define INV_SQRT_2 0.70710678118654752440

#define DEFINE_ACTIVATIONS(ACC, EXP, ERF)                                         \
    static inline ACC silu_##ACC(ACC g) { return g / ((ACC)1 + EXP(-g)); }              \
    /* d silu(g) / dg = s * (1 + g * (1 - s)) with s = sigmoid(g) */                     \
    static inline ACC silu_grad_##ACC(ACC g) {                                          \
        const ACC s = (ACC)1 / ((ACC)1 + EXP(-g));                                      \
        return s * ((ACC)1 + g * ((ACC)1 - s));                                         \
    }                                                                                   \
    static inline ACC gelu_##ACC(ACC g) {                                               \
        return (ACC)0.5 * g * ((ACC)1 + ERF(g * (ACC)INV_SQRT_2));                       \
    }                                                                                   \
    static inline ACC gelu_grad_##ACC(ACC g) {                                          \
        return (ACC)0.5 * ((ACC)1 + ERF(g * (ACC)INV_SQRT_2)) +                          \
               g * (ACC)INV_SQRT_2PI * EXP((ACC)-0.5 * g * g);                          \
    }                                                                                   \
    /* 0.5 (1 + tanh(z)) = sigmoid(2z): no cancellation where tanh(z) is near -1, */    \
    /* and the exp vectorizes where tanhf would be a libm call per element */             \
    static inline ACC gelu_tanh_gate_##ACC(ACC g) {                                     \
        const ACC z2 = (ACC)(2 * GELU_TANH_K) * (g + (ACC)GELU_TANH_C * g * g * g);     \
        return (ACC)1 / ((ACC)1 + EXP(-z2));                                            \
    }                                                                                   \
    static inline ACC gelu_tanh_##ACC(ACC g) { return g * gelu_tanh_gate_##ACC(g); }    \
    /* d/dg [g s(2z)] = s + g s (1 - s) 2 z'(g), z' = k (1 + 3 c g^2) */                  \
    static inline ACC gelu_tanh_grad_##ACC(ACC g) {                                     \
        const ACC s = gelu_tanh_gate_##ACC(g);                                          \
        return s + g * s * ((ACC)1 - s) * (ACC)(2 * GELU_TANH_K) *                      \
                       ((ACC)1 + (ACC)(3 * GELU_TANH_C) * g * g);                       \
    }
DEFINE_ACTIVATIONS(float, my_ops_exp_f32, erff)
DEFINE_ACTIVATIONS(double, exp, erf)

#define DEFINE_GATED(ACT, S, T, ACC, LOAD, STORE)                                        \
    MY_OPS_MULTIVERSION static int ACT##_and_mul_##S(const T *x, int64_t x_stride, T *out, \
                                                     int64_t rows, int64_t d) {         \
        for (int64_t r = 0; r < rows; ++r) {                                             \
            const T *gate = x + r * x_stride;                                            \
            const T *up = gate + d;                                                      \
            T *out_row = out + r * d;                                                    \
            for (int64_t j = 0; j < d; ++j)                                              \
                out_row[j] = STORE(ACT##_##ACC(LOAD(gate[j])) * LOAD(up[j]));            \
        }                                                                                \
        return MY_OPS_OK;                                                                \
    }                                                                                    \
                                                                                         \
    /* grad_gate = dy * up * act'(gate), grad_up = dy * act(gate) */                     \
    MY_OPS_MULTIVERSION static int ACT##_and_mul_backward_##S(                           \
        const T *grad_out, int64_t grad_out_stride, const T *x, int64_t x_stride,        \
        T *grad_x, int64_t rows, int64_t d) {                                            \
        for (int64_t r = 0; r < rows; ++r) {                                             \
            const T *gate = x + r * x_stride;                                            \
            const T *up = gate + d;                                                      \
            const T *dy = grad_out + r * grad_out_stride;                                \
            T *grad_gate = grad_x + r * 2 * d;                                           \
            T *grad_up = grad_gate + d;                                                  \
            for (int64_t j = 0; j < d; ++j) {                                            \
                const ACC g = LOAD(gate[j]), dout = LOAD(dy[j]);                         \
                grad_gate[j] = STORE(dout * LOAD(up[j]) * ACT##_grad_##ACC(g));          \
                grad_up[j] = STORE(dout * ACT##_##ACC(g));                               \
            }                                                                            \
        }                                                                                \
        return MY_OPS_OK;                                                                \
    }

#define DEFINE_ACT_AND_MUL(S, T, ACC, LOAD, STORE)    \
    DEFINE_GATED(silu, S, T, ACC, LOAD, STORE)        \
    DEFINE_GATED(gelu, S, T, ACC, LOAD, STORE)        \
    DEFINE_GATED(gelu_tanh, S, T, ACC, LOAD, STORE)
MY_OPS_FOR_EACH_DTYPE(DEFINE_ACT_AND_MUL)

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

int my_ops_act_and_mul_backward_cpu(my_ops_dtype dtype, my_ops_activation act,
                                    const void *grad_out, int64_t grad_out_stride, const void *x,
                                    int64_t x_stride, void *grad_x, int64_t rows, int64_t d) {
#define CALL(ACT, S) ACT##_and_mul_backward_##S(grad_out, grad_out_stride, x, x_stride, grad_x, rows, d)
    DISPATCH(act, dtype, CALL);
#undef CALL
}
