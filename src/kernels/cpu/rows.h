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

/* Forces a body into its callers (each instance of a kernel that takes a
 * constant parameter, e.g. act_and_mul's activation, so it folds away). */
#if defined(_MSC_VER)
#define MY_OPS_ALWAYS_INLINE __forceinline
#else
#define MY_OPS_ALWAYS_INLINE inline __attribute__((always_inline))
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

/*
 * Sums over a row: eight independent partial sums (one vector register) over
 * blocks of MY_OPS_SUM_BLOCK elements, each block's total added into a double.
 * A float32 sum of a long row in eight partials alone drifts (a row of 2^20
 * elements: 2e-4 relative); blocks keep the error at the level of PyTorch's
 * own kernels while the inner loop stays in float vectors.
 */
#define MY_OPS_SUM_BLOCK 64

/* my_ops_dot_float, my_ops_sum_of_squares_float, my_ops_abs_max_float and the same for double */
#define ACC float
#include "row_dot_impl.h"
#undef ACC
#define ACC double
#include "row_dot_impl.h"
#undef ACC

#endif /* MY_OPS_CPU_ROWS_H */
