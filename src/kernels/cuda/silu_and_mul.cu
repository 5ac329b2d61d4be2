// SiLU-and-mul (SwiGLU gate) on CUDA, forward and backward.
// x is [rows, 2d]: gate = x[:, :d], up = x[:, d:]. When d is a whole number of
// 16-byte vectors and the pointers are aligned: a 2D grid, x across a row's
// vectors (U per thread), y down the rows; no index division. Otherwise a
// grid-stride loop over scalar elements.
#include "common.cuh"

namespace my_ops {
namespace {

template <typename A> __device__ __forceinline__ A sigmoid(A g) { return reciprocal(A(1) + exp_acc(-g)); }

constexpr int kThreads = 256;

// Vectors per thread: two keep more loads in flight on large inputs (measured
// 5% faster at [16384, 2x8192]); one has the shorter latency that small
// (decode-sized) inputs are bound by.
inline int unroll_for(int64_t vectors) { return vectors >= int64_t(sm_count()) * 4096 ? 2 : 1; }

// Block and grid of the vectorized kernels: blockDim.x threads cover up to
// blockDim.x * unroll vectors of a row; short rows leave room for several
// rows per block (blockDim.y). Inputs too small for two blocks of kThreads
// per multiprocessor get smaller blocks, so more multiprocessors share the
// loads.
struct Grid2D {
    dim3 grid, block;
};

inline Grid2D vec_grid(int64_t rows, int64_t per_row, int unroll) {
    int threads = kThreads;
    const int64_t vectors = rows * per_row, wanted_blocks = 2 * int64_t(sm_count());
    while (threads > 32 && ceil_div(vectors, int64_t(threads) * unroll) < wanted_blocks) threads /= 2;
    int tx = 1;
    while (tx < threads && int64_t(tx) * unroll < per_row) tx *= 2;
    const int ty = threads / tx;
    const int64_t gx = ceil_div(per_row, int64_t(tx) * unroll), gy = ceil_div(rows, ty);
    return {dim3(unsigned(gx), unsigned(gy < 65535 ? gy : 65535)), dim3(unsigned(tx), unsigned(ty))};
}

// This thread's vectors of the 2D grid: for each row it walks, load(row, c, k)
// for its kUnroll vector columns c first, then compute(row, c, k), so that
// all of a row's loads are in flight together.
template <int kUnroll, typename Load, typename Compute>
__device__ __forceinline__ void for_each_vector(int64_t rows, int64_t per_row, Load &&load,
                                                Compute &&compute) {
    const int64_t first = int64_t(blockIdx.x) * blockDim.x * kUnroll + threadIdx.x;
    for (int64_t row = int64_t(blockIdx.y) * blockDim.y + threadIdx.y; row < rows;
         row += int64_t(gridDim.y) * blockDim.y) {
#pragma unroll
        for (int k = 0; k < kUnroll; ++k) {
            const int64_t c = first + k * blockDim.x;
            if (c < per_row) load(row, c, k);
        }
#pragma unroll
        for (int k = 0; k < kUnroll; ++k) {
            const int64_t c = first + k * blockDim.x;
            if (c < per_row) compute(row, c, k);
        }
    }
}

template <typename T, int kUnroll>
__global__ void __launch_bounds__(kThreads)
silu_and_mul_vec_kernel(const T *__restrict__ x, T *__restrict__ out, int64_t rows, int64_t d) {
    using A = acc_t<T>;
    using V = Vec<T>;
    const int64_t per_row = d / V::size;
    const V *in = reinterpret_cast<const V *>(x);  // row r: gate at 2 r per_row, up per_row later
    V *o = reinterpret_cast<V *>(out);
    V g[kUnroll], u[kUnroll];
    for_each_vector<kUnroll>(
        rows, per_row,
        [&](int64_t row, int64_t c, int k) {
            g[k] = in[2 * row * per_row + c];
            u[k] = in[(2 * row + 1) * per_row + c];
        },
        [&](int64_t row, int64_t c, int k) {
            V r;
#pragma unroll
            for (int e = 0; e < V::size; ++e) {
                const A gv = to_acc(g[k].v[e]);
                r.v[e] = from_acc<T>(gv * sigmoid(gv) * to_acc(u[k].v[e]));
            }
            o[row * per_row + c] = r;
        });
}

template <typename T>
__global__ void silu_and_mul_scalar_kernel(const T *__restrict__ x, T *__restrict__ out,
                                           int64_t rows, int64_t d) {
    using A = acc_t<T>;
    const int64_t total = rows * d;
    for (int64_t i = int64_t(blockIdx.x) * blockDim.x + threadIdx.x; i < total;
         i += int64_t(gridDim.x) * blockDim.x) {
        const int64_t row = i / d, col = i - row * d;
        const T *gate = x + row * 2 * d + col;
        const A gv = to_acc(gate[0]);
        out[i] = from_acc<T>(gv * sigmoid(gv) * to_acc(gate[d]));
    }
}

// grad_gate = dy * up * s * (1 + g * (1 - s)), grad_up = dy * g * s, s = sigmoid(g)
template <typename A> struct SiluGrads {
    A gate, up;
};

template <typename A> __device__ __forceinline__ SiluGrads<A> silu_and_mul_grads(A g, A u, A dy) {
    const A s = sigmoid(g);
    return {dy * u * s * (A(1) + g * (A(1) - s)), dy * g * s};
}

template <typename T, int kUnroll>
__global__ void __launch_bounds__(kThreads)
silu_and_mul_backward_vec_kernel(const T *__restrict__ grad_out, const T *__restrict__ x,
                                 T *__restrict__ grad_x, int64_t rows, int64_t d) {
    using A = acc_t<T>;
    using V = Vec<T>;
    const int64_t per_row = d / V::size;
    const V *in = reinterpret_cast<const V *>(x), *dy = reinterpret_cast<const V *>(grad_out);
    V *grad_in = reinterpret_cast<V *>(grad_x);
    V g[kUnroll], u[kUnroll], dyv[kUnroll];
    for_each_vector<kUnroll>(
        rows, per_row,
        [&](int64_t row, int64_t c, int k) {
            g[k] = in[2 * row * per_row + c];
            u[k] = in[(2 * row + 1) * per_row + c];
            dyv[k] = dy[row * per_row + c];
        },
        [&](int64_t row, int64_t c, int k) {
            V gg, gu;
#pragma unroll
            for (int e = 0; e < V::size; ++e) {
                const SiluGrads<A> r =
                    silu_and_mul_grads(to_acc(g[k].v[e]), to_acc(u[k].v[e]), to_acc(dyv[k].v[e]));
                gg.v[e] = from_acc<T>(r.gate);
                gu.v[e] = from_acc<T>(r.up);
            }
            grad_in[2 * row * per_row + c] = gg;
            grad_in[(2 * row + 1) * per_row + c] = gu;
        });
}

template <typename T>
__global__ void silu_and_mul_backward_scalar_kernel(const T *__restrict__ grad_out,
                                                    const T *__restrict__ x,
                                                    T *__restrict__ grad_x, int64_t rows,
                                                    int64_t d) {
    using A = acc_t<T>;
    const int64_t total = rows * d;
    for (int64_t i = int64_t(blockIdx.x) * blockDim.x + threadIdx.x; i < total;
         i += int64_t(gridDim.x) * blockDim.x) {
        const int64_t row = i / d, col = i - row * d;
        const T *gate = x + row * 2 * d + col;
        T *grad_gate = grad_x + row * 2 * d + col;
        const SiluGrads<A> r = silu_and_mul_grads(to_acc(gate[0]), to_acc(gate[d]), to_acc(grad_out[i]));
        grad_gate[0] = from_acc<T>(r.gate);
        grad_gate[d] = from_acc<T>(r.up);
    }
}


template <typename T>
int silu_and_mul(const void *x, void *out, int64_t rows, int64_t d, void *stream) {
    if (rows == 0 || d == 0) return 0;
    auto s = cudaStream_t(stream);
    const auto *xt = static_cast<const T *>(x);
    auto *ot = static_cast<T *>(out);
    if (d % Vec<T>::size == 0 && is_aligned16(x) && is_aligned16(out)) {
        const int64_t per_row = d / Vec<T>::size;
        const int unroll = unroll_for(rows * per_row);
        const Grid2D g = vec_grid(rows, per_row, unroll);
        if (unroll == 2) silu_and_mul_vec_kernel<T, 2><<<g.grid, g.block, 0, s>>>(xt, ot, rows, d);
        else silu_and_mul_vec_kernel<T, 1><<<g.grid, g.block, 0, s>>>(xt, ot, rows, d);
    } else {
        silu_and_mul_scalar_kernel<T><<<grid_for(rows * d, kThreads), kThreads, 0, s>>>(xt, ot, rows, d);
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
        const int64_t per_row = d / Vec<T>::size;
        const int unroll = unroll_for(rows * per_row);
        const Grid2D g = vec_grid(rows, per_row, unroll);
        if (unroll == 2) silu_and_mul_backward_vec_kernel<T, 2><<<g.grid, g.block, 0, s>>>(dy, xt, gx, rows, d);
        else silu_and_mul_backward_vec_kernel<T, 1><<<g.grid, g.block, 0, s>>>(dy, xt, gx, rows, d);
    } else {
        silu_and_mul_backward_scalar_kernel<T><<<grid_for(rows * d, kThreads), kThreads, 0, s>>>(
            dy, xt, gx, rows, d);
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
