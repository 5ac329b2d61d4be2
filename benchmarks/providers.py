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
    from liger_kernel.ops.rms_norm import LigerRMSNormFunction
    from liger_kernel.ops.swiglu import LigerFusedGateUpSiLUMulFunction

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
    d = x.shape[-1] // 2
    return F.silu(x[..., :d]) * x[..., d:]


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


def silu_and_mul(device_type: str) -> dict:
    providers = {
        "my_ops": my_ops.silu_and_mul,
        "eager": silu_and_mul_eager,
    }
    if device_type == "cuda":
        providers["compile"] = lambda x: compiled(silu_and_mul_eager)(x)
        if HAVE_LIGER:
            providers["liger"] = lambda x: LigerFusedGateUpSiLUMulFunction.apply(x)
    return providers
