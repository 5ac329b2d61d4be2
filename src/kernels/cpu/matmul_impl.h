/*
 * The CPU matrix product for one element type, included once per dtype by
 * matmul.c through for_each_dtype.h (T, ACC, LOAD, STORE, SUFFIX: see
 * there). No include guard, on purpose.
 */

static int MY_OPS_NAME(matmul)(const T *a, const T *b, T *c, int64_t rows, int64_t k, int64_t n) {
    ACC *acc = malloc(sizeof(ACC) * ROW_BLOCK * COL_BLOCK);
    ACC *b_tile = malloc(sizeof(ACC) * K_BLOCK * COL_BLOCK);
    if (acc == NULL || b_tile == NULL) {
        free(acc);
        free(b_tile);
        return MY_OPS_OUT_OF_MEMORY;
    }
    for (int64_t i0 = 0; i0 < rows; i0 += ROW_BLOCK) {
        const int64_t mb = min_i64(ROW_BLOCK, rows - i0);
        for (int64_t j0 = 0; j0 < n; j0 += COL_BLOCK) {
            const int64_t nb = min_i64(COL_BLOCK, n - j0);
            for (int64_t i = 0; i < mb * nb; ++i) acc[i] = (ACC)0;
            for (int64_t p0 = 0; p0 < k; p0 += K_BLOCK) {
                const int64_t kb = min_i64(K_BLOCK, k - p0);
                for (int64_t p = 0; p < kb; ++p)
                    for (int64_t j = 0; j < nb; ++j)
                        b_tile[p * nb + j] = LOAD(b[(p0 + p) * n + j0 + j]);
                for (int64_t i = 0; i < mb; ++i) {
                    ACC *acc_row = acc + i * nb;
                    const T *a_row = a + (i0 + i) * k + p0;
                    for (int64_t p = 0; p < kb; ++p) {
                        const ACC a_ip = LOAD(a_row[p]);
                        const ACC *b_row = b_tile + p * nb;
                        for (int64_t j = 0; j < nb; ++j) acc_row[j] += a_ip * b_row[j];
                    }
                }
            }
            for (int64_t i = 0; i < mb; ++i)
                for (int64_t j = 0; j < nb; ++j) c[(i0 + i) * n + j0 + j] = STORE(acc[i * nb + j]);
        }
    }
    free(acc);
    free(b_tile);
    return MY_OPS_OK;
}
