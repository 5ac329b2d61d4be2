"""The elementwise family (src/binding/elementwise.cpp): short_kernel, mul,
muladd, and add_out, which writes its result in place (and its functional
form, which exported programs call instead). Their float64 references are
one-liners in their test specs (tests/ops/specs/elementwise.py).
"""

from __future__ import annotations

import torch
from torch import Tensor

from .. import _rules
from .._arguments import float_argument as _float
from .._mutating import _mutating_op, op_for_api
from .._runtime import _autograd, _lib, _ops
from .._vmap import register_batching

__all__ = ["short_kernel", "mul", "muladd", "add_out"]


# --------------------------------------------------------------- short_kernel
def short_kernel(x: Tensor) -> Tensor:
    """Return ``x * 1.23`` as a new contiguous tensor of x's shape and dtype."""
    return _ops.short_kernel.default(x)


@torch.library.register_fake("my_ops::short_kernel")
def _(x: Tensor) -> Tensor:
    _rules.check("short_kernel", x)
    return x.new_empty(x.shape)


def _short_kernel_backward(ctx, grad: Tensor):
    return short_kernel(grad)


_autograd("short_kernel", _short_kernel_backward)
register_batching(_lib, "short_kernel", rows=(0,))  # (elementwise: every tensor is rows)


# ------------------------------------------------------------------------ mul
def mul(a: Tensor, b: Tensor) -> Tensor:
    """Element-wise ``a * b``; a and b must have the same shape, dtype and device."""
    return _ops.mul.default(a, b)


@torch.library.register_fake("my_ops::mul")
def _(a: Tensor, b: Tensor) -> Tensor:
    _rules.check("mul", a, b)
    return a.new_empty(a.shape)


def _save_a_b(ctx, inputs, output) -> None:
    a, b = inputs[0], inputs[1]
    ctx.save_for_backward(a if ctx.needs_input_grad[1] else None, b if ctx.needs_input_grad[0] else None)


def _mul_backward(ctx, grad: Tensor):
    a, b = ctx.saved_tensors
    grad_a = mul(grad, b) if ctx.needs_input_grad[0] else None
    grad_b = mul(grad, a) if ctx.needs_input_grad[1] else None
    return grad_a, grad_b


_autograd("mul", _mul_backward, setup_context=_save_a_b)
register_batching(_lib, "mul", rows=(0, 1))


# --------------------------------------------------------------------- muladd
def muladd(a: Tensor, b: Tensor, c: float) -> Tensor:
    """Element-wise ``a * b + c``; a and b must have the same shape, dtype and device."""
    return _ops.muladd.default(a, b, _float("muladd", "c", c))


@torch.library.register_fake("my_ops::muladd")
def _(a: Tensor, b: Tensor, c: float) -> Tensor:
    _rules.check("muladd", a, b, c)
    return a.new_empty(a.shape)


def _muladd_backward(ctx, grad: Tensor):
    grad_a, grad_b = _mul_backward(ctx, grad)
    return grad_a, grad_b, None


_autograd("muladd", _muladd_backward, setup_context=_save_a_b)
register_batching(_lib, "muladd", rows=(0, 1))


# -------------------------------------------------------------------- add_out
def add_out(a: Tensor, b: Tensor, out: Tensor) -> Tensor:
    """Write ``a + b`` into ``out`` (same shape, dtype and device) and return ``out``.

    ``out`` may be ``a`` or ``b`` itself. A mutating op: no tensor argument may
    require grad while grad mode is on.
    """
    _add_out(a, b, out)
    return out


@torch.library.register_fake("my_ops::add_out")
def _(a: Tensor, b: Tensor, out: Tensor) -> None:
    _rules.check("add_out", a, b, out)


_mutating_op("add_out")
_add_out = op_for_api("add_out")
register_batching(_lib, "add_out", rows=(0, 1, 2))


@torch.library.register_fake("my_ops::add_out_functional")
def _(a: Tensor, b: Tensor, out: Tensor) -> Tensor:
    _rules.check("add_out_functional", a, b, out)
    return a.new_empty(a.shape)


_mutating_op("add_out_functional")  # (an inference op, as add_out: its requires-grad refusal)
register_batching(_lib, "add_out_functional", rows=(0, 1, 2))
