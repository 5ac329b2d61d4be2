/*
 * Includes the file named by MY_OPS_IMPL once per element type, so a kernel
 * file writes its type-generic functions once, as real code (errors and
 * debuggers point at lines of the *_impl.h file), in terms of:
 *
 *   T       the storage type (uint16_t holds float16 and bfloat16 bits)
 *   ACC     the arithmetic type: float, or double for float64
 *   LOAD    T -> ACC
 *   STORE   ACC -> T, rounded to nearest even
 *   SUFFIX  f32, f64, f16 or bf16; MY_OPS_NAME(base) is base_SUFFIX
 *
 *   #define MY_OPS_IMPL "rms_norm_impl.h"
 *   #include "for_each_dtype.h"
 *
 * No include guard: a file may include it several times (act_and_mul.c
 * does, once per activation). MY_OPS_DISPATCH (dispatch.h) picks an
 * instance at run time.
 */
#include "dispatch.h"

#ifndef MY_OPS_IMPL
#error "define MY_OPS_IMPL as the file to include once per dtype"
#endif

#define SUFFIX f32
#define T float
#define ACC float
#define LOAD my_ops_load_f32
#define STORE my_ops_store_f32
#include MY_OPS_IMPL
#undef SUFFIX
#undef T
#undef ACC
#undef LOAD
#undef STORE

#define SUFFIX f64
#define T double
#define ACC double
#define LOAD my_ops_load_f64
#define STORE my_ops_store_f64
#include MY_OPS_IMPL
#undef SUFFIX
#undef T
#undef ACC
#undef LOAD
#undef STORE

#define SUFFIX f16
#define T uint16_t
#define ACC float
#define LOAD my_ops_half_to_float
#define STORE my_ops_float_to_half
#include MY_OPS_IMPL
#undef SUFFIX
#undef T
#undef ACC
#undef LOAD
#undef STORE

#define SUFFIX bf16
#define T uint16_t
#define ACC float
#define LOAD my_ops_bf16_to_float
#define STORE my_ops_float_to_bf16
#include MY_OPS_IMPL
#undef SUFFIX
#undef T
#undef ACC
#undef LOAD
#undef STORE
