// RMSNorm forward on CUDA (the paths and the weight types: rms_norm.cuh):
// y = rms_norm(x), or residual_out = x + residual; y = rms_norm(residual_out)
// (the fused add: in place, y and residual_out are x and residual).
#include "rms_norm.cuh"

namespace my_ops {
namespace {

// The forward layouts (rms_norm and the fused add alike), from
// benchmarks/tuning/layouts.cu's sweep over row counts (`layouts 1 8 64 256
// 4096 32768`): two vectors a thread up to 1024 vectors a row (8192 bf16),
// then four or eight, on up to 1024 threads. The layout depends on the row's
// width alone, never on the number of rows: its threads fix the order of the
// row's sum, and a row must give the same bits in any batch
// (docs/determinism.md). The sweep found this one rule close to the best
// layout at every row count, closer than the earlier split into few-row and
// many-row layouts (benchmarks/NOTES.md).
inline RowLayout forward_layout(int64_t nvec) {
    if (nvec <= 1024) return {2, threads_for(nvec, 2), 1024};
    return row_layout(nvec, 1, 0, 1024, 4);
}
// Unaligned rows, by their covering vectors. The covering-vector kernels hide
// latency only with many threads per multiprocessor: two vectors per thread,
// with the registers capped by unaligned_min_blocks, measured faster than four
// with the registers ptxas picks (see benchmarks/NOTES.md); one below 160
// vectors, four from 1024 on (layouts.cu's sweep). Their weight copy in
// shared memory stays within the 48 KiB a kernel gets without opting in (a
// float weight of 16-bit rows takes twice the bytes: from half the width on,
// those rows take the generic kernel).
inline RowLayout unaligned_layout(int64_t nvec) {
    if (nvec <= 160) return {1, threads_for(nvec, 1), 256};
    if (nvec <= 512) return {2, threads_for(nvec, 2), 256};
    if (nvec <= 1024) return {2, threads_for(nvec, 2), 512};
    if (nvec <= 2048) return {4, threads_for(nvec, 4), 512};
    // longer rows: the weight copy outgrows shared memory first (kUnalignedSharedBytes)
    return nvec <= 4096 ? RowLayout{4, threads_for(nvec, 4), 1024} : RowLayout{0, 0, 0};
}
template <int NV, int kMaxThreads> constexpr int unaligned_min_blocks() {
    return NV == 2 ? 1536 / kMaxThreads : (NV == 4 && kMaxThreads == 512 ? 2 : 1);
}
constexpr size_t kUnalignedSharedBytes = 48 * 1024 - 1024;

using RmsNormLayouts = Layouts<Layout<1, 256>, Layout<2, 256>, Layout<4, 256>, Layout<8, 256>,
                               Layout<1, 1024>, Layout<2, 1024>, Layout<4, 1024>, Layout<8, 1024>>;
using FusedAddLayouts =
    Layouts<Layout<1, 256>, Layout<2, 256>, Layout<4, 256>, Layout<4, 512>, Layout<8, 512>,
            Layout<1, 1024>, Layout<2, 1024>, Layout<4, 1024>, Layout<8, 1024>>;
using UnalignedLayouts =
    Layouts<Layout<1, 256>, Layout<2, 256>, Layout<2, 512>, Layout<4, 512>, Layout<4, 1024>>;

template <bool kAdd> struct ForwardLayouts;
template <> struct ForwardLayouts<false> {
    using type = RmsNormLayouts;
};
template <> struct ForwardLayouts<true> {
    using type = FusedAddLayouts;
};

// The row a forward kernel normalises: x's row, or (kAdd) x + residual
// rounded to T and written to residual_out (the residual itself in place),
// which holds T values.
template <bool kAdd, typename T, typename V>
__device__ __forceinline__ V input_vector(const V *x_row, const V *res_row, V *res_out_row, int i) {
    V v = x_row[i];
    if constexpr (kAdd) {
        const V r = res_row[i];
#pragma unroll
        for (int e = 0; e < V::size; ++e) v.v[e] = from_acc<T>(to_acc(v.v[e]) + to_acc(r.v[e]));
        res_out_row[i] = v;
    }
    return v;
}

template <typename T, typename V>
__device__ __forceinline__ acc_t<T> sum_squares(const V &v) {
    acc_t<T> s = 0;
#pragma unroll
    for (int e = 0; e < V::size; ++e) {
        const acc_t<T> a = to_acc(v.v[e]);
        s += a * a;
    }
    return s;
}

// v and w by value: a reference into global or shared memory would be read
// element by element (eight 2-byte loads instead of one 16-byte load).
template <typename T, typename V, typename WV>
__device__ __forceinline__ V normalized(const V v, const WV w, acc_t<T> rstd) {
    V out;
#pragma unroll
    for (int e = 0; e < V::size; ++e)
        out.v[e] = from_acc<T>(to_acc(v.v[e]) * rstd * to_acc(w.v[e]));
    return out;
}

// ------------------------------------------------------------- kernels --
// y = rms_norm(x) (kAdd false), or residual_out = x + residual;
// y = rms_norm(residual_out) (kAdd true). Each kernel body is a __device__
// function with two entry points: rms_norm's, whose pointers are __restrict__
// (so loads can take the read-only path: measured faster; see
// benchmarks/NOTES.md), and the fused add's, whose outputs are its inputs in
// place.
#define MY_OPS_FORWARD_ENTRIES(NAME, TEMPLATE_PARAMS, TEMPLATE_ARGS, BOUND)                        \
    template <TEMPLATE_PARAMS>                                                                   \
    __global__ void __launch_bounds__(BOUND)                                                     \
    NAME##_kernel(const T *__restrict__ x, int64_t x_stride, const W *__restrict__ weight,       \
                  T *__restrict__ y, int64_t rows, int64_t hidden, acc_t<T> eps) {               \
        NAME##_body<TEMPLATE_ARGS, false>(x, x_stride, nullptr, 0, nullptr, 0, weight, y, hidden, \
                                          rows, hidden, eps);                                    \
    }                                                                                            \
    template <TEMPLATE_PARAMS>                                                                   \
    __global__ void __launch_bounds__(BOUND)                                                     \
    NAME##_add_kernel(const T *x, int64_t x_stride, const T *residual, int64_t res_stride,     \
                      T *res_out, int64_t res_out_stride, const W *__restrict__ weight, T *y,    \
                      int64_t y_stride, int64_t rows, int64_t hidden, acc_t<T> eps) {            \
        NAME##_body<TEMPLATE_ARGS, true>(x, x_stride, residual, res_stride, res_out,             \
                                         res_out_stride, weight, y, y_stride, rows, hidden, eps); \
    }

#define MY_OPS_COMMA ,

template <typename T, typename W, int NV, int kMaxThreads, bool kAdd>
__device__ __forceinline__ void held_body(const T *x, int64_t x_stride, const T *residual,
                                          int64_t res_stride, T *res_out, int64_t res_out_stride,
                                          const W *weight, T *y, int64_t y_stride, int64_t rows,
                                          int64_t hidden, acc_t<T> eps) {
    using A = acc_t<T>;
    using V = Vec<T>;
    __shared__ A scratch[32];
    const int nvec = int(hidden / V::size);
    const auto *w = reinterpret_cast<const WeightVec<T, W> *>(weight);
    for (int64_t row = blockIdx.x; row < rows; row += gridDim.x) {
        const V *x_row = reinterpret_cast<const V *>(x + row * x_stride);
        const V *res_row =
            kAdd ? reinterpret_cast<const V *>(residual + row * res_stride) : nullptr;
        V *res_out_row = kAdd ? reinterpret_cast<V *>(res_out + row * res_out_stride) : nullptr;
        V held[NV];
        A sum_sq = 0;
#pragma unroll
        for (int k = 0; k < NV; ++k) {
            const int i = threadIdx.x + k * blockDim.x;
            if (i < nvec) {
                held[k] = input_vector<kAdd, T>(x_row, res_row, res_out_row, i);
                sum_sq += sum_squares<T>(held[k]);
            }
        }
        const A rstd = reciprocal_sqrt(block_sum(sum_sq, scratch) / A(hidden) + eps);
        V *y_row = reinterpret_cast<V *>(y + row * y_stride);
#pragma unroll
        for (int k = 0; k < NV; ++k) {
            const int i = threadIdx.x + k * blockDim.x;
            if (i < nvec) y_row[i] = normalized<T>(held[k], w[i], rstd);
        }
    }
}
MY_OPS_FORWARD_ENTRIES(held,
                       typename T MY_OPS_COMMA typename W MY_OPS_COMMA int NV MY_OPS_COMMA int kMaxThreads,
                       T MY_OPS_COMMA W MY_OPS_COMMA NV MY_OPS_COMMA kMaxThreads, kMaxThreads)

// Rows that are not whole 16-byte vectors, or not 16-byte aligned (odd
// widths, odd row strides, views at odd offsets): each row is read as the
// aligned 16-byte vectors that cover it, so still once and vectorized. The
// bytes of a covering vector outside the row are loaded and ignored (an
// aligned vector lies within one page, and within one of PyTorch's 512-byte
// allocation blocks); nothing outside the row is written. The grid is a
// multiple of 8 blocks, so all rows of a block start at the same offset
// within 16 bytes (its phase): the block copies the weight into shared memory
// shifted by that phase once, and reads it as vectors lined up with the
// row's. The output has the same phase (the launcher checks): interior
// vectors are stored whole, the two edge vectors element by element.
template <typename T, typename W, int NV, int kMaxThreads, bool kAdd>
__device__ __forceinline__ void unaligned_body(const T *x, int64_t x_stride, const T *residual,
                                               int64_t res_stride, T *res_out,
                                               int64_t res_out_stride, const W *weight, T *y,
                                               int64_t y_stride, int64_t rows, int64_t hidden,
                                               acc_t<T> eps) {
    using A = acc_t<T>;
    using V = Vec<T>;
    constexpr int P = V::size;
    __shared__ A scratch[32];
    extern __shared__ __align__(16) unsigned char shared_weight[];
    if (blockIdx.x >= rows) return;
    auto phase = [](const T *p) { return int((reinterpret_cast<uintptr_t>(p) & 15) / sizeof(T)); };
    const int ph =
        phase(x + int64_t(blockIdx.x) * x_stride);  // the same for every row of the block
    const int nvec = int((ph + hidden + P - 1) / P);
    W *w_shifted = reinterpret_cast<W *>(shared_weight);
    for (int i = threadIdx.x; i < nvec * P; i += blockDim.x) {
        const int64_t j = int64_t(i) - ph;
        w_shifted[i] = j >= 0 && j < hidden ? weight[j] : from_acc<W>(acc_t<W>(0));
    }
    __syncthreads();
    const auto *w = reinterpret_cast<const WeightVec<T, W> *>(w_shifted);
    auto inside = [&](int i, int e) {
        const int64_t j = int64_t(i) * P + e - ph;
        return j >= 0 && j < hidden;
    };
    for (int64_t row = blockIdx.x; row < rows; row += gridDim.x) {
        const V *x_vecs = reinterpret_cast<const V *>(x + row * x_stride - ph);
        // kAdd: residual and residual_out have x's phase in every row (the launcher checks)
        const V *res_vecs =
            kAdd ? reinterpret_cast<const V *>(residual + row * res_stride - ph) : nullptr;
        V *res_out_vecs =
            kAdd ? reinterpret_cast<V *>(res_out + row * res_out_stride - ph) : nullptr;
        V held[NV];
        A sum_sq = 0;
#pragma unroll
        for (int k = 0; k < NV; ++k) {
            const int i = threadIdx.x + k * blockDim.x;
            if (i < nvec) {
                V v = x_vecs[i];
                const bool edge = i == 0 || i == nvec - 1;
                if constexpr (kAdd) {
                    const V r = res_vecs[i];
#pragma unroll
                    for (int e = 0; e < P; ++e)
                        v.v[e] = from_acc<T>(to_acc(v.v[e]) + to_acc(r.v[e]));
                    if (!edge) {
                        res_out_vecs[i] = v;
                    } else {
#pragma unroll
                        for (int e = 0; e < P; ++e)
                            if (inside(i, e)) res_out_vecs[i].v[e] = v.v[e];
                    }
                }
                if (edge)
#pragma unroll
                    for (int e = 0; e < P; ++e)
                        if (!inside(i, e)) v.v[e] = from_acc<T>(A(0));
                held[k] = v;
                sum_sq += sum_squares<T>(v);
            }
        }
        const A rstd = reciprocal_sqrt(block_sum(sum_sq, scratch) / A(hidden) + eps);
        T *y_row = y + row * y_stride;
        V *y_vecs = reinterpret_cast<V *>(y_row - ph);
#pragma unroll
        for (int k = 0; k < NV; ++k) {
            const int i = threadIdx.x + k * blockDim.x;
            if (i < nvec) {
                const V out = normalized<T>(held[k], w[i], rstd);
                if (i > 0 && i < nvec - 1) {
                    y_vecs[i] = out;
                } else {
#pragma unroll
                    for (int e = 0; e < P; ++e)
                        if (inside(i, e)) y_row[int64_t(i) * P + e - ph] = out.v[e];
                }
            }
        }
    }
}
MY_OPS_FORWARD_ENTRIES(unaligned,
                       typename T MY_OPS_COMMA typename W MY_OPS_COMMA int NV MY_OPS_COMMA int kMaxThreads,
                       T MY_OPS_COMMA W MY_OPS_COMMA NV MY_OPS_COMMA kMaxThreads,
                       kMaxThreads MY_OPS_COMMA(unaligned_min_blocks<NV, kMaxThreads>()))

template <typename T, typename W, int G, bool kAdd>
__device__ __forceinline__ void group_body(const T *x, int64_t x_stride, const T *residual,
                                           int64_t res_stride, T *res_out, int64_t res_out_stride,
                                           const W *weight, T *y, int64_t y_stride, int64_t rows,
                                           int64_t hidden, acc_t<T> eps) {
    using A = acc_t<T>;
    using V = Vec<T>;
    const int nvec = int(hidden / V::size);
    const int lane = threadIdx.x % G;
    WeightVec<T, W> w;
    if (lane < nvec) w = reinterpret_cast<const WeightVec<T, W> *>(weight)[lane];
    for_each_group_row<G>(rows, [&](int64_t row, bool in_range) {
        const bool mine = in_range && lane < nvec;
        V v;
        A sum_sq = 0;
        if (mine) {
            v = input_vector<kAdd, T>(
                reinterpret_cast<const V *>(x + row * x_stride),
                kAdd ? reinterpret_cast<const V *>(residual + row * res_stride) : nullptr,
                kAdd ? reinterpret_cast<V *>(res_out + row * res_out_stride) : nullptr, lane);
            sum_sq = sum_squares<T>(v);
        }
        const A rstd = reciprocal_sqrt(group_sum<G>(sum_sq) / A(hidden) + eps);
        if (mine) reinterpret_cast<V *>(y + row * y_stride)[lane] = normalized<T>(v, w, rstd);
    });
}
MY_OPS_FORWARD_ENTRIES(group, typename T MY_OPS_COMMA typename W MY_OPS_COMMA int G,
                       T MY_OPS_COMMA W MY_OPS_COMMA G, kGroupThreads)

template <typename T, typename W, bool kAdd>
__global__ void rms_norm_generic_kernel(const T *x, int64_t x_stride, const T *residual,
                                        int64_t res_stride, T *res_out, int64_t res_out_stride,
                                        const W *__restrict__ weight, T *y, int64_t y_stride,
                                        int64_t rows, int64_t hidden, acc_t<T> eps) {
    using A = acc_t<T>;
    __shared__ A scratch[32];
    for (int64_t row = blockIdx.x; row < rows; row += gridDim.x) {
        const T *x_row = x + row * x_stride;
        const T *res_row = kAdd ? residual + row * res_stride : nullptr;
        T *res_out_row = kAdd ? res_out + row * res_out_stride : nullptr;
        A sum_sq = 0;
        for (int64_t j = threadIdx.x; j < hidden; j += blockDim.x) {
            T v = x_row[j];
            if constexpr (kAdd) {
                v = from_acc<T>(to_acc(v) + to_acc(res_row[j]));
                res_out_row[j] = v;
            }
            const A a = to_acc(v);
            sum_sq += a * a;
        }
        const A rstd = reciprocal_sqrt(block_sum(sum_sq, scratch) / A(hidden) + eps);
        // (kAdd) each thread reads back only the residual elements it wrote itself
        const T *src = kAdd ? res_out_row : x_row;
        for (int64_t j = threadIdx.x; j < hidden; j += blockDim.x)
            y[row * y_stride + j] = from_acc<T>(to_acc(src[j]) * rstd * to_acc(weight[j]));
    }
}

// Launches kernel `NAME` (kAdd false) or `NAME_add` with the forward's arguments.
#define MY_OPS_LAUNCH_FORWARD(NAME, TEMPLATE_ARGS, GRID, BLOCK, SHARED)                           \
    do {                                                                                        \
        if constexpr (kAdd)                                                                     \
            NAME##_add_kernel<TEMPLATE_ARGS><<<GRID, BLOCK, SHARED, s>>>(                       \
                x, x_stride, residual, res_stride, res_out, res_out_stride, weight, y, y_stride, \
                rows, hidden, e);                                                               \
        else                                                                                    \
            NAME##_kernel<TEMPLATE_ARGS><<<GRID, BLOCK, SHARED, s>>>(x, x_stride, weight, y,    \
                                                                     rows, hidden, e);          \
    } while (0)

// kAdd false: y = rms_norm(x), y dense (y_stride hidden). kAdd true: residual_out = x +
// residual, y = rms_norm(residual_out); y and res_out are x and residual themselves (in
// place) or memory apart from them.
template <typename T, typename W, bool kAdd>
int rms_norm_rows(const T *x, int64_t x_stride, const T *residual, int64_t res_stride, T *res_out,
                  int64_t res_out_stride, const W *weight, T *y, int64_t y_stride, int64_t rows,
                  int64_t hidden, double eps, cudaStream_t s) {
    if (rows == 0 || hidden == 0) return 0;
    const acc_t<T> e = acc_t<T>(eps);
    constexpr int P = Vec<T>::size;
    const int64_t nvec = hidden / P;
    const bool vec =
        vectorizable<T>(hidden, {{x, x_stride}, {y, y_stride}, {weight, 0}}) &&
        (!kAdd || vectorizable<T>(hidden, {{residual, res_stride}, {res_out, res_out_stride}}));
    const int g = vec ? group_size(nvec) : 0;
    if (g > 0) {
        AllGroupSizes::launch(g, [&](auto G) {
            constexpr int kG = decltype(G)::value;
            MY_OPS_LAUNCH_FORWARD(group, T MY_OPS_COMMA W MY_OPS_COMMA kG, group_grid<kG>(rows),
                                  kGroupThreads, 0);
        });
        return int(cudaGetLastError());
    }
    const RowLayout layout = forward_layout(nvec);
    if (vec && layout.nv > 0) {
        ForwardLayouts<kAdd>::type::launch(layout, [&](auto nv, auto max_threads) {
            constexpr int kNV = decltype(nv)::value, kMax = decltype(max_threads)::value;
            MY_OPS_LAUNCH_FORWARD(held, T MY_OPS_COMMA W MY_OPS_COMMA kNV MY_OPS_COMMA kMax,
                                  rows_grid(rows), layout.threads, 0);
        });
        return int(cudaGetLastError());
    }
    // Unaligned rows: the covering vectors of the longest row, when the
    // output (the fused add: it and both residuals) has x's alignment in every row,
    // and every row has the first row's: strides of whole vectors. Otherwise a
    // row's phase depends on its place in the batch, and the rows of a batch that
    // starts in phase would take this kernel while the same rows called alone,
    // with an output of their own, take the generic one, which sums in another
    // order (docs/determinism.md: a row's bits may not depend on its batch).
    const auto offset = [](const void *a, const void *b) {
        return int64_t(reinterpret_cast<uintptr_t>(a)) - int64_t(reinterpret_cast<uintptr_t>(b));
    };
    const auto in_phase = [&](const void *p, int64_t stride) {  // in every row, as x
        return offset(p, x) % 16 == 0 && ((stride - x_stride) * int64_t(sizeof(T))) % 16 == 0;
    };
    // The output must be in x's phase too: stored element by element instead,
    // a view at a 2-byte offset measured much slower than the generic kernel's
    // two passes (see benchmarks/NOTES.md).
    const bool phases_match =
        (x_stride * int64_t(sizeof(T))) % 16 == 0 && in_phase(y, y_stride) &&
        (!kAdd || (in_phase(residual, res_stride) && in_phase(res_out, res_out_stride)));
    const int64_t covering_vectors = ceil_div(hidden + P - 1, P);
    const RowLayout covering = unaligned_layout(covering_vectors);
    const size_t shared = size_t(covering_vectors) * P * sizeof(W);  // the phase-shifted weight
    if (phases_match && covering.nv > 0 && shared <= kUnalignedSharedBytes) {
        UnalignedLayouts::launch(covering, [&](auto nv, auto max_threads) {
            constexpr int kNV = decltype(nv)::value, kMax = decltype(max_threads)::value;
            int64_t resident;
            if constexpr (kAdd)
                resident = resident_blocks(unaligned_add_kernel<T, W, kNV, kMax>, covering.threads,
                                           shared);
            else
                resident =
                    resident_blocks(unaligned_kernel<T, W, kNV, kMax>, covering.threads, shared);
            // as many blocks as fit at once (measured faster than more), a multiple
            // of 8 (one phase per block), at most one per row
            const unsigned grid = unsigned(rows <= resident ? rows : resident / 8 * 8);
            MY_OPS_LAUNCH_FORWARD(unaligned, T MY_OPS_COMMA W MY_OPS_COMMA kNV MY_OPS_COMMA kMax,
                                  grid, covering.threads, shared);
        });
        return int(cudaGetLastError());
    }
    rms_norm_generic_kernel<T, W, kAdd><<<rows_grid(rows), kGenericThreads, 0, s>>>(
        x, x_stride, residual, res_stride, res_out, res_out_stride, weight, y, y_stride, rows,
        hidden, e);
    return int(cudaGetLastError());
}

#undef MY_OPS_LAUNCH_FORWARD
#undef MY_OPS_FORWARD_ENTRIES
#undef MY_OPS_COMMA

template <typename T, typename W>
int rms_norm(const void *x, int64_t x_stride, const void *weight, void *y, int64_t rows,
             int64_t hidden, double eps, void *stream) {
    return rms_norm_rows<T, W, false>(static_cast<const T *>(x), x_stride, nullptr, 0, nullptr, 0,
                                      static_cast<const W *>(weight), static_cast<T *>(y), hidden,
                                      rows, hidden, eps, cudaStream_t(stream));
}

template <typename T, typename W>
int fused_add_rms_norm(const void *x, int64_t x_stride, const void *residual, int64_t res_stride,
                       const void *weight, void *y, int64_t y_stride, void *res_out,
                       int64_t res_out_stride, int64_t rows, int64_t hidden, double eps,
                       void *stream) {
    return rms_norm_rows<T, W, true>(
        static_cast<const T *>(x), x_stride, static_cast<const T *>(residual), res_stride,
        static_cast<T *>(res_out), res_out_stride, static_cast<const W *>(weight),
        static_cast<T *>(y), y_stride, rows, hidden, eps, cudaStream_t(stream));
}

}  // namespace
}  // namespace my_ops

extern "C" {

int my_ops_rms_norm_cuda(my_ops_dtype dtype, my_ops_dtype weight_dtype, const void *x,
                         int64_t x_stride, const void *weight, void *y, int64_t rows,
                         int64_t hidden, double eps, void *stream) {
    MY_OPS_RMS_NORM_DISPATCH(dtype, weight_dtype, my_ops::rms_norm, x, x_stride, weight, y, rows,
                             hidden, eps, stream);
}

int my_ops_fused_add_rms_norm_out_cuda(my_ops_dtype dtype, my_ops_dtype weight_dtype, const void *x,
                                       int64_t x_stride, const void *residual,
                                       int64_t residual_stride, const void *weight, void *y,
                                       int64_t y_stride, void *residual_out,
                                       int64_t residual_out_stride, int64_t rows, int64_t hidden,
                                       double eps, void *stream) {
    MY_OPS_RMS_NORM_DISPATCH(dtype, weight_dtype, my_ops::fused_add_rms_norm, x, x_stride, residual,
                             residual_stride, weight, y, y_stride, residual_out,
                             residual_out_stride, rows, hidden, eps, stream);
}

int my_ops_fused_add_rms_norm_cuda(my_ops_dtype dtype, my_ops_dtype weight_dtype, void *x,
                                   int64_t x_stride, void *residual, int64_t residual_stride,
                                   const void *weight, int64_t rows, int64_t hidden, double eps,
                                   void *stream) {
    return my_ops_fused_add_rms_norm_out_cuda(dtype, weight_dtype, x, x_stride, residual,
                                              residual_stride, weight, x, x_stride, residual,
                                              residual_stride, rows, hidden, eps, stream);
}

}  // extern "C"
