// Layout sweep for the CUDA kernels: times every launch layout of the shipped
// rms_norm (forward, backward, fused residual add) and silu_and_mul kernels
// at the benchmark shapes and prints each shape's fastest next to the layout
// the launchers pick. The launchers' rules (rms_norm.cu: rms_norm_layout,
// fused_add_layout, backward_layout; silu_and_mul.cu: unroll_for, vec_grid)
// came from this sweep on an H100. Single launches: the small shapes'
// times include launch latency (benchmarks/run.py replays CUDA graphs);
// rerun it on a new GPU before changing them. bf16, CUDA events, medians.
//
//   nvcc -O3 -std=c++17 -arch=sm_90 -Isrc/kernels benchmarks/tuning/layouts.cu -o /tmp/layouts
//   /tmp/layouts            # under a minute on an H100; --all prints every layout timed
#include <algorithm>
#include <cstdio>
#include <functional>
#include <string>
#include <vector>

#include "../../src/kernels/cuda/common.cu"
#include "../../src/kernels/cuda/rms_norm.cu"
#include "../../src/kernels/cuda/silu_and_mul.cu"

using bf16 = __nv_bfloat16;
using namespace my_ops;

#define CHECK(call)                                                                  \
    do {                                                                             \
        const cudaError_t error = (call);                                            \
        if (error != cudaSuccess) {                                                  \
            std::printf("CUDA error %s at line %d\n", cudaGetErrorString(error), __LINE__); \
            std::exit(1);                                                            \
        }                                                                            \
    } while (0)

__global__ void fill(bf16 *p, int64_t n, uint32_t seed) {
    for (int64_t i = blockIdx.x * int64_t(blockDim.x) + threadIdx.x; i < n; i += int64_t(gridDim.x) * blockDim.x) {
        uint32_t h = uint32_t(i) * 2654435761u ^ seed;
        h ^= h >> 13;
        h *= 0x5bd1e995u;
        h ^= h >> 15;
        p[i] = __float2bfloat16((h & 0xffffff) / float(0x1000000) * 4 - 2);
    }
}

// Median microseconds of one call (CUDA events, after warm-up).
float time_us(const std::function<void()> &call) {
    cudaEvent_t start, end;
    CHECK(cudaEventCreate(&start));
    CHECK(cudaEventCreate(&end));
    for (int i = 0; i < 3; ++i) call();
    std::vector<float> times;
    for (int i = 0; i < 25; ++i) {
        CHECK(cudaEventRecord(start));
        call();
        CHECK(cudaEventRecord(end));
        CHECK(cudaEventSynchronize(end));
        float ms = 0;
        CHECK(cudaEventElapsedTime(&ms, start, end));
        times.push_back(ms * 1000);
    }
    CHECK(cudaGetLastError());
    std::sort(times.begin(), times.end());
    return times[times.size() / 2];
}

bool print_all = false;

struct Best {
    const char *what;
    std::string name;
    float us = 1e30f;
    void offer(const std::string &n, float t) {
        if (print_all) std::printf("    %-9s %-40s %8.2f us\n", what, n.c_str(), t);
        if (t < us) us = t, name = n;
    }
};

template <int NV, int kMaxThreads> void rms_layouts(const bf16 *x, const bf16 *w, bf16 *y, const bf16 *dy,
                                                   bf16 *dx, bf16 *dw, float *partial, int64_t rows,
                                                   int64_t hidden, Best &fwd, Best &bwd, Best &fused) {
    const int64_t nvec = hidden / 8;
    if (int64_t(NV) * kMaxThreads < nvec || (NV > 1 && int64_t(NV / 2) * kMaxThreads >= nvec)) return;
    const int threads = threads_for(nvec, NV);
    if (threads > kMaxThreads) return;
    const std::string name = "NV=" + std::to_string(NV) + " max_threads=" + std::to_string(kMaxThreads);
    fwd.offer(name + " grid=rows", time_us([&] {
                  rms_norm_vec_kernel<bf16, NV, kMaxThreads><<<rows_grid(rows), threads>>>(x, w, y, rows, hidden, 1e-6f);
              }));
    // in place on y (x's normalised copy) and dx as the residual: values stay bounded
    fused.offer(name + " grid=rows", time_us([&] {
                    fused_add_rms_norm_vec_kernel<bf16, NV, kMaxThreads>
                        <<<rows_grid(rows), threads>>>(y, dx, w, rows, hidden, 1e-6f);
                }));
    if (kMaxThreads > 512) return;
    int per_sm = 0;
    CHECK(cudaOccupancyMaxActiveBlocksPerMultiprocessor(&per_sm, rms_norm_backward_vec_kernel<bf16, NV, kMaxThreads>,
                                                        threads, 0));
    for (int waves : {1, 2}) {
        const int64_t grid = std::min<int64_t>(rows, int64_t(sm_count()) * per_sm * waves);
        bwd.offer(name + " grid=" + std::to_string(waves) + "x resident", time_us([&] {
                      rms_norm_backward_vec_kernel<bf16, NV, kMaxThreads>
                          <<<unsigned(grid), threads>>>(dy, x, w, dx, partial, rows, hidden, 1e-6f);
                      sum_partials_kernel<bf16><<<unsigned(ceil_div(hidden, 32)), dim3(32, 16)>>>(partial, dw, grid, hidden);
                  }));
    }
}

template <int kUnroll> void silu_layouts(const bf16 *x, bf16 *out, int64_t rows, int64_t d, Best &best) {
    const int64_t per_row = d / 8;
    for (int tx = 32; tx <= kThreads; tx *= 2) {
        const dim3 grid(unsigned(ceil_div(per_row, int64_t(tx) * kUnroll)), unsigned(std::min<int64_t>(rows, 65535)));
        best.offer("unroll=" + std::to_string(kUnroll) + " block=" + std::to_string(tx),
                   time_us([&] { silu_and_mul_vec_kernel<bf16, kUnroll><<<grid, dim3(tx, 1)>>>(x, out, rows, d); }));
    }
}

int main(int argc, char **argv) {
    print_all = argc > 1 && std::string(argv[1]) == "--all";
    const int64_t max_elements = 32768LL * 16384;
    bf16 *x, *dy, *y, *dx, *w, *dw;
    float *partial;
    CHECK(cudaMalloc(&x, max_elements * 2));
    CHECK(cudaMalloc(&dy, max_elements * 2));
    CHECK(cudaMalloc(&y, max_elements * 2));
    CHECK(cudaMalloc(&dx, max_elements * 2));
    CHECK(cudaMalloc(&w, 16384 * 2));
    CHECK(cudaMalloc(&dw, 16384 * 2));
    CHECK(cudaMalloc(&partial, int64_t(sm_count()) * 32 * 16384 * 4));
    fill<<<1024, 256>>>(x, max_elements, 1);
    fill<<<1024, 256>>>(dy, max_elements, 2);
    fill<<<64, 256>>>(w, 16384, 3);
    CHECK(cudaDeviceSynchronize());
    const float copy_us = time_us([&] { CHECK(cudaMemcpyAsync(y, x, max_elements * 2, cudaMemcpyDeviceToDevice)); });
    std::printf("device copy: %.0f GB/s\n", 4.0 * max_elements / copy_us / 1e3);

    struct Shape { int64_t rows, hidden; };
    for (const Shape s : {Shape{32768, 1024}, {32768, 2048}, {32768, 4096}, {32768, 8192}, {32768, 16384},
                          {1, 4096}, {64, 4096}, {1024, 4096}, {4096, 4096}, {65536, 4096}}) {
        Best fwd{"forward"}, bwd{"backward"}, fused{"fused"};
        rms_layouts<1, 256>(x, w, y, dy, dx, dw, partial, s.rows, s.hidden, fwd, bwd, fused);
        rms_layouts<2, 256>(x, w, y, dy, dx, dw, partial, s.rows, s.hidden, fwd, bwd, fused);
        rms_layouts<4, 256>(x, w, y, dy, dx, dw, partial, s.rows, s.hidden, fwd, bwd, fused);
        rms_layouts<8, 256>(x, w, y, dy, dx, dw, partial, s.rows, s.hidden, fwd, bwd, fused);
        rms_layouts<1, 1024>(x, w, y, dy, dx, dw, partial, s.rows, s.hidden, fwd, bwd, fused);
        rms_layouts<2, 1024>(x, w, y, dy, dx, dw, partial, s.rows, s.hidden, fwd, bwd, fused);
        rms_layouts<4, 512>(x, w, y, dy, dx, dw, partial, s.rows, s.hidden, fwd, bwd, fused);
        rms_layouts<8, 512>(x, w, y, dy, dx, dw, partial, s.rows, s.hidden, fwd, bwd, fused);
        rms_layouts<4, 1024>(x, w, y, dy, dx, dw, partial, s.rows, s.hidden, fwd, bwd, fused);
        const float fwd_us = time_us([&] { rms_norm<bf16>(x, w, y, s.rows, s.hidden, 1e-6, nullptr); });
        const float fused_us = time_us([&] { fused_add_rms_norm<bf16>(y, dx, w, s.rows, s.hidden, 1e-6, nullptr); });
        const int64_t partials = rms_norm_backward_partials<bf16>(s.rows, s.hidden);
        const float bwd_us = time_us([&] {
            rms_norm_backward<bf16>(dy, x, w, dx, dw, partial, partials, s.rows, s.hidden, 1e-6, nullptr);
        });
        std::printf("rms_norm %6ldx%-5ld forward  fastest %-40s %8.2f us | launcher %8.2f us\n", long(s.rows),
                    long(s.hidden), fwd.name.c_str(), fwd.us, fwd_us);
        std::printf("rms_norm %6ldx%-5ld backward fastest %-40s %8.2f us | launcher %8.2f us\n", long(s.rows),
                    long(s.hidden), bwd.name.c_str(), bwd.us, bwd_us);
        std::printf("fused    %6ldx%-5ld add+norm fastest %-40s %8.2f us | launcher %8.2f us\n", long(s.rows),
                    long(s.hidden), fused.name.c_str(), fused.us, fused_us);
    }
    for (const int64_t rows : {1, 64, 4096, 16384}) {
        const int64_t d = 8192;
        Best best{"silu"};
        silu_layouts<1>(x, y, rows, d, best);
        silu_layouts<2>(x, y, rows, d, best);
        const float launcher_us = time_us([&] { silu_and_mul<bf16>(x, y, rows, d, nullptr); });
        std::printf("silu_and_mul %5ldx2x%ld   fastest %-40s %8.2f us | launcher %8.2f us\n", long(rows), long(d),
                    best.name.c_str(), best.us, launcher_us);
    }
    return 0;
}
