/*
 * One kernel body, four element types. A kernel file writes its body once in
 * a *_impl.h file over (SUFFIX, T, ACC, LOAD, STORE), instantiates it for
 * every dtype by including for_each_dtype.h, and picks the instance at run
 * time with MY_OPS_DISPATCH. T is the storage type, ACC the arithmetic type.
 */
#ifndef MY_OPS_CPU_DISPATCH_H
#define MY_OPS_CPU_DISPATCH_H

#include <math.h>

#include "../common.h"
#include "dtype_convert.h"
#include "exp_f32.h"

static inline float my_ops_load_f32(float v) { return v; }
static inline float my_ops_store_f32(float v) { return v; }
static inline double my_ops_load_f64(double v) { return v; }
static inline double my_ops_store_f64(double v) { return v; }

/* Token pasting after macro expansion: MY_OPS_CAT(silu_, ACC) is silu_float. */
#define MY_OPS_CAT_(a, b) a##b
#define MY_OPS_CAT(a, b) MY_OPS_CAT_(a, b)
/* The name of a *_impl.h function for the dtype being instantiated: base_SUFFIX. */
#define MY_OPS_NAME(base) MY_OPS_CAT(MY_OPS_CAT(base, _), SUFFIX)

/* `CALL(suffix)` must be an expression returning int (a my_ops_status). */
#define MY_OPS_DISPATCH(dtype, CALL)                                               \
    switch (dtype) {                                                               \
    case MY_OPS_FLOAT32: return CALL(f32);                                         \
    case MY_OPS_FLOAT64: return CALL(f64);                                         \
    case MY_OPS_FLOAT16: return CALL(f16);                                         \
    case MY_OPS_BFLOAT16: return CALL(bf16);                                       \
    }                                                                              \
    return MY_OPS_BAD_DTYPE

/* The same with one more leading argument: `CALL(arg, suffix)`. */
#define MY_OPS_DISPATCH_WITH(dtype, CALL, arg)                                     \
    switch (dtype) {                                                               \
    case MY_OPS_FLOAT32: return CALL(arg, f32);                                    \
    case MY_OPS_FLOAT64: return CALL(arg, f64);                                    \
    case MY_OPS_FLOAT16: return CALL(arg, f16);                                    \
    case MY_OPS_BFLOAT16: return CALL(arg, bf16);                                  \
    }                                                                              \
    return MY_OPS_BAD_DTYPE

/* Type-generic math on the accumulator type (C11 _Generic). */
/* float: a polynomial that vectorizes (exp_f32.h); libm's expf is a call per element */
#define MY_OPS_EXP(x) _Generic((x), float: my_ops_exp_f32, double: exp)(x)
#define MY_OPS_SQRT(x) _Generic((x), float: sqrtf, double: sqrt)(x)

#endif /* MY_OPS_CPU_DISPATCH_H */
