/*
 * C test of the CPU kernels, without torch: every kernel and dtype against a
 * float64 reference written as plain loops, on fresh pseudo-random inputs.
 * Built and run by tests/ops/test_c_kernels.py (also under ASan/UBSan).
 * Exit status 0 when every check passes.
 */
#include <float.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../../../src/kernels/cpu/dtype_convert.h"
#include "../../../src/kernels/cpu/exp_f32.h"
#include "../../../src/kernels/act_and_mul.h"
#include "../../../src/kernels/elementwise.h"
#include "../../../src/kernels/fp8.h"
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

/* ------------------------------------------------------------------ fp8 -- */

/* float8 e4m3fn, independently of fp8_convert.h: the value of each byte from
 * its fields (sign, 4 exponent bits with bias 7, 3 mantissa bits; exponent 0:
 * subnormals, multiples of 2^-9; 0x7f and 0xff NaN; no infinity). */
static double e4m3_value(uint8_t b) {
    const int exponent = (b >> 3) & 15, mantissa = b & 7;
    if (exponent == 15 && mantissa == 7) return NAN;
    const double magnitude =
        exponent == 0 ? ldexp(mantissa, -9) : ldexp(1 + mantissa / 8.0, exponent - 7);
    return b & 0x80 ? -magnitude : magnitude;
}

/* The magnitudes of the codes 0x00 .. 0x7e (0 .. 448), increasing. */
static double e4m3_magnitudes[127];
static void e4m3_init(void) {
    for (int c = 0; c < 127; ++c) e4m3_magnitudes[c] = e4m3_value((uint8_t)c);
}

/* The e4m3fn byte nearest q: ties to the even mantissa (the even code), magnitudes
 * beyond 448 saturate to +-448 (fp8_convert.h: as the kernels and vLLM, where torch's
 * own conversion would give NaN from 464 on), NaN gives 0x7f, zero keeps its sign. */
static uint8_t e4m3_nearest(double q) {
    if (isnan(q)) return 0x7f;
    const uint8_t sign = signbit(q) ? 0x80 : 0;
    const double a = fabs(q);
    if (a >= 448) return sign | 0x7e;
    int lo = 0, hi = 126; /* the largest code whose magnitude is <= a: in [lo, hi) */
    while (hi - lo > 1) {
        const int mid = (lo + hi) / 2;
        if (e4m3_magnitudes[mid] <= a)
            lo = mid;
        else
            hi = mid;
    }
    /* the midpoint of two neighbours has 5 significant bits: exact in double */
    const double midpoint = (e4m3_magnitudes[lo] + e4m3_magnitudes[lo + 1]) / 2;
    const int code = a > midpoint || (a == midpoint && (lo & 1)) ? lo + 1 : lo;
    return (uint8_t)(sign | code);
}

/* A byte's place in value order: neighbours differ by 1, +0 and -0 are both 0. */
static int e4m3_rank(uint8_t b) { return b & 0x80 ? -(b & 0x7f) : (b & 0x7f); }

/* A random value of random sign, its magnitude log-uniform in [2^lo_exp, 2^hi_exp]. */
static double spread(double lo_exp, double hi_exp) {
    const double magnitude = pow(2.0, uniform(lo_exp, hi_exp));
    return uniform(0, 1) < 0.5 ? -magnitude : magnitude;
}

static void check_byte(const char *what, double x, uint8_t got, uint8_t want) {
    ++checks_run;
    if (got != want) {
        fprintf(stderr, "FAIL %s of %.17g: 0x%02x, want 0x%02x\n", what, x, got, want);
        ++checks_failed;
    }
}

/* fp8_convert.h against the reference: every byte back from its value, every
 * midpoint (ties to even) and its float neighbours, saturation, NaN, random floats
 * of every magnitude, and float64 through my_ops_fp8_narrow_double (rounded once,
 * also just beside a tie, where rounding to float first would round twice). */
static void test_fp8_conversion(void) {
    /* the reference's own anchors */
    const struct {
        uint8_t b;
        double v;
    } anchors[] = {{0x00, 0.0},     {0x01, 0x1p-9}, {0x07, 7 * 0x1p-9}, {0x08, 0x1p-6},
                   {0x38, 1.0},     {0x3b, 1.375},  {0x7e, 448.0},      {0xfe, -448.0},
                   {0x81, -0x1p-9}, {0xc0, -2.0}};
    for (size_t i = 0; i < sizeof anchors / sizeof anchors[0]; ++i)
        check(e4m3_value(anchors[i].b) == anchors[i].v, "e4m3 reference value", anchors[i].b,
              e4m3_value(anchors[i].b), anchors[i].v);
    check(isnan(e4m3_value(0x7f)) && isnan(e4m3_value(0xff)), "e4m3 reference NaN", 0x7f,
          e4m3_value(0x7f), NAN);
    check(signbit(e4m3_value(0x80)) && e4m3_value(0x80) == 0, "e4m3 reference -0", 0x80,
          e4m3_value(0x80), -0.0);
    int increasing = 1;
    for (int c = 0; c < 126; ++c) increasing &= e4m3_magnitudes[c] < e4m3_magnitudes[c + 1];
    check(increasing, "e4m3 reference codes in value order", 0, 0, 0);

    for (int b = 0; b < 256; ++b) {
        const float v = (float)e4m3_value((uint8_t)b);
        check_byte("float_to_e4m3 of a byte's value", v, my_ops_float_to_e4m3(v),
                   isnan(v) ? 0x7f : (uint8_t)b);
        check_byte("reference of a byte's value", v, e4m3_nearest(v), isnan(v) ? 0x7f : (uint8_t)b);
    }
    for (int c = 0; c < 126; ++c) {
        const float midpoint = (float)((e4m3_magnitudes[c] + e4m3_magnitudes[c + 1]) / 2);
        const float near[3] = {midpoint, nextafterf(midpoint, 0), nextafterf(midpoint, INFINITY)};
        for (int k = 0; k < 6; ++k) {
            const float v = k < 3 ? near[k] : -near[k - 3];
            check_byte("float_to_e4m3 at a midpoint", v, my_ops_float_to_e4m3(v), e4m3_nearest(v));
        }
        /* the tie itself goes to the even code */
        check_byte("reference at a midpoint", midpoint, e4m3_nearest(midpoint),
                   (uint8_t)(c & 1 ? c + 1 : c));
    }
    const float beyond[] = {448.0f, 448.5f, 463.9f, 464.0f, 480.0f, 1e6f, FLT_MAX, INFINITY};
    for (size_t i = 0; i < sizeof beyond / sizeof beyond[0]; ++i) {
        check_byte("float_to_e4m3 saturates", beyond[i], my_ops_float_to_e4m3(beyond[i]), 0x7e);
        check_byte("float_to_e4m3 saturates", -beyond[i], my_ops_float_to_e4m3(-beyond[i]), 0xfe);
        check_byte("reference saturates", -beyond[i], e4m3_nearest(-beyond[i]), 0xfe);
    }
    check_byte("float_to_e4m3 of NaN", NAN, my_ops_float_to_e4m3(NAN), 0x7f);
    check_byte("float_to_e4m3 of -NaN", NAN, my_ops_float_to_e4m3(copysignf(NAN, -1.0f)), 0x7f);
    check_byte("float_to_e4m3 of -0", -0.0, my_ops_float_to_e4m3(-0.0f), 0x80);
    check_byte("float_to_e4m3 of 2^-10 (a tie: 0)", 0x1p-10, my_ops_float_to_e4m3(0x1p-10f), 0x00);
    check_byte("float_to_e4m3 of -3 * 2^-10 (a tie)", -3 * 0x1p-10,
               my_ops_float_to_e4m3(-3 * 0x1p-10f), 0x82);

    int random_ok = 1, narrow_ok = 1;
    for (int i = 0; i < 200000 && random_ok; ++i) {
        const float v = (float)spread(-14, 10);
        if (my_ops_float_to_e4m3(v) != e4m3_nearest(v)) {
            fprintf(stderr, "FAIL float_to_e4m3(%.9g) = 0x%02x, want 0x%02x\n", v,
                    my_ops_float_to_e4m3(v), e4m3_nearest(v));
            random_ok = 0;
        }
    }
    for (int i = 0; i < 200000 && narrow_ok; ++i) {
        double v = spread(-14, 10);
        if (i % 2) { /* beside a random midpoint, closer than float's precision */
            const int c = (int)uniform(0, 125.999);
            const double midpoint = (e4m3_magnitudes[c] + e4m3_magnitudes[c + 1]) / 2;
            v = copysign(midpoint * (1 + spread(-50, -30)), v);
        }
        const uint8_t got = my_ops_float_to_e4m3(my_ops_fp8_narrow_double(v));
        if (got != e4m3_nearest(v)) {
            fprintf(stderr, "FAIL float_to_e4m3(narrow_double(%.17g)) = 0x%02x, want 0x%02x\n", v,
                    got, e4m3_nearest(v));
            narrow_ok = 0;
        }
    }
    checks_run += 2;
    checks_failed += !random_ok + !narrow_ok;
}

/* Bytes compared against the reference, and how many of them were the near-tie
 * allowance of fp8_byte_matches: main fails when that is over 1%. */
static long fp8_compared = 0, fp8_near_ties = 0;

/* A kernel's byte against the exact q = y / scale, where tol bounds how far the
 * kernel's own y / scale can lie from q (y in float32 or float64, times a rounded
 * reciprocal): the reference's byte, or where [q - tol, q + tol] reaches across a
 * rounding boundary, the neighbour one step across it (counted), nothing else. */
static int fp8_byte_matches(uint8_t got, double q, double tol) {
    ++fp8_compared;
    const uint8_t want = e4m3_nearest(q);
    if (got == want) return 1;
    if (isnan(q) || !(tol < INFINITY) || got == 0x7f || got == 0xff) return 0;
    const int lo = e4m3_rank(e4m3_nearest(q - tol)), hi = e4m3_rank(e4m3_nearest(q + tol));
    const int rank = e4m3_rank(got);
    if (lo <= rank && rank <= hi && abs(rank - e4m3_rank(want)) == 1) {
        ++fp8_near_ties;
        return 1;
    }
    return 0;
}

/* u of the arithmetic type: float32's, or float64's for float64 rows. */
static double unit_roundoff(my_ops_dtype t) { return t == MY_OPS_FLOAT64 ? 0x1p-53 : 0x1p-24; }

enum { FP8_STATIC, FP8_PER_TOKEN, FP8_PER_TOKEN_UB, FP8_MODES };
static const char *fp8_mode_name(int mode) {
    static const char *names[] = {"static scale", "per-token scales", "per-token scales, bound"};
    return names[mode];
}

/* A per-token scaling writing into scales, or a static one. */
static my_ops_fp8_scaling fp8_scaling(int mode, const float *scale, float *scales,
                                      const float *ub) {
    my_ops_fp8_scaling s = {NULL, NULL, NULL};
    if (mode == FP8_STATIC)
        s.static_scale = scale;
    else
        s.scales = scales;
    if (mode == FP8_PER_TOKEN_UB) s.scale_ub = ub;
    return s;
}

/* The largest |y| of a row that is not NaN (0 if none), and the largest error bound
 * of those values: the kernel's amax (a max of values each within err of y) is within
 * that of it. */
static double row_amax(const double *y, const double *err, int64_t n, double *amax_err) {
    double amax = 0, worst = 0;
    for (int64_t j = 0; j < n; ++j) {
        if (isnan(y[j])) continue;
        amax = fabs(y[j]) > amax ? fabs(y[j]) : amax;
        worst = err[j] > worst ? err[j] : worst;
    }
    if (amax_err) *amax_err = worst;
    return amax;
}

/* A call's fp8 output against the exact y of its rows (float64) with err bounding
 * the kernel's own y: per token (scales not NULL), each row's scale against
 * max(min(amax, ub) / 448, MY_OPS_FP8_MIN_SCALE) from the exact amax, within the
 * amax's error and a float32 rounding, and then the bytes against that scale;
 * static, the bytes of y / *static_scale. */
static void expect_fp8(const char *what, const uint8_t *out, const float *scales,
                       const float *static_scale, const float *ub, const double *y,
                       const double *err, int64_t rows, int64_t width) {
    if (scales != NULL) {
        ++checks_run;
        for (int64_t r = 0; r < rows; ++r) {
            double amax_err;
            const double amax = row_amax(y + r * width, err + r * width, width, &amax_err);
            const double bound = ub != NULL && *ub < amax ? *ub : amax;
            const double want = fmax(bound / 448, MY_OPS_FP8_MIN_SCALE);
            if (!(fabs(scales[r] - want) <= amax_err / 448 + want * 0x1p-23)) {
                fprintf(stderr, "FAIL %s: row %lld's scale %.9g, want %.9g (amax %.9g)\n", what,
                        (long long)r, scales[r], want, amax);
                ++checks_failed;
                break;
            }
        }
    }
    ++checks_run;
    for (int64_t i = 0; i < rows * width; ++i) {
        const double scale = scales != NULL ? scales[i / width] : *static_scale;
        const double q = y[i] / scale, tol = err[i] / fabs(scale);
        if (!fp8_byte_matches(out[i], q, tol)) {
            fprintf(stderr,
                    "FAIL %s at %lld: 0x%02x (%.9g), want 0x%02x (%.9g): y %.17g / scale %.9g "
                    "= %.17g (+- %.3g)\n",
                    what, (long long)i, out[i], e4m3_value(out[i]), e4m3_nearest(q),
                    e4m3_value(e4m3_nearest(q)), y[i], scale, q, tol);
            ++checks_failed;
            return;
        }
    }
}

/* Elements of `rows` rows of `width`, `stride` apart, up to the end of the last row. */
static int64_t strided_size(int64_t rows, int64_t width, int64_t stride) {
    return rows > 0 ? (rows - 1) * stride + width : 0;
}

static uint8_t *fp8_bytes(int64_t n) {
    uint8_t *p = malloc((size_t)(n > 0 ? n : 1));
    if (p == NULL) {
        fprintf(stderr, "out of memory\n");
        exit(2);
    }
    memset(p, 0xa5, (size_t)(n > 0 ? n : 1));
    return p;
}

/* The static scale of a test: y's largest magnitude maps to about 300 .. 500, so that
 * some values saturate; 1 when y is all zero or NaN. */
static float fp8_static_scale_for(const double *y, const double *err, int64_t n) {
    const double amax = row_amax(y, err, n, NULL);
    return amax > 0 ? (float)(amax / 448 * uniform(0.9, 1.5)) : 1.0f;
}

/* The bound of a per-token test: about the mean of the rows' amaxes, so that some
 * rows are capped and others not. */
static float fp8_bound_for(const double *y, const double *err, int64_t rows, int64_t width) {
    double sum = 0;
    for (int64_t r = 0; r < rows; ++r) sum += row_amax(y + r * width, err + r * width, width, NULL);
    return rows > 0 && sum > 0 ? (float)(sum / rows) : 1.0f;
}

/* RMSNorm's y from rows `in` (float64, dense), weight w, as the header defines it:
 * rstd * (x * w) with rstd = 1 / sqrt(mean(x^2) + eps). err bounds how far the
 * kernel's y / scale lies from y / scale, relative: a sum of squares in partials of
 * at most 8 + 8 + 7 additions per block (about 24 u), halved by the sqrt, with the
 * mean, eps, sqrt and reciprocal about 14 u in rstd; x * w and the product 2 u, the
 * rounded reciprocal of the scale and the product 2 u: 18 u, and 64 u with room
 * (u of float32, or of float64 for float64 rows). */
static void rms_norm_fp8_reference(my_ops_dtype t, const double *in, const double *w, int64_t rows,
                                   int64_t hidden, double eps, double *y, double *err) {
    const double u = unit_roundoff(t);
    for (int64_t r = 0; r < rows; ++r) {
        double ms = 0;
        for (int64_t j = 0; j < hidden; ++j) ms += in[r * hidden + j] * in[r * hidden + j];
        const double rstd = 1 / sqrt(ms / (double)hidden + eps);
        for (int64_t j = 0; j < hidden; ++j) {
            y[r * hidden + j] = rstd * (in[r * hidden + j] * w[j]);
            err[r * hidden + j] = fabs(y[r * hidden + j]) * 64 * u;
        }
    }
}

/* x + residual as the fused kernels add them: in float32 (float64 rows: in float64),
 * then rounded to t by set(), once. */
static double residual_sum(my_ops_dtype t, double a, double b) {
    return t == MY_OPS_FLOAT64 ? a + b : (double)((float)a + (float)b);
}

static double *doubles(int64_t n) {
    double *p = malloc(sizeof(double) * (size_t)(n > 0 ? n : 1));
    if (p == NULL) {
        fprintf(stderr, "out of memory\n");
        exit(2);
    }
    return p;
}

/* One rms_norm_fp8 call (residual NULL: without one) with the scaling of `mode`:
 * static scale *scale (NULL: one picked from y), the bound *ub (NULL: one picked)
 * for FP8_PER_TOKEN_UB; its bytes (out, rows x hidden) and scales (rows) against
 * the reference; x unchanged; the residual (a copy of it, with its padding) the
 * sum rounded to t, its padding untouched. out and scales stay for the caller. */
static void rms_norm_fp8_check(const char *label, my_ops_dtype t, my_ops_dtype wt, const void *x,
                               int64_t x_stride, const void *residual, int64_t res_stride,
                               const void *w, int64_t rows, int64_t hidden, int mode,
                               const float *scale, const float *ub, uint8_t *out, float *scales) {
    const double eps = 1e-6;
    const size_t size = my_ops_dtype_size(t);
    const int64_t x_size = strided_size(rows, hidden, x_stride),
                  res_size = residual ? strided_size(rows, hidden, res_stride) : 0,
                  n = rows * hidden;
    void *x_before = array(t, x_size, 1, 0), *res = array(t, res_size, 1, 0),
         *want_res = array(t, res_size, 1, 0);
    memcpy(x_before, x, (size_t)x_size * size);
    if (residual) memcpy(res, residual, (size_t)res_size * size);
    if (residual) memcpy(want_res, residual, (size_t)res_size * size);
    double *in = doubles(n), *wd = doubles(hidden), *y = doubles(n), *err = doubles(n);
    for (int64_t j = 0; j < hidden; ++j) wd[j] = get(wt, w, j);
    for (int64_t r = 0; r < rows; ++r)
        for (int64_t j = 0; j < hidden; ++j) {
            const double xv = get(t, x, r * x_stride + j);
            if (residual) {
                const int64_t i = r * res_stride + j;
                set(t, want_res, i, residual_sum(t, xv, get(t, residual, i)));
                in[r * hidden + j] = get(t, want_res, i);
            } else {
                in[r * hidden + j] = xv;
            }
        }
    rms_norm_fp8_reference(t, in, wd, rows, hidden, eps, y, err);
    const float chosen_scale = fp8_static_scale_for(y, err, n),
                chosen_ub = fp8_bound_for(y, err, rows, hidden);
    if (scale == NULL) scale = &chosen_scale;
    if (ub == NULL) ub = &chosen_ub;
    char what[200];
    snprintf(what, sizeof what,
             "%srms_norm_fp8 [%s, weight %s%s, %lld x %lld, strides %lld %lld, %s %.9g]", label,
             dtype_name(t), dtype_name(wt), residual ? ", residual" : "", (long long)rows,
             (long long)hidden, (long long)x_stride, (long long)res_stride, fp8_mode_name(mode),
             mode == FP8_STATIC         ? *scale
             : mode == FP8_PER_TOKEN_UB ? *ub
                                        : 0.0f);
    memset(out, 0xa5, (size_t)(n > 0 ? n : 1));
    expect_ok(what,
              my_ops_rms_norm_fp8_cpu(t, wt, x, x_stride, residual ? res : NULL, res_stride, w, out,
                                      fp8_scaling(mode, scale, scales, ub), rows, hidden, eps));
    expect_fp8(what, out, mode == FP8_STATIC ? NULL : scales, scale,
               mode == FP8_PER_TOKEN_UB ? ub : NULL, y, err, rows, hidden);
    ++checks_run;
    if (memcmp(x, x_before, (size_t)x_size * size) != 0 ||
        memcmp(res, want_res, (size_t)res_size * size) != 0) {
        fprintf(stderr, "FAIL %s: x changed, or the residual not the rounded sum\n", what);
        ++checks_failed;
    }
    if (n == 0) check_byte(what, 0, out[0], 0xa5); /* nothing written */
    free(x_before), free(res), free(want_res), free(in), free(wd), free(y), free(err);
}

/* Rows of `width` values of t, `stride` apart, in an allocation that ends where the
 * last row does (the sanitizers catch a read past it); all NaN until set, so that a
 * read of the padding between rows shows in the results. */
static void *fp8_rows(my_ops_dtype t, int64_t rows, int64_t width, int64_t stride) {
    return array(t, strided_size(rows, width, stride), 1, 0);
}

/* rms_norm_fp8 without and with a residual, each with every scaling, on rows of t
 * `x_stride` and `res_stride` apart (the width itself: dense) and a weight of wt.
 * Values over 18 binades, so that bytes of every magnitude occur. */
static void test_rms_norm_fp8(my_ops_dtype t, my_ops_dtype wt, int64_t rows, int64_t hidden,
                              int64_t x_stride, int64_t res_stride) {
    void *x = fp8_rows(t, rows, hidden, x_stride), *res = fp8_rows(t, rows, hidden, res_stride);
    void *w = array(wt, hidden, -2, 2);
    for (int64_t r = 0; r < rows; ++r)
        for (int64_t j = 0; j < hidden; ++j) {
            set(t, x, r * x_stride + j, spread(-16, 2));
            set(t, res, r * res_stride + j, spread(-16, 2));
        }
    uint8_t *out = fp8_bytes(rows * hidden);
    float *scales = array(MY_OPS_FLOAT32, rows, 1, 0);
    for (int fused = 0; fused < 2; ++fused)
        for (int mode = 0; mode < FP8_MODES; ++mode)
            rms_norm_fp8_check("", t, wt, x, x_stride, fused ? res : NULL, res_stride, w, rows,
                               hidden, mode, NULL, NULL, out, scales);
    free(x), free(res), free(w), free(out), free(scales);
}

static const my_ops_activation fp8_acts[] = {MY_OPS_SILU, MY_OPS_GELU, MY_OPS_GELU_TANH};
static const char *act_name(my_ops_activation act) {
    static const char *names[] = {"silu", "gelu", "gelu_tanh"};
    return names[act];
}

/* act(g) * up in float64 (torch's definitions: silu g sigmoid(g); gelu g Phi(g);
 * gelu_tanh g (1 + tanh(z)) / 2, z = sqrt(2 / pi) (g + 0.044715 g^3), here
 * g sigmoid(2z), the same without the cancellation), and in *err a bound on the
 * kernel's y / scale error: 64 u relative (exp 2e-7, erf 1.4 ulp, a few roundings);
 * gelu's 0.5 (1 + erf) is off by some u absolute (its cancellation where g < 0):
 * 8 u |g up| more; gelu_tanh's sigmoid of 2z, z off by ~7 u relative, by 8 u |2z|. */
static double act_and_mul_reference(my_ops_dtype t, my_ops_activation act, double g, double up,
                                    double *err) {
    const double u = unit_roundoff(t);
    double y = NAN;
    switch (act) {
    case MY_OPS_SILU:
        y = g / (1 + exp(-g)) * up;
        *err = fabs(y) * 64 * u;
        break;
    case MY_OPS_GELU:
        y = g * (0.5 * erfc(-g * 0.70710678118654752440)) * up;
        *err = fabs(y) * 64 * u + fabs(g * up) * 8 * u;
        break;
    case MY_OPS_GELU_TANH: {
        const double z2 = 2 * 0.79788456080286535588 * (g + 0.044715 * g * g * g);
        y = g / (1 + exp(-z2)) * up;
        *err = fabs(y) * (64 + 8 * fabs(z2)) * u;
        break;
    }
    }
    return y;
}

/* One act_and_mul_fp8 call on x ([rows, 2d], rows `x_stride` apart) with the scaling
 * of `mode` (scale, ub: NULL picks one, as rms_norm_fp8_check); out and scales stay. */
static void act_and_mul_fp8_check(const char *label, my_ops_dtype t, my_ops_activation act,
                                  const void *x, int64_t x_stride, int64_t rows, int64_t d,
                                  int mode, const float *scale, const float *ub, uint8_t *out,
                                  float *scales) {
    const size_t size = my_ops_dtype_size(t);
    const int64_t x_size = strided_size(rows, 2 * d, x_stride), n = rows * d;
    void *x_before = array(t, x_size, 1, 0);
    memcpy(x_before, x, (size_t)x_size * size);
    double *y = doubles(n), *err = doubles(n);
    for (int64_t r = 0; r < rows; ++r)
        for (int64_t j = 0; j < d; ++j)
            y[r * d + j] = act_and_mul_reference(t, act, get(t, x, r * x_stride + j),
                                                 get(t, x, r * x_stride + d + j), &err[r * d + j]);
    const float chosen_scale = fp8_static_scale_for(y, err, n),
                chosen_ub = fp8_bound_for(y, err, rows, d);
    if (scale == NULL) scale = &chosen_scale;
    if (ub == NULL) ub = &chosen_ub;
    char what[200];
    snprintf(what, sizeof what, "%s%s_and_mul_fp8 [%s, %lld x %lld, stride %lld, %s %.9g]", label,
             act_name(act), dtype_name(t), (long long)rows, (long long)d, (long long)x_stride,
             fp8_mode_name(mode),
             mode == FP8_STATIC         ? *scale
             : mode == FP8_PER_TOKEN_UB ? *ub
                                        : 0.0f);
    memset(out, 0xa5, (size_t)(n > 0 ? n : 1));
    expect_ok(what, my_ops_act_and_mul_fp8_cpu(t, act, x, x_stride, out,
                                               fp8_scaling(mode, scale, scales, ub), rows, d));
    expect_fp8(what, out, mode == FP8_STATIC ? NULL : scales, scale,
               mode == FP8_PER_TOKEN_UB ? ub : NULL, y, err, rows, d);
    ++checks_run;
    if (memcmp(x, x_before, (size_t)x_size * size) != 0) {
        fprintf(stderr, "FAIL %s: x changed\n", what);
        ++checks_failed;
    }
    if (n == 0) check_byte(what, 0, out[0], 0xa5); /* nothing written */
    free(x_before), free(y), free(err);
}

/* x [rows, 2d] of t, rows `stride` apart, for act: gates uniform in [-6, 6], up values
 * over 17 binades times 2^up_exp, of either sign. gelu's gates from -3.5 on: below,
 * 0.5 (1 + erf) cancels in float32 until its relative error spans fp8 steps (at -5,
 * Phi = 3e-7 against an error of 1e-7), bytes no reference can pin to one step. */
static void *act_and_mul_fp8_input(my_ops_dtype t, my_ops_activation act, int64_t rows, int64_t d,
                                   int64_t stride, double up_exp) {
    void *x = fp8_rows(t, rows, 2 * d, stride);
    for (int64_t r = 0; r < rows; ++r)
        for (int64_t j = 0; j < d; ++j) {
            set(t, x, r * stride + j, uniform(act == MY_OPS_GELU ? -3.5 : -6, 6));
            set(t, x, r * stride + d + j, spread(-14 + up_exp, 3 + up_exp));
        }
    return x;
}

/* Every activation with every scaling on rows `x_stride` apart (2d: dense). */
static void test_act_and_mul_fp8(my_ops_dtype t, int64_t rows, int64_t d, int64_t x_stride) {
    uint8_t *out = fp8_bytes(rows * d);
    float *scales = array(MY_OPS_FLOAT32, rows, 1, 0);
    for (int a = 0; a < 3; ++a) {
        void *x = act_and_mul_fp8_input(t, fp8_acts[a], rows, d, x_stride, 0);
        for (int mode = 0; mode < FP8_MODES; ++mode)
            act_and_mul_fp8_check("", t, fp8_acts[a], x, x_stride, rows, d, mode, NULL, NULL, out,
                                  scales);
        free(x);
    }
    free(out), free(scales);
}

/* NaN (fp8.h): a NaN y gives the NaN byte 0x7f and no part in its row's amax. In a
 * gated unit, NaN in a gate or an up value: that byte NaN, the row's scale from its
 * other values (checked against the reference's amax without the NaN); in RMSNorm,
 * a NaN in x (or the residual) makes the row's rstd NaN: every byte 0x7f, the floor
 * scale. */
static void test_fp8_nan(my_ops_dtype t) {
    const int64_t rows = 3, d = 21, stride = 2 * d + 3;
    uint8_t *out = fp8_bytes(rows * d);
    float *scales = array(MY_OPS_FLOAT32, rows, 1, 0);
    void *x;
    for (int a = 0; a < 3; ++a) {
        x = act_and_mul_fp8_input(t, fp8_acts[a], rows, d, stride, 0);
        set(t, x, 0 * stride + 2, NAN);      /* a gate (in abs_max's blocks of 16) */
        set(t, x, 1 * stride + d + 5, NAN);  /* an up value */
        set(t, x, 2 * stride + 19, NAN);     /* a gate past the last block of 16 */
        for (int mode = 0; mode < FP8_MODES; ++mode) {
            act_and_mul_fp8_check("NaN: ", t, fp8_acts[a], x, stride, rows, d, mode, NULL, NULL,
                                  out, scales);
            check_byte("NaN gate: act_and_mul_fp8's byte", NAN, out[2], 0x7f);
            check_byte("NaN up: act_and_mul_fp8's byte", NAN, out[d + 5], 0x7f);
            check_byte("NaN gate: act_and_mul_fp8's byte", NAN, out[2 * d + 19], 0x7f);
            for (int64_t r = 0; r < rows && mode != FP8_STATIC; ++r)
                check(scales[r] > MY_OPS_FP8_MIN_SCALE,
                      "NaN: act_and_mul_fp8's scale from the row's other values", (double)r,
                      scales[r], 0);
        }
        free(x);
    }
    free(out), free(scales);

    const int64_t hidden = 19, x_stride = hidden + 2;
    x = fp8_rows(t, rows, hidden, x_stride);
    void *res = fp8_rows(t, rows, hidden, hidden), *w = array(t, hidden, 0.5, 1.5);
    for (int64_t r = 0; r < rows; ++r)
        for (int64_t j = 0; j < hidden; ++j) {
            set(t, x, r * x_stride + j, uniform(-3, 3));
            set(t, res, r * hidden + j, uniform(-3, 3));
        }
    set(t, x, 1 * x_stride + 4, NAN);
    set(t, res, 2 * hidden + 7, NAN);
    out = fp8_bytes(rows * hidden);
    scales = array(MY_OPS_FLOAT32, rows, 1, 0);
    for (int fused = 0; fused < 2; ++fused)
        for (int mode = 0; mode < FP8_MODES; ++mode) {
            rms_norm_fp8_check("NaN: ", t, t, x, x_stride, fused ? res : NULL, hidden, w, rows,
                               hidden, mode, NULL, NULL, out, scales);
            for (int64_t r = 1; r < (fused ? 3 : 2); ++r) {
                int all_nan = 1;
                for (int64_t j = 0; j < hidden; ++j) all_nan &= out[r * hidden + j] == 0x7f;
                check(all_nan, "NaN: rms_norm_fp8's row all NaN bytes", (double)r, 0, 0);
                if (mode != FP8_STATIC)
                    check(scales[r] == MY_OPS_FP8_MIN_SCALE, "NaN: rms_norm_fp8's row floor scale",
                          (double)r, scales[r], MY_OPS_FP8_MIN_SCALE);
            }
            check(out[0] != 0x7f, "NaN: rms_norm_fp8's row 0 not NaN", 0, out[0], 0);
        }
    free(x), free(res), free(w), free(out), free(scales);
}

/* Rows of zeros: amax 0, the floor scale MY_OPS_FP8_MIN_SCALE exactly, zero bytes;
 * rows of no values (width 0): the floor scale; no rows at all: nothing written. */
static void test_fp8_zero_rows(my_ops_dtype t) {
    const int64_t rows = 3, d = 11, hidden = 17;
    float scales[3];
    uint8_t out[3 * 17];
    void *x;
    for (int a = 0; a < 3; ++a) {
        x = act_and_mul_fp8_input(t, fp8_acts[a], rows, d, 2 * d, 0);
        for (int64_t j = 0; j < d; ++j) set(t, x, 1 * 2 * d + d + j, 0); /* row 1: up all 0 */
        for (int mode = FP8_PER_TOKEN; mode < FP8_MODES; ++mode) {
            act_and_mul_fp8_check("zeros: ", t, fp8_acts[a], x, 2 * d, rows, d, mode, NULL, NULL,
                                  out, scales);
            check(scales[1] == MY_OPS_FP8_MIN_SCALE, "act_and_mul_fp8's zero row: floor scale", 1,
                  scales[1], MY_OPS_FP8_MIN_SCALE);
            int zero = 1;
            for (int64_t j = 0; j < d; ++j) zero &= (out[d + j] & 0x7f) == 0;
            check(zero, "act_and_mul_fp8's zero row: zero bytes", 1, 0, 0);
        }
        free(x);
    }
    x = fp8_rows(t, rows, hidden, hidden);
    void *w = array(t, hidden, 0.5, 1.5);
    for (int64_t i = 0; i < rows * hidden; ++i) set(t, x, i, i / hidden == 2 ? 0 : uniform(-3, 3));
    for (int mode = FP8_PER_TOKEN; mode < FP8_MODES; ++mode) {
        rms_norm_fp8_check("zeros: ", t, t, x, hidden, NULL, hidden, w, rows, hidden, mode, NULL,
                           NULL, out, scales);
        check(scales[2] == MY_OPS_FP8_MIN_SCALE, "rms_norm_fp8's zero row: floor scale", 2,
              scales[2], MY_OPS_FP8_MIN_SCALE);
        int zero = 1;
        for (int64_t j = 0; j < hidden; ++j) zero &= out[2 * hidden + j] == 0;
        check(zero, "rms_norm_fp8's zero row: +0 bytes", 2, 0, 0);
    }
    /* width 0: each row's scale the floor */
    const float ub = 1;
    for (int mode = FP8_PER_TOKEN; mode < FP8_MODES; ++mode) {
        for (int k = 0; k < 3; ++k) scales[k] = NAN;
        expect_ok("act_and_mul_fp8 d = 0",
                  my_ops_act_and_mul_fp8_cpu(t, MY_OPS_SILU, x, 4, out,
                                             fp8_scaling(mode, NULL, scales, &ub), rows, 0));
        check(scales[0] == MY_OPS_FP8_MIN_SCALE && scales[2] == MY_OPS_FP8_MIN_SCALE,
              "act_and_mul_fp8 d = 0: floor scales", 0, scales[0], MY_OPS_FP8_MIN_SCALE);
        for (int k = 0; k < 3; ++k) scales[k] = NAN;
        expect_ok("rms_norm_fp8 hidden = 0",
                  my_ops_rms_norm_fp8_cpu(t, t, x, 4, NULL, 4, w, out,
                                          fp8_scaling(mode, NULL, scales, &ub), rows, 0, 1e-6));
        check(scales[0] == MY_OPS_FP8_MIN_SCALE && scales[2] == MY_OPS_FP8_MIN_SCALE,
              "rms_norm_fp8 hidden = 0: floor scales", 0, scales[0], MY_OPS_FP8_MIN_SCALE);
    }
    free(x), free(w);
}

/* Static scales at IEEE division's edges (fp8.h, fp8_convert.h): zero gives +-448 and
 * NaN where y is 0 (-0: the signs flipped); a negative scale flips signs; subnormal
 * ones (whose reciprocal would overflow) and ones beyond 2^126 (whose reciprocal would
 * be subnormal) give y / scale all the same, zeros staying zero. With exact zeros
 * among the up values, and up values scaled so that y / scale falls in fp8's range
 * where t holds them (|y| < 6 * 2^(3 + up_exp) < FLT_MAX): the subnormal scales with
 * float64 rows, the large ones but with float16 rows; elsewhere y / scale saturates
 * or rounds to 0. */
static void test_fp8_special_scales(my_ops_dtype t) {
    const int64_t rows = 4, d = 23, stride = 2 * d + 1;
    uint8_t out[4 * 23];
    float scales[4];
    const float zeros[2] = {0.0f, -0.0f};
    const struct {
        float scale;
        double up_exp; /* where t is not float16: the up values' scale */
    } edges[] = {{-0.0123f, 0},  {0x1p-149f, -145}, {0x1p-140f, -136},
                 {1e-40f, -129}, {1e38f, 122},      {0x1.8p127f, 122}};
    for (int a = 0; a < 3; a += 2) {
        void *x = act_and_mul_fp8_input(t, fp8_acts[a], rows, d, stride, 0);
        for (int64_t r = 0; r < rows; ++r)
            set(t, x, r * stride + d + (r * 5) % d, r % 2 ? -0.0 : 0.0);
        for (int z = 0; z < 2; ++z) {
            act_and_mul_fp8_check("zero scale: ", t, fp8_acts[a], x, stride, rows, d, FP8_STATIC,
                                  &zeros[z], NULL, out, scales);
            int ok = 1;
            for (int64_t r = 0; r < rows; ++r)
                for (int64_t j = 0; j < d; ++j) {
                    double e;
                    const double y =
                        act_and_mul_reference(t, fp8_acts[a], get(t, x, r * stride + j),
                                              get(t, x, r * stride + d + j), &e);
                    const int negative = (y < 0) != (z == 1);
                    const uint8_t want = y == 0 || isnan(y) ? 0x7f : negative ? 0xfe : 0x7e;
                    ok &= out[r * d + j] == want;
                }
            check(ok, "zero scale: +-448, NaN for y = 0", zeros[z], 0, 0);
        }
        free(x);
        for (size_t e = 0; e < sizeof edges / sizeof edges[0]; ++e) {
            const double up_exp =
                t == MY_OPS_FLOAT16 || (t != MY_OPS_FLOAT64 && edges[e].up_exp < -120)
                    ? 0
                    : edges[e].up_exp;
            x = act_and_mul_fp8_input(t, fp8_acts[a], rows, d, stride, up_exp);
            for (int64_t r = 0; r < rows; ++r) set(t, x, r * stride + d + (r * 3) % d, 0.0);
            act_and_mul_fp8_check("edge scale: ", t, fp8_acts[a], x, stride, rows, d, FP8_STATIC,
                                  &edges[e].scale, NULL, out, scales);
            free(x);
        }
    }
}

/* Weight dtypes rms_norm_fp8 refuses, as rms_norm's: MY_OPS_BAD_DTYPE, nothing written.
 * An unknown activation or dtype for act_and_mul_fp8: refused likewise. */
static void test_fp8_refused(void) {
    const my_ops_dtype pairs[][2] = {
        {MY_OPS_FLOAT32, MY_OPS_FLOAT16},  {MY_OPS_FLOAT32, MY_OPS_FLOAT64},
        {MY_OPS_FLOAT64, MY_OPS_FLOAT32},  {MY_OPS_BFLOAT16, MY_OPS_FLOAT16},
        {MY_OPS_FLOAT16, MY_OPS_BFLOAT16}, {MY_OPS_FLOAT16, MY_OPS_FLOAT64},
        {MY_OPS_FLOAT32, MY_OPS_BFLOAT16}, {MY_OPS_BFLOAT16, MY_OPS_FLOAT64}};
    double x[4] = {1, 2, 3, 4}, w[4] = {1, 1, 1, 1}, res[4] = {5, 6, 7, 8};
    const float scale = 1;
    for (size_t i = 0; i < sizeof pairs / sizeof pairs[0]; ++i)
        for (int mode = 0; mode < FP8_MODES; ++mode)
            for (int fused = 0; fused < 2; ++fused) {
                const my_ops_dtype t = pairs[i][0], wt = pairs[i][1];
                uint8_t out[4] = {0xa5, 0xa5, 0xa5, 0xa5};
                float scales[1] = {-1};
                const int status =
                    my_ops_rms_norm_fp8_cpu(t, wt, x, 1, fused ? res : NULL, 1, w, out,
                                            fp8_scaling(mode, &scale, scales, &scale), 1, 1, 1e-6);
                ++checks_run;
                if (status != MY_OPS_BAD_DTYPE || out[0] != 0xa5 || scales[0] != -1 ||
                    res[0] != 5 || x[0] != 1) {
                    fprintf(stderr, "FAIL rms_norm_fp8 weight %s with %s rows not refused (%d)\n",
                            dtype_name(wt), dtype_name(t), status);
                    ++checks_failed;
                }
            }
    uint8_t out[2] = {0xa5, 0xa5};
    float scales[1] = {-1};
    check(my_ops_act_and_mul_fp8_cpu(MY_OPS_FLOAT64, (my_ops_activation)7, x, 2, out,
                                     fp8_scaling(FP8_PER_TOKEN, NULL, scales, NULL), 1,
                                     1) == MY_OPS_BAD_ARGUMENT &&
              out[0] == 0xa5 && scales[0] == -1,
          "act_and_mul_fp8 refuses an unknown activation", 7, 0, 0);
    check(my_ops_act_and_mul_fp8_cpu((my_ops_dtype)99, MY_OPS_SILU, x, 2, out,
                                     fp8_scaling(FP8_PER_TOKEN, NULL, scales, NULL), 1,
                                     1) == MY_OPS_BAD_DTYPE &&
              out[0] == 0xa5 && scales[0] == -1,
          "act_and_mul_fp8 refuses an unknown dtype", 99, 0, 0);
    check(my_ops_rms_norm_fp8_cpu((my_ops_dtype)99, (my_ops_dtype)99, x, 1, NULL, 1, w, out,
                                  fp8_scaling(FP8_PER_TOKEN, NULL, scales, NULL), 1, 1,
                                  1e-6) == MY_OPS_BAD_DTYPE &&
              out[0] == 0xa5 && scales[0] == -1,
          "rms_norm_fp8 refuses an unknown dtype", 99, 0, 0);
}

/* Every fp8 kernel for rows of t: dense rows and padded ones, widths off every
 * multiple of 8 and 16 (a single element too), and no rows at all. */
static void test_fp8_kernels(my_ops_dtype t) {
    const int sixteen_bit = t == MY_OPS_FLOAT16 || t == MY_OPS_BFLOAT16;
    for (int weight = 0; weight < 1 + sixteen_bit; ++weight) {
        const my_ops_dtype wt = weight ? MY_OPS_FLOAT32 : t;
        test_rms_norm_fp8(t, wt, 9, 203, 203, 203);
        test_rms_norm_fp8(t, wt, 5, 37, 45, 41);
        test_rms_norm_fp8(t, wt, 4, 1, 3, 1);
        test_rms_norm_fp8(t, wt, 0, 24, 30, 24);
    }
    test_act_and_mul_fp8(t, 7, 129, 258);
    test_act_and_mul_fp8(t, 5, 13, 31);
    test_act_and_mul_fp8(t, 4, 1, 3);
    test_act_and_mul_fp8(t, 0, 20, 45);
    test_fp8_nan(t);
    test_fp8_zero_rows(t);
    test_fp8_special_scales(t);
}

int main(int argc, char **argv) {
    rng_state = argc > 1 ? strtoull(argv[1], NULL, 10) : 12345u;
    printf("seed %llu\n", (unsigned long long)rng_state);
    e4m3_init();
    test_conversions();
    test_fp8_conversion();
    test_exp_f32();
    for (size_t i = 0; i < sizeof all_dtypes / sizeof all_dtypes[0]; ++i) {
        test_elementwise(all_dtypes[i]);
        test_matmul(all_dtypes[i]);
        test_rms_norm(all_dtypes[i], all_dtypes[i]);
        test_silu_and_mul(all_dtypes[i]);
        test_row_strides(all_dtypes[i]);
        test_fp8_kernels(all_dtypes[i]);
    }
    test_rms_norm(MY_OPS_FLOAT16, MY_OPS_FLOAT32);
    test_rms_norm(MY_OPS_BFLOAT16, MY_OPS_FLOAT32);
    test_rms_norm_refused_weights();
    test_fp8_refused();
    /* near ties are rare (a window of some u in an fp8 step of 1/16 .. 1/8): 1% at most */
    printf("fp8: %ld bytes compared, %ld near-tie allowances\n", fp8_compared, fp8_near_ties);
    check(fp8_near_ties <= fp8_compared / 100, "fp8 near-tie allowances at most 1%",
          (double)fp8_compared, (double)fp8_near_ties, fp8_compared / 100.0);
    if (my_ops_mul_cpu((my_ops_dtype)99, NULL, NULL, NULL, 0) != MY_OPS_BAD_DTYPE) {
        fprintf(stderr, "FAIL unknown dtype not rejected\n");
        ++checks_failed;
    }
    ++checks_run;
    printf("%d passed, %d failed\n", checks_run - checks_failed, checks_failed);
    return checks_failed == 0 ? 0 : 1;
}
