"""The Python API's float arguments, which the dispatcher would convert silently."""

from __future__ import annotations

import numbers

import torch
from torch import Tensor


def float_argument(name: str, argument: str, value, also: str = ""):
    """A real number (NumPy's included) as a float; a bool or a tensor refused; what the
    dispatcher refuses (None, a str, a complex) passed on, for its error, as through torch.ops."""
    if type(value) is float or isinstance(value, (torch.SymFloat, torch.SymInt)):
        return value
    if isinstance(value, (bool, Tensor)):
        # (a tensor by its kind alone: a traced one is a FakeTensor, which dynamo cannot print)
        got = "Tensor" if isinstance(value, Tensor) else f"bool {value!r}"
        raise TypeError(f"my_ops.{name}: expected {argument} to be a float{also}, but got {got}")
    return float(value) if isinstance(value, numbers.Real) else value
