/*
 * Helpers of the row-wise CPU kernels (rms_norm and its family; the next
 * row-wise op, e.g. a layer_norm, includes this too): float scratch rows,
 * sums over a row, and the attribute that compiles a hot loop once per x86-64
 * instruction-set level.
 */
#ifndef MY_OPS_CPU_ROWS_H
#define MY_OPS_CPU_ROWS_H

#include <stdlib.h>

#include "dispatch.h"

/*
 * MY_OPS_MULTIVERSION: GCC builds the function for x86-64-v4 (AVX-512),
 * x86-64-v3 (AVX2 + FMA) and the x86-64 baseline, and picks one when the
 * library loads (an ifunc), as PyTorch picks its CPU kernels at run time. The
 * wheel still loads on any x86-64. Elsewhere (other compilers, other
 * architectures, Windows) it is the one baseline build.
 */
#if defined(__GNUC__) && !defined(__clang__) && defined(__x86_64__) && defined(__linux__)
#define MY_OPS_MULTIVERSION \
    __attribute__((target_clones("arch=x86-64-v4", "arch=x86-64-v3", "default")))
#else
#define MY_OPS_MULTIVERSION
#endif

/* Allocates `count` scratch arrays of `bytes` each; all or none. */
static inline int my_ops_alloc_scratch(void **slots, int count, size_t bytes) {
    for (int i = 0; i < count; ++i) {
        slots[i] = malloc(bytes > 0 ? bytes : 1);
        if (slots[i] == NULL) {
            for (int j = 0; j < i; ++j) free(slots[j]);
            return MY_OPS_OUT_OF_MEMORY;
        }
    }
    return MY_OPS_OK;
}

static inline void my_ops_free_scratch(void **slots, int count) {
    for (int i = 0; i < count; ++i) free(slots[i]);
}

/* Sum of squares of a row, with eight independent partial sums (one vector register). */
#define MY_OPS_DEFINE_SUM_OF_SQUARES(ACC)                                              \
    static inline ACC my_ops_sum_of_squares_##ACC(const ACC *row, int64_t n) {         \
        ACC partial[8] = {0};                                                          \
        int64_t j = 0;                                                                 \
        for (; j + 8 <= n; j += 8)                                                     \
            for (int lane = 0; lane < 8; ++lane) partial[lane] += row[j + lane] * row[j + lane]; \
        ACC sum = 0;                                                                   \
        for (int lane = 0; lane < 8; ++lane) sum += partial[lane];                     \
        for (; j < n; ++j) sum += row[j] * row[j];                                     \
        return sum;                                                                    \
    }
MY_OPS_DEFINE_SUM_OF_SQUARES(float)
MY_OPS_DEFINE_SUM_OF_SQUARES(double)
#undef MY_OPS_DEFINE_SUM_OF_SQUARES

#endif /* MY_OPS_CPU_ROWS_H */
