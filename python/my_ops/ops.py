"""The Python API of my_ops: one typed function per op, with its fake kernel
(for torch.compile and meta tensors) and its autograd formula registered
beside it, on the runtime of _runtime.py and _mutating.py. The kernels
themselves are registered from C++ (libmy_ops, loaded by my_ops._C); the fake
kernels check the same argument rules (_rules.py).
"""

from __future__ import annotations

import torch
from torch import Tensor

from . import _rules
from ._mutating import _MUTATE, _mutating_op, _refuse_inference_writes
from ._runtime import _accumulator, _autograd, _call, _differentiable_backward, _float, _ops

__all__ = [
    "short_kernel",
    "mul",
    "muladd",
    "add_out",
    "matmul",
    "rms_norm",
    "fused_add_rms_norm",
    "silu_and_mul",
    "gelu_and_mul",
]


def _eps(name: str, x: Tensor, eps):
    """eps, or for None the machine epsilon of the dtype the statistics are
    computed in (float32; float64 for float64), as torch.nn.functional.rms_norm."""
    if eps is None:
        return torch.finfo(_accumulator(x.dtype)).eps
    return _float(name, "eps", eps, " (or None for the machine epsilon)")


# --------------------------------------------------------------- short_kernel
def short_kernel(x: Tensor) -> Tensor:
    """Return ``x * 1.23`` as a new contiguous tensor of x's shape and dtype."""
    return _call(_ops.short_kernel.default, (x,), x)


@torch.library.register_fake("my_ops::short_kernel")
def _(x: Tensor) -> Tensor:
    _rules.check("short_kernel", x)
    return x.new_empty(x.shape)


def _short_kernel_backward(ctx, grad: Tensor):
    return short_kernel(grad)


_autograd("short_kernel", _short_kernel_backward)


# ------------------------------------------------------------------------ mul
def mul(a: Tensor, b: Tensor) -> Tensor:
    """Element-wise ``a * b``; a and b must have the same shape, dtype and device."""
    return _call(_ops.mul.default, (a, b), a, b)


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


# --------------------------------------------------------------------- muladd
def muladd(a: Tensor, b: Tensor, c: float) -> Tensor:
    """Element-wise ``a * b + c``; a and b must have the same shape, dtype and device."""
    return _call(_ops.muladd.default, (a, b), a, b, _float("muladd", "c", c))


@torch.library.register_fake("my_ops::muladd")
def _(a: Tensor, b: Tensor, c: float) -> Tensor:
    _rules.check("muladd", a, b, c)
    return a.new_empty(a.shape)


def _muladd_backward(ctx, grad: Tensor):
    grad_a, grad_b = _mul_backward(ctx, grad)
    return grad_a, grad_b, None


_autograd("muladd", _muladd_backward, setup_context=_save_a_b)


# -------------------------------------------------------------------- add_out
def add_out(a: Tensor, b: Tensor, out: Tensor) -> Tensor:
    """Write ``a + b`` into ``out`` (same shape, dtype and device) and return ``out``.

    ``out`` may be ``a`` or ``b`` itself. A mutating op: no tensor argument may
    require grad while grad mode is on.
    """
    _refuse_inference_writes("add_out", out=out)
    _MUTATE[_ops.add_out.default](a, b, out)
    return out


@torch.library.register_fake("my_ops::add_out")
def _(a: Tensor, b: Tensor, out: Tensor) -> None:
    _rules.check("add_out", a, b, out)


_mutating_op("add_out")


# --------------------------------------------------------------------- matmul
def matmul(a: Tensor, b: Tensor) -> Tensor:
    """Matrix product of ``a`` [M, K] and ``b`` [K, N] -> [M, N], accumulated in float32
    (float64 for float64 inputs)."""
    return _call(_ops.matmul.default, (a, b), a, b)


@torch.library.register_fake("my_ops::matmul")
def _(a: Tensor, b: Tensor) -> Tensor:
    _rules.check("matmul", a, b)
    return a.new_empty((a.shape[0], b.shape[1]))


def _matmul_backward(ctx, grad: Tensor):
    a, b = ctx.saved_tensors
    grad_a = matmul(grad, b.mT) if ctx.needs_input_grad[0] else None
    grad_b = matmul(a.mT, grad) if ctx.needs_input_grad[1] else None
    return grad_a, grad_b


_autograd("matmul", _matmul_backward, setup_context=_save_a_b)


# ------------------------------------------------------------------- rms_norm
def rms_norm(x: Tensor, weight: Tensor, eps: float | None = 1e-6) -> Tensor:
    """RMSNorm over the last dimension: ``x / sqrt(mean(x**2, -1) + eps) * weight``.

    x is [..., hidden], weight is [hidden]. Statistics are computed in float32
    (float64 for float64 inputs). eps=None is the machine epsilon of that
    dtype, as in torch.nn.functional.rms_norm. Differentiable in x and weight.

    weight has x's dtype or a wider float dtype: a float32 (or float64)
    weight beside float16/bfloat16 x, as mixed-precision training keeps its
    parameters (e.g. under torch.autocast), or a float64 weight beside float32
    x. It is used unrounded in the float32 arithmetic. The output always has
    x's dtype (no type promotion to the weight's), and the weight's gradient
    the weight's dtype.
    """
    return _call(_ops.rms_norm.default, (x, weight), x, weight, _eps("rms_norm", x, eps))


@torch.library.register_fake("my_ops::rms_norm")
def _(x: Tensor, weight: Tensor, eps: float) -> Tensor:
    _rules.check("rms_norm", x, weight, eps)
    return x.new_empty(x.shape)


@torch.library.register_fake("my_ops::rms_norm_backward")
def _(grad_out: Tensor, x: Tensor, weight: Tensor, eps: float) -> tuple[Tensor, Tensor]:
    _rules.check("rms_norm_backward", grad_out, x, weight, eps)
    return x.new_empty(x.shape), weight.new_empty(weight.shape)


def _rms_norm_backward_math(grad_out: Tensor, x: Tensor, weight: Tensor, eps: float):
    """rms_norm_backward in differentiable torch ops (float32 math, float64 for float64)."""
    acc = _accumulator(x.dtype)
    xf, gf, wf = x.to(acc), grad_out.to(acc), weight.to(acc)
    rstd = torch.rsqrt(xf.pow(2).mean(-1, keepdim=True) + eps)
    xhat = xf * rstd
    g_xhat = gf * wf
    grad_x = rstd * (g_xhat - xhat * (g_xhat * xhat).mean(-1, keepdim=True))
    grad_weight = (gf * xhat).reshape(-1, x.shape[-1]).sum(0)
    return grad_x.to(x.dtype), grad_weight.to(weight.dtype)


_differentiable_backward("rms_norm_backward", _rms_norm_backward_math, tensor_args=3)


def _rms_norm_setup(ctx, inputs, output) -> None:
    x, weight, eps = inputs
    ctx.save_for_backward(x, weight)
    ctx.eps = eps


def _rms_norm_backward(ctx, grad: Tensor):
    x, weight = ctx.saved_tensors
    grad_x, grad_weight = _call(_ops.rms_norm_backward.default, (grad, x, weight), grad, x, weight, ctx.eps)
    return (
        grad_x if ctx.needs_input_grad[0] else None,
        grad_weight if ctx.needs_input_grad[1] else None,
        None,
    )


_autograd("rms_norm", _rms_norm_backward, setup_context=_rms_norm_setup)


# --------------------------------------------------------- fused_add_rms_norm
def fused_add_rms_norm(x: Tensor, residual: Tensor, weight: Tensor, eps: float | None = 1e-6) -> None:
    """In place: ``residual += x`` then ``x = rms_norm(residual, weight, eps)``.

    The residual-stream update of a pre-norm transformer block in one pass.
    x and residual must have the same shape and must not share memory; both
    keep their dtype. weight may be wider than them, as in ``rms_norm``. A
    mutating op: no tensor argument may require grad while grad mode is on.
    """
    _refuse_inference_writes("fused_add_rms_norm", x=x, residual=residual)
    _MUTATE[_ops.fused_add_rms_norm.default](x, residual, weight, _eps("fused_add_rms_norm", x, eps))


@torch.library.register_fake("my_ops::fused_add_rms_norm")
def _(x: Tensor, residual: Tensor, weight: Tensor, eps: float) -> None:
    _rules.check("fused_add_rms_norm", x, residual, weight, eps)


_mutating_op("fused_add_rms_norm")


# ------------------------------------------------ silu_and_mul, gelu_and_mul
# Gated units: out = act(x[..., :d]) * x[..., d:]. One kernel family in C and
# CUDA, parametrised by the activation; here one registration helper, fed
# with each activation's derivative in torch ops (for double backward).
def silu_and_mul(x: Tensor) -> Tensor:
    """SwiGLU gate: for x [..., 2 * d], return ``silu(x[..., :d]) * x[..., d:]`` [..., d]."""
    return _call(_ops.silu_and_mul.default, (x,), x)


def gelu_and_mul(x: Tensor, approximate: str = "none") -> Tensor:
    """GeGLU gate: for x [..., 2 * d], return ``gelu(x[..., :d]) * x[..., d:]`` [..., d].

    ``approximate`` is ``"none"`` (erf) or ``"tanh"``, as in ``torch.nn.functional.gelu``.
    """
    return _call(_ops.gelu_and_mul.default, (x,), x, approximate)


def _silu_grad(gate: Tensor) -> Tensor:
    s = torch.sigmoid(gate)
    return s * (1 + gate * (1 - s))


def _gelu_grad(gate: Tensor, approximate: str) -> Tensor:
    if approximate == "tanh":
        k = (2 / torch.pi) ** 0.5
        t = torch.tanh(k * (gate + 0.044715 * gate**3))
        return 0.5 * (1 + t) + 0.5 * gate * (1 - t * t) * k * (1 + 3 * 0.044715 * gate**2)
    return 0.5 * (1 + torch.erf(gate * 0.5**0.5)) + gate * torch.exp(-0.5 * gate * gate) / (2 * torch.pi) ** 0.5


def _gated_unit(name: str, activation, activation_grad) -> None:
    """Fake kernels and autograd of <name> and <name>_backward. activation(gate,
    *extra) and activation_grad(gate, *extra) are the activation and its
    derivative in differentiable torch ops; extra are the op's non-tensor
    arguments (gelu's `approximate`)."""
    backward_op = getattr(_ops, f"{name}_backward").default

    def fake(x: Tensor, *extra) -> Tensor:
        _rules.check(name, x, *extra)
        return x.new_empty((*x.shape[:-1], x.shape[-1] // 2))

    def fake_backward(grad_out: Tensor, x: Tensor, *extra) -> Tensor:
        _rules.check(f"{name}_backward", grad_out, x, *extra)
        return x.new_empty(x.shape)

    torch.library.register_fake(f"my_ops::{name}", fake)
    torch.library.register_fake(f"my_ops::{name}_backward", fake_backward)

    def backward_math(grad_out: Tensor, x: Tensor, *extra) -> Tensor:
        """The backward op in differentiable torch ops (float32 math, float64 for float64)."""
        acc = _accumulator(x.dtype)
        gate, up = x.to(acc).chunk(2, dim=-1)
        g = grad_out.to(acc)
        grad_gate = g * up * activation_grad(gate, *extra)
        grad_up = g * activation(gate, *extra)
        return torch.cat([grad_gate, grad_up], dim=-1).to(x.dtype)

    _differentiable_backward(f"{name}_backward", backward_math, tensor_args=2)

    def setup_context(ctx, inputs, output) -> None:
        ctx.save_for_backward(inputs[0])
        ctx.extra = inputs[1:]

    def backward(ctx, grad: Tensor):
        (x,) = ctx.saved_tensors
        return (_call(backward_op, (grad, x), grad, x, *ctx.extra), *([None] * len(ctx.extra)))

    _autograd(name, backward, setup_context=setup_context)


_gated_unit("silu_and_mul", torch.nn.functional.silu, _silu_grad)
_gated_unit("gelu_and_mul", lambda gate, approximate: torch.nn.functional.gelu(gate, approximate=approximate),
            _gelu_grad)
