/* SiLU-and-mul (the SwiGLU gate) on the CPU, forward and backward. */
#include "dispatch.h"

#define DEFINE_SILU_AND_MUL(S, T, ACC, LOAD, STORE)                                     \
    static int silu_and_mul_##S(const T *x, T *out, int64_t rows, int64_t d) {          \
        for (int64_t r = 0; r < rows; ++r) {                                            \
            const T *gate = x + r * 2 * d;                                              \
            const T *up = gate + d;                                                     \
            T *out_row = out + r * d;                                                   \
            for (int64_t j = 0; j < d; ++j) {                                           \
                const ACC g = LOAD(gate[j]);                                            \
                out_row[j] = STORE(g / ((ACC)1 + MY_OPS_EXP(-g)) * LOAD(up[j]));        \
            }                                                                           \
        }                                                                               \
        return MY_OPS_OK;                                                               \
    }                                                                                   \
                                                                                        \
    /* d silu(g) / dg = s * (1 + g * (1 - s)) with s = sigmoid(g) */                    \
    static int silu_and_mul_backward_##S(const T *grad_out, const T *x, T *grad_x,      \
                                         int64_t rows, int64_t d) {                     \
        for (int64_t r = 0; r < rows; ++r) {                                            \
            const T *gate = x + r * 2 * d;                                              \
            const T *up = gate + d;                                                     \
            const T *dy = grad_out + r * d;                                             \
            T *grad_gate = grad_x + r * 2 * d;                                          \
            T *grad_up = grad_gate + d;                                                 \
            for (int64_t j = 0; j < d; ++j) {                                           \
                const ACC g = LOAD(gate[j]);                                            \
                const ACC u = LOAD(up[j]);                                              \
                const ACC dout = LOAD(dy[j]);                                           \
                const ACC s = (ACC)1 / ((ACC)1 + MY_OPS_EXP(-g));                       \
                grad_gate[j] = STORE(dout * u * s * ((ACC)1 + g * ((ACC)1 - s)));       \
                grad_up[j] = STORE(dout * g * s);                                       \
            }                                                                           \
        }                                                                               \
        return MY_OPS_OK;                                                               \
    }

MY_OPS_FOR_EACH_DTYPE(DEFINE_SILU_AND_MUL)

int my_ops_silu_and_mul_cpu(my_ops_dtype dtype, const void *x, void *out, int64_t rows,
                            int64_t d) {
#define CALL(S) silu_and_mul_##S(x, out, rows, d)
    MY_OPS_DISPATCH(dtype, CALL);
#undef CALL
}

int my_ops_silu_and_mul_backward_cpu(my_ops_dtype dtype, const void *grad_out, const void *x,
                                     void *grad_x, int64_t rows, int64_t d) {
#define CALL(S) silu_and_mul_backward_##S(grad_out, x, grad_x, rows, d)
    MY_OPS_DISPATCH(dtype, CALL);
#undef CALL
}
