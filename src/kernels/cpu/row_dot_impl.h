/*
 * Reductions over a row in the accumulator type ACC (float or double),
 * included once per type by rows.h. No include guard, on purpose.
 */

/* sum of a[j] * b[j] (a == b: the sum of squares) */
static inline double MY_OPS_CAT(my_ops_dot_, ACC)(const ACC *a, const ACC *b, int64_t n) {
    double total = 0;
    for (int64_t start = 0; start < n; start += MY_OPS_SUM_BLOCK) {
        const int64_t end = n - start < MY_OPS_SUM_BLOCK ? n : start + MY_OPS_SUM_BLOCK;
        ACC partial[8] = {0};
        int64_t j = start;
        for (; j + 8 <= end; j += 8)
            for (int lane = 0; lane < 8; ++lane) partial[lane] += a[j + lane] * b[j + lane];
        ACC block = 0;
        for (int lane = 0; lane < 8; ++lane) block += partial[lane];
        for (; j < end; ++j) block += a[j] * b[j];
        total += (double)block;
    }
    return total;
}

static inline double MY_OPS_CAT(my_ops_sum_of_squares_, ACC)(const ACC *row, int64_t n) {
    return MY_OPS_CAT(my_ops_dot_, ACC)(row, row, n);
}

/* max |row[j]| over lanes of their own, which vectorize (one running max is a chain
 * the compiler may not reorder); a max is exact, so any order gives the one value.
 * NaN never wins (the fp8 per-token scale comes from the rest of the row). */
static inline ACC MY_OPS_CAT(my_ops_abs_max_, ACC)(const ACC *row, int64_t n) {
    enum { LANES = 16 };
    ACC lane[LANES] = {0};
    int64_t j = 0;
    for (; j + LANES <= n; j += LANES)
        for (int k = 0; k < LANES; ++k) {
            const ACC a = row[j + k] < 0 ? -row[j + k] : row[j + k];
            lane[k] = a > lane[k] ? a : lane[k];
        }
    ACC amax = 0;
    for (; j < n; ++j) {
        const ACC a = row[j] < 0 ? -row[j] : row[j];
        amax = a > amax ? a : amax;
    }
    for (int k = 0; k < LANES; ++k) amax = lane[k] > amax ? lane[k] : amax;
    return amax;
}
