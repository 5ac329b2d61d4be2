/*
 * Element-wise kernels: short_kernel, mul, muladd, add (cpu/elementwise.c,
 * cuda/elementwise.cu). Dense arrays of n elements of `dtype`.
 */
#ifndef MY_OPS_KERNELS_ELEMENTWISE_H
#define MY_OPS_KERNELS_ELEMENTWISE_H

#include "common.h"

MY_OPS_EXTERN_C_BEGIN

/* Scale used by short_kernel: out = x * MY_OPS_SHORT_KERNEL_SCALE. */
#define MY_OPS_SHORT_KERNEL_SCALE 1.23

/* ---------------------------------------------------------------- CPU -- */

/* out[i] = x[i] * 1.23 */
int my_ops_short_kernel_cpu(my_ops_dtype dtype, const void *x, void *out, int64_t n);
/* out[i] = a[i] * b[i] */
int my_ops_mul_cpu(my_ops_dtype dtype, const void *a, const void *b, void *out, int64_t n);
/* out[i] = a[i] * b[i] + c */
int my_ops_muladd_cpu(my_ops_dtype dtype, const void *a, const void *b, double c, void *out,
                      int64_t n);
/* out[i] = a[i] + b[i] */
int my_ops_add_cpu(my_ops_dtype dtype, const void *a, const void *b, void *out, int64_t n);

/* --------------------------------------------------------------- CUDA -- */

int my_ops_short_kernel_cuda(my_ops_dtype dtype, const void *x, void *out, int64_t n, void *stream);
int my_ops_mul_cuda(my_ops_dtype dtype, const void *a, const void *b, void *out, int64_t n,
                    void *stream);
int my_ops_muladd_cuda(my_ops_dtype dtype, const void *a, const void *b, double c, void *out,
                       int64_t n, void *stream);
int my_ops_add_cuda(my_ops_dtype dtype, const void *a, const void *b, void *out, int64_t n,
                    void *stream);

MY_OPS_EXTERN_C_END

#endif /* MY_OPS_KERNELS_ELEMENTWISE_H */
