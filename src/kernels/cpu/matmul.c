/*
 * Cache-blocked matrix product on the CPU: c[rows, n] = a[rows, k] @ b[k, n].
 *
 * The output is computed one (ROW_BLOCK x COL_BLOCK) tile at a time into an
 * accumulator that stays in L1/L2; b is converted to the accumulator type one
 * (K_BLOCK x COL_BLOCK) tile at a time, so the innermost loop is a contiguous
 * multiply-add over a row of that tile, which the compiler vectorises.
 */
#include <stdlib.h>

#include "../matmul.h"
#include "dispatch.h"

enum { ROW_BLOCK = 64, COL_BLOCK = 256, K_BLOCK = 128 };

static inline int64_t min_i64(int64_t x, int64_t y) { return x < y ? x : y; }

/* matmul_f32 .. matmul_bf16 */
#define MY_OPS_IMPL "matmul_impl.h"
#include "for_each_dtype.h"
#undef MY_OPS_IMPL

int my_ops_matmul_cpu(my_ops_dtype dtype, const void *a, const void *b, void *c, int64_t rows,
                      int64_t k, int64_t n) {
#define CALL(S) matmul_##S(a, b, c, rows, k, n)
    MY_OPS_DISPATCH(dtype, CALL);
#undef CALL
}
