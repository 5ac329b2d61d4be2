"""rms_norm (forward, forward+backward) and fused_add_rms_norm: the headline
and swept shapes, head-sized rows (q/k-norm), rows sliced from wider rows
(read in place; bandwidth counts the view's bytes), odd widths, and bf16
rows with a float32 weight (mixed precision)."""

from __future__ import annotations

import torch

import providers
from common import Row, check_against, dtype_name, input_sets, time_call
from my_ops import reference

EPS = 1e-6
HEADLINE = (8, 4096, 4096)
HIDDEN_SWEEP = [1024, 2048, 4096, 8192, 16384]  # at 32768 rows
ROWS_SWEEP = [1, 4, 16, 64, 256, 1024, 4096, 16384, 65536]  # at hidden 4096
HEAD_SWEEP = [64, 128, 256]  # 2^27 elements: a 256 MiB bf16 input
ODD_WIDTHS = [4097, 2881]  # at 32768 rows: rows not a whole number of 16-byte vectors
# (view shape, row stride): q of a fused qkv projection; one 128-wide head of three
SLICES = [((32768, 4096), 8192), ((32768, 4096), 5120), ((262144, 128), 384)]
BASELINES = {("rms_norm", "fwd"): "F.rms_norm", ("rms_norm", "fwd+bwd"): "F.rms_norm",
             ("fused_add_rms_norm", "fwd"): "eager"}


def _dense(shape, dtype, device):
    return lambda: torch.randn(shape, device=device, dtype=dtype)


def _sliced(shape, stride, dtype, device):
    return lambda: torch.randn(shape[0], stride, device=device, dtype=dtype)[:, : shape[1]]


def _label(shape, stride=None):
    return "x".join(map(str, shape)) + (f"/{stride}" if stride else "")


def _cases(device: torch.device, quick: bool):
    """(label, shape, dtype, make x) of the forward benchmark."""
    if device.type != "cuda":
        cases = [(_label(s), s, d, _dense(s, d, device)) for s in [(4096, 4096), (65536, 128)]
                 for d in (torch.float32, torch.bfloat16)]
        s = (4096, 4096)
        return cases + [(_label(s, 8192), s, torch.float32, _sliced(s, 8192, torch.float32, device))]
    shapes = [(HEADLINE, d) for d in (torch.bfloat16, torch.float16, torch.float32)]
    if not quick:
        shapes += [((32768, h), torch.bfloat16) for h in HIDDEN_SWEEP + ODD_WIDTHS]
        shapes += [((r, 4096), torch.bfloat16) for r in ROWS_SWEEP]
        shapes += [((2**27 // h, h), torch.bfloat16) for h in HEAD_SWEEP]
    cases = [(_label(s), s, d, _dense(s, d, device)) for s, d in dict.fromkeys(shapes)]
    if not quick:
        cases += [(_label(s, st), s, torch.bfloat16, _sliced(s, st, torch.bfloat16, device)) for s, st in SLICES]
    return cases


def forward(device: torch.device, quick: bool) -> list[Row]:
    rows = []
    for label, shape, dtype, make_x in _cases(device, quick):
        hidden = shape[-1]
        numel = torch.Size(shape).numel()
        nbytes = (2 * numel + hidden) * torch.finfo(dtype).bits // 8

        def make(make_x=make_x, hidden=hidden, dtype=dtype):
            return make_x(), torch.rand(hidden, device=device, dtype=dtype) + 0.5

        sets = input_sets(make, nbytes, device)
        want = reference.rms_norm(sets[0][0], sets[0][1], EPS)
        for name, fn in providers.rms_norm(device.type).items():
            check_against(want, fn(sets[0][0], sets[0][1], EPS), f"rms_norm {name} {label}")
            us, how = time_call(lambda s, fn=fn: fn(s[0], s[1], EPS), sets, device)
            rows.append(Row(str(device), "rms_norm", "fwd", dtype_name(dtype), label,
                            name, us, nbytes / us / 1e3, timing=how))
        del sets, want
    return rows


def forward_backward(device: torch.device, quick: bool) -> list[Row]:
    rows = []
    # (shape, dtype, row stride of a slice or None)
    shapes = [(HEADLINE, torch.bfloat16, None)] if device.type == "cuda" else [((4096, 4096), torch.float32, None)]
    if device.type != "cuda":
        shapes += [((65536, 128), torch.float32, None)]
    if device.type == "cuda" and not quick:
        shapes += [(HEADLINE, torch.float16, None), (HEADLINE, torch.float32, None),
                   ((32768, 8192), torch.bfloat16, None), ((2**20, 128), torch.bfloat16, None),
                   ((32768, 4096), torch.bfloat16, 8192)]
    for shape, dtype, stride in shapes:
        hidden, numel = shape[-1], torch.Size(shape).numel()
        # forward reads x, writes y; backward reads x and dy, writes dx (weight terms are tiny)
        nbytes = (5 * numel + 3 * hidden) * torch.finfo(dtype).bits // 8
        x = (_sliced(shape, stride, dtype, device)() if stride else torch.randn(shape, device=device, dtype=dtype))
        x.requires_grad_()
        w = (torch.rand(hidden, device=device, dtype=dtype) + 0.5).requires_grad_()
        dy = torch.randn(shape, device=device, dtype=dtype)
        for name, fn in providers.rms_norm(device.type).items():
            def step(s, fn=fn):
                out = fn(s[0], s[1], EPS)
                return torch.autograd.grad(out, (s[0], s[1]), s[2])
            us, how = time_call(step, [(x, w, dy)], device, graph=False)
            rows.append(Row(str(device), "rms_norm", "fwd+bwd", dtype_name(dtype), _label(shape, stride),
                            name, us, nbytes / us / 1e3, timing=how))
    return rows


def fused_add(device: torch.device, quick: bool) -> list[Row]:
    rows = []
    # (shape, dtype, row stride or None): with a stride, x and residual are each a slice of a wider tensor
    shapes = [(HEADLINE, d, None) for d in (torch.bfloat16, torch.float16, torch.float32)] if device.type == "cuda" \
        else [((4096, 4096), torch.float32, None)]
    if device.type != "cuda":
        shapes += [((65536, 128), torch.float32, None), ((4096, 4096), torch.float32, 8192)]
    if device.type == "cuda" and not quick:
        shapes += [((r, 4096), torch.bfloat16, None) for r in (1, 64, 4096)]
        shapes += [((2**20, 128), torch.bfloat16, None), ((32768, 4096), torch.bfloat16, 8192),
                   ((32768, 4097), torch.bfloat16, None)]
    for shape, dtype, stride in shapes:
        hidden, numel = shape[-1], torch.Size(shape).numel()
        nbytes = (4 * numel + hidden) * torch.finfo(dtype).bits // 8  # read x, residual; write both
        make_x = _sliced(shape, stride, dtype, device) if stride else _dense(shape, dtype, device)

        def make(make_x=make_x, hidden=hidden, dtype=dtype):
            return make_x(), make_x(), torch.rand(hidden, device=device, dtype=dtype) + 0.5

        sets = input_sets(make, nbytes, device)
        for name, fn in providers.fused_add_rms_norm(device.type).items():
            us, how = time_call(lambda s, fn=fn: fn(s[0], s[1], s[2], EPS), sets, device)
            rows.append(Row(str(device), "fused_add_rms_norm", "fwd", dtype_name(dtype), _label(shape, stride),
                            name, us, nbytes / us / 1e3, timing=how))
        del sets
    return rows


# bf16 rows with a float32 weight, as mixed-precision training keeps its
# parameters: the headline, head-sized rows (CUDA: a group of lanes per row),
# an odd width (the covering-vector kernels) and, for the backward, rows of
# 8 vectors per thread.
MIXED_FORWARD = [HEADLINE, (2**27 // 128, 128), (32768, 4097)]
MIXED_BACKWARD = [HEADLINE, (2**20, 128), (4096, 32768)]


def _weight_label(dtype, weight_dtype) -> str:
    return dtype_name(dtype) if weight_dtype == dtype else f"{dtype_name(dtype)}+{dtype_name(weight_dtype)} weight"


def mixed_weights(device: torch.device, quick: bool, weight_dtypes=(torch.float32,)) -> list[Row]:
    """bf16 rows with a weight of each of weight_dtypes (bf16 too: the same cases
    with a bf16 weight, side by side). Providers that take such a pair: my_ops,
    F.rms_norm (which keeps x's dtype too), the fused add's eager composite."""
    rows, dtype = [], torch.bfloat16
    quick = quick or device.type != "cuda"
    forward_shapes = MIXED_FORWARD[:1] if quick else MIXED_FORWARD
    backward_shapes = MIXED_BACKWARD[:1] if quick else MIXED_BACKWARD
    if device.type != "cuda":
        forward_shapes = backward_shapes = [(4096, 4096)]
    names = {"rms_norm": ("my_ops", "F.rms_norm"), "fused_add_rms_norm": ("my_ops", "eager")}
    for weight_dtype in weight_dtypes:
        label = _weight_label(dtype, weight_dtype)
        w_bytes = torch.finfo(weight_dtype).bits // 8
        for shape in forward_shapes:
            hidden, numel = shape[-1], torch.Size(shape).numel()

            def make(shape=shape, hidden=hidden, weight_dtype=weight_dtype):
                return (torch.randn(shape, device=device, dtype=dtype), torch.randn(shape, device=device, dtype=dtype),
                        torch.rand(hidden, device=device, dtype=weight_dtype) + 0.5)

            nbytes = 2 * numel * 2 + hidden * w_bytes
            sets = input_sets(make, nbytes, device)
            want = reference.rms_norm(sets[0][0], sets[0][2], EPS)
            for name, fn in providers.rms_norm(device.type).items():
                if name not in names["rms_norm"]:
                    continue
                check_against(want, fn(sets[0][0], sets[0][2], EPS), f"rms_norm {name} {label} {_label(shape)}")
                us, how = time_call(lambda s, fn=fn: fn(s[0], s[2], EPS), sets, device)
                rows.append(Row(str(device), "rms_norm", "fwd", label, _label(shape), name, us, nbytes / us / 1e3,
                                timing=how))
            nbytes = 4 * numel * 2 + hidden * w_bytes
            for name, fn in providers.fused_add_rms_norm(device.type).items():
                if name not in names["fused_add_rms_norm"]:
                    continue
                us, how = time_call(lambda s, fn=fn: fn(s[0], s[1], s[2], EPS), sets, device)
                rows.append(Row(str(device), "fused_add_rms_norm", "fwd", label, _label(shape), name, us,
                                nbytes / us / 1e3, timing=how))
            del sets, want
        for shape in backward_shapes:
            hidden, numel = shape[-1], torch.Size(shape).numel()
            nbytes = 5 * numel * 2 + 3 * hidden * w_bytes
            x = torch.randn(shape, device=device, dtype=dtype).requires_grad_()
            w = (torch.rand(hidden, device=device, dtype=weight_dtype) + 0.5).requires_grad_()
            dy = torch.randn(shape, device=device, dtype=dtype)
            for name, fn in providers.rms_norm(device.type).items():
                if name not in names["rms_norm"]:
                    continue

                def step(s, fn=fn):
                    return torch.autograd.grad(fn(s[0], s[1], EPS), (s[0], s[1]), s[2])

                grad_w = step((x, w, dy))[1]
                assert grad_w.dtype == weight_dtype, f"{name}: grad_weight {grad_w.dtype}"
                us, how = time_call(step, [(x, w, dy)], device, graph=False)
                rows.append(Row(str(device), "rms_norm", "fwd+bwd", label, _label(shape), name, us, nbytes / us / 1e3,
                                timing=how))
            del x, w, dy
    return rows


def run(device: torch.device, quick: bool = False) -> list[Row]:
    return forward(device, quick) + forward_backward(device, quick) + fused_add(device, quick) + \
        mixed_weights(device, quick)
