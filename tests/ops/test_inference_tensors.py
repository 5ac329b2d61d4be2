"""In-place writes to inference tensors: refused outside torch.inference_mode()
(as PyTorch refuses them), before anything is written; allowed inside.
(Every written argument of every op that `mutates` in its spec.)"""

from __future__ import annotations

import pytest
import torch

import my_ops
import specs
from conftest import assert_matches


def _inference(*shape):
    with torch.inference_mode():
        return torch.randn(*shape)


WRITTEN = [pytest.param(spec, name, id=f"{spec.id} {name}") for spec in specs.where(mutates=True)
           for name in spec.mutates]


@pytest.mark.parametrize("through", ["api", "torch.ops"])
@pytest.mark.parametrize("spec, argument", WRITTEN)
def test_refused_outside_inference_mode_untouched(spec, argument, through):
    args = list(spec.resolve(torch.randn(3, 16)))
    index = spec.argument_names().index(argument)
    args[index] = t = _inference(*args[index].shape)
    before = t.clone()
    with pytest.raises(RuntimeError, match=rf"argument '{argument}' is an inference tensor"):
        (spec.api if through == "api" else spec.op)(*args)
    assert torch.equal(t, before)
    with pytest.raises(RuntimeError, match="inference tensor"):  # what PyTorch does
        t.add_(1)


@pytest.mark.parametrize("spec", specs.where(mutates=True), ids=repr)
def test_allowed_inside_inference_mode(spec):
    with torch.inference_mode():
        args = spec.resolve(torch.randn(3, 16))
        want = spec.reference(*[a.double() if isinstance(a, torch.Tensor) else a for a in args])
        spec.api(*args)
    names = spec.argument_names()
    for name, w in zip(spec.mutates, want if isinstance(want, tuple) else (want,)):
        assert_matches(args[names.index(name)], w, torch.float32, scale=2)


def _beside_inputs_that_require_grad():
    """(spec, argument) for each tensor argument of each differentiable op
    that has another tensor argument to require grad beside it."""
    cases = []
    for spec in specs.where(differentiable=True):
        args = spec.resolve(torch.randn(spec.input_shape, dtype=torch.float64))
        names = spec.argument_names()
        tensors = [names[i] for i, a in enumerate(args) if isinstance(a, torch.Tensor)]
        if len(tensors) > 1:
            cases += [pytest.param(spec, name, id=f"{spec.id} {name}") for name in tensors]
    return cases


@pytest.mark.parametrize("through", ["api", "torch.ops"])
@pytest.mark.parametrize("spec, argument", _beside_inputs_that_require_grad())
def test_inference_input_beside_inputs_that_require_grad(spec, argument, through):
    """An input made under inference_mode (e.g. precomputed features), used
    outside it beside inputs that require grad: torch refuses to save it for
    backward, and my_ops saves a copy, as torch's own ops work here."""
    args = list(spec.resolve(torch.randn(spec.input_shape, dtype=torch.float64)))
    index = spec.argument_names().index(argument)
    with torch.inference_mode():
        args[index] = args[index].clone()
    others = [i for i, a in enumerate(args) if isinstance(a, torch.Tensor) and i != index]
    for i in others:
        args[i] = args[i].detach().clone().requires_grad_()
    out = (spec.api if through == "api" and spec.api else spec.op)(*args)
    outs = out if isinstance(out, tuple) else (out,)
    cotangents = [torch.randn_like(o) for o in outs]
    got = torch.autograd.grad(outs, [args[i] for i in others], cotangents)
    plain = [a.clone() if i == index else a for i, a in enumerate(args)]  # (a clone is a normal tensor)
    want_outs = spec.reference(*plain)
    want_outs = want_outs if isinstance(want_outs, tuple) else (want_outs,)
    for o, w in zip(outs, want_outs):
        torch.testing.assert_close(o, w.to(o.dtype))
    want = torch.autograd.grad(want_outs, [plain[i] for i in others], cotangents)
    for g, w in zip(got, want):
        torch.testing.assert_close(g, w)


@pytest.mark.parametrize("through", ["api", "torch.ops"])
def test_refused_call_with_an_inference_input_names_the_rule(through):
    """A call that breaks a rule fails with the rule's message when an
    inference tensor is among its inputs and another requires grad (the
    inference tensor's copy is made only for a call that failed)."""
    x = _inference(3, 8)
    weight = torch.rand(7, requires_grad=True)
    fn = my_ops.rms_norm if through == "api" else torch.ops.my_ops.rms_norm
    with pytest.raises(RuntimeError, match=r"my_ops\.rms_norm: expected weight"):
        fn(x, weight, 1e-6)


def _packed(call) -> list:
    """The tensors the call saves for backward, as a saved-tensor hook sees them."""
    packed = []
    with torch.autograd.graph.saved_tensors_hooks(lambda t: packed.append(t) or t, lambda t: t):
        call()
    return packed


@pytest.mark.parametrize("spec, argument", _beside_inputs_that_require_grad())
def test_inference_input_saved_once(spec, argument):
    """With an inference input, a call saves for backward what it saves
    without one, each tensor once: the op runs once, and a saved-tensor hook
    (torch.utils.checkpoint's, save_on_cpu's) sees no extra tensor."""
    args = list(spec.resolve(torch.randn(spec.input_shape, dtype=torch.float64)))
    index = spec.argument_names().index(argument)
    others = [i for i, a in enumerate(args) if isinstance(a, torch.Tensor) and i != index]
    for i in others:
        args[i] = args[i].detach().clone().requires_grad_()
    plain = _packed(lambda: spec.api(*args))
    with torch.inference_mode():
        args[index] = args[index].clone()
    assert len(_packed(lambda: spec.api(*args))) == len(plain)


def test_checkpoint_with_an_inference_weight():
    """A norm built under inference_mode (frozen) after a trainable layer, under
    torch.utils.checkpoint: the recomputation saves what the forward saved,
    and the gradient is the one without checkpointing."""
    with torch.inference_mode():
        norm = my_ops.RMSNorm(64, dtype=torch.float64)
        norm.weight.uniform_(0.5, 1.5)
    adapter = torch.nn.Linear(64, 64, dtype=torch.float64)
    h = torch.randn(4, 64, dtype=torch.float64)
    cotangent = torch.randn(4, 64, dtype=torch.float64)

    def weight_grad(checkpointed: bool):
        adapter.zero_grad()
        block = lambda v: norm(adapter(v))  # noqa: E731
        out = torch.utils.checkpoint.checkpoint(block, h, use_reentrant=False) if checkpointed else block(h)
        out.backward(cotangent)
        return adapter.weight.grad.clone()

    torch.testing.assert_close(weight_grad(True), weight_grad(False), rtol=1e-12, atol=1e-12)


def _second_order(call, args, index, others):
    """d/d args[index] of the squared gradient (with respect to the other inputs) of sum(out**3)."""
    out = call(*args)
    out = out[0] if isinstance(out, tuple) else out
    firsts = torch.autograd.grad(out.pow(3).sum(), [args[i] for i in others], create_graph=True)
    (second,) = torch.autograd.grad(sum(g.pow(2).sum() for g in firsts), args[index])
    return second


def _second_order_cases():
    # under vmap the batch is the first argument's (torch.vmap would refuse to
    # batch an inference tensor that requires grad: it saves it for backward)
    return [pytest.param(*case.values, through, id=f"{case.id}-{through}")
            for case in _beside_inputs_that_require_grad()
            for through in ("api", "torch.ops", "api under vmap")
            if through != "api under vmap" or case.values[1] != case.values[0].argument_names()[0]]


@pytest.mark.parametrize("spec, argument, through", _second_order_cases())
def test_inference_leaf_that_requires_grad_second_order(spec, argument, through):
    """A tensor made under inference_mode that itself requires grad (a
    parameter of a model built there): gradients of gradients reach it.
    (torch's own ops refuse to save it; past the Python API, on a torch
    without what the op's own Autograd kernel needs, my_ops refuses too.)"""
    args = list(spec.resolve(torch.randn(spec.input_shape, dtype=torch.float64)))
    index = spec.argument_names().index(argument)
    others = [i for i, a in enumerate(args) if isinstance(a, torch.Tensor) and i != index]
    for i in others:
        args[i] = args[i].detach().clone().requires_grad_()
    plain = list(args)
    plain[index] = args[index].detach().clone().requires_grad_()
    with torch.inference_mode():
        args[index] = args[index].clone().requires_grad_()
    def under_vmap(first, *rest):  # a batch of one first argument
        return torch.vmap(lambda v: spec.api(v, *rest))(first.unsqueeze(0)).squeeze(0)

    call = {"api": spec.api, "torch.ops": spec.op, "api under vmap": under_vmap}[through]
    if through == "torch.ops" and not my_ops._torch_compat.OWN_AUTOGRAD_KERNEL:
        with pytest.raises(RuntimeError, match=rf"my_ops\.{spec.name}: an inference tensor that requires grad"):
            _second_order(call, args, index, others)
        return
    got = _second_order(call, args, index, others)
    want = _second_order(spec.reference, plain, index, others)
    torch.testing.assert_close(got, want)
