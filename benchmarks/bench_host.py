"""Host time per call: what one call costs the CPU (dispatch, Python, autograd
bookkeeping) on a tensor small enough that the device work is negligible, as
in an eager decode step. Calls back to back with one synchronisation at the
end of each run; an op's providers take turns run by run (interleaved_us),
median of ROUNDS runs; under torch.no_grad(), with grad enabled (the weight,
or for silu_and_mul the input, requires grad, as in training), and under
torch.inference_mode(). fused_add_rms_norm mutates its inputs, so it runs
with no input requiring grad in every mode.
"""

from __future__ import annotations

import contextlib
import math
import statistics
import time

import torch
import torch.nn.functional as F

import my_ops
from common import Row, dtype_name

CALLS = 3000
REPEATS = 5
ROUNDS = 15
SHAPE = (1, 4096)
MODES = {"no_grad": torch.no_grad, "grad": contextlib.nullcontext, "inference_mode": torch.inference_mode}
BASELINES = {(family, f"host/{mode}"): baseline for mode in MODES
             for family, baseline in (("rms_norm", "F.rms_norm"), ("silu_and_mul", "eager"),
                                      ("fused_add_rms_norm", "eager"))}


def per_call_us(call, device: torch.device, calls: int = CALLS, warmup: int = 200,
                synchronize: bool = True, repeats: int = REPEATS) -> float:
    """Median over `repeats` runs of `calls` calls of the time per call. With
    synchronize (the default), each run ends with a device synchronisation, so
    the time is what a caller waits for; without, host time only."""
    def sync():
        if synchronize and device.type == "cuda":
            torch.cuda.synchronize()

    for _ in range(warmup):
        call()
    sync()
    times = []
    for _ in range(repeats):
        start = time.perf_counter()
        for _ in range(calls):
            call()
        sync()
        times.append((time.perf_counter() - start) * 1e6 / calls)
    return statistics.median(times)


def _cases(device: torch.device, dtype: torch.dtype, mode: str) -> dict:
    hidden = SHAPE[-1]
    grad = mode == "grad"
    x = torch.randn(SHAPE, device=device, dtype=dtype)
    w = (torch.rand(hidden, device=device, dtype=dtype) + 0.5).requires_grad_(grad)
    gated = torch.randn(SHAPE[0], 2 * hidden, device=device, dtype=dtype, requires_grad=grad)
    residual = torch.randn(SHAPE, device=device, dtype=dtype)
    plain_w = w.detach()

    def eager_fused_add():
        residual.add_(x)
        x.copy_(F.rms_norm(residual, (hidden,), plain_w, 1e-6))

    ops = torch.ops.my_ops  # the other road: the op called as inference engines call it
    return {
        "rms_norm": {"my_ops": lambda: my_ops.rms_norm(x, w, 1e-6),
                     "torch.ops": lambda: ops.rms_norm(x, w, 1e-6),
                     "F.rms_norm": lambda: F.rms_norm(x, (hidden,), w, 1e-6)},
        "silu_and_mul": {"my_ops": lambda: my_ops.silu_and_mul(gated),
                         "torch.ops": lambda: ops.silu_and_mul(gated),
                         "eager": lambda: F.silu(gated[..., :hidden]) * gated[..., hidden:]},
        "fused_add_rms_norm": {"my_ops": lambda: my_ops.fused_add_rms_norm(x, residual, plain_w, 1e-6),
                               "torch.ops": lambda: ops.fused_add_rms_norm(x, residual, plain_w, 1e-6),
                               "eager": eager_fused_add},
    }


def interleaved_us(calls: dict, device: torch.device, rounds: int = ROUNDS, per_round: int = CALLS // 3) -> dict:
    """Median time per call of each of `calls` (name -> function), timed in
    turns: each round runs every function's `per_round` calls once, so a drift
    of the machine (host timings here vary by 20-50% between runs) reaches all
    of them alike and the ratios hold."""
    def sync():
        if device.type == "cuda":
            torch.cuda.synchronize()

    for call in calls.values():
        for _ in range(200):
            call()
    sync()
    times = {name: [] for name in calls}
    for _ in range(rounds):
        for name, call in calls.items():
            start = time.perf_counter()
            for _ in range(per_round):
                call()
            sync()
            times[name].append((time.perf_counter() - start) * 1e6 / per_round)
    return {name: statistics.median(t) for name, t in times.items()}


def run(device: torch.device, quick: bool) -> list[Row]:
    dtype = torch.bfloat16 if device.type == "cuda" else torch.float32
    rows = []
    for mode, context in MODES.items():
        with context():
            for family, providers in _cases(device, dtype, mode).items():
                for provider, us in interleaved_us(providers, device).items():
                    rows.append(Row(str(device), family, f"host/{mode}", dtype_name(dtype),
                                    "x".join(map(str, SHAPE)), provider, us, math.nan,
                                    timing=f"perf_counter, {ROUNDS} rounds of {CALLS // 3} calls in turns"))
    return rows
