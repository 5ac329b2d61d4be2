/*
 * The gated-unit CPU kernels of one activation ACT (silu, gelu, gelu_tanh)
 * for one element type: ACT_and_mul_SUFFIX and ACT_and_mul_backward_SUFFIX.
 * act_and_mul.c includes it through for_each_dtype.h (T, ACC, LOAD, STORE,
 * SUFFIX: see there) once per activation. No include guard, on purpose.
 */

/* act(g) and act'(g) in ACC: activations_impl.h's ACT_ACC and ACT_grad_ACC */
#define ACTIVATION MY_OPS_CAT(MY_OPS_CAT(ACT, _), ACC)
#define ACTIVATION_GRAD MY_OPS_CAT(MY_OPS_CAT(ACT, _grad_), ACC)

MY_OPS_MULTIVERSION static int MY_OPS_NAME(MY_OPS_CAT(ACT, _and_mul))(const T *x, int64_t x_stride,
                                                                      T *out, int64_t rows,
                                                                      int64_t d) {
    for (int64_t r = 0; r < rows; ++r) {
        const T *gate = x + r * x_stride;
        const T *up = gate + d;
        T *out_row = out + r * d;
        for (int64_t j = 0; j < d; ++j) out_row[j] = STORE(ACTIVATION(LOAD(gate[j])) * LOAD(up[j]));
    }
    return MY_OPS_OK;
}

/* grad_gate = dy * up * act'(gate), grad_up = dy * act(gate) */
MY_OPS_MULTIVERSION static int MY_OPS_NAME(MY_OPS_CAT(ACT, _and_mul_backward))(
    const T *grad_out, int64_t grad_out_stride, const T *x, int64_t x_stride, T *grad_x,
    int64_t rows, int64_t d) {
    for (int64_t r = 0; r < rows; ++r) {
        const T *gate = x + r * x_stride;
        const T *up = gate + d;
        const T *dy = grad_out + r * grad_out_stride;
        T *grad_gate = grad_x + r * 2 * d;
        T *grad_up = grad_gate + d;
        for (int64_t j = 0; j < d; ++j) {
            const ACC g = LOAD(gate[j]), dout = LOAD(dy[j]);
            grad_gate[j] = STORE(dout * LOAD(up[j]) * ACTIVATION_GRAD(g));
            grad_up[j] = STORE(dout * ACTIVATION(g));
        }
    }
    return MY_OPS_OK;
}

#undef ACTIVATION
#undef ACTIVATION_GRAD
