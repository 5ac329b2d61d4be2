/*
 * C test of the CPU kernels, without torch: every kernel and dtype against a
 * float64 reference written as plain loops, on fresh pseudo-random inputs.
 * Built and run by tests/ops/test_c_kernels.py (also under ASan/UBSan).
 * Exit status 0 when every check passes.
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../../../src/kernels/cpu/dtype_convert.h"
#include "../../../src/kernels/cpu/exp_f32.h"
#include "../../../src/kernels/act_and_mul.h"
#include "../../../src/kernels/elementwise.h"
#include "../../../src/kernels/matmul.h"
#include "../../../src/kernels/rms_norm.h"

static int checks_run = 0;
static int checks_failed = 0;
static uint64_t rng_state = 0;

static double uniform(double lo, double hi) {
    rng_state = rng_state * 6364136223846793005ull + 1442695040888963407ull;
    double unit = (double)(rng_state >> 11) / 9007199254740992.0;
    return lo + (hi - lo) * unit;
}

static const my_ops_dtype all_dtypes[] = {MY_OPS_FLOAT32, MY_OPS_FLOAT64, MY_OPS_FLOAT16,
                                          MY_OPS_BFLOAT16};
static const char *dtype_name(my_ops_dtype t) {
    static const char *names[] = {"float32", "float64", "float16", "bfloat16"};
    return names[t];
}

/* Relative tolerance of one rounding plus float32 arithmetic, per dtype. */
static double tolerance(my_ops_dtype t) {
    switch (t) {
    case MY_OPS_FLOAT32: return 2e-5;
    case MY_OPS_FLOAT64: return 1e-12;
    case MY_OPS_FLOAT16: return 2e-3;
    case MY_OPS_BFLOAT16: return 1.6e-2;
    }
    return 0;
}

static double get(my_ops_dtype t, const void *p, int64_t i) {
    switch (t) {
    case MY_OPS_FLOAT32: return ((const float *)p)[i];
    case MY_OPS_FLOAT64: return ((const double *)p)[i];
    case MY_OPS_FLOAT16: return my_ops_half_to_float(((const uint16_t *)p)[i]);
    case MY_OPS_BFLOAT16: return my_ops_bf16_to_float(((const uint16_t *)p)[i]);
    }
    return NAN;
}

static void set(my_ops_dtype t, void *p, int64_t i, double v) {
    switch (t) {
    case MY_OPS_FLOAT32: ((float *)p)[i] = (float)v; break;
    case MY_OPS_FLOAT64: ((double *)p)[i] = v; break;
    case MY_OPS_FLOAT16: ((uint16_t *)p)[i] = my_ops_float_to_half((float)v); break;
    case MY_OPS_BFLOAT16: ((uint16_t *)p)[i] = my_ops_float_to_bf16((float)v); break;
    }
}

/* A random array; poisoned (NaN) when lo > hi, to catch unwritten outputs. */
static void *array(my_ops_dtype t, int64_t n, double lo, double hi) {
    void *p = malloc(my_ops_dtype_size(t) * (size_t)(n > 0 ? n : 1));
    if (p == NULL) {
        fprintf(stderr, "out of memory\n");
        exit(2);
    }
    for (int64_t i = 0; i < n; ++i) set(t, p, i, lo > hi ? NAN : uniform(lo, hi));
    return p;
}

/* Absolute floor: float16's subnormal step; the other types reach far smaller. */
static double tiny(my_ops_dtype t) { return t == MY_OPS_FLOAT16 ? 5.9604644775390625e-08 : 1e-30; }

/* |got - want| <= tol * scale + tiny; NaN never passes. Reports the first miss. */
static void expect_close(const char *what, my_ops_dtype t, const void *got, const double *want,
                         const double *scale, int64_t n) {
    ++checks_run;
    const double tol = tolerance(t);
    for (int64_t i = 0; i < n; ++i) {
        const double g = get(t, got, i);
        const double s = scale ? scale[i] : fabs(want[i]);
        if (!(fabs(g - want[i]) <= tol * s + tiny(t)) || isnan(g)) {
            fprintf(stderr, "FAIL %s [%s] at %lld: got %.9g want %.9g\n", what, dtype_name(t),
                    (long long)i, g, want[i]);
            ++checks_failed;
            return;
        }
    }
}

static void expect_ok(const char *what, int status) {
    if (status != MY_OPS_OK) {
        fprintf(stderr, "FAIL %s returned status %d\n", what, status);
        ++checks_failed;
    }
}

static void test_conversions(void) {
    ++checks_run;
    /* Every half pattern survives half -> float -> half (NaNs stay NaN). */
    for (uint32_t h = 0; h < 65536; ++h) {
        float f = my_ops_half_to_float((uint16_t)h);
        uint16_t back = my_ops_float_to_half(f);
        int is_nan = ((h & 0x7c00u) == 0x7c00u) && (h & 0x3ffu);
        if (is_nan ? !isnan(f) : back != h) {
            fprintf(stderr, "FAIL half round trip 0x%04x -> %g -> 0x%04x\n", h, f, back);
            ++checks_failed;
            return;
        }
    }
#ifdef __FLT16_MAX__
    /* Against the compiler's own _Float16 rounding on random floats of every magnitude. */
    for (int i = 0; i < 2000000; ++i) {
        float f = (float)(uniform(-1, 1) * pow(2.0, uniform(-30, 18)));
        _Float16 ref = (_Float16)f;
        uint16_t ref_bits;
        memcpy(&ref_bits, &ref, 2);
        if (my_ops_float_to_half(f) != ref_bits) {
            fprintf(stderr, "FAIL float->half(%.9g) = 0x%04x, want 0x%04x\n", f,
                    my_ops_float_to_half(f), ref_bits);
            ++checks_failed;
            return;
        }
    }
#endif
    /* bf16: ties go to even, NaN stays NaN, overflow rounds to infinity. */
    struct {
        uint32_t in;
        uint16_t out;
    } cases[] = {{0x3f808000u, 0x3f80u}, {0x3f818000u, 0x3f82u}, {0x3f808001u, 0x3f81u},
                 {0x7f7fffffu, 0x7f80u}, {0x80000000u, 0x8000u}, {0x7fc00000u, 0x7fc0u}};
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; ++i) {
        if (my_ops_float_to_bf16(my_ops_bits_to_float(cases[i].in)) != cases[i].out) {
            fprintf(stderr, "FAIL float->bf16(0x%08x)\n", cases[i].in);
            ++checks_failed;
        }
    }
    if (!isnan(my_ops_bf16_to_float(my_ops_float_to_bf16(NAN)))) {
        fprintf(stderr, "FAIL bf16 NaN\n");
        ++checks_failed;
    }
}

static void test_elementwise(my_ops_dtype t) {
    const int64_t n = 1003;
    void *a = array(t, n, -4, 4), *b = array(t, n, -4, 4), *out = array(t, n, 1, 0);
    double *want = malloc(sizeof(double) * n);
    const double c = uniform(-2, 2);

    expect_ok("short_kernel", my_ops_short_kernel_cpu(t, a, out, n));
    for (int64_t i = 0; i < n; ++i) want[i] = get(t, a, i) * MY_OPS_SHORT_KERNEL_SCALE;
    expect_close("short_kernel", t, out, want, NULL, n);

    expect_ok("mul", my_ops_mul_cpu(t, a, b, out, n));
    for (int64_t i = 0; i < n; ++i) want[i] = get(t, a, i) * get(t, b, i);
    expect_close("mul", t, out, want, NULL, n);

    expect_ok("muladd", my_ops_muladd_cpu(t, a, b, c, out, n));
    double *scale = malloc(sizeof(double) * n);
    for (int64_t i = 0; i < n; ++i) {
        want[i] = get(t, a, i) * get(t, b, i) + c;
        scale[i] = fabs(get(t, a, i) * get(t, b, i)) + fabs(c);
    }
    expect_close("muladd", t, out, want, scale, n);

    expect_ok("add", my_ops_add_cpu(t, a, b, out, n));
    for (int64_t i = 0; i < n; ++i) {
        want[i] = get(t, a, i) + get(t, b, i);
        scale[i] = fabs(get(t, a, i)) + fabs(get(t, b, i));
    }
    expect_close("add", t, out, want, scale, n);
    free(a), free(b), free(out), free(want), free(scale);
}

static void test_matmul(my_ops_dtype t) {
    /* Sizes straddle the 64 x 256 x 128 blocking in every dimension. */
    const int64_t m = 70, k = 150, n = 300;
    void *a = array(t, m * k, -1, 1), *b = array(t, k * n, -1, 1), *c = array(t, m * n, 1, 0);
    double *want = calloc((size_t)(m * n), sizeof(double));
    double *scale = calloc((size_t)(m * n), sizeof(double));
    expect_ok("matmul", my_ops_matmul_cpu(t, a, b, c, m, k, n));
    for (int64_t i = 0; i < m; ++i)
        for (int64_t p = 0; p < k; ++p)
            for (int64_t j = 0; j < n; ++j) {
                want[i * n + j] += get(t, a, i * k + p) * get(t, b, p * n + j);
                scale[i * n + j] += fabs(get(t, a, i * k + p) * get(t, b, p * n + j));
            }
    expect_close("matmul", t, c, want, scale, m * n);
    free(a), free(b), free(c), free(want), free(scale);
}

/* "what" for a failure message, naming a weight dtype other than the rows'. */
static const char *with_weight(const char *what, my_ops_dtype t, my_ops_dtype wt) {
    static char text[128];
    if (wt == t) return what;
    snprintf(text, sizeof text, "%s (weight %s)", what, dtype_name(wt));
    return text;
}

/* The RMSNorm family with rows of t and a weight of wt (t, or float32 for 16-bit t). */
static void test_rms_norm(my_ops_dtype t, my_ops_dtype wt) {
    const int64_t rows = 9, hidden = 203;
    const double eps = 1e-6;
    void *x = array(t, rows * hidden, -3, 3), *w = array(wt, hidden, 0.5, 1.5);
    void *y = array(t, rows * hidden, 1, 0), *dy = array(t, rows * hidden, -1, 1);
    void *dx = array(t, rows * hidden, 1, 0);
    double *want = malloc(sizeof(double) * rows * hidden);
    double *want_dw = calloc((size_t)hidden, sizeof(double));
    double *scale = malloc(sizeof(double) * rows * hidden);

    expect_ok("rms_norm", my_ops_rms_norm_cpu(t, wt, x, hidden, w, y, rows, hidden, eps));
    for (int64_t r = 0; r < rows; ++r) {
        double ms = 0, dot = 0;
        for (int64_t j = 0; j < hidden; ++j)
            ms += get(t, x, r * hidden + j) * get(t, x, r * hidden + j);
        const double rstd = 1 / sqrt(ms / hidden + eps);
        for (int64_t j = 0; j < hidden; ++j) {
            const int64_t i = r * hidden + j;
            want[i] = get(t, x, i) * rstd * get(wt, w, j);
            dot += get(wt, w, j) * get(t, dy, i) * get(t, x, i);
        }
        for (int64_t j = 0; j < hidden; ++j) {
            const int64_t i = r * hidden + j;
            want_dw[j] += get(t, dy, i) * get(t, x, i) * rstd;
        }
        (void)dot;
    }
    expect_close(with_weight("rms_norm", t, wt), t, y, want, NULL, rows * hidden);

    /* backward: grad_weight accumulates into double, for every dtype */
    void *dw_acc = calloc((size_t)hidden, sizeof(double));
    expect_ok("rms_norm_backward", my_ops_rms_norm_backward_cpu(t, wt, dy, hidden, x, hidden, w, dx,
                                                                dw_acc, rows, hidden, eps));
    for (int64_t r = 0; r < rows; ++r) {
        double ms = 0, dot = 0, abs_dot = 0;
        for (int64_t j = 0; j < hidden; ++j) {
            const int64_t i = r * hidden + j;
            ms += get(t, x, i) * get(t, x, i);
            dot += get(wt, w, j) * get(t, dy, i) * get(t, x, i);
            abs_dot += fabs(get(wt, w, j) * get(t, dy, i) * get(t, x, i));
        }
        const double rstd = 1 / sqrt(ms / hidden + eps);
        for (int64_t j = 0; j < hidden; ++j) {
            const int64_t i = r * hidden + j;
            const double term1 = rstd * get(wt, w, j) * get(t, dy, i);
            const double term2 = get(t, x, i) * rstd * rstd * rstd / hidden * dot;
            want[i] = term1 - term2;
            /* term2's error follows the sum of |w * dy * x|, not its (cancelling) value */
            scale[i] = fabs(term1) + fabs(get(t, x, i)) * rstd * rstd * rstd / hidden * abs_dot;
        }
    }
    expect_close(with_weight("rms_norm_backward dx", t, wt), t, dx, want, scale, rows * hidden);
    double *got_dw = malloc(sizeof(double) * hidden);
    double *dw_scale = malloc(sizeof(double) * hidden);
    int dw_ok = 1;
    for (int64_t j = 0; j < hidden; ++j) {
        got_dw[j] = ((double *)dw_acc)[j];
        dw_scale[j] = 0;
        for (int64_t r = 0; r < rows; ++r)
            dw_scale[j] += fabs(get(t, dy, r * hidden + j) * get(t, x, r * hidden + j)) * 3;
        if (!(fabs(got_dw[j] - want_dw[j]) <= (t == MY_OPS_FLOAT64 ? 1e-12 : 2e-5) * dw_scale[j]))
            dw_ok = 0;
    }
    ++checks_run;
    if (!dw_ok) {
        fprintf(stderr, "FAIL rms_norm_backward dweight [%s, weight %s]\n", dtype_name(t),
                dtype_name(wt));
        ++checks_failed;
    }

    /* fused_add_rms_norm: residual += x (rounded to dtype), x = rms_norm(residual) */
    void *residual = array(t, rows * hidden, -3, 3);
    double *want_residual = malloc(sizeof(double) * rows * hidden);
    void *rounded = array(t, 1, 0, 1);
    for (int64_t i = 0; i < rows * hidden; ++i) {
        set(t, rounded, 0, get(t, x, i) + get(t, residual, i));
        want_residual[i] = get(t, rounded, 0);
    }
    for (int64_t r = 0; r < rows; ++r) {
        double ms = 0;
        for (int64_t j = 0; j < hidden; ++j)
            ms += want_residual[r * hidden + j] * want_residual[r * hidden + j];
        const double rstd = 1 / sqrt(ms / hidden + eps);
        for (int64_t j = 0; j < hidden; ++j)
            want[r * hidden + j] = want_residual[r * hidden + j] * rstd * get(wt, w, j);
    }
    /* into other rows first (the functional form's kernel): x and residual stay as they are */
    const size_t bytes = my_ops_dtype_size(t) * (size_t)(rows * hidden);
    void *x_before = array(t, rows * hidden, 1, 0),
         *residual_before = array(t, rows * hidden, 1, 0);
    memcpy(x_before, x, bytes), memcpy(residual_before, residual, bytes);
    void *new_x = array(t, rows * hidden, 1, 0), *new_residual = array(t, rows * hidden, 1, 0);
    expect_ok("fused_add_rms_norm_out",
              my_ops_fused_add_rms_norm_out_cpu(t, wt, x, hidden, residual, hidden, w, new_x,
                                                hidden, new_residual, hidden, rows, hidden, eps));
    expect_close(with_weight("fused_add_rms_norm_out residual", t, wt), t, new_residual,
                 want_residual, NULL, rows * hidden);
    expect_close(with_weight("fused_add_rms_norm_out x", t, wt), t, new_x, want, NULL,
                 rows * hidden);
    ++checks_run;
    if (memcmp(x_before, x, bytes) != 0 || memcmp(residual_before, residual, bytes) != 0) {
        fprintf(stderr, "FAIL fused_add_rms_norm_out wrote its inputs [%s]\n", dtype_name(t));
        ++checks_failed;
    }
    free(x_before), free(residual_before), free(new_x), free(new_residual);
    expect_ok("fused_add_rms_norm", my_ops_fused_add_rms_norm_cpu(t, wt, x, hidden, residual,
                                                                  hidden, w, rows, hidden, eps));
    expect_close(with_weight("fused_add_rms_norm residual", t, wt), t, residual, want_residual,
                 NULL, rows * hidden);
    expect_close(with_weight("fused_add_rms_norm x", t, wt), t, x, want, NULL, rows * hidden);

    free(x), free(w), free(y), free(dy), free(dx), free(want), free(want_dw), free(scale);
    free(dw_acc), free(got_dw), free(dw_scale), free(residual), free(want_residual), free(rounded);
}

/* Weight dtypes the RMSNorm kernels refuse: narrower than the rows, or wider than float32
 * (the caller converts those), or another 16-bit type. Nothing is written. */
static void test_rms_norm_refused_weights(void) {
    const my_ops_dtype pairs[][2] = {
        {MY_OPS_FLOAT32, MY_OPS_FLOAT16},  {MY_OPS_FLOAT32, MY_OPS_FLOAT64},
        {MY_OPS_FLOAT64, MY_OPS_FLOAT32},  {MY_OPS_BFLOAT16, MY_OPS_FLOAT16},
        {MY_OPS_FLOAT16, MY_OPS_BFLOAT16}, {MY_OPS_FLOAT16, MY_OPS_FLOAT64}};
    double x[4] = {1, 2, 3, 4}, w[4] = {1, 1, 1, 1}, y[4] = {0}, acc[4] = {0};
    for (size_t i = 0; i < sizeof pairs / sizeof pairs[0]; ++i) {
        const my_ops_dtype t = pairs[i][0], wt = pairs[i][1];
        const int statuses[3] = {
            my_ops_rms_norm_cpu(t, wt, x, 1, w, y, 1, 1, 1e-6),
            my_ops_rms_norm_backward_cpu(t, wt, x, 1, x, 1, w, y, acc, 1, 1, 1e-6),
            my_ops_fused_add_rms_norm_cpu(t, wt, x, 1, y, 1, w, 1, 1, 1e-6)};
        ++checks_run;
        if (statuses[0] != MY_OPS_BAD_DTYPE || statuses[1] != MY_OPS_BAD_DTYPE ||
            statuses[2] != MY_OPS_BAD_DTYPE || x[0] != 1 || y[0] != 0 || acc[0] != 0) {
            fprintf(stderr, "FAIL rms_norm weight %s with %s rows not refused\n", dtype_name(wt),
                    dtype_name(t));
            ++checks_failed;
        }
    }
}

static void test_silu_and_mul(my_ops_dtype t) {
    const int64_t rows = 7, d = 129;
    void *x = array(t, rows * 2 * d, -6, 6), *out = array(t, rows * d, 1, 0);
    void *dy = array(t, rows * d, -1, 1), *dx = array(t, rows * 2 * d, 1, 0);
    double *want = malloc(sizeof(double) * rows * 2 * d);
    expect_ok("silu_and_mul", my_ops_act_and_mul_cpu(t, MY_OPS_SILU, x, 2 * d, out, rows, d));
    for (int64_t r = 0; r < rows; ++r)
        for (int64_t j = 0; j < d; ++j) {
            const double g = get(t, x, r * 2 * d + j), u = get(t, x, r * 2 * d + d + j);
            want[r * d + j] = g / (1 + exp(-g)) * u;
        }
    expect_close("silu_and_mul", t, out, want, NULL, rows * d);

    expect_ok("silu_and_mul_backward",
              my_ops_act_and_mul_backward_cpu(t, MY_OPS_SILU, dy, d, x, 2 * d, dx, rows, d));
    /* 1 + g * (1 - s) cancels near g = -1.28: scale the tolerance by its terms */
    double *scale = malloc(sizeof(double) * rows * 2 * d);
    for (int64_t r = 0; r < rows; ++r)
        for (int64_t j = 0; j < d; ++j) {
            const double g = get(t, x, r * 2 * d + j), u = get(t, x, r * 2 * d + d + j);
            const double s = 1 / (1 + exp(-g)), dout = get(t, dy, r * d + j);
            want[r * 2 * d + j] = dout * u * s * (1 + g * (1 - s));
            scale[r * 2 * d + j] = fabs(dout * u * s) * (1 + fabs(g * (1 - s)));
            want[r * 2 * d + d + j] = dout * g * s;
            scale[r * 2 * d + d + j] = fabs(want[r * 2 * d + d + j]);
        }
    expect_close("silu_and_mul_backward", t, dx, want, scale, rows * 2 * d);
    free(x), free(out), free(dy), free(dx), free(want), free(scale);
}

/* Row strides: each row-wise kernel on rows padded to a wider stride gives
 * exactly its result on the dense rows (under the sanitizers: and reads
 * nothing past a row). Every activation of the gated units. */
static void test_row_strides(my_ops_dtype t) {
    const int64_t rows = 6, hidden = 37, stride = 2 * hidden + 5;
    const size_t size = my_ops_dtype_size(t);
    void *dense = array(t, rows * 2 * hidden, -3, 3), *padded = array(t, rows * 2 * stride, -3, 3);
    for (int64_t r = 0; r < rows; ++r)
        memcpy((char *)padded + (size_t)(r * stride) * size,
               (char *)dense + (size_t)(r * 2 * hidden) * size, (size_t)(2 * hidden) * size);
    void *w = array(t, hidden, 0.5, 1.5), *want = array(t, rows * 2 * hidden, 1, 0),
         *got = array(t, rows * 2 * hidden, 1, 0);
    int same = 1;
    expect_ok("rms_norm dense",
              my_ops_rms_norm_cpu(t, t, dense, 2 * hidden, w, want, rows, hidden, 1e-6));
    expect_ok("rms_norm strided",
              my_ops_rms_norm_cpu(t, t, padded, stride, w, got, rows, hidden, 1e-6));
    same = same && memcmp(want, got, (size_t)(rows * hidden) * size) == 0;
    const my_ops_activation acts[] = {MY_OPS_SILU, MY_OPS_GELU, MY_OPS_GELU_TANH};
    for (int a = 0; a < 3; ++a) {
        expect_ok("act_and_mul dense",
                  my_ops_act_and_mul_cpu(t, acts[a], dense, 2 * hidden, want, rows, hidden));
        expect_ok("act_and_mul strided",
                  my_ops_act_and_mul_cpu(t, acts[a], padded, stride, got, rows, hidden));
        same = same && memcmp(want, got, (size_t)(rows * hidden) * size) == 0;
        expect_ok("act_and_mul_backward dense",
                  my_ops_act_and_mul_backward_cpu(t, acts[a], dense, 2 * hidden, dense, 2 * hidden,
                                                  want, rows, hidden));
        expect_ok("act_and_mul_backward strided",
                  my_ops_act_and_mul_backward_cpu(t, acts[a], padded, stride, padded, stride, got,
                                                  rows, hidden));
        same = same && memcmp(want, got, (size_t)(rows * 2 * hidden) * size) == 0;
    }
    ++checks_run;
    if (!same) {
        fprintf(stderr, "FAIL row strides [%s]\n", dtype_name(t));
        ++checks_failed;
    }
    if (my_ops_act_and_mul_cpu(t, (my_ops_activation)7, dense, 2 * hidden, got, rows, hidden) !=
        MY_OPS_BAD_ARGUMENT) {
        fprintf(stderr, "FAIL unknown activation not rejected\n");
        ++checks_failed;
    }
    ++checks_run;
    free(dense), free(padded), free(w), free(want), free(got);
}

static void check(int ok, const char *what, double x, double got, double want) {
    ++checks_run;
    if (!ok) {
        fprintf(stderr, "FAIL %s at x=%.9g: %.9g, expected %.9g\n", what, x, got, want);
        ++checks_failed;
    }
}

/* The float32 exp of the silu kernels: relative error against double exp on
 * fresh random points of its range, and its limits. */
static void test_exp_f32(void) {
    double worst = 0, worst_x = 0, worst_got = 0, worst_want = 0;
    for (int i = 0; i < 200000; ++i) {
        const float x = (float)uniform(-86.98, 88.72);
        const double want = exp((double)x), got = my_ops_exp_f32(x);
        const double rel = fabs(got - want) / want;
        if (!(rel <= worst)) worst = rel, worst_x = x, worst_got = got, worst_want = want;
    }
    check(worst <= 2e-7, "exp_f32 relative error <= 2e-7", worst_x, worst_got, worst_want);
    const float limits[][2] = {{0.0f, 1.0f},        {-0.0f, 1.0f},        {88.73f, INFINITY},
                               {1000.0f, INFINITY}, {INFINITY, INFINITY}, {-87.0f, 0.0f},
                               {-1000.0f, 0.0f},    {-INFINITY, 0.0f}};
    for (size_t i = 0; i < sizeof limits / sizeof limits[0]; ++i) {
        const float got = my_ops_exp_f32(limits[i][0]);
        check(got == limits[i][1], "exp_f32 limit", limits[i][0], got, limits[i][1]);
    }
    const float nan_out = my_ops_exp_f32(NAN);
    check(nan_out != nan_out, "exp_f32 of NaN is NaN", NAN, nan_out, NAN);
}

int main(int argc, char **argv) {
    rng_state = argc > 1 ? strtoull(argv[1], NULL, 10) : 12345u;
    printf("seed %llu\n", (unsigned long long)rng_state);
    test_conversions();
    test_exp_f32();
    for (size_t i = 0; i < sizeof all_dtypes / sizeof all_dtypes[0]; ++i) {
        test_elementwise(all_dtypes[i]);
        test_matmul(all_dtypes[i]);
        test_rms_norm(all_dtypes[i], all_dtypes[i]);
        test_silu_and_mul(all_dtypes[i]);
        test_row_strides(all_dtypes[i]);
    }
    test_rms_norm(MY_OPS_FLOAT16, MY_OPS_FLOAT32);
    test_rms_norm(MY_OPS_BFLOAT16, MY_OPS_FLOAT32);
    test_rms_norm_refused_weights();
    if (my_ops_mul_cpu((my_ops_dtype)99, NULL, NULL, NULL, 0) != MY_OPS_BAD_DTYPE) {
        fprintf(stderr, "FAIL unknown dtype not rejected\n");
        ++checks_failed;
    }
    ++checks_run;
    printf("%d passed, %d failed\n", checks_run - checks_failed, checks_failed);
    return checks_failed == 0 ? 0 : 1;
}
