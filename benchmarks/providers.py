"""The implementations each benchmark compares, by name.

my_ops: this library. eager: the plain-PyTorch composite. native: PyTorch's
own fused op where there is one (F.rms_norm). compile: torch.compile of the
composite. liger: Liger-Kernel's Triton op, when liger_kernel is importable.
"""

from __future__ import annotations

import functools

import torch
import torch.nn.functional as F

import my_ops

try:
    from liger_kernel.ops.fused_add_rms_norm import LigerFusedAddRMSNormFunction
    from liger_kernel.ops.geglu import LigerGELUMulFunction
    from liger_kernel.ops.rms_norm import LigerRMSNormFunction
    from liger_kernel.ops.swiglu import LigerFusedGateUpSiLUMulFunction, LigerSiLUMulFunction

    HAVE_LIGER = True
except Exception:  # not installed, or no Triton for this device
    HAVE_LIGER = False


def rms_norm_eager(x, w, eps):
    x32 = x.float()
    return (x32 * torch.rsqrt(x32.pow(2).mean(-1, keepdim=True) + eps)).to(x.dtype) * w


def fused_add_rms_norm_eager(x, residual, w, eps):
    residual += x
    return F.rms_norm(residual, (residual.shape[-1],), w, eps)


def silu_and_mul_eager(x):
    gate, up = x.chunk(2, dim=-1)
    return F.silu(gate) * up


def gelu_and_mul_eager(x, approximate):
    gate, up = x.chunk(2, dim=-1)
    return F.gelu(gate, approximate=approximate) * up


@functools.cache
def compiled(fn):
    return torch.compile(fn, dynamic=False)


def rms_norm(device_type: str) -> dict:
    providers = {
        "my_ops": lambda x, w, eps: my_ops.rms_norm(x, w, eps),
        "eager": rms_norm_eager,
        "F.rms_norm": lambda x, w, eps: F.rms_norm(x, (x.shape[-1],), w, eps),
    }
    if device_type == "cuda":
        providers["compile"] = lambda x, w, eps: compiled(rms_norm_eager)(x, w, eps)
        if HAVE_LIGER:
            providers["liger"] = lambda x, w, eps: LigerRMSNormFunction.apply(x, w, eps)
    return providers


def fused_add_rms_norm(device_type: str) -> dict:
    providers = {
        "my_ops": lambda x, r, w, eps: my_ops.fused_add_rms_norm(x, r, w, eps),
        "eager": fused_add_rms_norm_eager,
    }
    if device_type == "cuda":
        providers["compile"] = lambda x, r, w, eps: compiled(fused_add_rms_norm_eager)(x, r, w, eps)
        if HAVE_LIGER:
            providers["liger"] = lambda x, r, w, eps: LigerFusedAddRMSNormFunction.apply(x, r, w, eps)
    return providers


def act_and_mul(op: str, device_type: str, *extra) -> dict:
    """silu_and_mul, or gelu_and_mul with extra = (approximate,)."""
    # (a new activation names its eager form here: no silent fallback to another's)
    eager = {"silu_and_mul": silu_and_mul_eager, "gelu_and_mul": gelu_and_mul_eager}[op]
    providers = {
        "my_ops": lambda x: getattr(my_ops, op)(x, *extra),
        "eager": lambda x: eager(x, *extra),
    }
    if device_type == "cuda":
        providers["compile"] = lambda x: compiled(eager)(x, *extra)
        if HAVE_LIGER and op == "silu_and_mul":
            # on a slice: the fused-input function copies it first; the split-input one takes views
            providers["liger"] = lambda x: (LigerFusedGateUpSiLUMulFunction.apply(x) if x.is_contiguous()
                                            else LigerSiLUMulFunction.apply(*x.chunk(2, dim=-1)))
        if HAVE_LIGER and op == "gelu_and_mul" and extra == ("tanh",):  # Liger's GEGLU is the tanh form
            providers["liger"] = lambda x: LigerGELUMulFunction.apply(*x.chunk(2, dim=-1))
    return providers


# ---- the fp8 family: the composite quantizes as vLLM's reference does (clamp, then cast)
FP8_MIN_SCALE = 1 / (448 * 512)


def _fp8_static(y, scale):
    return (y / scale).clamp(-448, 448).to(torch.float8_e4m3fn)


def _fp8_per_token(y):
    scale = (y.abs().amax(-1, keepdim=True) / 448).clamp(min=FP8_MIN_SCALE)
    return (y / scale).clamp(-448, 448).to(torch.float8_e4m3fn), scale


def _norm32(x, w, eps):
    x32 = x.float()
    return x32 * torch.rsqrt(x32.pow(2).mean(-1, keepdim=True) + eps) * w.float()


def _silu32(x):
    gate, up = x.float().chunk(2, dim=-1)
    return F.silu(gate) * up


def fp8_eager(op: str):
    """The eager composite of fp8 op `op`, called with the op's arguments."""
    return {
        "rms_norm_fp8": lambda x, w, scale, eps: _fp8_static(_norm32(x, w, eps), scale),
        "rms_norm_fp8_per_token": lambda x, w, eps: _fp8_per_token(_norm32(x, w, eps)),
        "fused_add_rms_norm_fp8": lambda x, r, w, scale, eps: _fp8_static(_norm32(r.add_(x), w, eps), scale),
        "fused_add_rms_norm_fp8_per_token": lambda x, r, w, eps: _fp8_per_token(_norm32(r.add_(x), w, eps)),
        "silu_and_mul_fp8": lambda x, scale: _fp8_static(_silu32(x), scale),
        "silu_and_mul_fp8_per_token": lambda x: _fp8_per_token(_silu32(x)),
    }[op]


def fp8(op: str) -> dict:
    eager = fp8_eager(op)
    # torch.compile on the CPU too: it fuses the quantization there as well,
    # and it is the family's baseline on every device
    return {"my_ops": getattr(my_ops, op), "eager": eager, "compile": compiled(eager)}
