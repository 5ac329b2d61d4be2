"""The one place where my_ops uses private PyTorch API: five names, looked up once, each with a public fallback
(tests/packaging/test_torch_compat.py runs the ops without each), each paying in host time (docs/performance.md,
"Host time", MY_OPS_COMPAT_HIDE=<name>) or doing what the public API cannot:
1. torch._C._after_autograd_keyset: the keys below an Autograd kernel's, to redispatch to, as torch's
   register_autograd does. Missing: the kernel's keyset without its highest keys down to its own (by 2).
2. torch._C.DispatchKey: whether an Autograd kernel's call runs under a torch.func transform (its
   FuncTorchDynamicLayerBackMode: under_transforms), and the ADInplaceOrView key, to redispatch past.
3-4. torch._C._FunctionBase (its C apply) and torch._functorch.utils.enable_single_level_autograd_function
   (under torch.func transforms alone): record the node from the Autograd kernel at the current torch.func
   level (as pytorch#184974 does after 2.11). Missing any of 2-4: register_autograd (a dual tensor then
   refused below it, and every call under an open dual level where no transform can be told apart).
5. torch._subclasses.functional_tensor.FunctionalTensorMode, the mode of torch's functionalization of a
   traced graph, given a rule by the public register_torch_dispatch (in_functionalization): in the trace of
   a compiled graph, a mutating op puts its memory check on the graph's real inputs; while exporting, it
   takes its decomposition, whoever calls it (_mutating.py). Missing: no such check, and torch 2.11 does not
   guard aliasing between a compiled graph's inputs (pytorch#184481): overlapping arguments after a graph
   compiled for apart ones are not refused; the Python API takes the export route itself (torch.ops calls,
   no longer).
Whether a forward-AD dual level is open is asked of public API (forward_ad_active).
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


_after_autograd = _private(torch._C, "_after_autograd_keyset")
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


# redispatch(op, keyset, args, past): op(*args) from one of its kernels (with `keyset`), to the keys below
# its own (`past`: PAST_AUTOGRAD from an Autograd kernel, PAST_INPLACE from an ADInplaceOrView one), as
# torch's kernels redispatch. Not under torch._C._AutoDispatchBelowAutograd, as torch's register_autograd is:
# the C kernels' own calls (contiguous, to, copy_ through the stable ABI) pass their Autograd kernels, which
# record nothing (grad off, or no input requiring grad) but under torch.func's enable_grad (_runtime.py),
# where the intermediates' nodes are dropped with them; the guard cost 0.6-0.9 us a call on the CPU
# (docs/performance.md).
if _after_autograd is not None and _keys is not None:
    PAST_AUTOGRAD, PAST_INPLACE = _after_autograd, _after_autograd.remove(_keys.ADInplaceOrView)

    def redispatch(op, keyset, args, past):
        return op.redispatch(keyset & past, *args)
else:
    # The kernel's keyset without its highest keys down to its own (the keys of `past`): most calls have
    # those above masked off, torch's Python dispatcher (torch.compile's and torch.export's tracing) leaves
    # them. Without DispatchKey, the highest alone: under the Python dispatcher the kernel then runs twice.
    PAST_AUTOGRAD = frozenset(k for n, k in ({} if _keys is None else _keys.__members__).items()
                              if n.startswith("Autograd"))
    PAST_INPLACE = frozenset(() if _keys is None else (_keys.ADInplaceOrView,))

    def redispatch(op, keyset, args, past):
        key = keyset.highestPriorityTypeId()
        while past and key not in past:
            keyset = keyset.remove(key)
            key = keyset.highestPriorityTypeId()
        return op.redispatch(keyset.remove(key), *args)


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


def _dual_level_open(t: torch.Tensor) -> bool:
    """Whether a forward-AD dual level is open, by public API, asked with `t`, one of the call's own tensors (a
    tensor of another mode's, such as a real one under FakeTensorMode, cannot be unpacked there): unpack_dual
    hands a tensor back as it is where no level is open, else a view of it. Should a torch always make the
    view, make_dual, which refuses where none is open, decides on a new tensor (slower, still right)."""
    try:
        if _forward_ad.unpack_dual(t).primal is t:
            return False
    except RuntimeError:
        return True  # (a tensor of torch.func's vmap: unpacked, so a level is open)
    probe = torch.zeros((), device=t.device)
    try:
        _forward_ad.make_dual(probe, probe)
    except RuntimeError:
        return False
    return True


def forward_ad_active(tensors, keyset=None) -> bool:
    """Whether a call (its tensors; keyset: a kernel's) carries a tangent at the open dual level. Without a
    keyset or under a torch.func transform the open level alone counts: there a tangent can be out of the
    op's sight (jacfwd over grad), which would silently drop it."""
    tensors = [t for t in tensors if isinstance(t, torch.Tensor)]
    if not tensors or not _dual_level_open(tensors[0]):
        return False
    if keyset is None or under_transforms(keyset):
        return True
    for t in tensors:
        try:
            if _forward_ad.unpack_dual(t).tangent is not None:
                return True
        except RuntimeError:
            pass  # a tensor of torch.func's vmap
    return False


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
