// What the ops' CPU and CUDA kernels share: running a CPU kernel in parallel
// chunks (run_cpu) or a CUDA launcher on the current stream of the tensor's
// device (run_cuda), and the row and pointer helpers. Each op registers a CPU
// and a CUDA kernel of its own (MY_OPS_IMPL(CPU, m) / MY_OPS_IMPL(CUDA, m)):
// the dispatcher alone picks the device. Kernel failures come back as status
// codes and are raised here, after the parallel region (an exception thrown
// inside a stable-ABI parallel_for loses its text).
#pragma once

#include <algorithm>
#include <atomic>
#include <limits>
#include <optional>
#include <string>
#include <string_view>

#include "../kernels/common.h"
#include "op_rules.h"
#include "torch_api.h"

namespace my_ops {

// Grain size that gives each CPU task about 32K elements of work.
inline int64_t grain_for(int64_t elements_per_item) {
    return std::max<int64_t>(1, 32768 / std::max<int64_t>(1, elements_per_item));
}

// Runs cpu(begin, end) -> status over [0, count) in chunks of at least
// `grain`; nothing when count is 0. The CPU kernel of an op calls this.
template <typename Cpu>
void run_cpu(const OpRules &op, int64_t count, int64_t grain, const Cpu &cpu) {
    if (count == 0) return;
    std::atomic<int> status{MY_OPS_OK};
    api::parallel_for(count, std::max<int64_t>(1, grain), [&](int64_t begin, int64_t end) {
        const int s = cpu(begin, end);
        if (s != MY_OPS_OK) status.store(s);
    });
    const int s = status.load();
    if (s == MY_OPS_OUT_OF_MEMORY) op.fail("out of memory for the CPU kernel's scratch buffers");
    if (s != MY_OPS_OK) op.fail("CPU kernel failed with status " + std::to_string(s));
}

#ifdef MY_OPS_WITH_CUDA
// Runs cuda(stream) -> cudaError_t once, with `on`'s device current, on that
// device's current stream. The CUDA kernel of an op calls this.
template <typename Cuda> void run_cuda(const OpRules &op, const api::Tensor &on, const Cuda &cuda) {
    api::CudaContext context(on.device());
    const int error = cuda(context.stream());
    if (error == MY_OPS_CUDA_NO_KERNEL_IMAGE) {
        char name[256] = "unknown GPU";
        int major = 0, minor = 0;
        my_ops_cuda_device_info(on.device().index(), name, sizeof name, &major, &minor);
        const std::string cc = std::to_string(major) + "." + std::to_string(minor);
        op.fail(std::string("my_ops ") + MY_OPS_VERSION + " has no kernels for " + name + " (sm_" +
                std::to_string(major) + std::to_string(minor) + ", compute capability " + cc +
                "): it was built for TORCH_CUDA_ARCH_LIST=" + MY_OPS_ARCH_LIST +
                ". Build my_ops for this GPU with TORCH_CUDA_ARCH_LIST=\"" + cc +
                "\" pip install --no-build-isolation my_ops (see the README), or use a GPU the "
                "wheel covers.");
    }
    if (error != 0) op.fail(std::string("CUDA kernel failed: ") + my_ops_cuda_error_string(error));
}
#else
// A CPU-only build has no CUDA kernels: each op registers this one for CUDA
// instead (MY_OPS_NO_CUDA_KERNEL below), so a CUDA tensor gets the op's own
// argument checks, as on the CPU, and then this refusal rather than the
// dispatcher's "could not run ... with arguments from the 'CUDA' backend".

// An argument as OpRules::check takes it (a str is a std::string_view in the
// legacy build: copied for the check).
template <typename A> const A &check_arg(const A &a) { return a; }
inline std::string check_arg(std::string_view s) { return std::string(s); }

inline const api::Tensor *tensor_arg(const api::Tensor &t) { return &t; }
template <typename A> const api::Tensor *tensor_arg(const A &) { return nullptr; }

template <const OpRules &op, typename Signature> struct NoCudaKernel;
template <const OpRules &op, typename Ret, typename... Args>
struct NoCudaKernel<op, Ret(Args...)> {
    static Ret kernel(Args... args) {
        op.check({check_arg(args)...});
        const api::Tensor *on = nullptr;  // the first tensor: the checks put them all on one device
        ((on = on ? on : tensor_arg(args)), ...);
        op.fail("got a tensor on " + device_text(*on) +
                " but this build of my_ops has no CUDA kernels");
    }
};
#endif

// The eps of an RMSNorm op (rms_norm's and the fp8 family's `float? eps`):
// None is the machine epsilon of the dtype the statistics are computed in
// (float64 for float64 x, float32 otherwise), as torch.nn.functional.rms_norm
// takes it. (Called after the checks: x is a valid tensor.)
inline double eps_value(const api::Tensor &x, std::optional<double> eps) {
    if (eps) return *eps;
    return x.scalar_type() == api::ScalarType::Double ? std::numeric_limits<double>::epsilon()
                                                      : std::numeric_limits<float>::epsilon();
}

// The distance between the starts of consecutive rows (the leading
// dimensions flattened) when t's rows can be read in place: the last
// dimension dense and the leading dimensions evenly spaced, as in a
// contiguous tensor or a slice t[..., a:b] of one. -1 otherwise.
inline int64_t row_stride(const api::Tensor &t) {
    const auto sizes = t.sizes();
    const auto strides = t.strides();
    const int64_t dims = t.dim();
    if (dims == 0) return 1;
    const int64_t width = sizes[dims - 1];
    if (width > 1 && strides[dims - 1] != 1) return -1;
    int64_t stride = -1, next = 0;  // next: the stride the next outer dimension must have
    for (int64_t i = dims - 2; i >= 0; --i) {
        if (sizes[i] == 1) continue;
        if (stride < 0) {
            stride = strides[i];
        } else if (strides[i] != next) {
            return -1;
        }
        next = strides[i] * sizes[i];
    }
    if (stride < 0) {
        // A single row: the stride of its own tensor where that spaces rows no
        // closer than the width (a slice x[i:i+1] keeps its batch's), so a row
        // sliced out of a batch is laid out, and its kernel picked, as in the
        // batch (docs/determinism.md); else, as for a 1-D row, the width.
        const int64_t own = dims >= 2 ? strides[dims - 2] : width;
        return own >= width ? own : width;
    }
    return stride >= width ? stride : -1;  // rows that overlap are copied
}

// A tensor's rows as the row-wise kernels take them: the caller's tensor
// itself when row_stride() allows, else a contiguous copy.
struct Rows {
    api::Tensor tensor;
    int64_t stride;  // elements between the starts of consecutive rows
    bool copied;
};

inline Rows rows_in_place(const api::Tensor &t) {
    const int64_t stride = row_stride(t);
    if (stride >= 0) return {t, stride, false};
    return {api::contiguous(t), t.dim() > 0 ? t.size(-1) : 1, true};
}

// Pointer to element `index` of a contiguous tensor, as the kernels take it.
inline const void *element_ptr(const api::Tensor &t, int64_t index) {
    return static_cast<const char *>(t.const_data_ptr()) + index * t.element_size();
}
inline void *mutable_element_ptr(const api::Tensor &t, int64_t index) {
    return static_cast<char *>(t.mutable_data_ptr()) + index * t.element_size();
}

// The dtype of a checked tensor as the kernels name it.
inline my_ops_dtype kernel_dtype(const api::Tensor &t) {
    switch (t.scalar_type()) {
    case api::ScalarType::Double: return MY_OPS_FLOAT64;
    case api::ScalarType::Half: return MY_OPS_FLOAT16;
    case api::ScalarType::BFloat16: return MY_OPS_BFLOAT16;
    default: return MY_OPS_FLOAT32;
    }
}

// Rows of the leading dimensions.
inline int64_t rows_of(const api::Tensor &t) {
    int64_t rows = 1;
    for (int64_t i = 0; i + 1 < t.dim(); ++i) rows *= t.size(i);
    return rows;
}

}  // namespace my_ops

#ifndef MY_OPS_WITH_CUDA
// The CUDA kernel of op `op` (an OpRules) in a CPU-only build, for m.impl:
// the signature of its CPU kernel `cpu_fn`, its checks, then a refusal.
#define MY_OPS_NO_CUDA_KERNEL(op, cpu_fn) \
    MY_OPS_KERNEL((::my_ops::NoCudaKernel<op, decltype(cpu_fn)>::kernel))
#endif
