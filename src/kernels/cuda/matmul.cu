// Tiled shared-memory matrix product on CUDA: c[m, n] = a[m, k] @ b[k, n].
// Each 256-thread block computes a 64 x 64 tile of c, stepping through k in
// slices of 16 staged in shared memory; each thread accumulates a 4 x 4
// sub-tile in registers (rows ty + 16 i, columns tx + 16 j, so the shared
// memory reads are conflict-free and the stores to c are coalesced).
// Accumulates in float32 (float64 for float64). Bounds-checked on every
// edge, so any m, k, n works.
#include "../matmul.h"
#include "common.cuh"

namespace my_ops {
namespace {

constexpr int kTile = 64, kSlice = 16, kPerThread = 4, kThreadsPerSide = 16;

template <typename T>
__global__ void __launch_bounds__(256)
matmul_kernel(const T *__restrict__ a, const T *__restrict__ b, T *__restrict__ c, int64_t m,
              int64_t k, int64_t n) {
    using A = acc_t<T>;
    __shared__ A a_tile[kSlice][kTile + 1];
    __shared__ A b_tile[kSlice][kTile];
    const int tx = threadIdx.x % kThreadsPerSide, ty = threadIdx.x / kThreadsPerSide;
    const int64_t col0 = int64_t(blockIdx.x) * kTile;
    for (int64_t row0 = int64_t(blockIdx.y) * kTile; row0 < m; row0 += int64_t(gridDim.y) * kTile) {
        A acc[kPerThread][kPerThread] = {};
        for (int64_t k0 = 0; k0 < k; k0 += kSlice) {
            // 64 x 16 slice of a and 16 x 64 slice of b: 4 elements per thread each
#pragma unroll
            for (int l = 0; l < kTile * kSlice / 256; ++l) {
                const int idx = threadIdx.x + l * 256;
                const int ar = idx / kSlice, ak = idx % kSlice;
                const int64_t gr = row0 + ar, gk = k0 + ak;
                a_tile[ak][ar] = (gr < m && gk < k) ? to_acc(a[gr * k + gk]) : A(0);
                const int bk = idx / kTile, bc = idx % kTile;
                const int64_t gk2 = k0 + bk, gc = col0 + bc;
                b_tile[bk][bc] = (gk2 < k && gc < n) ? to_acc(b[gk2 * n + gc]) : A(0);
            }
            __syncthreads();
#pragma unroll
            for (int kk = 0; kk < kSlice; ++kk) {
                A a_frag[kPerThread], b_frag[kPerThread];
#pragma unroll
                for (int i = 0; i < kPerThread; ++i)
                    a_frag[i] = a_tile[kk][ty + kThreadsPerSide * i];
#pragma unroll
                for (int j = 0; j < kPerThread; ++j)
                    b_frag[j] = b_tile[kk][tx + kThreadsPerSide * j];
#pragma unroll
                for (int i = 0; i < kPerThread; ++i)
#pragma unroll
                    for (int j = 0; j < kPerThread; ++j) acc[i][j] += a_frag[i] * b_frag[j];
            }
            __syncthreads();
        }
#pragma unroll
        for (int i = 0; i < kPerThread; ++i) {
            const int64_t r = row0 + ty + kThreadsPerSide * i;
#pragma unroll
            for (int j = 0; j < kPerThread; ++j) {
                const int64_t col = col0 + tx + kThreadsPerSide * j;
                if (r < m && col < n) c[r * n + col] = from_acc<T>(acc[i][j]);
            }
        }
    }
}

// Fills c with zeros when k == 0 (an empty sum).
template <typename T> __global__ void zero_kernel(T *c, int64_t count) {
    for (int64_t i = int64_t(blockIdx.x) * blockDim.x + threadIdx.x; i < count;
         i += int64_t(gridDim.x) * blockDim.x)
        c[i] = from_acc<T>(acc_t<T>(0));
}

template <typename T>
int matmul(const void *a, const void *b, void *c, int64_t m, int64_t k, int64_t n, void *stream) {
    if (m == 0 || n == 0) return 0;
    auto s = cudaStream_t(stream);
    auto *ct = static_cast<T *>(c);
    if (k == 0) {
        zero_kernel<T><<<grid_for(m * n, 256), 256, 0, s>>>(ct, m * n);
        return int(cudaGetLastError());
    }
    const int64_t col_tiles = ceil_div(n, kTile), row_tiles = ceil_div(m, kTile);
    if (col_tiles > 0x7fffffff) return int(cudaErrorInvalidConfiguration);
    const dim3 grid(unsigned(col_tiles), unsigned(row_tiles < 65535 ? row_tiles : 65535));
    matmul_kernel<T>
        <<<grid, 256, 0, s>>>(static_cast<const T *>(a), static_cast<const T *>(b), ct, m, k, n);
    return int(cudaGetLastError());
}

}  // namespace
}  // namespace my_ops

extern "C" int my_ops_matmul_cuda(my_ops_dtype dtype, const void *a, const void *b, void *c,
                                  int64_t m, int64_t k, int64_t n, void *stream) {
    MY_OPS_CUDA_DISPATCH(dtype, my_ops::matmul, a, b, c, m, k, n, stream);
}
