// RMSNorm on CUDA: forward, backward (dx and dweight), fused residual add.
//
// Fast path: one block per row (grid-stride over rows), the row held in
// registers as 16-byte vectors (NV vectors per thread), so each input byte is
// read from device memory once. Used when the row is a whole number of
// vectors and every pointer is 16-byte aligned. Otherwise a generic kernel
// reads the row twice with scalar loads (the second read mostly hits L1/L2).
#include "common.cuh"

namespace my_ops {
namespace {

constexpr int kGenericThreads = 256;

// Smallest NV in {1, 2, 4, 8} with nvec <= NV * max_threads; 0 when none fits.
inline int vectors_per_thread(int64_t nvec, int max_threads) {
    for (int nv = 1; nv <= 8; nv *= 2)
        if (nvec <= int64_t(nv) * max_threads) return nv;
    return 0;
}

// One block per row, as far as the grid allows (the kernels loop past it):
// blocks that each do one row leave no uneven last wave behind. Used by the
// fused residual add (measured: 374 -> 360 us, NOTES.md v3).
inline unsigned rows_grid(int64_t rows) { return unsigned(rows < 0x7fffffff ? rows : 0x7fffffff); }

inline int threads_for(int64_t nvec, int nv) {
    const int64_t threads = ceil_div(ceil_div(nvec, nv), 32) * 32;
    return int(threads < 32 ? 32 : threads);
}

template <typename T> bool vectorizable(int64_t hidden, std::initializer_list<const void *> ptrs) {
    if (hidden % Vec<T>::size != 0) return false;
    for (const void *p : ptrs)
        if (!is_aligned16(p)) return false;
    return true;
}

// ------------------------------------------------------------- forward --

// Loads this thread's vectors of one row (those with index < nvec).
template <typename V, int NV>
__device__ __forceinline__ void load_row(V (&held)[NV], const V *row, int64_t nvec) {
#pragma unroll
    for (int k = 0; k < NV; ++k) {
        const int64_t i = threadIdx.x + int64_t(k) * blockDim.x;
        if (i < nvec) held[k] = row[i];
    }
}

// The next row's loads are issued before this row's reduction, so they are
// in flight while the block waits at its barriers.
template <typename T, int NV>
__global__ void __launch_bounds__(1024)
rms_norm_vec_kernel(const T *__restrict__ x, const T *__restrict__ weight, T *__restrict__ y,
                    int64_t rows, int64_t hidden, acc_t<T> eps) {
    using A = acc_t<T>;
    using V = Vec<T>;
    __shared__ A scratch[32];
    const int64_t nvec = hidden / V::size;
    const V *w = reinterpret_cast<const V *>(weight);
    // Prefetching doubles the registers that hold the row: only for short rows.
    constexpr bool kPrefetch = NV <= 2;
    int64_t row = blockIdx.x;
    V held[NV], next[NV];
    if (kPrefetch && row < rows) load_row(held, reinterpret_cast<const V *>(x + row * hidden), nvec);
    for (; row < rows; row += gridDim.x) {
        const int64_t next_row = row + gridDim.x;
        if (!kPrefetch) {
            load_row(held, reinterpret_cast<const V *>(x + row * hidden), nvec);
        } else if (next_row < rows) {
            load_row(next, reinterpret_cast<const V *>(x + next_row * hidden), nvec);
        }
        A sum_sq = 0;
#pragma unroll
        for (int k = 0; k < NV; ++k) {
            const int64_t i = threadIdx.x + int64_t(k) * blockDim.x;
            if (i < nvec) {
#pragma unroll
                for (int e = 0; e < V::size; ++e) {
                    const A v = to_acc(held[k].v[e]);
                    sum_sq += v * v;
                }
            }
        }
        const A rstd = reciprocal_sqrt(block_sum(sum_sq, scratch) / A(hidden) + eps);
        V *y_row = reinterpret_cast<V *>(y + row * hidden);
#pragma unroll
        for (int k = 0; k < NV; ++k) {
            const int64_t i = threadIdx.x + int64_t(k) * blockDim.x;
            if (i < nvec) {
                const V wv = w[i];
                V out;
#pragma unroll
                for (int e = 0; e < V::size; ++e)
                    out.v[e] = from_acc<T>(to_acc(held[k].v[e]) * rstd * to_acc(wv.v[e]));
                y_row[i] = out;
            }
        }
        if (kPrefetch)
#pragma unroll
            for (int k = 0; k < NV; ++k) held[k] = next[k];
    }
}

template <typename T>
__global__ void rms_norm_generic_kernel(const T *__restrict__ x, const T *__restrict__ weight,
                                        T *__restrict__ y, int64_t rows, int64_t hidden,
                                        acc_t<T> eps) {
    using A = acc_t<T>;
    __shared__ A scratch[32];
    for (int64_t row = blockIdx.x; row < rows; row += gridDim.x) {
        const T *x_row = x + row * hidden;
        A sum_sq = 0;
        for (int64_t j = threadIdx.x; j < hidden; j += blockDim.x) {
            const A v = to_acc(x_row[j]);
            sum_sq += v * v;
        }
        const A rstd = reciprocal_sqrt(block_sum(sum_sq, scratch) / A(hidden) + eps);
        for (int64_t j = threadIdx.x; j < hidden; j += blockDim.x)
            y[row * hidden + j] = from_acc<T>(to_acc(x_row[j]) * rstd * to_acc(weight[j]));
    }
}

template <typename T>
int rms_norm(const void *x, const void *weight, void *y, int64_t rows, int64_t hidden, double eps,
             void *stream) {
    if (rows == 0 || hidden == 0) return 0;
    auto s = cudaStream_t(stream);
    const auto *xt = static_cast<const T *>(x);
    const auto *wt = static_cast<const T *>(weight);
    auto *yt = static_cast<T *>(y);
    const acc_t<T> e = acc_t<T>(eps);
    const int64_t nvec = hidden / Vec<T>::size;
    const int nv = vectors_per_thread(nvec, 1024);
    if (nv > 0 && vectorizable<T>(hidden, {x, weight, y})) {
        const int threads = threads_for(nvec, nv);
        // a persistent-style grid: measured faster than one block per row here (NOTES.md, v3)
        const unsigned grid = grid_for(rows * threads, threads);
        switch (nv) {
        case 1: rms_norm_vec_kernel<T, 1><<<grid, threads, 0, s>>>(xt, wt, yt, rows, hidden, e); break;
        case 2: rms_norm_vec_kernel<T, 2><<<grid, threads, 0, s>>>(xt, wt, yt, rows, hidden, e); break;
        case 4: rms_norm_vec_kernel<T, 4><<<grid, threads, 0, s>>>(xt, wt, yt, rows, hidden, e); break;
        default: rms_norm_vec_kernel<T, 8><<<grid, threads, 0, s>>>(xt, wt, yt, rows, hidden, e); break;
        }
    } else {
        const int threads = hidden < kGenericThreads ? threads_for(hidden, 1) : kGenericThreads;
        rms_norm_generic_kernel<T><<<grid_for(rows * threads, threads), threads, 0, s>>>(
            xt, wt, yt, rows, hidden, e);
    }
    return int(cudaGetLastError());
}

// ------------------------------------------------------------ backward --
// dx = rstd * w * dy - x * rstd^3 / hidden * sum(w * dy * x)
// dweight = sum over rows of dy * x * rstd: each block accumulates its rows
// into one row of `partial`, then sum_partials_kernel adds the rows up.

template <typename T, int NV>
__global__ void __launch_bounds__(512)
rms_norm_backward_vec_kernel(const T *__restrict__ grad_out, const T *__restrict__ x,
                             const T *__restrict__ weight, T *__restrict__ grad_x,
                             acc_t<T> *__restrict__ partial, int64_t rows, int64_t hidden,
                             acc_t<T> eps) {
    using A = acc_t<T>;
    using V = Vec<T>;
    const int64_t nvec = hidden / V::size;
    const V *w = reinterpret_cast<const V *>(weight);
    A dweight[NV][V::size];
#pragma unroll
    for (int k = 0; k < NV; ++k)
#pragma unroll
        for (int e = 0; e < V::size; ++e) dweight[k][e] = 0;

    __shared__ Pair2<A> pair_scratch[32];
    constexpr bool kPrefetch = NV <= 2;  // registers: see rms_norm_vec_kernel
    int64_t row = blockIdx.x;
    V xs[NV], dys[NV], next_x[NV], next_dy[NV];
    if (kPrefetch && row < rows) {
        load_row(xs, reinterpret_cast<const V *>(x + row * hidden), nvec);
        load_row(dys, reinterpret_cast<const V *>(grad_out + row * hidden), nvec);
    }
    for (; row < rows; row += gridDim.x) {
        const int64_t next_row = row + gridDim.x;
        if (!kPrefetch) {
            load_row(xs, reinterpret_cast<const V *>(x + row * hidden), nvec);
            load_row(dys, reinterpret_cast<const V *>(grad_out + row * hidden), nvec);
        } else if (next_row < rows) {  // in flight during this row's reduction
            load_row(next_x, reinterpret_cast<const V *>(x + next_row * hidden), nvec);
            load_row(next_dy, reinterpret_cast<const V *>(grad_out + next_row * hidden), nvec);
        }
        A sum_sq = 0, dot = 0;
#pragma unroll
        for (int k = 0; k < NV; ++k) {
            const int64_t i = threadIdx.x + int64_t(k) * blockDim.x;
            if (i < nvec) {
                const V wv = w[i];
#pragma unroll
                for (int e = 0; e < V::size; ++e) {
                    const A xv = to_acc(xs[k].v[e]);
                    sum_sq += xv * xv;
                    dot += to_acc(dys[k].v[e]) * to_acc(wv.v[e]) * xv;
                }
            }
        }
        const Pair2<A> sums = block_sum2(sum_sq, dot, pair_scratch);
        const A rstd = reciprocal_sqrt(sums.a / A(hidden) + eps);
        const A coef = sums.b * rstd * rstd * rstd / A(hidden);
        V *dx_row = reinterpret_cast<V *>(grad_x + row * hidden);
#pragma unroll
        for (int k = 0; k < NV; ++k) {
            const int64_t i = threadIdx.x + int64_t(k) * blockDim.x;
            if (i < nvec) {
                const V wv = w[i];
                V out;
#pragma unroll
                for (int e = 0; e < V::size; ++e) {
                    const A xv = to_acc(xs[k].v[e]), dyv = to_acc(dys[k].v[e]);
                    out.v[e] = from_acc<T>(rstd * to_acc(wv.v[e]) * dyv - coef * xv);
                    dweight[k][e] += dyv * xv * rstd;
                }
                dx_row[i] = out;
            }
        }
        if (kPrefetch)
#pragma unroll
            for (int k = 0; k < NV; ++k) {
                xs[k] = next_x[k];
                dys[k] = next_dy[k];
            }
    }
    A *my_partial = partial + int64_t(blockIdx.x) * hidden;
#pragma unroll
    for (int k = 0; k < NV; ++k) {
        const int64_t i = threadIdx.x + int64_t(k) * blockDim.x;
        if (i < nvec)
#pragma unroll
            for (int e = 0; e < V::size; ++e) my_partial[i * V::size + e] = dweight[k][e];
    }
}

template <typename T>
__global__ void rms_norm_backward_generic_kernel(const T *__restrict__ grad_out,
                                                 const T *__restrict__ x,
                                                 const T *__restrict__ weight,
                                                 T *__restrict__ grad_x,
                                                 acc_t<T> *__restrict__ partial, int64_t rows,
                                                 int64_t hidden, acc_t<T> eps) {
    using A = acc_t<T>;
    __shared__ A scratch[32];
    // Each thread owns columns threadIdx.x + k * blockDim.x of this block's partial row.
    A *my_partial = partial + int64_t(blockIdx.x) * hidden;
    for (int64_t j = threadIdx.x; j < hidden; j += blockDim.x) my_partial[j] = 0;
    for (int64_t row = blockIdx.x; row < rows; row += gridDim.x) {
        const T *x_row = x + row * hidden;
        const T *dy_row = grad_out + row * hidden;
        A sum_sq = 0, dot = 0;
        for (int64_t j = threadIdx.x; j < hidden; j += blockDim.x) {
            const A xv = to_acc(x_row[j]);
            sum_sq += xv * xv;
            dot += to_acc(dy_row[j]) * to_acc(weight[j]) * xv;
        }
        sum_sq = block_sum(sum_sq, scratch);
        dot = block_sum(dot, scratch);
        const A rstd = reciprocal_sqrt(sum_sq / A(hidden) + eps);
        const A coef = dot * rstd * rstd * rstd / A(hidden);
        for (int64_t j = threadIdx.x; j < hidden; j += blockDim.x) {
            const A xv = to_acc(x_row[j]), dyv = to_acc(dy_row[j]);
            grad_x[row * hidden + j] = from_acc<T>(rstd * to_acc(weight[j]) * dyv - coef * xv);
            my_partial[j] += dyv * xv * rstd;
        }
    }
}

// grad_weight[j] = sum over p of partial[p, j]. Block: 32 columns x 16 slices of p.
template <typename T>
__global__ void sum_partials_kernel(const acc_t<T> *__restrict__ partial, T *__restrict__ out,
                                    int64_t partials, int64_t hidden) {
    using A = acc_t<T>;
    __shared__ A sums[16][33];
    const int64_t j = int64_t(blockIdx.x) * 32 + threadIdx.x;
    A s = 0;
    if (j < hidden)
        for (int64_t p = threadIdx.y; p < partials; p += 16) s += partial[p * hidden + j];
    sums[threadIdx.y][threadIdx.x] = s;
    __syncthreads();
    if (threadIdx.y == 0 && j < hidden) {
        A total = 0;
#pragma unroll
        for (int y = 0; y < 16; ++y) total += sums[y][threadIdx.x];
        out[j] = from_acc<T>(total);
    }
}

template <typename T>
int rms_norm_backward(const void *grad_out, const void *x, const void *weight, void *grad_x,
                      void *grad_weight, void *workspace, int64_t partials, int64_t rows,
                      int64_t hidden, double eps, void *stream) {
    if (hidden == 0) return 0;
    auto s = cudaStream_t(stream);
    using A = acc_t<T>;
    auto *partial = static_cast<A *>(workspace);
    auto *gw = static_cast<T *>(grad_weight);
    if (rows == 0) {  // grad_weight of no rows is zero
        sum_partials_kernel<T><<<unsigned(ceil_div(hidden, 32)), dim3(32, 16), 0, s>>>(
            partial, gw, 0, hidden);
        return int(cudaGetLastError());
    }
    const auto *dy = static_cast<const T *>(grad_out);
    const auto *xt = static_cast<const T *>(x);
    const auto *wt = static_cast<const T *>(weight);
    auto *dx = static_cast<T *>(grad_x);
    const A e = A(eps);
    const unsigned grid = unsigned(partials);
    const int64_t nvec = hidden / Vec<T>::size;
    const int nv = vectors_per_thread(nvec, 512);
    if (nv > 0 && vectorizable<T>(hidden, {grad_out, x, weight, grad_x})) {
        const int threads = threads_for(nvec, nv);
        switch (nv) {
        case 1: rms_norm_backward_vec_kernel<T, 1><<<grid, threads, 0, s>>>(dy, xt, wt, dx, partial, rows, hidden, e); break;
        case 2: rms_norm_backward_vec_kernel<T, 2><<<grid, threads, 0, s>>>(dy, xt, wt, dx, partial, rows, hidden, e); break;
        case 4: rms_norm_backward_vec_kernel<T, 4><<<grid, threads, 0, s>>>(dy, xt, wt, dx, partial, rows, hidden, e); break;
        default: rms_norm_backward_vec_kernel<T, 8><<<grid, threads, 0, s>>>(dy, xt, wt, dx, partial, rows, hidden, e); break;
        }
    } else {
        const int threads = hidden < kGenericThreads ? threads_for(hidden, 1) : kGenericThreads;
        rms_norm_backward_generic_kernel<T><<<grid, threads, 0, s>>>(dy, xt, wt, dx, partial, rows,
                                                                     hidden, e);
    }
    const int err = int(cudaGetLastError());
    if (err != 0) return err;
    sum_partials_kernel<T><<<unsigned(ceil_div(hidden, 32)), dim3(32, 16), 0, s>>>(
        partial, gw, partials, hidden);
    return int(cudaGetLastError());
}

// -------------------------------------------------- fused residual add --

template <typename T, int NV>
__global__ void __launch_bounds__(1024)
fused_add_rms_norm_vec_kernel(T *__restrict__ x, T *__restrict__ residual,
                              const T *__restrict__ weight, int64_t rows, int64_t hidden,
                              acc_t<T> eps) {
    using A = acc_t<T>;
    using V = Vec<T>;
    __shared__ A scratch[32];
    const int64_t nvec = hidden / V::size;
    const V *w = reinterpret_cast<const V *>(weight);
    for (int64_t row = blockIdx.x; row < rows; row += gridDim.x) {
        V *x_row = reinterpret_cast<V *>(x + row * hidden);
        V *res_row = reinterpret_cast<V *>(residual + row * hidden);
        V held[NV];
        A sum_sq = 0;
#pragma unroll
        for (int k = 0; k < NV; ++k) {
            const int64_t i = threadIdx.x + int64_t(k) * blockDim.x;
            if (i < nvec) {
                const V xv = x_row[i], rv = res_row[i];
#pragma unroll
                for (int e = 0; e < V::size; ++e) {
                    // the residual stream holds T values: round the sum first
                    held[k].v[e] = from_acc<T>(to_acc(xv.v[e]) + to_acc(rv.v[e]));
                    const A v = to_acc(held[k].v[e]);
                    sum_sq += v * v;
                }
                res_row[i] = held[k];
            }
        }
        const A rstd = reciprocal_sqrt(block_sum(sum_sq, scratch) / A(hidden) + eps);
#pragma unroll
        for (int k = 0; k < NV; ++k) {
            const int64_t i = threadIdx.x + int64_t(k) * blockDim.x;
            if (i < nvec) {
                const V wv = w[i];
                V out;
#pragma unroll
                for (int e = 0; e < V::size; ++e)
                    out.v[e] = from_acc<T>(to_acc(held[k].v[e]) * rstd * to_acc(wv.v[e]));
                x_row[i] = out;
            }
        }
    }
}

template <typename T>
__global__ void fused_add_rms_norm_generic_kernel(T *__restrict__ x, T *__restrict__ residual,
                                                  const T *__restrict__ weight, int64_t rows,
                                                  int64_t hidden, acc_t<T> eps) {
    using A = acc_t<T>;
    __shared__ A scratch[32];
    for (int64_t row = blockIdx.x; row < rows; row += gridDim.x) {
        T *x_row = x + row * hidden;
        T *res_row = residual + row * hidden;
        A sum_sq = 0;
        for (int64_t j = threadIdx.x; j < hidden; j += blockDim.x) {
            const T sum = from_acc<T>(to_acc(x_row[j]) + to_acc(res_row[j]));
            res_row[j] = sum;
            const A v = to_acc(sum);
            sum_sq += v * v;
        }
        const A rstd = reciprocal_sqrt(block_sum(sum_sq, scratch) / A(hidden) + eps);
        // each thread reads back only the residual elements it wrote itself
        for (int64_t j = threadIdx.x; j < hidden; j += blockDim.x)
            x_row[j] = from_acc<T>(to_acc(res_row[j]) * rstd * to_acc(weight[j]));
    }
}

template <typename T>
int fused_add_rms_norm(void *x, void *residual, const void *weight, int64_t rows, int64_t hidden,
                       double eps, void *stream) {
    if (rows == 0 || hidden == 0) return 0;
    auto s = cudaStream_t(stream);
    auto *xt = static_cast<T *>(x);
    auto *rt = static_cast<T *>(residual);
    const auto *wt = static_cast<const T *>(weight);
    const acc_t<T> e = acc_t<T>(eps);
    const int64_t nvec = hidden / Vec<T>::size;
    const int nv = vectors_per_thread(nvec, 1024);
    if (nv > 0 && vectorizable<T>(hidden, {x, residual, weight})) {
        const int threads = threads_for(nvec, nv);
        const unsigned grid = rows_grid(rows);
        switch (nv) {
        case 1: fused_add_rms_norm_vec_kernel<T, 1><<<grid, threads, 0, s>>>(xt, rt, wt, rows, hidden, e); break;
        case 2: fused_add_rms_norm_vec_kernel<T, 2><<<grid, threads, 0, s>>>(xt, rt, wt, rows, hidden, e); break;
        case 4: fused_add_rms_norm_vec_kernel<T, 4><<<grid, threads, 0, s>>>(xt, rt, wt, rows, hidden, e); break;
        default: fused_add_rms_norm_vec_kernel<T, 8><<<grid, threads, 0, s>>>(xt, rt, wt, rows, hidden, e); break;
        }
    } else {
        const int threads = hidden < kGenericThreads ? threads_for(hidden, 1) : kGenericThreads;
        fused_add_rms_norm_generic_kernel<T><<<grid_for(rows * threads, threads), threads, 0, s>>>(
            xt, rt, wt, rows, hidden, e);
    }
    return int(cudaGetLastError());
}

}  // namespace
}  // namespace my_ops

extern "C" {

int64_t my_ops_rms_norm_backward_cuda_partials(int64_t rows) {
    // Four blocks per multiprocessor keep the device busy; more only grows
    // the partial sums that the final reduction has to read.
    const int64_t blocks = int64_t(my_ops::sm_count()) * 4;
    return rows < blocks ? (rows > 0 ? rows : 1) : blocks;
}

int my_ops_rms_norm_cuda(my_ops_dtype dtype, const void *x, const void *weight, void *y,
                         int64_t rows, int64_t hidden, double eps, void *stream) {
    MY_OPS_CUDA_DISPATCH(dtype, my_ops::rms_norm, x, weight, y, rows, hidden, eps, stream);
}

int my_ops_rms_norm_backward_cuda(my_ops_dtype dtype, const void *grad_out, const void *x,
                                  const void *weight, void *grad_x, void *grad_weight,
                                  void *workspace, int64_t partials, int64_t rows,
                                  int64_t hidden, double eps, void *stream) {
    MY_OPS_CUDA_DISPATCH(dtype, my_ops::rms_norm_backward, grad_out, x, weight, grad_x,
                         grad_weight, workspace, partials, rows, hidden, eps, stream);
}

int my_ops_fused_add_rms_norm_cuda(my_ops_dtype dtype, void *x, void *residual,
                                   const void *weight, int64_t rows, int64_t hidden, double eps,
                                   void *stream) {
    MY_OPS_CUDA_DISPATCH(dtype, my_ops::fused_add_rms_norm, x, residual, weight, rows, hidden,
                         eps, stream);
}

}  // extern "C"
