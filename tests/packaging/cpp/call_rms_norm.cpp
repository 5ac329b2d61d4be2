// A LibTorch program without Python: loads libmy_ops (the ops of the my_ops
// wheel) and calls my_ops::rms_norm through the dispatcher.
//
//   call_rms_norm /path/to/libmy_ops.so SEED
//
// Prints the largest error against a float64 reference, and the message of
// a call with bad arguments; exits 0 when the result is right and the bad
// call was refused.
#include <ATen/ATen.h>
#include <ATen/core/dispatch/Dispatcher.h>
#include <dlfcn.h>

#include <cstdio>
#include <cstdlib>
#include <exception>

int main(int argc, char **argv) {
    if (argc != 3) {
        std::fprintf(stderr, "usage: %s LIBMY_OPS SEED\n", argv[0]);
        return 2;
    }
    if (!dlopen(argv[1], RTLD_NOW | RTLD_GLOBAL)) {  // registers the ops
        std::fprintf(stderr, "dlopen: %s\n", dlerror());
        return 1;
    }
    auto rms_norm = c10::Dispatcher::singleton()
                        .findSchemaOrThrow("my_ops::rms_norm", "")
                        .typed<at::Tensor(const at::Tensor &, const at::Tensor &, double)>();
    at::manual_seed(std::strtoull(argv[2], nullptr, 10));
    const auto x = at::randn({16, 64});
    const auto w = at::rand({64}) + 0.5;
    const auto y = rms_norm.call(x, w, 1e-6);
    const auto x64 = x.to(at::kDouble);
    const auto reference = x64 * at::rsqrt(x64.pow(2).mean(-1, true) + 1e-6) * w.to(at::kDouble);
    const double error = (y.to(at::kDouble) - reference).abs().max().item<double>();
    std::printf("max_abs_error %.3g\n", error);
    try {
        rms_norm.call(x, at::randn({63}), 1e-6);
        std::printf("bad call was not refused\n");
        return 1;
    } catch (const std::exception &e) {
        std::printf("refused: %s\n", e.what());
    }
    return error < 1e-5 ? 0 : 1;
}
