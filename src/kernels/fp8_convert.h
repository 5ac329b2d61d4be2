/*
 * float32 -> fp8 e4m3fn (torch.float8_e4m3fn: 4 exponent bits, bias 7, 3
 * mantissa bits, no infinity, NaN 0x7f/0xff, largest finite 448) in
 * software, for the C11 CPU kernels and for GPUs without the conversion
 * instruction (cuda/fp8.cu takes cvt.rn.satfinite.e4m3x2.f32 from sm_89 on,
 * which follows the same rule):
 *   - round to nearest, ties to even;
 *   - saturate: magnitudes >= 448, infinities included, give +-448;
 *   - NaN stays NaN: 0x7f whatever its sign, as the instruction gives (and
 *     CUDA's own software conversion); -0 stays -0.
 * torch's own .to(torch.float8_e4m3fn) rounds the same way but does not
 * saturate (magnitudes from 464 on become NaN): the kernels clamp first, as
 * vLLM's quantization does.
 */
#ifndef MY_OPS_KERNELS_FP8_CONVERT_H
#define MY_OPS_KERNELS_FP8_CONVERT_H

#include <stdint.h>
#ifndef __CUDACC__
#include <string.h>
#endif

#ifdef __CUDACC__
#define MY_OPS_FP8_MATH static __host__ __device__ __forceinline__
#else
#define MY_OPS_FP8_MATH static inline
#endif

/* The largest finite e4m3fn value, and the smallest scale the per-token
 * quantization gives (vLLM's floor: an all-zero row must not divide by 0). */
#define MY_OPS_FP8_MAX 448.0f
#define MY_OPS_FP8_MIN_SCALE (1.0f / (448.0f * 512.0f))

MY_OPS_FP8_MATH uint32_t my_ops_fp8_bits_of(float v) {
#ifdef __CUDA_ARCH__
    return __float_as_uint(v);
#else
    uint32_t bits;
    memcpy(&bits, &v, sizeof bits);
    return bits;
#endif
}

MY_OPS_FP8_MATH uint8_t my_ops_float_to_e4m3(float v) {
    const uint32_t bits = my_ops_fp8_bits_of(v);
    const uint8_t sign = (uint8_t)((bits >> 24) & 0x80u);
    const uint32_t magnitude = bits & 0x7fffffffu;
    if (magnitude > 0x7f800000u) return 0x7fu; /* NaN, of either sign */
    if (magnitude >= 0x43e00000u) return (uint8_t)(sign | 0x7eu); /* >= 448, inf: saturate */
    if (magnitude < 0x3c800000u) {
        /* below 2^-6, the smallest normal: multiples of 2^-9 (subnormals; 8 * 2^-9 is
           the smallest normal, whose code is 8 too). |v| * 2^9 < 8 is exact in float;
           adding 2^23 rounds it to an integer, ties to even. */
        const float scaled = (v < 0 ? -v : v) * 512.0f;
        const float rounded = (scaled + 8388608.0f) - 8388608.0f;
        return (uint8_t)(sign | (uint8_t)rounded);
    }
    /* normal: keep 3 of the 23 mantissa bits, rounding the 20 dropped ones to nearest
       even (a carry into the exponent is the correct result); exponent bias 127 -> 7 */
    const uint32_t rounded = magnitude + 0x7ffffu + ((magnitude >> 20) & 1u);
    return (uint8_t)(sign | ((rounded >> 20) - (120u << 3)));
}

MY_OPS_FP8_MATH float my_ops_fp8_float_of(uint32_t bits) {
#ifdef __CUDA_ARCH__
    return __uint_as_float(bits);
#else
    float v;
    memcpy(&v, &bits, sizeof v);
    return v;
#endif
}

/* float64 -> float32 rounded to odd: toward zero, the last bit set when any
 * were dropped. float keeps at least two bits more than fp8 wherever fp8
 * rounds, so rounding that to fp8 (nearest, ties to even) gives the float64's
 * own nearest fp8: one rounding, where (float) first would round twice (a
 * float64 just above a tie would round down onto it, then to even).
 * Beyond float's range: +-FLT_MAX, which saturates to +-448 as inf would. */
MY_OPS_FP8_MATH float my_ops_fp8_narrow_double(double v) {
    const float nearest = (float)v;
    if (!(nearest == nearest) || (double)nearest == v) return nearest; /* NaN, or exact */
    uint32_t bits = my_ops_fp8_bits_of(nearest);
    const double n = nearest < 0 ? -(double)nearest : (double)nearest, m = v < 0 ? -v : v;
    if (n > m) bits -= 1u; /* rounded away from zero (to inf included): one step back */
    return my_ops_fp8_float_of(bits | 1u);
}
MY_OPS_FP8_MATH float my_ops_fp8_narrow_float(float v) { return v; }

/* A static scale's y / scale is computed as (y * pre) * inv with
 * inv = 1 / (scale * pre): pre is 2^64 for |scale| < 2^-64 (a subnormal
 * scale's own reciprocal overflows to inf, and 0 * inf would make zeros NaN),
 * 2^-64 for |scale| > 2^64 (its reciprocal would lose bits below float's
 * normal range), else 1. Powers of two: both products are exact but for
 * overflow or underflow, where y / scale saturates or rounds to 0 anyway. So
 * every float32 scale gives y times its rounded reciprocal (within an ulp of
 * y / scale) with the special values of IEEE division: zero gives +-448 (NaN
 * for y = 0), a negative scale flips signs, NaN gives NaN. */
MY_OPS_FP8_MATH float my_ops_fp8_scale_prefactor(float scale) {
    const uint32_t magnitude = my_ops_fp8_bits_of(scale) & 0x7fffffffu;
    if (magnitude < 0x1f800000u) return 18446744073709551616.0f; /* below 2^-64: 2^64 */
    if (magnitude > 0x5f800000u) return 5.42101086242752217e-20f; /* above 2^64: 2^-64 */
    return 1.0f;
}

#endif /* MY_OPS_KERNELS_FP8_CONVERT_H */
