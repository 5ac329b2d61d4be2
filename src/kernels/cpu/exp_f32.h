/*
 * e^x for float32 in plain arithmetic (no libm call), so that loops over it
 * vectorize: the range reduction and polynomial of Cephes' expf. x = n ln2 + r
 * with |r| <= ln2 / 2 (ln2 split in two parts so r is exact), e^r from a
 * degree-7 polynomial, 2^n written into the exponent bits. Relative error
 * below 2e-7 on [-86.99, 88.72] (1.1e-7 measured against double exp); 0 below (where e^x < 2^-125.5, next to
 * the smallest normal float), +inf above, NaN for NaN.
 */
#ifndef MY_OPS_EXP_F32_H
#define MY_OPS_EXP_F32_H

#include <math.h>
#include <stdint.h>

#include "dtype_convert.h"

static inline float my_ops_exp_f32(float x) {
    const float hi = 88.72283905f;  /* log(FLT_MAX) */
    const float lo = -86.98997f;    /* -125.5 ln2: n >= -125, so 2^(n-1) stays normal */
    /* Clamp, and compute NaN on 0 (restored at the end): the conversion to int below needs a number. */
    float xc = x > hi ? hi : x;
    xc = xc < lo ? lo : xc;
    xc = xc == xc ? xc : 0.0f;
    /* round to the nearest integer: adding 1.5 * 2^23 leaves no fraction bits */
    const float round = 12582912.0f;
    const float n = (xc * 1.44269504088896341f + round) - round;
    float r = xc - n * 0.693359375f;
    r = r - n * -2.12194440e-4f;
    float p = 1.9875691500e-4f;
    p = p * r + 1.3981999507e-3f;
    p = p * r + 8.3334519073e-3f;
    p = p * r + 4.1665795894e-2f;
    p = p * r + 1.6666665459e-1f;
    p = p * r + 5.0000001201e-1f;
    p = p * (r * r) + r + 1.0f;
    /* 2^n as 2^(n-1) * 2: n reaches 128 at the top of the range, past the largest exponent */
    const float half_scale = my_ops_bits_to_float((uint32_t)((int32_t)n + 126) << 23);
    float result = p * half_scale * 2.0f;
    result = x > hi ? INFINITY : result;
    result = x < lo ? 0.0f : result;
    return x == x ? result : x;
}

#endif /* MY_OPS_EXP_F32_H */
