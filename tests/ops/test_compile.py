"""torch.compile(fullgraph=True) over the ops: no graph break, same results as eager."""

from __future__ import annotations

import pytest
import torch
from torch import nn

import my_ops
from conftest import INDUCTOR_ON_CPU, assert_matches, make_input


class GatedBlock(nn.Module):
    """norm -> up-projection -> SwiGLU gate -> element-wise ops, every op from my_ops."""

    def __init__(self, hidden: int, device) -> None:
        super().__init__()
        self.norm = my_ops.RMSNorm(hidden, device=device)
        self.up = nn.Parameter(torch.randn(hidden, 4 * hidden, device=device) / hidden ** 0.5)
        self.act = my_ops.SiluAndMul()

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        h = self.act(my_ops.matmul(self.norm(x), self.up))
        return my_ops.short_kernel(my_ops.muladd(h, my_ops.mul(h, h), 0.5))


@pytest.mark.parametrize("backend", ["aot_eager", "inductor"])
def test_compiled_block_matches_eager(backend, device):
    if backend == "inductor" and device == "cpu" and not INDUCTOR_ON_CPU:
        pytest.skip("inductor's CPU toolchain is not set up on this platform's test job (conftest)")
    torch._dynamo.reset()
    block = GatedBlock(32, device)
    with torch.no_grad():
        block.norm.weight.uniform_(0.5, 1.5)
    x = make_input((6, 32), torch.float32, device, low=-1, high=1)

    eager_out = block(x)
    eager_out.sum().backward()
    eager_grads = [p.grad.clone() for p in block.parameters()]
    block.zero_grad()

    compiled = torch.compile(block, fullgraph=True, backend=backend)
    out = compiled(x)
    out.sum().backward()
    assert_matches(out, eager_out.double(), torch.float32)
    for p, g in zip(block.parameters(), eager_grads):
        assert_matches(p.grad, g.double(), torch.float32, scale=10)


def test_compiled_autograd_over_eager_nodes(device):
    """torch's compiled autograd runs the backward of nodes the ops recorded
    eagerly (it asks each node's class for a key: my_ops' has
    torch.autograd.Function's), with the float64 reference's gradients."""
    torch._dynamo.reset()
    x = make_input((6, 64), torch.float64, device).requires_grad_()
    weight = make_input((32,), torch.float64, device, low=0.5, high=1.5).requires_grad_()

    def loss(norm, act, x, weight):
        return norm(act(x), weight, 1e-6).square().sum()

    with torch._dynamo.compiled_autograd._enable(torch.compile(backend="eager", fullgraph=True)):
        loss(my_ops.rms_norm, my_ops.silu_and_mul, x, weight).backward()
    got = (x.grad, weight.grad)
    want = torch.autograd.grad(loss(my_ops.reference.rms_norm, my_ops.reference.silu_and_mul, x, weight),
                               (x, weight))
    for g, w in zip(got, want):
        assert_matches(g, w, torch.float64, scale=10)


def test_compiled_mutating_ops(device):
    """fused_add_rms_norm and add_out mutate inputs inside a compiled graph."""
    torch._dynamo.reset()

    def step(x, residual, weight, out):
        my_ops.fused_add_rms_norm(x, residual, weight, 1e-6)
        my_ops.add_out(x, residual, out)
        return out * 2

    compiled = torch.compile(step, fullgraph=True, backend="aot_eager")
    args = [make_input((4, 64), torch.float32, device) for _ in range(2)]
    weight = make_input((64,), torch.float32, device, low=0.5, high=1.5)
    eager_args = [a.clone() for a in args]
    eager_out = step(*eager_args, weight, torch.empty(4, 64, device=device))
    out = compiled(*args, weight, torch.empty(4, 64, device=device))
    torch.testing.assert_close(out, eager_out)
    torch.testing.assert_close(args[0], eager_args[0])  # x mutated the same way
    torch.testing.assert_close(args[1], eager_args[1])  # residual too


def test_compile_with_dynamic_shapes(device):
    torch._dynamo.reset()
    fn = torch.compile(lambda x, w: my_ops.rms_norm(my_ops.silu_and_mul(x), w), fullgraph=True,
                       dynamic=True, backend="aot_eager")
    w = make_input((16,), torch.float32, device)
    for rows in (3, 7, 11):
        x = make_input((rows, 32), torch.float32, device)
        torch.testing.assert_close(fn(x, w), my_ops.rms_norm(my_ops.silu_and_mul(x), w))
