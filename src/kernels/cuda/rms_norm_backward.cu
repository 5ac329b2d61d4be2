// RMSNorm backward on CUDA (the paths and the weight types: rms_norm.cuh):
// dx = rstd * w * dy - x * rstd^3 / hidden * sum(w * dy * x)
// dweight = sum over rows of dy * x * rstd: each block accumulates its rows
// into one row of `partial`, then sum_partials_kernel adds the rows up.
// Rows of vectors too long for the held-vector kernel take a column split
// instead (rms_norm_backward_columns_kernel), after a kernel that writes each
// row's rstd and coef to the workspace.
#include "rms_norm.cuh"

#include <algorithm>

namespace my_ops {
namespace {

// The backward's layout, from the first version of benchmarks/tuning/layouts.cu
// on an H100 (benchmarks/NOTES.md): up to 256 threads; rows longer than that
// take 512 threads with 4-8 vectors each, as the fused add does
// (rms_norm_forward.cu).
inline RowLayout backward_layout(int64_t nvec) { return row_layout(nvec, 1, 4, 512, 4); }

using BackwardLayouts =
    Layouts<Layout<1, 256>, Layout<2, 256>, Layout<4, 256>, Layout<4, 512>, Layout<8, 512>>;

// One vector's part of the two row sums: sum(x^2) and sum(dy * w * x).
template <typename T, typename V, typename WV>
__device__ __forceinline__ void add_backward_sums(const V &x, const V &dy, const WV &w,
                                                  acc_t<T> &sum_sq, acc_t<T> &dot) {
#pragma unroll
    for (int e = 0; e < V::size; ++e) {
        const acc_t<T> xa = to_acc(x.v[e]);
        sum_sq += xa * xa;
        dot += to_acc(dy.v[e]) * to_acc(w.v[e]) * xa;
    }
}

// One vector of dx, and its columns' dweight terms added to dweight.
template <typename T, typename V, typename WV>
__device__ __forceinline__ V backward_dx(const V &x, const V &dy, const WV &w, acc_t<T> rstd,
                                         acc_t<T> coef, acc_t<T> (&dweight)[V::size]) {
    V out;
#pragma unroll
    for (int e = 0; e < V::size; ++e) {
        const acc_t<T> xa = to_acc(x.v[e]), dya = to_acc(dy.v[e]);
        out.v[e] = from_acc<T>(rstd * to_acc(w.v[e]) * dya - coef * xa);
        dweight[e] += dya * xa * rstd;
    }
    return out;
}

// A persistent grid (as many blocks as fit on the device at once) walks the
// rows, so each block's dweight sums stay in registers until the end. With at
// most 256 threads the next row's loads are issued before this row's
// reduction, so they are in flight while the block waits at its barriers.
// __launch_bounds__'s minimum of resident blocks for the vector kernel: none,
// but one for a float weight beside 16-bit rows at 8 vectors per thread, where
// without it ptxas chose half the registers the launch bound allows and spilled
// more than the same layout with a 16-bit weight.
template <typename T, typename W, int NV> constexpr int backward_min_blocks() {
    return !std::is_same<T, W>::value && NV == 8 ? 1 : 0;
}

template <typename T, typename W, int NV, int kMaxThreads>
__global__ void __launch_bounds__(kMaxThreads, (backward_min_blocks<T, W, NV>()))
rms_norm_backward_vec_kernel(const T *__restrict__ grad_out, int64_t dy_stride,
                             const T *__restrict__ x, int64_t x_stride,
                             const W *__restrict__ weight, T *__restrict__ grad_x,
                             acc_t<T> *__restrict__ partial, int64_t rows, int64_t hidden,
                             acc_t<T> eps) {
    using A = acc_t<T>;
    using V = Vec<T>;
    using WV = WeightVec<T, W>;
    // Layouts of more than kRowThreads threads (4-8 vectors each) have no
    // registers to spare for the next row or for holding the weight
    // (measured: spills cost more than the reloads). Nor has a float weight
    // beside 16-bit rows, twice the registers of theirs: measured slower held
    // than read again from L1 for each row.
    constexpr bool kPrefetch = kMaxThreads <= kRowThreads;
    constexpr bool kHoldWeight = kPrefetch && std::is_same<T, W>::value;
    // Nor, at the widest layout of 16-bit rows (8 vectors of 8 columns a
    // thread), for holding the row: x, dy and the dweight sums of 64 columns
    // need more than the 128 registers a 512-thread block leaves a thread,
    // and spilled. There the dx pass reads x and dy again, from L2, where
    // the sums' pass left them.
    constexpr bool kHoldRow = !(NV == 8 && sizeof(T) == 2);
    static_assert(kHoldRow || !kPrefetch, "a prefetched row is a held row");
    constexpr int kHeld = kHoldRow ? NV : 1;
    const int nvec = int(hidden / V::size);
    const WV *w_row = reinterpret_cast<const WV *>(weight);
    WV w_held[kHoldWeight ? NV : 1];  // this thread's weight vectors, the same for every row
    A dweight[NV][V::size];
#pragma unroll
    for (int k = 0; k < NV; ++k) {
        const int i = threadIdx.x + k * blockDim.x;
        if constexpr (kHoldWeight)
            if (i < nvec) w_held[k] = w_row[i];
#pragma unroll
        for (int e = 0; e < V::size; ++e) dweight[k][e] = 0;
    }
    auto weight_vec = [&](int k, int i) -> WV {
        if constexpr (kHoldWeight)
            return w_held[k];
        else
            return w_row[i];
    };

    __shared__ Pair2<A> pair_scratch[32];
    int64_t row = blockIdx.x;
    V xs[kHeld], dys[kHeld], next_x[kPrefetch ? NV : 1], next_dy[kPrefetch ? NV : 1];
    auto load = [&](V(&x_held)[kHeld], V(&dy_held)[kHeld], int64_t r) {
        if constexpr (kHoldRow) {
            load_row(x_held, reinterpret_cast<const V *>(x + r * x_stride), nvec);
            load_row(dy_held, reinterpret_cast<const V *>(grad_out + r * dy_stride), nvec);
        }
    };
    // vector i (the k-th of this thread) of row r's x and dy: held, or read
    auto x_vec = [&](int k, int i, int64_t r) -> V {
        if constexpr (kHoldRow)
            return xs[k];
        else
            return reinterpret_cast<const V *>(x + r * x_stride)[i];
    };
    auto dy_vec = [&](int k, int i, int64_t r) -> V {
        if constexpr (kHoldRow)
            return dys[k];
        else
            return reinterpret_cast<const V *>(grad_out + r * dy_stride)[i];
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
            if (i < nvec)
                add_backward_sums<T>(x_vec(k, i, row), dy_vec(k, i, row), weight_vec(k, i), sum_sq,
                                     dot);
        }
        const Pair2<A> sums = block_sum2(sum_sq, dot, pair_scratch);
        const A rstd = reciprocal_sqrt(sums.a / A(hidden) + eps);
        const A coef = sums.b * rstd * rstd * rstd / A(hidden);
        V *dx_row = reinterpret_cast<V *>(grad_x + row * hidden);
#pragma unroll
        for (int k = 0; k < NV; ++k) {
            const int i = threadIdx.x + k * blockDim.x;
            if (i < nvec)
                dx_row[i] = backward_dx<T>(x_vec(k, i, row), dy_vec(k, i, row), weight_vec(k, i),
                                           rstd, coef, dweight[k]);
        }
        if constexpr (kPrefetch)
#pragma unroll
            for (int k = 0; k < kHeld; ++k) {
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

// Narrow rows (rows.cuh): each lane keeps the dweight sums of its vector's
// columns over the rows its group walks; at the end the block's groups add
// theirs up in shared memory and the block writes one partial row.
template <typename T, typename W, int G>
__global__ void __launch_bounds__(kGroupThreads)
rms_norm_backward_group_kernel(const T *__restrict__ grad_out, int64_t dy_stride,
                               const T *__restrict__ x, int64_t x_stride,
                               const W *__restrict__ weight, T *__restrict__ grad_x,
                               acc_t<T> *__restrict__ partial, int64_t rows, int64_t hidden,
                               acc_t<T> eps) {
    using A = acc_t<T>;
    using V = Vec<T>;
    constexpr int kGroups = kGroupThreads / G;
    __shared__ A group_sums[kGroups][G * V::size];
    const int nvec = int(hidden / V::size);
    const int lane = threadIdx.x % G;
    WeightVec<T, W> w;
    if (lane < nvec) w = reinterpret_cast<const WeightVec<T, W> *>(weight)[lane];
    A dweight[V::size];
#pragma unroll
    for (int e = 0; e < V::size; ++e) dweight[e] = 0;
    for_each_group_row<G>(rows, [&](int64_t row, bool in_range) {
        const bool mine = in_range && lane < nvec;
        V xv, dyv;
        A sum_sq = 0, dot = 0;
        if (mine) {
            xv = reinterpret_cast<const V *>(x + row * x_stride)[lane];
            dyv = reinterpret_cast<const V *>(grad_out + row * dy_stride)[lane];
            add_backward_sums<T>(xv, dyv, w, sum_sq, dot);
        }
        sum_sq = group_sum<G>(sum_sq);
        dot = group_sum<G>(dot);
        if (mine) {
            const A rstd = reciprocal_sqrt(sum_sq / A(hidden) + eps);
            const A coef = dot * rstd * rstd * rstd / A(hidden);
            reinterpret_cast<V *>(grad_x + row * hidden)[lane] =
                backward_dx<T>(xv, dyv, w, rstd, coef, dweight);
        }
    });
#pragma unroll
    for (int e = 0; e < V::size; ++e) group_sums[threadIdx.x / G][lane * V::size + e] = dweight[e];
    __syncthreads();
    for (int j = threadIdx.x; j < hidden; j += blockDim.x) {
        A total = 0;
        for (int g = 0; g < kGroups; ++g) total += group_sums[g][j];
        partial[int64_t(blockIdx.x) * hidden + j] = total;
    }
}

template <typename T, typename W>
__global__ void rms_norm_backward_generic_kernel(const T *__restrict__ grad_out, int64_t dy_stride,
                                                 const T *__restrict__ x, int64_t x_stride,
                                                 const W *__restrict__ weight,
                                                 T *__restrict__ grad_x,
                                                 acc_t<T> *__restrict__ partial, int64_t rows,
                                                 int64_t hidden, acc_t<T> eps) {
    using A = acc_t<T>;
    __shared__ A scratch[32];
    // Each thread owns columns threadIdx.x + k * blockDim.x of this block's partial row.
    A *my_partial = partial + int64_t(blockIdx.x) * hidden;
    for (int64_t j = threadIdx.x; j < hidden; j += blockDim.x) my_partial[j] = 0;
    for (int64_t row = blockIdx.x; row < rows; row += gridDim.x) {
        const T *x_row = x + row * x_stride;
        const T *dy_row = grad_out + row * dy_stride;
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

// ------------------------------------------------------ column split --
// Rows of 16-byte vectors past the held-vector layouts (over 4096 vectors:
// hidden > 32768 in 16-bit types, > 16384 in float32, > 8192 in float64).
// The generic kernel would read them as single elements and read-modify-write
// a partial dweight row of `hidden` sums in global memory for every row it
// walks, more traffic than the rows themselves. Two kernels instead: the
// first reads each row's x and dy once for its two sums and writes its rstd
// and coef; the second gives each thread one vector of columns over a chunk
// of rows, so its dweight sums stay in registers for the whole chunk and each
// chunk writes one partial row. x and dy are read twice and dx written once:
// five row-sized transfers where the held-vector kernel moves three.

// One row's factors of dx: dx = rstd * w * dy - coef * x. Two scalars, not
// one aligned pair: the workspace is only as aligned as its element type.
template <typename A> struct RowStats {
    A rstd, coef;
};

// The statistics kernel: a block per row (the grid loops past 2^31 - 1 rows),
// each thread asking for kStatsVectors vectors of x, dy and w before adding
// any up (ptxas may still interleave the loads with the sums, as registers
// allow; the blocks resident beside it keep memory busy then). 256 threads:
// at 512, ptxas for sm_120 spilled a few registers.
constexpr int kStatsThreads = 256;
constexpr int kStatsVectors = 4;

template <typename T, typename W>
__global__ void __launch_bounds__(kStatsThreads)
rms_norm_backward_stats_kernel(const T *__restrict__ grad_out, int64_t dy_stride,
                               const T *__restrict__ x, int64_t x_stride,
                               const W *__restrict__ weight, RowStats<acc_t<T>> *__restrict__ stats,
                               int64_t rows, int64_t hidden, acc_t<T> eps) {
    using A = acc_t<T>;
    using V = Vec<T>;
    using WV = WeightVec<T, W>;
    __shared__ Pair2<A> pair_scratch[32];
    const int64_t nvec = hidden / V::size, step = blockDim.x;
    const WV *w_row = reinterpret_cast<const WV *>(weight);
    for (int64_t row = blockIdx.x; row < rows; row += gridDim.x) {
        const V *x_row = reinterpret_cast<const V *>(x + row * x_stride);
        const V *dy_row = reinterpret_cast<const V *>(grad_out + row * dy_stride);
        A sum_sq = 0, dot = 0;
        int64_t i = threadIdx.x;
        // whole rounds of kStatsVectors vectors: all loads issued before the sums
        for (; i + (kStatsVectors - 1) * step < nvec; i += kStatsVectors * step) {
            V xs[kStatsVectors], dys[kStatsVectors];
            WV ws[kStatsVectors];
#pragma unroll
            for (int k = 0; k < kStatsVectors; ++k) {
                xs[k] = x_row[i + k * step];
                dys[k] = dy_row[i + k * step];
                ws[k] = w_row[i + k * step];
            }
#pragma unroll
            for (int k = 0; k < kStatsVectors; ++k)
                add_backward_sums<T>(xs[k], dys[k], ws[k], sum_sq, dot);
        }
        for (; i < nvec; i += step) {
            // copies: by reference, the elements were read one at a time
            const V xv = x_row[i], dyv = dy_row[i];
            const WV wv = w_row[i];
            add_backward_sums<T>(xv, dyv, wv, sum_sq, dot);
        }
        const Pair2<A> sums = block_sum2(sum_sq, dot, pair_scratch);
        if (threadIdx.x == 0) {
            const A rstd = reciprocal_sqrt(sums.a / A(hidden) + eps);
            stats[row] = RowStats<A>{rstd, sums.b * rstd * rstd * rstd / A(hidden)};
        }
    }
}

// The column kernel: blockIdx.x a tile of kColumnThreads vectors of columns
// (a thread each), blockIdx.y a chunk of chunk_rows rows. Each thread reads
// its weight vector once, then walks its chunk kColumnRows rows at a time,
// asking for all their x and dy before storing any dx: with no reduction,
// the loads in flight are all that keeps memory busy (ptxas still schedules
// some of them after the first rows' arithmetic, as registers allow).
constexpr int kColumnThreads = 256;
constexpr int kColumnRows = 4;

template <typename T, typename W>
__global__ void __launch_bounds__(kColumnThreads)
rms_norm_backward_columns_kernel(const T *__restrict__ grad_out, int64_t dy_stride,
                                 const T *__restrict__ x, int64_t x_stride,
                                 const W *__restrict__ weight,
                                 const RowStats<acc_t<T>> *__restrict__ stats,
                                 T *__restrict__ grad_x, acc_t<T> *__restrict__ partial,
                                 int64_t rows, int64_t chunk_rows, int64_t hidden) {
    using A = acc_t<T>;
    using V = Vec<T>;
    const int64_t i = int64_t(blockIdx.x) * kColumnThreads + threadIdx.x;  // this thread's vector
    if (i >= hidden / V::size) return;  // past the last tile's columns (no barrier below)
    const WeightVec<T, W> w = reinterpret_cast<const WeightVec<T, W> *>(weight)[i];
    A dweight[V::size];
#pragma unroll
    for (int e = 0; e < V::size; ++e) dweight[e] = 0;
    auto x_vec = [&](int64_t r) { return reinterpret_cast<const V *>(x + r * x_stride)[i]; };
    auto dy_vec = [&](int64_t r) {
        return reinterpret_cast<const V *>(grad_out + r * dy_stride)[i];
    };
    auto dx_vec = [&](int64_t r) -> V & { return reinterpret_cast<V *>(grad_x + r * hidden)[i]; };
    const int64_t first = int64_t(blockIdx.y) * chunk_rows;
    const int64_t end = first + chunk_rows < rows ? first + chunk_rows : rows;
    int64_t row = first;
    for (; row + kColumnRows <= end; row += kColumnRows) {
        V xs[kColumnRows], dys[kColumnRows], dxs[kColumnRows];
        RowStats<A> s[kColumnRows];
#pragma unroll
        for (int u = 0; u < kColumnRows; ++u) {
            xs[u] = x_vec(row + u);
            dys[u] = dy_vec(row + u);
            s[u] = stats[row + u];
        }
        // dx stored after all the round's loads: with each row's store
        // between them, ptxas issued each row's loads after the previous
        // row's store, one row in flight.
#pragma unroll
        for (int u = 0; u < kColumnRows; ++u)
            dxs[u] = backward_dx<T>(xs[u], dys[u], w, s[u].rstd, s[u].coef, dweight);
#pragma unroll
        for (int u = 0; u < kColumnRows; ++u) dx_vec(row + u) = dxs[u];
    }
    for (; row < end; ++row) {
        const RowStats<A> s = stats[row];
        dx_vec(row) = backward_dx<T>(x_vec(row), dy_vec(row), w, s.rstd, s.coef, dweight);
    }
    A *my_partial = partial + int64_t(blockIdx.y) * hidden + i * V::size;
#pragma unroll
    for (int e = 0; e < V::size; ++e) my_partial[e] = dweight[e];
}

// grad_weight[j] = sum over p of partial[p, j], written as the weight's type W.
// Block: 32 columns x 16 slices of p.
template <typename T, typename W>
__global__ void sum_partials_kernel(const acc_t<T> *__restrict__ partial, W *__restrict__ out,
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
        out[j] = from_acc<W>(total);
    }
}

// Which kernels take rows of `hidden` elements; `vec`: whether the rows can
// be read as 16-byte vectors (vectorizable()). rms_norm_backward_partials,
// which sees no pointers, asks with vec = whether the width allows it; the
// launcher, with its pointers, may then take the generic kernel instead.
enum class BackwardPath { kGroups, kHeld, kColumns, kGeneric };

template <typename T> BackwardPath backward_path(int64_t hidden, bool vec) {
    if (!vec) return BackwardPath::kGeneric;
    const int64_t nvec = hidden / Vec<T>::size;
    if (group_size(nvec) > 0) return BackwardPath::kGroups;
    if (backward_layout(nvec).nv > 0) return BackwardPath::kHeld;
    return BackwardPath::kColumns;
}

// The column split's grid and workspace: tiles x chunks blocks, about one
// wave of the column kernel (fewer chunks would leave multiprocessors idle,
// more would only add partial rows to sum), or one chunk when the tiles alone
// fill more than a wave (grid.y stays within its limit of 65535). Every
// chunk holds at least one row. The workspace holds the chunks' partial rows,
// then the rows' statistics, in stats_rows more rows of the workspace.
struct ColumnSplit {
    int64_t tiles, chunks, chunk_rows, stats_rows;
};

template <typename T, typename W> ColumnSplit column_split(int64_t rows, int64_t hidden) {
    using A = acc_t<T>;
    const int64_t tiles = ceil_div(hidden / Vec<T>::size, kColumnThreads);
    const int64_t wave = resident_blocks(rms_norm_backward_columns_kernel<T, W>, kColumnThreads, 0);
    const int64_t wanted = std::min<int64_t>(std::max<int64_t>(wave / tiles, 1), 65535);
    const int64_t chunk_rows = std::max<int64_t>(ceil_div(rows, wanted), 1);
    const int64_t stats_rows =
        ceil_div(rows * int64_t(sizeof(RowStats<A>)), hidden * int64_t(sizeof(A)));
    return {tiles, ceil_div(rows, chunk_rows), chunk_rows, stats_rows};
}

// Blocks of the backward kernel that fit on the device at once (at least one
// per multiprocessor), no more than there is work for: each block adds one
// row of partial dweight sums, so a grid that runs in one wave keeps that small.
// The column split: its chunks and the rows of its statistics (column_split).
template <typename T, typename W> int64_t rms_norm_backward_partials(int64_t rows, int64_t hidden) {
    const int64_t nvec = hidden / Vec<T>::size;
    const BackwardPath path = backward_path<T>(hidden, hidden % Vec<T>::size == 0);
    if (path == BackwardPath::kColumns) {
        // at least two rows per multiprocessor (no more than there are rows):
        // rows whose pointers turn out not to be 16-byte multiples take the
        // generic kernel, a block per row of the workspace
        const ColumnSplit split = column_split<T, W>(rows, hidden);
        return std::max<int64_t>(
            split.chunks + split.stats_rows,
            std::min<int64_t>(std::max<int64_t>(rows, 1), 2 * int64_t(sm_count())));
    }
    const int g = path == BackwardPath::kGroups ? group_size(nvec) : 0;
    int per_sm = 0;
    int64_t work = rows;  // rows, or groups of rows for the narrow-row kernel
    auto occupancy = [&](const void *kernel, int threads) {
        if (cudaOccupancyMaxActiveBlocksPerMultiprocessor(&per_sm, kernel, threads, 0) !=
            cudaSuccess)
            per_sm = 0;
    };
    if (g > 0) {
        AllGroupSizes::launch(g, [&](auto G) {
            occupancy(reinterpret_cast<const void *>(
                          rms_norm_backward_group_kernel<T, W, decltype(G)::value>),
                      kGroupThreads);
            work = ceil_div(rows, kGroupThreads / decltype(G)::value);
        });
    } else {
        const RowLayout layout = backward_layout(nvec);
        if (layout.nv > 0)
            BackwardLayouts::launch(layout, [&](auto nv, auto max_threads) {
                occupancy(reinterpret_cast<const void *>(
                              rms_norm_backward_vec_kernel<T, W, decltype(nv)::value,
                                                           decltype(max_threads)::value>),
                          layout.threads);
            });
    }
    const int64_t blocks = int64_t(sm_count()) * (per_sm > 0 ? per_sm : 2048 / kGenericThreads);
    return work < blocks ? (work > 0 ? work : 1) : blocks;
}

template <typename T, typename W>
int rms_norm_backward(const void *grad_out, int64_t dy_stride, const void *x, int64_t x_stride,
                      const void *weight, void *grad_x, void *grad_weight, void *workspace,
                      int64_t partials, int64_t rows, int64_t hidden, double eps, void *stream) {
    if (hidden == 0) return 0;
    auto s = cudaStream_t(stream);
    using A = acc_t<T>;
    auto *partial = static_cast<A *>(workspace);
    auto *gw = static_cast<W *>(grad_weight);
    if (rows == 0) {  // grad_weight of no rows is zero
        sum_partials_kernel<T, W>
            <<<unsigned(ceil_div(hidden, 32)), dim3(32, 16), 0, s>>>(partial, gw, 0, hidden);
        return int(cudaGetLastError());
    }
    const auto *dy = static_cast<const T *>(grad_out);
    const auto *xt = static_cast<const T *>(x);
    const auto *wt = static_cast<const W *>(weight);
    auto *dx = static_cast<T *>(grad_x);
    const A e = A(eps);
    const unsigned grid = unsigned(partials);
    const int64_t nvec = hidden / Vec<T>::size;
    const bool vec = vectorizable<T>(
        hidden, {{grad_out, dy_stride}, {x, x_stride}, {weight, 0}, {grad_x, hidden}});
    const BackwardPath path = backward_path<T>(hidden, vec);
    int64_t summed = partials;  // partial rows for sum_partials_kernel
    if (path == BackwardPath::kGroups) {
        AllGroupSizes::launch(group_size(nvec), [&](auto G) {
            rms_norm_backward_group_kernel<T, W, decltype(G)::value><<<grid, kGroupThreads, 0, s>>>(
                dy, dy_stride, xt, x_stride, wt, dx, partial, rows, hidden, e);
        });
    } else if (path == BackwardPath::kHeld) {
        const RowLayout layout = backward_layout(nvec);
        BackwardLayouts::launch(layout, [&](auto nv, auto max_threads) {
            rms_norm_backward_vec_kernel<T, W, decltype(nv)::value, decltype(max_threads)::value>
                <<<grid, layout.threads, 0, s>>>(dy, dy_stride, xt, x_stride, wt, dx, partial, rows,
                                                 hidden, e);
        });
    } else if (path == BackwardPath::kColumns) {
        const ColumnSplit split = column_split<T, W>(rows, hidden);
        // a workspace sized for another device's grid
        if (partials < split.chunks + split.stats_rows) return int(cudaErrorInvalidValue);
        auto *stats = reinterpret_cast<RowStats<A> *>(partial + split.chunks * hidden);
        rms_norm_backward_stats_kernel<T, W><<<rows_grid(rows), kStatsThreads, 0, s>>>(
            dy, dy_stride, xt, x_stride, wt, stats, rows, hidden, e);
        const int err = int(cudaGetLastError());
        if (err != 0) return err;
        rms_norm_backward_columns_kernel<T, W>
            <<<dim3(unsigned(split.tiles), unsigned(split.chunks)), kColumnThreads, 0, s>>>(
                dy, dy_stride, xt, x_stride, wt, stats, dx, partial, rows, split.chunk_rows,
                hidden);
        summed = split.chunks;
    } else {
        // One block per row of the workspace. Rows whose width took the
        // column split in rms_norm_backward_partials but whose pointers or
        // strides are not 16-byte multiples get its rows (two per
        // multiprocessor at least), fewer blocks than the generic kernel's own count.
        const int threads = hidden < kGenericThreads ? threads_for(hidden, 1) : kGenericThreads;
        rms_norm_backward_generic_kernel<T, W><<<grid, threads, 0, s>>>(
            dy, dy_stride, xt, x_stride, wt, dx, partial, rows, hidden, e);
    }
    const int err = int(cudaGetLastError());
    if (err != 0) return err;
    sum_partials_kernel<T, W>
        <<<unsigned(ceil_div(hidden, 32)), dim3(32, 16), 0, s>>>(partial, gw, summed, hidden);
    return int(cudaGetLastError());
}

}  // namespace
}  // namespace my_ops

extern "C" {

int64_t my_ops_rms_norm_backward_cuda_partials(my_ops_dtype dtype, my_ops_dtype weight_dtype,
                                               int64_t rows, int64_t hidden) {
    MY_OPS_RMS_NORM_DISPATCH(dtype, weight_dtype, my_ops::rms_norm_backward_partials, rows, hidden);
}

int my_ops_rms_norm_backward_cuda(my_ops_dtype dtype, my_ops_dtype weight_dtype,
                                  const void *grad_out, int64_t grad_out_stride, const void *x,
                                  int64_t x_stride, const void *weight, void *grad_x,
                                  void *grad_weight, void *workspace, int64_t partials,
                                  int64_t rows, int64_t hidden, double eps, void *stream) {
    MY_OPS_RMS_NORM_DISPATCH(dtype, weight_dtype, my_ops::rms_norm_backward, grad_out,
                             grad_out_stride, x, x_stride, weight, grad_x, grad_weight, workspace,
                             partials, rows, hidden, eps, stream);
}

}  // extern "C"
