// Launch-layout sweep of the fp8-output kernels (src/kernels/cuda/fp8.cu):
//   - RMSNorm to fp8, static and per token, at the widths the issue's goals
//     name ([32768, 4096] and [8192, 8192] bf16), other widths and decode
//     rows: every (vectors per thread, launch bound, loads first) the
//     held-row kernel takes;
//   - SiLU-and-mul to fp8 with a static scale at decode shapes ([64, 8192]
//     and others): the spread kernel (a thread per 2, 4 or 8 values) against
//     the held-row kernel's layouts.
// Each case is timed as CUDA-graph replays of calls that rotate through
// enough input sets to exceed the L2 cache (as benchmarks/run.py does), so a
// decode-sized call is timed as it runs in a captured model; the output's
// bytes are compared with the launcher's. "% of copy" is against a
// device-to-device copy of 256 MiB measured first.
//
//   nvcc -O3 -std=c++17 -arch=sm_90 --expt-relaxed-constexpr -Isrc/kernels \
//        benchmarks/tuning/fp8_layouts.cu -o /tmp/fp8_layouts && /tmp/fp8_layouts
#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <vector>

#include "../../src/kernels/cuda/common.cu"
#include "../../src/kernels/cuda/fp8.cu"
#include "tuning.cuh"

using bf16 = __nv_bfloat16;
using namespace my_ops;

double copy_gbs = 0;  // measured in main
constexpr int64_t kL2Bytes = int64_t(50) << 20;

// Median time of one call, in us: call(set, stream) captured into a graph
// `calls` times over the input sets, the graph replayed 15 times.
template <typename F> float graph_time_us(int sets, F call) {
    const int calls = std::max(2 * sets, 20);
    cudaStream_t s;
    CHECK(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking));
    for (int i = 0; i < sets; ++i) call(i, s);
    CHECK(cudaStreamSynchronize(s));
    cudaGraph_t graph;
    cudaGraphExec_t exec;
    CHECK(cudaStreamBeginCapture(s, cudaStreamCaptureModeThreadLocal));
    for (int i = 0; i < calls; ++i) call(i % sets, s);
    CHECK(cudaStreamEndCapture(s, &graph));
    CHECK(cudaGraphInstantiate(&exec, graph, 0));
    for (int i = 0; i < 3; ++i) CHECK(cudaGraphLaunch(exec, s));
    cudaEvent_t start, end;
    CHECK(cudaEventCreate(&start));
    CHECK(cudaEventCreate(&end));
    std::vector<float> times;
    for (int r = 0; r < 15; ++r) {
        CHECK(cudaEventRecord(start, s));
        CHECK(cudaGraphLaunch(exec, s));
        CHECK(cudaEventRecord(end, s));
        CHECK(cudaEventSynchronize(end));
        float ms = 0;
        CHECK(cudaEventElapsedTime(&ms, start, end));
        times.push_back(ms * 1000 / calls);
    }
    CHECK(cudaGraphExecDestroy(exec));
    CHECK(cudaGraphDestroy(graph));
    CHECK(cudaStreamDestroy(s));
    std::sort(times.begin(), times.end());
    return times[times.size() / 2];
}

// Buffers of one shape: `sets` copies of the inputs, so that the calls of a
// graph read memory the previous calls did not leave in L2.
struct Case {
    int64_t rows, width, in_width;  // in_width: 2 * width for the gated units
    int sets;
    std::vector<bf16 *> x;
    bf16 *weight;
    uint8_t *out, *reference;
    float *scale, *scales;
    int64_t in_bytes() const { return rows * in_width * 2; }
    int64_t out_bytes() const { return rows * width; }
    Case(int64_t r, int64_t w, int64_t iw) : rows(r), width(w), in_width(iw) {
        sets = int(std::max<int64_t>(2, 3 * kL2Bytes / (in_bytes() + out_bytes()) + 1));
        for (int i = 0; i < sets; ++i) {
            bf16 *p;
            CHECK(cudaMalloc(&p, in_bytes()));
            fill<<<1024, 256>>>(p, rows * in_width, 7 + i);
            x.push_back(p);
        }
        CHECK(cudaMalloc(&weight, width * 2));
        fill<<<64, 256>>>(weight, width, 3);
        CHECK(cudaMalloc(&out, out_bytes()));
        CHECK(cudaMalloc(&reference, out_bytes()));
        CHECK(cudaMalloc(&scale, 4));
        const float one = 0.02f;
        CHECK(cudaMemcpy(scale, &one, 4, cudaMemcpyHostToDevice));
        CHECK(cudaMalloc(&scales, rows * 4));
    }
    ~Case() {
        for (bf16 *p : x) CHECK(cudaFree(p));
        for (void *p :
             {(void *)weight, (void *)out, (void *)reference, (void *)scale, (void *)scales})
            CHECK(cudaFree(p));
    }
    my_ops_fp8_scaling scaling(bool dynamic) const {
        return dynamic ? my_ops_fp8_scaling{nullptr, scales, nullptr}
                       : my_ops_fp8_scaling{scale, nullptr, nullptr};
    }
    // bytes of out that differ from the reference
    int64_t differing() const {
        std::vector<uint8_t> a(out_bytes()), b(out_bytes());
        CHECK(cudaMemcpy(a.data(), out, out_bytes(), cudaMemcpyDeviceToHost));
        CHECK(cudaMemcpy(b.data(), reference, out_bytes(), cudaMemcpyDeviceToHost));
        int64_t n = 0;
        for (int64_t i = 0; i < out_bytes(); ++i) n += a[i] != b[i];
        return n;
    }
    template <typename F> float time_us(F call) const { return graph_time_us(sets, call); }
    void report(const char *layout, float us, bool dynamic, int64_t differ) const {
        const double bytes = double(in_bytes() + out_bytes() + (dynamic ? rows * 4 : 0)) +
                             (in_width == width ? width * 2 : 0);
        std::printf("  %-58s %8.2f us %6.1f%% of copy  %ld bytes differ\n", layout, us,
                    100 * bytes / (copy_gbs * 1e3) / us, long(differ));
    }
};

// ------------------------------------------------------------ RMSNorm --
template <int NV, int kMax, bool kLoadsFirst, bool kDynamic, bool kWeightFirst = false>
void norm_layout_case(const Case &c) {
    const int64_t nvec = c.width / 8;
    const int threads = threads_for(nvec, NV);
    if (int64_t(NV) * kMax < nvec || threads > kMax) return;
    char name[96];
    std::snprintf(name, sizeof name, "NV=%d x %d threads (max %d)%s%s", NV, threads, kMax,
                  kLoadsFirst ? " loads-first" : "", kWeightFirst ? " weight-first" : "");
    auto call = [&](int set, cudaStream_t s) {
        rms_norm_fp8_held_kernel<bf16, bf16, NV, kMax, false, kDynamic, kLoadsFirst, kWeightFirst>
            <<<rows_grid(c.rows), threads, 0, s>>>(c.x[set], c.width, nullptr, 0, c.weight, c.out,
                                                   c.scaling(kDynamic), c.rows, c.width, 1e-6f);
    };
    const float us = c.time_us(call);
    call(0, nullptr);
    CHECK(cudaDeviceSynchronize());
    c.report(name, us, kDynamic, c.differing());
}

template <int NV, int kMax, bool kDynamic> void norm_layout_all(const Case &c) {
    norm_layout_case<NV, kMax, false, kDynamic>(c);
    norm_layout_case<NV, kMax, true, kDynamic>(c);
    norm_layout_case<NV, kMax, true, kDynamic, true>(c);
}

void sweep_norm(int64_t rows, int64_t hidden, bool dynamic) {
    Case c(rows, hidden, hidden);
    std::printf("rms_norm_fp8 %s [%ld, %ld] bf16 (%d input sets)\n",
                dynamic ? "per token" : "static", long(rows), long(hidden), c.sets);
    auto launcher = [&](int set, cudaStream_t s) {
        rms_norm_fp8<bf16, bf16>(c.x[set], hidden, nullptr, 0, c.weight, c.out, c.scaling(dynamic),
                                 rows, hidden, 1e-6, s);
    };
    const float us = c.time_us(launcher);
    launcher(0, nullptr);
    CHECK(cudaMemcpy(c.reference, c.out, c.out_bytes(), cudaMemcpyDeviceToDevice));
    c.report("launcher", us, dynamic, 0);
#define MY_OPS_NORM_LAYOUTS(D)                                                      \
    norm_layout_all<1, 256, D>(c), norm_layout_all<2, 256, D>(c),                   \
        norm_layout_all<4, 256, D>(c), norm_layout_all<8, 256, D>(c),               \
        norm_layout_all<1, 512, D>(c), norm_layout_all<2, 512, D>(c),               \
        norm_layout_all<4, 512, D>(c), norm_layout_all<1, 1024, D>(c),              \
        norm_layout_all<2, 1024, D>(c), norm_layout_all<4, 1024, D>(c),             \
        norm_layout_all<8, 1024, D>(c)
    if (dynamic)
        MY_OPS_NORM_LAYOUTS(true);
    else
        MY_OPS_NORM_LAYOUTS(false);
#undef MY_OPS_NORM_LAYOUTS
}

// ----------------------------------------------- SiLU-and-mul, static --
// The held-row kernel, a block per row, at each layout; the launcher takes
// the spread kernel for few rows.
template <int NV, int kMax> void act_case(const Case &c) {
    const int64_t nvec = c.width / 8;
    const int threads = threads_for(nvec, NV);
    if (int64_t(NV) * kMax < nvec || threads > kMax) return;
    char name[96];
    std::snprintf(name, sizeof name, "held row, NV=%d x %d threads (max %d)", NV, threads, kMax);
    auto call = [&](int set, cudaStream_t s) {
        act_and_mul_fp8_held_kernel<bf16, MY_OPS_SILU, NV, kMax, false>
            <<<rows_grid(c.rows), threads, 0, s>>>(c.x[set], c.in_width, c.out, c.scaling(false),
                                                   c.rows, c.width);
    };
    const float us = c.time_us(call);
    call(0, nullptr);
    CHECK(cudaDeviceSynchronize());
    c.report(name, us, false, c.differing());
}

// The spread kernel: a thread per kValues values of a row, kThreads a block.
template <int kValues, int kThreads> void spread_case(Case &c) {
    auto call = [&](int set, cudaStream_t s) {
        const dim3 grid(unsigned(ceil_div(c.width / kValues, int64_t(kThreads))), unsigned(c.rows));
        act_and_mul_fp8_spread_kernel<bf16, MY_OPS_SILU, kValues, kThreads>
            <<<grid, kThreads, 0, s>>>(c.x[set], c.in_width, c.out, c.scale, c.rows, c.width);
    };
    const float us = c.time_us(call);
    call(0, nullptr);
    CHECK(cudaDeviceSynchronize());
    char name[64];
    std::snprintf(name, sizeof name, "spread, %d values a thread, %d threads", kValues, kThreads);
    c.report(name, us, false, c.differing());
}

void sweep_act(int64_t rows, int64_t d) {
    Case c(rows, d, 2 * d);
    std::printf("silu_and_mul_fp8 static [%ld, %ld] bf16 (%d input sets)\n", long(rows),
                long(2 * d), c.sets);
    auto launcher = [&](int set, cudaStream_t s) {
        act_and_mul_fp8<bf16>(MY_OPS_SILU, c.x[set], 2 * d, c.out, c.scaling(false), rows, d, s);
    };
    const float us = c.time_us(launcher);
    launcher(0, nullptr);
    CHECK(cudaMemcpy(c.reference, c.out, c.out_bytes(), cudaMemcpyDeviceToDevice));
    c.report("launcher", us, false, 0);
    spread_case<2, 128>(c);
    spread_case<2, 256>(c);
    spread_case<2, 512>(c);
    spread_case<4, 128>(c);
    spread_case<4, 256>(c);
    spread_case<8, 64>(c);
    spread_case<8, 128>(c);
    spread_case<8, 256>(c);
    act_case<1, 256>(c);
    act_case<2, 256>(c);
    act_case<4, 256>(c);
    act_case<8, 256>(c);
    act_case<1, 1024>(c);
    act_case<2, 1024>(c);
    act_case<4, 1024>(c);
}

// `fp8_layouts norm` / `fp8_layouts act` / no argument: both.
int main(int argc, char **argv) {
    {
        const size_t bytes = size_t(256) << 20;
        void *a, *b;
        CHECK(cudaMalloc(&a, bytes));
        CHECK(cudaMalloc(&b, bytes));
        const float us = graph_time_us(2, [&](int, cudaStream_t s) {
            CHECK(cudaMemcpyAsync(b, a, bytes, cudaMemcpyDeviceToDevice, s));
        });
        copy_gbs = 2.0 * bytes / (us * 1e3);
        std::printf("device-to-device copy of 256 MiB: %.1f us, %.0f GB/s\n", us, copy_gbs);
        CHECK(cudaFree(a));
        CHECK(cudaFree(b));
    }
    const bool norm = argc == 1 || std::strcmp(argv[1], "norm") == 0;
    const bool act = argc == 1 || std::strcmp(argv[1], "act") == 0;
    if (norm)
        for (const bool dynamic : {true, false}) {
            for (const int64_t hidden : {8192, 4096, 2048, 16384})
                sweep_norm(int64_t(32768) * 4096 / hidden, hidden, dynamic);
            sweep_norm(64, 8192, dynamic);
            sweep_norm(64, 4096, dynamic);
        }
    if (act)
        for (const int64_t d : {8192, 14336})
            for (const int64_t rows : {1, 16, 64, 128, 256, 512}) sweep_act(rows, d);
    return 0;
}
