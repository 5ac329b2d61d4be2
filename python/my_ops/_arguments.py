"""The Python API's scalar arguments, which the dispatcher would convert silently.

Through torch.ops, the dispatcher turns what it can into the schema's type
before any my_ops code runs: True into 1 (an `int`) or 1.0 (a `float`), a
one-element tensor into its value. The API refuses a bool (a flag passed
where a number belongs is a mistake, not a 1) with a RuntimeError, the class
the dispatcher's own refusals (a str, None, a complex) have, so that one
`except RuntimeError` holds on every road. A tensor is passed on, for the
dispatcher to convert or refuse exactly as through torch.ops.
"""

from __future__ import annotations

import numbers

import torch
from torch import Tensor


def _refuse_bool(name: str, argument: str, value, kind: str, also: str) -> None:
    if isinstance(value, bool):
        raise RuntimeError(f"my_ops.{name}: expected {argument} to be {kind}{also}, but got bool {value!r}")


def float_argument(name: str, argument: str, value, also: str = ""):
    """A real number (NumPy's included) as a float; a bool refused; anything
    else (a tensor, None, a str, a complex) passed on to the dispatcher, which
    converts or refuses it as through torch.ops."""
    if type(value) is float or isinstance(value, (torch.SymFloat, torch.SymInt, Tensor)):
        return value
    _refuse_bool(name, argument, value, "a float", also)
    return float(value) if isinstance(value, numbers.Real) else value


def int_argument(name: str, argument: str, value, also: str = ""):
    """An integer (NumPy's included) as an int; a bool refused; anything else
    (a tensor, a float, None, a str) passed on to the dispatcher, which
    converts or refuses it as through torch.ops. (No op takes an int yet: the
    API of the first one that does reads it through here.)"""
    if type(value) is int or isinstance(value, (torch.SymInt, Tensor)):
        return value
    _refuse_bool(name, argument, value, "an int", also)
    return int(value) if isinstance(value, numbers.Integral) else value
