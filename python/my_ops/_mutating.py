"""The ops without a derivative, most of which write their arguments in place: their ADInplaceOrView kernel (the
stable ABI has none in C++), which every call on ordinary tensors passes (inference_mode's too), their memory
rules in compiled graphs and under vmap, and their functional twins while exporting.
"""

from __future__ import annotations

import functools

import torch
from torch import Tensor

from . import _rules, _torch_compat as _compat
from ._runtime import _forward_ad_error, _lib, _ops, _signature

# A mutating op's memory rules as a node of its own in a compiled graph, run on the graph's real inputs: the fake
# kernel decides them on the traced call, which torch 2.11's guards do not cover (nor aliasing between inputs:
# pytorch#184481), and the graph's functional form writes copies, so the op's own check never sees an overlap.
_checks = torch.library.Library("my_ops", "FRAGMENT")
_checks.define("check_memory(str op, Tensor?[] tensors) -> ()")
for _key in ("CompositeExplicitAutograd", "CompositeImplicitAutogradNestedTensor"):  # (nested: refused by name)
    _checks.impl("check_memory", _rules.check_memory, _key)
torch.library.register_fake("my_ops::check_memory", lambda op, tensors: None, lib=_checks)
CHECK_MEMORY = torch.ops.my_ops.check_memory.default
torch.fx.node.has_side_effect(CHECK_MEMORY)  # (no output: kept by the graphs' dead-code elimination)


def _check_memory_batched(info, in_dims, op, tensors):
    """Under vmap: the rules on the whole batch (batch dimensions first), so that samples which overlap one
    another are refused; nested, each level adds its dimension and the innermost checks real tensors."""
    dims = in_dims[1] if isinstance(in_dims[1], (list, tuple)) else [in_dims[1]] * len(tensors)
    CHECK_MEMORY(op, [t.movedim(d, 0) if d is not None and t is not None else t for t, d in zip(tensors, dims)])
    return None, None


torch.library.register_vmap("my_ops::check_memory", _check_memory_batched, lib=_checks)


def _offset_past_start(t: Tensor) -> bool:
    """Whether t starts past its storage's first element (a symbolic offset counts, unguarded)."""
    offset = t.storage_offset()
    return isinstance(offset, torch.SymInt) or offset != 0


def _mutating_op(name: str) -> None:
    """Refuses a tensor that requires grad (it would lose its history silently; a read-only one too: torch.export's
    inference IR drops no_grad blocks) and writes to inference tensors outside inference_mode, as torch does; bumps
    the written tensors' version counters, as torch's in-place ops do."""
    op, arguments, _, tensor_positions, written = _signature(name)
    via_functional_twin = _via_functional_twin(name) if written else None

    def in_functional_trace(exporting, *args, **kwargs):
        # (the trace of the graph that runs, not dynamo's nor inductor's. The twin while exporting, as AOTInductor
        # runs its programs without Python, and where a written view starts past its storage's start: inductor
        # writes such an argument of a custom op at the offset 0 where the offset is symbolic, pytorch#198068,
        # and wrong values through a bfloat16 view of a float32 buffer at a fixed one)
        n = len(args)  # (defaults dropped; a keyword-only one in kwargs)
        args = (*args, *(kwargs.get(a.name, a.default_value) for a in arguments[n:]))
        twin = via_functional_twin is not None and (exporting or any(
            _offset_past_start(args[i]) for i in written if isinstance(args[i], Tensor)))
        if twin:
            _rules.check(name, *args)  # (the in-place op's rules, naming it, as its own call has them)
        if not exporting:  # (the rules on the real inputs, naming the op: not the twin's own check)
            CHECK_MEMORY(name, [args[i] for i in tensor_positions])
        return via_functional_twin(*args) if twin else NotImplemented

    _compat.in_functionalization(f"my_ops::{name}", in_functional_trace, _lib)

    def inplace_kernel(keyset, *args):
        if _compat.forward_ad_active(args, keyset):
            raise _forward_ad_error(op)
        if torch.is_grad_enabled():
            for argument, value in zip(arguments, args):
                if isinstance(value, Tensor) and value.requires_grad:
                    raise RuntimeError(
                        f"my_ops.{name}: argument '{argument.name}' requires grad, but my_ops.{name} "
                        f"{'writes its arguments in place and ' if written else 'is an inference op that '}"
                        "has no autograd formula; call it under torch.no_grad() or pass tensors that do not "
                        f"require grad (e.g. {argument.name}.detach()); an exported program's run_decompositions() "
                        "drops torch.no_grad() blocks: run its module() under torch.no_grad(); torch.jit.trace "
                        "does not record them either: call the traced function under torch.no_grad()")
        if not torch.is_inference_mode_enabled():  # (outside it, inference tensors reach this key too)
            for i in written:
                if isinstance(args[i], Tensor) and args[i].is_inference():  # (None: the op's rules name it)
                    raise RuntimeError(
                        f"my_ops.{name}: argument '{arguments[i].name}' is an inference tensor, and in-place "
                        "updates to inference tensors outside torch.inference_mode() are not allowed (as in "
                        "PyTorch); call it inside torch.inference_mode(), or pass a normal tensor "
                        f"({arguments[i].name}.clone())")
        result = _compat.redispatch(op, keyset, args, _compat.PAST_INPLACE)
        torch.autograd.graph.increment_version([args[i] for i in written])
        return result

    _lib.impl(name, inplace_kernel, "ADInplaceOrView", with_keyset=True)

    def math_bits_kernel(*args):  # (torch's fallback aborts the process writing a negated or conjugated view)
        for i in written:
            value, argument = args[i], arguments[i].name
            if isinstance(value, Tensor) and (value.is_neg() or value.is_conj()):
                bit, done, resolve = ("negative", "negated", "neg") if value.is_neg() else \
                    ("conjugate", "conjugated", "conj")
                raise RuntimeError(
                    f"my_ops.{name}: argument '{argument}' has its {bit} bit set (a lazily {done} view, "
                    f"e.g. from .conj().imag), and my_ops.{name} cannot write such a view in place; pass a "
                    f"tensor without it ({argument}.resolve_{resolve}() makes a copy)")
        return op(*[a.resolve_neg().resolve_conj() if isinstance(a, Tensor) else a for a in args])

    for key in ("Negative", "Conjugate"):
        _lib.impl(name, math_bits_kernel, key)


@functools.cache  # (built once: _mutating_op's export rule and op_for_api share it)
def _via_functional_twin(name: str):
    """my_ops::<name> as my_ops::<name>_functional (its own outputs, then the new values of the arguments it
    writes), those values copied back; None without that twin. Exporting takes it: in an AOTInductor package a
    custom op's error is only logged, so a void in-place op's refusal went unnoticed, while the twin's undefined
    outputs stop the copy (docs/deploying.md); torch's auto_functionalized_v2 calls the op on a clone, which its
    memory rules cannot see through. torch.compile keeps the op in place but for views past their storage's
    start (in_functional_trace)."""
    if not hasattr(_ops, f"{name}_functional"):
        return None
    op, *_, written = _signature(name)
    functional, own_outputs = getattr(_ops, f"{name}_functional").default, len(_compat.schema(op).returns)

    def via_functional_twin(*args):
        outputs = functional(*args)
        outputs = (outputs,) if isinstance(outputs, Tensor) else outputs
        for i, new in zip(written, outputs[own_outputs:]):
            args[i].copy_(new)
        return None if own_outputs == 0 else outputs[0] if own_outputs == 1 else tuple(outputs[:own_outputs])

    return via_functional_twin


def op_for_api(name: str):
    """torch.ops.my_ops.<name> for its Python API; without FunctionalTensorMode (no twin in the dispatcher), one
    that takes the twin itself while exporting."""
    op, via_functional_twin = getattr(_ops, name).default, _via_functional_twin(name)
    if _compat.FUNCTIONALIZATION_RULES or via_functional_twin is None:
        return op
    return lambda *args: (via_functional_twin if torch.compiler.is_exporting() else op)(*args)
