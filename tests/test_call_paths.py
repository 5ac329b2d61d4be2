"""The Python API's call path (ops._call): a call that autograd has nothing
to record for skips the op's Autograd kernel; every other call (gradients,
forward-mode AD, functorch transforms, fake tensors, torch.compile) takes the
full path and behaves as the op does."""

from __future__ import annotations

import pytest
import torch
import torch.autograd.forward_ad as fwAD
from torch._subclasses.fake_tensor import FakeTensorMode

import my_ops
from my_ops import reference
from conftest import assert_matches, make_input

CALLS = {
    "rms_norm": (lambda x, w: my_ops.rms_norm(x, w, 1e-6), lambda x, w: reference.rms_norm(x, w, 1e-6)),
    "silu_and_mul": (lambda x, w: my_ops.silu_and_mul(x), lambda x, w: reference.silu_and_mul(x)),
    "gelu_and_mul": (lambda x, w: my_ops.gelu_and_mul(x, "tanh"), lambda x, w: reference.gelu_and_mul(x, "tanh")),
    "mul": (lambda x, w: my_ops.mul(x, x), lambda x, w: x.double() * x.double()),
}


@pytest.mark.parametrize("call", CALLS)
@pytest.mark.parametrize("mode", ["no_grad", "grad, nothing requires grad", "inference_mode"])
def test_idle_autograd_results(call, mode, device):
    fn, ref = CALLS[call]
    x = make_input((5, 16), torch.float32, device)
    weight = torch.nn.Parameter(make_input((16,), torch.float32, device, low=0.5, high=1.5))
    if mode == "grad, nothing requires grad":
        weight.requires_grad_(False)
    context = {"no_grad": torch.no_grad, "inference_mode": torch.inference_mode}.get(mode, torch.enable_grad)
    with context():
        out = fn(x, weight)
    assert not out.requires_grad and out.grad_fn is None
    assert_matches(out, ref(x, weight.detach()), torch.float32, scale=2)


@pytest.mark.parametrize("call", CALLS)
def test_gradients_still_recorded(call, device):
    fn, ref = CALLS[call]
    x = make_input((5, 16), torch.float64, device).requires_grad_()
    weight = make_input((16,), torch.float64, device, low=0.5, high=1.5)
    (grad,) = torch.autograd.grad(fn(x, weight).sum(), x)
    x64 = x.detach().requires_grad_()
    (want,) = torch.autograd.grad(ref(x64, weight).sum(), x64)
    assert_matches(grad, want, torch.float64, scale=10)


@pytest.mark.parametrize("call", CALLS)
@pytest.mark.parametrize("grad_mode", [True, False])
def test_forward_mode_ad_refused(call, grad_mode, device):
    """The ops have no forward-mode formula: a dual tensor is refused, never
    answered with its tangent dropped."""
    fn, _ = CALLS[call]
    x = make_input((5, 16), torch.float32, device)
    weight = make_input((16,), torch.float32, device)
    with torch.set_grad_enabled(grad_mode), fwAD.dual_level():
        dual = fwAD.make_dual(x, torch.randn_like(x))
        with pytest.raises(RuntimeError, match=rf"my_ops.{call}: forward-mode AD .* is not supported"):
            fn(dual, weight)
    with pytest.raises(RuntimeError, match="forward-mode AD"):
        torch.func.jvp(lambda v: fn(v, weight), (x,), (torch.randn_like(x),))


@pytest.mark.parametrize("call", CALLS)
def test_vmap_under_no_grad(call, device):
    fn, ref = CALLS[call]
    xs = make_input((3, 5, 16), torch.float32, device)
    weight = make_input((16,), torch.float32, device, low=0.5, high=1.5)
    with torch.no_grad():
        out = torch.vmap(lambda v: fn(v, weight))(xs)
    assert_matches(out, ref(xs, weight), torch.float32, scale=2)


def test_fake_tensors_under_no_grad():
    with FakeTensorMode(), torch.no_grad():
        out = my_ops.rms_norm(torch.empty(4, 8), torch.empty(8), 1e-6)
        assert out.shape == (4, 8)


# ------------------------------------------------------ rows read in place
def _copies(fn) -> set:
    """The copying aten ops that ran inside fn()."""
    with torch.profiler.profile(activities=[torch.profiler.ProfilerActivity.CPU]) as prof:
        fn()
    return {e.name for e in prof.events()} & {"aten::contiguous", "aten::clone", "aten::copy_"}


ROW_WISE = {
    "rms_norm": lambda x, w: my_ops.rms_norm(x, w, 1e-6),
    "rms_norm_backward": lambda x, w: torch.ops.my_ops.rms_norm_backward(x, x, w, 1e-6),
    "fused_add_rms_norm": None,  # two slices of one buffer: below
    "silu_and_mul": lambda x, w: my_ops.silu_and_mul(x),
    "gelu_and_mul": lambda x, w: my_ops.gelu_and_mul(x),
}


@pytest.mark.parametrize("op", ROW_WISE)
def test_row_slices_read_in_place(op, device):
    """A slice of wider rows reaches the kernels without a copy; a transposed
    view (rows not evenly spaced) is copied, which shows the check sees copies."""
    fn = ROW_WISE[op]
    weight = make_input((32,), torch.float32, device)
    sliced = make_input((6, 48), torch.float32, device)[:, 8:40]
    if op == "fused_add_rms_norm":  # x and residual: two slices of one buffer
        base = make_input((6, 80), torch.float32, device)
        assert not _copies(lambda: my_ops.fused_add_rms_norm(base[:, :32], base[:, 40:72], weight, 1e-6))
        return
    with torch.no_grad():
        assert not _copies(lambda: fn(sliced, weight))
        assert _copies(lambda: fn(make_input((32, 6), torch.float32, device).t(), weight))
