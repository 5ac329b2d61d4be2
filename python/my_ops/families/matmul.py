"""The matmul family (src/binding/matmul.cpp): matmul. Its float64 reference
is a one-liner in its test spec (tests/ops/specs/matmul.py).
"""

from __future__ import annotations

import torch
from torch import Tensor

from .. import _rules
from .._autocast import register_lower_precision
from .._runtime import _autograd, _lib, _ops
from .._vmap import register_batching

__all__ = ["matmul"]


def matmul(a: Tensor, b: Tensor) -> Tensor:
    """Matrix product of ``a`` [M, K] and ``b`` [K, N] -> [M, N], accumulated in float32
    (float64 for float64 inputs).

    Under ``torch.autocast`` it runs in the region's dtype, as torch.matmul:
    float32 (and float16/bfloat16) operands on the region's device are cast to
    it first; float64 operands are not cast."""
    return _ops.matmul.default(a, b)


@torch.library.register_fake("my_ops::matmul")
def _(a: Tensor, b: Tensor) -> Tensor:
    _rules.check("matmul", a, b)
    return a.new_empty((a.shape[0], b.shape[1]))


def _save_a_b(ctx, inputs, output) -> None:
    # (as elementwise's mul: each factor is needed only for the other's gradient)
    a, b = inputs[0], inputs[1]
    ctx.save_for_backward(a if ctx.needs_input_grad[1] else None, b if ctx.needs_input_grad[0] else None)


def _matmul_backward(ctx, grad: Tensor):
    a, b = ctx.saved_tensors
    grad_a = matmul(grad, b.mT) if ctx.needs_input_grad[0] else None
    grad_b = matmul(a.mT, grad) if ctx.needs_input_grad[1] else None
    return grad_a, grad_b


_autograd("matmul", _matmul_backward, setup_context=_save_a_b)
register_batching(_lib, "matmul")  # 2-D operands: once per sample
register_lower_precision(_lib, "matmul")  # torch.autocast, for calls through torch.ops
