// Launch-layout sweep of the rms_norm forward kernels (rms_norm and the fused
// residual add): for each shape, every (vectors per thread, launch bound)
// instantiation the kernel family ships, timed next to what the launcher
// picks, with the largest difference from the launcher's output. Aligned rows
// take the held-vector kernels (one block per row), odd widths the
// covering-vector kernels (a persistent grid of as many blocks as fit).
// The layout rules in rms_norm_forward.cu (forward_layout, unaligned_layout,
// unaligned_min_blocks) came from this sweep on an H100; rerun it on a new GPU
// before changing them. bf16, CUDA events, median of 15 runs of 20 calls.
// (The backward's layouts came from this tool's first version, commit 7fa90a3.)
//
//   nvcc -O3 -std=c++17 -arch=sm_90 --expt-relaxed-constexpr -Isrc/kernels \
//        benchmarks/tuning/layouts.cu -o /tmp/layouts && /tmp/layouts
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <vector>

#include "../../src/kernels/cuda/common.cu"
#include "../../src/kernels/cuda/rms_norm_forward.cu"
#include "tuning.cuh"

using bf16 = __nv_bfloat16;
using namespace my_ops;

constexpr double kCopyGBs = 3005;  // device-to-device copy on the H100 (benchmarks/NOTES.md)

template <typename F> float time_us(F call) {
    for (int i = 0; i < 5; ++i) call();
    CHECK(cudaDeviceSynchronize());
    cudaEvent_t start, end;
    CHECK(cudaEventCreate(&start));
    CHECK(cudaEventCreate(&end));
    std::vector<float> times;
    for (int r = 0; r < 15; ++r) {
        CHECK(cudaEventRecord(start));
        for (int i = 0; i < 20; ++i) call();
        CHECK(cudaEventRecord(end));
        CHECK(cudaEventSynchronize(end));
        float ms = 0;
        CHECK(cudaEventElapsedTime(&ms, start, end));
        times.push_back(ms * 1000 / 20);
    }
    CHECK(cudaGetLastError());
    std::sort(times.begin(), times.end());
    return times[times.size() / 2];
}

float max_diff(const bf16 *a, const bf16 *b, int64_t n) {
    std::vector<bf16> ha(n), hb(n);
    CHECK(cudaMemcpy(ha.data(), a, n * 2, cudaMemcpyDeviceToHost));
    CHECK(cudaMemcpy(hb.data(), b, n * 2, cudaMemcpyDeviceToHost));
    float m = 0;
    for (int64_t i = 0; i < n; ++i)
        m = std::max(m, std::fabs(__bfloat162float(ha[i]) - __bfloat162float(hb[i])));
    return m;
}

struct Shape {
    int64_t rows, hidden;
    bf16 *x, *residual, *weight, *y, *y_launcher;
    int64_t n() const { return rows * hidden; }
    double floor_us(int passes) const { return passes * double(n()) * 2 / (kCopyGBs * 1e3); }
    void report(const char *what, const char *layout, float us, int passes, float diff) const {
        std::printf("  %-4s %-36s %8.1f us %6.1f%% of copy  max diff %.3g\n", what, layout, us,
                    100 * floor_us(passes) / us, diff);
    }
};

// One layout of the held-vector kernels (rows of whole, aligned vectors).
template <int NV, int kMax> void held(const Shape &s) {
    const int64_t nvec = s.hidden / 8;
    const int threads = threads_for(nvec, NV);
    if (int64_t(NV) * kMax < nvec || threads > kMax) return;
    char name[64];
    std::snprintf(name, sizeof name, "held NV=%d x %d threads (max %d)", NV, threads, kMax);
    const float us = time_us([&] {
        held_kernel<bf16, bf16, NV, kMax>
            <<<rows_grid(s.rows), threads>>>(s.x, s.hidden, s.weight, s.y, s.rows, s.hidden, 1e-6f);
    });
    s.report("rms", name, us, 2, max_diff(s.y, s.y_launcher, s.n()));
    // in place on y, with x as the residual: values stay bounded
    s.report("add", name, time_us([&] {
                 held_add_kernel<bf16, bf16, NV, kMax><<<rows_grid(s.rows), threads>>>(
                     s.y, s.hidden, s.residual, s.hidden, s.residual, s.hidden, s.weight, s.y,
                     s.hidden, s.rows, s.hidden, 1e-6f);
             }),
             4, 0);
}

// One layout of the covering-vector kernels (odd widths), persistent grid.
template <int NV, int kMax> void covering(const Shape &s) {
    const int64_t nvec = (s.hidden + 14) / 8;
    const int threads = threads_for(nvec, NV);
    if (int64_t(NV) * kMax < nvec || threads > kMax) return;
    const size_t shared = size_t(nvec) * 16;
    const int64_t resident =
        resident_blocks(unaligned_kernel<bf16, bf16, NV, kMax>, threads, shared);
    const unsigned grid = unsigned(s.rows <= resident ? s.rows : resident / 8 * 8);
    char name[64];
    std::snprintf(name, sizeof name, "covering NV=%d x %d (max %d), %u blocks", NV, threads, kMax,
                  grid);
    const float us = time_us([&] {
        unaligned_kernel<bf16, bf16, NV, kMax>
            <<<grid, threads, shared>>>(s.x, s.hidden, s.weight, s.y, s.rows, s.hidden, 1e-6f);
    });
    s.report("rms", name, us, 2, max_diff(s.y, s.y_launcher, s.n()));
    s.report("add", name, time_us([&] {
                 unaligned_add_kernel<bf16, bf16, NV, kMax><<<grid, threads, shared>>>(
                     s.y, s.hidden, s.residual, s.hidden, s.residual, s.hidden, s.weight, s.y,
                     s.hidden, s.rows, s.hidden, 1e-6f);
             }),
             4, 0);
}

template <typename... L> void sweep(const Shape &s, bool odd, Layouts<L...>) {
    if (odd)
        (covering<L::nv, L::max_threads>(s), ...);
    else
        (held<L::nv, L::max_threads>(s), ...);
}

// One shape: the launcher's choice, then every layout the kernel family ships.
void sweep_shape(int64_t rows, int64_t hidden) {
    {
        Shape s{rows, hidden};
        for (bf16 **p : {&s.x, &s.residual, &s.y, &s.y_launcher})
            CHECK(cudaMalloc(p, s.n() * 2 + 64));
        CHECK(cudaMalloc(&s.weight, hidden * 2));
        fill<<<1024, 256>>>(s.x, s.n(), 1);
        fill<<<1024, 256>>>(s.residual, s.n(), 2);
        fill<<<64, 256>>>(s.weight, hidden, 3);
        const bool odd = hidden % 8 != 0;
        std::printf("[%ld, %ld] bf16%s\n", s.rows, hidden,
                    odd ? " (odd width: covering vectors)" : "");
        const float us = time_us([&] {
            rms_norm_rows<bf16, bf16, false>(s.x, hidden, nullptr, 0, nullptr, 0, s.weight,
                                             s.y_launcher, hidden, s.rows, hidden, 1e-6, nullptr);
        });
        s.report("rms", "launcher", us, 2, 0);
        CHECK(cudaMemcpy(s.y, s.x, s.n() * 2, cudaMemcpyDeviceToDevice));
        s.report("add", "launcher", time_us([&] {
                     rms_norm_rows<bf16, bf16, true>(s.y, hidden, s.residual, hidden, s.residual,
                                                     hidden, s.weight, s.y, hidden, s.rows, hidden,
                                                     1e-6, nullptr);
                 }),
                 4, 0);
        if (odd)
            sweep(s, true, UnalignedLayouts{});
        else
            sweep(s, false, RmsNormLayouts{});
        for (bf16 *p : {s.x, s.residual, s.y, s.y_launcher, s.weight}) CHECK(cudaFree(p));
    }
}

// No arguments: 256 MiB of bf16 per tensor at each width. `layouts ROWS...`:
// the aligned widths at each of these row counts, to choose layouts that
// serve every row count (a layout may depend on the width alone: batch
// invariance, docs/determinism.md).
int main(int argc, char **argv) {
    const int64_t elements = int64_t(32768) * 4096;
    if (argc == 1) {
        for (const int64_t hidden : {4096, 8192, 4097, 2881, 1031, 8193, 14337, 127})
            sweep_shape(elements / hidden, hidden);
        return 0;
    }
    for (const int64_t hidden : {2048, 4096, 8192, 16384})
        for (int i = 1; i < argc; ++i) sweep_shape(std::atoll(argv[i]), hidden);
    return 0;
}
