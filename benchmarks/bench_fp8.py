"""The fp8 family: RMSNorm, the fused add + RMSNorm and SiLU-and-mul written
as float8 e4m3fn, with a static scale and per token, beside the eager
composite and torch.compile of it (which fuses the quantization). Bytes are
those read and written: the input rows (and the residual, read and written),
the fp8 output and the float32 scales. A decode shape under CUDA graphs
shows the launch-bound end."""

from __future__ import annotations

import torch

import providers
from common import Row, dtype_name, input_sets, time_call

OPS = ["rms_norm_fp8", "rms_norm_fp8_per_token", "fused_add_rms_norm_fp8", "fused_add_rms_norm_fp8_per_token",
       "silu_and_mul_fp8", "silu_and_mul_fp8_per_token"]
BASELINES = {(op, "fwd"): "compile" for op in OPS}


def _case(op: str, rows: int, width: int, dtype, device):
    """(make inputs, bytes per call, label) for an output of [rows, width]."""
    per_token = op.endswith("per_token")
    size = torch.finfo(dtype).bits // 8
    out_bytes = rows * width + (4 * rows if per_token else 0)

    def scale():
        return torch.tensor([0.05], device=device)

    if op.startswith("silu"):
        def make():
            x = torch.randn(rows, 2 * width, device=device, dtype=dtype)
            return (x,) if per_token else (x, scale())
        return make, 2 * rows * width * size + out_bytes, f"{rows}x{width}"
    add = op.startswith("fused_add")

    def make():
        x = torch.randn(rows, width, device=device, dtype=dtype)
        w = torch.rand(width, device=device, dtype=dtype) + 0.5
        r = (torch.randn(rows, width, device=device, dtype=dtype),) if add else ()
        return (x, *r, w) + (() if per_token else (scale(),)) + (1e-6,)
    return make, (3 if add else 1) * rows * width * size + out_bytes, f"{rows}x{width}"


def _agree(a, b, what):
    """fp8 outputs within one fp8 step (12.5%) of each other; scales close."""
    for x, y in zip(a if isinstance(a, tuple) else (a,), b if isinstance(b, tuple) else (b,)):
        torch.testing.assert_close(x.float(), y.float(), rtol=0.13, atol=2 ** -9,
                                   msg=lambda m: f"{what} disagrees with the eager composite: {m}")


def run(device: torch.device, quick: bool = False) -> list[Row]:
    out = []
    if device.type == "cuda":
        shapes = [(32768, 4096), (8192, 8192), (64, 8192)]
        if quick:
            shapes = shapes[:1] + shapes[2:]
    else:
        shapes = [(2048, 4096)]
    dtype = torch.bfloat16
    for op in OPS:
        for rows, width in shapes:
            make, nbytes, label = _case(op, rows, width, dtype, device)
            sets = input_sets(make, nbytes, device)
            impls = providers.fp8(op)
            check = make()
            want = impls["eager"](*[a.clone() if isinstance(a, torch.Tensor) else a for a in check])
            for name, fn in impls.items():
                got = fn(*[a.clone() if isinstance(a, torch.Tensor) else a for a in check])
                _agree(got, want, f"{op} {name}")
                us, how = time_call(lambda s, fn=fn: fn(*s), sets, device)
                out.append(Row(str(device), op, "fwd", dtype_name(dtype), label, name, us, nbytes / us / 1e3,
                               timing=how))
            del sets
    return out
