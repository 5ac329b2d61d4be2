"""The one road of every my_ops call, and what the op families build on.

The kernels are registered from C++ (libmy_ops, loaded by my_ops._C); each
op family's module (my_ops/families/<family>.py) adds, with torch.library,
the fake kernel, the autograd formulas (_autograd), the vmap rule
(_vmap.register_batching) and the autocast kernels (_autocast). Its Python
API is a typed wrapper that calls torch.ops.my_ops.<op> through _call, so
the Python API, torch.ops, the nn modules, torch.compile, torch.export,
torch.func and torch.jit.trace all take the dispatcher's one path, with the
same checks, kernels and errors. The mutating ops' autograd handling is in
_mutating.py.
"""

from __future__ import annotations

import torch
from torch import Tensor

from . import _rules, _torch_compat as _compat
from ._arguments import reraise_explained
from ._formulas import _vjp_formula

_ops = torch.ops.my_ops
_lib = torch.library.Library("my_ops", "IMPL")


def _call(op, tensors, *args):
    """op(*args) through the dispatcher: the Python API's call (`tensors` are
    the tensor arguments among args, which an error message may name). Only
    a jagged nested tensor's error differs from a call of op itself: torch
    refuses it before any kernel runs, naming neither op nor argument."""
    try:
        return op(*args)
    except NotImplementedError as failure:
        reraise_explained(op, tensors, failure)


def _inference_mode_off() -> bool:
    # (dynamo folds is_compiling() first: it cannot trace the second test)
    return not torch.compiler.is_compiling() and not torch.is_inference_mode_enabled()


def _op_name(op) -> str:
    return op.name().split("::")[1].split(".")[0]


def _forward_ad_error(op) -> RuntimeError:
    return RuntimeError(f"my_ops.{_op_name(op)}: forward-mode AD (dual tensors, torch.func.jvp, jacfwd, "
                        "hessian) is not supported; use reverse mode (backward, torch.autograd.grad, "
                        "torch.func.grad, vjp, jacrev)")




def _refuse_forward_ad(op, args, keyset=None) -> None:
    """The ops have no forward-mode formula: a call whose tensors carry a
    tangent (dual_level, torch.func.jvp, jacfwd) is refused rather than
    answered with the tangent dropped. Per call where the kernel's keyset is
    given, outside torch.func transforms: a dual level open in another
    thread refuses nothing here (_torch_compat.forward_ad_active)."""
    if _compat.forward_ad_active(args, keyset):
        raise _forward_ad_error(op)


def _copies_of_inference_tensors(args) -> tuple:
    """args, with a copy of each inference tensor: torch refuses to save one
    for backward (made under inference_mode, used outside it beside a weight
    that requires grad). Made with grad on (setup_context runs with it off):
    the copy of one that requires grad (a parameter made under
    inference_mode) must lead back to it, or gradients of gradients are lost."""
    with torch.enable_grad():
        return tuple(a.clone() if isinstance(a, Tensor) and a.is_inference() else a for a in args)


def _no_context(ctx, inputs, output) -> None:
    pass


def _autograd(name: str, backward, setup_context=_no_context) -> None:
    """The autograd formulas of my_ops::<name> (as register_autograd takes
    them) and the op's Autograd kernel, which every call with grad passes.

    Why not torch.library.register_autograd (used below where _torch_compat
    lacks a private name): its kernel records a legacy autograd.Function that
    torch.func refuses (pytorch#168393, fixed after torch 2.11 by recording a
    single-level Function: what this kernel does), it drops a dual tensor's
    tangent, and it cannot save an inference tensor for backward."""
    op = getattr(_ops, name).default
    arguments = _compat.schema(op).arguments
    tensor_positions = [i for i, a in enumerate(arguments) if str(a.type) == "Tensor"]
    # The dispatcher drops trailing arguments equal to their defaults; the
    # formulas get them back.
    defaults = tuple(a.default_value if a.has_default_value() else None for a in arguments)
    redispatch = _compat.redispatch_below_autograd

    def forward(ctx, *args_and_keyset):
        args, keyset = args_and_keyset[:-1], args_and_keyset[-1]
        if _compat.under_transforms(keyset):
            if torch.compiler.is_compiling():  # (non-strict torch.export runs this eagerly)
                raise RuntimeError(
                    f"my_ops.{name}: differentiating through the op under torch.func transforms works "
                    "eagerly, outside torch.compile and torch.export (neither can trace a torch.func "
                    "transform over my_ops: compiling or exporting the function without the transform "
                    "works, with ordinary autograd)")
            # Function.apply turns grad mode off in here; under nested torch.func
            # transforms the call reaches the outer levels' Autograd kernels
            # (past this level's), which must record it, as below a C++ kernel
            with torch.enable_grad():
                output = redispatch(op, keyset, args)
        else:
            output = redispatch(op, keyset, args)
        for i in tensor_positions:
            if args[i].is_inference():
                args = _copies_of_inference_tensors(args)
                break
        setup_context(ctx, args, output)
        return output

    def backward_and_keyset(ctx, *grads):
        result = backward(ctx, *grads)
        return (*result, None) if isinstance(result, tuple) else (result, None)

    def refuse_jvp(ctx, *tangents):
        raise _forward_ad_error(op)

    # (built with type() so that the graph node takes the name <name>_functionBackward)
    Function = type(f"{name}_function", (torch.autograd.Function,), {
        "forward": staticmethod(forward), "backward": staticmethod(backward_and_keyset),
        "jvp": staticmethod(refuse_jvp)})
    record = _compat.record(Function)
    if record is None:
        def setup_below_autograd(ctx, inputs, output):
            if any(isinstance(a, Tensor) and a.is_inference() and a.requires_grad for a in inputs):
                # (torch's kernel runs this below the Autograd key: a copy could
                # not lead back to the tensor; refused, as torch refuses it)
                raise RuntimeError(f"my_ops.{name}: an inference tensor that requires grad (made under "
                                   "torch.inference_mode()) cannot be saved for backward on this torch; "
                                   "clone the tensor outside inference_mode")
            setup_context(ctx, _copies_of_inference_tensors(inputs), output)

        torch.library.register_autograd(f"my_ops::{name}", backward, setup_context=setup_below_autograd, lib=_lib)
        return

    forward_ad_active, grad_enabled = _compat.forward_ad_active, torch.is_grad_enabled

    def autograd_kernel(keyset, *args):
        if forward_ad_active(args, keyset):
            raise _forward_ad_error(op)
        if grad_enabled():
            for i in tensor_positions:
                if isinstance(args[i], Tensor) and args[i].requires_grad:  # (None: the kernel names it)
                    return record(*args, *defaults[len(args):], keyset)
        return redispatch(op, keyset, args)

    _lib.impl(name, autograd_kernel, "Autograd", with_keyset=True)


# Dispatch keys of tensors the kernels do not take: without a kernel there,
# the dispatcher's error names no argument. CompositeExplicitAutograd also
# fills the dispatcher's slot for a call without any tensor (every tensor
# argument None), which otherwise fails with "There were no tensor
# arguments": there the rules name the argument, as for a second None.
_UNSUPPORTED_KEYS = ("SparseCPU", "SparseCUDA", "SparseCsrCPU", "SparseCsrCUDA", "NestedTensorCPU",
                     "NestedTensorCUDA", "QuantizedCPU", "QuantizedCUDA", "MkldnnCPU", "CompositeExplicitAutograd")
for _name in _rules.op_names():
    for _key in _UNSUPPORTED_KEYS:
        _lib.impl(_name, _rules.reject(_name), _key)


def _differentiable_backward(name: str, math, tensor_args: int) -> None:
    """Autograd for the fused backward op <name> (_vjp_formula's). First-order
    backward never comes here: it runs the fused op alone."""
    setup_context, backward = _vjp_formula(math, tensor_args)
    _autograd(name, backward, setup_context=setup_context)
