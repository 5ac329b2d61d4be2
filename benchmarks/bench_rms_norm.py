"""rms_norm (forward, forward+backward) and fused_add_rms_norm."""

from __future__ import annotations

import torch

import providers
from common import Row, dtype_name, input_sets, time_call

EPS = 1e-6
HEADLINE = (8, 4096, 4096)
HIDDEN_SWEEP = [1024, 2048, 4096, 8192, 16384]  # at 32768 rows
ROWS_SWEEP = [1, 4, 16, 64, 256, 1024, 4096, 16384, 65536]  # at hidden 4096
BASELINES = {("rms_norm", "fwd"): "F.rms_norm", ("rms_norm", "fwd+bwd"): "F.rms_norm",
             ("fused_add_rms_norm", "fwd"): "eager"}


def _shapes(device: torch.device, quick: bool):
    if device.type != "cuda":
        return [((4096, 4096), d) for d in (torch.float32, torch.bfloat16)]
    shapes = [(HEADLINE, d) for d in (torch.bfloat16, torch.float16, torch.float32)]
    if not quick:
        shapes += [((32768, h), torch.bfloat16) for h in HIDDEN_SWEEP]
        shapes += [((r, 4096), torch.bfloat16) for r in ROWS_SWEEP]
    return shapes


def forward(device: torch.device, quick: bool) -> list[Row]:
    rows = []
    for shape, dtype in dict.fromkeys(_shapes(device, quick)):
        hidden = shape[-1]
        numel = torch.Size(shape).numel()
        nbytes = (2 * numel + hidden) * torch.finfo(dtype).bits // 8

        def make():
            return (torch.randn(shape, device=device, dtype=dtype),
                    torch.rand(hidden, device=device, dtype=dtype) + 0.5)

        sets = input_sets(make, nbytes, device)
        for name, fn in providers.rms_norm(device.type).items():
            us, how = time_call(lambda s, fn=fn: fn(s[0], s[1], EPS), sets, device)
            rows.append(Row(str(device), "rms_norm", "fwd", dtype_name(dtype), "x".join(map(str, shape)),
                            name, us, nbytes / us / 1e3, timing=how))
        del sets
    return rows


def forward_backward(device: torch.device, quick: bool) -> list[Row]:
    rows = []
    shapes = [(HEADLINE, torch.bfloat16)] if device.type == "cuda" else [((4096, 4096), torch.float32)]
    if device.type == "cuda" and not quick:
        shapes += [(HEADLINE, torch.float16), (HEADLINE, torch.float32), ((32768, 8192), torch.bfloat16)]
    for shape, dtype in shapes:
        hidden, numel = shape[-1], torch.Size(shape).numel()
        # forward reads x, writes y; backward reads x and dy, writes dx (weight terms are tiny)
        nbytes = (5 * numel + 3 * hidden) * torch.finfo(dtype).bits // 8
        x = torch.randn(shape, device=device, dtype=dtype, requires_grad=True)
        w = (torch.rand(hidden, device=device, dtype=dtype) + 0.5).requires_grad_()
        dy = torch.randn(shape, device=device, dtype=dtype)
        for name, fn in providers.rms_norm(device.type).items():
            def step(s, fn=fn):
                out = fn(s[0], s[1], EPS)
                return torch.autograd.grad(out, (s[0], s[1]), s[2])
            us, how = time_call(step, [(x, w, dy)], device, graph=False)
            rows.append(Row(str(device), "rms_norm", "fwd+bwd", dtype_name(dtype), "x".join(map(str, shape)),
                            name, us, nbytes / us / 1e3, timing=how))
    return rows


def fused_add(device: torch.device, quick: bool) -> list[Row]:
    rows = []
    shapes = [(HEADLINE, d) for d in (torch.bfloat16, torch.float16, torch.float32)] if device.type == "cuda" \
        else [((4096, 4096), torch.float32)]
    if device.type == "cuda" and not quick:
        shapes += [((r, 4096), torch.bfloat16) for r in (1, 64, 4096)]
    for shape, dtype in shapes:
        hidden, numel = shape[-1], torch.Size(shape).numel()
        nbytes = (4 * numel + hidden) * torch.finfo(dtype).bits // 8  # read x, residual; write both

        def make():
            return (torch.randn(shape, device=device, dtype=dtype), torch.randn(shape, device=device, dtype=dtype),
                    torch.rand(hidden, device=device, dtype=dtype) + 0.5)

        sets = input_sets(make, nbytes, device)
        for name, fn in providers.fused_add_rms_norm(device.type).items():
            us, how = time_call(lambda s, fn=fn: fn(s[0], s[1], s[2], EPS), sets, device)
            rows.append(Row(str(device), "fused_add_rms_norm", "fwd", dtype_name(dtype), "x".join(map(str, shape)),
                            name, us, nbytes / us / 1e3, timing=how))
        del sets
    return rows


def run(device: torch.device, quick: bool = False) -> list[Row]:
    return forward(device, quick) + forward_backward(device, quick) + fused_add(device, quick)
