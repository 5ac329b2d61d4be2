"""torch.func.vjp's vjp_fn called outside the transform, then differentiated
by ordinary autograd (double backward through a functional VJP): the
gradient must reach the caller's tensors, as it does for torch's own ops.
The backward formulas used to record through a short path that kept the
ended transform's wrappers, and x.grad stayed None."""

from __future__ import annotations

import pytest
import torch
import torch.nn.functional as F

import my_ops

W = torch.rand(8, dtype=torch.float64)
OPS = {
    "rms_norm": (lambda x: my_ops.rms_norm(x, W, 1e-6), lambda x: F.rms_norm(x, (8,), W, 1e-6)),
    "mul": (lambda x: my_ops.mul(x, x), lambda x: x * x),
    "muladd": (lambda x: my_ops.muladd(x, x, 0.5), lambda x: x * x + 0.5),
    "short_kernel": (lambda x: my_ops.short_kernel(x * x), lambda x: x * x * 1.23),
    "matmul": (lambda x: my_ops.matmul(x, x.mT), lambda x: x @ x.mT),
    "silu_and_mul": (my_ops.silu_and_mul, lambda x: F.silu(x[..., :4]) * x[..., 4:]),
    "gelu_and_mul": (lambda x: my_ops.gelu_and_mul(x, "tanh"),
                     lambda x: F.gelu(x[..., :4], approximate="tanh") * x[..., 4:]),
}


@pytest.mark.parametrize("name", OPS)
def test_gradient_of_vjp_fn_reaches_the_input(name):
    ours, reference = OPS[name]
    torch.manual_seed(0)
    x = torch.randn(3, 8, dtype=torch.float64, requires_grad=True)
    x_ref = x.detach().clone().requires_grad_()
    results = []
    for f, inp in ((ours, x), (reference, x_ref)):
        out, vjp_fn = torch.func.vjp(f, inp)
        (g,) = vjp_fn(torch.ones_like(out) * 0.7)
        (g * g).sum().backward()
        results.append(inp.grad)
    assert results[0] is not None, "the gradient did not reach x"
    torch.testing.assert_close(results[0], results[1])
