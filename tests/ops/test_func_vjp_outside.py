"""torch.func.vjp's vjp_fn called outside the transform, then differentiated
by ordinary autograd (double backward through a functional VJP): the
gradient must reach the caller's tensors, as it does for torch's own ops.
The backward formulas used to record through a short path that kept the
ended transform's wrappers, and x.grad stayed None. (Every op with `func` in
its spec, of x * x so that its gradient depends on x, against its float64
reference.)"""

from __future__ import annotations

import pytest
import torch

import specs


@pytest.mark.parametrize("spec", specs.where(func=True), ids=repr)
def test_gradient_of_vjp_fn_reaches_the_input(spec):
    x = torch.randn(3, 8, dtype=torch.float64, requires_grad=True)
    args = spec.args_for(x.detach())
    x_ref = x.detach().clone().requires_grad_()
    results = []
    for f, inp in ((spec.call, x), (spec.ref, x_ref)):
        out, vjp_fn = torch.func.vjp(lambda v: f(v * v, args), inp)
        (g,) = vjp_fn(torch.ones_like(out) * 0.7)
        (g * g).sum().backward()
        results.append(inp.grad)
    assert results[0] is not None, "the gradient did not reach x"
    assert results[1].abs().max() > 0
    torch.testing.assert_close(results[0], results[1])
