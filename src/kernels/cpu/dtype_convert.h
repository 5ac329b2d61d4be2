/*
 * Conversions between float32 and the 16-bit float formats, in portable C11.
 * Round-to-nearest-even, NaN stays NaN, overflow goes to infinity: the same
 * results as PyTorch's own conversions, so CPU outputs match bit for bit
 * where the arithmetic matches.
 */
#ifndef MY_OPS_DTYPE_CONVERT_H
#define MY_OPS_DTYPE_CONVERT_H

#include <stdint.h>
#include <string.h>

static inline float my_ops_bits_to_float(uint32_t bits) {
    float f;
    memcpy(&f, &bits, sizeof f);
    return f;
}

static inline uint32_t my_ops_float_to_bits(float f) {
    uint32_t bits;
    memcpy(&bits, &f, sizeof bits);
    return bits;
}

static inline float my_ops_bf16_to_float(uint16_t value) {
    return my_ops_bits_to_float((uint32_t)value << 16);
}

static inline uint16_t my_ops_float_to_bf16(float value) {
    uint32_t bits = my_ops_float_to_bits(value);
    if ((bits & 0x7fffffffu) > 0x7f800000u) {
        return (uint16_t)((bits >> 16) | 0x0040u); /* quiet NaN */
    }
    bits += 0x7fffu + ((bits >> 16) & 1u); /* round to nearest even */
    return (uint16_t)(bits >> 16);
}

static inline float my_ops_half_to_float(uint16_t value) {
    uint32_t sign = (uint32_t)(value & 0x8000u) << 16;
    uint32_t exponent = (value >> 10) & 0x1fu;
    uint32_t mantissa = value & 0x3ffu;
    if (exponent == 0x1fu) { /* infinity or NaN */
        return my_ops_bits_to_float(sign | 0x7f800000u | (mantissa << 13));
    }
    if (exponent == 0) { /* zero or subnormal: mantissa * 2^-24, exact in float */
        float magnitude = (float)mantissa * 5.9604644775390625e-08f;
        return sign ? -magnitude : magnitude;
    }
    return my_ops_bits_to_float(sign | ((exponent + 112u) << 23) | (mantissa << 13));
}

static inline uint16_t my_ops_float_to_half(float value) {
    uint32_t bits = my_ops_float_to_bits(value);
    uint16_t sign = (uint16_t)((bits >> 16) & 0x8000u);
    uint32_t magnitude = bits & 0x7fffffffu;
    if (magnitude >= 0x7f800000u) { /* infinity or NaN */
        return (uint16_t)(sign | 0x7c00u | (magnitude > 0x7f800000u ? 0x0200u : 0u));
    }
    if (magnitude >= 0x477ff000u) { /* rounds to >= 65520: overflow */
        return (uint16_t)(sign | 0x7c00u);
    }
    if (magnitude < 0x38800000u) { /* below 2^-14: half subnormal or zero */
        uint32_t exponent = magnitude >> 23;
        uint32_t shift = 126u - exponent; /* value = mantissa24 * 2^-shift half ulps */
        if (exponent == 0 || shift >= 25u) {
            return sign;
        }
        uint32_t mantissa = (magnitude & 0x7fffffu) | 0x800000u;
        uint32_t result = mantissa >> shift;
        uint32_t remainder = mantissa & ((1u << shift) - 1u);
        uint32_t halfway = 1u << (shift - 1u);
        if (remainder > halfway || (remainder == halfway && (result & 1u))) {
            result++;
        }
        return (uint16_t)(sign | result);
    }
    uint32_t result = ((magnitude >> 23) - 112u) << 10 | ((magnitude >> 13) & 0x3ffu);
    uint32_t remainder = magnitude & 0x1fffu;
    if (remainder > 0x1000u || (remainder == 0x1000u && (result & 1u))) {
        result++; /* a carry into the exponent is the correct rounding */
    }
    return (uint16_t)(sign | result);
}

#endif /* MY_OPS_DTYPE_CONVERT_H */
