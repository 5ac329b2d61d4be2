// Routing a checked call to its kernel: the CPU kernel in parallel chunks,
// or the CUDA launcher on the current stream of the tensor's device. Kernel
// failures come back as status codes and are raised here, after the parallel
// region (an exception thrown inside a stable-ABI parallel_for loses its text).
#pragma once

#include <algorithm>
#include <atomic>
#include <string>

#include "../kernels/common.h"
#include "op_rules.h"
#include "torch_api.h"

namespace my_ops {

// Grain size that gives each CPU task about 32K elements of work.
inline int64_t grain_for(int64_t elements_per_item) {
    return std::max<int64_t>(1, 32768 / std::max<int64_t>(1, elements_per_item));
}

// Runs cpu(begin, end) -> status over [0, count) in chunks of at least `grain`
// when `on` is a CPU tensor, else cuda(stream) -> cudaError_t once.
template <typename Cpu, typename Cuda>
void run_kernel(const OpRules &op, const api::Tensor &on, int64_t count, int64_t grain,
                const Cpu &cpu, const Cuda &cuda) {
    if (on.is_cpu()) {
        if (count == 0) return;
        std::atomic<int> status{MY_OPS_OK};
        api::parallel_for(count, std::max<int64_t>(1, grain), [&](int64_t begin, int64_t end) {
            const int s = cpu(begin, end);
            if (s != MY_OPS_OK) status.store(s);
        });
        const int s = status.load();
        if (s == MY_OPS_OUT_OF_MEMORY) op.fail("out of memory for the CPU kernel's scratch buffers");
        if (s != MY_OPS_OK) op.fail("CPU kernel failed with status " + std::to_string(s));
        return;
    }
#ifdef MY_OPS_WITH_CUDA
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
#else
    (void)cuda;  // never called, so the CUDA launchers need not exist in a CPU-only build
    op.fail("got a tensor on " + device_text(on) + " but this build of my_ops has no CUDA kernels");
#endif
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
    if (stride < 0) return width;  // a single row
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

// Registers one op family's kernels (register_fn(m)) for CPU and CUDA tensors.
#define MY_OPS_CPU_AND_CUDA(register_fn)   \
    MY_OPS_IMPL(CPU, m) { register_fn(m); } \
    MY_OPS_IMPL(CUDA, m) { register_fn(m); }
