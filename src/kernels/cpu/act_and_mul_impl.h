/*
 * The gated-unit CPU kernels for one element type: one body per direction,
 * taking the activation as a parameter, and for each row of
 * MY_OPS_ACTIVATIONS its instances name_and_mul_SUFFIX and
 * name_and_mul_backward_SUFFIX, which call the body with that activation
 * constant (the activation's switch folds away, the loop vectorizes).
 * act_and_mul.c includes it through for_each_dtype.h (T, ACC, LOAD, STORE,
 * SUFFIX: see there). No include guard, on purpose.
 */

/* act(g) and act'(g) in ACC (../activations.h) */
#define ACTIVATION MY_OPS_CAT(my_ops_activation_, ACC)
#define ACTIVATION_GRAD MY_OPS_CAT(my_ops_activation_grad_, ACC)

static MY_OPS_ALWAYS_INLINE int MY_OPS_NAME(act_and_mul_body)(int act, const T *x, int64_t x_stride,
                                                              T *out, int64_t rows, int64_t d) {
    for (int64_t r = 0; r < rows; ++r) {
        const T *gate = x + r * x_stride;
        const T *up = gate + d;
        T *out_row = out + r * d;
        for (int64_t j = 0; j < d; ++j)
            out_row[j] = STORE(ACTIVATION(act, LOAD(gate[j])) * LOAD(up[j]));
    }
    return MY_OPS_OK;
}

/* grad_gate = dy * up * act'(gate), grad_up = dy * act(gate) */
static MY_OPS_ALWAYS_INLINE int MY_OPS_NAME(act_and_mul_backward_body)(int act, const T *grad_out,
                                                                       int64_t grad_out_stride,
                                                                       const T *x, int64_t x_stride,
                                                                       T *grad_x, int64_t rows,
                                                                       int64_t d) {
    for (int64_t r = 0; r < rows; ++r) {
        const T *gate = x + r * x_stride;
        const T *up = gate + d;
        const T *dy = grad_out + r * grad_out_stride;
        T *grad_gate = grad_x + r * 2 * d;
        T *grad_up = grad_gate + d;
        for (int64_t j = 0; j < d; ++j) {
            const ACC g = LOAD(gate[j]), dout = LOAD(dy[j]);
            grad_gate[j] = STORE(dout * LOAD(up[j]) * ACTIVATION_GRAD(act, g));
            grad_up[j] = STORE(dout * ACTIVATION(act, g));
        }
    }
    return MY_OPS_OK;
}

#define MY_OPS_ACT_AND_MUL_INSTANCES(name, ENUM, value)                                          \
    MY_OPS_MULTIVERSION static int MY_OPS_NAME(name##_and_mul)(const T *x, int64_t x_stride,      \
                                                                 T *out, int64_t rows,            \
                                                                 int64_t d) {                     \
        return MY_OPS_NAME(act_and_mul_body)(value, x, x_stride, out, rows, d);                  \
    }                                                                                            \
    MY_OPS_MULTIVERSION static int MY_OPS_NAME(name##_and_mul_backward)(                          \
        const T *grad_out, int64_t grad_out_stride, const T *x, int64_t x_stride, T *grad_x,     \
        int64_t rows, int64_t d) {                                                               \
        return MY_OPS_NAME(act_and_mul_backward_body)(value, grad_out, grad_out_stride, x,       \
                                                      x_stride, grad_x, rows, d);                \
    }
MY_OPS_ACTIVATIONS(MY_OPS_ACT_AND_MUL_INSTANCES)
#undef MY_OPS_ACT_AND_MUL_INSTANCES

#undef ACTIVATION
#undef ACTIVATION_GRAD
