// RMSNorm on CUDA: forward and fused residual add (rms_norm_forward.cu),
// backward, dx and dweight (rms_norm_backward.cu). This header holds what
// both files share: the weight vector type, the generic kernel's block size
// and the (dtype, weight dtype) dispatch of the launchers.
//
// Inputs are rows with a row stride (a slice of a wider tensor is read in
// place); outputs are dense. Three paths, chosen per call:
//   - rows of at most 32 16-byte vectors (hidden <= 256 in bf16, the q/k-norm
//     of attention heads): a group of lanes of one warp per row (rows.cuh);
//   - longer rows: the row held in registers as vectors, so each input byte
//     is read from device memory once; nv vectors per thread over up to 256
//     threads, more threads for longer rows (the *_layout functions of each file).
//     Rows that are not a whole number of 16-byte vectors, or not aligned to
//     16 bytes, are held as the aligned vectors that cover them;
//   - in the backward, rows of vectors longer than its layouts hold: one
//     kernel for each row's statistics, then one that splits the columns
//     over the threads and the rows into chunks (rms_norm_backward.cu);
//   - anything else: a generic kernel that reads the row twice (the second
//     read mostly hits L1/L2).
// The forward and fused-add kernels share their bodies: kAdd adds the
// residual first (and writes it back). Measurements behind each choice:
// benchmarks/NOTES.md.
//
// Every kernel takes the rows' element type T and the weight's W: T, or float
// with 16-bit rows (mixed precision: float32 parameters, 16-bit activations;
// my_ops_rms_norm_weight_ok). A float weight is used as it is, never rounded
// to T; the weight of one 16-byte vector of rows is then 32 bytes (WeightVec).
#ifndef MY_OPS_CUDA_RMS_NORM_CUH
#define MY_OPS_CUDA_RMS_NORM_CUH

#include "../rms_norm.h"
#include "rows.cuh"

namespace my_ops {

constexpr int kGenericThreads = 256;

// The weights of one vector of T, stored as W: a 16-byte vector when W is T,
// two when W is float and T 16-bit. Aligned to 16 bytes only (not to its
// size): the launchers check 16-byte alignment, and a view of a float weight
// may start at any multiple of 16 bytes.
template <typename T, typename W> struct alignas(16) WeightVec {
    static constexpr int size = Vec<T>::size;
    W v[size];
};

}  // namespace my_ops

// Calls FN<T, W>(args...) for the rows' element type T (dtype) and the
// weight's W (weight_dtype); returns its result. Pairs other than
// my_ops_rms_norm_weight_ok's return cudaErrorInvalidValue.
#define MY_OPS_RMS_NORM_DISPATCH(dtype, weight_dtype, FN, ...)                            \
    if (weight_dtype == dtype) {                                                          \
        switch (dtype) {                                                                  \
        case MY_OPS_FLOAT32: return FN<float, float>(__VA_ARGS__);                        \
        case MY_OPS_FLOAT64: return FN<double, double>(__VA_ARGS__);                      \
        case MY_OPS_FLOAT16: return FN<__half, __half>(__VA_ARGS__);                      \
        case MY_OPS_BFLOAT16: return FN<__nv_bfloat16, __nv_bfloat16>(__VA_ARGS__);       \
        }                                                                                 \
    } else if (weight_dtype == MY_OPS_FLOAT32) {                                          \
        switch (dtype) {                                                                  \
        case MY_OPS_FLOAT16: return FN<__half, float>(__VA_ARGS__);                       \
        case MY_OPS_BFLOAT16: return FN<__nv_bfloat16, float>(__VA_ARGS__);              \
        default: break;                                                                   \
        }                                                                                 \
    }                                                                                     \
    return int(cudaErrorInvalidValue)

#endif  // MY_OPS_CUDA_RMS_NORM_CUH
