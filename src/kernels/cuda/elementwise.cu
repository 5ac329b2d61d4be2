// Element-wise CUDA kernels: short_kernel, mul, muladd, add.
// One grid-stride kernel per op: 16-byte vectors when every pointer is
// aligned, then a scalar tail; a scalar loop for unaligned views.
#include "../elementwise.h"
#include "common.cuh"

namespace my_ops {
namespace {

template <typename A> struct ShortKernelOp {
    __device__ A operator()(A x, A) const { return x * A(MY_OPS_SHORT_KERNEL_SCALE); }
};
template <typename A> struct MulOp {
    __device__ A operator()(A a, A b) const { return a * b; }
};
template <typename A> struct MulAddOp {
    A c;
    __device__ A operator()(A a, A b) const { return a * b + c; }
};
template <typename A> struct AddOp {
    __device__ A operator()(A a, A b) const { return a + b; }
};

// kHasB = false: unary op, `b` is never read.
template <typename T, bool kHasB, typename Op>
__global__ void elementwise_kernel(const T *__restrict__ a, const T *__restrict__ b,
                                   T *__restrict__ out, int64_t n, bool vectorized, Op op) {
    using V = Vec<T>;
    const int64_t stride = int64_t(gridDim.x) * blockDim.x;
    int64_t start = int64_t(blockIdx.x) * blockDim.x + threadIdx.x;
    if (vectorized) {
        const int64_t n_vec = n / V::size;
        for (int64_t i = start; i < n_vec; i += stride) {
            const V va = reinterpret_cast<const V *>(a)[i];
            V vb;
            if (kHasB) vb = reinterpret_cast<const V *>(b)[i];
            V vo;
#pragma unroll
            for (int e = 0; e < V::size; ++e)
                vo.v[e] = from_acc<T>(op(to_acc(va.v[e]), kHasB ? to_acc(vb.v[e]) : acc_t<T>(0)));
            reinterpret_cast<V *>(out)[i] = vo;
        }
        start += n_vec * V::size;
    }
    for (int64_t i = start; i < n; i += stride)
        out[i] = from_acc<T>(op(to_acc(a[i]), kHasB ? to_acc(b[i]) : acc_t<T>(0)));
}

template <typename T, bool kHasB, typename Op>
int launch(const void *a, const void *b, void *out, int64_t n, void *stream, Op op) {
    if (n == 0) return 0;
    const bool vectorized = is_aligned16(a) && is_aligned16(out) && (!kHasB || is_aligned16(b));
    constexpr int threads = 256;
    const int64_t work = vectorized ? ceil_div(n, Vec<T>::size) : n;
    elementwise_kernel<T, kHasB><<<grid_for(work, threads), threads, 0, cudaStream_t(stream)>>>(
        static_cast<const T *>(a), static_cast<const T *>(b), static_cast<T *>(out), n, vectorized,
        op);
    return int(cudaGetLastError());
}

template <typename T> int short_kernel(const void *x, void *out, int64_t n, void *stream) {
    return launch<T, false>(x, nullptr, out, n, stream, ShortKernelOp<acc_t<T>>{});
}
template <typename T> int mul(const void *a, const void *b, void *out, int64_t n, void *stream) {
    return launch<T, true>(a, b, out, n, stream, MulOp<acc_t<T>>{});
}
template <typename T>
int muladd(const void *a, const void *b, double c, void *out, int64_t n, void *stream) {
    return launch<T, true>(a, b, out, n, stream, MulAddOp<acc_t<T>>{acc_t<T>(c)});
}
template <typename T> int add(const void *a, const void *b, void *out, int64_t n, void *stream) {
    return launch<T, true>(a, b, out, n, stream, AddOp<acc_t<T>>{});
}

}  // namespace
}  // namespace my_ops

extern "C" {

int my_ops_short_kernel_cuda(my_ops_dtype dtype, const void *x, void *out, int64_t n,
                             void *stream) {
    MY_OPS_CUDA_DISPATCH(dtype, my_ops::short_kernel, x, out, n, stream);
}
int my_ops_mul_cuda(my_ops_dtype dtype, const void *a, const void *b, void *out, int64_t n,
                    void *stream) {
    MY_OPS_CUDA_DISPATCH(dtype, my_ops::mul, a, b, out, n, stream);
}
int my_ops_muladd_cuda(my_ops_dtype dtype, const void *a, const void *b, double c, void *out,
                       int64_t n, void *stream) {
    MY_OPS_CUDA_DISPATCH(dtype, my_ops::muladd, a, b, c, out, n, stream);
}
int my_ops_add_cuda(my_ops_dtype dtype, const void *a, const void *b, void *out, int64_t n,
                    void *stream) {
    MY_OPS_CUDA_DISPATCH(dtype, my_ops::add, a, b, out, n, stream);
}

}  // extern "C"
