"""Every op through every road: the Python API, torch.ops.my_ops, the nn
module, torch.compile(fullgraph=True), torch.export (strict and non-strict),
torch.func.functionalize, torch.vmap, torch.func.vjp and torch.jit.trace (its
check on). Each road gets the same fresh arguments and must give the same
results as the op's own call through torch.ops (the same kernels: the same
bits), the same gradients, and, for every bad call of the op's spec, the
same refusal. Driven by the specs (tests/ops/specs/): a new op is covered
by its spec alone, so the roads cannot drift apart again.
"""

from __future__ import annotations

import re

import pytest
import torch
from torch import nn

import specs
from conftest import make_input

FUNCTIONAL_ROADS = ("api", "torch.ops", "compile", "export strict", "export non-strict", "functionalize", "vmap",
                    "jit.trace")


class _Call(nn.Module):
    """fn as a module (what torch.export and torch.jit.trace take)."""

    def __init__(self, fn) -> None:
        super().__init__()
        self.fn = fn

    def forward(self, *args):
        return self.fn(*args)


def _through(road: str, fn, args: tuple):
    """fn(*args) taken by `road`; fn returns its outputs (for a mutating op: the written arguments)."""
    if road in ("api", "torch.ops"):
        return fn(*args)
    if road.startswith("compile"):
        torch._dynamo.reset()
        return torch.compile(fn, fullgraph=True, dynamic=road == "compile dynamic", backend="aot_eager")(*args)
    if road.startswith("export"):
        program = torch.export.export(_Call(fn), args, strict=road == "export strict")
        return program.module()(*args)
    if road == "functionalize":
        return torch.func.functionalize(fn)(*args)
    if road == "vmap":  # a batch of one of every tensor argument
        batched = tuple(a.unsqueeze(0) if isinstance(a, torch.Tensor) else a for a in args)
        out = torch.vmap(fn, in_dims=tuple(0 if isinstance(a, torch.Tensor) else None for a in args))(*batched)
        return tuple(o.squeeze(0) for o in out) if isinstance(out, tuple) else out.squeeze(0)
    if road == "jit.trace":
        tensors = [i for i, a in enumerate(args) if isinstance(a, torch.Tensor)]

        def on_tensors(*ts):  # (trace takes tensor inputs: the others are constants of the trace)
            full = list(args)
            for i, t in zip(tensors, ts):
                full[i] = t
            return fn(*full)

        inputs = tuple(args[i] for i in tensors)
        copies = tuple(t.clone() for t in inputs)  # (the trace runs the call, writes included)
        traced = torch.jit.trace(on_tensors, copies, check_trace=True,
                                 check_inputs=[tuple(t.clone() for t in inputs)])
        return traced(*inputs)
    raise AssertionError(road)


def _callable(spec, road: str):
    """The op as `road` calls it, returning its outputs (mutating ops: the written arguments, cloned)."""
    op = spec.op if road == "torch.ops" or spec.api is None else spec.api
    if not spec.mutates:
        return op
    written = [spec.argument_names().index(name) for name in spec.mutates]

    def mutate(*args):
        op(*args)
        return tuple(args[i].clone() for i in written)

    return mutate


def _fresh(spec, device, dtype=torch.float64) -> tuple:
    return spec.resolve(make_input(spec.input_shape, dtype, device))


def _copy(args) -> tuple:
    return tuple(a.clone() if isinstance(a, torch.Tensor) else a for a in args)


def _roads(spec) -> list:
    roads = list(FUNCTIONAL_ROADS)
    if spec.api is None:
        roads.remove("api")
    return roads


@pytest.mark.parametrize("spec, road", [(s, r) for s in specs.ALL for r in _roads(s)],
                         ids=lambda v: v if isinstance(v, str) else v.id)
def test_same_results(spec, road, device):
    args = _fresh(spec, device)
    if road == "functionalize" and spec.mutates:
        # torch's eager functionalization takes no custom op that writes its
        # arguments (torch.compile and torch.export functionalize them): one
        # refusal, whichever way the op is called
        with pytest.raises(RuntimeError, match=r"Found a custom \(non-ATen\) operator whose output has alias"):
            _through(road, _callable(spec, road), _copy(args))
        return
    with torch.no_grad():
        want = _callable(spec, "torch.ops")(*_copy(args))
        got = _through(road, _callable(spec, road), _copy(args))
    torch.testing.assert_close(got, want, rtol=0, atol=0)


@pytest.mark.parametrize("spec", specs.where(differentiable=True), ids=repr)
@pytest.mark.parametrize("road", ["api", "torch.ops", "module", "torch.func.vjp", "compile", "jit.trace"])
def test_same_gradients(spec, road, device):
    """The gradient of every floating tensor argument, as the op's own call
    through torch.ops records it."""
    args = _fresh(spec, device)
    if road == "module" and spec.module is None and spec.name != "rms_norm":
        pytest.skip("no nn.Module")
    tensors = [i for i, a in enumerate(args) if isinstance(a, torch.Tensor)]
    cotangent = torch.randn_like(spec.op(*args))

    def grads(fn, inputs):
        leaves = [a.detach().requires_grad_() if isinstance(a, torch.Tensor) else a for a in inputs]
        out = fn(*leaves)
        return torch.autograd.grad(out, [leaves[i] for i in tensors], cotangent)

    want = grads(spec.op, args)
    if road == "torch.func.vjp":
        def on_tensors(*ts):
            full = list(args)
            for i, t in zip(tensors, ts):
                full[i] = t
            return (spec.api or spec.op)(*full)

        _, vjp = torch.func.vjp(on_tensors, *[args[i] for i in tensors])
        got = vjp(cotangent)
    elif road == "module":
        module = _module_with(spec, args)
        x = args[0].detach().requires_grad_()
        out = module(x)
        got = torch.autograd.grad(out, [x, *module.parameters()], cotangent)
    elif road == "compile":
        torch._dynamo.reset()
        got = grads(torch.compile(spec.api or spec.op, fullgraph=True, backend="aot_eager"), args)
    elif road == "jit.trace":
        leaves = [a.detach().requires_grad_() if isinstance(a, torch.Tensor) else a for a in args]
        traced = torch.jit.trace(lambda *ts: (spec.api or spec.op)(*ts, *args[len(tensors):]),
                                 tuple(leaves[i] for i in tensors), check_trace=True)
        got = torch.autograd.grad(traced(*[leaves[i] for i in tensors]), [leaves[i] for i in tensors], cotangent)
    else:
        got = grads(spec.op if road == "torch.ops" else (spec.api or spec.op), args)
    torch.testing.assert_close(got, want, rtol=0, atol=0)


def _module_with(spec, args):
    """The op's nn.Module holding args[1:] as its state, so that module(x) is the op on args."""
    import my_ops

    if spec.name == "rms_norm":
        module = my_ops.RMSNorm(args[0].shape[-1], eps=args[2], dtype=args[1].dtype, device=args[1].device)
        with torch.no_grad():
            module.weight.copy_(args[1])
        return module
    return spec.module()


@pytest.mark.parametrize("spec, bad", [(s, b) for s, b in specs.bad_calls()], ids=lambda v: getattr(v, "id", None)
                         or getattr(v, "name", None))
@pytest.mark.parametrize("road", ["api", "torch.ops", "compile", "compile dynamic", "export non-strict",
                                  "functionalize", "vmap"])
def test_same_refusals(spec, bad, road, device):
    """Each bad call of the spec is refused on every road, with the op's own message."""
    if road == "api" and spec.api is None:
        pytest.skip("no Python API")
    args = bad.make(device)
    if road == "vmap" and any(isinstance(a, torch.Tensor) and a.requires_grad for a in args):
        pytest.skip("vmap refuses to batch a tensor that requires grad before the op is called")
    if road == "functionalize" and spec.mutates:
        pytest.skip("torch's eager functionalization takes no mutating custom op (test_same_results)")
    # (the message ends where the op's does: dynamo quotes it inside its own)
    message = bad.message.removesuffix("$")
    if road == "compile dynamic":  # (a size in the message may be a symbol there: s27 for 8)
        message = re.sub(r"(?<!\\)\d+", r"\\S+", message)
    pattern = rf"my_ops\.{spec.name}: {message}(?![\w.])"
    with pytest.raises(Exception, match=pattern):  # (dynamo and export wrap the op's RuntimeError)
        _through(road, _callable(spec, road), args)
