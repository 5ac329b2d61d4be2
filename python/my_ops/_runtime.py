"""The one road of every my_ops call: each family's Python API calls torch.ops.my_ops.<op>, whose kernels
(_autograd here, _vmap, _autocast, _mutating) sit in the dispatcher: every road has the same checks and errors.
"""

from __future__ import annotations

import torch
from torch import Tensor

from . import _rules, _torch_compat as _compat

_ops = torch.ops.my_ops
_lib = torch.library.Library("my_ops", "IMPL")


def _signature(name: str) -> tuple:
    """my_ops::<name>'s (overload, schema arguments, positions of its Tensor, Tensor or Tensor?, written ones)."""
    op = getattr(_ops, name).default
    arguments = _compat.schema(op).arguments
    types = [str(a.type) for a in arguments]
    return (op, arguments, tuple(i for i, t in enumerate(types) if t == "Tensor"),
            tuple(i for i, t in enumerate(types) if t in ("Tensor", "Optional[Tensor]")),
            tuple(i for i, a in enumerate(arguments) if a.alias_info is not None and a.alias_info.is_write))


def _forward_ad_error(op) -> RuntimeError:
    """No forward-mode formula: a call with a tangent is refused, not answered without it."""
    return RuntimeError(f"my_ops.{op.name().split('::')[1].split('.')[0]}: forward-mode AD (dual tensors, "
                        "torch.func.jvp, jacfwd, hessian) is not supported; use reverse mode (backward, "
                        "torch.autograd.grad, torch.func.grad, vjp, jacrev)")


def _copies_of_inference_tensors(args) -> tuple:
    """args, inference tensors cloned (grad on: back to one that requires grad) to be saved for backward."""
    with torch.enable_grad():
        return tuple(a.clone() if isinstance(a, Tensor) and a.is_inference() else a for a in args)


def _autograd(name: str, backward, setup_context=lambda ctx, inputs, output: None) -> None:
    """my_ops::<name>'s Autograd kernel, from formulas as register_autograd takes them. register_autograd is the
    fallback without the private names: torch.func refuses its legacy Function (pytorch#168393, fixed after
    2.11), it drops a tangent and cannot save an inference tensor."""
    op, arguments, tensor_positions, _, _ = _signature(name)
    # (the dispatcher drops trailing arguments equal to their defaults; the formulas get them back)
    defaults = tuple(a.default_value if a.has_default_value() else None for a in arguments)
    redispatch, past = _compat.redispatch, _compat.PAST_AUTOGRAD

    def forward(*args_and_keyset):
        args, keyset = args_and_keyset[:-1], args_and_keyset[-1]
        if not _compat.under_transforms(keyset):
            return redispatch(op, keyset, args, past)
        if torch.compiler.is_compiling():  # (non-strict torch.export runs this eagerly)
            raise RuntimeError(f"my_ops.{name}: differentiating through the op under torch.func transforms works "
                               "eagerly, outside torch.compile and torch.export (neither can trace a torch.func "
                               "transform over my_ops: compiling or exporting the function without the transform "
                               "works, with ordinary autograd)")
        with torch.enable_grad():  # (apply turns grad off; the outer levels must record the call)
            return redispatch(op, keyset, args, past)

    def setup_context_of_args(ctx, args_and_keyset, output):
        args = args_and_keyset[:-1]
        if any(args[i].is_inference() for i in tensor_positions):
            args = _copies_of_inference_tensors(args)
        setup_context(ctx, args, output)

    def backward_and_keyset(ctx, *grads):
        result = backward(ctx, *grads)
        return (*result, None) if isinstance(result, tuple) else (result, None)

    def refuse_jvp(ctx, *tangents):
        raise _forward_ad_error(op)

    # (built with type() so that the graph node is named <name>_functionBackward)
    Function = type(f"{name}_function", (_compat.FUNCTION_BASE,), {
        "forward": staticmethod(forward), "setup_context": staticmethod(setup_context_of_args),
        "backward": staticmethod(backward_and_keyset),
        "jvp": staticmethod(refuse_jvp)})
    record = _compat.record(Function)
    if record is None:
        def setup_below_autograd(ctx, inputs, output):
            if any(isinstance(a, Tensor) and a.is_inference() and a.requires_grad for a in inputs):
                # (below the Autograd key a copy cannot lead back to the tensor)
                raise RuntimeError(f"my_ops.{name}: an inference tensor that requires grad (made under "
                                   "torch.inference_mode()) cannot be saved for backward on this torch; "
                                   "clone the tensor outside inference_mode")
            setup_context(ctx, _copies_of_inference_tensors(inputs), output)

        torch.library.register_autograd(f"my_ops::{name}", backward, setup_context=setup_below_autograd, lib=_lib)

        def refuse_tangents(keyset, *args):  # (register_autograd drops the tangent of a tensor without grad)
            if _compat.forward_ad_active(args, keyset):
                raise _forward_ad_error(op)
            return redispatch(op, keyset, args, _compat.PAST_INPLACE)

        _lib.impl(name, refuse_tangents, "ADInplaceOrView", with_keyset=True)
        return

    forward_ad_active, grad_enabled = _compat.forward_ad_active, torch.is_grad_enabled

    def autograd_kernel(keyset, *args):
        if forward_ad_active(args, keyset):
            raise _forward_ad_error(op)
        if grad_enabled():
            for i in tensor_positions:
                if isinstance(args[i], Tensor) and args[i].requires_grad:  # (None: the kernel names it)
                    return record(*args, *defaults[len(args):], keyset)
        return redispatch(op, keyset, args, past)

    _lib.impl(name, autograd_kernel, "Autograd", with_keyset=True)


# Keys of tensors the kernels do not take, so that the rules name the argument; CompositeExplicitAutograd: a call
# with no tensor; CompositeImplicitAutogradNestedTensor: nested tensors, also what a jagged one's __torch_dispatch__
# calls for an op it does not know (under inference_mode no autograd key runs).
for _name in _rules.op_names():
    for _key in ("SparseCPU", "SparseCUDA", "SparseCsrCPU", "SparseCsrCUDA", "CompositeImplicitAutogradNestedTensor",
                 "QuantizedCPU", "QuantizedCUDA", "MkldnnCPU", "CompositeExplicitAutograd"):
        _lib.impl(_name, _rules.reject(_name), _key)
