"""Pieces the ops' autograd formulas share: the dtype their math runs in,
and the gradient of a fused backward op (second and higher orders).
"""

from __future__ import annotations

import torch


def _accumulator(dtype: torch.dtype) -> torch.dtype:
    return torch.float64 if dtype == torch.float64 else torch.float32


def _vjp_formula(math, tensor_args: int):
    """(setup_context, backward) of a fused backward op, for second and higher
    order gradients: the gradient of `math` (the same backward, written in
    differentiable torch ops; its first tensor_args arguments are tensors)."""

    def setup_context(ctx, inputs, output) -> None:
        ctx.save_for_backward(*inputs[:tensor_args])
        ctx.extra = inputs[tensor_args:]

    def backward(ctx, *grads):
        # Partial derivatives in each saved tensor (torch.func.vjp treats them as
        # independent, which autograd.grad would not: grad_out's own history
        # leads back to x). Its result stays differentiable for the outer
        # autograd, so third and higher orders work too.
        extra = ctx.extra
        outputs, vjp = torch.func.vjp(lambda *tensors: math(*tensors, *extra), *ctx.saved_tensors)
        outputs = outputs if isinstance(outputs, tuple) else (outputs,)
        cotangents = tuple(torch.zeros_like(o) if g is None else g for o, g in zip(outputs, grads))
        result = vjp(cotangents if len(cotangents) > 1 else cotangents[0])
        return (*result, *([None] * len(extra)))

    return setup_context, backward
