/*
 * The activations of the gated units in one accumulator type, value and
 * derivative: silu_ACC, silu_grad_ACC, gelu_ACC, ... Included by
 * act_and_mul.c once for float and once for double, with ACC, EXP and ERF
 * defined. No include guard, on purpose.
 */

static inline ACC MY_OPS_CAT(silu_, ACC)(ACC g) { return g / ((ACC)1 + EXP(-g)); }
/* d silu(g) / dg = s * (1 + g * (1 - s)) with s = sigmoid(g) */
static inline ACC MY_OPS_CAT(silu_grad_, ACC)(ACC g) {
    const ACC s = (ACC)1 / ((ACC)1 + EXP(-g));
    return s * ((ACC)1 + g * ((ACC)1 - s));
}
static inline ACC MY_OPS_CAT(gelu_, ACC)(ACC g) {
    return (ACC)0.5 * g * ((ACC)1 + ERF(g * (ACC)INV_SQRT_2));
}
static inline ACC MY_OPS_CAT(gelu_grad_, ACC)(ACC g) {
    return (ACC)0.5 * ((ACC)1 + ERF(g * (ACC)INV_SQRT_2)) +
           g * (ACC)INV_SQRT_2PI * EXP((ACC)-0.5 * g * g);
}
/* 0.5 (1 + tanh(z)) = sigmoid(2z): no cancellation where tanh(z) is near -1,
   and the exp vectorizes where tanhf would be a libm call per element */
static inline ACC MY_OPS_CAT(gelu_tanh_gate_, ACC)(ACC g) {
    const ACC z2 = (ACC)(2 * GELU_TANH_K) * (g + (ACC)GELU_TANH_C * g * g * g);
    return (ACC)1 / ((ACC)1 + EXP(-z2));
}
static inline ACC MY_OPS_CAT(gelu_tanh_, ACC)(ACC g) {
    return g * MY_OPS_CAT(gelu_tanh_gate_, ACC)(g);
}
/* d/dg [g s(2z)] = s + g s (1 - s) 2 z'(g), z' = k (1 + 3 c g^2) */
static inline ACC MY_OPS_CAT(gelu_tanh_grad_, ACC)(ACC g) {
    const ACC s = MY_OPS_CAT(gelu_tanh_gate_, ACC)(g);
    return s + g * s * ((ACC)1 - s) * (ACC)(2 * GELU_TANH_K) *
                   ((ACC)1 + (ACC)(3 * GELU_TANH_C) * g * g);
}
