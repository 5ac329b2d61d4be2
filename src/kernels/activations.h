/*
 * The activations of the gated units (act_and_mul and its fp8 form), written
 * once for the C11 CPU kernels and the CUDA kernels: each activation's value
 * and derivative as inline functions in float and in double
 * (activations_impl.h, included once per type below), and MY_OPS_ACTIVATIONS,
 * the one list of activations from which the enum (act_and_mul.h), the CPU
 * instances (cpu/act_and_mul.c) and the CUDA switch (cuda/act_and_mul.cu)
 * are generated.
 *
 * The primitives differ by compiler, the formulas do not: the CPU takes exp
 * and erf in plain arithmetic that vectorizes (cpu/exp_f32.h, cpu/erf_f32.h),
 * CUDA its fast intrinsics.
 */
#ifndef MY_OPS_KERNELS_ACTIVATIONS_H
#define MY_OPS_KERNELS_ACTIVATIONS_H

/* X(name, ENUM, value): every activation of the gated units, in enum order.
 * name is the C name of its functions (name_float, name_grad_float, ...). */
#define MY_OPS_ACTIVATIONS(X)    \
    X(silu, MY_OPS_SILU, 0)      \
    X(gelu, MY_OPS_GELU, 1)      \
    X(gelu_tanh, MY_OPS_GELU_TANH, 2)

#define MY_OPS_GELU_TANH_K 0.79788456080286535588 /* sqrt(2 / pi) */
#define MY_OPS_GELU_TANH_C 0.044715
#define MY_OPS_INV_SQRT_2PI 0.39894228040143267794
#define MY_OPS_INV_SQRT_2 0.70710678118654752440

/* A function both compilers build: host and device code under nvcc. */
#ifdef __CUDACC__
#define MY_OPS_MATH static __host__ __device__ __forceinline__
#else
#define MY_OPS_MATH static inline
#endif

#define MY_OPS_ACT_CAT_(a, b) a##b
#define MY_OPS_ACT_CAT(a, b) MY_OPS_ACT_CAT_(a, b)

#ifdef __CUDACC__
#include <math.h>
/* 1 / v for v >= 1 (a sigmoid's denominator): the approximate hardware
   reciprocal for float (2 ulp; an IEEE division costs a slow-path branch per
   element), exact division for double. */
#ifdef __CUDA_ARCH__
#define MY_OPS_RCP_FLOAT(v) __fdividef(1.0f, (v))
#define MY_OPS_EXP_FLOAT(v) __expf(v)
#else
#define MY_OPS_RCP_FLOAT(v) (1.0f / (v))
#define MY_OPS_EXP_FLOAT(v) expf(v)
#endif
#define MY_OPS_ERF_FLOAT(v) erff(v)
#else
#include "cpu/erf_f32.h"
#include "cpu/exp_f32.h"
#define MY_OPS_RCP_FLOAT(v) (1.0f / (v))
#define MY_OPS_EXP_FLOAT(v) my_ops_exp_f32(v)
#define MY_OPS_ERF_FLOAT(v) my_ops_erf_f32(v)
#endif

#define ACC float
#define EXP MY_OPS_EXP_FLOAT
#define ERF MY_OPS_ERF_FLOAT
#define RCP MY_OPS_RCP_FLOAT
#include "activations_impl.h"
#undef ACC
#undef EXP
#undef ERF
#undef RCP

#define MY_OPS_RCP_DOUBLE(v) (1.0 / (v))
#define ACC double
#define EXP exp
#define ERF erf
#define RCP MY_OPS_RCP_DOUBLE
#include "activations_impl.h"
#undef ACC
#undef EXP
#undef ERF
#undef RCP

/* The activation numbered `act` (a my_ops_activation) and its derivative, in
 * float and double: a switch generated from MY_OPS_ACTIVATIONS, which the
 * compiler folds away wherever `act` is a constant (each kernel instance). */
#define MY_OPS_ACTIVATION_CASE(name, ENUM, value) \
    case value: return MY_OPS_ACT_CAT(name, _float)(g);
#define MY_OPS_ACTIVATION_GRAD_CASE(name, ENUM, value) \
    case value: return MY_OPS_ACT_CAT(name, _grad_float)(g);
MY_OPS_MATH float my_ops_activation_float(int act, float g) {
    switch (act) { MY_OPS_ACTIVATIONS(MY_OPS_ACTIVATION_CASE) }
    return g;
}
MY_OPS_MATH float my_ops_activation_grad_float(int act, float g) {
    switch (act) { MY_OPS_ACTIVATIONS(MY_OPS_ACTIVATION_GRAD_CASE) }
    return g;
}
#undef MY_OPS_ACTIVATION_CASE
#undef MY_OPS_ACTIVATION_GRAD_CASE
#define MY_OPS_ACTIVATION_CASE(name, ENUM, value) \
    case value: return MY_OPS_ACT_CAT(name, _double)(g);
#define MY_OPS_ACTIVATION_GRAD_CASE(name, ENUM, value) \
    case value: return MY_OPS_ACT_CAT(name, _grad_double)(g);
MY_OPS_MATH double my_ops_activation_double(int act, double g) {
    switch (act) { MY_OPS_ACTIVATIONS(MY_OPS_ACTIVATION_CASE) }
    return g;
}
MY_OPS_MATH double my_ops_activation_grad_double(int act, double g) {
    switch (act) { MY_OPS_ACTIVATIONS(MY_OPS_ACTIVATION_GRAD_CASE) }
    return g;
}
#undef MY_OPS_ACTIVATION_CASE
#undef MY_OPS_ACTIVATION_GRAD_CASE

#endif /* MY_OPS_KERNELS_ACTIVATIONS_H */
