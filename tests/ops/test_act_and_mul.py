"""The gated units silu_and_mul (SwiGLU) and gelu_and_mul (GeGLU, both
`approximate` modes), forward and backward: one kernel family, one test file,
every test run for each activation."""

from __future__ import annotations

import pytest
import torch

import my_ops
from my_ops import reference
from conftest import LAYOUTS, assert_matches, make_input, requires_cuda

# last dimension 2d: d = 1, odd, not a multiple of 8, multiples of 8, large
SHAPES = [(2,), (3, 2), (5, 26), (4, 2000), (2, 3, 8192), (3, 10006), (20000, 16), (0, 8), (4, 0)]


class Unit:
    """One activation of the family: the op, its backward op, the extra
    arguments after x and the float64 reference."""

    def __init__(self, name: str, extra: tuple = ()):
        self.name, self.extra = name, extra
        self.op = getattr(torch.ops.my_ops, name).default
        self.backward_op = getattr(torch.ops.my_ops, f"{name}_backward").default

    def __call__(self, x):
        return getattr(my_ops, self.name)(x, *self.extra)

    def reference(self, x):
        return getattr(reference, self.name)(x, *self.extra)

    def __repr__(self):
        return "-".join([self.name, *self.extra])


UNITS = [Unit("silu_and_mul"), Unit("gelu_and_mul", ("none",)), Unit("gelu_and_mul", ("tanh",))]


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


@pytest.mark.parametrize("module, unit_index", [(lambda: my_ops.SiluAndMul(), 0),
                                                 (lambda: my_ops.GeluAndMul(), 1),
                                                 (lambda: my_ops.GeluAndMul("tanh"), 2)])
def test_module(module, unit_index, device):
    x = make_input((4, 64), torch.float16, device)
    assert_matches(module()(x), UNITS[unit_index].reference(x), torch.float16, scale=2)


def test_module_repr():
    assert "approximate='tanh'" in repr(my_ops.GeluAndMul("tanh"))


# ---------------------------------------------------------------- opcheck
# Each sample by name: (unit index, args builder).
OPCHECK_SAMPLES = {
    "float32-grad": lambda u, d: (u.op, (torch.randn(4, 10, device=d, requires_grad=True), *u.extra)),
    "bfloat16": lambda u, d: (u.op, (torch.randn(2, 3, 64, device=d, dtype=torch.bfloat16), *u.extra)),
    "transposed": lambda u, d: (u.op, (torch.randn(6, 4, device=d).t(), *u.extra)),
    "sliced": lambda u, d: (u.op, (torch.randn(5, 24, device=d)[:, 4:20], *u.extra)),
    "backward": lambda u, d: (u.backward_op, (torch.randn(3, 5, device=d), torch.randn(3, 10, device=d), *u.extra)),
}


@pytest.mark.parametrize("sample", OPCHECK_SAMPLES)
def test_opcheck(unit, sample, device):
    op, args = OPCHECK_SAMPLES[sample](unit, device)
    torch.library.opcheck(op, args)


# -------------------------------------------------------------- bad input
def test_odd_last_dim_rejected(unit, device):
    with pytest.raises(RuntimeError, match=rf"my_ops.{unit.name}: expected the last dimension of x to be even, but got 7"):
        unit(torch.randn(3, 7, device=device))


def test_zero_dim_rejected(unit, device):
    with pytest.raises(RuntimeError, match=rf"my_ops.{unit.name}: expected x to have at least 1 dimension"):
        unit(torch.tensor(2.0, device=device))


def test_integer_rejected(unit, device):
    with pytest.raises(RuntimeError, match=rf"my_ops.{unit.name}: expected x to be a float32, float64, float16 or bfloat16 tensor, but got torch.int16"):
        unit(torch.ones(2, 4, dtype=torch.int16, device=device))


def test_backward_grad_shape_rejected(unit, device):
    with pytest.raises(RuntimeError, match=rf"my_ops.{unit.name}_backward: expected grad_out to have shape \[3, 5\] \(x with its last dimension halved\), but got \[3, 10\]"):
        unit.backward_op(torch.randn(3, 10, device=device), torch.randn(3, 10, device=device), *unit.extra)


@pytest.mark.parametrize("fake", [False, True])
def test_unknown_approximation_rejected(fake, device):
    x = torch.randn(3, 8, device="meta" if fake else device)
    message = r"my_ops.gelu_and_mul: expected approximate to be 'none' or 'tanh', but got 'fast'"
    with pytest.raises(RuntimeError, match=message):
        my_ops.gelu_and_mul(x, "fast")
    with pytest.raises(RuntimeError, match=message.replace("mul:", "mul_backward:")):
        torch.ops.my_ops.gelu_and_mul_backward(torch.randn(3, 4, device=x.device), x, "fast")


@requires_cuda()
def test_backward_mixed_devices_rejected(unit):
    with pytest.raises(RuntimeError, match=rf"my_ops.{unit.name}_backward: expected grad_out to be on the same device as x \(cuda:0\), but got cpu"):
        unit.backward_op(torch.randn(3, 5), torch.randn(3, 10, device="cuda"), *unit.extra)


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
