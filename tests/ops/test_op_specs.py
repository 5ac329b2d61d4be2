"""The checks every op gets from its spec (tests/ops/specs/): opcheck on each
named sample, the samples against the float64 reference, gradcheck, and
torch.compile(fullgraph=True) against eager."""

from __future__ import annotations

import pytest
import torch

import specs
from conftest import TOLERANCES, assert_matches, make_input

SAMPLES = [pytest.param(spec, name, id=f"{spec.id} {name}", marks=specs.tier(spec, name))
           for spec, name in specs.samples()]


@pytest.mark.parametrize("spec, sample", SAMPLES)
def test_opcheck(spec, sample, device):
    torch.library.opcheck(spec.op, spec.samples[sample](device))


def _close(got, want, dtype, scale):
    rtol, atol = TOLERANCES[dtype]
    for g, w in zip(got if isinstance(got, (tuple, list)) else (got,),
                    want if isinstance(want, (tuple, list)) else (want,)):
        if g.dtype in (torch.float8_e4m3fn, torch.float32) and g.dtype != dtype:
            assert_matches(g, w, g.dtype, scale)  # the fp8 family's output and scales
            continue
        assert g.dtype == dtype and g.shape == w.shape
        torch.testing.assert_close(g.double().cpu(), w.double().cpu(), rtol=rtol * scale, atol=atol * scale,
                                   equal_nan=False)


@pytest.mark.parametrize("spec, sample", SAMPLES)
def test_samples_match_the_reference(spec, sample, device):
    """Each sample through the Python API (torch.ops where there is none)
    against the float64 reference; a mutating op's written arguments hold it."""
    if spec.reference is None:
        pytest.skip("no reference")
    args = [a.detach() if isinstance(a, torch.Tensor) else a for a in spec.samples[sample](device)]
    dtype = args[0].dtype
    want = spec.reference(*[a.double() if isinstance(a, torch.Tensor) else a for a in args])
    with torch.no_grad():
        out = (spec.api or spec.op)(*args)
    if spec.mutates:
        names = spec.argument_names()
        out = [args[names.index(name)] for name in spec.mutates]
        want = want if isinstance(want, tuple) else (want,)
    _close(out, want, dtype, scale=8)


def _independent(spec, x):
    """The op's arguments for x, each tensor its own leaf (mul(x, x) as mul(a, b))."""
    return [a.detach().clone().requires_grad_() if isinstance(a, torch.Tensor) else a for a in spec.resolve(x)]


@pytest.mark.parametrize("spec", specs.where(differentiable=True), ids=repr)
def test_gradcheck(spec, device):
    args = _independent(spec, make_input((3, 10), torch.float64, device))
    where = [i for i, a in enumerate(args) if isinstance(a, torch.Tensor)]

    def fn(*tensors):
        full = list(args)
        for i, tensor in zip(where, tensors):
            full[i] = tensor
        return spec.api(*full)

    assert torch.autograd.gradcheck(fn, [args[i] for i in where])


@pytest.mark.parametrize("spec", specs.where(api=True), ids=repr)
def test_compile_fullgraph_matches_eager(spec, device):
    """torch.compile(fullgraph=True) of the Python API: no graph break, the
    eager result, and the same arguments written."""
    torch._dynamo.reset()
    eager = spec.resolve(make_input(spec.input_shape, torch.float32, device))
    args = [a.clone() if isinstance(a, torch.Tensor) else a for a in eager]
    compiled = torch.compile(spec.api, fullgraph=True, backend="aot_eager")
    out, want = compiled(*args), spec.api(*eager)
    if spec.mutates:
        names = spec.argument_names()
        out = [args[names.index(n)] for n in spec.mutates]
        want = [eager[names.index(n)] for n in spec.mutates]
    torch.testing.assert_close(out, want)
