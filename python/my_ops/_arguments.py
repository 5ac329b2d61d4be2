"""The Python API's float arguments, which the dispatcher would convert silently.

Through torch.ops, the dispatcher turns what it can into the schema's type before any my_ops code runs: True
(NumPy's too) into 1.0, a one-element tensor into its value. The API refuses a bool (a flag passed where a
number belongs is a mistake, not a 1), and a number too large for a float (Python's OverflowError names
neither the op nor the argument), with a RuntimeError, the class the dispatcher's own refusals (a str, None,
a complex, such a number) have, so that one `except RuntimeError` holds on every road. A tensor is passed
on, for the dispatcher to convert or refuse exactly as through torch.ops.
"""

from __future__ import annotations

import decimal
import math
import numbers

import torch
from torch import Tensor

_NUMPY_BOOLS = (("numpy", "bool"), ("numpy", "bool_"))  # (numpy.bool_'s module and name: NumPy 2, NumPy 1)


def float_argument(name: str, argument: str, value, also: str = ""):
    """A real number (NumPy's and a Decimal included) as a float; a bool (NumPy's too, known by its type's
    module and name: NumPy is not imported here) or a number too large for a float refused; anything else (a
    tensor, None, a str, a complex) passed on to the dispatcher, which converts or refuses it as torch.ops."""
    if type(value) is float or isinstance(value, (torch.SymFloat, torch.SymInt, Tensor)):
        return value
    expected = f"my_ops.{name}: expected {argument} to be a float{also}, but got"
    if isinstance(value, bool) or (type(value).__module__, type(value).__name__) in _NUMPY_BOOLS:
        raise RuntimeError(f"{expected} bool {bool(value)!r}")
    if not isinstance(value, (numbers.Real, decimal.Decimal)):
        return value
    try:
        converted = float(value)
    except OverflowError:
        converted = math.inf
    if math.isinf(converted) and value != converted:  # (finite, past a float: NumPy's longdouble, a Decimal)
        raise RuntimeError(f"{expected} {type(value).__name__} too large to convert to float")
    return converted
