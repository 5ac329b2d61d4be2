"""Mixed-precision weights of the RMSNorm family: a weight wider than x.

rms_norm, rms_norm_backward and fused_add_rms_norm take a weight in x's
dtype or a wider float dtype (float16/bfloat16 x: float32 or float64;
float32 x: float64), as mixed-precision training keeps float32 parameters
beside 16-bit activations. Arithmetic is float32 (float64 for float64 x)
with the weight unrounded; outputs keep x's dtype, the weight gradient has
the weight's. Other pairs are refused with one message from the real and the
fake kernels. Every value is checked against a float64 reference.
"""

from __future__ import annotations

import itertools

import pytest
import torch
from torch._subclasses.fake_tensor import FakeTensorMode

import my_ops
from conftest import INDUCTOR_ON_CPU, assert_matches, make_input, requires_cuda
from my_ops import reference

F16, BF16, F32, F64 = torch.float16, torch.bfloat16, torch.float32, torch.float64
FLOATS = [F32, F64, F16, BF16]
WIDER = {F16: [F32, F64], BF16: [F32, F64], F32: [F64], F64: []}
# (x dtype, weight dtype): every accepted pair with a weight wider than x
PAIRS = [(x, w) for x in FLOATS for w in WIDER[x]]
REFUSED = [(x, w) for x, w in itertools.product(FLOATS, FLOATS) if w != x and w not in WIDER[x]]
OPS = torch.ops.my_ops


def _ids(pair) -> str:
    return "x_{}-w_{}".format(*(str(d).replace("torch.", "") for d in pair))


def _accumulator(dtype):
    return F64 if dtype == F64 else F32


# hidden 1, odd, a few 16-byte vectors, narrow rows in several CUDA group sizes
# (16, 128, 256), the register-resident rows (4096, 16384), odd widths on the
# covering-vector path (1031, 4097), rows too long for it (70000: the generic
# kernels), and no rows or no columns.
SHAPES = [(3, 1), (5, 13), (4, 1000), (700, 16), (2, 257, 128), (130, 256), (2, 3, 4096), (2, 16384),
          (3000, 1031), (9, 4097), (1, 70000), (0, 8), (4, 0)]
LAYOUTS = ["contiguous", "offset", "sliced_odd", "transposed"]
# The kernels take a float32 weight beside 16-bit x; a float64 weight is
# converted to float32 by the binding first, so those pairs need fewer shapes.
KERNEL_PAIRS = [(F16, F32), (BF16, F32)]
CONVERTED_SHAPES = [(5, 13), (700, 16), (130, 256), (9, 4097), (0, 8)]


def _cases(shapes, layouts):
    """(shape, layout, pair): every shape and layout for the kernel pairs, a few for the converted ones."""
    cases = [(s, lay, p) for p in KERNEL_PAIRS for s in shapes for lay in layouts]
    cases += [(s, lay, p) for p in PAIRS if p not in KERNEL_PAIRS for s in CONVERTED_SHAPES for lay in layouts[:2]]
    return [pytest.param(*case, id=f"{case[0]}-{case[1]}-{_ids(case[2])}") for case in cases]


def _weight(hidden, dtype, device, layout="contiguous"):
    return make_input((hidden,), dtype, device, layout, low=0.5, high=1.5)


# ----------------------------------------------------------------- forward
@pytest.mark.parametrize("shape,layout,pair", _cases(SHAPES, LAYOUTS))
def test_rms_norm(shape, layout, pair, device):
    x_dtype, w_dtype = pair
    x = make_input(shape, x_dtype, device, layout)
    weight = _weight(shape[-1], w_dtype, device, "offset" if layout == "offset" else "contiguous")
    eps = float(torch.empty(()).uniform_(1e-6, 1e-3))
    out = my_ops.rms_norm(x, weight, eps)
    assert out.is_contiguous() and out.device == x.device
    assert_matches(out, reference.rms_norm(x, weight, eps), x_dtype)


_MANTISSA_BITS = {F16: 10, BF16: 7}


def _ulps(out: torch.Tensor, want: torch.Tensor) -> float:
    info = torch.finfo(out.dtype)
    want = want.double().cpu()
    exponent = torch.floor(torch.log2(want.abs().clamp_min(info.smallest_normal)))
    ulp = torch.exp2(exponent - _MANTISSA_BITS[out.dtype])
    error = (out.double().cpu() - want).abs() / ulp
    assert not error.isnan().any(), "NaN in the result"
    return error.max().item()


@pytest.mark.parametrize("x_dtype", [F16, BF16], ids=str)
@pytest.mark.parametrize("hidden", [128, 1000, 4096])  # a CUDA group of lanes, odd width, held rows
def test_float32_weight_is_not_rounded_to_x_dtype(x_dtype, hidden, device):
    """The output is rounded once, from float32 arithmetic with the weight as
    given: within half a unit in the last place (plus float32 noise) of the
    float64 result. A weight rounded to x's dtype first is off by up to one
    unit, which the same bound catches (checked below on the same inputs)."""
    x = make_input((256, hidden), x_dtype, device, low=-2, high=2)
    weight = _weight(hidden, F32, device)
    want = reference.rms_norm(x, weight, 1e-6)
    out = my_ops.rms_norm(x, weight, 1e-6)
    assert out.dtype == x_dtype
    assert _ulps(out, want) <= 0.55
    # the bound can fail: the same op with the weight rounded to x's dtype
    assert _ulps(my_ops.rms_norm(x, weight.to(x_dtype), 1e-6), want) > 0.55

    residual = make_input((256, hidden), x_dtype, device, low=-2, high=2)
    want_x, _ = reference.fused_add_rms_norm(x, residual, weight, 1e-6)
    my_ops.fused_add_rms_norm(x, residual, weight, 1e-6)
    assert _ulps(x, want_x) <= 0.55


def test_float64_weight_is_used_as_float32(device):
    """Beside 16-bit or float32 x a float64 weight is converted to float32 once
    (the arithmetic is float32): the same result as that float32 weight."""
    x = make_input((64, 96), BF16, device)
    weight = make_input((96,), F64, device, low=0.5, high=1.5)
    assert torch.equal(my_ops.rms_norm(x, weight, 1e-6), my_ops.rms_norm(x, weight.float(), 1e-6))
    x32 = make_input((64, 96), F32, device)
    assert torch.equal(my_ops.rms_norm(x32, weight, 1e-6), my_ops.rms_norm(x32, weight.float(), 1e-6))


# ---------------------------------------------------------------- backward
BACKWARD_SHAPES = [(1,), (5, 13), (4, 1000), (600, 64), (300, 32), (2, 257, 128), (2, 3, 4096), (3, 5000),
                   (9, 4097), (4, 16384), (1, 70000), (0, 8), (4, 0)]


def _check_gradients(x, weight, grad_x, grad_weight, grad, eps):
    """grad_x in x's dtype and grad_weight in the weight's, against float64 autograd."""
    x64, w64 = x.double().requires_grad_(), weight.double().requires_grad_()
    reference.rms_norm(x64, w64, eps).backward(grad.double())
    # dx cancels two terms of the size of rstd * w * dy (see test_rms_norm.py)
    assert_matches(grad_x, x64.grad, x.dtype, scale=4)
    assert grad_weight.dtype == weight.dtype
    # dweight is summed over rows in float32 (float64 for float64 x) and not rounded to x's dtype
    rows = max(1, x.numel() // max(1, x.shape[-1]))
    acc = _accumulator(x.dtype)
    assert_matches(grad_weight.to(acc), w64.grad, acc, scale=4 * rows ** 0.5)


@pytest.mark.parametrize("shape,layout,pair", _cases(BACKWARD_SHAPES, ["contiguous", "sliced_odd", "offset"]))
def test_rms_norm_backward(shape, layout, pair, device):
    x_dtype, w_dtype = pair
    x = make_input(shape, x_dtype, device, layout)
    weight = _weight(shape[-1], w_dtype, device)
    grad = make_input(shape, x_dtype, device, "transposed" if layout == "contiguous" and len(shape) > 1 else layout)
    x_, w_ = x.detach().requires_grad_(), weight.detach().requires_grad_()
    out = my_ops.rms_norm(x_, w_, 1e-5)
    assert out.dtype == x_dtype
    out.backward(grad)
    assert x_.grad.dtype == x_dtype and w_.grad.dtype == w_dtype
    _check_gradients(x, weight, x_.grad, w_.grad, grad, 1e-5)


@pytest.mark.parametrize("pair", PAIRS, ids=_ids)
def test_rms_norm_backward_op_directly(pair, device):
    x_dtype, w_dtype = pair
    x, grad = make_input((6, 40), x_dtype, device), make_input((6, 40), x_dtype, device)
    weight = _weight(40, w_dtype, device)
    grad_x, grad_weight = OPS.rms_norm_backward(grad, x, weight, 1e-6)
    assert grad_x.dtype == x_dtype
    _check_gradients(x, weight, grad_x, grad_weight, grad, 1e-6)


# ------------------------------------------------------- fused_add_rms_norm
@pytest.mark.parametrize("shape,layout,pair", _cases(SHAPES, ["contiguous", "sliced_odd", "sliced", "transposed"]))
def test_fused_add_rms_norm(shape, layout, pair, device):
    x_dtype, w_dtype = pair
    x = make_input(shape, x_dtype, device, layout)
    residual = make_input(shape, x_dtype, device,
                          {"sliced": "sliced_odd", "sliced_odd": "sliced"}.get(layout, "offset"))
    weight = _weight(shape[-1], w_dtype, device)
    weight0 = weight.clone()
    want_x, want_residual = reference.fused_add_rms_norm(x, residual, weight, 1e-6)
    my_ops.fused_add_rms_norm(x, residual, weight, 1e-6)
    assert_matches(residual, want_residual, x_dtype)
    assert_matches(x, want_x, x_dtype)
    assert torch.equal(weight, weight0)


# ----------------------------------------------------------------- refusals
def _message(x_dtype, w_dtype, op="rms_norm") -> str:
    wider = WIDER[x_dtype]
    also = f" or a wider float dtype ({', '.join(map(str, wider))})" if wider else ""
    return f"my_ops.{op}: expected weight to have the same dtype as x ({x_dtype}){also}, but got {w_dtype}"


def _calls(x_dtype, w_dtype, device):
    """Each op with x (and grad_out, residual) of x_dtype and a weight of w_dtype."""
    def t(*shape, dtype):
        return torch.randn(shape, dtype=F64, device=device).to(dtype)

    return {
        "rms_norm": lambda: (OPS.rms_norm.default, (t(4, 8, dtype=x_dtype), t(8, dtype=w_dtype), 1e-6)),
        "rms_norm_backward": lambda: (OPS.rms_norm_backward.default,
                                      (t(4, 8, dtype=x_dtype), t(4, 8, dtype=x_dtype), t(8, dtype=w_dtype), 1e-6)),
        "fused_add_rms_norm": lambda: (OPS.fused_add_rms_norm.default,
                                       (t(4, 8, dtype=x_dtype), t(4, 8, dtype=x_dtype), t(8, dtype=w_dtype), 1e-6)),
    }


def _error(call) -> str:
    with pytest.raises(RuntimeError) as info:
        call()
    return str(info.value)


@pytest.mark.parametrize("op", ["rms_norm", "rms_norm_backward", "fused_add_rms_norm"])
@pytest.mark.parametrize("pair", REFUSED, ids=_ids)
def test_narrower_or_other_weight_refused_by_real_and_fake_kernels(pair, op, device):
    """The C++ checks, meta tensors and FakeTensorMode refuse with one message;
    the mutating op writes nothing."""
    op_fn, args = _calls(*pair, device)[op]()
    before = [a.clone() for a in args if isinstance(a, torch.Tensor)]
    real = _error(lambda: op_fn(*args))
    assert real == _message(*pair, op)
    assert all(torch.equal(a, b) for a, b in zip([a for a in args if isinstance(a, torch.Tensor)], before))
    _, meta_args = _calls(*pair, "meta")[op]()
    assert _error(lambda: op_fn(*meta_args)) == real
    with FakeTensorMode() as mode:
        fake_args = [mode.from_tensor(a) if isinstance(a, torch.Tensor) else a for a in args]
        assert _error(lambda: op_fn(*fake_args)) == real


def test_refusal_through_the_python_api_and_module(device):
    x = make_input((2, 8), BF16, device)
    with pytest.raises(RuntimeError, match=r"^my_ops\.rms_norm: expected weight to have the same dtype as x "
                                           r"\(torch\.bfloat16\) or a wider float dtype \(torch\.float32, "
                                           r"torch\.float64\), but got torch\.float16$"):
        my_ops.rms_norm(x, torch.ones(8, device=device, dtype=F16))
    with pytest.raises(RuntimeError, match=r"^my_ops\.fused_add_rms_norm: expected weight to have the same dtype "
                                           r"as x \(torch\.float64\), but got torch\.float32$"):
        my_ops.fused_add_rms_norm(x.double(), x.double(), torch.ones(8, device=device))
    norm = my_ops.RMSNorm(8, device=device, dtype=BF16)
    with pytest.raises(RuntimeError, match=r"but got torch\.bfloat16$"):
        norm(x.float())  # a float32 x with a bfloat16 weight: narrower


@pytest.mark.parametrize("op", ["rms_norm", "rms_norm_backward", "fused_add_rms_norm"])
@pytest.mark.parametrize("pair", PAIRS, ids=_ids)
def test_fake_kernels_give_the_real_output_dtypes(pair, op, device):
    """Meta tensors and FakeTensorMode: the dtype, shape and device of every output as the real kernel's."""
    def outputs(result):
        return [] if result is None else [result] if isinstance(result, torch.Tensor) else list(result)

    op_fn, args = _calls(*pair, device)[op]()
    real = outputs(op_fn(*args))
    _, meta_args = _calls(*pair, "meta")[op]()
    meta = outputs(op_fn(*meta_args))
    with FakeTensorMode() as mode:
        fake = outputs(op_fn(*[mode.from_tensor(a) if isinstance(a, torch.Tensor) else a for a in args]))
    # rms_norm: y in x's dtype; the backward: grad_x in x's, grad_weight in the weight's;
    # fused_add_rms_norm: nothing (x and residual are written in place, in their own dtype)
    expected = {"rms_norm": [pair[0]], "rms_norm_backward": list(pair), "fused_add_rms_norm": []}[op]
    assert [r.dtype for r in real] == [m.dtype for m in meta] == [f.dtype for f in fake] == expected
    for r, m, f in zip(real, meta, fake):
        assert r.shape == m.shape == f.shape
        assert m.device.type == "meta" and f.device == r.device


# ------------------------------------------------------------------ opcheck
OPCHECK_SAMPLES = {
    "rms_norm bf16/f32 grad": lambda d: (OPS.rms_norm.default, (
        torch.randn(4, 16, device=d, dtype=BF16, requires_grad=True),
        torch.rand(16, device=d, requires_grad=True) + 0.5, 1e-6)),
    "rms_norm f16/f64": lambda d: (OPS.rms_norm.default, (
        torch.randn(2, 3, 64, device=d, dtype=F16), torch.rand(64, device=d, dtype=F64), 1e-5)),
    "rms_norm f32/f64 sliced": lambda d: (OPS.rms_norm.default, (
        torch.randn(6, 48, device=d)[:, 8:40], torch.rand(32, device=d, dtype=F64), 1e-6)),
    "rms_norm_backward bf16/f32": lambda d: (OPS.rms_norm_backward.default, (
        torch.randn(3, 8, device=d, dtype=BF16), torch.randn(3, 8, device=d, dtype=BF16),
        torch.rand(8, device=d), 1e-6)),
    "rms_norm_backward f32/f64": lambda d: (OPS.rms_norm_backward.default, (
        torch.randn(3, 24, device=d)[:, :16], torch.randn(3, 16, device=d), torch.rand(16, device=d, dtype=F64), 1e-6)),
    "fused_add_rms_norm bf16/f32": lambda d: (OPS.fused_add_rms_norm.default, (
        torch.randn(4, 32, device=d, dtype=BF16), torch.randn(4, 32, device=d, dtype=BF16),
        torch.rand(32, device=d), 1e-6)),
    "fused_add_rms_norm f16/f64 sliced": lambda d: (OPS.fused_add_rms_norm.default, (
        torch.randn(4, 64, device=d, dtype=F16)[:, :32], torch.randn(4, 64, device=d, dtype=F16)[:, 32:],
        torch.rand(32, device=d, dtype=F64), 1e-6)),
}


@pytest.mark.parametrize("sample", OPCHECK_SAMPLES)
def test_opcheck(sample, device):
    op, args = OPCHECK_SAMPLES[sample](device)
    torch.library.opcheck(op, args)


# ------------------------------------------------------- gradients of every order
def _relative_error(out, ref) -> float:
    assert not out.isnan().any(), "NaN in the result"
    return ((out.double() - ref.double()).norm() / ref.double().norm()).item()


# relative error of second- and third-order gradients against float64 (as in test_rms_norm.py)
ORDER_TOLERANCE = {F32: 1e-4, F16: 1e-2, BF16: 5e-2}


@pytest.mark.parametrize("pair", [(BF16, F32), (F16, F32), (F32, F64)], ids=_ids)
def test_second_order_matches_float64(pair, device):
    """A gradient penalty, d/d(x, w) of |d loss/dx|^2, against F.rms_norm in float64."""
    x_dtype, w_dtype = pair
    x = make_input((5, 64), x_dtype, device)
    w = _weight(64, w_dtype, device)

    def second_order(fn, x, w):
        x, w = x.detach().requires_grad_(), w.detach().requires_grad_()
        (g,) = torch.autograd.grad((fn(x, w).float() ** 2).sum(), x, create_graph=True)
        return torch.autograd.grad(g.float().pow(2).sum(), (x, w))

    ours = second_order(lambda a, b: my_ops.rms_norm(a, b, 1e-6), x, w)
    ref = second_order(lambda a, b: torch.nn.functional.rms_norm(a, (64,), b, 1e-6), x.double(), w.double())
    assert ours[0].dtype == x_dtype and ours[1].dtype == w_dtype
    for out, want in zip(ours, ref):
        assert want.abs().max() > 0
        assert _relative_error(out, want) < ORDER_TOLERANCE[x_dtype]


def test_third_order_matches_float64(device):
    """float32 x with a float64 weight: each order differentiates the one before.
    Random linear cotangents keep the chain as well conditioned as the op's own
    third derivative, so float32 rounding stays near its unit (a cubed and
    squared chain amplified it to 1e-3 in torch's own float32 rms_norm too)."""
    x0 = make_input((3, 8), F32, device, low=-2, high=2)
    w0 = _weight(8, F64, device)
    c1, c2, c3 = (make_input((3, 8), F32, device) for _ in range(3))

    def third_order(fn, x0, w0):
        x, w = x0.clone().requires_grad_(), w0.clone().requires_grad_()
        (g,) = torch.autograd.grad((fn(x, w) * c1.to(x.dtype)).sum(), x, create_graph=True)
        (h,) = torch.autograd.grad((g * c2.to(x.dtype)).sum(), x, create_graph=True)
        return torch.autograd.grad((h * c3.to(x.dtype)).sum(), (x, w))

    ours = third_order(lambda a, b: my_ops.rms_norm(a, b, 1e-5), x0, w0)
    ref = third_order(lambda a, b: torch.nn.functional.rms_norm(a, (8,), b, 1e-5), x0.double(), w0)
    assert ours[0].dtype == F32 and ours[1].dtype == F64
    for out, want in zip(ours, ref):
        assert want.abs().max() > 0
        assert _relative_error(out, want) < 1e-5


def test_gradcheck_in_the_float64_weight(device):
    """gradcheck and gradgradcheck of float32 x's op in its float64 weight and in
    the float64 grad_out's path: y is linear in the weight, so finite differences
    are exact up to float32 rounding."""
    x = make_input((4, 6), F32, device)
    w = _weight(6, F64, device).requires_grad_()
    assert torch.autograd.gradcheck(lambda w: my_ops.rms_norm(x, w, 1e-5).double(), (w,), eps=1e-3, atol=1e-4,
                                    rtol=1e-3)
    assert torch.autograd.gradgradcheck(lambda w: my_ops.rms_norm(x, w, 1e-5).double(), (w,), eps=1e-3,
                                        atol=1e-4, rtol=1e-3)


# ------------------------------------------------------------- torch.compile
@pytest.mark.parametrize("backend", ["aot_eager", "inductor"])
def test_compile_fullgraph(backend, device):
    if backend == "inductor" and device == "cpu" and not INDUCTOR_ON_CPU:
        pytest.skip("inductor's CPU toolchain is not set up on this platform's test job (conftest)")
    torch._dynamo.reset()

    def step(x, weight):
        y = my_ops.rms_norm(x, weight, 1e-6)
        return y, y.float().pow(2).sum()

    x = make_input((6, 64), BF16, device).requires_grad_()
    weight = _weight(64, F32, device).requires_grad_()
    compiled = torch.compile(step, fullgraph=True, backend=backend)
    y, loss = compiled(x, weight)
    loss.backward()
    assert y.dtype == BF16 and x.grad.dtype == BF16 and weight.grad.dtype == F32
    assert_matches(y, reference.rms_norm(x.detach(), weight.detach(), 1e-6), BF16)
    _check_gradients(x.detach(), weight.detach(), x.grad, weight.grad, 2 * y.detach().float().to(BF16), 1e-6)

    def fused(x, residual, weight):
        my_ops.fused_add_rms_norm(x, residual, weight, 1e-6)
        return x * 2

    xs, rs = make_input((6, 64), BF16, device), make_input((6, 64), BF16, device)
    w = _weight(64, F32, device)
    want_x, want_residual = reference.fused_add_rms_norm(xs, rs, w, 1e-6)
    out = torch.compile(fused, fullgraph=True, backend=backend)(xs, rs, w)
    assert out.dtype == BF16
    assert_matches(rs, want_residual, BF16)
    assert_matches(xs, want_x, BF16)


# ------------------------------------------- my_ops.RMSNorm under torch.autocast
@pytest.mark.parametrize("autocast_dtype", [BF16, F16], ids=str)
def test_rms_norm_module_under_autocast_is_a_drop_in(autocast_dtype, device):
    """A small training step under torch.autocast with float32 parameters:
    my_ops.RMSNorm in place of torch.nn.RMSNorm keeps the activations' dtype,
    gives the float32 weight a float32 gradient, and both gradients (the
    norm's input and weight) match the float64 reference; the SGD step moves
    the weight as torch.nn.RMSNorm's does."""
    if device == "cpu" and autocast_dtype == F16 and not torch.amp.is_autocast_available("cpu"):
        pytest.skip("no float16 autocast on this CPU build")
    hidden = 96

    def model(norm_cls, state):
        torch.manual_seed(state)
        proj = torch.nn.Linear(hidden, hidden, device=device)
        norm = norm_cls(hidden, eps=1e-6, device=device)
        with torch.no_grad():
            norm.weight.uniform_(0.5, 1.5)
        return proj, norm

    seed = int(torch.randint(0, 2**31, ()))
    inputs = make_input((16, hidden), F32, device)
    target = make_input((16, hidden), F32, device)
    results = {}
    for name, cls in (("my_ops", my_ops.RMSNorm), ("torch", torch.nn.RMSNorm)):
        proj, norm = model(cls, seed)
        assert norm.weight.dtype == F32
        optimizer = torch.optim.SGD([*proj.parameters(), *norm.parameters()], lr=0.1)
        with torch.autocast(device, dtype=autocast_dtype):
            h = proj(inputs)
            assert h.dtype == autocast_dtype
            h.retain_grad()
            y = norm(h)
            loss = (y.float() * target).sum()
        loss.backward()
        results[name] = dict(h=h.detach(), y=y.detach(), h_grad=h.grad, w_grad=norm.weight.grad.clone(),
                             w0=norm.weight.detach().clone())
        optimizer.step()
        results[name]["w1"] = norm.weight.detach().clone()

    ours, theirs = results["my_ops"], results["torch"]
    assert ours["y"].dtype == autocast_dtype and ours["h_grad"].dtype == autocast_dtype
    assert ours["w_grad"].dtype == F32
    assert torch.equal(ours["h"], theirs["h"]) and torch.equal(ours["w0"], theirs["w0"])
    # the float64 reference on the same (16-bit) activations and float32 weight
    h64, w64 = ours["h"].double().requires_grad_(), ours["w0"].double().requires_grad_()
    want = reference.rms_norm(h64, w64, 1e-6)
    want.backward(target.to(autocast_dtype).double())  # y.float()'s gradient reaches y in y's dtype
    assert_matches(ours["y"], want.detach(), autocast_dtype)
    assert_matches(ours["h_grad"], h64.grad, autocast_dtype, scale=4)
    assert_matches(ours["w_grad"], w64.grad, F32, scale=4 * 16 ** 0.5)
    # a drop-in: torch.nn.RMSNorm's result on the same step, within the activations' tolerance
    assert theirs["y"].dtype == ours["y"].dtype
    assert_matches(ours["y"], theirs["y"].double(), autocast_dtype)
    assert_matches(ours["w_grad"], theirs["w_grad"].double(), F32, scale=4 * 16 ** 0.5)
    assert_matches(ours["w1"], theirs["w1"].double(), F32, scale=4 * 16 ** 0.5)
    assert not torch.equal(ours["w1"], ours["w0"])


@requires_cuda()
def test_module_on_cuda_under_autocast_matches_the_cpu():
    """The CUDA kernels and the CPU kernels on one mixed-precision call."""
    norm = my_ops.RMSNorm(4096, device="cuda")
    with torch.no_grad():
        norm.weight.uniform_(0.5, 1.5)
    x = make_input((8, 4096), BF16, "cuda").requires_grad_()
    with torch.autocast("cuda", dtype=BF16):
        y = norm(x)
    grad = make_input((8, 4096), BF16, "cuda")
    y.backward(grad)
    assert y.dtype == BF16 and norm.weight.grad.dtype == F32
    x_cpu, w_cpu = x.detach().cpu().requires_grad_(), norm.weight.detach().cpu().requires_grad_()
    y_cpu = my_ops.rms_norm(x_cpu, w_cpu, 1e-6)
    y_cpu.backward(grad.cpu())
    assert_matches(y, y_cpu.double(), BF16)
    assert_matches(x.grad, x_cpu.grad.double(), BF16, scale=4)
    assert_matches(norm.weight.grad, w_cpu.grad.double(), F32, scale=4 * 8 ** 0.5)
