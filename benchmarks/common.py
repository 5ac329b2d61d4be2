"""Timing and reporting shared by the benchmarks.

CUDA: each provider's call is captured N times into a CUDA graph (rotating
through enough input sets to exceed the L2 cache several times), the graph is
replayed, and the median replay time over many replays, divided by N, is the
time per call: device time without launch gaps. Forward+backward is timed
with CUDA events around batches of iterations queued back to back behind an
untimed one (the host runs ahead of the device, as in training). CPU: median
wall time with time.perf_counter.

Effective bandwidth counts each input read once and each output written once.
"""

from __future__ import annotations

import math
import statistics
import time
from dataclasses import dataclass, field
from typing import Callable

import torch


@dataclass
class Row:
    device: str
    family: str
    mode: str  # "fwd" or "fwd+bwd"
    dtype: str
    shape: str
    provider: str
    time_us: float
    gbps: float
    pct_of_copy: float = math.nan
    speedup_vs_baseline: float = math.nan
    baseline: str = ""
    timing: str = ""
    note: str = field(default="")


def dtype_name(dtype: torch.dtype) -> str:
    return str(dtype).replace("torch.", "")


def l2_bytes(device: torch.device) -> int:
    if device.type != "cuda":
        return 32 << 20
    return getattr(torch.cuda.get_device_properties(device), "L2_cache_size", 50 << 20)


def input_sets(make: Callable[[], tuple], bytes_per_call: int, device: torch.device, cap: int = 256) -> list[tuple]:
    """Enough independent input sets that rotating through them streams from memory."""
    wanted = math.ceil(4 * l2_bytes(device) / max(1, bytes_per_call))
    return [make() for _ in range(max(1, min(cap, wanted)))]


def time_graph(call: Callable[[tuple], object], sets: list[tuple], replays: int = 30) -> float:
    """Median microseconds per call, from CUDA-graph replays."""
    per_graph = max(len(sets), 20)
    stream = torch.cuda.Stream()
    stream.wait_stream(torch.cuda.current_stream())
    with torch.cuda.stream(stream):
        for i in range(3 * len(sets)):  # warm-up: compilation, autotuning, allocator
            call(sets[i % len(sets)])
    torch.cuda.current_stream().wait_stream(stream)
    torch.cuda.synchronize()
    graph = torch.cuda.CUDAGraph()
    with torch.cuda.graph(graph):
        for i in range(per_graph):
            call(sets[i % len(sets)])
    for _ in range(3):
        graph.replay()
    torch.cuda.synchronize()
    start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
    times = []
    for _ in range(replays):
        start.record()
        graph.replay()
        end.record()
        end.synchronize()
        times.append(start.elapsed_time(end) * 1000 / per_graph)
    del graph
    return statistics.median(times)


def time_events(call: Callable[[tuple], object], sets: list[tuple], reps: int = 30, warmup: int = 5,
                batch: int = 10) -> float:
    """Median microseconds per call: CUDA events around `batch` calls queued back to back.

    The host queues the next calls while the device runs, as in a training
    step, so host-side overhead (Python autograd, dispatch) counts only where
    it would stall the device there too. One untimed call is queued before
    the start event, so the batch starts behind work already on the device,
    as a layer's call starts behind the layer before it: from an idle device,
    the host's time to reach the first kernel of the batch would count once
    per batch, although a model never waits for it.
    """
    for i in range(warmup):
        call(sets[i % len(sets)])
    torch.cuda.synchronize()
    times = []
    for i in range(reps):
        start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        call(sets[(i * batch - 1) % len(sets)])  # the lead call (untimed; not the batch's first set)
        start.record()
        for j in range(batch):
            call(sets[(i * batch + j) % len(sets)])
        end.record()
        end.synchronize()
        times.append(start.elapsed_time(end) * 1000 / batch)
    return statistics.median(times)


def time_cpu(call: Callable[[tuple], object], sets: list[tuple], reps: int = 20, warmup: int = 3) -> float:
    for i in range(warmup):
        call(sets[i % len(sets)])
    times = []
    for i in range(reps):
        t0 = time.perf_counter()
        call(sets[i % len(sets)])
        times.append((time.perf_counter() - t0) * 1e6)
    return statistics.median(times)


def time_call(call, sets, device: torch.device, graph: bool = True) -> tuple[float, str]:
    if device.type != "cuda":
        return time_cpu(call, sets), "perf_counter"
    if graph:
        try:
            return time_graph(call, sets), "cuda-graph"
        except Exception as error:  # a provider that cannot be captured: time it eagerly
            torch.cuda.synchronize()
            return time_events(call, sets), f"events behind a lead call ({type(error).__name__} in capture)"
    return time_events(call, sets), "events behind a lead call"


def copy_bandwidth(device: torch.device, numel: int = 8 * 4096 * 4096) -> float:
    """GB/s of x.clone() for a bf16 tensor: the practical ceiling (bytes read + written)."""
    x = torch.randn(numel, device=device, dtype=torch.bfloat16)
    us, _ = time_call(lambda s: s[0].clone(), [(x,)], device)
    return 2 * x.numel() * x.element_size() / us / 1e3


def finish(rows: list[Row], copy_gbps: float, baselines: dict[tuple[str, str], str]) -> list[Row]:
    """Fill in % of copy bandwidth and the speedup over each case's baseline provider."""
    by_case: dict[tuple, dict[str, Row]] = {}
    for row in rows:
        row.pct_of_copy = 100 * row.gbps / copy_gbps if copy_gbps else math.nan
        by_case.setdefault((row.family, row.mode, row.dtype, row.shape), {})[row.provider] = row
    for (family, mode, _, _), providers in by_case.items():
        baseline = baselines.get((family, mode))
        if baseline in providers:
            for row in providers.values():
                row.baseline = baseline
                row.speedup_vs_baseline = providers[baseline].time_us / row.time_us
    return rows


# Loose bounds for comparing an implementation with the float64 reference
# before timing it: a benchmark never reports the speed of a wrong result.
_CHECK_TOLERANCE = {torch.float32: 1e-3, torch.float64: 1e-9, torch.float16: 1e-2, torch.bfloat16: 5e-2}


def check_against(want: torch.Tensor, got: torch.Tensor, what: str) -> None:
    tol = _CHECK_TOLERANCE[got.dtype]
    torch.testing.assert_close(got.double(), want.double(), rtol=tol, atol=tol, equal_nan=False,
                               msg=lambda m: f"{what} disagrees with the float64 reference: {m}")
