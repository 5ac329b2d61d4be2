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

#define DEFINE_MATMUL(S, T, ACC, LOAD, STORE)                                             \
    static int matmul_##S(const T *a, const T *b, T *c, int64_t rows, int64_t k,          \
                          int64_t n) {                                                    \
        ACC *acc = malloc(sizeof(ACC) * ROW_BLOCK * COL_BLOCK);                           \
        ACC *b_tile = malloc(sizeof(ACC) * K_BLOCK * COL_BLOCK);                          \
        if (acc == NULL || b_tile == NULL) {                                              \
            free(acc);                                                                    \
            free(b_tile);                                                                 \
            return MY_OPS_OUT_OF_MEMORY;                                                  \
        }                                                                                 \
        for (int64_t i0 = 0; i0 < rows; i0 += ROW_BLOCK) {                                \
            const int64_t mb = min_i64(ROW_BLOCK, rows - i0);                             \
            for (int64_t j0 = 0; j0 < n; j0 += COL_BLOCK) {                               \
                const int64_t nb = min_i64(COL_BLOCK, n - j0);                            \
                for (int64_t i = 0; i < mb * nb; ++i) acc[i] = (ACC)0;                    \
                for (int64_t p0 = 0; p0 < k; p0 += K_BLOCK) {                             \
                    const int64_t kb = min_i64(K_BLOCK, k - p0);                          \
                    for (int64_t p = 0; p < kb; ++p)                                      \
                        for (int64_t j = 0; j < nb; ++j)                                  \
                            b_tile[p * nb + j] = LOAD(b[(p0 + p) * n + j0 + j]);          \
                    for (int64_t i = 0; i < mb; ++i) {                                    \
                        ACC *acc_row = acc + i * nb;                                      \
                        const T *a_row = a + (i0 + i) * k + p0;                           \
                        for (int64_t p = 0; p < kb; ++p) {                                \
                            const ACC a_ip = LOAD(a_row[p]);                              \
                            const ACC *b_row = b_tile + p * nb;                           \
                            for (int64_t j = 0; j < nb; ++j) acc_row[j] += a_ip * b_row[j]; \
                        }                                                                 \
                    }                                                                     \
                }                                                                         \
                for (int64_t i = 0; i < mb; ++i)                                          \
                    for (int64_t j = 0; j < nb; ++j)                                      \
                        c[(i0 + i) * n + j0 + j] = STORE(acc[i * nb + j]);                \
            }                                                                             \
        }                                                                                 \
        free(acc);                                                                        \
        free(b_tile);                                                                     \
        return MY_OPS_OK;                                                                 \
    }

MY_OPS_FOR_EACH_DTYPE(DEFINE_MATMUL)

int my_ops_matmul_cpu(my_ops_dtype dtype, const void *a, const void *b, void *c, int64_t rows,
                      int64_t k, int64_t n) {
#define CALL(S) matmul_##S(a, b, c, rows, k, n)
    MY_OPS_DISPATCH(dtype, CALL);
#undef CALL
}
