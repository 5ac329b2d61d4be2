/*
 * Exact overlap tests for strided views (see overlap.h).
 *
 * Both questions reduce to one: is there an integer vector v, each v_k in
 * [lo_k, hi_k], with sum_k coef_k * v_k inside a target interval? A
 * depth-first search assigns the terms in order of decreasing |coef| and
 * keeps only the values that the remaining terms can still complete; for the
 * layouts tensors have (each stride larger than the span of the smaller ones,
 * as in slices, transposes and interleaved views) it visits a handful of
 * nodes. Past a node budget it answers MY_OPS_OVERLAP_UNKNOWN, which callers
 * treat as overlapping.
 */
#include "overlap.h"

#include <stdlib.h>

enum { MAX_TERMS = 128, NODE_BUDGET = 100000 };

typedef struct term {
    int64_t coef, lo, hi;
} term;

static int64_t floor_div(int64_t a, int64_t b) {
    int64_t q = a / b;
    if ((a % b != 0) && ((a < 0) != (b < 0))) --q;
    return q;
}

static int64_t ceil_div(int64_t a, int64_t b) { return -floor_div(-a, b); }

static int64_t abs64(int64_t x) { return x < 0 ? -x : x; }

typedef struct search {
    const term *terms;
    int count;
    int64_t rest_min[MAX_TERMS + 1], rest_max[MAX_TERMS + 1];
    int64_t budget;
} search;

/* 1: found, 0: none, -1: budget exhausted. */
static int find(search *s, int k, int64_t tlo, int64_t thi, int need_nonzero) {
    if (k == s->count) return tlo <= 0 && 0 <= thi && !need_nonzero;
    const term *t = &s->terms[k];
    const int64_t low = tlo - s->rest_max[k + 1], high = thi - s->rest_min[k + 1];
    int64_t vlo, vhi; /* coef * v in [low, high] */
    if (t->coef > 0) {
        vlo = ceil_div(low, t->coef);
        vhi = floor_div(high, t->coef);
    } else {
        vlo = ceil_div(high, t->coef);
        vhi = floor_div(low, t->coef);
    }
    if (vlo < t->lo) vlo = t->lo;
    if (vhi > t->hi) vhi = t->hi;
    for (int64_t v = vlo; v <= vhi; ++v) {
        if (--s->budget < 0) return -1;
        const int r = find(s, k + 1, tlo - t->coef * v, thi - t->coef * v, need_nonzero && v == 0);
        if (r != 0) return r;
    }
    return 0;
}

static int by_magnitude_desc(const void *a, const void *b) {
    const int64_t x = abs64(((const term *)a)->coef), y = abs64(((const term *)b)->coef);
    return x < y ? 1 : x > y ? -1 : 0;
}

static my_ops_overlap solve(term *terms, int count, int64_t tlo, int64_t thi, int need_nonzero) {
    search s;
    qsort(terms, (size_t)count, sizeof(term), by_magnitude_desc);
    s.terms = terms;
    s.count = count;
    s.budget = NODE_BUDGET;
    s.rest_min[count] = s.rest_max[count] = 0;
    for (int k = count - 1; k >= 0; --k) {
        const int64_t a = terms[k].coef * terms[k].lo, b = terms[k].coef * terms[k].hi;
        s.rest_min[k] = s.rest_min[k + 1] + (a < b ? a : b);
        s.rest_max[k] = s.rest_max[k + 1] + (a < b ? b : a);
    }
    const int r = find(&s, 0, tlo, thi, need_nonzero);
    return r > 0 ? MY_OPS_OVERLAP : r == 0 ? MY_OPS_NO_OVERLAP : MY_OPS_OVERLAP_UNKNOWN;
}

static int has_no_elements(const my_ops_view *v) {
    for (int64_t k = 0; k < v->dim; ++k)
        if (v->sizes[k] == 0) return 1;
    return 0;
}

my_ops_overlap my_ops_internal_overlap(const my_ops_view *v) {
    if (has_no_elements(v)) return MY_OPS_NO_OVERLAP;
    term terms[MAX_TERMS];
    int count = 0;
    for (int64_t k = 0; k < v->dim; ++k) {
        if (v->sizes[k] == 1) continue;
        if (v->strides[k] == 0) return MY_OPS_OVERLAP; /* an expanded dimension */
        if (count == MAX_TERMS) return MY_OPS_OVERLAP_UNKNOWN;
        /* two indices of this dimension differ by v in [-(n-1), n-1] */
        terms[count].coef = abs64(v->strides[k]);
        terms[count].hi = v->sizes[k] - 1;
        terms[count].lo = -terms[count].hi;
        ++count;
    }
    for (int i = 0; i < count; ++i)
        for (int j = i + 1; j < count; ++j)
            if (terms[i].coef == terms[j].coef) return MY_OPS_OVERLAP; /* same stride twice */
    /* two different index vectors at the same address: a non-zero difference summing to 0 */
    return solve(terms, count, 0, 0, 1);
}

/* Adds coef * [0, n - 1] to the terms, merged with a term of the same |coef|. */
static int add_term(term *terms, int *count, int64_t coef, int64_t n) {
    if (n == 1 || coef == 0) return 1;
    for (int i = 0; i < *count; ++i) {
        if (terms[i].coef == coef) {
            terms[i].hi += n - 1;
            return 1;
        }
        if (terms[i].coef == -coef) {
            terms[i].lo -= n - 1;
            return 1;
        }
    }
    if (*count == MAX_TERMS) return 0;
    terms[*count].coef = coef;
    terms[*count].lo = 0;
    terms[*count].hi = n - 1;
    ++*count;
    return 1;
}

my_ops_overlap my_ops_views_overlap(const my_ops_view *a, const my_ops_view *b) {
    if (has_no_elements(a) || has_no_elements(b)) return MY_OPS_NO_OVERLAP;
    /* element i of a covers [pa, pa + ea), element j of b [pb, pb + eb); they share a
     * byte iff pa - pb is in [-(ea - 1), eb - 1], where
     * pa - pb = a.start - b.start + sum a.stride * ea * i - sum b.stride * eb * j. */
    term terms[MAX_TERMS];
    int count = 0;
    for (int64_t k = 0; k < a->dim; ++k)
        if (!add_term(terms, &count, a->strides[k] * a->element_size, a->sizes[k]))
            return MY_OPS_OVERLAP_UNKNOWN;
    for (int64_t k = 0; k < b->dim; ++k)
        if (!add_term(terms, &count, -b->strides[k] * b->element_size, b->sizes[k]))
            return MY_OPS_OVERLAP_UNKNOWN;
    const int64_t shift = b->start - a->start;
    return solve(terms, count, shift - (a->element_size - 1), shift + (b->element_size - 1), 0);
}
