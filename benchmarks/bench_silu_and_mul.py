"""silu_and_mul, forward and forward+backward."""

from __future__ import annotations

import torch

import providers
from common import Row, dtype_name, input_sets, time_call

HEADLINE = (16384, 2 * 8192)
BASELINES = {("silu_and_mul", "fwd"): "eager", ("silu_and_mul", "fwd+bwd"): "eager"}


def run(device: torch.device, quick: bool = False) -> list[Row]:
    rows = []
    if device.type == "cuda":
        shapes = [(HEADLINE, torch.bfloat16), (HEADLINE, torch.float16), (HEADLINE, torch.float32)]
        if not quick:
            shapes += [((r, 2 * 4096), torch.bfloat16) for r in (1, 64, 4096)]
    else:
        shapes = [((4096, 2 * 4096), torch.float32)]
    for shape, dtype in shapes:
        numel_out = shape[0] * shape[1] // 2
        nbytes = 3 * numel_out * torch.finfo(dtype).bits // 8  # read [M, 2d], write [M, d]
        sets = input_sets(lambda: (torch.randn(shape, device=device, dtype=dtype),), nbytes, device)
        for name, fn in providers.silu_and_mul(device.type).items():
            us, how = time_call(lambda s, fn=fn: fn(s[0]), sets, device)
            rows.append(Row(str(device), "silu_and_mul", "fwd", dtype_name(dtype), "x".join(map(str, shape)),
                            name, us, nbytes / us / 1e3, timing=how))
        del sets
    # forward + backward: forward 3 units, backward reads dy and x (3), writes dx (2)
    shape, dtype = (HEADLINE, torch.bfloat16) if device.type == "cuda" else ((4096, 2 * 4096), torch.float32)
    numel_out = shape[0] * shape[1] // 2
    nbytes = 8 * numel_out * torch.finfo(dtype).bits // 8
    x = torch.randn(shape, device=device, dtype=dtype, requires_grad=True)
    dy = torch.randn(shape[0], shape[1] // 2, device=device, dtype=dtype)
    for name, fn in providers.silu_and_mul(device.type).items():
        def step(s, fn=fn):
            return torch.autograd.grad(fn(s[0]), (s[0],), s[1])
        us, how = time_call(step, [(x, dy)], device, graph=False)
        rows.append(Row(str(device), "silu_and_mul", "fwd+bwd", dtype_name(dtype), "x".join(map(str, shape)),
                        name, us, nbytes / us / 1e3, timing=how))
    return rows
