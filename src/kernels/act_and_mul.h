/*
 * Gated units: out = act(gate) * up with gate = x[:, :d] and up = x[:, d:],
 * and their backward (cpu/act_and_mul.c, cuda/act_and_mul.cu). Rows of 2d
 * elements with a row stride (common.h's conventions).
 */
#ifndef MY_OPS_KERNELS_ACT_AND_MUL_H
#define MY_OPS_KERNELS_ACT_AND_MUL_H

#include "activations.h"
#include "common.h"

MY_OPS_EXTERN_C_BEGIN

/* The activation of a gated unit (act_and_mul), one value per row of
 * MY_OPS_ACTIVATIONS (activations.h). GELU as in torch.nn.functional.gelu:
 * MY_OPS_GELU is approximate="none" (erf), MY_OPS_GELU_TANH is approximate="tanh". */
#define MY_OPS_ACTIVATION_ENUM(name, ENUM, value) ENUM = value,
typedef enum my_ops_activation { MY_OPS_ACTIVATIONS(MY_OPS_ACTIVATION_ENUM) } my_ops_activation;
#undef MY_OPS_ACTIVATION_ENUM

/* ---------------------------------------------------------------- CPU -- */

/* out[r, j] = act(x[r, j]) * x[r, d + j] for x of shape [rows, 2d]; out is dense [rows, d] */
int my_ops_act_and_mul_cpu(my_ops_dtype dtype, my_ops_activation act, const void *x,
                           int64_t x_stride, void *out, int64_t rows, int64_t d);
/* grad_x (dense [rows, 2d]) from grad_out[rows, d] and x[rows, 2d] */
int my_ops_act_and_mul_backward_cpu(my_ops_dtype dtype, my_ops_activation act, const void *grad_out,
                                    int64_t grad_out_stride, const void *x, int64_t x_stride,
                                    void *grad_x, int64_t rows, int64_t d);

/* --------------------------------------------------------------- CUDA -- */

int my_ops_act_and_mul_cuda(my_ops_dtype dtype, my_ops_activation act, const void *x,
                            int64_t x_stride, void *out, int64_t rows, int64_t d, void *stream);
int my_ops_act_and_mul_backward_cuda(my_ops_dtype dtype, my_ops_activation act,
                                     const void *grad_out, int64_t grad_out_stride, const void *x,
                                     int64_t x_stride, void *grad_x, int64_t rows, int64_t d,
                                     void *stream);

MY_OPS_EXTERN_C_END

#endif /* MY_OPS_KERNELS_ACT_AND_MUL_H */
