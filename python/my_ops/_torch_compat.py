"""The one place where my_ops uses private PyTorch API: five names, looked up once, each with a public fallback
(tests/packaging/test_torch_compat.py runs the ops without each), each paying in host time (docs/performance.md,
"Host time", MY_OPS_COMPAT_HIDE=<name>) or doing what the public API cannot:
1. torch._C.DispatchKey (its FuncTorchDynamicLayerBackMode): whether an Autograd kernel's call runs under a
   torch.func transform (under_transforms).
2-3. torch._C._FunctionBase (its C apply) and torch._functorch.utils.enable_single_level_autograd_function
   (under torch.func transforms alone): record the node from the Autograd kernel at the current torch.func
   level (as pytorch#184974 does after 2.11). Missing any of 1-3: register_autograd; the in-place ops then
   refuse every call under an open forward-AD level (no transform can be told apart).
4. torch.autograd.forward_ad._current_level: tensors are asked for a tangent only under an open dual level,
   and under a transform the open level alone counts (jacfwd over grad: the tangent is not visible to the
   op, which would silently drop it). Missing: asked at level 0, on every call.
5. torch._subclasses.functional_tensor.FunctionalTensorMode, the mode of torch's functionalization of a
   traced graph, given a rule by the public register_torch_dispatch (in_functionalization): in the trace of
   a compiled graph, a mutating op puts its memory check on the graph's real inputs; while exporting, it
   takes its decomposition, whoever calls it (_mutating.py). Missing: no such check, and torch 2.11 does not
   guard aliasing between a compiled graph's inputs (pytorch#184481): overlapping arguments after a graph
   compiled for apart ones are not refused; the Python API takes the export route itself (torch.ops calls,
   no longer).
The redispatch past a kernel needs none (redispatch).
"""

from __future__ import annotations

import os
import sys

import torch
import torch.autograd.forward_ad as _forward_ad
from torch.fx.operator_schemas import get_signature_for_torch_op  # (loaded by torch itself)

# For tests only: names listed here (comma-separated) count as missing (those torch uses cannot be deleted).
_HIDDEN = frozenset(os.environ.get("MY_OPS_COMPAT_HIDE", "").split(","))


def _private(owner, name: str):
    return None if name in _HIDDEN or owner is None else getattr(owner, name, None)


_function_base = _private(torch._C, "_FunctionBase")
_c_apply = None if _function_base is None else vars(_function_base).get("apply")  # (unbound: record() binds it)
_single_level_allowed = _private(sys.modules.get("torch._functorch.utils"), "enable_single_level_autograd_function")
_keys = _private(torch._C, "DispatchKey")
_functional_mode = _private(sys.modules.get("torch._subclasses.functional_tensor"), "FunctionalTensorMode")
FUNCTIONALIZATION_RULES = _functional_mode is not None  # (in_functionalization)
OWN_AUTOGRAD_KERNEL = None not in (_c_apply, _single_level_allowed, _keys)


def under_transforms(keyset) -> bool:
    """Whether an Autograd kernel's call (with `keyset`) runs under a torch.func transform; without the name,
    taken to (the callers then refuse or record rather than guess)."""
    return _keys is None or keyset.has(_keys.FuncTorchDynamicLayerBackMode)


def redispatch(op, keyset, args):
    """op(*args) from one of its kernels, to the keys below its own, as torch's kernels redispatch: the
    kernel's `keyset` (with_keyset: its highest key is the kernel's own) without that key. Not under
    torch._C._AutoDispatchBelowAutograd, as torch's register_autograd is: the C kernels' own calls (contiguous,
    to, copy_ through the stable ABI) pass their Autograd kernels, which record nothing (grad off, or no input
    requiring grad) but under torch.func's enable_grad (_runtime.py), where the intermediates' nodes are
    dropped with them; the guard cost 0.6-0.9 us a call on the CPU (docs/performance.md)."""
    return op.redispatch(keyset.remove(keyset.highestPriorityTypeId()), *args)


def record(function: type[torch.autograd.Function]):
    """A function that applies `function` from an Autograd kernel (its last argument: the kernel's keyset),
    at the current level as a C++ kernel records its node; None without the private names."""
    if not OWN_AUTOGRAD_KERNEL:
        return None
    apply = _c_apply.__get__(None, function)  # the C apply, bound to `function` as Function.apply binds it

    def record_node(*args):
        if not under_transforms(args[-1]):  # (the C apply asks for the flag under torch.func alone)
            return apply(*args)
        with _single_level_allowed():
            return apply(*args)

    return record_node


def _has_tangent(tensors, level) -> bool:
    for t in tensors:
        try:
            if isinstance(t, torch.Tensor) and _forward_ad.unpack_dual(t, level=level).tangent is not None:
                return True
        except RuntimeError:
            pass  # a tensor of torch.func's vmap
    return False


if _private(_forward_ad, "_current_level") is not None:
    def forward_ad_active(tensors, keyset=None) -> bool:
        """Whether a call (its tensors; keyset: a kernel's) carries a tangent at the open forward level."""
        level = _forward_ad._current_level
        return level >= 0 and (keyset is None or under_transforms(keyset) or _has_tangent(tensors, level))
else:
    def forward_ad_active(tensors, keyset=None) -> bool:
        return _has_tangent(tensors, level=0)  # (the one level the public dual_level opens)


def in_functionalization(op, rule, lib) -> bool:
    """Has torch's functionalization of a traced graph (AOTAutograd's trace of a torch.compile'd graph,
    torch.export's run_decompositions, AOTInductor) call rule(exporting, *args, **kwargs) first for each call
    of `op` ("ns::name"), with the mode on; unless it returns NotImplemented, its result is the call's.
    `exporting`: the trace makes a program to run without Python (torch.compiler.is_exporting(), or the
    mode's own flag: joint-IR run_decompositions, direct aot_export_module). False where the name is missing."""
    if _functional_mode is None:
        return False

    def dispatch_rule(mode, func, types, args, kwargs):
        exporting = torch.compiler.is_exporting() or getattr(mode, "export", False) is True
        with mode:
            result = rule(exporting, *args, **kwargs)
        return mode.__torch_dispatch__(func, types, args, kwargs) if result is NotImplemented else result

    torch.library.register_torch_dispatch(op, _functional_mode, dispatch_rule, lib=lib)
    return True


def schema(op):
    """An op overload's FunctionSchema, by torch.fx's public lookup."""
    return get_signature_for_torch_op(op, return_schemas=True)[1][0]


# torch.nested's jagged tensor class, by a public lookup (torch.load's safe globals; building one to ask its
# type costs seconds of imports): torch's own, not a user's class of that name; None where torch lists it no
# more (a jagged tensor then meets torch's own error on that road).
JAGGED = next((g for g in torch.serialization.get_safe_globals() if isinstance(g, type)
               and issubclass(g, torch.Tensor) and g.__name__ == "NestedTensor"
               and g.__module__.startswith("torch.nested.")), None)


def check(cond, message=None) -> None:
    """torch._check's contract, public: a symbolic size is guarded, not asserted."""
    if not cond:
        raise RuntimeError(message() if message is not None else "Expected cond to be True")
