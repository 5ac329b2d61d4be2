"""Autograd handling of the mutating ops, which write their arguments in place
and have no derivative (the other ops' are in _runtime.py): _mutating_op
registers an op's Autograd and math-bits kernels; its Python API calls it
with call_mutating. Writes to inference tensors outside inference_mode are
refused by the op's ADInplaceOrView kernel on every road (and by the
Python API where that kernel is missing).
"""

from __future__ import annotations

import torch
from torch import Tensor

from . import _torch_compat as _compat
from ._arguments import reraise_explained
from ._runtime import _inference_mode_off, _lib, _ops, _refuse_forward_ad

_MUTATE: dict = {}  # mutating op -> how its Python API calls it (_mutating_op)


def _mutating_op(name: str) -> None:
    """Autograd handling of an op that writes its arguments in place and has no
    derivative: a tensor that requires grad would silently lose its history,
    so refuse it (naming the argument); bump the version counter of every
    written tensor, as PyTorch's own in-place ops do, so autograd notices when
    a tensor it saved was overwritten. One kernel at the ADInplaceOrView key,
    which every call on ordinary tensors passes, inference_mode's included
    (the stable ABI has no C++ kernel there, so this lives here); PyTorch's
    autograd fallback in front of it only passes the call on. Where
    _torch_compat lacks a private name, the Python API checks and bumps."""
    op = getattr(_ops, name).default
    arguments = _compat.schema(op).arguments
    written = [i for i, a in enumerate(arguments) if a.alias_info is not None and a.alias_info.is_write]

    def refuse(args, keyset=None) -> None:
        _refuse_forward_ad(op, args, keyset)
        if torch.is_grad_enabled():
            for argument, value in zip(arguments, args):
                if isinstance(value, Tensor) and value.requires_grad:
                    raise RuntimeError(
                        f"my_ops.{name}: argument '{argument.name}' requires grad, but my_ops.{name} "
                        f"{'writes its arguments in place and ' if written else 'is an inference op that '}"
                        "has no autograd formula; call it under "
                        "torch.no_grad() or pass tensors that do not require grad (e.g. "
                        f"{argument.name}.detach())")

    if _compat.CAN_REDISPATCH:
        def inplace_kernel(keyset, *args):
            refuse(args, keyset)
            if not torch.is_inference_mode_enabled():  # (outside it, this key is reached for inference tensors too)
                for i in written:
                    if isinstance(args[i], Tensor) and args[i].is_inference():
                        raise RuntimeError(_inference_write_message(name, arguments[i].name))
            result = _compat.redispatch_below_ad_inplace_or_view(op, keyset, args)
            torch.autograd.graph.increment_version([args[i] for i in written])
            return result

        _lib.impl(name, inplace_kernel, "ADInplaceOrView", with_keyset=True)
        _MUTATE[op] = op
    else:
        def checked_call(*args):
            # missing a private name: the Python API checks where the kernel
            # would run (not under inference_mode, which skips it; not while
            # dynamo traces, which it cannot)
            if not _inference_mode_off():
                return op(*args)
            refuse(args)
            result = op(*args)
            torch.autograd.graph.increment_version([args[i] for i in written])
            return result

        _MUTATE[op] = checked_call

    def math_bits_kernel(*args):
        # Reached when an argument carries a lazy negation or conjugation
        # (x.conj().imag, x.conj()). PyTorch's fallback for these keys cannot
        # write such a tensor in place (it aborts the process); refuse a
        # written one before anything is written, resolve the others.
        for argument, value in zip(arguments, args):
            if argument.alias_info is not None and argument.alias_info.is_write and isinstance(value, Tensor) \
                    and (value.is_neg() or value.is_conj()):
                bit = "negative" if value.is_neg() else "conjugate"
                raise RuntimeError(
                    f"my_ops.{name}: argument '{argument.name}' has its {bit} bit set (a lazily "
                    f"{'negated' if bit == 'negative' else 'conjugated'} view, e.g. from .conj().imag), "
                    f"and my_ops.{name} cannot write such a view in place; pass a tensor without it "
                    f"({argument.name}.resolve_{'neg' if bit == 'negative' else 'conj'}() makes a copy)")
        return op(*[a.resolve_neg().resolve_conj() if isinstance(a, Tensor) else a for a in args])

    for key in ("Negative", "Conjugate"):
        _lib.impl(name, math_bits_kernel, key)


def _inference_write_message(name: str, argument: str) -> str:
    return (f"my_ops.{name}: argument '{argument}' is an inference tensor, and in-place updates to "
            "inference tensors outside torch.inference_mode() are not allowed (as in PyTorch); call "
            f"it inside torch.inference_mode(), or pass a normal tensor ({argument}.clone())")


def _refuse_inference_writes(name: str, **written: Tensor) -> None:
    """PyTorch refuses in-place updates of inference tensors outside
    torch.inference_mode(); so do the mutating ops: their ADInplaceOrView
    kernel, which the dispatcher reaches for inference tensors too outside
    inference_mode, and, where that kernel is missing (a private name
    gone), the Python API here."""
    if _inference_mode_off():
        for argument, tensor in written.items():
            if isinstance(tensor, Tensor) and tensor.is_inference():  # (None: the op's rules name it)
                raise RuntimeError(_inference_write_message(name, argument))


def call_mutating(name: str, op, args, **written: Tensor):
    """The Python API's call of mutating op (my_ops.<name>) on args, which
    writes the arguments named in `written` (its tensor arguments come first
    in args); returns what the op returns."""
    try:
        _refuse_inference_writes(name, **written)
        return _MUTATE[op](*args)
    except (TypeError, RuntimeError, NotImplementedError, AttributeError) as failure:
        reraise_explained(op, args, failure)
