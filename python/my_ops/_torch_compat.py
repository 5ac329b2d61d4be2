"""my_ops' only private PyTorch API: five names, looked up once, each with a public fallback (test_torch_compat.py
runs the ops without each: MY_OPS_COMPAT_HIDE=<name>), each paying in host time (docs/performance.md) or doing
what the public API cannot:
1. torch._C._after_autograd_keyset: the keys below an Autograd kernel's (redispatch).
2. torch._C.DispatchKey: whether a call runs under a torch.func transform (under_transforms); ADInplaceOrView.
3-4. torch.autograd.function._SingleLevelFunction (a Function's apply routes to torch.func's custom_function_call
   from torch 2.15; this one's is C's) and torch._functorch.utils.enable_single_level_autograd_function: record
   the node from the Autograd kernel at the current torch.func level (record). Without 2-4: register_autograd.
5. torch._subclasses.functional_tensor.FunctionalTensorMode: a rule in the functionalization of a traced graph.
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
_single_level_function = _private(sys.modules.get("torch.autograd.function"), "_SingleLevelFunction")
_single_level_allowed = _private(sys.modules.get("torch._functorch.utils"), "enable_single_level_autograd_function")
_keys = _private(torch._C, "DispatchKey")
_functional_mode = _private(sys.modules.get("torch._subclasses.functional_tensor"), "FunctionalTensorMode")
FUNCTIONALIZATION_RULES = _functional_mode is not None
OWN_AUTOGRAD_KERNEL = None not in (_single_level_function, _single_level_allowed, _keys)
FUNCTION_BASE = torch.autograd.Function
if OWN_AUTOGRAD_KERNEL:
    class FUNCTION_BASE(_single_level_function):  # noqa: N801
        # (the key compiled autograd asks of every node's class: an attribute of a public class)
        _compiled_autograd_key = vars(torch.autograd.Function).get("_compiled_autograd_key")


def under_transforms(keyset) -> bool:
    """Whether a kernel's call (its keyset) runs under a torch.func transform; without the name, taken to."""
    return _keys is None or keyset.has(_keys.FuncTorchDynamicLayerBackMode)


# redispatch(op, keyset, args, past): op(*args) to the keys below a kernel's own (past: PAST_AUTOGRAD from an
# Autograd kernel, PAST_INPLACE from ADInplaceOrView). Not under _AutoDispatchBelowAutograd as register_autograd
# (its host time): the C kernels' own calls record nothing but under torch.func's enable_grad (nodes dropped).
if _after_autograd is not None and _keys is not None:
    PAST_AUTOGRAD, PAST_INPLACE = _after_autograd, _after_autograd.remove(_keys.ADInplaceOrView)

    def redispatch(op, keyset, args, past):
        return op.redispatch(keyset & past, *args)
else:
    # (the keys above the kernel's own removed too: torch's Python dispatcher leaves them in; without DispatchKey
    # the highest alone, and there it runs twice)
    PAST_AUTOGRAD = frozenset(k for n, k in getattr(_keys, "__members__", {}).items() if n.startswith("Autograd"))
    PAST_INPLACE = frozenset(() if _keys is None else (_keys.ADInplaceOrView,))

    def redispatch(op, keyset, args, past):
        key = keyset.highestPriorityTypeId()
        while past and key not in past:
            keyset = keyset.remove(key)
            key = keyset.highestPriorityTypeId()
        return op.redispatch(keyset.remove(key), *args)


def record(function: type[torch.autograd.Function]):
    """The apply of a FUNCTION_BASE for an Autograd kernel (last argument: its keyset), recording the node at the
    current torch.func level as a C++ kernel does; None without the private names."""
    if not OWN_AUTOGRAD_KERNEL:
        return None
    apply = function.apply

    def record_node(*args):
        if not under_transforms(args[-1]):  # (the C apply asks for the flag under torch.func alone)
            return apply(*args)
        with _single_level_allowed():
            return apply(*args)

    return record_node


def _dual_level_open(t: torch.Tensor) -> bool:
    """Whether a forward-AD dual level is open, asked with a tensor of the call (fake ones refuse a real one):
    unpack_dual returns it itself where none is open; should a torch always make a view, make_dual decides."""
    try:
        if _forward_ad.unpack_dual(t).primal is t:
            return False
    except RuntimeError:
        return True  # (a tensor of torch.func's vmap: unpacked, so a level is open)
    try:
        _forward_ad.make_dual(probe := torch.zeros((), device=t.device), probe)
    except RuntimeError:
        return False
    return True


def forward_ad_active(tensors, keyset=None) -> bool:
    """Whether a call (its tensors; keyset: a kernel's) carries a tangent. Without a keyset or under a torch.func
    transform an open dual level counts: a tangent can be out of the op's sight (jacfwd(grad))."""
    tensors = [t for t in tensors if isinstance(t, torch.Tensor)]
    if not tensors or not _dual_level_open(tensors[0]):
        return False
    if keyset is None or under_transforms(keyset):
        return True
    for t in tensors:
        try:
            if _forward_ad.unpack_dual(t).tangent is not None:
                return True
        except RuntimeError:  # (unreadable below register_autograd's kernel, which hides the Autograd keys)
            return True
    return False


def in_functionalization(op, rule, lib) -> bool:
    """Has the functionalization of a traced graph (compile's AOTAutograd, export's run_decompositions) call
    rule(exporting, *args, **kwargs) first for each call of `op`, the mode on; unless it returns NotImplemented,
    that is the result. exporting: the program runs without Python (is_exporting(), or the mode's flag:
    run_decompositions, aot_export_module). False without the name."""
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
