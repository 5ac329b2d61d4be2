"""Float64 references of the ops, in plain torch: what the tests compare every
kernel against, and what the benchmarks check each implementation against
before timing it. One definition per op; each returns float64 tensors and is
differentiable (the tests take reference gradients through it).
"""

from __future__ import annotations

import torch
import torch.nn.functional as F
from torch import Tensor

__all__ = ["rms_norm", "fused_add_rms_norm", "silu_and_mul", "gelu_and_mul"]


def rms_norm(x: Tensor, weight: Tensor, eps: float) -> Tensor:
    x64 = x.double()
    return x64 * torch.rsqrt(x64.pow(2).mean(-1, keepdim=True) + eps) * weight.double()


def fused_add_rms_norm(x: Tensor, residual: Tensor, weight: Tensor, eps: float) -> tuple[Tensor, Tensor]:
    """(new x, new residual): the residual stream holds x's dtype, so the sum is rounded to it first."""
    new_residual = (x + residual).double()
    return rms_norm(new_residual, weight, eps), new_residual


def silu_and_mul(x: Tensor) -> Tensor:
    gate, up = x.double().chunk(2, dim=-1)
    return F.silu(gate) * up


def gelu_and_mul(x: Tensor, approximate: str = "none") -> Tensor:
    gate, up = x.double().chunk(2, dim=-1)
    return F.gelu(gate, approximate=approximate) * up
