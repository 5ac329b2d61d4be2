"""What the Python API does with arguments the kernels cannot check: float
arguments as the schema takes them, and a jagged nested tensor, which fails in
torch's own conversions, naming neither op nor argument, before any check.
"""

from __future__ import annotations

import numbers

import torch
from torch import Tensor

from . import _torch_compat as _compat


def float_argument(name: str, argument: str, value, also: str = ""):
    """A real number (NumPy's included) as a float. A bool or a tensor, which the
    dispatcher would silently convert, is refused; what the dispatcher refuses
    (None, a str, a complex) is passed on, for its error, as through torch.ops."""
    if type(value) is float or isinstance(value, (torch.SymFloat, torch.SymInt)):
        return value
    if isinstance(value, (bool, Tensor)):
        # (a tensor by its kind alone: a traced one is a FakeTensor, which dynamo cannot print)
        got = "Tensor" if isinstance(value, Tensor) else f"bool {value!r}"
        raise TypeError(f"my_ops.{name}: expected {argument} to be a float{also}, but got {got}")
    return float(value) if isinstance(value, numbers.Real) else value


def reraise_explained(op, tensors, failure: Exception):
    """Raises, from a failed call's except clause, the rules' message for a jagged
    nested tensor among `tensors` (the op's tensor arguments in schema order) where
    nothing implements the op for it; else the failure itself."""
    if isinstance(failure, NotImplementedError):
        name = op.name().split("::")[1].split(".")[0]
        names = [a.name for a in _compat.schema(op).arguments if str(a.type) == "Tensor"]
        for argument, t in zip(names, tensors):
            if isinstance(t, Tensor) and t.is_nested:  # (as _rules.py and op_rules.cpp say it)
                raise RuntimeError(f"my_ops.{name}: expected {argument} to be a dense (strided) tensor, "
                                   "but got a nested tensor") from None
    raise failure
