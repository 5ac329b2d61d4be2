"""Argument rules: one definition (beside each schema in C++), checked by the
real kernels and by the fake kernels alike; devices that do not match are
refused whichever kernel the dispatcher picks; overlap is decided exactly."""

from __future__ import annotations

import itertools
import random

import pytest
import torch
from torch._subclasses.fake_tensor import FakeTensorMode

import my_ops
from my_ops import _C, _rules, reference
from conftest import make_input, requires_cuda

OPS = torch.ops.my_ops


def _error(fn) -> str:
    with pytest.raises(RuntimeError) as info:
        fn()
    return str(info.value)


# Each case: an op and its arguments, made on a given device, that break one rule.
def _t(*shape, dtype=torch.float32, device="cpu"):
    return torch.randn(shape, dtype=torch.float64, device=device).to(dtype)


BAD_CALLS = {
    "short_kernel int": lambda d: (OPS.short_kernel.default, (_t(3, dtype=torch.int64, device=d),)),
    "mul shape": lambda d: (OPS.mul.default, (_t(3, 4, device=d), _t(4, 3, device=d))),
    "mul dtype": lambda d: (OPS.mul.default, (_t(3, 4, device=d), _t(3, 4, dtype=torch.float64, device=d))),
    "muladd shape": lambda d: (OPS.muladd.default, (_t(3, 4, device=d), _t(3, device=d), 1.0)),
    "add_out out shape": lambda d: (OPS.add_out.default, (_t(3, 4, device=d), _t(3, 4, device=d), _t(4, 3, device=d))),
    "add_out out expanded": lambda d: (OPS.add_out.default, (_t(3, 4, device=d), _t(3, 4, device=d),
                                                     _t(1, 4, device=d).expand(3, 4))),
    "matmul 3-D": lambda d: (OPS.matmul.default, (_t(2, 3, 4, device=d), _t(4, 2, device=d))),
    "matmul rows": lambda d: (OPS.matmul.default, (_t(3, 4, device=d), _t(5, 2, device=d))),
    "rms_norm weight length": lambda d: (OPS.rms_norm.default, (_t(4, 8, device=d), _t(7, device=d), 1e-6)),
    "rms_norm weight int32": lambda d: (OPS.rms_norm.default, (_t(4, 8, device=d), _t(8, dtype=torch.int32, device=d), 1e-6)),
    "rms_norm mixed dtypes": lambda d: (OPS.rms_norm.default, (_t(4, 8, dtype=torch.bfloat16, device=d), _t(8, device=d), 1e-6)),
    "rms_norm 0-D x": lambda d: (OPS.rms_norm.default, (_t(device=d), _t(1, device=d), 1e-6)),
    "rms_norm eps -1": lambda d: (OPS.rms_norm.default, (_t(4, 8, device=d), _t(8, device=d), -1.0)),
    "rms_norm eps nan": lambda d: (OPS.rms_norm.default, (_t(4, 8, device=d), _t(8, device=d), float("nan"))),
    "rms_norm_backward grad shape": lambda d: (OPS.rms_norm_backward.default, (_t(4, 7, device=d), _t(4, 8, device=d),
                                                                      _t(8, device=d), 1e-6)),
    "fused_add residual shape": lambda d: (OPS.fused_add_rms_norm.default, (_t(4, 8, device=d), _t(2, 8, device=d),
                                                                    _t(8, device=d), 1e-6)),
    "silu_and_mul odd": lambda d: (OPS.silu_and_mul.default, (_t(3, 7, device=d),)),
    "silu_and_mul 0-D": lambda d: (OPS.silu_and_mul.default, (_t(device=d),)),
    "silu_and_mul_backward grad shape": lambda d: (OPS.silu_and_mul_backward.default, (_t(3, 10, device=d), _t(3, 10, device=d))),
    "gelu_and_mul approximate": lambda d: (OPS.gelu_and_mul.default, (_t(3, 8, device=d), "fast")),
    "gelu_and_mul_backward odd": lambda d: (OPS.gelu_and_mul_backward.default, (_t(3, 3, device=d), _t(3, 7, device=d), "tanh")),
    "silu_and_mul float16 grad": lambda d: (OPS.silu_and_mul_backward.default, (_t(3, 5, dtype=torch.float16, device=d),
                                                                        _t(3, 10, device=d))),
}


@pytest.mark.parametrize("case", BAD_CALLS)
def test_fake_kernel_refuses_what_the_real_kernel_refuses(case):
    """The same call on CPU tensors (C++ checks), on meta tensors and under
    FakeTensorMode (the Python fake kernel) fails with the same message."""
    op, args = BAD_CALLS[case]("cpu")
    real = _error(lambda: op(*args))
    assert real.startswith(f"my_ops.{op._schema.name.split('::')[1]}: "), real
    op, meta_args = BAD_CALLS[case]("meta")
    assert _error(lambda: op(*meta_args)) == real
    with FakeTensorMode() as mode:
        fake_args = [mode.from_tensor(a) if isinstance(a, torch.Tensor) else a for a in args]
        assert _error(lambda: op(*fake_args)) == real


def test_compile_fails_at_trace_time_with_the_kernels_message():
    torch._dynamo.reset()
    fn = torch.compile(lambda x, w: my_ops.rms_norm(x, w), fullgraph=True, backend="aot_eager")
    with pytest.raises(Exception, match=r"my_ops.rms_norm: expected weight to have shape \[8\] "
                                        r"\(the last dimension of x\), but got \[7\]"):
        fn(torch.randn(4, 8), torch.randn(7))


def test_every_op_has_rules_from_the_library():
    # the Triton family is registered from Python (triton_op) and checks its own arguments
    registered = {name.split("::")[1] for name in torch._C._dispatch_get_all_op_names()
                  if name.startswith("my_ops::") and not name.startswith("my_ops::triton_")}
    assert "gelu_and_mul_backward" in registered
    assert set(_rules.RULES) == registered
    for name, params in _rules.RULES.items():
        schema = getattr(OPS, name).default._schema
        assert [p.name for p in params] == [a.name for a in schema.arguments]


# ----------------------------------------------------------- mixed devices
def _mixed_calls(other: str):
    """Every op with one argument on `other` and the rest on the CPU."""
    x = _t(4, 8)
    return [
        ("mul", "b", lambda: OPS.mul(x, _t(4, 8, device=other)), None),
        ("muladd", "b", lambda: OPS.muladd(x, _t(4, 8, device=other), 0.5), None),
        ("matmul", "b", lambda: OPS.matmul(x, _t(8, 2, device=other)), None),
        ("rms_norm", "weight", lambda: OPS.rms_norm(x, _t(8, device=other), 1e-6), None),
        ("rms_norm_backward", "grad_out", lambda: OPS.rms_norm_backward(_t(4, 8, device=other), x, _t(8), 1e-6), None),
        ("silu_and_mul_backward", "grad_out", lambda: OPS.silu_and_mul_backward(_t(4, 4, device=other), x), None),
    ]


@pytest.mark.parametrize("other", ["meta"] + (["cuda"] if torch.cuda.is_available() else []))
def test_mixed_devices_are_refused_whichever_kernel_runs(other):
    for name, arg, call, _ in _mixed_calls(other):
        message = _error(call)
        assert message.startswith(f"my_ops.{name}: expected {arg} to be on the same device as"), message
        assert f"but got {other}" in message


@pytest.mark.parametrize("other", ["meta"] + (["cuda"] if torch.cuda.is_available() else []))
def test_mutating_ops_with_mixed_devices_write_nothing(other):
    x, residual, out = _t(4, 8), _t(4, 8), _t(4, 8)
    before = [t.clone() for t in (x, residual, out)]
    message = _error(lambda: my_ops.fused_add_rms_norm(x, residual, _t(8, device=other)))
    assert message.startswith("my_ops.fused_add_rms_norm: expected weight to be on the same device as x (cpu)")
    message = _error(lambda: my_ops.add_out(x, _t(4, 8, device=other), out))
    assert message.startswith("my_ops.add_out: expected b to be on the same device as a (cpu)")
    message = _error(lambda: my_ops.add_out(x, residual, _t(4, 8, device=other)))
    assert message.startswith("my_ops.add_out: expected out to be on the same device as a (cpu)")
    for t, b in zip((x, residual, out), before):
        assert torch.equal(t, b)


# ------------------------------------------------------------ layouts
@pytest.mark.parametrize("kind", ["sparse_coo", "sparse_csr", "nested"])
def test_unsupported_layouts_name_the_argument(kind):
    x = torch.randn(4, 8)
    if kind == "nested":
        bad = torch.nested.nested_tensor([torch.randn(2, 8), torch.randn(3, 8)])
        expected = "but got a nested tensor"
    else:
        bad = x.to_sparse() if kind == "sparse_coo" else x.to_sparse_csr()
        expected = f"but got layout torch.{kind}"
    assert _error(lambda: my_ops.rms_norm(bad, torch.ones(8))) == \
        f"my_ops.rms_norm: expected x to be a dense (strided) tensor, {expected}"
    assert _error(lambda: my_ops.mul(x, bad)) == f"my_ops.mul: expected b to be a dense (strided) tensor, {expected}"


# ------------------------------------------------------------ overlap
@pytest.mark.parametrize("layout", ["interleaved", "row halves"])
def test_fused_add_accepts_views_of_one_buffer_that_share_no_element(layout, device):
    buf = make_input((6, 32), torch.float32, device)
    if layout == "interleaved":
        x, residual = buf[:, ::2], buf[:, 1::2]
    else:
        x, residual = buf[:, :16], buf[:, 16:]
    w = make_input((16,), torch.float32, device, low=0.5, high=1.5)
    want_residual = (x.double() + residual.double())
    want_x = reference.rms_norm(want_residual, w, 1e-6)
    my_ops.fused_add_rms_norm(x, residual, w, 1e-6)
    torch.testing.assert_close(residual.double(), want_residual, rtol=2e-5, atol=2e-5)
    torch.testing.assert_close(x.double(), want_x, rtol=2e-5, atol=2e-5)


def test_add_out_accepts_an_interleaved_out(device):
    buf = make_input((4, 16), torch.float32, device)
    a, out = buf[:, ::2], buf[:, 1::2]
    b = make_input((4, 8), torch.float32, device)
    want = a.double() + b.double()
    my_ops.add_out(a, b, out)
    torch.testing.assert_close(out.double(), want, rtol=2e-5, atol=2e-5)


def test_real_overlap_is_refused_and_named(device):
    buf = make_input((4, 16), torch.float32, device)
    w = torch.ones(8, device=device)
    before = buf.clone()
    assert _error(lambda: my_ops.fused_add_rms_norm(buf[:, :8], buf[:, 4:12], w)) == (
        "my_ops.fused_add_rms_norm: x and residual must not share memory, but they overlap; "
        "pass separate tensors (e.g. residual.clone())")
    assert _error(lambda: my_ops.fused_add_rms_norm(buf[:, :8], buf[:, 8:], buf[0, :8])) == (
        "my_ops.fused_add_rms_norm: x and weight must not share memory, but they overlap; "
        "pass separate tensors (e.g. weight.clone())")
    assert _error(lambda: my_ops.fused_add_rms_norm(buf[:2, :8], buf[2:, :8], buf[2, :8])).startswith(
        "my_ops.fused_add_rms_norm: residual and weight must not share memory")
    assert _error(lambda: my_ops.add_out(buf[:, :8], buf[:, 8:], buf[:, 4:12])).startswith(
        "my_ops.add_out: out overlaps a without being the same tensor")
    assert torch.equal(buf, before)  # nothing written


def _brute_force_overlap(a, b=None) -> bool:
    """Whether views overlap, by listing every element's bytes."""
    def spans(view):
        sizes, strides, size, start = view
        for index in itertools.product(*(range(n) for n in sizes)):
            offset = start + size * sum(i * s for i, s in zip(index, strides))
            yield offset, offset + size

    if b is None:
        seen = set()
        for begin, _ in spans(a):
            if begin in seen:
                return True
            seen.add(begin)
        return False
    bytes_a = {x for lo, hi in spans(a) for x in range(lo, hi)}
    return any(x in bytes_a for lo, hi in spans(b) for x in range(lo, hi))


def _random_view(rng: random.Random):
    dim = rng.randint(1, 3)
    sizes = tuple(rng.randint(1, 4) for _ in range(dim))
    strides = tuple(rng.choice([0, 1, 2, 3, 4, 5, 8, 12]) for _ in range(dim))
    size = rng.choice([2, 4])
    return sizes, strides, size, size * rng.randint(0, 12)


def test_overlap_is_exact_against_brute_force():
    rng = random.Random(torch.randint(0, 2**31, ()).item())
    for _ in range(3000):
        a = _random_view(rng)
        internal = _C.overlap(a)
        assert internal in (0, 1) and bool(internal) == _brute_force_overlap(a), a
        b = _random_view(rng)
        b = (b[0], b[1], a[2], b[3])  # the ops compare tensors of one dtype
        pair = _C.overlap(a, b)
        assert pair in (0, 1) and bool(pair) == _brute_force_overlap(a, b), (a, b)


def test_overlap_of_large_interleaved_and_sliced_views_is_decided_quickly():
    e = 2  # bfloat16
    rows, width = 32768, 8192
    x = ((rows, width // 2), (width, 2), e, 0)
    r = ((rows, width // 2), (width, 2), e, e)
    assert _C.overlap(x, r) == 0 and _C.overlap(x) == 0
    q = ((rows, 4096), (width, 1), e, 0)
    k = ((rows, 4096), (width, 1), e, 4096 * e)
    assert _C.overlap(q, k) == 0
    k_shifted = ((rows, 4096), (width, 1), e, 4095 * e)
    assert _C.overlap(q, k_shifted) == 1


@requires_cuda()
def test_cuda_views_of_one_buffer(device="cuda"):
    test_fused_add_accepts_views_of_one_buffer_that_share_no_element("interleaved", device)
    test_real_overlap_is_refused_and_named(device)


# ------------------------------------------------- mutating ops and autograd
@pytest.mark.parametrize("mode", ["grad", "no_grad", "inference_mode"])
def test_mutating_ops_bump_version_counters(mode):
    x, residual, w, out = _t(4, 8), _t(4, 8), _t(8), _t(4, 8)
    context = {"grad": torch.enable_grad, "no_grad": torch.no_grad, "inference_mode": torch.inference_mode}[mode]
    versions = [t._version for t in (x, residual, w, out)]
    with context():
        my_ops.fused_add_rms_norm(x, residual, w)
        my_ops.add_out(x, residual, out)
    assert [t._version for t in (x, residual, w, out)] == [versions[0] + 1, versions[1] + 1, versions[2],
                                                           versions[3] + 1]


def test_overwriting_a_tensor_autograd_saved_is_detected():
    saved = _t(4, 8)
    w = _t(8).requires_grad_()
    loss = (saved * w).sum()  # mul saves `saved` for w's gradient
    with torch.no_grad():
        my_ops.fused_add_rms_norm(saved, _t(4, 8), _t(8))
    with pytest.raises(RuntimeError, match="modified by an inplace operation"):
        loss.backward()


@pytest.mark.parametrize("where", ["meta", "fake"])
def test_fake_kernel_refuses_overlapping_in_place_arguments(where):
    """The overlap rules hold while tracing too: same message as the C++ check."""
    def calls(buf):
        return [lambda: OPS.fused_add_rms_norm.default(buf[:, :8], buf[:, 4:12], torch.ones(8, device=buf.device), 1e-6),
                lambda: OPS.fused_add_rms_norm.default(buf[:, :8], buf[:, 8:], buf[0, :8], 1e-6),
                lambda: OPS.add_out.default(buf[:, :8], buf[:, 8:], buf[:, 4:12])]

    real = [_error(call) for call in calls(torch.randn(4, 16))]
    if where == "meta":
        assert [_error(call) for call in calls(torch.empty(4, 16, device="meta"))] == real
    else:
        with FakeTensorMode() as mode:
            assert [_error(call) for call in calls(mode.from_tensor(torch.randn(4, 16)))] == real
    # views that share no element pass the fake kernels as well
    buf = torch.empty(4, 16, device="meta")
    OPS.fused_add_rms_norm.default(buf[:, ::2], buf[:, 1::2], torch.ones(8, device="meta"), 1e-6)
