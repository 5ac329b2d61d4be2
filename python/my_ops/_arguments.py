"""What the Python API does with arguments that the kernels cannot check:
float arguments as the op's schema takes them, and, once a call has failed,
the message for a tensor argument that is no dense tensor (None, a jagged
nested tensor), which fails in torch's own conversions before any check of
the kernels runs, with a message that names neither op nor argument.
"""

from __future__ import annotations

import numbers

import torch
from torch import Tensor

from . import _torch_compat as _compat


def float_argument(name: str, argument: str, value, also: str = ""):
    """A float argument as the op's schema takes it (and as torch.ops.my_ops
    does): a real number, NumPy's included; a str or a bool is refused
    instead of being converted."""
    if type(value) is float or isinstance(value, (torch.SymFloat, torch.SymInt)):
        return value
    if isinstance(value, bool) or not isinstance(value, numbers.Real):
        raise TypeError(f"my_ops.{name}: expected {argument} to be a float{also}, but got "
                        f"{type(value).__name__} {value!r}")
    return float(value)


def explain_failure(op, tensors, error: Exception) -> Exception | None:
    """The error to raise instead of a failed call's own (`error`) when one of
    its tensor arguments (`tensors`, in the schema's order) is None or the
    like, or a nested tensor that nothing implements the op for; None when
    the call's own error stands (e.g. from a kernel registered for nested
    tensors with torch.library.register_torch_dispatch)."""
    name = op.name().split("::")[1].split(".")[0]
    names = [a.name for a in _compat.schema(op).arguments if str(a.type) == "Tensor"]
    for argument, t in zip(names, tensors):
        if not isinstance(t, Tensor):
            return TypeError(f"my_ops.{name}: expected {argument} to be a Tensor, but got {type(t).__name__}")
        if t.is_nested and isinstance(error, NotImplementedError):
            # the message the rules give a strided nested tensor (_rules.py, op_rules.cpp)
            return RuntimeError(f"my_ops.{name}: expected {argument} to be a dense (strided) tensor, but got "
                                "a nested tensor")
    return None


def reraise_explained(op, tensors, failure: Exception):
    """Raises, from a failed call's except clause, explain_failure's error, or
    else the failure itself. torch's own conversions fail on None or a nested
    tensor before any check of the kernels, with messages naming neither op
    nor argument."""
    error = explain_failure(op, tensors, failure)
    if error is None:
        raise failure
    raise error from None
