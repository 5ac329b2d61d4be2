"""nn.Module wrappers of the fused ops, drop-in for the usual LLM building blocks."""

from __future__ import annotations

import torch
from torch import Tensor, nn

from . import ops

__all__ = ["RMSNorm", "SiluAndMul", "GeluAndMul"]


class RMSNorm(nn.Module):
    """RMSNorm over the last dimension with a learned scale, backed by ``my_ops.rms_norm``.

    eps=None is the machine epsilon of the dtype the statistics are computed in, as in torch.nn.RMSNorm.
    """

    def __init__(self, hidden_size: int, eps: float | None = 1e-6, *, device=None, dtype=None) -> None:
        super().__init__()
        self.eps = eps
        self.weight = nn.Parameter(torch.ones(hidden_size, device=device, dtype=dtype))

    def forward(self, x: Tensor) -> Tensor:
        return ops.rms_norm(x, self.weight, self.eps)

    def extra_repr(self) -> str:
        return f"{self.weight.shape[0]}, eps={self.eps}"


class SiluAndMul(nn.Module):
    """SwiGLU gate: [..., 2 * d] -> silu(first half) * second half, backed by ``my_ops.silu_and_mul``."""

    def forward(self, x: Tensor) -> Tensor:
        return ops.silu_and_mul(x)


class GeluAndMul(nn.Module):
    """GeGLU gate: [..., 2 * d] -> gelu(first half) * second half, backed by ``my_ops.gelu_and_mul``.

    ``approximate`` is ``"none"`` or ``"tanh"``, as in ``torch.nn.GELU`` (the op checks it).
    """

    def __init__(self, approximate: str = "none") -> None:
        super().__init__()
        self.approximate = approximate

    def forward(self, x: Tensor) -> Tensor:
        return ops.gelu_and_mul(x, self.approximate)

    def extra_repr(self) -> str:
        return f"approximate={self.approximate!r}"
