// The part of torch the binding uses, under one set of names for both ABI
// families (see ../../README.md, "Which wheel"):
//
//   stable (MY_OPS_STABLE_ABI, torch >= 2.10): the LibTorch stable ABI only
//     (torch/csrc/stable, torch/headeronly, the C shim), built with
//     TORCH_TARGET_VERSION = 2.10 and TORCH_STABLE_ONLY, so one binary loads
//     into every later torch;
//   legacy (torch < 2.10): the same names on top of ATen and c10, compiled
//     against one torch minor.
//
// Nothing else in src/binding includes a torch header. Errors are thrown as
// std::runtime_error in both families (PyTorch turns them into RuntimeError);
// nothing here may throw from inside a parallel_for body (see launch.h).
#pragma once

#include <algorithm>
#include <cstdint>
#include <stdexcept>
#include <string>
#include <string_view>
#include <tuple>
#include <vector>

#ifdef MY_OPS_STABLE_ABI
#include <torch/csrc/stable/accelerator.h>
#include <torch/csrc/stable/library.h>
#include <torch/csrc/stable/ops.h>
#include <torch/csrc/stable/tensor.h>
#include <torch/headeronly/core/ScalarType.h>
#include <torch/csrc/inductor/aoti_torch/c/shim.h>
#else
#include <ATen/ATen.h>
#include <ATen/Parallel.h>
#include <torch/library.h>
#ifdef MY_OPS_WITH_CUDA
#include <c10/cuda/CUDAGuard.h>
#include <c10/cuda/CUDAStream.h>
#endif
#endif

namespace my_ops {
namespace api {

#ifdef MY_OPS_STABLE_ABI
using Tensor = torch::stable::Tensor;
using ScalarType = torch::headeronly::ScalarType;
using DeviceType = torch::headeronly::DeviceType;
using Layout = torch::headeronly::Layout;
using Device = torch::stable::Device;
#else
using Tensor = at::Tensor;
using ScalarType = c10::ScalarType;
using DeviceType = c10::DeviceType;
using Layout = c10::Layout;
using Device = c10::Device;
#endif

// A `str` argument of a kernel: the stable ABI passes std::string, ATen's
// unboxing takes std::string_view.
#ifdef MY_OPS_STABLE_ABI
using StringArg = std::string;
#else
using StringArg = std::string_view;
#endif

// The sizes of a tensor, as a vector (the two families' array views differ).
inline std::vector<int64_t> sizes_of(const Tensor &t) {
    return std::vector<int64_t>(t.sizes().begin(), t.sizes().end());
}

// An uninitialised contiguous tensor of `sizes`, with `like`'s device and the given dtype.
inline Tensor empty(const std::vector<int64_t> &sizes, ScalarType dtype, const Tensor &like) {
#ifdef MY_OPS_STABLE_ABI
    // The C shim's empty_strided: torch::stable::empty looks aten::empty up by
    // name and boxes its arguments through the dispatcher, which costs more
    // host time than the rest of a small op's call (benchmarks/bench_host.py).
    std::vector<int64_t> strides(sizes.size());
    int64_t stride = 1;
    for (size_t i = sizes.size(); i-- > 0;) {
        strides[i] = stride;
        stride *= std::max<int64_t>(sizes[i], 1);
    }
    int32_t device_type = 0, device_index = 0;
    AtenTensorHandle handle = nullptr;
    if (aoti_torch_get_device_type(like.get(), &device_type) != AOTI_TORCH_SUCCESS ||
        aoti_torch_get_device_index(like.get(), &device_index) != AOTI_TORCH_SUCCESS ||
        aoti_torch_empty_strided(
            static_cast<int64_t>(sizes.size()), sizes.data(), strides.data(),
            torch::stable::detail::to<int32_t>(torch::stable::detail::from(dtype)), device_type,
            device_index, &handle) != AOTI_TORCH_SUCCESS)
        throw std::runtime_error(
            "my_ops: allocating a tensor of " + std::to_string(stride) +
            " elements failed (out of memory? PyTorch printed the cause above)");
    return Tensor(handle);
#else
    return at::empty(sizes, like.options().dtype(dtype));
#endif
}

// Like empty(), filled with zeros.
inline Tensor zeros(const std::vector<int64_t> &sizes, ScalarType dtype, const Tensor &like) {
#ifdef MY_OPS_STABLE_ABI
    return torch::stable::new_zeros(like, sizes, dtype);
#else
    return at::zeros(sizes, like.options().dtype(dtype));
#endif
}

inline Tensor contiguous(const Tensor &t) {
#ifdef MY_OPS_STABLE_ABI
    // is_contiguous() is a plain shim call; contiguous() goes through the dispatcher
    return t.is_contiguous() ? t : torch::stable::contiguous(t);
#else
    return t.contiguous();
#endif
}

inline void copy_(Tensor &dst, const Tensor &src) {
#ifdef MY_OPS_STABLE_ABI
    torch::stable::copy_(dst, src);
#else
    dst.copy_(src);
#endif
}

// t as `dtype`: t itself when it has that dtype, else a converted copy.
inline Tensor to_dtype(const Tensor &t, ScalarType dtype) {
#ifdef MY_OPS_STABLE_ABI
    // aten::to returns t itself then, but through the boxed dispatcher
    if (t.scalar_type() == dtype) return t;
    return torch::stable::to(t, dtype);
#else
    return t.to(dtype);
#endif
}

// Sum over dimension 0, in t's dtype, then converted to `dtype`.
inline Tensor sum_rows(const Tensor &t, ScalarType dtype) {
#ifdef MY_OPS_STABLE_ABI
    const std::vector<int64_t> dims{0};
    return torch::stable::to(torch::stable::sum(t, dims), dtype);
#else
    return t.sum(0).to(dtype);
#endif
}

// Calls body(begin, end) over [0, count) in chunks of at least `grain`.
// body must not throw: errors inside a stable-ABI parallel_for lose their text.
template <typename Body> void parallel_for(int64_t count, int64_t grain, const Body &body) {
#ifdef MY_OPS_STABLE_ABI
    torch::stable::parallel_for(0, count, grain, body);
#else
    at::parallel_for(0, count, grain, body);
#endif
}

inline int64_t num_threads() {
#ifdef MY_OPS_STABLE_ABI
    return static_cast<int64_t>(torch::stable::get_num_threads());
#else
    return at::get_num_threads();
#endif
}

#ifdef MY_OPS_WITH_CUDA
// Makes `device` current for its lifetime and gives its current cudaStream_t
// (the stream PyTorch's own ops on this device use; a stable Stream's id() is
// not a cudaStream_t).
class CudaContext {
  public:
    explicit CudaContext(const Device &device)
#ifdef MY_OPS_STABLE_ABI
        : guard_(device.index()) {
        void *stream = nullptr;
        if (aoti_torch_get_current_cuda_stream(device.index(), &stream) != AOTI_TORCH_SUCCESS)
            throw std::runtime_error("my_ops: could not get the current CUDA stream");
        stream_ = stream;
    }
#else
        : guard_(device), stream_(c10::cuda::getCurrentCUDAStream(device.index()).stream()) {
    }
#endif
    void *stream() const { return stream_; }

  private:
#ifdef MY_OPS_STABLE_ABI
    torch::stable::accelerator::DeviceGuard guard_;
#else
    c10::cuda::CUDAGuard guard_;
#endif
    void *stream_ = nullptr;
};
#endif

}  // namespace api
}  // namespace my_ops

// Registration, with the same spelling in both families:
//   MY_OPS_FRAGMENT(m) { m.def(...); }          the schemas of one op family
//   MY_OPS_IMPL(CPU, m) { m.impl("op", MY_OPS_KERNEL(fn)); }
#ifdef MY_OPS_STABLE_ABI
#define MY_OPS_FRAGMENT(m) STABLE_TORCH_LIBRARY_FRAGMENT(my_ops, m)
#define MY_OPS_IMPL(key, m) STABLE_TORCH_LIBRARY_IMPL(my_ops, key, m)
#define MY_OPS_KERNEL(fn) TORCH_BOX(&fn)
#else
#define MY_OPS_FRAGMENT(m) TORCH_LIBRARY_FRAGMENT(my_ops, m)
#define MY_OPS_IMPL(key, m) TORCH_LIBRARY_IMPL(my_ops, key, m)
#define MY_OPS_KERNEL(fn) &fn
#endif
