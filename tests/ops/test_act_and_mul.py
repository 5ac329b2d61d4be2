"""The gated units silu_and_mul (SwiGLU) and gelu_and_mul (GeGLU, both
`approximate` modes), forward and backward: one kernel family, one test file,
every test run for each activation."""

from __future__ import annotations

import pytest
import torch

import my_ops
import specs
from conftest import LAYOUTS, assert_matches, make_input

# last dimension 2d: d = 1, odd, not a multiple of 8, multiples of 8, large
SHAPES = [(2,), (3, 2), (5, 26), (4, 2000), (2, 3, 8192), (3, 10006), (20000, 16), (0, 8), (4, 0)]


class Unit:
    """One activation of the family, from its spec (specs/act_and_mul.py):
    the op, its backward op, the extra arguments after x, the float64
    reference and the nn.Module."""

    def __init__(self, spec):
        self.spec, self.name = spec, spec.name
        self.extra = tuple(spec.args_for(torch.empty(1, 2)))
        self.op = spec.op
        self.backward_op = getattr(torch.ops.my_ops, f"{spec.name}_backward").default

    def __call__(self, x):
        return self.spec.api(x, *self.extra)

    def reference(self, x):
        return self.spec.reference(x, *self.extra)

    def __repr__(self):
        return self.spec.id


UNITS = [Unit(spec) for spec in specs.where(family="act_and_mul", api=True)]


@pytest.fixture(params=UNITS, ids=repr)
def unit(request) -> Unit:
    return request.param


@pytest.mark.parametrize("shape", SHAPES, ids=str)
@pytest.mark.parametrize("layout", LAYOUTS)
def test_forward(unit, shape, layout, dtype, device):
    x = make_input(shape, dtype, device, layout, low=-6, high=6)
    out = unit(x)
    assert out.is_contiguous()
    assert_matches(out, unit.reference(x), dtype, scale=2)


@pytest.mark.parametrize("shape", [(3, 2), (5, 26), (4, 2000), (2, 3, 8192), (20000, 16), (0, 8)], ids=str)
@pytest.mark.parametrize("layout", ["contiguous", "offset", "sliced", "sliced_odd"])
def test_backward(unit, shape, layout, dtype, device):
    x = make_input(shape, dtype, device, layout, low=-6, high=6)
    grad = make_input((*shape[:-1], shape[-1] // 2), dtype, device, layout)
    x_ = x.detach().requires_grad_()
    unit(x_).backward(grad)
    x64 = x.double().requires_grad_()
    unit.reference(x64).backward(grad.double())
    assert_matches(x_.grad, x64.grad, dtype, scale=4)


# Large inputs (at least 4096 16-byte vectors per multiprocessor) take the
# CUDA layout with two vectors per thread: 1300 rows of d = 4104 do on a GPU
# of up to 160 SMs, and leave a ragged last block in each row.
@pytest.mark.parametrize("dtype", [torch.bfloat16, torch.float32], ids=str)
def test_large_input_layout(unit, dtype, device):
    x = make_input((1300, 2 * 4104), dtype, device, low=-6, high=6)
    grad = make_input((1300, 4104), dtype, device)
    x_ = x.detach().requires_grad_()
    out = unit(x_)
    out.backward(grad)
    x64 = x.double().requires_grad_()
    want = unit.reference(x64)
    want.backward(grad.double())
    assert_matches(out, want, dtype, scale=2)
    assert_matches(x_.grad, x64.grad, dtype, scale=4)


# A slice of a wider tensor (the gate-up half of a fused projection) is read in
# place: the result matches and the tensor around it is left alone.
@pytest.mark.parametrize("pad", [0, 8, 3])
def test_slice_of_wider_tensor(unit, pad, dtype, device):
    base = make_input((33, 3 * 64 + pad), dtype, device, low=-6, high=6)
    before = base.clone()
    x = base[:, 64:192]
    assert_matches(unit(x), unit.reference(x), dtype, scale=2)
    assert torch.equal(base, before)


# Gates where e^-g leaves float32's range (|g| > 87): e^-g is +inf or 0 there,
# which the CPU kernel's exp polynomial returns too; ordinary gates around them.
@pytest.mark.parametrize("dtype", [torch.float32, torch.bfloat16], ids=str)
def test_extreme_gates(unit, dtype, device):
    gates = torch.tensor([-1000.0, -100.0, -89.0, -88.0, -87.0, -86.9, 86.9, 87.0, 88.0, 88.7, 89.0,
                          100.0, 1000.0, float("inf")])
    gates = torch.cat([gates, torch.empty(18).uniform_(-6, 6)])
    up = torch.empty(len(gates)).uniform_(0.5, 2) * torch.where(torch.rand(len(gates)) < 0.5, -1.0, 1.0)
    x = torch.cat([gates, up]).reshape(1, -1).to(dtype=dtype, device=device)
    assert_matches(unit(x), unit.reference(x), dtype, scale=2)


def test_gradcheck(unit, device):
    x = torch.randn(3, 2, 10, dtype=torch.float64, device=device, requires_grad=True)
    assert torch.autograd.gradcheck(unit, (x,))


def test_module(unit, device):
    x = make_input((4, 64), torch.float16, device)
    assert_matches(unit.spec.module()(x), unit.reference(x), torch.float16, scale=2)


def test_module_repr():
    assert "approximate='tanh'" in repr(my_ops.GeluAndMul("tanh"))


# opcheck samples and bad calls (odd or 0-D x, integer x, the backward's
# grad_out shape, an unknown approximation): the specs, run by
# test_op_specs.py and test_rules.py.


# ---------------------------------------------------- higher-order gradients
def test_gradgradcheck(unit, device):
    x = make_input((3, 10), torch.float64, device).requires_grad_()
    assert torch.autograd.gradgradcheck(unit, (x,))


def test_backward_op_is_differentiable(unit, device):
    g = make_input((3, 5), torch.float64, device).requires_grad_()
    x = make_input((3, 10), torch.float64, device).requires_grad_()

    def backward(g, x):
        return unit.backward_op(g, x, *unit.extra)

    assert torch.autograd.gradcheck(backward, (g, x))
    assert torch.autograd.gradgradcheck(backward, (g, x))


@pytest.mark.parametrize("dtype", [torch.float32, torch.bfloat16], ids=str)
def test_second_order_matches_eager(unit, dtype, device):
    x = make_input((6, 64), dtype, device)

    def second_order(fn, x):
        x = x.detach().requires_grad_()
        (g,) = torch.autograd.grad((fn(x) ** 2).sum(), x, create_graph=True)
        (h,) = torch.autograd.grad(g.pow(2).sum(), x)
        return h

    ours = second_order(unit, x)
    ref = second_order(unit.reference, x.double())
    assert ours.dtype == dtype and not ours.isnan().any()
    error = ((ours.double() - ref).norm() / ref.norm()).item()
    assert error < {torch.float32: 1e-4, torch.bfloat16: 5e-2}[dtype]
