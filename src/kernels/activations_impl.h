/*
 * The activations of the gated units in one arithmetic type ACC, value and
 * derivative: silu_ACC, silu_grad_ACC, gelu_ACC, ... activations.h includes
 * it once for float and once for double, with ACC, EXP, ERF and RCP (1 / v)
 * defined. No include guard, on purpose.
 *
 * A new activation: its two functions here and its row in
 * MY_OPS_ACTIVATIONS (activations.h).
 */

#define MY_OPS_ACT_FN(name) MY_OPS_ACT_CAT(name, ACC)

MY_OPS_MATH ACC MY_OPS_ACT_FN(sigmoid_)(ACC g) { return RCP((ACC)1 + EXP(-g)); }

MY_OPS_MATH ACC MY_OPS_ACT_FN(silu_)(ACC g) { return g * MY_OPS_ACT_FN(sigmoid_)(g); }
/* d silu(g) / dg = s * (1 + g * (1 - s)) with s = sigmoid(g) */
MY_OPS_MATH ACC MY_OPS_ACT_FN(silu_grad_)(ACC g) {
    const ACC s = MY_OPS_ACT_FN(sigmoid_)(g);
    return s * ((ACC)1 + g * ((ACC)1 - s));
}

/* gelu(g) = g * Phi(g), approximate="none" in torch.nn.functional.gelu */
MY_OPS_MATH ACC MY_OPS_ACT_FN(gelu_cdf_)(ACC g) {
    return (ACC)0.5 * ((ACC)1 + ERF(g * (ACC)MY_OPS_INV_SQRT_2));
}
MY_OPS_MATH ACC MY_OPS_ACT_FN(gelu_)(ACC g) { return g * MY_OPS_ACT_FN(gelu_cdf_)(g); }
MY_OPS_MATH ACC MY_OPS_ACT_FN(gelu_grad_)(ACC g) {
    return MY_OPS_ACT_FN(gelu_cdf_)(g) + g * (ACC)MY_OPS_INV_SQRT_2PI * EXP((ACC)-0.5 * g * g);
}

/* approximate="tanh": 0.5 (1 + tanh(z)) = sigmoid(2z), z = k (g + c g^3): no
   cancellation where tanh(z) is near -1, and the exp vectorizes on the CPU
   where tanhf would be a libm call per element */
MY_OPS_MATH ACC MY_OPS_ACT_FN(gelu_tanh_gate_)(ACC g) {
    return MY_OPS_ACT_FN(sigmoid_)((ACC)(2 * MY_OPS_GELU_TANH_K) *
                                   (g + (ACC)MY_OPS_GELU_TANH_C * g * g * g));
}
MY_OPS_MATH ACC MY_OPS_ACT_FN(gelu_tanh_)(ACC g) { return g * MY_OPS_ACT_FN(gelu_tanh_gate_)(g); }
/* d/dg [g s(2z)] = s + g s (1 - s) 2 z'(g), z' = k (1 + 3 c g^2) */
MY_OPS_MATH ACC MY_OPS_ACT_FN(gelu_tanh_grad_)(ACC g) {
    const ACC s = MY_OPS_ACT_FN(gelu_tanh_gate_)(g);
    return s + g * s * ((ACC)1 - s) * (ACC)(2 * MY_OPS_GELU_TANH_K) *
                   ((ACC)1 + (ACC)(3 * MY_OPS_GELU_TANH_C) * g * g);
}

#undef MY_OPS_ACT_FN
