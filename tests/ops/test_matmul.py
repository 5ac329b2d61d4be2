"""matmul: [M, K] @ [K, N]."""

from __future__ import annotations

import pytest
import torch

import my_ops
from conftest import LAYOUTS, TOLERANCES, assert_matches, make_input

# Edges of the 64 x 64 x 16 CUDA tiles and the 64 x 256 x 128 CPU blocks.
SHAPES = [(1, 1, 1), (3, 0, 4), (0, 5, 3), (5, 7, 3), (64, 16, 64), (65, 17, 63), (70, 150, 300), (130, 257, 129)]


@pytest.mark.parametrize("m,k,n", SHAPES, ids=str)
@pytest.mark.parametrize("layout", LAYOUTS)
def test_matmul(m, k, n, layout, dtype, device):
    a = make_input((m, k), dtype, device, layout, low=-1, high=1)
    b = make_input((k, n), dtype, device, "transposed" if layout == "contiguous" else "contiguous", low=-1, high=1)
    out = my_ops.matmul(a, b)
    ref = a.double() @ b.double()
    # accumulation error grows with k
    assert_matches(out, ref, dtype, scale=max(1.0, k ** 0.5))


def test_matmul_gradcheck(device):
    a = torch.randn(4, 6, dtype=torch.float64, device=device, requires_grad=True)
    b = torch.randn(6, 3, dtype=torch.float64, device=device, requires_grad=True)
    assert torch.autograd.gradcheck(my_ops.matmul, (a, b))


# opcheck samples and bad calls: the spec (specs/matmul.py), run by
# test_op_specs.py and test_rules.py.


def test_matmul_empty_inner_dimension_is_zero(device):
    out = my_ops.matmul(torch.randn(3, 0, device=device), torch.randn(0, 4, device=device))
    assert torch.equal(out, torch.zeros(3, 4, device=device))


# ------------------------------------------------------------ torch.autocast
AUTOCAST_CALLS = {
    "api": my_ops.matmul,
    "torch.ops": torch.ops.my_ops.matmul,
    "compiled": torch.compile(my_ops.matmul, fullgraph=True, backend="aot_eager", dynamic=False),
}


@pytest.mark.parametrize("call", AUTOCAST_CALLS)
@pytest.mark.parametrize("low", [torch.bfloat16, torch.float16], ids=str)
def test_matmul_under_autocast_runs_in_its_dtype(call, low, device):
    """As torch.matmul: float32 operands are cast to the region's dtype, the
    product has it, and the gradients reach the float32 operands as float32."""
    a = make_input((33, 70), torch.float32, device, low=-1, high=1).requires_grad_()
    b = make_input((70, 9), torch.float32, device, "transposed", low=-1, high=1).requires_grad_()
    with torch.autocast(device, dtype=low):
        out = AUTOCAST_CALLS[call](a, b)
    a_low, b_low = a.detach().to(low).double(), b.detach().to(low).double()
    assert_matches(out, a_low @ b_low, low, scale=70 ** 0.5)
    grad = torch.randn_like(out)  # (in the region's dtype, as out)
    out.backward(grad)
    # the gradients are products in the region's dtype, cast back to float32
    rtol, atol = TOLERANCES[low]
    for got, want in ((a.grad, grad.double() @ b_low.T), (b.grad, a_low.T @ grad.double())):
        assert got.dtype == torch.float32
        torch.testing.assert_close(got.double(), want, rtol=rtol * 10, atol=atol * 10)


def test_matmul_under_autocast_leaves_float64_alone(device):
    a = torch.randn(6, 5, dtype=torch.float64, device=device)
    b = torch.randn(5, 4, dtype=torch.float64, device=device)
    with torch.autocast(device, dtype=torch.bfloat16):
        for call in (my_ops.matmul, torch.ops.my_ops.matmul):
            assert_matches(call(a, b), a @ b, torch.float64)


@pytest.mark.parametrize("call", ["api", "torch.ops"])
def test_matmul_in_nested_autocast_regions(call, device):
    """The innermost region decides, as for torch.matmul, and each call leaves
    the regions' state as it found it, also when it is refused."""
    fn = AUTOCAST_CALLS[call]
    a = make_input((5, 7), torch.float32, device, low=-1, high=1)
    b = make_input((7, 3), torch.float32, device, low=-1, high=1)
    with torch.autocast(device, dtype=torch.bfloat16):
        with torch.autocast(device, dtype=torch.float16):
            assert fn(a, b).dtype == torch.float16 == torch.matmul(a, b).dtype
        with torch.autocast(device, enabled=False):
            assert fn(a, b).dtype == torch.float32 == torch.matmul(a, b).dtype
        assert fn(a, b).dtype == torch.bfloat16 == torch.matmul(a, b).dtype
        with pytest.raises(RuntimeError, match="my_ops.matmul: "):
            fn(a, a)  # [5, 7] @ [5, 7]: refused in the kernel, below the autocast kernel
        assert torch.is_autocast_enabled(device) and torch.get_autocast_dtype(device) == torch.bfloat16
        assert fn(a, b).dtype == torch.bfloat16
    assert not torch.is_autocast_enabled(device)
