"""In-place writes to inference tensors: refused outside torch.inference_mode()
(as PyTorch refuses them), before anything is written; allowed inside.
(Every written argument of every op that `mutates` in its spec.)"""

from __future__ import annotations

import pytest
import torch

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
