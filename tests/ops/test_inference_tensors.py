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


@pytest.mark.parametrize("spec, argument", WRITTEN)
def test_refused_outside_inference_mode_untouched(spec, argument):
    args = list(spec.resolve(torch.randn(3, 16)))
    index = spec.argument_names().index(argument)
    args[index] = t = _inference(*args[index].shape)
    before = t.clone()
    with pytest.raises(RuntimeError, match=rf"argument '{argument}' is an inference tensor"):
        spec.api(*args)
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


@pytest.mark.parametrize("through", ["api", "torch.ops"])
def test_inference_input_beside_a_weight_that_requires_grad(through):
    """An input made under inference_mode (e.g. precomputed features), used
    outside it beside a weight that requires grad: torch refuses to save it
    for backward, and my_ops saves a copy, as torch's own ops work here."""
    with torch.inference_mode():
        x = torch.randn(3, 8, dtype=torch.float64)
    weight = (torch.rand(8, dtype=torch.float64) + 0.5).requires_grad_()
    fn = my_ops.rms_norm if through == "api" else torch.ops.my_ops.rms_norm
    fn(x, weight, 1e-6).sum().backward()
    want = weight.detach().clone().requires_grad_()
    torch.nn.functional.rms_norm(x, (8,), want, 1e-6).sum().backward()
    torch.testing.assert_close(weight.grad, want.grad, rtol=1e-12, atol=1e-12)
    b = torch.randn(3, 8, dtype=torch.float64, requires_grad=True)
    (my_ops.mul if through == "api" else torch.ops.my_ops.mul)(x, b).sum().backward()
    torch.testing.assert_close(b.grad, x.clone(), rtol=0, atol=0)
