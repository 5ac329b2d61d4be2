/*
 * Whether strided views share memory, decided exactly (no "too hard" answer
 * for the layouts people use). Plain C over sizes and strides, so the binding
 * (argument checks) and the Python fake kernels (through my_ops._C) use the
 * one implementation.
 *
 * A view is: `dim` sizes and strides in elements, the element size in bytes,
 * and the address of its first element (any origin, e.g. the storage offset
 * in bytes).
 */
#ifndef MY_OPS_OVERLAP_H
#define MY_OPS_OVERLAP_H

#include <stdint.h>

#include "export.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef struct my_ops_view {
    int64_t dim;
    const int64_t *sizes;
    const int64_t *strides;
    int64_t element_size;
    int64_t start; /* byte address of element [0, ..., 0] */
} my_ops_view;

typedef enum my_ops_overlap {
    MY_OPS_NO_OVERLAP = 0,
    MY_OPS_OVERLAP = 1,
    MY_OPS_OVERLAP_UNKNOWN = 2 /* the search gave up: treat as overlapping */
} my_ops_overlap;

/* Whether two elements of one view occupy the same bytes (an expanded view). */
MY_OPS_API my_ops_overlap my_ops_internal_overlap(const my_ops_view *v);

/* Whether any byte belongs to an element of `a` and an element of `b`
 * (both views of one storage). */
MY_OPS_API my_ops_overlap my_ops_views_overlap(const my_ops_view *a, const my_ops_view *b);

#ifdef __cplusplus
}
#endif

#endif /* MY_OPS_OVERLAP_H */
