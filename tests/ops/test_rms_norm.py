"""rms_norm (forward and backward) and fused_add_rms_norm."""

from __future__ import annotations

import pytest
import torch

import my_ops
from conftest import LAYOUTS, assert_matches, make_input, requires_cuda
from my_ops import reference

# hidden: 1, odd, not a multiple of 8, multiples of the 16-byte vector, and
# larger than the register-resident CUDA path (70000) to reach the generic
# one; narrow rows (16 to 256: a few lanes of a warp per row on CUDA, in each
# group size), odd widths (4097, 2881), and enough unaligned rows that CUDA
# blocks walk several rows each (3000 x 1031, 20000 x 33).
SHAPES = [(1,), (7,), (3, 1), (5, 13), (4, 1000), (2, 3, 4096), (3, 5000), (2, 16384), (1, 70000),
          (3000, 64), (0, 8), (4, 0), (700, 16), (300, 32), (2, 257, 128), (130, 256), (9, 4097),
          (5, 2881), (3000, 1031), (20000, 33)]


@pytest.mark.parametrize("shape", SHAPES, ids=str)
@pytest.mark.parametrize("layout", LAYOUTS)
def test_rms_norm(shape, layout, dtype, device):
    x = make_input(shape, dtype, device, layout)
    weight = make_input(shape[-1:], dtype, device, low=0.5, high=1.5)
    eps = float(torch.empty(()).uniform_(1e-6, 1e-3))
    out = my_ops.rms_norm(x, weight, eps)
    assert out.is_contiguous()
    assert_matches(out, reference.rms_norm(x, weight, eps), dtype)


# (100, 36872): rows too wide for CUDA's held-vector backward in every dtype,
# so its column split: several rows a chunk, a last column tile of a few
# vectors, a row stride when sliced (offset and sliced_odd: the generic kernel).
@pytest.mark.parametrize("shape", [(1,), (5, 13), (4, 1000), (2, 3, 4096), (3, 5000), (1, 70000), (600, 64),
                                   (0, 8), (300, 32), (2, 257, 128), (130, 256), (9, 4097), (100, 36872)],
                         ids=str)
@pytest.mark.parametrize("layout", ["contiguous", "offset", "sliced", "sliced_odd"])
def test_rms_norm_backward(shape, layout, dtype, device):
    x = make_input(shape, dtype, device, layout)
    weight = make_input(shape[-1:], dtype, device, low=0.5, high=1.5)
    grad_layout = "transposed" if layout == "contiguous" and len(shape) > 1 else layout
    grad = make_input(shape, dtype, device, grad_layout)
    eps = 1e-5
    x_ = x.detach().requires_grad_()
    w_ = weight.detach().requires_grad_()
    my_ops.rms_norm(x_, w_, eps).backward(grad)

    x64 = x.double().requires_grad_()
    w64 = weight.double().requires_grad_()
    reference.rms_norm(x64, w64, eps).backward(grad.double())
    # dx cancels two terms of the size of rstd * w * dy; dweight sums over rows
    assert_matches(x_.grad, x64.grad, dtype, scale=4)
    rows = max(1, x.numel() // max(1, shape[-1]))
    assert_matches(w_.grad, w64.grad, dtype, scale=4 * rows ** 0.5)


def test_rms_norm_backward_op_directly(dtype, device):
    """rms_norm_backward is itself a registered op with CPU and CUDA kernels."""
    x = make_input((6, 40), dtype, device)
    weight = make_input((40,), dtype, device)
    grad = make_input((6, 40), dtype, device)
    grad_x, grad_weight = torch.ops.my_ops.rms_norm_backward(grad, x, weight, 1e-6)
    x64 = x.double().requires_grad_()
    w64 = weight.double().requires_grad_()
    reference.rms_norm(x64, w64, 1e-6).backward(grad.double())
    assert_matches(grad_x, x64.grad, dtype, scale=4)
    assert_matches(grad_weight, w64.grad, dtype, scale=8)
    # eps left out: the forward's default, so the op is the gradient of rms_norm(x, weight)
    left_out = torch.ops.my_ops.rms_norm_backward(grad, x, weight)
    assert all(torch.equal(a, b) for a, b in zip(left_out, (grad_x, grad_weight)))


# Odd widths in every covering-vector layout of the CUDA forward (by covering
# vectors: up to 160, 512, 1024, 2048, more), with more rows than the
# persistent grid has blocks, so that each block walks several rows.
@requires_cuda()
@pytest.mark.parametrize("hidden", [1031, 2881, 4097, 8193, 14337, 20003])
@pytest.mark.parametrize("dtype", [torch.bfloat16, torch.float32], ids=str)
def test_cuda_odd_width_layouts(hidden, dtype):
    rows = 3000 if hidden < 8000 else 1500
    x = make_input((rows, hidden), dtype, "cuda")
    weight = make_input((hidden,), dtype, "cuda", low=0.5, high=1.5)
    assert_matches(my_ops.rms_norm(x, weight, 1e-6), reference.rms_norm(x, weight, 1e-6), dtype)
    residual = make_input((rows, hidden), dtype, "cuda")
    want_x, want_residual = reference.fused_add_rms_norm(x, residual, weight, 1e-6)
    my_ops.fused_add_rms_norm(x, residual, weight, 1e-6)
    assert_matches(residual, want_residual, dtype)
    assert_matches(x, want_x, dtype)


# The CUDA kernels spread a row over a block by its number of 16-byte vectors
# (1 to 8 per thread; 256-, 512- or 1024-thread blocks) and, in the forward
# kernels, by the number of rows (fewer than two per multiprocessor: more
# threads per row). These sizes reach each of those layouts in bfloat16 (8
# elements a vector) and float32 (4), ragged (4104) and past them (65536:
# the backward's column split); 400 rows fill a GPU of up to 200 SMs.
@requires_cuda()
@pytest.mark.parametrize("rows", [5, 400])
@pytest.mark.parametrize("hidden", [2048, 4096, 4104, 8192, 16384, 32768, 65536])
@pytest.mark.parametrize("dtype", [torch.bfloat16, torch.float32], ids=str)
def test_cuda_row_layouts(rows, hidden, dtype):
    x = make_input((rows, hidden), dtype, "cuda")
    weight = make_input((hidden,), dtype, "cuda", low=0.5, high=1.5)
    grad = make_input((rows, hidden), dtype, "cuda")
    x_, w_ = x.detach().requires_grad_(), weight.detach().requires_grad_()
    out = my_ops.rms_norm(x_, w_, 1e-6)
    out.backward(grad)
    x64, w64 = x.double().requires_grad_(), weight.double().requires_grad_()
    want = reference.rms_norm(x64, w64, 1e-6)
    want.backward(grad.double())
    assert_matches(out, want, dtype)
    assert_matches(x_.grad, x64.grad, dtype, scale=4)
    assert_matches(w_.grad, w64.grad, dtype, scale=4 * rows ** 0.5)

    residual = make_input((rows, hidden), dtype, "cuda")
    want_x, want_residual = reference.fused_add_rms_norm(x, residual, weight, 1e-6)
    my_ops.fused_add_rms_norm(x, residual, weight, 1e-6)
    assert_matches(residual, want_residual, dtype)
    assert_matches(x, want_x, dtype)


def test_rms_norm_gradcheck(device):
    x = torch.randn(3, 2, 9, dtype=torch.float64, device=device, requires_grad=True)
    w = torch.rand(9, dtype=torch.float64, device=device, requires_grad=True)
    assert torch.autograd.gradcheck(lambda x, w: my_ops.rms_norm(x, w, 1e-5), (x, w))


def test_float64_takes_an_eps_float32_cannot_hold(device):
    """float64 x adds eps in float64, so an eps below float32's range (refused for 16- and 32-bit x, where it
    would become 0) keeps its meaning: zero rows stay 0, rows of tiny values follow the float64 reference;
    the functional and in-place fused add too."""
    x = make_input((6, 40), torch.float64, device, low=-1e-30, high=1e-30)
    x[0] = 0
    weight = make_input((40,), torch.float64, device, low=0.5, high=1.5)
    for eps in (1e-50, 1e-300):
        out = my_ops.rms_norm(x, weight, eps)
        torch.testing.assert_close(out, reference.rms_norm(x, weight, eps), rtol=1e-12, atol=0)
        assert not out.isnan().any()
        new_x, new_residual = torch.ops.my_ops.fused_add_rms_norm_functional(x, torch.zeros_like(x), weight, eps)
        torch.testing.assert_close(new_x, reference.rms_norm(x, weight, eps), rtol=1e-12, atol=0)
    with pytest.raises(RuntimeError, match=r"my_ops.rms_norm: expected eps to be 0 or from 1.4e-45"):
        my_ops.rms_norm(x.float(), weight.float(), 1e-50)


def test_rms_norm_module(device):
    norm = my_ops.RMSNorm(64, eps=1e-5, device=device, dtype=torch.bfloat16)
    with torch.no_grad():
        norm.weight.uniform_(0.5, 1.5)
    x = make_input((4, 64), torch.bfloat16, device)
    assert_matches(norm(x), reference.rms_norm(x, norm.weight.detach(), 1e-5), torch.bfloat16)
    assert "64, eps=1e-05" in repr(norm)


# ------------------------------------------------------- fused_add_rms_norm
@pytest.mark.parametrize("shape", SHAPES, ids=str)
@pytest.mark.parametrize("layout", LAYOUTS)
def test_fused_add_rms_norm(shape, layout, dtype, device):
    x = make_input(shape, dtype, device, layout)
    residual_layout = {"contiguous": "offset", "sliced": "sliced_odd", "sliced_odd": "sliced"}.get(layout, "contiguous")
    residual = make_input(shape, dtype, device, residual_layout)
    weight = make_input(shape[-1:], dtype, device, low=0.5, high=1.5)
    weight0 = weight.clone()
    want_x, want_residual = reference.fused_add_rms_norm(x, residual, weight, 1e-6)
    x_version = x._version
    my_ops.fused_add_rms_norm(x, residual, weight, 1e-6)
    assert_matches(residual, want_residual, dtype)
    assert_matches(x, want_x, dtype)
    assert torch.equal(weight, weight0)
    if x.numel():
        assert x._version > x_version


def test_fused_add_rms_norm_writes_only_the_views(dtype, device):
    x_buffer = make_input((8, 64), dtype, device)
    r_buffer = make_input((8, 64), dtype, device)
    x_before, r_before = x_buffer.clone(), r_buffer.clone()
    x, residual = x_buffer[1:7:2, :32], r_buffer[2:5, 16:48]
    weight = make_input((32,), dtype, device)
    want_x, want_residual = reference.fused_add_rms_norm(x, residual, weight, 1e-6)
    my_ops.fused_add_rms_norm(x, residual, weight, 1e-6)
    assert_matches(x, want_x, dtype)
    assert_matches(residual, want_residual, dtype)
    x_outside = torch.ones_like(x_buffer, dtype=torch.bool)
    x_outside[1:7:2, :32] = False
    r_outside = torch.ones_like(r_buffer, dtype=torch.bool)
    r_outside[2:5, 16:48] = False
    assert torch.equal(x_buffer[x_outside], x_before[x_outside])
    assert torch.equal(r_buffer[r_outside], r_before[r_outside])


# q sliced from a fused qkv projection and normalised per head (q/k-norm):
# correct, and the rest of the projection untouched. (Its rows are not evenly
# spaced, so the binding copies them; evenly spaced rows, as with one head,
# are read in place.)
@pytest.mark.parametrize("head_dim", [64, 128])
def test_qk_norm_of_fused_projection(head_dim, dtype, device):
    heads = 4
    qkv = make_input((3, 5, 3 * heads * head_dim), dtype, device)
    before = qkv.clone()
    q = qkv[..., : heads * head_dim].unflatten(-1, (heads, head_dim))
    weight = make_input((head_dim,), dtype, device, low=0.5, high=1.5)
    assert_matches(my_ops.rms_norm(q, weight, 1e-6), reference.rms_norm(q, weight, 1e-6), dtype)
    assert torch.equal(qkv, before)


# opcheck samples and bad calls (refused with their messages, nothing
# written, on every device; mixed devices either way): the specs
# (specs/rms_norm.py), run by test_op_specs.py and test_rules.py.


# ---------------------------------------------------- higher-order gradients
def _relative_error(out, ref) -> float:
    assert not out.isnan().any(), "NaN in the result"
    return ((out.double() - ref.double()).norm() / ref.double().norm()).item()


SECOND_ORDER_TOLERANCE = {torch.float32: 1e-4, torch.bfloat16: 5e-2}


def test_rms_norm_gradgradcheck(device):
    x = make_input((3, 7), torch.float64, device).requires_grad_()
    w = make_input((7,), torch.float64, device, low=0.5, high=1.5).requires_grad_()
    assert torch.autograd.gradgradcheck(lambda a, b: my_ops.rms_norm(a, b, 1e-5), (x, w))


def test_rms_norm_backward_op_is_differentiable(device):
    """The fused backward op has a derivative of its own (and one of that)."""
    g = make_input((3, 6), torch.float64, device).requires_grad_()
    x = make_input((3, 6), torch.float64, device).requires_grad_()
    w = make_input((6,), torch.float64, device, low=0.5, high=1.5).requires_grad_()
    fn = lambda g, x, w: torch.ops.my_ops.rms_norm_backward(g, x, w, 1e-5)  # noqa: E731
    assert torch.autograd.gradcheck(fn, (g, x, w))
    assert torch.autograd.gradgradcheck(fn, (g, x, w))


@pytest.mark.parametrize("dtype", [torch.float32, torch.bfloat16], ids=str)
def test_rms_norm_second_order_matches_pytorch(dtype, device):
    """A gradient penalty: d/d(x, w) of |d loss/dx|^2, against F.rms_norm in float64."""
    x = make_input((5, 64), dtype, device)
    w = make_input((64,), dtype, device, low=0.5, high=1.5)

    def second_order(fn, x, w):
        x, w = x.detach().requires_grad_(), w.detach().requires_grad_()
        (g,) = torch.autograd.grad((fn(x, w) ** 2).sum(), x, create_graph=True)
        return torch.autograd.grad(g.pow(2).sum(), (x, w))

    ours = second_order(lambda a, b: my_ops.rms_norm(a, b, 1e-6), x, w)
    ref = second_order(lambda a, b: torch.nn.functional.rms_norm(a, (64,), b, 1e-6), x.double(), w.double())
    for out, want in zip(ours, ref):
        assert out.dtype == dtype
        assert want.abs().max() > 0
        assert _relative_error(out, want) < SECOND_ORDER_TOLERANCE[dtype]


def test_first_order_backward_runs_the_fused_op_alone(device):
    from torch.utils._python_dispatch import TorchDispatchMode

    class Calls(TorchDispatchMode):
        def __init__(self):
            super().__init__()
            self.names = []

        def __torch_dispatch__(self, func, types, args=(), kwargs=None):
            self.names.append(str(func.overloadpacket))
            return func(*args, **(kwargs or {}))

    x = make_input((4, 32), torch.float32, device).requires_grad_()
    w = make_input((32,), torch.float32, device).requires_grad_()
    y = my_ops.rms_norm(x, w, 1e-6)
    with Calls() as calls:
        y.backward(torch.ones_like(y))
    assert "my_ops.rms_norm_backward" in calls.names
    assert not any(name.startswith("aten.rsqrt") or name.startswith("aten.mean") for name in calls.names)


def test_rms_norm_third_order_matches_pytorch(device):
    """Each order differentiates the one before (nothing is silently zero)."""
    x0 = make_input((3, 8), torch.float64, device, low=-2, high=2)
    w0 = make_input((8,), torch.float64, device, low=0.5, high=1.5)

    def third_order(fn):
        x, w = x0.clone().requires_grad_(), w0.clone().requires_grad_()
        (g,) = torch.autograd.grad(fn(x, w).pow(3).sum(), x, create_graph=True)
        (h,) = torch.autograd.grad(g.pow(2).sum(), x, create_graph=True)
        return torch.autograd.grad(h.sin().sum(), (x, w))

    ours = third_order(lambda a, b: my_ops.rms_norm(a, b, 1e-5))
    ref = third_order(lambda a, b: torch.nn.functional.rms_norm(a, (8,), b, 1e-5))
    for out, want in zip(ours, ref):
        assert want.abs().max() > 0
        torch.testing.assert_close(out, want, rtol=1e-9, atol=1e-9)


def test_rms_norm_module_without_weight_matches_torch():
    x = torch.randn(4, 16, dtype=torch.float64)
    ours = my_ops.RMSNorm(16, eps=1e-6, elementwise_affine=False)
    theirs = torch.nn.RMSNorm(16, eps=1e-6, elementwise_affine=False)
    assert ours.weight is None and set(ours.state_dict()) == set(theirs.state_dict()) == set()
    torch.testing.assert_close(ours(x), theirs(x), rtol=1e-12, atol=1e-12)


def test_rms_norm_module_normalized_shape():
    assert my_ops.RMSNorm((16,)).weight.shape == (16,) and my_ops.RMSNorm([16]).normalized_shape == (16,)
    with pytest.raises(ValueError, match=r"^my_ops\.RMSNorm: normalizes over the last dimension only"):
        my_ops.RMSNorm((2, 8))


@pytest.mark.parametrize("eps", [-1.0, float("nan"), float("inf")])
def test_rms_norm_module_refuses_a_bad_eps_when_built(eps):
    """As the forward would refuse it, at construction rather than at the first call."""
    with pytest.raises(ValueError, match=r"^my_ops\.RMSNorm: expected eps to be a finite number >= 0 "
                                         r"\(or None for the machine epsilon\), but got"):
        my_ops.RMSNorm(8, eps=eps)
    assert my_ops.RMSNorm(8, eps=0.0).eps == 0.0 and my_ops.RMSNorm(8, eps=None).eps is None
