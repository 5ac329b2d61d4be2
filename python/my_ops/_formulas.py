"""What the ops' autograd formulas share: their math's dtype, and the gradient of a fused backward op."""

from __future__ import annotations

import torch


def _accumulator(dtype: torch.dtype) -> torch.dtype:
    return torch.float64 if dtype == torch.float64 else torch.float32


def _saved_tensor_hooks_set() -> bool:
    """Whether saved-tensor hooks are set (torch refuses to disable them then: its public test)."""
    try:
        with torch.autograd.graph.disable_saved_tensors_hooks("my_ops: no hooks expected"):
            return False
    except RuntimeError:
        return True


def _vjp_formula(math, tensor_args: int):
    """(backward, setup_context), as _runtime._autograd takes them, of a fused backward op (second and higher
    orders): the gradient of `math`, the same backward in differentiable torch ops (its first tensor_args
    arguments tensors)."""

    def setup_context(ctx, inputs, output) -> None:
        ctx.save_for_backward(*inputs[:tensor_args])
        ctx.extra = inputs[tensor_args:]

    def backward(ctx, *grads):
        # (partial derivatives in each saved tensor, grad_out leading back to x; differentiable, for higher orders)
        extra, nones = ctx.extra, (None,) * len(ctx.extra)

        def outputs_of(*tensors) -> tuple:
            outputs = math(*tensors, *extra)
            return outputs if isinstance(outputs, tuple) else (outputs,)

        def cotangents(outputs) -> tuple:
            return tuple(torch.zeros_like(o) if g is None else g for o, g in zip(outputs, grads))

        if not _saved_tensor_hooks_set():  # (then maybe under torch.func, where autograd.grad gives wrong numbers)
            outputs, vjp = torch.func.vjp(outputs_of, *ctx.saved_tensors)
            return (*vjp(cotangents(outputs)), *nones)
        # (autograd.grad through views: torch.func.vjp refuses to run under saved-tensor hooks, which a
        # non-reentrant checkpoint sets and torch.func's transforms refuse; create_graph where the caller records)
        create_graph = torch.is_grad_enabled()
        with torch.enable_grad():
            tensors = tuple(t.view_as(t) if t.requires_grad else t for t in ctx.saved_tensors)
            outputs = outputs_of(*tensors)
            recorded = [(o, g) for o, g in zip(outputs, cotangents(outputs)) if o.requires_grad]
            wanted = [t for t in tensors if t.requires_grad]
            found = iter(torch.autograd.grad([o for o, _ in recorded], wanted, [g for _, g in recorded],
                                             create_graph=create_graph, allow_unused=True)
                         if recorded else [None] * len(wanted))
        return (*(next(found) if t.requires_grad else None for t in tensors), *nones)

    return backward, setup_context
