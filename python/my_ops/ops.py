"""The Python API of my_ops: one typed function per op, with its fake kernel
(for torch.compile and meta tensors) and its autograd formula registered
beside it. The kernels themselves are registered from C++ (my_ops._C).
"""

from __future__ import annotations

import torch
from torch import Tensor

__all__ = [
    "short_kernel",
    "mul",
    "muladd",
    "add_out",
    "matmul",
    "rms_norm",
    "fused_add_rms_norm",
    "silu_and_mul",
]

_ops = torch.ops.my_ops


# --------------------------------------------------------------- short_kernel
def short_kernel(x: Tensor) -> Tensor:
    """Return ``x * 1.23`` as a new contiguous tensor of x's shape and dtype."""
    return _ops.short_kernel.default(x)


@torch.library.register_fake("my_ops::short_kernel")
def _(x: Tensor) -> Tensor:
    return x.new_empty(x.shape)


def _short_kernel_backward(ctx, grad: Tensor):
    return _ops.short_kernel.default(grad)


torch.library.register_autograd("my_ops::short_kernel", _short_kernel_backward)


# ------------------------------------------------------------------------ mul
def mul(a: Tensor, b: Tensor) -> Tensor:
    """Element-wise ``a * b``; a and b must have the same shape, dtype and device."""
    return _ops.mul.default(a, b)


@torch.library.register_fake("my_ops::mul")
def _(a: Tensor, b: Tensor) -> Tensor:
    torch._check(a.shape == b.shape, lambda: f"my_ops.mul: expected b to have the same shape as a {list(a.shape)}, but got {list(b.shape)}")
    return a.new_empty(a.shape)


def _save_a_b(ctx, inputs, output) -> None:
    a, b = inputs[0], inputs[1]
    ctx.save_for_backward(a if ctx.needs_input_grad[1] else None, b if ctx.needs_input_grad[0] else None)


def _mul_backward(ctx, grad: Tensor):
    a, b = ctx.saved_tensors
    grad_a = _ops.mul.default(grad, b) if ctx.needs_input_grad[0] else None
    grad_b = _ops.mul.default(grad, a) if ctx.needs_input_grad[1] else None
    return grad_a, grad_b


torch.library.register_autograd("my_ops::mul", _mul_backward, setup_context=_save_a_b)


# --------------------------------------------------------------------- muladd
def muladd(a: Tensor, b: Tensor, c: float) -> Tensor:
    """Element-wise ``a * b + c``; a and b must have the same shape, dtype and device."""
    return _ops.muladd.default(a, b, float(c))


@torch.library.register_fake("my_ops::muladd")
def _(a: Tensor, b: Tensor, c: float) -> Tensor:
    torch._check(a.shape == b.shape, lambda: f"my_ops.muladd: expected b to have the same shape as a {list(a.shape)}, but got {list(b.shape)}")
    return a.new_empty(a.shape)


def _muladd_backward(ctx, grad: Tensor):
    grad_a, grad_b = _mul_backward(ctx, grad)
    return grad_a, grad_b, None


torch.library.register_autograd("my_ops::muladd", _muladd_backward, setup_context=_save_a_b)


# -------------------------------------------------------------------- add_out
def add_out(a: Tensor, b: Tensor, out: Tensor) -> Tensor:
    """Write ``a + b`` into ``out`` (same shape, dtype and device) and return ``out``.

    ``out`` may be ``a`` or ``b`` itself. A mutating op: no tensor argument may
    require grad while grad mode is on.
    """
    _ops.add_out.default(a, b, out)
    return out


@torch.library.register_fake("my_ops::add_out")
def _(a: Tensor, b: Tensor, out: Tensor) -> None:
    return None


# --------------------------------------------------------------------- matmul
def matmul(a: Tensor, b: Tensor) -> Tensor:
    """Matrix product of ``a`` [M, K] and ``b`` [K, N] -> [M, N], accumulated in float32
    (float64 for float64 inputs)."""
    return _ops.matmul.default(a, b)


@torch.library.register_fake("my_ops::matmul")
def _(a: Tensor, b: Tensor) -> Tensor:
    torch._check(a.dim() == 2 and b.dim() == 2, lambda: "my_ops.matmul: expected 2-D a [M, K] and b [K, N]")
    torch._check(a.shape[1] == b.shape[0], lambda: f"my_ops.matmul: expected b to have {a.shape[1]} rows, but got {b.shape[0]}")
    return a.new_empty((a.shape[0], b.shape[1]))


def _matmul_backward(ctx, grad: Tensor):
    a, b = ctx.saved_tensors
    grad_a = _ops.matmul.default(grad, b.mT) if ctx.needs_input_grad[0] else None
    grad_b = _ops.matmul.default(a.mT, grad) if ctx.needs_input_grad[1] else None
    return grad_a, grad_b


torch.library.register_autograd("my_ops::matmul", _matmul_backward, setup_context=_save_a_b)


# ------------------------------------------------------------------- rms_norm
def rms_norm(x: Tensor, weight: Tensor, eps: float = 1e-6) -> Tensor:
    """RMSNorm over the last dimension: ``x / sqrt(mean(x**2, -1) + eps) * weight``.

    x is [..., hidden], weight is [hidden]. Statistics are computed in float32
    (float64 for float64 inputs). Differentiable in x and weight.
    """
    return _ops.rms_norm.default(x, weight, float(eps))


@torch.library.register_fake("my_ops::rms_norm")
def _(x: Tensor, weight: Tensor, eps: float) -> Tensor:
    return x.new_empty(x.shape)


@torch.library.register_fake("my_ops::rms_norm_backward")
def _(grad_out: Tensor, x: Tensor, weight: Tensor, eps: float) -> tuple[Tensor, Tensor]:
    return x.new_empty(x.shape), weight.new_empty(weight.shape)


def _rms_norm_setup(ctx, inputs, output) -> None:
    x, weight, eps = inputs
    ctx.save_for_backward(x, weight)
    ctx.eps = eps


def _rms_norm_backward(ctx, grad: Tensor):
    x, weight = ctx.saved_tensors
    grad_x, grad_weight = _ops.rms_norm_backward.default(grad, x, weight, ctx.eps)
    return (
        grad_x if ctx.needs_input_grad[0] else None,
        grad_weight if ctx.needs_input_grad[1] else None,
        None,
    )


torch.library.register_autograd("my_ops::rms_norm", _rms_norm_backward, setup_context=_rms_norm_setup)


# --------------------------------------------------------- fused_add_rms_norm
def fused_add_rms_norm(x: Tensor, residual: Tensor, weight: Tensor, eps: float = 1e-6) -> None:
    """In place: ``residual += x`` then ``x = rms_norm(residual, weight, eps)``.

    The residual-stream update of a pre-norm transformer block in one pass.
    x and residual must have the same shape and must not share memory. A
    mutating op: no tensor argument may require grad while grad mode is on.
    """
    _ops.fused_add_rms_norm.default(x, residual, weight, float(eps))


@torch.library.register_fake("my_ops::fused_add_rms_norm")
def _(x: Tensor, residual: Tensor, weight: Tensor, eps: float) -> None:
    return None


# --------------------------------------------------------------- silu_and_mul
def silu_and_mul(x: Tensor) -> Tensor:
    """SwiGLU gate: for x [..., 2 * d], return ``silu(x[..., :d]) * x[..., d:]`` [..., d]."""
    return _ops.silu_and_mul.default(x)


@torch.library.register_fake("my_ops::silu_and_mul")
def _(x: Tensor) -> Tensor:
    torch._check(x.dim() >= 1 and x.shape[-1] % 2 == 0, lambda: f"my_ops.silu_and_mul: expected the last dimension of x to be even, but got {list(x.shape)}")
    return x.new_empty((*x.shape[:-1], x.shape[-1] // 2))


@torch.library.register_fake("my_ops::silu_and_mul_backward")
def _(grad_out: Tensor, x: Tensor) -> Tensor:
    return x.new_empty(x.shape)


def _silu_and_mul_setup(ctx, inputs, output) -> None:
    ctx.save_for_backward(inputs[0])


def _silu_and_mul_backward(ctx, grad: Tensor):
    (x,) = ctx.saved_tensors
    return _ops.silu_and_mul_backward.default(grad, x)


torch.library.register_autograd("my_ops::silu_and_mul", _silu_and_mul_backward, setup_context=_silu_and_mul_setup)
