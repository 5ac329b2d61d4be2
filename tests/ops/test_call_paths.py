"""The Python API's call path (ops._call): a call that autograd has nothing
to record for skips the op's Autograd kernel; a call with gradients records
the op's autograd.Function; torch.func transforms run that Function level by
level; forward-mode AD is refused, also past the Python API; every other call
(fake tensors, torch.compile) takes the full path and behaves as the op does."""

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
    with pytest.raises(RuntimeError, match="forward-mode AD"):  # forward over reverse
        torch.func.jacfwd(torch.func.grad(lambda v: fn(v, weight).sum()))(x)


def _direct_calls(device):
    """Every op, called through torch.ops, with one argument made dual: (op name, call)."""
    x, w = make_input((3, 8), torch.float32, device), make_input((8,), torch.float32, device)
    square = make_input((8, 8), torch.float32, device)
    ops = torch.ops.my_ops
    return {
        "short_kernel": lambda d: ops.short_kernel(d),
        "mul": lambda d: ops.mul(x, d),
        "muladd": lambda d: ops.muladd(d, x, 2.0),
        "add_out": lambda d: ops.add_out(x, x, d),
        "matmul": lambda d: ops.matmul(square[:3], d),
        "rms_norm": lambda d: ops.rms_norm(x, d, 1e-6),
        "rms_norm_backward": lambda d: ops.rms_norm_backward(d, x, w, 1e-6),
        "fused_add_rms_norm": lambda d: ops.fused_add_rms_norm(x.clone(), d, w, 1e-6),
        "silu_and_mul": lambda d: ops.silu_and_mul(d),
        "silu_and_mul_backward": lambda d: ops.silu_and_mul_backward(d[:, :4], x),
        "gelu_and_mul": lambda d: ops.gelu_and_mul(d, "tanh"),
        "gelu_and_mul_backward": lambda d: ops.gelu_and_mul_backward(x[:, :4], d),
    }, {"matmul": square, "rms_norm": w}


def test_direct_calls_cover_every_op():
    """Every op of the C++ library; the Triton family (Python-registered, test_triton_rms_norm.py) apart."""
    calls, _ = _direct_calls("cpu")
    assert sorted(calls) == sorted(name for name in torch.ops.my_ops if hasattr(getattr(torch.ops.my_ops, name), "default")
                                   and not name.startswith("triton_"))


@pytest.mark.parametrize("op", sorted(_direct_calls("cpu")[0]))
def test_forward_mode_ad_refused_through_torch_ops(op, device):
    """Also a call past the Python API (torch.ops.my_ops.<op>, as torch.compile
    and other libraries make it) refuses a dual tensor, mutating ops included."""
    calls, operands = _direct_calls(device)
    primal = operands.get(op, make_input((3, 8), torch.float32, device))
    with fwAD.dual_level():
        dual = fwAD.make_dual(primal.clone(), torch.randn_like(primal))
        with pytest.raises(RuntimeError, match=rf"my_ops.{op}: forward-mode AD .* is not supported"):
            calls[op](dual)


def _first_and_second_order(fn, x):
    """Gradient and gradient of the gradient's sum of squares, by torch.func."""
    grad = torch.func.grad(lambda v: fn(v).pow(2).sum())
    return grad(x), torch.func.grad(lambda v: grad(v).pow(2).sum())(x)


@pytest.mark.parametrize("call", CALLS)
def test_torch_func_transforms(call, device):
    """torch.func.grad, vjp, jacrev and vmap over them, nested to second order,
    against the float64 reference (register_autograd alone fails here:
    pytorch#168393)."""
    fn, ref = CALLS[call]
    x = make_input((3, 8), torch.float64, device)
    weight = make_input((8,), torch.float64, device, low=0.5, high=1.5)
    got = _first_and_second_order(lambda v: fn(v, weight), x)
    want = _first_and_second_order(lambda v: ref(v, weight), x)
    for g, w in zip(got, want):
        assert_matches(g, w, torch.float64, scale=100)
    out, vjp = torch.func.vjp(lambda v: fn(v, weight), x)
    cotangent = torch.randn_like(out)
    assert_matches(vjp(cotangent)[0], torch.func.vjp(lambda v: ref(v, weight), x)[1](cotangent)[0],
                   torch.float64, scale=10)
    jacobians = torch.vmap(torch.func.jacrev(lambda v: fn(v, weight)))(x)
    assert_matches(jacobians, torch.vmap(torch.func.jacrev(lambda v: ref(v, weight)))(x), torch.float64, scale=10)


def test_torch_func_through_torch_ops_refused():
    """Past the Python API, torch.func cannot run the op's Function level by
    level; a differentiating transform is refused rather than answered wrongly."""
    x = torch.randn(3, 8, dtype=torch.float64)
    weight = torch.rand(8, dtype=torch.float64) + 0.5
    with pytest.raises(RuntimeError, match=r"torch.ops.my_ops.rms_norm: .* call my_ops.rms_norm instead"):
        torch.func.grad(lambda v: torch.ops.my_ops.rms_norm(v, weight, 1e-6).sum())(x)
    with torch.no_grad():  # nothing to differentiate: vmap alone is fine
        out = torch.vmap(lambda v: torch.ops.my_ops.rms_norm(v, weight, 1e-6))(x)
    assert_matches(out, reference.rms_norm(x, weight, 1e-6), torch.float64)


def test_torch_func_inside_torch_compile_refused_or_right():
    """A torch.func transform over the ops inside torch.compile: torch up to
    2.13 cannot trace it, and the call is refused with a message that says so;
    a torch that can (2.14 and 2.15 on PyPI) must give the right gradient."""
    x = torch.randn(3, 8, dtype=torch.float64)
    weight = torch.rand(8, dtype=torch.float64) + 0.5
    torch._dynamo.reset()
    compiled = torch.compile(torch.func.grad(lambda v: my_ops.rms_norm(v, weight, 1e-6).sum()))
    try:
        got = compiled(x)
    except Exception as error:  # noqa: BLE001  (whatever dynamo wraps it in)
        assert "torch.compile cannot trace torch.func transforms over my_ops" in str(error), error
        return
    want = torch.func.grad(lambda v: reference.rms_norm(v, weight, 1e-6).sum())(x)
    torch.testing.assert_close(got, want, rtol=1e-12, atol=1e-12)


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
def _copies(fn, rows: int = 6) -> set:
    """The copying aten ops that ran inside fn() over a tensor of at least
    `rows` rows (not the cast of a [hidden] result, such as rms_norm_backward's
    weight gradient from its float64 accumulator)."""
    with torch.profiler.profile(activities=[torch.profiler.ProfilerActivity.CPU], record_shapes=True) as prof:
        fn()
    return {e.name for e in prof.events()
            if e.name in ("aten::contiguous", "aten::clone", "aten::copy_")
            and any(len(shape) >= 2 and shape[0] >= rows for shape in e.input_shapes if isinstance(shape, list))}


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
