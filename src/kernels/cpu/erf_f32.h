/*
 * erf for float32 in plain arithmetic (no libm call), so that loops over it
 * vectorize, as exp_f32.h does for exp: libm's erff is a call per element,
 * which made the erf GELU the one gated unit slower than PyTorch's on the CPU.
 * Both branches are computed and one is selected (no branch in the loop):
 *   |x| < 1:      x + x P(x^2), P of degree 8 in x^2;
 *   1 <= |x| < 4: 1 - exp(-x^2) erfcx(|x|), erfcx(x) = exp(x^2) erfc(x) a
 *                 polynomial of degree 12 in |x| - 2.5 (no cancellation:
 *                 erfc(x) <= 0.16 there);
 *   |x| >= 4:     +-1, what erf rounds to in float32.
 * The polynomials are least-squares fits of relative error on Chebyshev nodes
 * (in float64, coefficients rounded to float32). Measured against float64
 * erf at every float32 in [0, 6]: at most 1.37 ulp (1.366, at 0.99877) with
 * each multiply and add rounded, 1.10 where the compiler fuses them (x86-64-v3
 * and v4 clones); tests/ops/test_cpu_accuracy.py checks the gelu built on it.
 * NaN stays NaN.
 */
#ifndef MY_OPS_ERF_F32_H
#define MY_OPS_ERF_F32_H

#include "exp_f32.h"

static inline float my_ops_erf_f32(float a) {
    float ax = a < 0 ? -a : a;
    /* |x| < 1: x + x P(x^2), P(0) = 2 / sqrt(pi) - 1: P's rounding errors shrink by its size */
    const float s = ax * ax;
    float p = 1.0557115501796943e-06f;
    p = p * s + -1.3896335076424293e-05f;
    p = p * s + 0.00011954430374316871f;
    p = p * s + -0.0008542455616407096f;
    p = p * s + 0.005223774816840887f;
    p = p * s + -0.026866130530834198f;
    p = p * s + 0.11283791065216064f;
    p = p * s + -0.37612637877464294f;
    p = p * s + 0.12837916709456532f;
    const float small = a + a * p; /* (its sign is a's, -0 included) */
    /* 1 <= |x| < 4: 1 - exp(-x^2) erfcx(x), erfcx a polynomial in u = |x| - 2.5 */
    float xl = ax > 4.0f ? 4.0f : ax;
    const float u = xl - 2.5f;
    float r = 9.592292826710036e-08f;
    r = r * u + -4.237685971020255e-07f;
    r = r * u + 1.0235056606688886e-06f;
    r = r * u + -3.7638258163497085e-06f;
    r = r * u + 1.599714596522972e-05f;
    r = r * u + -5.948642501607537e-05f;
    r = r * u + 0.00021105114137753844f;
    r = r * u + -0.0007331884698942304f;
    r = r * u + 0.0024669975973665714f;
    r = r * u + -0.008001679554581642f;
    r = r * u + 0.024938007816672325f;
    r = r * u + -0.07434733957052231f;
    r = r * u + 0.21080636978149414f;
    const float large = 1.0f - my_ops_exp_f32(-xl * xl) * r;
    float result = ax >= 4.0f ? 1.0f : large;
    result = a < 0 ? -result : result;
    result = ax < 1.0f ? small : result;
    return a == a ? result : a;
}

#endif /* MY_OPS_ERF_F32_H */
