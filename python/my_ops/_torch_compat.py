"""The one place where my_ops uses private PyTorch API.

The Python runtime (_runtime.py, _mutating.py, _rules.py) takes shorter or
more exact roads through a few private torch names (torch._C._*, underscore
attributes). Each is looked up here, once, at import; where a torch release
lacks one, what this module exports falls back to public behaviour that gives
the same results, slower where it must. Nothing else in the package may use a private
torch name: tests/packaging/test_torch_compat.py checks that, and runs the ops with each
name missing.
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
    return None if name in _HIDDEN else getattr(owner, name, None)


# Context manager: calls inside it skip the Autograd keys; the keyset of the
# dispatch keys after Autograd (redispatch past it). _runtime.py writes its own
# Autograd kernel only with these two and knows_transforms; without one, it
# registers its formulas through torch.library.register_autograd.
below_autograd = _private(torch._C, "_AutoDispatchBelowAutograd")
after_autograd_keyset = _private(torch._C, "_after_autograd_keyset")
# Keyset after ADInplaceOrView; missing: the Python API wrappers of the
# mutating ops check and bump version counters instead of a kernel there.
after_ad_inplace_or_view_keyset = _private(torch._C, "_after_ADInplaceOrView_keyset")

# call_below_autograd(op, args): op(*args) past the Autograd keys of CPU,
# CUDA and meta tensors, by switching that key off in the thread's dispatch
# state and back: a third of the guard's host time
# (benchmarks/tuning/host_path.py). A subset of what the guard excludes: a
# tensor with another autograd key (sparse, nested) still reaches the op's
# Autograd kernel, which passes it on. Dynamo cannot trace the switch (nor
# the guard): the Python API calls neither while it compiles.
if below_autograd is not None:
    def call_below_autograd_traced(op, args):
        with below_autograd():
            return op(*args)
else:
    # missing: _runtime.py registers its formulas through register_autograd, whose
    # Autograd kernel passes calls that record nothing on
    def call_below_autograd_traced(op, args):
        return op(*args)

_set_excluded = _private(torch._C, "_dispatch_tls_set_dispatch_key_excluded")
_is_excluded = _private(torch._C, "_dispatch_tls_is_dispatch_key_excluded")
_AUTOGRAD_KEY = getattr(getattr(torch._C, "DispatchKey", None), "AutogradFunctionality", None)
# An op overload's _op: the C++ operator call that OpOverload.__call__ makes,
# without that Python frame (a tenth of a small op's host time).
_has_op_call = "_op" not in _HIDDEN and hasattr(torch.ops.aten.detach.default, "_op")
if _set_excluded is not None and _is_excluded is not None and _AUTOGRAD_KEY is not None and _has_op_call:
    def call_below_autograd(op, args):
        if _is_excluded(_AUTOGRAD_KEY):  # already below autograd (nested calls)
            return op._op(*args)
        try:  # (set inside: an interrupt between the two calls must not leave it set)
            _set_excluded(_AUTOGRAD_KEY, True)
            return op._op(*args)
        finally:
            _set_excluded(_AUTOGRAD_KEY, False)
else:
    # missing any of them: the guard, or without that the op's Autograd kernel
    call_below_autograd = call_below_autograd_traced

_transforms_active = _private(torch._C, "_are_functorch_transforms_active")
knows_transforms = _transforms_active is not None
# missing: assume a torch.func transform may be active, so calls apply the
# op's autograd.Function (Function.apply), which is right with or without one
transforms_active = _transforms_active or (lambda: True)

# missing: the same test, in Python
any_requires_grad = _private(torch._C, "_any_requires_grad") or (
    lambda *tensors: any(t.requires_grad for t in tensors))

# missing: assume a dispatch mode may be active, so calls take the op's full path
dispatch_modes_active = _private(torch._C, "_len_torch_dispatch_stack") or (lambda: 1)

if _private(_forward_ad, "_current_level") is not None:
    def has_tangent(tensors) -> bool:
        """Whether any of the tensors carries a forward-mode AD tangent."""
        if _forward_ad._current_level >= 0:  # a dual_level is open
            for t in tensors:
                if _forward_ad.unpack_dual(t).tangent is not None:
                    return True
        return False
else:
    def has_tangent(tensors) -> bool:
        """Whether any of the tensors carries a forward-mode AD tangent."""
        # dual_level does not nest, so its level is 0; with an explicit level
        # unpack_dual reads no module state, and finds no tangent with no level open
        for t in tensors:
            try:
                if _forward_ad.unpack_dual(t, level=0).tangent is not None:
                    return True
            except RuntimeError:
                # a vmap-batched tensor (no batching rule): under torch.func the
                # ops apply their autograd.Function, whose jvp refuses forward AD
                pass
        return False


_FunctionBase = _private(torch._C, "_FunctionBase")


def record_apply(function: type[torch.autograd.Function]):
    """function's apply for calls with no torch.func transform active: the C
    apply under torch.autograd.Function.apply, which skips its Python preamble
    (argument binding, the hand-over to torch.func)."""
    if _private(_FunctionBase, "apply") is not None:
        return super(torch.autograd.Function, function).apply
    # missing: Function.apply itself, the same record with that preamble
    return function.apply


def schema(op):
    """The torch.ops op overload's schema (a FunctionSchema: .arguments, each
    with .name, .type, .default_value, .alias_info)."""
    found = None if "_schema" in _HIDDEN else getattr(op, "_schema", None)
    if found is None:
        # missing: torch.fx's public lookup, which torch keeps in step with its op overloads
        from torch.fx.operator_schemas import get_signature_for_torch_op

        found = get_signature_for_torch_op(op, return_schemas=True)[1][0]
    return found


if _private(torch.UntypedStorage, "_cdata") is not None:
    def same_storage(a, b) -> bool:
        """Whether tensors a and b view the same storage."""
        return a.untyped_storage()._cdata == b.untyped_storage()._cdata
else:
    def same_storage(a, b) -> bool:
        """Whether tensors a and b view the same storage."""
        # missing: torch keeps one Python object per live storage, so identity says it
        return a.untyped_storage() is b.untyped_storage()


def _check(cond, message=None) -> None:
    # a plain test: the same errors, but a symbolic size is specialised
    # (guarded) where torch._check would assert it at run time
    if not cond:
        raise RuntimeError(message() if message is not None else "Expected cond to be True")


# torch._check(cond, message): documented, yet underscored
check = _private(torch, "_check") or _check
