// RMSNorm on CUDA: forward, backward (dx and dweight), fused residual add.
//
// Fast path: the row held in registers as 16-byte vectors, so each input
// byte is read from device memory once. A row of nvec vectors is spread over
// at most 256 threads holding NV vectors each (more vectors per thread before
// more threads: fewer warps in each block reduction); rows too long for that,
// and forward calls with too few rows to fill the device, use up to 512 or
// 1024 threads (rms_norm_layout and its neighbours below). Used when the row is a
// whole number of vectors and every pointer is 16-byte aligned; otherwise a
// generic kernel reads the row twice with scalar loads (the second read
// mostly hits L1/L2). Measurements behind each choice: benchmarks/NOTES.md.
#include <type_traits>

#include "common.cuh"

namespace my_ops {
namespace {

constexpr int kGenericThreads = 256;
constexpr int kRowThreads = 256;

inline int threads_for(int64_t nvec, int nv) {
    const int64_t threads = ceil_div(ceil_div(nvec, nv), 32) * 32;
    return int(threads < 32 ? 32 : threads);
}

// How a row of nvec vectors is spread over a block: nv vectors per thread
// over `threads` threads, in the kernel instantiated for at most max_threads
// (its launch bound). nv == 0: no layout fits.
struct RowLayout {
    int nv, threads, max_threads;
};

// Up to kRowThreads threads with nv in {1, .., small_max_nv}; else up to
// wide_threads with nv in {wide_min_nv, .., 8}.
inline RowLayout row_layout(int64_t nvec, int small_max_nv, int wide_threads, int wide_min_nv) {
    for (int nv = 1; nv <= small_max_nv; nv *= 2)
        if (nvec <= int64_t(nv) * kRowThreads) return {nv, threads_for(nvec, nv), kRowThreads};
    for (int nv = wide_min_nv; nv <= 8; nv *= 2)
        if (nvec <= int64_t(nv) * wide_threads) return {nv, threads_for(nvec, nv), wide_threads};
    return {0, 0, 0};
}

// The layouts of each kernel family, from benchmarks/tuning/layouts.cu on an
// H100. Forward kernels with fewer rows than two per multiprocessor are bound
// by load latency, and more threads per row (fewer vectors each) finish
// sooner. Otherwise up to 256 threads; rows longer than that take 1024
// threads (rms_norm forward) or 512 with 4-8 vectors each (the fused add and
// the backward, which hold more per vector: measured 9% faster for the fused
// add at hidden 16384 than 256 threads of 8).
inline bool few_rows(int64_t rows) { return rows < 2 * int64_t(sm_count()); }

inline RowLayout rms_norm_layout(int64_t rows, int64_t nvec) {
    return few_rows(rows) ? row_layout(nvec, 0, 1024, 1) : row_layout(nvec, 8, 1024, 4);
}

inline RowLayout fused_add_layout(int64_t rows, int64_t nvec) {
    return few_rows(rows) ? row_layout(nvec, 0, 1024, 1) : row_layout(nvec, 4, 512, 4);
}

inline RowLayout backward_layout(int64_t nvec) { return row_layout(nvec, 4, 512, 4); }

template <int N> using Int = std::integral_constant<int, N>;

template <int NV, int kMaxThreads> struct Layout {
    static constexpr int nv = NV, max_threads = kMaxThreads;
};

// The (NV, max threads) instantiations of one kernel family:
// Layouts<...>::launch(layout, f) calls f(Int<NV>, Int<max threads>) for the
// one that matches `layout`; false when none does.
template <typename... Candidates> struct Layouts {
    template <typename Launch> static bool launch(const RowLayout &layout, Launch &&f) {
        return ((layout.nv == Candidates::nv && layout.max_threads == Candidates::max_threads &&
                 (f(Int<Candidates::nv>{}, Int<Candidates::max_threads>{}), true)) ||
                ...);
    }
};

using RmsNormLayouts = Layouts<Layout<1, 256>, Layout<2, 256>, Layout<4, 256>, Layout<8, 256>,
                               Layout<1, 1024>, Layout<2, 1024>, Layout<4, 1024>, Layout<8, 1024>>;
using FusedAddLayouts = Layouts<Layout<1, 256>, Layout<2, 256>, Layout<4, 256>, Layout<4, 512>,
                                Layout<8, 512>, Layout<1, 1024>, Layout<2, 1024>, Layout<4, 1024>,
                                Layout<8, 1024>>;
using BackwardLayouts =
    Layouts<Layout<1, 256>, Layout<2, 256>, Layout<4, 256>, Layout<4, 512>, Layout<8, 512>>;

// One block per row, as far as the grid allows (the kernels loop past it):
// measured faster than a grid-stride loop for the forward kernels, which keep
// nothing across rows.
inline unsigned rows_grid(int64_t rows) { return unsigned(rows < 0x7fffffff ? rows : 0x7fffffff); }

template <typename T> bool vectorizable(int64_t hidden, std::initializer_list<const void *> ptrs) {
    if (hidden % Vec<T>::size != 0) return false;
    for (const void *p : ptrs)
        if (!is_aligned16(p)) return false;
    return true;
}

// ------------------------------------------------------------- forward --

// Loads this thread's vectors of one row (those with index < nvec).
template <typename V, int NV>
__device__ __forceinline__ void load_row(V (&held)[NV], const V *row, int nvec) {
#pragma unroll
    for (int k = 0; k < NV; ++k) {
        const int i = threadIdx.x + k * blockDim.x;
        if (i < nvec) held[k] = row[i];
    }
}

// out[i] = held * rstd * weight, for this thread's vectors of one row.
template <typename T, int NV>
__device__ __forceinline__ void store_normalized(const Vec<T> (&held)[NV], const Vec<T> *weight,
                                                 acc_t<T> rstd, Vec<T> *out, int nvec) {
#pragma unroll
    for (int k = 0; k < NV; ++k) {
        const int i = threadIdx.x + k * blockDim.x;
        if (i < nvec) {
            const Vec<T> wv = weight[i];
            Vec<T> result;
#pragma unroll
            for (int e = 0; e < Vec<T>::size; ++e)
                result.v[e] = from_acc<T>(to_acc(held[k].v[e]) * rstd * to_acc(wv.v[e]));
            out[i] = result;
        }
    }
}

template <typename T, int NV, int kMaxThreads>
__global__ void __launch_bounds__(kMaxThreads)
rms_norm_vec_kernel(const T *__restrict__ x, const T *__restrict__ weight, T *__restrict__ y,
                    int64_t rows, int64_t hidden, acc_t<T> eps) {
    using A = acc_t<T>;
    using V = Vec<T>;
    __shared__ A scratch[32];
    const int nvec = int(hidden / V::size);
    const V *w = reinterpret_cast<const V *>(weight);
    for (int64_t row = blockIdx.x; row < rows; row += gridDim.x) {
        V held[NV];
        load_row(held, reinterpret_cast<const V *>(x + row * hidden), nvec);
        A sum_sq = 0;
#pragma unroll
        for (int k = 0; k < NV; ++k) {
            const int i = threadIdx.x + k * blockDim.x;
            if (i < nvec) {
#pragma unroll
                for (int e = 0; e < V::size; ++e) {
                    const A v = to_acc(held[k].v[e]);
                    sum_sq += v * v;
                }
            }
        }
        const A rstd = reciprocal_sqrt(block_sum(sum_sq, scratch) / A(hidden) + eps);
        store_normalized(held, w, rstd, reinterpret_cast<V *>(y + row * hidden), nvec);
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
    const RowLayout layout = rms_norm_layout(rows, hidden / Vec<T>::size);
    if (layout.nv > 0 && vectorizable<T>(hidden, {x, weight, y})) {
        RmsNormLayouts::launch(layout, [&](auto nv, auto max_threads) {
            rms_norm_vec_kernel<T, decltype(nv)::value, decltype(max_threads)::value><<<rows_grid(rows), layout.threads, 0, s>>>(
                xt, wt, yt, rows, hidden, e);
        });
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

// A persistent grid (as many blocks as fit on the device at once) walks the
// rows, so each block's dweight sums stay in registers until the end. With at
// most 256 threads the next row's loads are issued before this row's
// reduction, so they are in flight while the block waits at its barriers.
template <typename T, int NV, int kMaxThreads>
__global__ void __launch_bounds__(kMaxThreads)
rms_norm_backward_vec_kernel(const T *__restrict__ grad_out, const T *__restrict__ x,
                             const T *__restrict__ weight, T *__restrict__ grad_x,
                             acc_t<T> *__restrict__ partial, int64_t rows, int64_t hidden,
                             acc_t<T> eps) {
    using A = acc_t<T>;
    using V = Vec<T>;
    // Layouts of more than kRowThreads threads (4-8 vectors each) have no
    // registers to spare for the next row or for holding the weight
    // (measured: spills cost more than the reloads).
    constexpr bool kPrefetch = kMaxThreads <= kRowThreads, kHoldWeight = kPrefetch;
    const int nvec = int(hidden / V::size);
    const V *w_row = reinterpret_cast<const V *>(weight);
    V w_held[kHoldWeight ? NV : 1];  // this thread's weight vectors, the same for every row
    A dweight[NV][V::size];
#pragma unroll
    for (int k = 0; k < NV; ++k) {
        const int i = threadIdx.x + k * blockDim.x;
        if constexpr (kHoldWeight)
            if (i < nvec) w_held[k] = w_row[i];
#pragma unroll
        for (int e = 0; e < V::size; ++e) dweight[k][e] = 0;
    }
    auto weight_vec = [&](int k, int i) -> V {
        if constexpr (kHoldWeight) return w_held[k];
        else return w_row[i];
    };

    __shared__ Pair2<A> pair_scratch[32];
    int64_t row = blockIdx.x;
    V xs[NV], dys[NV], next_x[kPrefetch ? NV : 1], next_dy[kPrefetch ? NV : 1];
    auto load = [&](V(&x_held)[NV], V(&dy_held)[NV], int64_t r) {
        load_row(x_held, reinterpret_cast<const V *>(x + r * hidden), nvec);
        load_row(dy_held, reinterpret_cast<const V *>(grad_out + r * hidden), nvec);
    };
    if constexpr (kPrefetch)
        if (row < rows) load(xs, dys, row);
    for (; row < rows; row += gridDim.x) {
        if constexpr (kPrefetch) {
            if (row + gridDim.x < rows) load(next_x, next_dy, row + gridDim.x);
        } else {
            load(xs, dys, row);
        }
        A sum_sq = 0, dot = 0;
#pragma unroll
        for (int k = 0; k < NV; ++k) {
            const int i = threadIdx.x + k * blockDim.x;
            if (i < nvec) {
                const V wv = weight_vec(k, i);
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
            const int i = threadIdx.x + k * blockDim.x;
            if (i < nvec) {
                const V wv = weight_vec(k, i);
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
        if constexpr (kPrefetch)
#pragma unroll
            for (int k = 0; k < NV; ++k) {
                xs[k] = next_x[k];
                dys[k] = next_dy[k];
            }
    }
    A *my_partial = partial + int64_t(blockIdx.x) * hidden;
#pragma unroll
    for (int k = 0; k < NV; ++k) {
        const int i = threadIdx.x + k * blockDim.x;
        if (i < nvec)
#pragma unroll
            for (int e = 0; e < V::size; ++e) my_partial[int64_t(i) * V::size + e] = dweight[k][e];
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

// Blocks of the backward kernel that fit on the device at once (at least one
// per multiprocessor), no more than there are rows: each block adds one row
// of partial dweight sums, so a grid that runs in one wave keeps that small.
template <typename T> int64_t rms_norm_backward_partials(int64_t rows, int64_t hidden) {
    const RowLayout layout = backward_layout(hidden / Vec<T>::size);
    int per_sm = 0;
    if (layout.nv > 0)
        BackwardLayouts::launch(layout, [&](auto nv, auto max_threads) {
            if (cudaOccupancyMaxActiveBlocksPerMultiprocessor(
                    &per_sm, rms_norm_backward_vec_kernel<T, decltype(nv)::value, decltype(max_threads)::value>, layout.threads, 0) !=
                cudaSuccess)
                per_sm = 0;
        });
    const int64_t blocks = int64_t(sm_count()) * (per_sm > 0 ? per_sm : 2048 / kGenericThreads);
    return rows < blocks ? (rows > 0 ? rows : 1) : blocks;
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
    const RowLayout layout = backward_layout(hidden / Vec<T>::size);
    if (layout.nv > 0 && vectorizable<T>(hidden, {grad_out, x, weight, grad_x})) {
        BackwardLayouts::launch(layout, [&](auto nv, auto max_threads) {
            rms_norm_backward_vec_kernel<T, decltype(nv)::value, decltype(max_threads)::value><<<grid, layout.threads, 0, s>>>(
                dy, xt, wt, dx, partial, rows, hidden, e);
        });
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

template <typename T, int NV, int kMaxThreads>
__global__ void __launch_bounds__(kMaxThreads)
fused_add_rms_norm_vec_kernel(T *__restrict__ x, T *__restrict__ residual,
                              const T *__restrict__ weight, int64_t rows, int64_t hidden,
                              acc_t<T> eps) {
    using A = acc_t<T>;
    using V = Vec<T>;
    __shared__ A scratch[32];
    const int nvec = int(hidden / V::size);
    const V *w = reinterpret_cast<const V *>(weight);
    for (int64_t row = blockIdx.x; row < rows; row += gridDim.x) {
        V *x_row = reinterpret_cast<V *>(x + row * hidden);
        V *res_row = reinterpret_cast<V *>(residual + row * hidden);
        V held[NV];
        A sum_sq = 0;
#pragma unroll
        for (int k = 0; k < NV; ++k) {
            const int i = threadIdx.x + k * blockDim.x;
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
        store_normalized(held, w, rstd, x_row, nvec);
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
    const RowLayout layout = fused_add_layout(rows, hidden / Vec<T>::size);
    if (layout.nv > 0 && vectorizable<T>(hidden, {x, residual, weight})) {
        FusedAddLayouts::launch(layout, [&](auto nv, auto max_threads) {
            fused_add_rms_norm_vec_kernel<T, decltype(nv)::value, decltype(max_threads)::value><<<rows_grid(rows), layout.threads, 0, s>>>(
                xt, rt, wt, rows, hidden, e);
        });
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

int64_t my_ops_rms_norm_backward_cuda_partials(my_ops_dtype dtype, int64_t rows, int64_t hidden) {
    MY_OPS_CUDA_DISPATCH(dtype, my_ops::rms_norm_backward_partials, rows, hidden);
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
