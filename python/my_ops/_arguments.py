"""The Python API's float arguments. The dispatcher converts True to 1.0 before any my_ops code runs; the API
refuses a bool (a flag where a number belongs is a mistake), a number too large for a float (Python's
OverflowError names no op) and a tensor that requires grad (the dispatcher reads a number from a one-element
tensor, which drops its gradient silently) with a RuntimeError, as the dispatcher refuses a str or None: one `except
RuntimeError` holds on every road.
"""

from __future__ import annotations

import decimal
import math
import numbers

import torch
from torch import Tensor

_FLOAT_OVERFLOW = 2 ** 1024 - 2 ** 970  # the least int that float() rounds past the largest float
_NUMPY_BOOLS = (("numpy", "bool"), ("numpy", "bool_"))  # (numpy.bool_'s module and name: NumPy 2, NumPy 1)


def float_argument(name: str, argument: str, value, also: str = ""):
    """A real number (NumPy's, a Decimal) as a float; a bool (NumPy's by its type's name: NumPy is not imported;
    a bool tensor), one too large or a tensor that requires grad refused; anything else (a tensor, None, a str)
    left to the dispatcher, as through torch.ops."""
    if type(value) is float or isinstance(value, (torch.SymFloat, torch.SymInt)):
        return value
    expected = f"my_ops.{name}: expected {argument} to be a float{also}, but got"
    if isinstance(value, Tensor):  # (the dispatcher reads its number: a gradient for it would be dropped)
        if value.dtype == torch.bool:
            raise RuntimeError(f"{expected} a bool tensor")
        if value.requires_grad and torch.is_grad_enabled():
            raise RuntimeError(f"my_ops.{name}: {argument} is a tensor that requires grad, but my_ops.{name} reads "
                               f"it as a number and has no gradient for it; pass a float ({argument}.item()) or "
                               f"{argument}.detach()")
        return value
    if isinstance(value, bool) or (type(value).__module__, type(value).__name__) in _NUMPY_BOOLS:
        raise RuntimeError(f"{expected} bool {bool(value)!r}")
    if not isinstance(value, (numbers.Real, decimal.Decimal)):
        return value
    # (an int that float() would round past the largest float: asked first, as float()'s OverflowError escapes
    # torch 2.13's dynamo; a NumPy longdouble or a Decimal past a float converts to inf)
    converted = math.inf if isinstance(value, int) and abs(value) >= _FLOAT_OVERFLOW else float(value)
    if math.isinf(converted) and value != converted:
        raise RuntimeError(f"{expected} {type(value).__name__} too large to convert to float")
    return converted
