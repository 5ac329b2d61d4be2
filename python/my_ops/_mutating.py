"""The ops that write their arguments in place and have no derivative: their
ADInplaceOrView kernel (the stable ABI has none in C++), which every call on
ordinary tensors passes, inference_mode's included. Where _torch_compat lacks
a private name, the Python API (call_mutating) checks instead.
"""

from __future__ import annotations

import torch
from torch import Tensor

from . import _torch_compat as _compat
from ._runtime import _forward_ad_error, _lib, _ops

_MUTATE: dict = {}  # mutating op -> what call_mutating calls, where not the op itself


def _mutating_op(name: str) -> None:
    """Refuses a tensor that requires grad (it would silently lose its history;
    a read-only one too: nothing tells a training step from torch.export's
    inference IR, which drops no_grad blocks) and writes to inference tensors
    outside inference_mode, as torch does; bumps the written tensors' version
    counters, as torch's in-place ops do."""
    op = getattr(_ops, name).default
    arguments = _compat.schema(op).arguments
    written = [i for i, a in enumerate(arguments) if a.alias_info is not None and a.alias_info.is_write]

    def inplace_kernel(keyset, *args):  # (keyset None: the Python API's checks, without the kernel)
        if _compat.forward_ad_active(args, keyset):
            raise _forward_ad_error(op)
        if torch.is_grad_enabled():
            for argument, value in zip(arguments, args):
                if isinstance(value, Tensor) and value.requires_grad:
                    raise RuntimeError(
                        f"my_ops.{name}: argument '{argument.name}' requires grad, but my_ops.{name} "
                        f"{'writes its arguments in place and ' if written else 'is an inference op that '}"
                        "has no autograd formula; call it under torch.no_grad() or pass tensors that do not "
                        f"require grad (e.g. {argument.name}.detach()); an exported program's run_decompositions() "
                        "drops torch.no_grad() blocks: run its module() under torch.no_grad()")
        if not torch.is_inference_mode_enabled():  # (outside it, inference tensors reach this key too)
            for i in written:
                if isinstance(args[i], Tensor) and args[i].is_inference():  # (None: the op's rules name it)
                    raise RuntimeError(
                        f"my_ops.{name}: argument '{arguments[i].name}' is an inference tensor, and in-place "
                        "updates to inference tensors outside torch.inference_mode() are not allowed (as in "
                        "PyTorch); call it inside torch.inference_mode(), or pass a normal tensor "
                        f"({arguments[i].name}.clone())")
        result = op(*args) if keyset is None else _compat.redispatch(op, keyset & _compat.AFTER_INPLACE, args)
        torch.autograd.graph.increment_version([args[i] for i in written])
        return result

    if _compat.CAN_REDISPATCH:
        _lib.impl(name, inplace_kernel, "ADInplaceOrView", with_keyset=True)
    else:  # (not under inference_mode, which skips the key, nor dynamo, which cannot trace it)
        _MUTATE[op] = lambda *args: op(*args) if torch.compiler.is_compiling() or torch.is_inference_mode_enabled() \
            else inplace_kernel(None, *args)

    def math_bits_kernel(*args):
        # (a lazily negated or conjugated argument: torch's fallback here aborts
        # the process writing one in place; refuse it, resolve the others)
        for i in written:
            value, argument = args[i], arguments[i].name
            if isinstance(value, Tensor) and (value.is_neg() or value.is_conj()):
                bit, done, resolve = ("negative", "negated", "neg") if value.is_neg() else \
                    ("conjugate", "conjugated", "conj")
                raise RuntimeError(
                    f"my_ops.{name}: argument '{argument}' has its {bit} bit set (a lazily {done} view, "
                    f"e.g. from .conj().imag), and my_ops.{name} cannot write such a view in place; pass a "
                    f"tensor without it ({argument}.resolve_{resolve}() makes a copy)")
        return op(*[a.resolve_neg().resolve_conj() if isinstance(a, Tensor) else a for a in args])

    for key in ("Negative", "Conjugate"):
        _lib.impl(name, math_bits_kernel, key)


def call_mutating(op, args):
    """The Python API's call of a mutating op."""
    return _MUTATE.get(op, op)(*args)
