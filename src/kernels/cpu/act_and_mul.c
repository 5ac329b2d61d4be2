/*
 * Gated units on the CPU, forward and backward: out = act(gate) * up with
 * gate = x[:, :d] and up = x[:, d:]. One body for every activation and dtype
 * (act_and_mul_impl.h: an instance per row of MY_OPS_ACTIVATIONS, per
 * dtype); the activations themselves (value and derivative) are
 * ../activations_impl.h, shared with the CUDA kernels.
 */
#include "../act_and_mul.h"
#include "rows.h"

/* silu_and_mul_f32 .. gelu_tanh_and_mul_backward_bf16 */
#define MY_OPS_IMPL "act_and_mul_impl.h"
#include "for_each_dtype.h"
#undef MY_OPS_IMPL

/* The instance for (act, dtype): CALL(name, S) must be an int expression. */
#define MY_OPS_ACTIVATION_DISPATCH(name, ENUM, value) \
    case ENUM: {                                      \
        MY_OPS_DISPATCH_WITH(dtype, CALL, name);      \
    }

int my_ops_act_and_mul_cpu(my_ops_dtype dtype, my_ops_activation act, const void *x,
                           int64_t x_stride, void *out, int64_t rows, int64_t d) {
#define CALL(ACT, S) ACT##_and_mul_##S(x, x_stride, out, rows, d)
    switch (act) { MY_OPS_ACTIVATIONS(MY_OPS_ACTIVATION_DISPATCH) }
    return MY_OPS_BAD_ARGUMENT;
#undef CALL
}

int my_ops_act_and_mul_backward_cpu(my_ops_dtype dtype, my_ops_activation act, const void *grad_out,
                                    int64_t grad_out_stride, const void *x, int64_t x_stride,
                                    void *grad_x, int64_t rows, int64_t d) {
#define CALL(ACT, S) ACT##_and_mul_backward_##S(grad_out, grad_out_stride, x, x_stride, grad_x, rows, d)
    switch (act) { MY_OPS_ACTIVATIONS(MY_OPS_ACTIVATION_DISPATCH) }
    return MY_OPS_BAD_ARGUMENT;
#undef CALL
}
