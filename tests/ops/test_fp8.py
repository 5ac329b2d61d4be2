"""The fp8 family against float64 references quantized by the same rule
(my_ops.reference.<op>): the conversion itself against torch's, every op over
shapes, dtypes and row layouts, per-token scales, the residual update, batch
invariance, determinism and torch.compile."""

from __future__ import annotations

import pytest
import torch

import my_ops
import specs
from conftest import make_input
from my_ops import reference
from my_ops.families.fp8 import fp8_ref
from specs.fp8 import scale_for

FP8 = torch.float8_e4m3fn
SPECS = {s.name: s for s in specs.where(family="fp8")}
NORM_OPS = ["rms_norm_fp8", "rms_norm_fp8_per_token", "fused_add_rms_norm_fp8", "fused_add_rms_norm_fp8_per_token"]
SILU_OPS = ["silu_and_mul_fp8", "silu_and_mul_fp8_per_token"]
# hidden: narrow, not a multiple of 8, one vector per thread, wide, past the held layouts
SHAPES = [(3, 8), (5, 26), (4, 2000), (2, 3, 4096), (2, 8192), (300, 64), (2, 40000), (0, 16)]
LAYOUTS = ["contiguous", "offset", "sliced", "sliced_odd", "transposed"]


def ordinal(codes: torch.Tensor) -> torch.Tensor:
    """fp8 codes as ordinals (adjacent values differ by 1; +0 and -0 are both 0)."""
    bits = codes.view(torch.uint8).to(torch.int32)
    magnitude = bits & 0x7F
    return torch.where(bits >= 0x80, -magnitude, magnitude)


def assert_fp8_matches(out: torch.Tensor, want: torch.Tensor, max_fraction=1e-3, exact=None,
                       rows_dtype=torch.float32):
    """Identical bytes but for at most one fp8 step where float32 arithmetic moved a value
    across a rounding tie; NaN where and only where the reference has it.

    exact: the float64 values before quantization (y / scale). Given, every byte one step off
    must come from a value within float32 arithmetic's reach (2^-16, relative) of the midpoint
    between the two fp8 values, however many such ties the data has (bf16 rows whose amax has
    few significant bits put many values exactly on ties); rows_dtype float64 (rows computed in
    float64 with an exact scale, rounded once): within 2^-40. Not given: a counted, tiny fraction."""
    assert out.dtype == FP8 and out.shape == want.shape, (out.dtype, out.shape, want.shape)
    got_nan, want_nan = out.float().isnan(), want.float().isnan()
    assert torch.equal(got_nan, want_nan)
    diff = (ordinal(out) - ordinal(want)).abs()[~want_nan]
    assert diff.numel() == 0 or diff.max().item() <= 1, f"off by {diff.max().item()} fp8 steps"
    off = (diff > 0).sum().item()
    if exact is None:
        assert off <= max(1, max_fraction * diff.numel()), f"{off} of {diff.numel()} bytes one step off"
        return
    moved = (ordinal(out) != ordinal(want)) & ~want_nan
    q = exact.to(out.device).double()[moved]
    middle = (out.double()[moved] + want.double()[moved]) / 2
    window = 2**-40 if rows_dtype == torch.float64 else 2**-16
    far = ((q - middle).abs() > window * q.abs()).sum().item()
    assert far == 0, f"{far} of {off} bytes one step off are not at a rounding tie"


def assert_scales(got: torch.Tensor, want: torch.Tensor):
    """Scales equal to the float64 ones rounded to float32, up to float32 arithmetic (a few ulp)."""
    assert got.dtype == torch.float32 and got.shape == want.shape
    torch.testing.assert_close(got.double(), want, rtol=1e-6, atol=0)


# ------------------------------------------------------------- conversion
def _conversion_values() -> torch.Tensor:
    every = torch.arange(256, dtype=torch.uint8).view(FP8).float()
    finite = every[every.isfinite()].unique()
    ties = (finite[1:] + finite[:-1]) / 2  # exactly representable in float32
    near = torch.cat([ties.nextafter(torch.tensor(float("inf"))), ties.nextafter(torch.tensor(-float("inf")))])
    randoms = torch.empty(20000).uniform_(-448, 448)
    small = torch.empty(5000).uniform_(-0.02, 0.02)  # the subnormal range (below 2^-6)
    return torch.cat([finite, ties, near, randoms, small, torch.tensor([0.0, -0.0])])


def convert(values: torch.Tensor, device: str, aligned=True) -> torch.Tensor:
    """fp8(v) through rms_norm_fp8: rows of ones have rstd 1 (eps 0), so y = weight exactly.
    aligned: a row of whole 16-byte vectors (the held-row kernel); else a row of 8k + 1
    values one element in (the generic kernel). The values are padded with zeros; the rows
    have their dtype."""
    n = values.numel()
    width = -(-n // 8) * 8 + (0 if aligned else 1)
    weight = torch.cat([values, values.new_zeros(width - n)]).to(device)
    x = torch.ones(1, width + 1, dtype=values.dtype, device=device)
    x = x[:, :width] if aligned else x[:, 1:]
    return my_ops.rms_norm_fp8(x, weight, torch.ones(1, device=device), 0.0)[0, :n]


@pytest.mark.parametrize("aligned", [True, False], ids=["held", "generic"])
def test_conversion_is_torchs_in_range(device, aligned):
    values = _conversion_values()
    got = convert(values, device, aligned).cpu()
    want = values.to(FP8)
    assert torch.equal(got.view(torch.uint8), want.view(torch.uint8))


def test_conversion_saturates_and_keeps_nan(device):
    values = torch.tensor([448.0, 449.0, 463.9, 464.0, 480.0, 1e30, float("inf"), -464.0, -float("inf"),
                           float("nan"), -0.0, 1e-30, -float("nan")])
    got = convert(values, device).cpu().view(torch.uint8).tolist()
    assert got[:9] == [0x7E] * 7 + [0xFE] * 2  # +-448: torch's cast gives NaN from 464 on
    assert got[9] == 0x7F and got[12] == 0x7F  # NaN of either sign: one code, the GPU instruction's
    assert got[10:12] == [0x80, 0x00]


# ---------------------------------------------------------------- the ops
def _norm_args(name, x):
    spec = SPECS[name]
    return list(spec.resolve(x))


def _exact(name, args, ref_args, wants):
    """The op's float64 values before quantization: y / scale, with the reference's scales."""
    if name.startswith("silu"):
        y = reference.silu_and_mul(args[0])
    else:  # the norm of x, or of the updated residual (the kernel's, checked equal to the reference's)
        add = name.startswith("fused_add")
        weight, eps = args[2 if add else 1], args[(3 if add else 2) + (0 if name.endswith("per_token") else 1)]
        y = reference.rms_norm(args[1] if add else args[0], weight, eps)
    scale = wants[1] if name.endswith("per_token") else ref_args[-1 if name.startswith("silu") else -2]
    return y / scale.double()


def _check_op(name, args, through="api"):
    """Runs op `name` on args (residual cloned first), through the API or torch.ops, against its reference."""
    spec = SPECS[name]
    add = name.startswith("fused_add")
    residual_before = args[1].clone() if add else None
    ref_args = list(args)
    if add:
        ref_args[1] = residual_before
    with torch.no_grad():
        result = (spec.api if through == "api" else spec.op)(*args)
    want = spec.reference(*ref_args)
    if add:  # (new residual, outputs...)
        new_residual, want = want[0], (want[1:] if len(want) > 2 else want[1])
    per_token = name.endswith("per_token")
    outs = result if isinstance(result, tuple) else (result,)
    wants = want if isinstance(want, tuple) else (want,)
    # (float64 rows with a static scale are exact but for the one rounding; per token the op's
    # scale is the reference's rounded to float32, which moves y / scale by up to 2^-24)
    exact_rows = args[0].dtype == torch.float64 and not per_token
    assert_fp8_matches(outs[0], wants[0], exact=_exact(name, args, ref_args, wants),
                       rows_dtype=torch.float64 if exact_rows else torch.float32)
    if per_token:
        assert outs[1].shape == (*outs[0].shape[:-1], 1)
        assert_scales(outs[1], wants[1])
    if add:
        # the sum, in the residual's dtype, bit for bit (NaN where x had one)
        torch.testing.assert_close(args[1], new_residual.to(args[1].dtype), rtol=0, atol=0, equal_nan=True)
    assert outs[0].is_contiguous()


@pytest.mark.parametrize("layout", LAYOUTS)
@pytest.mark.parametrize("shape", SHAPES, ids=str)
@pytest.mark.parametrize("name", NORM_OPS)
def test_norm_ops(name, shape, layout, dtype, device):
    x = make_input(shape, dtype, device, layout)
    args = _norm_args(name, x)
    if name.startswith("fused_add"):
        args[1] = make_input(shape, dtype, device, layout)
    _check_op(name, args)


@pytest.mark.parametrize("weight_dtype", [torch.float32, torch.float64])
@pytest.mark.parametrize("shape", [(5, 26), (4, 2000), (2, 8192)], ids=str)
@pytest.mark.parametrize("name", NORM_OPS)
def test_norm_ops_take_a_wider_weight(name, shape, weight_dtype, device):
    """A float32 (or float64) weight beside bfloat16 rows, as rms_norm takes it: used unrounded."""
    x = make_input(shape, torch.bfloat16, device)
    args = _norm_args(name, x)
    add = name.startswith("fused_add")
    if add:
        args[1] = make_input(shape, torch.bfloat16, device)
    args[2 if add else 1] = make_input(shape[-1:], weight_dtype, device, low=0.5, high=1.5)
    _check_op(name, args)


# Widths of each layout the launchers take for many rows (from 264 rows, two per
# multiprocessor of an H100, the few-row launches are left), and past them; on the
# CPU one kernel takes every width, so one width says all there.
MANY_ROWS_WIDTHS = {"cpu": [4096], "cuda": [4096, 8192, 16384, 32768, 40000]}


@pytest.mark.parametrize("dtypes", [(torch.bfloat16, torch.bfloat16), (torch.float16, torch.float32),
                                    (torch.float32, torch.float32)], ids=lambda d: f"{d[0]}-{d[1]}")
@pytest.mark.parametrize("name", NORM_OPS + SILU_OPS)
def test_many_rows_at_every_layouts_width(name, dtypes, device):
    """Many rows at the widths the launchers give each of their layouts, against the reference
    (few rows take other launches: the tests above)."""
    dtype, weight_dtype = dtypes
    if name in SILU_OPS and weight_dtype != dtype:
        pytest.skip("the gated unit has no weight")
    for width in MANY_ROWS_WIDTHS[torch.device(device).type]:
        shape = (300, 2 * width) if name in SILU_OPS else (300, width)
        x = make_input(shape, dtype, device, low=-6, high=6)
        args = list(SPECS[name].resolve(x))
        if name.startswith("fused_add"):
            args[1] = make_input(shape, dtype, device)
        if name in NORM_OPS:
            args[2 if name.startswith("fused_add") else 1] = make_input((width,), weight_dtype, device,
                                                                        low=0.5, high=1.5)
        _check_op(name, args)


@pytest.mark.parametrize("through", ["api", "torch.ops"])
@pytest.mark.parametrize("dtype", [torch.bfloat16, torch.float64])
@pytest.mark.parametrize("name", NORM_OPS)
def test_norm_ops_take_eps_none(name, dtype, through, device):
    """eps=None is the machine epsilon of the statistics' dtype (float32; float64 for float64), as
    rms_norm and torch.nn.functional.rms_norm take it, through the API and torch.ops alike (the
    schemas' `float? eps`). Rows small enough for eps to move the result."""
    x = make_input((6, 40), dtype, device) * 1e-4
    args = _norm_args(name, x)
    add = name.startswith("fused_add")
    if add:
        args[1] = make_input((6, 40), dtype, device) * 1e-4
    eps_at = (3 if add else 2) + (0 if name.endswith("per_token") else 1)
    args[eps_at] = None
    _check_op(name, args, through)


def test_eps_none_is_the_machine_epsilon_of_the_statistics():
    """The reference's None: float32's epsilon for bfloat16 rows, float64's for float64 ones."""
    x = torch.randn(3, 16, dtype=torch.float64) * 1e-4
    w, scale = torch.rand(16, dtype=torch.float64), torch.tensor([0.01])
    for dtype, eps in ((torch.bfloat16, torch.finfo(torch.float32).eps),
                       (torch.float64, torch.finfo(torch.float64).eps)):
        xd = x.to(dtype)
        assert torch.equal(reference.rms_norm_fp8(xd, w, scale, None).view(torch.uint8),
                           reference.rms_norm_fp8(xd, w, scale, eps).view(torch.uint8))


@pytest.mark.parametrize("layout", LAYOUTS)
@pytest.mark.parametrize("shape", [(3, 2), (5, 26), (4, 2000), (2, 3, 8192), (300, 64), (2, 80000), (0, 8)], ids=str)
@pytest.mark.parametrize("name", SILU_OPS)
def test_silu_ops(name, shape, layout, dtype, device):
    x = make_input(shape, dtype, device, layout, low=-6, high=6)
    _check_op(name, list(SPECS[name].resolve(x)))


@pytest.mark.parametrize("name", ["rms_norm_fp8_per_token", "fused_add_rms_norm_fp8_per_token",
                                  "silu_and_mul_fp8_per_token"])
def test_per_token_scale_bound_and_floor(name, device):
    x = make_input((6, 64), torch.float32, device)
    x[0] = 0  # an all-zero row: the floor, no division by zero
    args = list(SPECS[name].resolve(x))
    if name.startswith("fused_add"):
        args[1] = torch.zeros_like(x)
    args[-1] = torch.tensor([0.01], device=device)  # below every other row's amax: caps them
    _check_op(name, args)
    args[1:2] = [torch.zeros_like(x)] if name.startswith("fused_add") else args[1:2]
    _, scales = SPECS[name].api(*args)[:2]
    assert scales[0].item() == pytest.approx(1 / (448 * 512))
    assert torch.all(scales[1:] == torch.tensor(0.01 / 448, dtype=torch.float32))


@pytest.mark.parametrize("name", NORM_OPS + SILU_OPS)
def test_batch_invariant_and_deterministic(name, device):
    """A row's bytes (and scale) do not depend on how many rows the call has (few rows take other
    layouts on CUDA), and a call gives the same bytes twice."""
    hidden = 8192 if name in SILU_OPS else 4096
    x = make_input((600, hidden), torch.bfloat16, device)
    args = list(SPECS[name].resolve(x))
    add = name.startswith("fused_add")
    residual = make_input((600, hidden), torch.bfloat16, device) if add else None

    def run(rows):
        a = list(args)
        a[0] = x[:rows]
        if add:
            a[1] = residual[:rows].clone()
        with torch.no_grad():
            r = SPECS[name].api(*a)
        return r if isinstance(r, tuple) else (r,)

    full, again, few = run(600), run(600), run(3)
    for f, g, s in zip(full, again, few):
        assert torch.equal(f.view(torch.uint8) if f.dtype == FP8 else f, g.view(torch.uint8) if g.dtype == FP8 else g)
        assert torch.equal((f[:3].view(torch.uint8) if f.dtype == FP8 else f[:3]),
                           (s.view(torch.uint8) if s.dtype == FP8 else s))


@pytest.mark.parametrize("name", NORM_OPS + SILU_OPS)
def test_compiled_fullgraph_matches_eager(name, device):
    x = make_input((8, 256), torch.bfloat16, device)
    args = list(SPECS[name].resolve(x))
    add = name.startswith("fused_add")
    op = SPECS[name].api
    eager_args, compiled_args = list(args), list(args)
    if add:
        eager_args[1], compiled_args[1] = args[1].clone(), args[1].clone()
    with torch.no_grad():
        want = op(*eager_args)
        got = torch.compile(op, fullgraph=True, dynamic=False)(*compiled_args)
    for g, w in zip(got if isinstance(got, tuple) else (got,), want if isinstance(want, tuple) else (want,)):
        assert torch.equal(g.view(torch.uint8) if g.dtype == FP8 else g, w.view(torch.uint8) if w.dtype == FP8 else w)
    if add:
        assert torch.equal(compiled_args[1], eager_args[1])


# (the roads by name: where torch lacks the redispatch, the Python API alone
# refuses, tests/packaging/test_torch_compat.py runs only its cases)
@pytest.mark.parametrize("road", ["python_api", "torch_ops"])
@pytest.mark.parametrize("name", NORM_OPS + SILU_OPS)
def test_grad_input_refused_naming_the_op(name, road, device):
    x = make_input((4, 16), torch.float32, device).requires_grad_()
    args = list(SPECS[name].resolve(x))
    call = SPECS[name].api if road == "python_api" else SPECS[name].op
    with pytest.raises(RuntimeError, match=rf"my_ops.{name}: argument 'x' requires grad"):
        call(*args)
    with torch.no_grad():
        call(*args)  # under no_grad it runs


def test_static_scale_is_read_on_the_device(device):
    """The scale is a tensor, read by the kernel: changing its value changes the output (no host copy
    cached), as CUDA graphs need."""
    x = make_input((4, 64), torch.float32, device)
    w = torch.ones(64, device=device)
    scale = scale_for(x, 0.05)
    a = my_ops.rms_norm_fp8(x, w, scale, 1e-6)
    scale.fill_(0.1)
    b = my_ops.rms_norm_fp8(x, w, scale, 1e-6)
    assert_fp8_matches(b, reference.rms_norm_fp8(x, w, scale, 1e-6))
    assert not torch.equal(a.view(torch.uint8), b.view(torch.uint8))


# ------------------------------------------------------------- edge cases
def test_reference_rounds_float64_once():
    """1.0625 is the tie between fp8 1.0 and 1.125: a float64 value just above it rounds up. Through
    float32 first (torch's float64 cast) it would land on the tie and round to even, 1.0."""
    above, below = 1.0625 + 2**-30, 1.0625 - 2**-30
    got = fp8_ref(torch.tensor([above, below, -above, 2**-10 + 2**-40, 464.0, 1e300],
                                         dtype=torch.float64))
    assert got.float().tolist() == [1.125, 1.0, -1.125, 2**-9, 448.0, 448.0]


@pytest.mark.parametrize("aligned", [True, False], ids=["held", "generic"])
def test_float64_rows_are_rounded_once(device, aligned):
    """The kernels round float64 values to fp8 once, as the reference does: narrowed to float32
    rounded to odd, a value just above a tie still rounds up (rounded to nearest twice it would
    land on the tie and round to even). Rows of ones: y is the weight exactly."""
    values = torch.tensor([1.0625 + 2**-30, 1.0625 - 2**-30, -1.0625 - 2**-30, 2**-10 + 2**-40,
                           0.53125 + 2**-40, 464.0, 1e300, -1e300], dtype=torch.float64)
    got = convert(values, device, aligned).cpu()
    assert got.float().tolist() == fp8_ref(values).float().tolist() == [1.125, 1.0, -1.125, 2**-9, 0.5625,
                                                                       448.0, 448.0, -448.0]
    # the gated unit: silu(64) * (v / 64) is v exactly in float64
    gated = torch.tensor([[64.0, (1.0625 + 2**-30) / 64]], dtype=torch.float64, device=device)
    assert my_ops.silu_and_mul_fp8(gated, torch.ones(1, device=device)).float().item() == 1.125


def test_float64_per_token_scales_past_floats_range(device):
    """A float64 row whose amax / 448 is a float32 but whose amax is not gets that finite scale."""
    x = torch.tensor([[1e20, 1.0, 1e20, 1.0]], dtype=torch.float64, device=device)
    with torch.no_grad():
        out, scales = my_ops.silu_and_mul_fp8_per_token(x)
    want, want_scales = reference.silu_and_mul_fp8_per_token(x.cpu())
    assert torch.isfinite(scales).all()
    assert_scales(scales.cpu(), want_scales)
    assert_fp8_matches(out.cpu(), want)


def _poisoned_allocator(device, nbytes=4096):
    """Leaves a freed block of NaN bytes for the next allocation (an unwritten output shows)."""
    torch.full((nbytes // 4,), float("nan"), device=device)


@pytest.mark.parametrize("name", ["rms_norm_fp8_per_token", "fused_add_rms_norm_fp8_per_token",
                                  "silu_and_mul_fp8_per_token"])
def test_per_token_rows_of_zero_width_get_the_floor_scale(name, device):
    """A row with no values has amax 0: its scale is the floor, written on every device."""
    x = torch.empty((5, 0), device=device)
    args = list(SPECS[name].resolve(torch.randn(5, 2, device=device)))
    args[0] = x
    if name.startswith("fused_add"):
        args[1] = torch.empty((5, 0), device=device)
    if not name.startswith("silu"):
        args[2 if name.startswith("fused_add") else 1] = torch.empty(0, device=device)
    _poisoned_allocator(device)
    with torch.no_grad():
        out, scales = SPECS[name].api(*args)
    assert out.shape == ((5, 0) if name.startswith("silu") else (5, 0)) and scales.shape == (5, 1)
    assert torch.equal(scales.cpu(), torch.full((5, 1), 1 / (448 * 512), dtype=torch.float32))


STATIC_OPS = ["rms_norm_fp8", "fused_add_rms_norm_fp8", "silu_and_mul_fp8"]
# scale values past the ordinary: subnormal (1 / scale overflows float), tiny normal, zero, huge,
# negative, infinite, NaN; every one gives fp8(y / scale) by IEEE rules
EXTREME_SCALES = [1e-40, 2.0**-140, 2.0**-70, 0.0, -0.0, 3e38, 2.0**100, -0.05, float("inf"), float("nan")]


@pytest.mark.parametrize("value", EXTREME_SCALES, ids=str)
@pytest.mark.parametrize("name", STATIC_OPS)
def test_static_scale_of_any_value_divides(name, value, device):
    """The scale is read on the device (no host sync, so never checked there): its value goes through
    y / scale as IEEE arithmetic would, zeros included (a subnormal scale once made 0 * inf = NaN)."""
    silu = name.startswith("silu")
    x = make_input((7, 64 if silu else 32), torch.float32, device, low=-3, high=3)
    x[:, 3::5] = 0  # zeros: 0 / (tiny scale) is 0, not NaN; 0 / 0 is NaN
    if silu:
        x[:, 35::5] = 1.0
    args = list(SPECS[name].resolve(x))
    if name.startswith("fused_add"):
        args[1] = torch.zeros_like(x)
    args[-1 if silu else -2] = torch.tensor([value], device=device)
    _check_op(name, args)


@pytest.mark.parametrize("name", ["rms_norm_fp8_per_token", "fused_add_rms_norm_fp8_per_token",
                                  "silu_and_mul_fp8_per_token"])
def test_nan_in_a_row(name, device):
    """A NaN gives a NaN byte where it stands and does not count toward its row's amax (vLLM's
    rule): a gated row keeps its other bytes and the scale of the rest; a normalized row is all NaN
    (its sum of squares is) with the floor scale. Other rows are untouched."""
    x = make_input((4, 64), torch.float32, device)
    x[1, 5] = float("nan")
    x[2, :] = float("nan")
    args = list(SPECS[name].resolve(x))
    if name.startswith("fused_add"):
        args[1] = torch.zeros_like(x)
    _check_op(name, args)
    with torch.no_grad():
        out, scales = SPECS[name].api(*[a.clone() if isinstance(a, torch.Tensor) else a for a in args])
    assert scales.isfinite().all()
    assert scales[2].item() == pytest.approx(1 / (448 * 512))
    assert not out[[0, 3]].float().isnan().any()
    if name.startswith("silu"):
        assert out[1].float().isnan().sum().item() == 1
