// What the standalone CUDA tuning tools here share (layouts.cu,
// fp8_layouts.cu): a check that stops at the first CUDA error, and bf16
// inputs filled on the device from a hash of each index (the same values on
// every run, in [-2, 2)). Include after the kernels' sources.
#pragma once
#include <cstdint>
#include <cstdio>
#include <cstdlib>

#define CHECK(call)                                                                         \
    do {                                                                                    \
        const cudaError_t error = (call);                                                   \
        if (error != cudaSuccess) {                                                         \
            std::printf("CUDA error %s at line %d\n", cudaGetErrorString(error), __LINE__); \
            std::exit(1);                                                                   \
        }                                                                                   \
    } while (0)

__global__ void fill(__nv_bfloat16 *p, int64_t n, uint32_t seed) {
    for (int64_t i = blockIdx.x * int64_t(blockDim.x) + threadIdx.x; i < n;
         i += int64_t(gridDim.x) * blockDim.x) {
        uint32_t h = uint32_t(i) * 2654435761u ^ seed;
        h ^= h >> 13;
        h *= 0x5bd1e995u;
        h ^= h >> 15;
        p[i] = __float2bfloat16((h & 0xffffff) / float(0x1000000) * 4 - 2);
    }
}
