// Shared pieces of the CUDA kernels: element types, 16-byte vectors, block
// reductions, launch helpers and the dtype -> template dispatch.
// No torch header here: the launchers are declared in ../<family>.h, in C.
#ifndef MY_OPS_CUDA_COMMON_CUH
#define MY_OPS_CUDA_COMMON_CUH

#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <cuda_runtime.h>
#include <stdint.h>

#include "../common.h"

namespace my_ops {

// Arithmetic type: float32 for the 16-bit types and float32, float64 for float64.
template <typename T> struct AccType {
    using type = float;
};
template <> struct AccType<double> {
    using type = double;
};
template <typename T> using acc_t = typename AccType<T>::type;

__device__ __forceinline__ float to_acc(float v) { return v; }
__device__ __forceinline__ double to_acc(double v) { return v; }
__device__ __forceinline__ float to_acc(__half v) { return __half2float(v); }
__device__ __forceinline__ float to_acc(__nv_bfloat16 v) { return __bfloat162float(v); }

template <typename T> __device__ __forceinline__ T from_acc(acc_t<T> v);
template <> __device__ __forceinline__ float from_acc<float>(float v) { return v; }
template <> __device__ __forceinline__ double from_acc<double>(double v) { return v; }
template <> __device__ __forceinline__ __half from_acc<__half>(float v) {
    return __float2half_rn(v);
}
template <> __device__ __forceinline__ __nv_bfloat16 from_acc<__nv_bfloat16>(float v) {
    return __float2bfloat16_rn(v);
}

__device__ __forceinline__ float reciprocal_sqrt(float v) { return rsqrtf(v); }
__device__ __forceinline__ double reciprocal_sqrt(double v) { return 1.0 / sqrt(v); }
__device__ __forceinline__ float exp_acc(float v) { return __expf(v); }
__device__ __forceinline__ double exp_acc(double v) { return exp(v); }
// 1 / v for v >= 1 (a sigmoid's denominator): the approximate hardware
// reciprocal (2 ulp; 0 above 2^126, where 1 / v is below float's normal range
// anyway) for float, exact division for double. __frcp_rn, the IEEE-rounded
// reciprocal, costs a range check and a slow-path branch per element:
// silu_and_mul's backward measured well below copy speed with it, and
// slower than the tanh GELU's (see benchmarks/NOTES.md).
__device__ __forceinline__ float reciprocal(float v) { return __fdividef(1.0f, v); }
__device__ __forceinline__ double reciprocal(double v) { return 1.0 / v; }

// N elements of T loaded and stored as one; by default 16 bytes: one
// LDG.128 / STG.128 per vector.
template <typename T, int N = int(16 / sizeof(T))> struct alignas(sizeof(T) * N) Vec {
    static constexpr int size = N;
    T v[N];
};

inline bool is_aligned16(const void *p) { return (reinterpret_cast<uintptr_t>(p) & 15u) == 0; }

// Sum over the block; every thread gets the result. `scratch` holds 32 values.
template <typename A> __device__ __forceinline__ A warp_sum(A v) {
#pragma unroll
    for (int offset = 16; offset > 0; offset >>= 1) v += __shfl_xor_sync(0xffffffffu, v, offset);
    return v;
}

template <typename A> __device__ __forceinline__ A block_sum(A v, A *scratch) {
    const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5;
    const int warps = (blockDim.x + 31) >> 5;
    v = warp_sum(v);
    __syncthreads();  // scratch may still be read from a previous call
    if (lane == 0) scratch[warp] = v;
    __syncthreads();
    v = lane < warps ? scratch[lane] : A(0);
    return warp_sum(v);
}

// Two sums over the block at once (one pair of barriers instead of two).
template <typename A> struct Pair2 {
    A a, b;
};

template <typename A> __device__ __forceinline__ Pair2<A> block_sum2(A a, A b, Pair2<A> *scratch) {
    const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5;
    const int warps = (blockDim.x + 31) >> 5;
    a = warp_sum(a);
    b = warp_sum(b);
    __syncthreads();
    if (lane == 0) scratch[warp] = Pair2<A>{a, b};
    __syncthreads();
    a = lane < warps ? scratch[lane].a : A(0);
    b = lane < warps ? scratch[lane].b : A(0);
    return Pair2<A>{warp_sum(a), warp_sum(b)};
}

// Multiprocessors of the current device, cached per device.
int sm_count();

inline int64_t ceil_div(int64_t a, int64_t b) { return (a + b - 1) / b; }

// Grid for a grid-stride loop over `work` items with `threads` per block:
// enough blocks to fill the device several times, no more.
inline unsigned grid_for(int64_t work, int threads) {
    const int64_t wanted = ceil_div(work, threads);
    const int64_t cap = int64_t(sm_count()) * (2048 / threads) * 4;
    return unsigned(wanted < cap ? (wanted > 0 ? wanted : 1) : cap);
}

}  // namespace my_ops

// Calls FN<T>(args...) for the element type named by `dtype`; returns its result.
#define MY_OPS_CUDA_DISPATCH(dtype, FN, ...)                                    \
    switch (dtype) {                                                            \
    case MY_OPS_FLOAT32: return FN<float>(__VA_ARGS__);                         \
    case MY_OPS_FLOAT64: return FN<double>(__VA_ARGS__);                        \
    case MY_OPS_FLOAT16: return FN<__half>(__VA_ARGS__);                        \
    case MY_OPS_BFLOAT16: return FN<__nv_bfloat16>(__VA_ARGS__);                \
    }                                                                           \
    return int(cudaErrorInvalidValue)

#endif  // MY_OPS_CUDA_COMMON_CUH
