/*
 * The CPU erf's accuracy (src/kernels/cpu/erf_f32.h): its largest error, in
 * float32 ulps of the true value, against float64 erf at every float32 in
 * [0, 6] (erf is odd and the code symmetric in sign; from 4 on it returns 1).
 *
 *   gcc -std=gnu11 -O2 -Isrc/kernels/cpu benchmarks/tuning/erf_ulp.c -lm && ./a.out
 *   (add -march=x86-64-v3 for what the FMA clones compute: contracted multiply-adds)
 */
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include "erf_f32.h"

/* a float32 ulp at v: 2^(e - 23) for |v| in [2^e, 2^(e + 1)), the subnormals' below 2^-126 */
static double ulp_of(double v) {
    int e;
    frexp(fabs(v), &e); /* |v| in [2^(e - 1), 2^e) */
    if (e - 1 < -126) e = -125;
    return ldexp(1.0, e - 1 - 23);
}

int main(void) {
    double worst = 0;
    float at = 0, six = 6.0f;
    uint32_t last;
    memcpy(&last, &six, sizeof last);
    for (uint32_t bits = 0; bits <= last; ++bits) {
        float x;
        memcpy(&x, &bits, sizeof x);
        const double want = erf((double)x);
        const double err = fabs((double)my_ops_erf_f32(x) - want) / ulp_of(want);
        if (err > worst) {
            worst = err;
            at = x;
        }
    }
    printf("max %.4f ulp at x = %.9g\n", worst, at);
    return 0;
}
