// Machinery of the row-wise CUDA kernels (rms_norm and its family; the next
// row-wise op, e.g. a layer_norm, includes this too):
//   - how a row is spread over a block (RowLayout) and the (vectors per
//     thread, block size) instantiations a kernel family offers (Layouts);
//   - narrow rows (at most 32 vectors): a group of G lanes of one warp per
//     row, 256 / G rows per block, reductions by warp shuffles only
//     (GroupSizes, for_each_group_row, group_sum);
//   - when rows at given pointers and row strides can be read as vectors.
// Measurements behind the choices: benchmarks/NOTES.md.
#ifndef MY_OPS_CUDA_ROWS_CUH
#define MY_OPS_CUDA_ROWS_CUH

#include <initializer_list>
#include <type_traits>
#include <utility>

#include "common.cuh"

namespace my_ops {

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

// Up to kRowThreads threads with nv in {small_min_nv, .., small_max_nv}; else
// up to wide_threads with nv in {wide_min_nv, .., 8}. nv doubles each step.
inline RowLayout row_layout(int64_t nvec, int small_min_nv, int small_max_nv, int wide_threads,
                            int wide_min_nv) {
    for (int nv = small_min_nv; nv <= small_max_nv; nv *= 2)
        if (nvec <= int64_t(nv) * kRowThreads) return {nv, threads_for(nvec, nv), kRowThreads};
    for (int nv = wide_min_nv; nv <= 8; nv *= 2)
        if (nvec <= int64_t(nv) * wide_threads) return {nv, threads_for(nvec, nv), wide_threads};
    return {0, 0, 0};
}

// Fewer rows than two per multiprocessor: such calls are bound by load
// latency, and more threads per row (fewer vectors each) finish sooner. Only
// for kernels whose results do not depend on the layout (elementwise values,
// exact maxima): a row's sum must not (docs/determinism.md).
inline bool few_rows(int64_t rows) { return rows < 2 * int64_t(sm_count()); }

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

// One block per row, as far as the grid allows (the kernels loop past it):
// measured faster than a grid-stride loop for the forward kernels, which keep
// nothing across rows.
inline unsigned rows_grid(int64_t rows) { return unsigned(rows < 0x7fffffff ? rows : 0x7fffffff); }

// Blocks of `kernel` resident at once on the device, for a grid of blocks
// that loop over rows (at least one per multiprocessor).
template <typename Kernel> int64_t resident_blocks(Kernel kernel, int threads, size_t shared) {
    int per_sm = 0;
    if (cudaOccupancyMaxActiveBlocksPerMultiprocessor(&per_sm, kernel, threads, shared) !=
        cudaSuccess) {
        (void)cudaGetLastError();  // not the launch's error: clear it
        per_sm = 1;
    }
    return int64_t(per_sm < 1 ? 1 : per_sm) * sm_count();
}

// Whether rows of `width` elements can be read and written as 16-byte vectors
// at each (pointer, row stride): the width and every stride a whole number of
// vectors, every pointer 16-byte aligned.
template <typename T>
bool vectorizable(int64_t width, std::initializer_list<std::pair<const void *, int64_t>> rows) {
    constexpr int n = Vec<T>::size;
    if (width % n != 0) return false;
    for (const auto &r : rows)
        if (!is_aligned16(r.first) || r.second % n != 0) return false;
    return true;
}

// Loads this thread's vectors of one row (those with index < nvec): vector
// threadIdx.x + k * blockDim.x into held[k].
template <typename V, int NV>
__device__ __forceinline__ void load_row(V (&held)[NV], const V *row, int nvec) {
#pragma unroll
    for (int k = 0; k < NV; ++k) {
        const int i = threadIdx.x + k * blockDim.x;
        if (i < nvec) held[k] = row[i];
    }
}

// ------------------------------------------------------- narrow rows --
// A row of at most 32 vectors takes G lanes of a warp (G the next power of
// two), one vector each: a block of kGroupThreads threads works on
// kGroupThreads / G rows at once, so no lane idles the way it would with a
// block per row, and sums need no shared memory or barrier.
constexpr int kGroupThreads = 256;

// G for a row of nvec vectors; 0 when it does not fit in a warp.
inline int group_size(int64_t nvec) {
    if (nvec > 32) return 0;
    int g = 4;  // at least 4 lanes: fewer instantiations; rows of 1-2 vectors are rare
    while (g < nvec) g *= 2;
    return g;
}

template <int... Gs> struct GroupSizes {
    template <typename Launch> static bool launch(int g, Launch &&f) {
        return ((g == Gs && (f(Int<Gs>{}), true)) || ...);
    }
};
using AllGroupSizes = GroupSizes<4, 8, 16, 32>;

// Blocks for `rows` rows in groups of G lanes, at most one row per group.
template <int G> unsigned group_grid(int64_t rows) {
    return rows_grid(ceil_div(rows, kGroupThreads / G));
}

// Sum over the G lanes of this thread's group; every lane gets it.
template <int G, typename A> __device__ __forceinline__ A group_sum(A v) {
#pragma unroll
    for (int offset = G / 2; offset > 0; offset >>= 1)
        v += __shfl_xor_sync(0xffffffffu, v, offset, G);
    return v;
}

// Calls f(row, in_range) for every row this thread's group works on;
// the loop is the same for the whole block, so shuffles over the full warp
// are safe (lanes past the last row get in_range == false).
template <int G, typename F> __device__ __forceinline__ void for_each_group_row(int64_t rows,
                                                                                F &&f) {
    constexpr int per_block = kGroupThreads / G;
    const int slot = threadIdx.x / G;
    for (int64_t first = int64_t(blockIdx.x) * per_block; first < rows;
         first += int64_t(gridDim.x) * per_block) {
        const int64_t row = first + slot;
        f(row, row < rows);
    }
}

}  // namespace my_ops

#endif  // MY_OPS_CUDA_ROWS_CUH
