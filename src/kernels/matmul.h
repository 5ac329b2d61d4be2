/* Matrix product (cpu/matmul.c, cuda/matmul.cu): dense row-major matrices of `dtype`. */
#ifndef MY_OPS_KERNELS_MATMUL_H
#define MY_OPS_KERNELS_MATMUL_H

#include "common.h"

MY_OPS_EXTERN_C_BEGIN

/* c[rows, n] = a[rows, k] @ b[k, n]. Cache-blocked; accumulates in float32 (float64). */
int my_ops_matmul_cpu(my_ops_dtype dtype, const void *a, const void *b, void *c, int64_t rows,
                      int64_t k, int64_t n);

int my_ops_matmul_cuda(my_ops_dtype dtype, const void *a, const void *b, void *c, int64_t m,
                       int64_t k, int64_t n, void *stream);

MY_OPS_EXTERN_C_END

#endif /* MY_OPS_KERNELS_MATMUL_H */
