"""The gated units silu_and_mul and gelu_and_mul (tanh and erf), forward and
forward+backward, plus silu_and_mul on a slice of a wider tensor (the gate-up
part of a fused projection), read in place."""

from __future__ import annotations

import torch

import providers
from common import Row, check_against, dtype_name, input_sets, time_call
from my_ops import reference

HEADLINE = (16384, 2 * 8192)
UNITS = {"silu_and_mul": (), "gelu_and_mul": ("tanh",), "gelu_and_mul(none)": ("none",)}
BASELINES = {(unit, mode): "eager" for unit in UNITS for mode in ("fwd", "fwd+bwd")}


def _op(unit: str) -> str:
    return unit.split("(")[0]


def _forward(device, unit, shape, dtype, make, label=None) -> list[Row]:
    rows = []
    numel_out = shape[0] * shape[1] // 2
    nbytes = 3 * numel_out * torch.finfo(dtype).bits // 8  # read [M, 2d] (the view's bytes), write [M, d]
    sets = input_sets(make, nbytes, device)
    extra = UNITS[unit]
    want = getattr(reference, _op(unit))(sets[0][0], *extra)
    for name, fn in providers.act_and_mul(_op(unit), device.type, *extra).items():
        check_against(want, fn(sets[0][0]), f"{unit} {name}")
        us, how = time_call(lambda s, fn=fn: fn(s[0]), sets, device)
        rows.append(Row(str(device), unit, "fwd", dtype_name(dtype), label or "x".join(map(str, shape)),
                        name, us, nbytes / us / 1e3, timing=how))
    del sets
    return rows


def _forward_backward(device, unit, shape, dtype) -> list[Row]:
    rows = []
    # forward 3 units, backward reads dy and x (3), writes dx (2)
    nbytes = 8 * (shape[0] * shape[1] // 2) * torch.finfo(dtype).bits // 8
    x = torch.randn(shape, device=device, dtype=dtype, requires_grad=True)
    dy = torch.randn(shape[0], shape[1] // 2, device=device, dtype=dtype)
    for name, fn in providers.act_and_mul(_op(unit), device.type, *UNITS[unit]).items():
        def step(s, fn=fn):
            return torch.autograd.grad(fn(s[0]), (s[0],), s[1])
        us, how = time_call(step, [(x, dy)], device, graph=False)
        rows.append(Row(str(device), unit, "fwd+bwd", dtype_name(dtype), "x".join(map(str, shape)),
                        name, us, nbytes / us / 1e3, timing=how))
    return rows


def run(device: torch.device, quick: bool = False) -> list[Row]:
    rows = []
    if device.type == "cuda":
        shapes = [(HEADLINE, torch.bfloat16), (HEADLINE, torch.float16), (HEADLINE, torch.float32)]
        if not quick:
            shapes += [((r, 2 * 4096), torch.bfloat16) for r in (1, 64, 4096)]
        fb_shape, fb_dtype = HEADLINE, torch.bfloat16
    else:
        shapes = [((4096, 2 * 4096), torch.float32), ((4096, 2 * 4096), torch.bfloat16)]
        fb_shape, fb_dtype = (4096, 2 * 4096), torch.float32
    for unit in UNITS:
        for shape, dtype in shapes if unit != "gelu_and_mul(none)" else shapes[:1]:
            rows += _forward(device, unit, shape, dtype,
                             lambda shape=shape, dtype=dtype: (torch.randn(shape, device=device, dtype=dtype),))
        rows += _forward_backward(device, unit, fb_shape, fb_dtype)
    # [M, 2d] gate-up slice of a [M, 3d] fused projection: row stride 3d
    m, d = (16384, 8192) if device.type == "cuda" else (2048, 4096)
    shape, dtype = (m, 2 * d), (torch.bfloat16 if device.type == "cuda" else torch.float32)
    rows += _forward(device, "silu_and_mul", shape, dtype,
                     lambda: (torch.randn(m, 3 * d, device=device, dtype=dtype)[:, d:],),
                     label=f"{m}x{2 * d}/{3 * d}")
    return rows
