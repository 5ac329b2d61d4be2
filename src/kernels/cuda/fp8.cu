// fp8 output of RMSNorm, the fused add + RMSNorm and the gated units on CUDA
// (../fp8.h). One block per row (the grid loops past 2^31 - 1 rows):
//   - rows that are whole 16-byte vectors at 16-byte aligned pointers and
//     strides: the row held in registers (nv vectors per thread, the layouts
//     of rms_norm's forward, rows.cuh), so each input byte is read from
//     device memory once; the output written as nv * (vector size) bytes per
//     thread;
//   - anything else: a generic kernel that reads the row two or three times
//     (the later reads mostly hit L1/L2).
// The per-token scale needs the row's amax. RMSNorm's y = rstd * (x * w) with
// rstd > 0, so max |y| = rstd * max |x * w| exactly (rounding is monotonic):
// the max goes into the sum of squares' block reduction, no second one. A
// static scale is read once per block before the rows (its latency beside
// theirs) and divided after their loads. The conversion: cvt.rn.satfinite.e4m3x2.f32 from sm_89
// on, two values per instruction; before, the software rule of
// ../fp8_convert.h, which the CPU kernels share.
#include "../fp8.h"
#include "rms_norm.cuh"

#include <algorithm>
#include <type_traits>

namespace my_ops {
namespace {

// Two values to two e4m3fn bytes, a in the low byte.
__device__ __forceinline__ uint16_t to_e4m3x2(float a, float b) {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 890
    uint16_t r;
    // the first source goes to the upper byte
    asm("cvt.rn.satfinite.e4m3x2.f32 %0, %2, %1;" : "=h"(r) : "f"(a), "f"(b));
    return r;
#else
    return uint16_t(my_ops_float_to_e4m3(a) | (uint16_t(my_ops_float_to_e4m3(b)) << 8));
#endif
}
__device__ __forceinline__ uint8_t to_e4m3(float a) { return uint8_t(to_e4m3x2(a, 0.0f) & 0xff); }

template <typename A> __device__ __forceinline__ A warp_max(A v) {
#pragma unroll
    for (int offset = 16; offset > 0; offset >>= 1)
        v = fmax(v, __shfl_xor_sync(0xffffffffu, v, offset));
    return v;
}

// Largest over the block; every thread gets it. NaN is ignored (fmax), as on the CPU.
template <typename A> __device__ __forceinline__ A block_max(A v, A *scratch) {
    const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5;
    const int warps = (blockDim.x + 31) >> 5;
    v = warp_max(v);
    __syncthreads();  // scratch may still be read by the previous reduction
    if (lane == 0) scratch[warp] = v;
    __syncthreads();
    return warp_max(lane < warps ? scratch[lane] : A(0));
}

// The block's sum of `sum` (in block_sum's order: the same rstd as the
// static ops) and largest `largest` (NaN ignored), with one pair of barriers.
template <typename A>
__device__ __forceinline__ Pair2<A> block_sum_and_max(A sum, A largest, Pair2<A> *scratch) {
    const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5;
    const int warps = (blockDim.x + 31) >> 5;
    sum = warp_sum(sum);
    largest = warp_max(largest);
    __syncthreads();  // scratch may still be read by the previous row's reduction
    if (lane == 0) scratch[warp] = Pair2<A>{sum, largest};
    __syncthreads();
    sum = lane < warps ? scratch[lane].a : A(0);
    largest = lane < warps ? scratch[lane].b : A(0);
    return Pair2<A>{warp_sum(sum), warp_max(largest)};
}

// y / scale is computed as (y * pre) * inv (../fp8_convert.h).
template <typename A> struct Factors {
    A pre, inv;
};

// (the kernels load the scale before the rows and call this after the rows'
// loads: the division's branch would otherwise hold those loads back)
template <typename A> __device__ __forceinline__ Factors<A> static_factors(float s) {
    const float pre = my_ops_fp8_scale_prefactor(s);
    return Factors<A>{A(pre), A(1) / A(s * pre)};
}

// A row's own scale from its amax (never NaN), thread 0 writing it to
// scales[row]; a normal float, so pre is 1.
template <typename A>
__device__ __forceinline__ Factors<A> row_factors(const my_ops_fp8_scaling &s, int64_t row,
                                                  A amax) {
    // (in A: a float64 amax past float's range gives a finite scale up to
    // 448 * FLT_MAX; past that the float32 scale is inf and the row's bytes 0)
    A bound = amax;
    if (s.scale_ub != nullptr && A(*s.scale_ub) < bound) bound = A(*s.scale_ub);
    const float scale = fmaxf(float(bound / A(MY_OPS_FP8_MAX)), MY_OPS_FP8_MIN_SCALE);
    if (threadIdx.x == 0) s.scales[row] = scale;
    return Factors<A>{A(1), A(1) / A(scale)};
}

// The P bytes of one vector of P values.
template <int P> using Bytes = Vec<uint16_t, P / 2>;

// y / scale as the float the conversion takes (float64: rounded to odd, so
// that the fp8 conversion rounds once, fp8_convert.h).
template <typename A> __device__ __forceinline__ float scaled(A y, const Factors<A> &q) {
    if constexpr (std::is_same_v<A, double>) return my_ops_fp8_narrow_double(y * q.pre * q.inv);
    return float(y * q.pre * q.inv);
}

template <int P, typename A>
__device__ __forceinline__ Bytes<P> quantize(const A (&y)[P], const Factors<A> &q) {
    Bytes<P> b;
#pragma unroll
    for (int e = 0; e < P; e += 2) b.v[e / 2] = to_e4m3x2(scaled(y[e], q), scaled(y[e + 1], q));
    return b;
}

// ------------------------------------------------------------- RMSNorm --
// A row's rstd from this thread's share of the sum of squares and, per token,
// of max |x * w|, and its factors q; thread 0 writes a per-token scale.
template <bool kDynamic, typename A>
__device__ __forceinline__ A norm_row_factors(A sum_sq, A xw_max, int64_t hidden, A eps,
                                              const my_ops_fp8_scaling &scaling, float static_scale,
                                              int64_t row, Factors<A> &q, A *scratch,
                                              Pair2<A> *pairs) {
    if constexpr (kDynamic) {
        const Pair2<A> r = block_sum_and_max(sum_sq, xw_max, pairs);
        const A rstd = reciprocal_sqrt(r.a / A(hidden) + eps);
        // fmax: a NaN rstd (a NaN in the row) gives amax 0, NaN never counting
        q = row_factors(scaling, row, fmax(A(0), rstd * r.b));
        return rstd;
    } else {
        const A rstd = reciprocal_sqrt(block_sum(sum_sq, scratch) / A(hidden) + eps);
        q = static_factors<A>(static_scale);
        return rstd;
    }
}

// Vector i of a row at p, read or written as one 16-byte access (kVector) or
// element by element (rows whose pointer or stride is not whole vectors): the
// same elements in the same order either way, so the same arithmetic follows.
template <bool kVector, typename V, typename E>
__device__ __forceinline__ V load_vec(const E *p, int i) {
    if constexpr (kVector) {
        return reinterpret_cast<const V *>(p)[i];
    } else {
        V v;
#pragma unroll
        for (int e = 0; e < V::size; ++e) v.v[e] = p[int64_t(i) * V::size + e];
        return v;
    }
}
template <bool kVector, typename V, typename E>
__device__ __forceinline__ void store_vec(E *p, int i, const V &v) {
    if constexpr (kVector) {
        reinterpret_cast<V *>(p)[i] = v;
    } else {
#pragma unroll
        for (int e = 0; e < V::size; ++e) p[int64_t(i) * V::size + e] = v.v[e];
    }
}

// kLoadsFirst: every load of the row before the first use; otherwise each
// vector is summed as it arrives. kWeightFirst: the weight's vectors loaded
// beside the row's and kept for the output (benchmarks/tuning/fp8_layouts.cu
// sweeps both). kVector: 16-byte loads and stores; otherwise element by
// element, in the same order (rows not at whole vectors: a row's values must
// not depend on how it was sliced, batch invariance).
template <typename T, typename W, int NV, int kMaxThreads, bool kAdd, bool kDynamic,
          bool kLoadsFirst = (kMaxThreads < 1024), bool kWeightFirst = false, bool kVector = true>
__global__ void __launch_bounds__(kMaxThreads)
rms_norm_fp8_held_kernel(const T *__restrict__ x, int64_t x_stride, T *__restrict__ residual,
                         int64_t res_stride, const W *__restrict__ weight,
                         uint8_t *__restrict__ out, my_ops_fp8_scaling scaling, int64_t rows,
                         int64_t hidden, acc_t<T> eps) {
    using A = acc_t<T>;
    using V = Vec<T>;
    constexpr int P = V::size;
    __shared__ A scratch[32];
    __shared__ Pair2<A> pairs[32];
    const int nvec = int(hidden / P);
    auto weight_vec = [&](int i) { return load_vec<kVector, WeightVec<T, W>>(weight, i); };
    Factors<A> q{};
    const float static_scale = kDynamic ? 0.0f : *scaling.static_scale;
    // Loads first by default except under 1024-thread bounds, where holding
    // the row took [8192, 8192] per token from 32 to 46 registers a thread,
    // halving the blocks resident per multiprocessor (H100: 76.1 -> 89.1 us).
    for (int64_t row = blockIdx.x; row < rows; row += gridDim.x) {
        const T *x_row = x + row * x_stride;
        T *res_row = kAdd ? residual + row * res_stride : nullptr;
        V held[NV];
        WeightVec<T, W> w_held[kWeightFirst ? NV : 1] = {};  // (set before use; nvcc cannot tell)
        A sum_sq = 0, xw_max = 0;
        // vector k's share of the sums (and, per token, of max |x * w|)
        auto accumulate = [&](int k, int i) {
#pragma unroll
            for (int e = 0; e < P; ++e) sum_sq += to_acc(held[k].v[e]) * to_acc(held[k].v[e]);
            if constexpr (kDynamic) {
                const WeightVec<T, W> wv =
                    kWeightFirst ? w_held[kWeightFirst ? k : 0] : weight_vec(i);
#pragma unroll
                for (int e = 0; e < P; ++e)
                    xw_max = fmax(xw_max, fabs(to_acc(held[k].v[e]) * to_acc(wv.v[e])));
            }
        };
#pragma unroll
        for (int k = 0; k < NV; ++k) {
            const int i = threadIdx.x + k * blockDim.x;
            if (i < nvec) {
                V v = load_vec<kVector, V>(x_row, i);
                if constexpr (kAdd) {
                    const V r = load_vec<kVector, V>(res_row, i);
#pragma unroll
                    for (int e = 0; e < P; ++e)
                        v.v[e] = from_acc<T>(to_acc(v.v[e]) + to_acc(r.v[e]));
                    store_vec<kVector>(res_row, i, v);
                }
                held[k] = v;
                if constexpr (kWeightFirst) w_held[k] = weight_vec(i);
                if constexpr (!kLoadsFirst) accumulate(k, i);
            }
        }
        if constexpr (kLoadsFirst) {
#pragma unroll
            for (int k = 0; k < NV; ++k) {
                const int i = threadIdx.x + k * blockDim.x;
                if (i < nvec) accumulate(k, i);
            }
        }
        const A rstd = norm_row_factors<kDynamic>(sum_sq, xw_max, hidden, eps, scaling,
                                                  static_scale, row, q, scratch, pairs);
        // y is computed again for the output rather than held: 32 more registers per
        // thread at 4 vectors cost occupancy (the same expression, so the same values)
        Bytes<P> *out_row = reinterpret_cast<Bytes<P> *>(out + row * hidden);
#pragma unroll
        for (int k = 0; k < NV; ++k) {
            const int i = threadIdx.x + k * blockDim.x;
            if (i < nvec) {
                const WeightVec<T, W> wv =
                    kWeightFirst ? w_held[kWeightFirst ? k : 0] : weight_vec(i);
                A y[P];
#pragma unroll
                for (int e = 0; e < P; ++e) y[e] = (to_acc(held[k].v[e]) * to_acc(wv.v[e])) * rstd;
                out_row[i] = quantize<P>(y, q);
            }
        }
    }
}

// Any layout: the row read again for the output (kAdd: each thread reads
// back only the residual elements it wrote itself).
template <typename T, typename W, bool kAdd, bool kDynamic>
__global__ void __launch_bounds__(kGenericThreads)
rms_norm_fp8_generic_kernel(const T *x, int64_t x_stride, T *residual, int64_t res_stride,
                            const W *__restrict__ weight, uint8_t *__restrict__ out,
                            my_ops_fp8_scaling scaling, int64_t rows, int64_t hidden,
                            acc_t<T> eps) {
    using A = acc_t<T>;
    __shared__ A scratch[32];
    __shared__ Pair2<A> pairs[32];
    Factors<A> q{};
    const float static_scale = kDynamic ? 0.0f : *scaling.static_scale;
    for (int64_t row = blockIdx.x; row < rows; row += gridDim.x) {
        const T *x_row = x + row * x_stride;
        T *res_row = kAdd ? residual + row * res_stride : nullptr;
        A sum_sq = 0, xw_max = 0;
        for (int64_t j = threadIdx.x; j < hidden; j += blockDim.x) {
            T v = x_row[j];
            if constexpr (kAdd) {
                v = from_acc<T>(to_acc(v) + to_acc(res_row[j]));
                res_row[j] = v;
            }
            sum_sq += to_acc(v) * to_acc(v);
            if constexpr (kDynamic) xw_max = fmax(xw_max, fabs(to_acc(v) * to_acc(weight[j])));
        }
        const A rstd = norm_row_factors<kDynamic>(sum_sq, xw_max, hidden, eps, scaling,
                                                  static_scale, row, q, scratch, pairs);
        const T *src = kAdd ? res_row : x_row;
        for (int64_t j = threadIdx.x; j < hidden; j += blockDim.x)
            out[row * hidden + j] = to_e4m3(scaled((to_acc(src[j]) * to_acc(weight[j])) * rstd, q));
    }
}

// The gated units take rms_norm's forward layouts: up to 256 threads of up
// to 8 vectors, and for few rows (latency-bound calls) as many threads as the
// row allows; their values do not depend on the layout (the amax is a max).
inline RowLayout act_layout(int64_t rows, int64_t nvec) {
    if (few_rows(rows)) return row_layout(nvec, 1, 0, 1024, 1);
    return row_layout(nvec, 1, 8, 1024, 4);
}
using ActFp8Layouts = Layouts<Layout<1, 256>, Layout<2, 256>, Layout<4, 256>, Layout<8, 256>,
                              Layout<1, 1024>, Layout<2, 1024>, Layout<4, 1024>, Layout<8, 1024>>;

// RMSNorm's values do depend on it (the sum of squares is summed in the
// layout's order): one layout per row width, whatever the number of rows, so
// that a row's bytes do not depend on how many rows the call has (batch
// invariance). Two vectors a thread on up to 512 threads, then four or eight,
// each thread loading its whole share of the row first under a 512-thread
// bound (room for the registers that takes); wider rows eight vectors on up
// to 1024 threads. benchmarks/tuning/fp8_layouts.cu on the H100, per token,
// against the two vectors on up to 1024 threads summed as they arrive of
// before: [16384, 8192] bf16 146.9 -> 137.9 us, [8192, 16384] 161.0 -> 137.9
// (four vectors), decode [64, 8192] 3.37 -> 3.41 us; four vectors at width
// 8192 gained 2% more at 16384 rows but lost 13% at 64 rows.
inline RowLayout norm_layout(int64_t nvec) {
    const RowLayout held = row_layout(nvec, 2, 2, 512, 2);
    return held.nv > 0 ? held : row_layout(nvec, 8, 8, 1024, 8);
}
using NormFp8Layouts =
    Layouts<Layout<2, 256>, Layout<2, 512>, Layout<4, 512>, Layout<8, 512>, Layout<8, 1024>>;

template <typename T, typename W, bool kAdd, bool kDynamic>
int rms_norm_fp8_rows(const T *x, int64_t x_stride, T *residual, int64_t res_stride,
                      const W *weight, uint8_t *out, my_ops_fp8_scaling scaling, int64_t rows,
                      int64_t hidden, double eps, cudaStream_t s) {
    const acc_t<T> e = acc_t<T>(eps);
    const int64_t nvec = hidden / Vec<T>::size;
    const bool vec = vectorizable<T>(hidden, {{x, x_stride}, {weight, 0}}) &&
                     (!kAdd || vectorizable<T>(hidden, {{residual, res_stride}}));
    // The layout is the width's alone, whatever the pointers and strides: a
    // single row sliced from a batch gets its own stride (launch.h) and may be
    // aligned where the batch is not, and its sum must be added up alike.
    const RowLayout layout = hidden % Vec<T>::size == 0 ? norm_layout(nvec) : RowLayout{};
    // For few rows (decode) each thread also holds its weight vectors, loaded
    // beside the row's: the same arithmetic in the same order, so the same
    // bytes (batch invariance holds), and the weight's loads no longer wait on
    // the row's reduction. For many rows the extra registers cost more than
    // they save (benchmarks/NOTES.md, "fp8 RMSNorm: the weight first").
    const bool weight_first = few_rows(rows);
    if (layout.nv > 0 && NormFp8Layouts::launch(layout, [&](auto nv, auto max_threads) {
            constexpr int kNV = decltype(nv)::value, kThreads = decltype(max_threads)::value;
            constexpr bool kLoadsFirst = kThreads < 1024;
            const dim3 grid = rows_grid(rows);
            if (!vec)
                rms_norm_fp8_held_kernel<T, W, kNV, kThreads, kAdd, kDynamic, kLoadsFirst, false,
                                         false><<<grid, layout.threads, 0, s>>>(
                    x, x_stride, residual, res_stride, weight, out, scaling, rows, hidden, e);
            else if (weight_first && kLoadsFirst)
                rms_norm_fp8_held_kernel<T, W, kNV, kThreads, kAdd, kDynamic, kLoadsFirst, true>
                    <<<grid, layout.threads, 0, s>>>(x, x_stride, residual, res_stride, weight, out,
                                                     scaling, rows, hidden, e);
            else
                rms_norm_fp8_held_kernel<T, W, kNV, kThreads, kAdd, kDynamic>
                    <<<grid, layout.threads, 0, s>>>(x, x_stride, residual, res_stride, weight, out,
                                                     scaling, rows, hidden, e);
        }))
        return int(cudaGetLastError());
    rms_norm_fp8_generic_kernel<T, W, kAdd, kDynamic><<<rows_grid(rows), kGenericThreads, 0, s>>>(
        x, x_stride, residual, res_stride, weight, out, scaling, rows, hidden, e);
    return int(cudaGetLastError());
}

template <typename T, typename W>
int rms_norm_fp8(const void *x, int64_t x_stride, void *residual, int64_t res_stride,
                 const void *weight, uint8_t *out, my_ops_fp8_scaling scaling, int64_t rows,
                 int64_t hidden, double eps, void *stream) {
    if (rows == 0) return 0;
    const T *xt = static_cast<const T *>(x);
    const W *wt = static_cast<const W *>(weight);
    T *rt = static_cast<T *>(residual);
    const cudaStream_t s = cudaStream_t(stream);
    const bool dynamic = scaling.static_scale == nullptr;
    if (rt != nullptr)
        return dynamic ? rms_norm_fp8_rows<T, W, true, true>(xt, x_stride, rt, res_stride, wt, out,
                                                             scaling, rows, hidden, eps, s)
                       : rms_norm_fp8_rows<T, W, true, false>(xt, x_stride, rt, res_stride, wt, out,
                                                              scaling, rows, hidden, eps, s);
    return dynamic ? rms_norm_fp8_rows<T, W, false, true>(xt, x_stride, rt, res_stride, wt, out,
                                                          scaling, rows, hidden, eps, s)
                   : rms_norm_fp8_rows<T, W, false, false>(xt, x_stride, rt, res_stride, wt, out,
                                                           scaling, rows, hidden, eps, s);
}

// ---------------------------------------------------------- gated units --
template <int kAct> __device__ __forceinline__ float activation(float g) {
    return my_ops_activation_float(kAct, g);
}
template <int kAct> __device__ __forceinline__ double activation(double g) {
    return my_ops_activation_double(kAct, g);
}

template <typename T, int kAct, int NV, int kMaxThreads, bool kDynamic>
__global__ void __launch_bounds__(kMaxThreads)
act_and_mul_fp8_held_kernel(const T *__restrict__ x, int64_t x_stride, uint8_t *__restrict__ out,
                            my_ops_fp8_scaling scaling, int64_t rows, int64_t d) {
    using A = acc_t<T>;
    using V = Vec<T>;
    constexpr int P = V::size;
    __shared__ A scratch[32];
    const int nvec = int(d / P);
    Factors<A> q{};
    const float static_scale = kDynamic ? 0.0f : *scaling.static_scale;
    for (int64_t row = blockIdx.x; row < rows; row += gridDim.x) {
        const V *gate = reinterpret_cast<const V *>(x + row * x_stride);
        const V *up = gate + nvec;
        V g[NV], u[NV];
#pragma unroll
        for (int k = 0; k < NV; ++k) {
            const int i = threadIdx.x + k * blockDim.x;
            if (i < nvec) {
                g[k] = gate[i];
                u[k] = up[i];
            }
        }
        A y[NV][P];
        A amax = 0;
#pragma unroll
        for (int k = 0; k < NV; ++k) {
            const int i = threadIdx.x + k * blockDim.x;
            if (i < nvec) {
#pragma unroll
                for (int e = 0; e < P; ++e) {
                    y[k][e] = activation<kAct>(to_acc(g[k].v[e])) * to_acc(u[k].v[e]);
                    if constexpr (kDynamic) amax = fmax(amax, fabs(y[k][e]));
                }
            }
        }
        if constexpr (kDynamic)
            q = row_factors(scaling, row, block_max(amax, scratch));
        else
            q = static_factors<A>(static_scale);
        Bytes<P> *out_row = reinterpret_cast<Bytes<P> *>(out + row * d);
#pragma unroll
        for (int k = 0; k < NV; ++k) {
            const int i = threadIdx.x + k * blockDim.x;
            if (i < nvec) out_row[i] = quantize<P>(y[k], q);
        }
    }
}

// A static scale and few rows (decode): every value is its own, so the work is
// spread as wide as it goes, a thread per four values of a row, a grid row per
// row. H100, [64, 2 x 8192] bf16: the held-row kernel split over 5 blocks a row
// ran 71680 threads of 46 registers at 22% achieved occupancy (ncu) against
// torch.compile's 262144 threads of 17 at 75%. In tuning/fp8_layouts.cu,
// [rows, 2 x 8192]: 64 rows 3.22 us (held row) -> 2.78 (any of 2, 4 or 8
// values a thread); 128 rows 3.94 (two values, 256 threads) -> 3.53 (four,
// 128 threads), 256 rows 6.07 -> 4.93, 512 rows 8.97 (held row) -> 7.66.
// No loop over rows: the scale's factors, invariant in such a loop, were
// hoisted above it, so every thread's row loads waited for the scale's load
// and division (SASS); here the row's loads come first in program order and
// the division's branch follows them.
template <typename T, int kAct, int kValues, int kThreads>
__global__ void __launch_bounds__(kThreads)
act_and_mul_fp8_spread_kernel(const T *__restrict__ x, int64_t x_stride, uint8_t *__restrict__ out,
                              const float *__restrict__ static_scale, int64_t d) {
    using A = acc_t<T>;
    using V = Vec<T, kValues>;
    const int64_t j = int64_t(blockIdx.x) * kThreads + threadIdx.x;  // this thread's vector
    if (j >= d / kValues) return;
    const int64_t row = blockIdx.y;
    const V g = reinterpret_cast<const V *>(x + row * x_stride)[j];
    const V u = reinterpret_cast<const V *>(x + row * x_stride + d)[j];
    const Factors<A> q = static_factors<A>(*static_scale);
    A y[kValues];
#pragma unroll
    for (int e = 0; e < kValues; ++e) y[e] = activation<kAct>(to_acc(g.v[e])) * to_acc(u.v[e]);
    reinterpret_cast<Bytes<kValues> *>(out + row * d)[j] = quantize<kValues>(y, q);
}
// The spread launch the launcher takes.
constexpr int kSpreadValues = 4, kSpreadThreads = 128;

template <typename T, int kAct, bool kDynamic>
__global__ void __launch_bounds__(kGenericThreads)
act_and_mul_fp8_generic_kernel(const T *__restrict__ x, int64_t x_stride, uint8_t *__restrict__ out,
                               my_ops_fp8_scaling scaling, int64_t rows, int64_t d) {
    using A = acc_t<T>;
    __shared__ A scratch[32];
    Factors<A> q{};
    const float static_scale = kDynamic ? 0.0f : *scaling.static_scale;
    for (int64_t row = blockIdx.x; row < rows; row += gridDim.x) {
        const T *gate = x + row * x_stride;
        auto y = [&](int64_t j) { return activation<kAct>(to_acc(gate[j])) * to_acc(gate[d + j]); };
        if constexpr (kDynamic) {
            A amax = 0;  // (d == 0: 0, the floor scale, as on the CPU)
            for (int64_t j = threadIdx.x; j < d; j += blockDim.x) amax = fmax(amax, fabs(y(j)));
            q = row_factors(scaling, row, block_max(amax, scratch));
        } else {
            q = static_factors<A>(static_scale);
        }
        for (int64_t j = threadIdx.x; j < d; j += blockDim.x)
            out[row * d + j] = to_e4m3(scaled(y(j), q));
    }
}

template <typename T, int kAct, bool kDynamic>
int act_and_mul_fp8_rows(const T *x, int64_t x_stride, uint8_t *out, my_ops_fp8_scaling scaling,
                         int64_t rows, int64_t d, cudaStream_t s) {
    const int64_t nvec = d / Vec<T>::size;
    constexpr int kV = kSpreadValues;
    // (rows <= 65535: a grid row per row)
    if (!kDynamic && few_rows(rows) && rows <= 65535 && d > 0 && d % kV == 0 &&
        x_stride % kV == 0 && reinterpret_cast<uintptr_t>(x) % sizeof(Vec<T, kV>) == 0) {
        const dim3 grid(unsigned(ceil_div(d / kV, int64_t(kSpreadThreads))), unsigned(rows));
        act_and_mul_fp8_spread_kernel<T, kAct, kV, kSpreadThreads>
            <<<grid, kSpreadThreads, 0, s>>>(x, x_stride, out, scaling.static_scale, d);
        return int(cudaGetLastError());
    }
    // (d == 0: the generic kernel, which still writes each row's scale)
    const bool vec = d > 0 && vectorizable<T>(d, {{x, x_stride}});
    const RowLayout layout = act_layout(rows, nvec);
    if (vec && layout.nv > 0 && ActFp8Layouts::launch(layout, [&](auto nv, auto max_threads) {
            act_and_mul_fp8_held_kernel<T, kAct, decltype(nv)::value, decltype(max_threads)::value,
                                        kDynamic>
                <<<rows_grid(rows), layout.threads, 0, s>>>(x, x_stride, out, scaling, rows, d);
        }))
        return int(cudaGetLastError());
    act_and_mul_fp8_generic_kernel<T, kAct, kDynamic>
        <<<rows_grid(rows), kGenericThreads, 0, s>>>(x, x_stride, out, scaling, rows, d);
    return int(cudaGetLastError());
}

template <typename T>
int act_and_mul_fp8(my_ops_activation act, const void *x, int64_t x_stride, uint8_t *out,
                    my_ops_fp8_scaling scaling, int64_t rows, int64_t d, void *stream) {
    if (rows == 0) return 0;
    const T *xt = static_cast<const T *>(x);
    const cudaStream_t s = cudaStream_t(stream);
    const bool dynamic = scaling.static_scale == nullptr;
    // a case per row of MY_OPS_ACTIVATIONS
#define MY_OPS_ACTIVATION_CASE(name, ENUM, value)                                              \
    case ENUM:                                                                                 \
        return dynamic                                                                         \
                   ? act_and_mul_fp8_rows<T, value, true>(xt, x_stride, out, scaling, rows, d, s) \
                   : act_and_mul_fp8_rows<T, value, false>(xt, x_stride, out, scaling, rows, d, \
                                                           s);
    switch (act) { MY_OPS_ACTIVATIONS(MY_OPS_ACTIVATION_CASE) }
#undef MY_OPS_ACTIVATION_CASE
    return int(cudaErrorInvalidValue);
}

}  // namespace
}  // namespace my_ops

extern "C" {

int my_ops_rms_norm_fp8_cuda(my_ops_dtype dtype, my_ops_dtype weight_dtype, const void *x,
                             int64_t x_stride, void *residual, int64_t residual_stride,
                             const void *weight, uint8_t *out, my_ops_fp8_scaling scaling,
                             int64_t rows, int64_t hidden, double eps, void *stream) {
    MY_OPS_RMS_NORM_DISPATCH(dtype, weight_dtype, my_ops::rms_norm_fp8, x, x_stride, residual,
                             residual_stride, weight, out, scaling, rows, hidden, eps, stream);
}

int my_ops_act_and_mul_fp8_cuda(my_ops_dtype dtype, my_ops_activation act, const void *x,
                                int64_t x_stride, uint8_t *out, my_ops_fp8_scaling scaling,
                                int64_t rows, int64_t d, void *stream) {
    MY_OPS_CUDA_DISPATCH(dtype, my_ops::act_and_mul_fp8, act, x, x_stride, out, scaling, rows, d,
                         stream);
}

}  // extern "C"
