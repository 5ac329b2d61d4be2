// The my_ops operator schemas, defined once. Kernels are registered per op
// family in the other files of this folder; fake kernels and autograd
// formulas are registered from Python (python/my_ops/ops.py).
#include <ATen/core/LegacyTypeDispatch.h>
#include <ATen/core/dispatch/Dispatcher.h>
#include <torch/library.h>

#include "../kernels/my_ops_kernels.h"

namespace my_ops {
namespace {

// Autograd kernel of the mutating ops. They have no derivative formula, so a
// tensor that requires grad would silently lose its history: reject it with
// a message that names the argument. Otherwise run the op below autograd and
// bump the version counter of every tensor it wrote, as PyTorch's own in-place
// ops do, so autograd notices if a tensor it saved was overwritten.
void mutating_op_autograd(const c10::OperatorHandle &op, c10::DispatchKeySet keys,
                          torch::jit::Stack *stack) {
    const auto &schema = op.schema();
    const auto &arguments = schema.arguments();
    const auto args = torch::jit::last(*stack, arguments.size());
    const std::string name = schema.name().substr(schema.name().find("::") + 2);
    std::vector<at::Tensor> written;
    for (size_t i = 0; i < arguments.size(); ++i) {
        if (!args[i].isTensor()) continue;
        const at::Tensor &t = args[i].toTensor();
        TORCH_CHECK(!(at::GradMode::is_enabled() && t.defined() && t.requires_grad()), "my_ops.",
                    name, ": argument '", arguments[i].name(),
                    "' requires grad, but my_ops.", name,
                    " writes its arguments in place and has no autograd formula; call it under "
                    "torch.no_grad() or pass tensors that do not require grad (e.g. ",
                    arguments[i].name(), ".detach())");
        if (arguments[i].alias_info() && arguments[i].alias_info()->isWrite() && t.defined())
            written.push_back(t);
    }
    {
        at::AutoDispatchBelowAutograd below_autograd;
        op.redispatchBoxed(keys & c10::after_autograd_keyset, stack);
    }
    for (auto &t : written) t.unsafeGetTensorImpl()->bump_version();
}

}  // namespace
}  // namespace my_ops

TORCH_LIBRARY(my_ops, m) {
    m.def("short_kernel(Tensor x) -> Tensor");
    m.def("mul(Tensor a, Tensor b) -> Tensor");
    m.def("muladd(Tensor a, Tensor b, float c) -> Tensor");
    m.def("add_out(Tensor a, Tensor b, Tensor(a!) out) -> ()");
    m.def("matmul(Tensor a, Tensor b) -> Tensor");
    m.def("rms_norm(Tensor x, Tensor weight, float eps) -> Tensor");
    m.def("rms_norm_backward(Tensor grad_out, Tensor x, Tensor weight, float eps) -> (Tensor, Tensor)");
    m.def("fused_add_rms_norm(Tensor(a!) x, Tensor(b!) residual, Tensor weight, float eps) -> ()");
    m.def("silu_and_mul(Tensor x) -> Tensor");
    m.def("silu_and_mul_backward(Tensor grad_out, Tensor x) -> Tensor");
}

TORCH_LIBRARY_IMPL(my_ops, Autograd, m) {
    m.impl("add_out", torch::CppFunction::makeFromBoxedFunction<&my_ops::mutating_op_autograd>());
    m.impl("fused_add_rms_norm",
           torch::CppFunction::makeFromBoxedFunction<&my_ops::mutating_op_autograd>());
}
