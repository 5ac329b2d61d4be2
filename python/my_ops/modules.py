"""nn.Module wrappers of the fused ops, drop-in for the usual LLM building blocks."""

from __future__ import annotations

import torch
from torch import Tensor, nn

import my_ops  # the package, for my_ops.triton_rms_norm (set after this module is loaded)

from . import ops

__all__ = ["RMSNorm", "SiluAndMul", "GeluAndMul"]


class RMSNorm(nn.Module):
    """RMSNorm over the last dimension with a learned scale, backed by ``my_ops.rms_norm``
    (impl="cuda", the default: the C and CUDA C kernels) or ``my_ops.triton_rms_norm``
    (impl="triton": the Triton kernels, CUDA tensors only; needs Triton).

    eps=None is the machine epsilon of the dtype the statistics are computed in, as in torch.nn.RMSNorm.

    Mixed precision: the weight may stay float32 while the activations are float16 or bfloat16 (e.g.
    under ``torch.autocast``); impl="cuda" then returns x's dtype and gives the weight a float32
    gradient. The output keeps x's dtype whatever the weight's: no type promotion to float32.
    """

    def __init__(self, hidden_size: int, eps: float | None = 1e-6, *, impl: str = "cuda", device=None,
                 dtype=None) -> None:
        super().__init__()
        if impl not in ("cuda", "triton"):
            raise ValueError(f"my_ops.RMSNorm: expected impl to be 'cuda' or 'triton', but got {impl!r}")
        if impl == "triton" and not my_ops.HAVE_TRITON:
            my_ops.triton_rms_norm(None, None)  # the stand-in: raises its ImportError, naming the fix
        self.eps = eps
        self.impl = impl
        self.weight = nn.Parameter(torch.ones(hidden_size, device=device, dtype=dtype))

    def forward(self, x: Tensor) -> Tensor:
        if self.impl == "triton":
            return my_ops.triton_rms_norm(x, self.weight, self.eps)
        return ops.rms_norm(x, self.weight, self.eps)

    def extra_repr(self) -> str:
        impl = ", impl='triton'" if self.impl == "triton" else ""
        return f"{self.weight.shape[0]}, eps={self.eps}{impl}"


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
