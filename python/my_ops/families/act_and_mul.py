"""The act_and_mul family (src/binding/act_and_mul.cpp): the gated units
silu_and_mul and gelu_and_mul and their fused backward ops, their float64
references and nn.Modules.
"""

from __future__ import annotations

import torch
import torch.nn.functional as F
from torch import Tensor, nn

from .. import _rules
from .._formulas import _accumulator, _vjp_formula
from .._runtime import _autograd, _lib, _ops
from .._vmap import register_batching

__all__ = ["silu_and_mul", "gelu_and_mul", "SiluAndMul", "GeluAndMul"]


# ------------------------------------------------ silu_and_mul, gelu_and_mul
# Gated units: out = act(x[..., :d]) * x[..., d:]. One kernel family in C and
# CUDA, parametrised by the activation; here one registration helper, fed
# with each activation's derivative in torch ops (for double backward).
def silu_and_mul(x: Tensor) -> Tensor:
    """SwiGLU gate: for x [..., 2 * d], return ``silu(x[..., :d]) * x[..., d:]`` [..., d]."""
    return _ops.silu_and_mul.default(x)


def gelu_and_mul(x: Tensor, approximate: str = "none") -> Tensor:
    """GeGLU gate: for x [..., 2 * d], return ``gelu(x[..., :d]) * x[..., d:]`` [..., d].

    ``approximate`` is ``"none"`` (erf) or ``"tanh"``, as in ``torch.nn.functional.gelu``.
    """
    return _ops.gelu_and_mul.default(x, approximate)


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

    _autograd(f"{name}_backward", *_vjp_formula(backward_math, tensor_args=2))
    register_batching(_lib, f"{name}_backward", rows=(0, 1))

    def setup_context(ctx, inputs, output) -> None:
        ctx.save_for_backward(inputs[0])
        ctx.extra = inputs[1:]

    def backward(ctx, grad: Tensor):
        (x,) = ctx.saved_tensors
        return (backward_op(grad, x, *ctx.extra), *([None] * len(ctx.extra)))

    _autograd(name, backward, setup_context=setup_context)
    register_batching(_lib, name, rows=(0,))


def _gelu(gate: Tensor, approximate: str) -> Tensor:
    return F.gelu(gate, approximate=approximate)


# The family's table: each gated unit's activation and derivative in torch ops
# (the kernels' own are src/kernels/activations_impl.h), from which its fake
# kernels, autograd and float64 reference are made.
UNITS = {
    "silu_and_mul": (F.silu, _silu_grad),
    "gelu_and_mul": (_gelu, _gelu_grad),
}
for _name, (_activation, _activation_grad) in UNITS.items():
    _gated_unit(_name, _activation, _activation_grad)


def _reference(activation):
    def reference(x: Tensor, *extra) -> Tensor:
        gate, up = x.double().chunk(2, dim=-1)
        return activation(gate, *extra) * up
    return reference


def silu_and_mul_ref(x: Tensor) -> Tensor:
    return _reference(F.silu)(x)


def gelu_and_mul_ref(x: Tensor, approximate: str = "none") -> Tensor:
    return _reference(_gelu)(x, approximate)


# ------------------------------------------------------------------ nn.Modules
class SiluAndMul(nn.Module):
    """SwiGLU gate: [..., 2 * d] -> silu(first half) * second half, backed by ``my_ops.silu_and_mul``."""

    def forward(self, x: Tensor) -> Tensor:
        return silu_and_mul(x)


class GeluAndMul(nn.Module):
    """GeGLU gate: [..., 2 * d] -> gelu(first half) * second half, backed by ``my_ops.gelu_and_mul``.

    ``approximate`` is ``"none"`` or ``"tanh"``, as in ``torch.nn.GELU`` (the op checks it).
    """

    def __init__(self, approximate: str = "none") -> None:
        super().__init__()
        self.approximate = approximate

    def forward(self, x: Tensor) -> Tensor:
        return gelu_and_mul(x, self.approximate)

    def extra_repr(self) -> str:
        return f"approximate={self.approximate!r}"


# my_ops.reference.<op>, as families.references() gathers them
REFERENCES = (silu_and_mul_ref, gelu_and_mul_ref)
