// Argument checks shared by every op. Each failure raises a RuntimeError
// (c10::Error) naming the op, the argument and what was expected, before
// anything is written.
#pragma once

#include <ATen/ATen.h>
#include <ATen/MemoryOverlap.h>

#include "../kernels/my_ops_kernels.h"

namespace my_ops {

// The dtype of `t` as the kernels name it; `t` must already be checked.
inline my_ops_dtype kernel_dtype(const at::Tensor &t) {
    switch (t.scalar_type()) {
    case at::kFloat: return MY_OPS_FLOAT32;
    case at::kDouble: return MY_OPS_FLOAT64;
    case at::kHalf: return MY_OPS_FLOAT16;
    case at::kBFloat16: return MY_OPS_BFLOAT16;
    default: TORCH_CHECK(false, "my_ops: unsupported dtype ", t.scalar_type());
    }
}

// A dense (strided) float32/float64/float16/bfloat16 tensor on the CPU or a CUDA device.
inline void check_input(const char *op, const char *name, const at::Tensor &t) {
    TORCH_CHECK(t.defined(), "my_ops.", op, ": expected ", name, " to be a tensor, but got None");
    TORCH_CHECK(t.layout() == at::kStrided, "my_ops.", op, ": expected ", name,
                " to be a dense (strided) tensor, but got layout ", t.layout());
    const auto dtype = t.scalar_type();
    TORCH_CHECK(dtype == at::kFloat || dtype == at::kDouble || dtype == at::kHalf ||
                    dtype == at::kBFloat16,
                "my_ops.", op, ": expected ", name,
                " to be a float32, float64, float16 or bfloat16 tensor, but got ", dtype);
    TORCH_CHECK(t.device().is_cpu() || t.device().is_cuda(), "my_ops.", op, ": expected ", name,
                " to be on the CPU or a CUDA device, but got ", t.device());
}

// `other` has the dtype and device of `ref`.
inline void check_like(const char *op, const char *ref_name, const at::Tensor &ref,
                       const char *name, const at::Tensor &other) {
    check_input(op, name, other);
    TORCH_CHECK(other.scalar_type() == ref.scalar_type(), "my_ops.", op, ": expected ", name,
                " to have the same dtype as ", ref_name, " (", ref.scalar_type(), "), but got ",
                other.scalar_type());
    TORCH_CHECK(other.device() == ref.device(), "my_ops.", op, ": expected ", name,
                " to be on the same device as ", ref_name, " (", ref.device(), "), but got ",
                other.device());
}

inline void check_same_shape(const char *op, const char *ref_name, const at::Tensor &ref,
                             const char *name, const at::Tensor &other) {
    TORCH_CHECK(other.sizes() == ref.sizes(), "my_ops.", op, ": expected ", name,
                " to have the same shape as ", ref_name, " ", ref.sizes(), ", but got ",
                other.sizes());
}

inline void check_eps(const char *op, double eps) {
    TORCH_CHECK_VALUE(std::isfinite(eps) && eps >= 0.0, "my_ops.", op,
                      ": expected eps to be a finite number >= 0, but got ", eps);
}

// A tensor that is written must not have elements sharing memory (an expanded view).
inline void check_writable(const char *op, const char *name, const at::Tensor &t) {
    TORCH_CHECK(at::has_internal_overlap(t) != at::MemOverlap::Yes, "my_ops.", op, ": ", name,
                " is written in place, so its elements must not share memory (it looks like an "
                "expanded or broadcast view); pass a tensor of its own, e.g. ",
                name, ".clone()");
}

// Like at::get_overlap_status, but tensors in different storages never overlap
// (at::get_overlap_status says TooHard for any non-dense pair).
inline at::MemOverlapStatus overlap_status(const at::Tensor &a, const at::Tensor &b) {
    if (a.numel() == 0 || b.numel() == 0 || !a.storage().is_alias_of(b.storage()))
        return at::MemOverlapStatus::No;
    return at::get_overlap_status(a, b);
}

inline void check_no_overlap(const char *op, const char *a_name, const at::Tensor &a,
                             const char *b_name, const at::Tensor &b) {
    TORCH_CHECK(overlap_status(a, b) == at::MemOverlapStatus::No, "my_ops.", op, ": ",
                a_name, " and ", b_name, " must not share memory, but they overlap; pass ",
                "separate tensors (e.g. ", b_name, ".clone())");
}

// Raises when a kernel reports a failure.
inline void check_status(const char *op, int status) {
    TORCH_CHECK(status != MY_OPS_OUT_OF_MEMORY, "my_ops.", op,
                ": out of memory for the CPU kernel's scratch buffers");
    TORCH_CHECK(status == MY_OPS_OK, "my_ops.", op, ": CPU kernel failed with status ", status);
}

// Pointer to element `index` of a contiguous tensor, as the kernels take it.
inline const void *element_ptr(const at::Tensor &t, int64_t index) {
    return static_cast<const char *>(t.const_data_ptr()) + index * t.element_size();
}
inline void *mutable_element_ptr(const at::Tensor &t, int64_t index) {
    return static_cast<char *>(t.data_ptr()) + index * t.element_size();
}

// Rows of the leading dimensions when the last dimension has `inner` elements.
inline int64_t rows_of(const at::Tensor &t) {
    int64_t rows = 1;
    for (int64_t i = 0; i + 1 < t.dim(); ++i) rows *= t.size(i);
    return rows;
}

}  // namespace my_ops
