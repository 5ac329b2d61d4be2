"""torch.func.vmap rules of the ops (torch.library.register_vmap), so vmap
runs them batched, without PyTorch's per-sample fallback (and its
performance warning), and runs the mutating ops, which that fallback refuses.

An op's family declares, beside the op, which tensor arguments are rows: the
op works on their last dimension, whatever their leading dimensions, and
its outputs keep those leading dimensions (x of rms_norm, both operands of
mul). When only rows are batched, the batch becomes one more leading
dimension and the op runs once; rows a call leaves unbatched are broadcast
over the batch. When another tensor argument is batched (rms_norm's weight),
or for an op without rows (matmul, or an output that sums over rows as
rms_norm_backward's weight gradient), the op runs once per sample, on views,
and the outputs are stacked.

The mutating ops write the batched tensors in place, as PyTorch's in-place
ops do under vmap; a written argument that is not batched while others are
is refused, as PyTorch refuses it (each sample would write the same tensor).
"""

from __future__ import annotations

import torch
from torch import Tensor

from . import _rules, _torch_compat


def _batch_size(args, in_dims) -> int:
    return next(a.shape[d] for a, d in zip(args, in_dims) if d is not None)


def _refuse_unbatched_writes(name: str, arguments, args, in_dims, written) -> None:
    for i in written:
        if in_dims[i] is None and isinstance(args[i], Tensor):
            raise RuntimeError(
                f"my_ops.{name}: under vmap, argument '{arguments[i].name}' is written in place but is not "
                "batched while other arguments are; every sample would write the same tensor (PyTorch "
                f"refuses this for its in-place ops too): batch '{arguments[i].name}' as well")


def register_batching(lib: torch.library.Library, name: str, rows: tuple[int, ...] = ()) -> None:
    """The vmap rule of my_ops::<name>, whose tensor arguments at positions
    `rows` are rows (see above); rows=() runs the op once per sample."""
    op = getattr(torch.ops.my_ops, name).default
    arguments = _torch_compat.schema(op).arguments
    written = tuple(i for i, a in enumerate(arguments) if a.alias_info is not None and a.alias_info.is_write)
    mutating = bool(written)
    checked = name in _rules.op_names()  # (the Triton ops check their arguments in their own body)
    tensors = [i for i, a in enumerate(arguments) if str(a.type) == "Tensor"]

    def sample(args, in_dims, i):
        return [a.select(d, i) if d is not None else a for a, d in zip(args, in_dims)]

    def per_sample(args, in_dims):
        size = _batch_size(args, in_dims)
        if mutating:
            # each call sees its sample alone: whether samples overlap (an
            # expanded x, x and residual views of one buffer) is asked here
            if checked:
                _rules.check_memory(name, *[a.movedim(d, 0) if d is not None else a
                                            for a, d in zip(args, in_dims)])
            results = [op(*sample(args, in_dims, i)) for i in range(size)]
            if not results or results[0] is None:  # (an op that writes and returns nothing)
                return None, None
            if isinstance(results[0], tuple):
                return tuple(torch.stack(out) for out in zip(*results)), (0,) * len(results[0])
            return torch.stack(results), 0
        if size == 0:  # the outputs' shapes from a sample of zeros
            one = op(*[a.new_zeros(a.shape[:d] + a.shape[d + 1:]) if d is not None else a
                       for a, d in zip(args, in_dims)])
            outs = one if isinstance(one, tuple) else (one,)
            empty = tuple(o.new_empty((0, *o.shape)) for o in outs)
            return (empty, (0,) * len(empty)) if isinstance(one, tuple) else (empty[0], 0)
        results = [op(*sample(args, in_dims, i)) for i in range(size)]
        if isinstance(results[0], tuple):
            return tuple(torch.stack(out) for out in zip(*results)), (0,) * len(results[0])
        return torch.stack(results), 0

    def rule(info, in_dims, *args):
        in_dims = tuple(in_dims) + (None,) * (len(args) - len(in_dims))
        _refuse_unbatched_writes(name, arguments, args, in_dims, written)
        if checked and info.batch_size > 0 and all(isinstance(args[i], Tensor) for i in tensors):
            # the rules on one sample first, so that a refusal names the
            # shapes a sample has (and a sample that is not rows, such as a
            # 0-D x, is refused before its batch is taken for its rows)
            _rules.check(name, *sample(args, in_dims, 0))
        if not rows or any(d is not None for i, d in enumerate(in_dims) if i not in rows):
            return per_sample(args, in_dims)
        # the batch as one more leading dimension of every row argument
        folded = list(args)
        for i in rows:
            a, d = args[i], in_dims[i]
            if isinstance(a, Tensor):
                if d is None and a.is_inference() and a.requires_grad:
                    a = a.clone()  # (a view of an inference tensor records no autograd edge)
                folded[i] = a.movedim(d, 0) if d is not None else a.expand(info.batch_size, *a.shape)
        result = op(*folded)
        if mutating and result is None:
            return None, None
        return result, (0,) * len(result) if isinstance(result, tuple) else 0

    torch.library.register_vmap(f"my_ops::{name}", rule, lib=lib)
