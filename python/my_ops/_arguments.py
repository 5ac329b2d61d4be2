"""What the Python API does with arguments that the kernels cannot check:
float arguments as the op's schema takes them (the dispatcher would convert
a bool or a one-element tensor), and, once a call has failed, the message
for a jagged nested tensor, which fails in torch's own conversions before
any check of the kernels runs, with a message that names neither op nor
argument.
"""

from __future__ import annotations

import numbers

import torch
from torch import Tensor

from . import _torch_compat as _compat


def float_argument(name: str, argument: str, value, also: str = ""):
    """A float argument as the op's schema takes it: a real number, NumPy's
    included. A bool or a tensor, which the dispatcher would silently convert
    to a float, is refused, naming the op; what the dispatcher itself
    refuses (None for a float, a str, a complex) is passed on, so that the
    error is its RuntimeError, the same through torch.ops."""
    if type(value) is float or isinstance(value, (torch.SymFloat, torch.SymInt)):
        return value
    if isinstance(value, (bool, Tensor)):
        # (a tensor by its kind alone: a traced one is a FakeTensor, which dynamo cannot print)
        got = "Tensor" if isinstance(value, Tensor) else f"bool {value!r}"
        raise TypeError(f"my_ops.{name}: expected {argument} to be a float{also}, but got {got}")
    return float(value) if isinstance(value, numbers.Real) else value


def explain_failure(op, tensors, error: Exception) -> Exception | None:
    """The error to raise instead of a failed call's own (`error`) when one of
    its tensor arguments (`tensors`, in the schema's order) is a jagged nested
    tensor that nothing implements the op for; None when the call's own error
    stands (None for a tensor is named by the op's rules on every road; a
    kernel registered for nested tensors with register_torch_dispatch keeps
    its own error)."""
    if not isinstance(error, NotImplementedError):
        return None
    name = op.name().split("::")[1].split(".")[0]
    names = [a.name for a in _compat.schema(op).arguments if str(a.type) == "Tensor"]
    for argument, t in zip(names, tensors):
        if isinstance(t, Tensor) and t.is_nested:
            # the message the rules give a strided nested tensor (_rules.py, op_rules.cpp)
            return RuntimeError(f"my_ops.{name}: expected {argument} to be a dense (strided) tensor, but got "
                                "a nested tensor")
    return None


def reraise_explained(op, tensors, failure: Exception):
    """Raises, from a failed call's except clause, explain_failure's error, or
    else the failure itself. torch's own conversions fail on a jagged nested
    tensor before any check of the kernels, with a message naming neither op
    nor argument."""
    error = explain_failure(op, tensors, failure)
    if error is None:
        raise failure
    raise error from None
