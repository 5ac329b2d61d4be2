// SiLU-and-mul (SwiGLU gate) on CUDA, forward and backward.
// x is [rows, 2d]: gate = x[:, :d], up = x[:, d:]. A grid-stride loop over
// the [rows, d] outputs, 16-byte vectors when d is a whole number of vectors
// and the pointers are aligned.
#include "common.cuh"

namespace my_ops {
namespace {

template <typename A> __device__ __forceinline__ A sigmoid(A g) { return reciprocal(A(1) + exp_acc(-g)); }

template <typename T, bool kVec>
__global__ void silu_and_mul_kernel(const T *__restrict__ x, T *__restrict__ out, int64_t rows,
                                    int64_t d) {
    using A = acc_t<T>;
    using V = Vec<T>;
    constexpr int W = kVec ? V::size : 1;  // elements per item
    const int64_t per_row = d / W;
    const int64_t total = rows * per_row;
    for (int64_t i = int64_t(blockIdx.x) * blockDim.x + threadIdx.x; i < total;
         i += int64_t(gridDim.x) * blockDim.x) {
        const int64_t row = i / per_row, col = (i - row * per_row) * W;
        const T *gate = x + row * 2 * d + col;
        T *o = out + row * d + col;
        if constexpr (kVec) {
            const V g = *reinterpret_cast<const V *>(gate);
            const V u = *reinterpret_cast<const V *>(gate + d);
            V r;
#pragma unroll
            for (int e = 0; e < W; ++e) {
                const A gv = to_acc(g.v[e]);
                r.v[e] = from_acc<T>(gv * sigmoid(gv) * to_acc(u.v[e]));
            }
            *reinterpret_cast<V *>(o) = r;
        } else {
            const A gv = to_acc(gate[0]);
            o[0] = from_acc<T>(gv * sigmoid(gv) * to_acc(gate[d]));
        }
    }
}

// grad_gate = dy * up * s * (1 + g * (1 - s)), grad_up = dy * g * s, s = sigmoid(g)
template <typename T, bool kVec>
__global__ void silu_and_mul_backward_kernel(const T *__restrict__ grad_out,
                                             const T *__restrict__ x, T *__restrict__ grad_x,
                                             int64_t rows, int64_t d) {
    using A = acc_t<T>;
    using V = Vec<T>;
    constexpr int W = kVec ? V::size : 1;
    const int64_t per_row = d / W;
    const int64_t total = rows * per_row;
    for (int64_t i = int64_t(blockIdx.x) * blockDim.x + threadIdx.x; i < total;
         i += int64_t(gridDim.x) * blockDim.x) {
        const int64_t row = i / per_row, col = (i - row * per_row) * W;
        const T *gate = x + row * 2 * d + col;
        const T *dy = grad_out + row * d + col;
        T *grad_gate = grad_x + row * 2 * d + col;
        if constexpr (kVec) {
            const V g = *reinterpret_cast<const V *>(gate);
            const V u = *reinterpret_cast<const V *>(gate + d);
            const V dyv = *reinterpret_cast<const V *>(dy);
            V gg, gu;
#pragma unroll
            for (int e = 0; e < W; ++e) {
                const A gv = to_acc(g.v[e]), uv = to_acc(u.v[e]), dv = to_acc(dyv.v[e]);
                const A s = sigmoid(gv);
                gg.v[e] = from_acc<T>(dv * uv * s * (A(1) + gv * (A(1) - s)));
                gu.v[e] = from_acc<T>(dv * gv * s);
            }
            *reinterpret_cast<V *>(grad_gate) = gg;
            *reinterpret_cast<V *>(grad_gate + d) = gu;
        } else {
            const A gv = to_acc(gate[0]), uv = to_acc(gate[d]), dv = to_acc(dy[0]);
            const A s = sigmoid(gv);
            grad_gate[0] = from_acc<T>(dv * uv * s * (A(1) + gv * (A(1) - s)));
            grad_gate[d] = from_acc<T>(dv * gv * s);
        }
    }
}

constexpr int kThreads = 256;

template <typename T>
int silu_and_mul(const void *x, void *out, int64_t rows, int64_t d, void *stream) {
    if (rows == 0 || d == 0) return 0;
    auto s = cudaStream_t(stream);
    const auto *xt = static_cast<const T *>(x);
    auto *ot = static_cast<T *>(out);
    if (d % Vec<T>::size == 0 && is_aligned16(x) && is_aligned16(out)) {
        const int64_t work = rows * (d / Vec<T>::size);
        silu_and_mul_kernel<T, true><<<grid_for(work, kThreads), kThreads, 0, s>>>(xt, ot, rows, d);
    } else {
        silu_and_mul_kernel<T, false><<<grid_for(rows * d, kThreads), kThreads, 0, s>>>(xt, ot, rows, d);
    }
    return int(cudaGetLastError());
}

template <typename T>
int silu_and_mul_backward(const void *grad_out, const void *x, void *grad_x, int64_t rows,
                          int64_t d, void *stream) {
    if (rows == 0 || d == 0) return 0;
    auto s = cudaStream_t(stream);
    const auto *dy = static_cast<const T *>(grad_out);
    const auto *xt = static_cast<const T *>(x);
    auto *gx = static_cast<T *>(grad_x);
    if (d % Vec<T>::size == 0 && is_aligned16(grad_out) && is_aligned16(x) && is_aligned16(grad_x)) {
        const int64_t work = rows * (d / Vec<T>::size);
        silu_and_mul_backward_kernel<T, true><<<grid_for(work, kThreads), kThreads, 0, s>>>(dy, xt, gx, rows, d);
    } else {
        silu_and_mul_backward_kernel<T, false><<<grid_for(rows * d, kThreads), kThreads, 0, s>>>(dy, xt, gx, rows, d);
    }
    return int(cudaGetLastError());
}

}  // namespace
}  // namespace my_ops

extern "C" {

int my_ops_silu_and_mul_cuda(my_ops_dtype dtype, const void *x, void *out, int64_t rows,
                             int64_t d, void *stream) {
    MY_OPS_CUDA_DISPATCH(dtype, my_ops::silu_and_mul, x, out, rows, d, stream);
}

int my_ops_silu_and_mul_backward_cuda(my_ops_dtype dtype, const void *grad_out, const void *x,
                                      void *grad_x, int64_t rows, int64_t d, void *stream) {
    MY_OPS_CUDA_DISPATCH(dtype, my_ops::silu_and_mul_backward, grad_out, x, grad_x, rows, d,
                         stream);
}

}  // extern "C"
