"""matmul against torch.matmul (cuBLAS / the CPU BLAS), float32 with TF32 off."""

from __future__ import annotations

import torch

import my_ops
from common import Row, time_call

BASELINES = {("matmul", "fwd"): "torch.matmul"}


def run(device: torch.device, quick: bool = False) -> list[Row]:
    n = 4096 if device.type == "cuda" else 1024
    torch.backends.cuda.matmul.allow_tf32 = False
    a = torch.randn(n, n, device=device)
    b = torch.randn(n, n, device=device)
    rows = []
    for name, fn in {"my_ops": my_ops.matmul, "torch.matmul": torch.matmul}.items():
        us, how = time_call(lambda s, fn=fn: fn(s[0], s[1]), [(a, b)], device, graph=False)
        tflops = 2 * n**3 / us / 1e6
        # the "gbps" column holds TFLOP/s here: a matrix product is bound by arithmetic
        rows.append(Row(str(device), "matmul", "fwd", "float32", f"{n}x{n}x{n}", name, us, tflops,
                        timing=how, note="TFLOP/s in gbps column; TF32 off"))
    return rows
