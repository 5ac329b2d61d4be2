"""The fp8 family (src/binding/fp8.cpp): RMSNorm, the fused residual add +
RMSNorm and SiLU-and-mul with their output written as float8 e4m3fn for the
fp8 GEMM that follows, with a static per-tensor scale (`scale`, a one-element
float32 tensor: ``out = fp8(y / scale)``) or dynamic per-token scales
(``scale = max(min(amax(|y|), scale_ub) / 448, 1 / (448 * 512))`` per row,
returned as float32 ``[..., 1]``), as vLLM's fused quantization ops. The
conversion rounds to nearest even and saturates to +-448; NaN stays NaN.

The static scale is read on the device, never on the host (no sync; CUDA
graphs capture it), so its value is not checked: every value gives
``fp8(y * (1 / scale))`` (the reciprocal rounded, as vLLM's kernels; within
an ulp of the quotient) with the special values of IEEE division (a
subnormal scale saturates, zero gives +-448 and NaN where y is 0, a negative
scale flips signs, NaN gives NaN). Per token, a NaN in a row gives a NaN byte where it stands and does not
count toward the row's amax (vLLM's rule): the row's scale comes from its
other values (a normalized row with a NaN is all NaN, with the floor scale);
a row of no values gets the floor scale. An infinite value in a row (or a
product that overflows the row's type) gives that row an infinite scale and
its other bytes 0, as vLLM's kernels do; so does a float64 amax past
448 * FLT_MAX, which the float32 scale cannot hold.

eps=None is the machine epsilon of the dtype the statistics are computed in
(float32; float64 for float64 x), as for rms_norm and
torch.nn.functional.rms_norm: the schemas take `float? eps=1e-06`, so torch.ops
reads None alike, and an eps left out is 1e-06 on both roads.

Inference ops: no autograd. An input that requires grad (with grad mode on)
is refused, naming the op.

The two fused ops write `residual` in place and return their outputs; while
exporting they become their functional forms (fused_add_rms_norm_fp8_functional,
fused_add_rms_norm_fp8_per_token_functional: the outputs and a new residual),
the new residual copied back, as fused_add_rms_norm does (_mutating.py says why).
"""

from __future__ import annotations

import torch
from torch import Tensor

from .. import _rules
from .._mutating import _mutating_op, op_for_api
from .._runtime import _lib, _ops
from .._vmap import register_batching
from .rms_norm import _checked_eps, rms_norm_ref

__all__ = ["rms_norm_fp8", "rms_norm_fp8_per_token", "fused_add_rms_norm_fp8",
           "fused_add_rms_norm_fp8_per_token", "silu_and_mul_fp8", "silu_and_mul_fp8_per_token"]

FP8_MAX = 448.0
MIN_SCALE = 1 / (448 * 512)  # the per-token scale's floor (an all-zero row)


def rms_norm_fp8(x: Tensor, weight: Tensor, scale: Tensor, eps: float | None = 1e-6) -> Tensor:
    """``fp8(rms_norm(x, weight, eps) / scale)``: x [..., hidden] -> float8_e4m3fn [..., hidden].

    weight [hidden] has x's dtype or a wider float dtype (read as float32, as rms_norm's); scale is a
    one-element float32 tensor on x's device.
    """
    if type(eps) is not float:
        eps = _checked_eps("rms_norm_fp8", eps)
    return _ops.rms_norm_fp8.default(x, weight, scale, eps)


def rms_norm_fp8_per_token(x: Tensor, weight: Tensor, eps: float | None = 1e-6,
                           scale_ub: Tensor | None = None) -> tuple[Tensor, Tensor]:
    """``(out, scales)``: rms_norm(x, weight, eps) quantized row by row, scales float32 [..., 1].

    scale_ub (a one-element float32 tensor, optional) caps each row's amax.
    """
    if type(eps) is not float:
        eps = _checked_eps("rms_norm_fp8_per_token", eps)
    return _ops.rms_norm_fp8_per_token.default(x, weight, eps, scale_ub)


def fused_add_rms_norm_fp8(x: Tensor, residual: Tensor, weight: Tensor, scale: Tensor,
                           eps: float | None = 1e-6) -> Tensor:
    """``residual += x`` in place, then ``fp8(rms_norm(residual, weight, eps) / scale)``; x is not written."""
    if type(eps) is not float:
        eps = _checked_eps("fused_add_rms_norm_fp8", eps)
    return _fused_add_rms_norm_fp8(x, residual, weight, scale, eps)


def fused_add_rms_norm_fp8_per_token(x: Tensor, residual: Tensor, weight: Tensor, eps: float | None = 1e-6,
                                     scale_ub: Tensor | None = None) -> tuple[Tensor, Tensor]:
    """``residual += x`` in place, then ``rms_norm_fp8_per_token(residual, weight, eps, scale_ub)``."""
    if type(eps) is not float:
        eps = _checked_eps("fused_add_rms_norm_fp8_per_token", eps)
    return _fused_add_rms_norm_fp8_per_token(x, residual, weight, eps, scale_ub)


def silu_and_mul_fp8(x: Tensor, scale: Tensor) -> Tensor:
    """``fp8(silu(x[..., :d]) * x[..., d:] / scale)``: x [..., 2 * d] -> float8_e4m3fn [..., d]."""
    return _ops.silu_and_mul_fp8.default(x, scale)


def silu_and_mul_fp8_per_token(x: Tensor, scale_ub: Tensor | None = None) -> tuple[Tensor, Tensor]:
    """``(out, scales)``: silu(x[..., :d]) * x[..., d:] quantized row by row, scales float32 [..., 1]."""
    return _ops.silu_and_mul_fp8_per_token.default(x, scale_ub)


# ------------------------------------------------------------ fake kernels
def _outputs(x: Tensor, shape, per_token: bool):
    out = x.new_empty(shape, dtype=torch.float8_e4m3fn)
    return (out, x.new_empty((*shape[:-1], 1), dtype=torch.float32)) if per_token else out


def _halved(x: Tensor):
    return (*x.shape[:-1], x.shape[-1] // 2)


# op -> (its output's shape from x, per token)
_OPS = {
    "rms_norm_fp8": (lambda x: x.shape, False),
    "rms_norm_fp8_per_token": (lambda x: x.shape, True),
    "fused_add_rms_norm_fp8": (lambda x: x.shape, False),
    "fused_add_rms_norm_fp8_per_token": (lambda x: x.shape, True),
    "silu_and_mul_fp8": (_halved, False),
    "silu_and_mul_fp8_per_token": (_halved, True),
}


def _fake(name: str, shape, per_token: bool):
    def fake(x: Tensor, *args):
        _rules.check(name, x, *args)
        return _outputs(x, shape(x), per_token)
    return fake


for _name, (_shape, _per_token) in _OPS.items():
    torch.library.register_fake(f"my_ops::{_name}", _fake(_name, _shape, _per_token))
    # no autograd: refuses inputs that require grad; bumps the residual's version
    _mutating_op(_name)
    register_batching(_lib, _name, rows=(0, 1) if _name.startswith("fused_add") else (0,))

_fused_add_rms_norm_fp8 = op_for_api("fused_add_rms_norm_fp8")
_fused_add_rms_norm_fp8_per_token = op_for_api("fused_add_rms_norm_fp8_per_token")


# ---------------------------------------------------- the functional forms
# The fused ops' functional forms: the op's outputs, then the new residual.
def _functional_fake(name: str, per_token: bool):
    def fake(x: Tensor, residual: Tensor, *args):
        _rules.check(name, x, residual, *args)
        outputs = _outputs(x, x.shape, per_token)
        return (*(outputs if per_token else (outputs,)), residual.new_empty(residual.shape))
    return fake


for _name, _per_token in (("fused_add_rms_norm_fp8_functional", False),
                          ("fused_add_rms_norm_fp8_per_token_functional", True)):
    torch.library.register_fake(f"my_ops::{_name}", _functional_fake(_name, _per_token))
    _mutating_op(_name)  # (an inference op: its requires-grad refusal)
    register_batching(_lib, _name, rows=(0, 1))


# -------------------------------------------------------------- references
def fp8_ref(v: Tensor) -> Tensor:
    """The conversion rule on float64 values, rounded once: saturate to +-448, round to nearest
    even, NaN stays NaN. (torch's float64 -> float8 cast goes through float32 first, which can move
    a value onto an fp8 tie and then round it the wrong way: here the float64 value is rounded to
    its fp8 step directly, and the cast then only encodes an exact fp8 value.)"""
    v = v.double()
    magnitude = v.abs()
    # the step of fp8 values at |v|: 2^(e - 3) for |v| in [2^e, 2^(e + 1)), e >= -6 (below: the
    # subnormals' 2^-9); frexp gives |v| = m * 2^k with m in [0.5, 1), so e = k - 1
    exponent = torch.frexp(magnitude).exponent.clamp(min=-5) - 1
    step = torch.ldexp(torch.ones_like(v), exponent - 3)
    rounded = torch.where(magnitude.isfinite(), torch.round(v / step) * step, v)  # round: ties to even
    return rounded.clamp(-FP8_MAX, FP8_MAX).to(torch.float8_e4m3fn)


def _per_token(y: Tensor, scale_ub: Tensor | None):
    """(fp8 bytes, float64 scales [..., 1]) of y quantized row by row. A NaN in a row does not
    count toward its amax (the row's scale comes from its other values; all NaN: the floor) and
    gives NaN bytes where it stands, as vLLM's kernels do."""
    bound = torch.where(y.isnan(), 0.0, y.abs()).amax(-1, keepdim=True) if y.shape[-1] else \
        y.new_zeros((*y.shape[:-1], 1))
    if scale_ub is not None:
        ub = scale_ub.double().item()
        bound = bound if ub != ub else bound.clamp(max=ub)  # (a NaN bound caps nothing)
    scales = (bound / FP8_MAX).clamp(min=MIN_SCALE)
    return fp8_ref(y / scales), scales


def rms_norm_fp8_ref(x: Tensor, weight: Tensor, scale: Tensor, eps: float) -> Tensor:
    return fp8_ref(rms_norm_ref(x, weight, eps) / scale.double())


def rms_norm_fp8_per_token_ref(x: Tensor, weight: Tensor, eps: float, scale_ub: Tensor | None = None):
    return _per_token(rms_norm_ref(x, weight, eps), scale_ub)


def fused_add_rms_norm_fp8_ref(x: Tensor, residual: Tensor, weight: Tensor, scale: Tensor, eps: float):
    """(new residual, out): what is written in place first, as the other mutating ops' references;
    the residual holds x's dtype, so the sum is rounded to it first."""
    new_residual = x + residual
    return new_residual, rms_norm_fp8_ref(new_residual, weight, scale, eps)


def fused_add_rms_norm_fp8_per_token_ref(x: Tensor, residual: Tensor, weight: Tensor, eps: float,
                                         scale_ub: Tensor | None = None):
    """(new residual, out, scales)."""
    new_residual = x + residual
    return (new_residual, *rms_norm_fp8_per_token_ref(new_residual, weight, eps, scale_ub))


def _silu_and_mul64(x: Tensor) -> Tensor:
    gate, up = x.double().chunk(2, dim=-1)
    return torch.nn.functional.silu(gate) * up


def silu_and_mul_fp8_ref(x: Tensor, scale: Tensor) -> Tensor:
    return fp8_ref(_silu_and_mul64(x) / scale.double())


def silu_and_mul_fp8_per_token_ref(x: Tensor, scale_ub: Tensor | None = None):
    return _per_token(_silu_and_mul64(x), scale_ub)


# my_ops.reference.<op>, as families.references() gathers them
REFERENCES = (rms_norm_fp8_ref, rms_norm_fp8_per_token_ref, fused_add_rms_norm_fp8_ref,
              fused_add_rms_norm_fp8_per_token_ref, silu_and_mul_fp8_ref, silu_and_mul_fp8_per_token_ref)
