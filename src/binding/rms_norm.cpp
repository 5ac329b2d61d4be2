// rms_norm, rms_norm_backward and fused_add_rms_norm: argument checks and
// dispatch to the RMSNorm kernels.
#include <torch/library.h>

#include "device.h"

namespace my_ops {
namespace {

// x has at least one dimension; weight is [x.size(-1)] of x's dtype and device.
void check_norm_args(const char *op, const char *x_name, const at::Tensor &x,
                     const at::Tensor &weight, double eps) {
    check_input(op, x_name, x);
    check_like(op, x_name, x, "weight", weight);
    TORCH_CHECK(x.dim() >= 1, "my_ops.", op, ": expected ", x_name,
                " to have at least 1 dimension (..., hidden), but got a 0-D tensor");
    TORCH_CHECK(weight.dim() == 1 && weight.size(0) == x.size(-1), "my_ops.", op,
                ": expected weight to have shape [", x.size(-1), "] (the last dimension of ",
                x_name, "), but got ", weight.sizes());
    check_eps(op, eps);
}

at::Tensor rms_norm(const at::Tensor &x, const at::Tensor &weight, double eps) {
    check_norm_args("rms_norm", "x", x, weight, eps);
    const auto xc = x.contiguous(), wc = weight.contiguous();
    auto y = at::empty(x.sizes(), x.options());
    const int64_t hidden = x.size(-1), rows = rows_of(x);
    if (y.numel() == 0) return y;
    const auto dt = kernel_dtype(x);
    if (x.is_cuda()) {
        cuda_launch("rms_norm", x.device(), [&](void *stream) {
            return my_ops_rms_norm_cuda(dt, xc.const_data_ptr(), wc.const_data_ptr(), y.data_ptr(),
                                        rows, hidden, eps, stream);
        });
    } else {
        cpu_parallel(rows, grain_for(hidden), [&](int64_t begin, int64_t end) {
            check_status("rms_norm",
                         my_ops_rms_norm_cpu(dt, element_ptr(xc, begin * hidden), wc.const_data_ptr(),
                                             mutable_element_ptr(y, begin * hidden), end - begin,
                                             hidden, eps));
        });
    }
    return y;
}

std::tuple<at::Tensor, at::Tensor> rms_norm_backward(const at::Tensor &grad_out,
                                                     const at::Tensor &x,
                                                     const at::Tensor &weight, double eps) {
    check_norm_args("rms_norm_backward", "x", x, weight, eps);
    check_like("rms_norm_backward", "x", x, "grad_out", grad_out);
    check_same_shape("rms_norm_backward", "x", x, "grad_out", grad_out);
    const auto gc = grad_out.contiguous(), xc = x.contiguous(), wc = weight.contiguous();
    const int64_t hidden = x.size(-1), rows = rows_of(x);
    auto grad_x = at::empty(x.sizes(), x.options());
    // grad_weight is summed over rows in float32 (float64 for float64)
    const auto acc_type = x.scalar_type() == at::kDouble ? at::kDouble : at::kFloat;
    const auto dt = kernel_dtype(x);
    if (hidden == 0) return {grad_x, at::empty({0}, weight.options())};
    if (x.is_cuda()) {
        auto grad_weight = at::empty({hidden}, weight.options());
        cuda_launch("rms_norm_backward", x.device(), [&](void *stream) {
            const int64_t partials = my_ops_rms_norm_backward_cuda_partials(dt, rows, hidden);
            auto workspace = at::empty({partials, hidden}, x.options().dtype(acc_type));
            return my_ops_rms_norm_backward_cuda(dt, gc.const_data_ptr(), xc.const_data_ptr(),
                                                 wc.const_data_ptr(), grad_x.data_ptr(),
                                                 grad_weight.data_ptr(), workspace.data_ptr(),
                                                 partials, rows, hidden, eps, stream);
        });
        return {grad_x, grad_weight};
    }
    // One partial grad_weight row per chunk of rows, summed at the end.
    const int64_t chunks = std::min<int64_t>(rows, at::get_num_threads());
    auto partial = at::zeros({chunks, hidden}, x.options().dtype(acc_type));
    cpu_parallel(chunks, 1, [&](int64_t begin, int64_t end) {
        for (int64_t c = begin; c < end; ++c) {
            const int64_t r0 = rows * c / chunks, r1 = rows * (c + 1) / chunks;
            check_status("rms_norm_backward",
                         my_ops_rms_norm_backward_cpu(
                             dt, element_ptr(gc, r0 * hidden), element_ptr(xc, r0 * hidden),
                             wc.const_data_ptr(), mutable_element_ptr(grad_x, r0 * hidden),
                             mutable_element_ptr(partial, c * hidden), r1 - r0, hidden, eps));
        }
    });
    return {grad_x, partial.sum(0).to(x.scalar_type())};
}

// residual += x; x = rms_norm(residual, weight, eps), both in place.
void fused_add_rms_norm(const at::Tensor &x, const at::Tensor &residual, const at::Tensor &weight,
                        double eps) {
    constexpr const char *op = "fused_add_rms_norm";
    check_norm_args(op, "x", x, weight, eps);
    check_like(op, "x", x, "residual", residual);
    check_same_shape(op, "x", x, "residual", residual);
    check_writable(op, "x", x);
    check_writable(op, "residual", residual);
    check_no_overlap(op, "x", x, "residual", residual);
    if (x.numel() == 0) return;
    // Work on contiguous buffers; copy back only when the caller's tensors are not contiguous.
    const bool x_direct = x.is_contiguous(), res_direct = residual.is_contiguous();
    auto xb = x_direct ? x : x.contiguous();
    auto rb = res_direct ? residual : residual.contiguous();
    const auto wc = weight.contiguous();
    const int64_t hidden = x.size(-1), rows = rows_of(x);
    const auto dt = kernel_dtype(x);
    if (x.is_cuda()) {
        cuda_launch(op, x.device(), [&](void *stream) {
            return my_ops_fused_add_rms_norm_cuda(dt, xb.data_ptr(), rb.data_ptr(),
                                                  wc.const_data_ptr(), rows, hidden, eps, stream);
        });
    } else {
        cpu_parallel(rows, grain_for(hidden), [&](int64_t begin, int64_t end) {
            check_status(op, my_ops_fused_add_rms_norm_cpu(
                                 dt, mutable_element_ptr(xb, begin * hidden),
                                 mutable_element_ptr(rb, begin * hidden), wc.const_data_ptr(),
                                 end - begin, hidden, eps));
        });
    }
    if (!x_direct) x.copy_(xb);
    if (!res_direct) residual.copy_(rb);
}

void register_kernels(torch::Library &m) {
    m.impl("rms_norm", &rms_norm);
    m.impl("rms_norm_backward", &rms_norm_backward);
    m.impl("fused_add_rms_norm", &fused_add_rms_norm);
}

}  // namespace
}  // namespace my_ops

TORCH_LIBRARY_IMPL(my_ops, CPU, m) { my_ops::register_kernels(m); }
TORCH_LIBRARY_IMPL(my_ops, CUDA, m) { my_ops::register_kernels(m); }
