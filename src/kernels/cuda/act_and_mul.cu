// Gated units on CUDA (SwiGLU's silu_and_mul, GeGLU's gelu_and_mul), forward
// and backward: out = act(gate) * up, gate = x[:, :d], up = x[:, d:], x rows
// with a row stride (a slice of a wider tensor is read in place). One kernel
// body per direction, templated on the activation (../activations.h).
// When d and the row strides are whole numbers of 16-byte vectors and the
// pointers are aligned: a 2D grid, x across a row's vectors (U per thread),
// y down the rows; no index division. Otherwise a grid-stride loop over
// scalar elements.
#include "../act_and_mul.h"
#include "common.cuh"

namespace my_ops {
namespace {

// An activation of MY_OPS_ACTIVATIONS (../activations.h, shared with the CPU
// kernels), as a type: value(g), and both(g) = {value, derivative}.
template <typename A> struct ValueAndGrad {
    A value, grad;
};

template <int kAct> struct Activation {
    __device__ static float value(float g) { return my_ops_activation_float(kAct, g); }
    __device__ static double value(double g) { return my_ops_activation_double(kAct, g); }
    template <typename A> __device__ static ValueAndGrad<A> both(A g) {
        // (the two share their sigmoid, erf or exp: the compiler computes it once)
        if constexpr (sizeof(A) == sizeof(float))
            return {my_ops_activation_float(kAct, g), my_ops_activation_grad_float(kAct, g)};
        else
            return {my_ops_activation_double(kAct, g), my_ops_activation_grad_double(kAct, g)};
    }
};

constexpr int kThreads = 256;

// Vectors per thread: two keep more loads in flight on large inputs (measured
// faster; see benchmarks/NOTES.md); one has the shorter latency that small
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
    while (threads > 32 && ceil_div(vectors, int64_t(threads) * unroll) < wanted_blocks)
        threads /= 2;
    int tx = 1;
    while (tx < threads && int64_t(tx) * unroll < per_row) tx *= 2;
    const int ty = threads / tx;
    const int64_t gx = ceil_div(per_row, int64_t(tx) * unroll), gy = ceil_div(rows, ty);
    return {dim3(unsigned(gx), unsigned(gy < 65535 ? gy : 65535)),
            dim3(unsigned(tx), unsigned(ty))};
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

// Strides below are in vectors (vectorized kernels) or elements (scalar kernels).
template <typename Act, typename T, int kUnroll>
__global__ void __launch_bounds__(kThreads)
act_and_mul_vec_kernel(const T *__restrict__ x, int64_t x_stride, T *__restrict__ out, int64_t rows,
                       int64_t per_row) {
    using A = acc_t<T>;
    using V = Vec<T>;
    const V *in = reinterpret_cast<const V *>(x);  // row r: gate at r * x_stride, up per_row later
    V *o = reinterpret_cast<V *>(out);
    V g[kUnroll], u[kUnroll];
    for_each_vector<kUnroll>(
        rows, per_row,
        [&](int64_t row, int64_t c, int k) {
            g[k] = in[row * x_stride + c];
            u[k] = in[row * x_stride + per_row + c];
        },
        [&](int64_t row, int64_t c, int k) {
            V r;
#pragma unroll
            for (int e = 0; e < V::size; ++e)
                r.v[e] = from_acc<T>(Act::value(to_acc(g[k].v[e])) * to_acc(u[k].v[e]));
            o[row * per_row + c] = r;
        });
}

template <typename Act, typename T>
__global__ void act_and_mul_scalar_kernel(const T *__restrict__ x, int64_t x_stride,
                                          T *__restrict__ out, int64_t rows, int64_t d) {
    const int64_t total = rows * d;
    for (int64_t i = int64_t(blockIdx.x) * blockDim.x + threadIdx.x; i < total;
         i += int64_t(gridDim.x) * blockDim.x) {
        const int64_t row = i / d, col = i - row * d;
        const T *gate = x + row * x_stride + col;
        out[i] = from_acc<T>(Act::value(to_acc(gate[0])) * to_acc(gate[d]));
    }
}

// grad_gate = dy * up * act'(gate), grad_up = dy * act(gate)
template <typename Act, typename A> struct Grads {
    A gate, up;
    __device__ Grads(A g, A u, A dy) {
        const ValueAndGrad<A> a = Act::both(g);
        gate = dy * u * a.grad;
        up = dy * a.value;
    }
};

template <typename Act, typename T, int kUnroll>
__global__ void __launch_bounds__(kThreads)
act_and_mul_backward_vec_kernel(const T *__restrict__ grad_out, int64_t dy_stride,
                                const T *__restrict__ x, int64_t x_stride, T *__restrict__ grad_x,
                                int64_t rows, int64_t per_row) {
    using A = acc_t<T>;
    using V = Vec<T>;
    const V *in = reinterpret_cast<const V *>(x), *dy = reinterpret_cast<const V *>(grad_out);
    V *grad_in = reinterpret_cast<V *>(grad_x);
    V g[kUnroll], u[kUnroll], dyv[kUnroll];
    for_each_vector<kUnroll>(
        rows, per_row,
        [&](int64_t row, int64_t c, int k) {
            g[k] = in[row * x_stride + c];
            u[k] = in[row * x_stride + per_row + c];
            dyv[k] = dy[row * dy_stride + c];
        },
        [&](int64_t row, int64_t c, int k) {
            V gg, gu;
#pragma unroll
            for (int e = 0; e < V::size; ++e) {
                const Grads<Act, A> r(to_acc(g[k].v[e]), to_acc(u[k].v[e]), to_acc(dyv[k].v[e]));
                gg.v[e] = from_acc<T>(r.gate);
                gu.v[e] = from_acc<T>(r.up);
            }
            grad_in[2 * row * per_row + c] = gg;
            grad_in[(2 * row + 1) * per_row + c] = gu;
        });
}

template <typename Act, typename T>
__global__ void act_and_mul_backward_scalar_kernel(const T *__restrict__ grad_out,
                                                   int64_t dy_stride, const T *__restrict__ x,
                                                   int64_t x_stride, T *__restrict__ grad_x,
                                                   int64_t rows, int64_t d) {
    using A = acc_t<T>;
    const int64_t total = rows * d;
    for (int64_t i = int64_t(blockIdx.x) * blockDim.x + threadIdx.x; i < total;
         i += int64_t(gridDim.x) * blockDim.x) {
        const int64_t row = i / d, col = i - row * d;
        const T *gate = x + row * x_stride + col;
        T *grad_gate = grad_x + row * 2 * d + col;
        const Grads<Act, A> r(to_acc(gate[0]), to_acc(gate[d]),
                              to_acc(grad_out[row * dy_stride + col]));
        grad_gate[0] = from_acc<T>(r.gate);
        grad_gate[d] = from_acc<T>(r.up);
    }
}

template <typename Act, typename T>
int act_and_mul(const T *x, int64_t x_stride, T *out, int64_t rows, int64_t d, cudaStream_t s) {
    constexpr int n = Vec<T>::size;
    if (d % n == 0 && x_stride % n == 0 && is_aligned16(x) && is_aligned16(out)) {
        const int64_t per_row = d / n;
        const int unroll = unroll_for(rows * per_row);
        const Grid2D g = vec_grid(rows, per_row, unroll);
        if (unroll == 2)
            act_and_mul_vec_kernel<Act, T, 2>
                <<<g.grid, g.block, 0, s>>>(x, x_stride / n, out, rows, per_row);
        else
            act_and_mul_vec_kernel<Act, T, 1>
                <<<g.grid, g.block, 0, s>>>(x, x_stride / n, out, rows, per_row);
    } else {
        act_and_mul_scalar_kernel<Act, T>
            <<<grid_for(rows * d, kThreads), kThreads, 0, s>>>(x, x_stride, out, rows, d);
    }
    return int(cudaGetLastError());
}

template <typename Act, typename T>
int act_and_mul_backward(const T *dy, int64_t dy_stride, const T *x, int64_t x_stride, T *gx,
                         int64_t rows, int64_t d, cudaStream_t s) {
    constexpr int n = Vec<T>::size;
    if (d % n == 0 && x_stride % n == 0 && dy_stride % n == 0 && is_aligned16(dy) &&
        is_aligned16(x) && is_aligned16(gx)) {
        const int64_t per_row = d / n;
        const int unroll = unroll_for(rows * per_row);
        const Grid2D g = vec_grid(rows, per_row, unroll);
        if (unroll == 2)
            act_and_mul_backward_vec_kernel<Act, T, 2>
                <<<g.grid, g.block, 0, s>>>(dy, dy_stride / n, x, x_stride / n, gx, rows, per_row);
        else
            act_and_mul_backward_vec_kernel<Act, T, 1>
                <<<g.grid, g.block, 0, s>>>(dy, dy_stride / n, x, x_stride / n, gx, rows, per_row);
    } else {
        act_and_mul_backward_scalar_kernel<Act, T>
            <<<grid_for(rows * d, kThreads), kThreads, 0, s>>>(dy, dy_stride, x, x_stride, gx, rows,
                                                               d);
    }
    return int(cudaGetLastError());
}

// Calls f(Activation<act>{}) for the activation `act` names (a case per row of
// MY_OPS_ACTIVATIONS); cudaErrorInvalidValue for an unknown one.
template <typename F> int with_activation(my_ops_activation act, F &&f) {
#define MY_OPS_ACTIVATION_CASE(name, ENUM, value) \
    case ENUM: return f(Activation<value>{});
    switch (act) { MY_OPS_ACTIVATIONS(MY_OPS_ACTIVATION_CASE) }
#undef MY_OPS_ACTIVATION_CASE
    return int(cudaErrorInvalidValue);
}

template <typename T>
int forward(my_ops_activation act, const void *x, int64_t x_stride, void *out, int64_t rows,
            int64_t d, void *stream) {
    if (rows == 0 || d == 0) return 0;
    return with_activation(act, [&](auto activation) {
        return act_and_mul<decltype(activation), T>(static_cast<const T *>(x), x_stride,
                                                    static_cast<T *>(out), rows, d,
                                                    cudaStream_t(stream));
    });
}

template <typename T>
int backward(my_ops_activation act, const void *grad_out, int64_t dy_stride, const void *x,
             int64_t x_stride, void *grad_x, int64_t rows, int64_t d, void *stream) {
    if (rows == 0 || d == 0) return 0;
    return with_activation(act, [&](auto activation) {
        return act_and_mul_backward<decltype(activation), T>(
            static_cast<const T *>(grad_out), dy_stride, static_cast<const T *>(x), x_stride,
            static_cast<T *>(grad_x), rows, d, cudaStream_t(stream));
    });
}

}  // namespace
}  // namespace my_ops

extern "C" {

int my_ops_act_and_mul_cuda(my_ops_dtype dtype, my_ops_activation act, const void *x,
                            int64_t x_stride, void *out, int64_t rows, int64_t d, void *stream) {
    MY_OPS_CUDA_DISPATCH(dtype, my_ops::forward, act, x, x_stride, out, rows, d, stream);
}

int my_ops_act_and_mul_backward_cuda(my_ops_dtype dtype, my_ops_activation act,
                                     const void *grad_out, int64_t grad_out_stride, const void *x,
                                     int64_t x_stride, void *grad_x, int64_t rows, int64_t d,
                                     void *stream) {
    MY_OPS_CUDA_DISPATCH(dtype, my_ops::backward, act, grad_out, grad_out_stride, x, x_stride,
                         grad_x, rows, d, stream);
}

}  // extern "C"
