"""short_kernel, mul, muladd and add_out."""

from __future__ import annotations

import pytest
import torch

import my_ops
from conftest import LAYOUTS, assert_matches, make_input

SHAPES = [(0,), (1,), (7,), (1000,), (3, 333), (2, 3, 4097), (1 << 18) + 3]


def _shape(s):
    return s if isinstance(s, tuple) else (s,)


@pytest.mark.parametrize("shape", SHAPES, ids=str)
@pytest.mark.parametrize("layout", LAYOUTS)
def test_short_kernel(shape, layout, dtype, device):
    x = make_input(_shape(shape), dtype, device, layout)
    out = my_ops.short_kernel(x)
    assert out.is_contiguous()
    assert_matches(out, x.double() * 1.23, dtype)


@pytest.mark.parametrize("shape", SHAPES, ids=str)
@pytest.mark.parametrize("layout", LAYOUTS)
def test_mul(shape, layout, dtype, device):
    a = make_input(_shape(shape), dtype, device, layout)
    b = make_input(_shape(shape), dtype, device, "contiguous")
    assert_matches(my_ops.mul(a, b), a.double() * b.double(), dtype)


@pytest.mark.parametrize("shape", SHAPES, ids=str)
@pytest.mark.parametrize("layout", LAYOUTS)
def test_muladd(shape, layout, dtype, device):
    a = make_input(_shape(shape), dtype, device, "contiguous")
    b = make_input(_shape(shape), dtype, device, layout)
    c = float(torch.empty(()).uniform_(-2, 2))
    # the sum a*b + c can cancel: tolerance relative to the terms' size (<= 9 + 2)
    assert_matches(my_ops.muladd(a, b, c), a.double() * b.double() + c, dtype, scale=4)


@pytest.mark.parametrize("shape", SHAPES, ids=str)
@pytest.mark.parametrize("layout", LAYOUTS)
def test_add_out(shape, layout, dtype, device):
    a = make_input(_shape(shape), dtype, device, "contiguous")
    b = make_input(_shape(shape), dtype, device, "offset")
    out = make_input(_shape(shape), dtype, device, layout)
    a0, b0 = a.clone(), b.clone()
    result = my_ops.add_out(a, b, out)
    assert result is out
    assert_matches(out, a0.double() + b0.double(), dtype, scale=2)
    assert torch.equal(a, a0) and torch.equal(b, b0)


def test_add_out_writes_only_the_view(dtype, device):
    """A non-contiguous out: every element of the view is written, nothing around it."""
    buffer = make_input((6, 10), dtype, device)
    before = buffer.clone()
    out = buffer[1:5, 2:9:2]
    a = make_input(out.shape, dtype, device)
    b = make_input(out.shape, dtype, device)
    my_ops.add_out(a, b, out)
    assert_matches(out, a.double() + b.double(), dtype, scale=2)
    outside = torch.ones_like(buffer, dtype=torch.bool)
    outside[1:5, 2:9:2] = False
    assert torch.equal(buffer[outside], before[outside])


def test_add_out_in_place(dtype, device):
    a = make_input((513,), dtype, device)
    b = make_input((513,), dtype, device)
    expected = a.double() + b.double()
    version = a._version
    my_ops.add_out(a, b, a)
    assert_matches(a, expected, dtype, scale=2)
    assert a._version > version, "the version counter of a mutated tensor must be bumped"


# Autograd (gradcheck), opcheck samples and bad calls: the specs
# (specs/elementwise.py), run by test_op_specs.py and test_rules.py.


# ------------------------------------------------------------ add_out and grad
def test_add_out_requires_grad_rejected_but_allowed_under_no_grad(device):
    a = torch.randn(3, device=device, requires_grad=True)
    with pytest.raises(RuntimeError, match=r"my_ops.add_out: argument 'a' requires grad, but my_ops.add_out writes its "
                                           r"arguments in place"):
        my_ops.add_out(a, torch.randn(3, device=device), torch.empty(3, device=device))
    with torch.no_grad():  # allowed without grad mode
        out = torch.empty(3, device=device)
        my_ops.add_out(a, a, out)
    assert_matches(out, 2 * a.detach().double(), torch.float32)
