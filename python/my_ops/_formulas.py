"""What the ops' autograd formulas share: their math's dtype, and the gradient of a fused backward op."""

from __future__ import annotations

import torch


def _accumulator(dtype: torch.dtype) -> torch.dtype:
    return torch.float64 if dtype == torch.float64 else torch.float32


def _vjp_formula(math, tensor_args: int):
    """(backward, setup_context), as _runtime._autograd takes them, of a fused backward op (second and higher
    orders): the gradient of `math`, the same backward in differentiable torch ops (its first tensor_args
    arguments tensors)."""

    def setup_context(ctx, inputs, output) -> None:
        ctx.save_for_backward(*inputs[:tensor_args])
        ctx.extra = inputs[tensor_args:]

    def backward(ctx, *grads):
        # (torch.func.vjp: partial derivatives in each saved tensor, which autograd.grad would not give,
        # grad_out leading back to x; differentiable, for higher orders)
        extra = ctx.extra
        outputs, vjp = torch.func.vjp(lambda *tensors: math(*tensors, *extra), *ctx.saved_tensors)
        outputs = outputs if isinstance(outputs, tuple) else (outputs,)
        cotangents = tuple(torch.zeros_like(o) if g is None else g for o, g in zip(outputs, grads))
        result = vjp(cotangents if len(cotangents) > 1 else cotangents[0])
        return (*result, *([None] * len(extra)))

    return backward, setup_context
