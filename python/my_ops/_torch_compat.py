"""The one place where my_ops uses private PyTorch API: five names.

Each is looked up here, once, at import; where a torch release lacks one,
what this module exports falls back to public behaviour. Each is kept
because it pays for itself in host time (docs/performance.md, "Host time":
measured with and without it, MY_OPS_COMPAT_HIDE=<name>) or because the
public API cannot do the job at all:

1. torch._C._AutoDispatchBelowAutograd and
2. torch._C._after_autograd_keyset (with torch._C.DispatchKey, which names
   the keys of a keyset): the redispatch past the Autograd key
   that every Autograd kernel makes (torch's register_autograd makes it with
   these same two names), and past ADInplaceOrView for the mutating ops
   (that keyset less the one key); whether a call's keyset holds torch.func's
   key. Missing either: the ops take
   torch.library.register_autograd, and the mutating ops' Python API checks.
3. torch._C._FunctionBase.apply: the C apply under autograd.Function.apply,
   which records the op's graph node from its Autograd kernel, at the
   current torch.func level, without Function.apply's Python preamble (which
   would hand the call to torch.func from outside the dispatcher). Missing:
   register_autograd.
4. torch._C._functorch.{get,set}_single_level_autograd_function_allowed:
   lets that C apply record under torch.func transforms, as torch.func
   records its own nodes (pytorch#184974 does the same for register_autograd
   after torch 2.11). Missing: register_autograd.
5. torch.autograd.forward_ad._current_level: whether a dual level is open
   (dual_level, torch.func.jvp, jacfwd); only then are a call's tensors
   asked for a tangent (public unpack_dual), and a call with one is refused
   (the ops have no forward-mode formula). Missing: every tensor argument
   asked at level 0 (the one level the public dual_level opens).

Not used: torch._check (the fake kernels test symbolic sizes with plain
Python tests, which guard them) and every other private name.
tests/packaging/test_torch_compat.py checks that no other module uses a
private name and runs the ops with each name missing.
"""

from __future__ import annotations

import os

import torch
import torch.autograd.forward_ad as _forward_ad

# For tests only: names listed here (comma-separated) count as missing. For
# the names that torch itself uses, deleting them from torch would break torch
# rather than simulate a release without them.
_HIDDEN = frozenset(os.environ.get("MY_OPS_COMPAT_HIDE", "").split(","))


def _private(owner, name: str):
    return None if name in _HIDDEN or owner is None else getattr(owner, name, None)


_below_autograd = _private(torch._C, "_AutoDispatchBelowAutograd")
_after_autograd = _private(torch._C, "_after_autograd_keyset")
_c_apply = _private(_private(torch._C, "_FunctionBase"), "apply")
_functorch = _private(torch._C, "_functorch")
_single_level_allowed = _private(_functorch, "get_single_level_autograd_function_allowed")
_allow_single_level = _private(_functorch, "set_single_level_autograd_function_allowed")
_keys = getattr(torch._C, "DispatchKey", None)
# (what follows ADInplaceOrView: the keys after Autograd but that one)
_after_inplace = None if _after_autograd is None else _after_autograd.remove(_keys.ADInplaceOrView)
CAN_REDISPATCH = _below_autograd is not None and _after_autograd is not None
OWN_AUTOGRAD_KERNEL = all(name is not None for name in (
    _below_autograd, _after_autograd, _c_apply, _single_level_allowed, _allow_single_level))


def under_transforms(keyset) -> bool:
    """Whether an Autograd kernel's call (with `keyset`) runs under a torch.func transform."""
    return keyset.has(_keys.FuncTorchDynamicLayerBackMode)


def redispatch_below_ad_inplace_or_view(op, keyset, args):
    """op(*args) from its ADInplaceOrView kernel (called with `keyset`), past that key."""
    with _below_autograd():
        return op.redispatch(keyset & _after_inplace, *args)


def redispatch_below_autograd(op, keyset, args):
    """op(*args) from its Autograd kernel (called with `keyset`), past the Autograd keys."""
    with _below_autograd():
        return op.redispatch(keyset & _after_autograd, *args)


def record(function: type[torch.autograd.Function]):
    """A function that applies `function` (an autograd.Function whose forward
    takes ctx) from an Autograd kernel, as a C++ autograd kernel records its
    node: at the current level, torch.func's transforms included. None
    where a private name it needs is missing."""
    if not OWN_AUTOGRAD_KERNEL:
        return None
    apply = super(torch.autograd.Function, function).apply  # the C apply

    def record_node(*args):
        if _single_level_allowed():
            return apply(*args)
        try:
            _allow_single_level(True)
            return apply(*args)
        finally:
            _allow_single_level(False)

    return record_node


def _has_tangent(tensors, level) -> bool:
    for t in tensors:
        if isinstance(t, torch.Tensor):
            try:
                if _forward_ad.unpack_dual(t, level=level).tangent is not None:
                    return True
            except RuntimeError:
                pass  # a tensor of torch.func's vmap
    return False


if _private(_forward_ad, "_current_level") is not None:
    def forward_ad_active(tensors, keyset=None) -> bool:
        """Whether a call (its tensors; keyset: an op kernel's) must be taken
        as one with a tangent: a forward-mode level is open (dual_level,
        torch.func.jvp) and one of its tensors carries a tangent at it. The
        level is one per process: a level open in another thread refuses
        nothing here. Without a keyset, or under torch.func transforms, the
        open level alone counts: the tangent of a torch.func.jvp over
        torch.func.grad is not visible from the grad level's kernel."""
        level = _forward_ad._current_level
        return level >= 0 and (keyset is None or under_transforms(keyset) or _has_tangent(tensors, level))
else:
    def forward_ad_active(tensors, keyset=None) -> bool:
        """Missing: whether one of the tensors is dual (dual_level does not nest: level 0)."""
        return _has_tangent(tensors, level=0)


def schema(op):
    """The torch.ops op overload's schema (a FunctionSchema: .arguments, each
    with .name, .type, .default_value, .alias_info), by torch.fx's public lookup."""
    from torch.fx.operator_schemas import get_signature_for_torch_op

    return get_signature_for_torch_op(op, return_schemas=True)[1][0]


def same_storage(a, b) -> bool:
    """Whether tensors a and b view the same storage (torch keeps one Python
    object per live storage, so identity says it)."""
    return a.untyped_storage() is b.untyped_storage()


def check(cond, message=None) -> None:
    """torch._check's contract with public means: a symbolic size is guarded
    (specialised to the relation the traced call has) rather than asserted at
    run time."""
    if not cond:
        raise RuntimeError(message() if message is not None else "Expected cond to be True")
