"""torch.func.vmap rules (register_vmap), in place of torch's per-sample fallback (its warning; it refuses the
mutating ops). With only row arguments batched (an op works along their last dimension), the batch is one more
leading dimension and the op runs once; else it runs per sample, outputs stacked.
"""

from __future__ import annotations

import functools

import torch
from torch import Tensor

from . import _rules
from ._mutating import CHECK_MEMORY
from ._runtime import _signature


def _memory_readable(tensors) -> bool:
    """Whether the tensors' memory can be read: not an outer vmap level's (nested vmap), which that level checks."""
    try:
        for t in tensors:
            if isinstance(t, Tensor):
                t.untyped_storage()
    except (NotImplementedError, RuntimeError):
        return False
    return True


def register_batching(lib: torch.library.Library, name: str, rows: tuple[int, ...] = ()) -> None:
    """The vmap rule of my_ops::<name>, its arguments at `rows` rows. An unbatched row argument is expanded over
    the batch, or copied where the op's rules hold it `written` (no two elements in one memory)."""
    op, arguments, tensors, rule_tensors, written = _signature(name)
    checked = name in _rules.op_names()  # (the Triton ops check their arguments in their own body)

    @functools.cache
    def own_elements() -> frozenset[int]:  # (the rules read on the first batched call, not at import)
        params = _rules.rules(name) if checked else []
        return frozenset(i for i, p in enumerate(params) if any(c.key == "written" for c in p.clauses))

    def sample(args, in_dims, i):
        return [a.select(d, i) if d is not None else a for a, d in zip(args, in_dims)]

    def per_sample(args, in_dims):
        size = next(a.shape[d] for a, d in zip(args, in_dims) if d is not None)
        if written and checked:  # (each call sees its sample alone: do samples overlap?)
            # (the check as an op: under nested vmap each outer level's rule widens it)
            whole = [a.movedim(d, 0) if d is not None else a for a, d in zip(args, in_dims)]
            CHECK_MEMORY(name, [whole[i] if i < len(whole) else None for i in rule_tensors])
        # (no samples: the outputs' shapes from a sample of zeros, new tensors, so nothing is written)
        samples = [sample(args, in_dims, i) for i in range(size)] or \
            [[a.new_zeros(a.shape[:d] + a.shape[d + 1:]) if d is not None else a for a, d in zip(args, in_dims)]]
        results = [op(*s) for s in samples]
        if results[0] is None:  # (an op that writes and returns nothing)
            return None, None
        if isinstance(results[0], tuple):
            return tuple(torch.stack(out)[:size] for out in zip(*results)), (0,) * len(results[0])
        return torch.stack(results)[:size], 0

    def rule(info, in_dims, *args):
        in_dims = tuple(in_dims) + (None,) * (len(args) - len(in_dims))
        for i in written:
            if in_dims[i] is None and isinstance(args[i], Tensor):
                raise RuntimeError(
                    f"my_ops.{name}: under vmap, argument '{arguments[i].name}' is written in place but is not "
                    "batched while other arguments are; every sample would write the same tensor (PyTorch "
                    f"refuses this for its in-place ops too): batch '{arguments[i].name}' as well")
        if checked and info.batch_size > 0 and all(isinstance(args[i], Tensor) for i in tensors):
            # (the rules on one sample first: a refusal names a sample's shapes; a 0-D sample is refused)
            _rules.check(name, *sample(args, in_dims, 0), memory=_memory_readable(args))
        if not rows or any(d is not None for i, d in enumerate(in_dims) if i not in rows):
            return per_sample(args, in_dims)
        if not checked and any(in_dims[i] is not None and args[i].dim() == 1 for i in rows):
            # (0-D samples of rows, for an op checking in its body: folded they would make one row; per sample
            # the body refuses them)
            return per_sample(args, in_dims)
        folded = list(args)  # the batch as one more leading dimension of every row argument
        for i in rows:
            a, d = args[i], in_dims[i]
            if d is not None:  # (vmap gives a dimension to tensors alone)
                folded[i] = a.movedim(d, 0)
            elif isinstance(a, Tensor):
                if a.is_inference() and a.requires_grad:
                    a = a.clone()  # (a view of an inference tensor records no autograd edge)
                folded[i] = a.expand(info.batch_size, *a.shape)
                if i in own_elements():
                    folded[i] = folded[i].contiguous()
        result = op(*folded)
        if written and result is None:
            return None, None
        return result, (0,) * len(result) if isinstance(result, tuple) else 0

    torch.library.register_vmap(f"my_ops::{name}", rule, lib=lib)
