#!/usr/bin/env python3
"""RMSNorm three ways (issue 22): plain PyTorch, Triton, CUDA C, side by side.

  python benchmarks/run.py --family rms_norm_three_ways [--quick]     (recorded in the history)
  python benchmarks/bench_rms_norm_three_ways.py [--quick] [--no-first-call]   (printed only)

Providers: eager (the reference-style composite in the input dtype with
float32 math), F.rms_norm, compile (torch.compile of the composite),
liger (if liger_kernel imports), triton (my_ops.triton_rms_norm) and cuda_c
(my_ops.rms_norm). Shapes: [8, 4096, 4096] bf16 and the sweeps of
bench_rms_norm.py; forward (CUDA-graph replays) and forward+backward (CUDA
events around batches of 10 queued iterations), medians (common.py).
Every provider is checked against the float64 reference before it is timed.
GB/s counts each input read and each output written once; % of copy is
against a measured x.clone() in the same run. The Triton op's first call
(JIT compile) is timed in a fresh process, with an empty Triton cache and
with the cache the first one filled (not with --quick). Rows of family
rms_norm_3ways; benchmarks/run.py records them (CUDA only) in the history,
this script's own main prints them.
"""

from __future__ import annotations

import argparse
import json
import math
import os
import subprocess
import sys
import tempfile
from pathlib import Path

import torch

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
import bench_rms_norm as sweeps  # noqa: E402
import my_ops  # noqa: E402
import providers  # noqa: E402
from common import Row, check_against, copy_bandwidth, dtype_name, finish, input_sets, time_call  # noqa: E402
from my_ops import reference  # noqa: E402

FAMILY = "rms_norm_3ways"
EPS = 1e-6
BASELINES = {(FAMILY, "fwd"): "eager", (FAMILY, "fwd+bwd"): "eager"}


def implementations() -> dict:
    impls = {
        "eager": providers.rms_norm_eager,
        "F.rms_norm": lambda x, w, eps: torch.nn.functional.rms_norm(x, (x.shape[-1],), w, eps),
        "compile": lambda x, w, eps: providers.compiled(providers.rms_norm_eager)(x, w, eps),
        "triton": my_ops.triton_rms_norm,
        "cuda_c": my_ops.rms_norm,
    }
    if providers.HAVE_LIGER:
        impls["liger"] = lambda x, w, eps: providers.LigerRMSNormFunction.apply(x, w, eps)
    return impls


def _forward_cases(quick: bool):
    shapes = [(sweeps.HEADLINE, torch.bfloat16)]
    if not quick:
        shapes += [(sweeps.HEADLINE, d) for d in (torch.float16, torch.float32)]
        shapes += [((32768, h), torch.bfloat16) for h in sweeps.HIDDEN_SWEEP + sweeps.ODD_WIDTHS]
        shapes += [((r, 4096), torch.bfloat16) for r in sweeps.ROWS_SWEEP]
        shapes += [((2**27 // h, h), torch.bfloat16) for h in sweeps.HEAD_SWEEP]
    cases = [(sweeps._label(s), s, d, sweeps._dense(s, d, "cuda")) for s, d in dict.fromkeys(shapes)]
    if not quick:
        cases += [(sweeps._label(s, st), s, torch.bfloat16, sweeps._sliced(s, st, torch.bfloat16, "cuda"))
                  for s, st in sweeps.SLICES]
    return cases


def forward(quick: bool) -> list[Row]:
    device, rows = torch.device("cuda"), []
    for label, shape, dtype, make_x in _forward_cases(quick):
        hidden, numel = shape[-1], torch.Size(shape).numel()
        nbytes = (2 * numel + hidden) * torch.finfo(dtype).bits // 8

        def make(make_x=make_x, hidden=hidden, dtype=dtype):
            return make_x(), torch.rand(hidden, device=device, dtype=dtype) + 0.5

        sets = input_sets(make, nbytes, device)
        want = reference.rms_norm(sets[0][0], sets[0][1], EPS)
        for name, fn in implementations().items():
            check_against(want, fn(sets[0][0], sets[0][1], EPS), f"rms_norm {name} {label}")
            us, how = time_call(lambda s, fn=fn: fn(s[0], s[1], EPS), sets, device)
            rows.append(Row("", FAMILY, "fwd", dtype_name(dtype), label, name, us, nbytes / us / 1e3, timing=how))
        del sets, want
    return rows


def forward_backward(quick: bool) -> list[Row]:
    rows = []
    cases = [(sweeps.HEADLINE, torch.bfloat16, None)]
    if not quick:
        cases += [(sweeps.HEADLINE, torch.float16, None), (sweeps.HEADLINE, torch.float32, None),
                  ((32768, 8192), torch.bfloat16, None), ((2**20, 128), torch.bfloat16, None),
                  ((32768, 4096), torch.bfloat16, 8192)]
    for shape, dtype, stride in cases:
        hidden, numel = shape[-1], torch.Size(shape).numel()
        nbytes = (5 * numel + 3 * hidden) * torch.finfo(dtype).bits // 8
        x = (sweeps._sliced(shape, stride, dtype, "cuda")() if stride
             else torch.randn(shape, device="cuda", dtype=dtype)).requires_grad_()
        w = (torch.rand(hidden, device="cuda", dtype=dtype) + 0.5).requires_grad_()
        dy = torch.randn(shape, device="cuda", dtype=dtype)
        x64, w64 = x.detach().double().requires_grad_(), w.detach().double().requires_grad_()
        want_dx, want_dw = torch.autograd.grad(reference.rms_norm(x64, w64, EPS), (x64, w64), dy.double())
        del x64, w64
        # grad_weight sums over every row: compared relative to its largest entry
        dw_scale = want_dw.abs().max()
        for name, fn in implementations().items():
            def step(s, fn=fn):
                return torch.autograd.grad(fn(s[0], s[1], EPS), (s[0], s[1]), s[2])

            got_dx, got_dw = step((x, w, dy))
            check_against(want_dx, got_dx, f"rms_norm backward dx {name} {sweeps._label(shape, stride)}")
            check_against(want_dw / dw_scale, got_dw / dw_scale,
                          f"rms_norm backward dweight {name} {sweeps._label(shape, stride)}")
            del got_dx, got_dw
            us, how = time_call(step, [(x, w, dy)], torch.device("cuda"), graph=False)
            rows.append(Row("", FAMILY, "fwd+bwd", dtype_name(dtype), sweeps._label(shape, stride), name, us,
                            nbytes / us / 1e3, timing=how))
        del want_dx, want_dw
    return rows


_FIRST_CALL = """
import json, time, torch, my_ops
x = torch.randn(8, 4096, 4096, device="cuda", dtype=torch.bfloat16, requires_grad=True)
w = torch.ones(4096, device="cuda", dtype=torch.bfloat16, requires_grad=True)
dy = torch.ones_like(x)
torch.cuda.synchronize()
t0 = time.perf_counter()
fn = my_ops.triton_rms_norm  # first use: imports Triton and the kernel module
times = {"import": ((time.perf_counter() - t0) * 1e6, 0.0)}
for what in ("first", "second"):
    t0 = time.perf_counter(); y = fn(x, w); torch.cuda.synchronize()
    t1 = time.perf_counter(); y.backward(dy); torch.cuda.synchronize()
    times[what] = ((t1 - t0) * 1e6, (time.perf_counter() - t1) * 1e6)
print(json.dumps(times))
"""


def first_call() -> list[Row]:
    """The Triton op's first forward and backward in a fresh process: JIT compile (empty cache), then a
    fresh process again with the cache that run filled; the second call of each for comparison."""
    rows = []
    with tempfile.TemporaryDirectory() as cache:
        for how in ("empty Triton cache", "warm Triton cache"):
            env = {**os.environ, "TRITON_CACHE_DIR": cache}
            out = subprocess.run([sys.executable, "-c", _FIRST_CALL], env=env, capture_output=True, text=True,
                                 check=True, timeout=600)
            times = json.loads(out.stdout.strip().splitlines()[-1])
            for call, (fwd_us, bwd_us) in times.items():
                if call == "import":  # the first use of my_ops.triton_rms_norm: Triton and the module load
                    rows.append(Row("", FAMILY, "first-use import", "bfloat16", sweeps._label(sweeps.HEADLINE),
                                    "triton", fwd_us, math.nan, timing=f"wall, fresh process, {how}"))
                    continue
                for mode, us in (("first-call fwd", fwd_us), ("first-call bwd", bwd_us)):
                    rows.append(Row("", FAMILY, mode, "bfloat16", sweeps._label(sweeps.HEADLINE), "triton", us,
                                    math.nan, timing=f"wall, fresh process, {how}", note=f"{call} call"))
    return rows


def run(device: torch.device, quick: bool = False) -> list[Row]:
    """For benchmarks/run.py: the CUDA rows (Triton runs on CUDA only)."""
    if device.type != "cuda" or not my_ops.HAVE_TRITON:
        return []
    return forward(quick) + forward_backward(quick) + ([] if quick else first_call())


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--quick", action="store_true", help="the headline shape only")
    parser.add_argument("--no-first-call", action="store_true", help="skip the fresh-process JIT timing")
    args = parser.parse_args()
    if not torch.cuda.is_available() or not my_ops.HAVE_TRITON:
        print("needs a CUDA device and Triton (the Triton op runs on CUDA only)", file=sys.stderr)
        return 2
    for option in ("cache_size_limit", "recompile_limit"):
        if hasattr(torch._dynamo.config, option):
            setattr(torch._dynamo.config, option, 256)
    device_name = torch.cuda.get_device_name()
    copy_gbps = copy_bandwidth(torch.device("cuda"))
    rows = finish(forward(args.quick) + forward_backward(args.quick), copy_gbps, BASELINES)
    if not args.no_first_call:
        rows += first_call()
    for row in rows:
        row.device = device_name
    print(f"device: {device_name}; torch {torch.__version__}; liger: {providers.HAVE_LIGER}; "
          f"copy bandwidth {copy_gbps:.0f} GB/s (printed only: run.py records)")
    print(f"{'mode':<16}{'dtype':<10}{'shape':<16}{'provider':<12}{'us':>11}{'GB/s':>8}{'%copy':>7}"
          f"{'vs eager':>9}  note")
    for r in rows:
        print(f"{r.mode:<16}{r.dtype:<10}{r.shape:<16}{r.provider:<12}{r.time_us:>11.1f}{r.gbps:>8.0f}"
              f"{r.pct_of_copy:>7.1f}{r.speedup_vs_baseline:>9.2f}  {r.timing} {r.note}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
