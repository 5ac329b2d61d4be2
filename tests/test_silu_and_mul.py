"""silu_and_mul (SwiGLU gate), forward and backward."""

from __future__ import annotations

import pytest
import torch
import torch.nn.functional as F

import my_ops
from conftest import LAYOUTS, assert_matches, make_input, requires_cuda

# last dimension 2d: d = 1, odd, not a multiple of 8, multiples of 8, large
SHAPES = [(2,), (3, 2), (5, 26), (4, 2000), (2, 3, 8192), (3, 10006), (20000, 16), (0, 8), (4, 0)]


def reference(x):
    d = x.shape[-1] // 2
    x64 = x.double()
    return F.silu(x64[..., :d]) * x64[..., d:]


@pytest.mark.parametrize("shape", SHAPES, ids=str)
@pytest.mark.parametrize("layout", LAYOUTS)
def test_silu_and_mul(shape, layout, dtype, device):
    x = make_input(shape, dtype, device, layout, low=-6, high=6)
    out = my_ops.silu_and_mul(x)
    assert out.is_contiguous()
    assert_matches(out, reference(x), dtype, scale=2)


@pytest.mark.parametrize("shape", [(3, 2), (5, 26), (4, 2000), (2, 3, 8192), (20000, 16), (0, 8)], ids=str)
@pytest.mark.parametrize("layout", ["contiguous", "offset"])
def test_silu_and_mul_backward(shape, layout, dtype, device):
    x = make_input(shape, dtype, device, layout, low=-6, high=6)
    grad = make_input((*shape[:-1], shape[-1] // 2), dtype, device)
    x_ = x.detach().requires_grad_()
    my_ops.silu_and_mul(x_).backward(grad)
    x64 = x.double().requires_grad_()
    reference(x64).backward(grad.double())
    assert_matches(x_.grad, x64.grad, dtype, scale=4)


# Large inputs (at least 4096 16-byte vectors per multiprocessor) take the
# CUDA layout with two vectors per thread: 1300 rows of d = 4104 do on a GPU
# of up to 160 SMs, and leave a ragged last block in each row.
@pytest.mark.parametrize("dtype", [torch.bfloat16, torch.float32], ids=str)
def test_large_input_layout(dtype, device):
    x = make_input((1300, 2 * 4104), dtype, device, low=-6, high=6)
    grad = make_input((1300, 4104), dtype, device)
    x_ = x.detach().requires_grad_()
    out = my_ops.silu_and_mul(x_)
    out.backward(grad)
    x64 = x.double().requires_grad_()
    want = reference(x64)
    want.backward(grad.double())
    assert_matches(out, want, dtype, scale=2)
    assert_matches(x_.grad, x64.grad, dtype, scale=4)


# Gates where e^-g leaves float32's range (|g| > 87): e^-g is +inf or 0 there,
# which the CPU kernel's exp polynomial returns too; ordinary gates around them.
@pytest.mark.parametrize("dtype", [torch.float32, torch.bfloat16], ids=str)
def test_extreme_gates(dtype, device):
    gates = torch.tensor([-1000.0, -100.0, -89.0, -88.0, -87.0, -86.9, 86.9, 87.0, 88.0, 88.7, 89.0,
                          100.0, 1000.0, float("inf")])
    gates = torch.cat([gates, torch.empty(18).uniform_(-6, 6)])
    up = torch.empty(len(gates)).uniform_(0.5, 2) * torch.where(torch.rand(len(gates)) < 0.5, -1.0, 1.0)
    x = torch.cat([gates, up]).reshape(1, -1).to(dtype=dtype, device=device)
    out = my_ops.silu_and_mul(x)
    assert_matches(out, reference(x), dtype, scale=2)


def test_silu_and_mul_gradcheck(device):
    x = torch.randn(3, 2, 10, dtype=torch.float64, device=device, requires_grad=True)
    assert torch.autograd.gradcheck(my_ops.silu_and_mul, (x,))


def test_module(device):
    x = make_input((4, 64), torch.float16, device)
    assert_matches(my_ops.SiluAndMul()(x), reference(x), torch.float16, scale=2)


@pytest.mark.parametrize("sample", ["float32-grad", "bfloat16", "transposed", "backward"])
def test_opcheck(sample, device):
    if sample == "float32-grad":
        op, args = torch.ops.my_ops.silu_and_mul.default, (torch.randn(4, 10, device=device, requires_grad=True),)
    elif sample == "bfloat16":
        op, args = torch.ops.my_ops.silu_and_mul.default, (torch.randn(2, 3, 64, device=device, dtype=torch.bfloat16),)
    elif sample == "transposed":
        op, args = torch.ops.my_ops.silu_and_mul.default, (torch.randn(6, 4, device=device).t(),)
    else:
        op, args = torch.ops.my_ops.silu_and_mul_backward.default, (torch.randn(3, 5, device=device), torch.randn(3, 10, device=device))
    torch.library.opcheck(op, args)


def test_odd_last_dim_rejected(device):
    with pytest.raises(RuntimeError, match=r"my_ops.silu_and_mul: expected the last dimension of x to be even, but got 7"):
        my_ops.silu_and_mul(torch.randn(3, 7, device=device))


def test_zero_dim_rejected(device):
    with pytest.raises(RuntimeError, match=r"my_ops.silu_and_mul: expected x to have at least 1 dimension"):
        my_ops.silu_and_mul(torch.tensor(2.0, device=device))


def test_integer_rejected(device):
    with pytest.raises(RuntimeError, match=r"my_ops.silu_and_mul: expected x to be a float32, float64, float16 or bfloat16 tensor, but got torch.int16"):
        my_ops.silu_and_mul(torch.ones(2, 4, dtype=torch.int16, device=device))


def test_backward_grad_shape_rejected(device):
    with pytest.raises(RuntimeError, match=r"my_ops.silu_and_mul_backward: expected grad_out to have shape \[3, 5\] \(x with its last dimension halved\), but got \[3, 10\]"):
        torch.ops.my_ops.silu_and_mul_backward(torch.randn(3, 10, device=device), torch.randn(3, 10, device=device))


@requires_cuda()
def test_backward_mixed_devices_rejected():
    with pytest.raises(RuntimeError, match=r"my_ops.silu_and_mul_backward: expected grad_out to be on the same device as x \(cuda:0\), but got cpu"):
        torch.ops.my_ops.silu_and_mul_backward(torch.randn(3, 5), torch.randn(3, 10, device="cuda"))


# ---------------------------------------------------- higher-order gradients
def test_silu_and_mul_gradgradcheck(device):
    x = make_input((3, 10), torch.float64, device).requires_grad_()
    assert torch.autograd.gradgradcheck(my_ops.silu_and_mul, (x,))


def test_silu_and_mul_backward_op_is_differentiable(device):
    g = make_input((3, 5), torch.float64, device).requires_grad_()
    x = make_input((3, 10), torch.float64, device).requires_grad_()
    assert torch.autograd.gradcheck(torch.ops.my_ops.silu_and_mul_backward, (g, x))
    assert torch.autograd.gradgradcheck(torch.ops.my_ops.silu_and_mul_backward, (g, x))


@pytest.mark.parametrize("dtype", [torch.float32, torch.bfloat16], ids=str)
def test_silu_and_mul_second_order_matches_eager(dtype, device):
    x = make_input((6, 64), dtype, device)

    def second_order(fn, x):
        x = x.detach().requires_grad_()
        (g,) = torch.autograd.grad((fn(x) ** 2).sum(), x, create_graph=True)
        (h,) = torch.autograd.grad(g.pow(2).sum(), x)
        return h

    def eager(x):
        gate, up = x.chunk(2, dim=-1)
        return torch.nn.functional.silu(gate) * up

    ours = second_order(my_ops.silu_and_mul, x)
    ref = second_order(eager, x.double())
    assert ours.dtype == dtype and not ours.isnan().any()
    error = ((ours.double() - ref).norm() / ref.norm()).item()
    assert error < {torch.float32: 1e-4, torch.bfloat16: 5e-2}[dtype]
