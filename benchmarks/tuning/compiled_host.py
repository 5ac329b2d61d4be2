"""The host time of a compiled call of the in-place ops, with and without
my_ops::check_memory, the memory check each call of one runs on the compiled
graph's real inputs (docs/performance.md, "Host time per call"):
fused_add_rms_norm and add_out on [4, 64] tensors (float32 on the CPU,
bfloat16 on a GPU), each compiled alone (fullgraph) with the aot_eager
backend and with inductor (skipped, with its error, where it cannot compile
here). Without the check: MY_OPS_COMPAT_HIDE=FunctionalTensorMode, which
leaves it out of the graph (my_ops._torch_compat, name 5), in a process of its own.
Also the node alone: torch.ops.my_ops.check_memory on the same tensors.

Each process times runs of --calls calls back to back (one synchronisation at
the end of a run on a GPU: host time), after 200 warm-up calls, and reports
the median of --runs runs; the two kinds of process take turns, --rounds
times, and each line gives the median over rounds and their range. --python
times another interpreter's my_ops (e.g. a checkout without a change, for a
before/after on one machine).

  python benchmarks/tuning/compiled_host.py [--rounds 3] [--runs 7] [--calls 2000]
      [--backends aot_eager,inductor] [--python PATH]
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
from pathlib import Path

SHAPE = (4, 64)
WARMUP = 200


def _child(backends: list[str], runs: int, calls: int) -> dict:
    import torch

    import my_ops

    sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # benchmarks/
    import bench_host

    device = "cuda" if torch.cuda.is_available() else "cpu"
    dtype = torch.bfloat16 if device == "cuda" else torch.float32

    def per_call_us(fn) -> float:
        return bench_host.per_call_us(fn, torch.device(device), calls=calls, warmup=WARMUP, repeats=runs)

    x, residual, b, out = (torch.randn(SHAPE, device=device, dtype=dtype) for _ in range(4))
    weight = torch.rand(SHAPE[-1], device=device, dtype=dtype) + 0.5

    def fused_add(x, residual, weight):
        my_ops.fused_add_rms_norm(x, residual, weight, 1e-6)

    def add_out(a, b, out):
        my_ops.add_out(a, b, out)

    cases = {"fused_add_rms_norm": (fused_add, (x, residual, weight)), "add_out": (add_out, (x, b, out))}
    result = {"torch": torch.__version__, "my_ops": my_ops.__file__,
              "device": torch.cuda.get_device_name() if device == "cuda" else "cpu", "us": {}}
    for backend in backends:
        for name, (fn, args) in cases.items():
            torch.compiler.reset()
            compiled = torch.compile(fn, backend=backend, fullgraph=True)
            try:
                compiled(*args)
            except Exception as e:  # (inductor without a working C++ compiler, ...)
                result["us"][f"{backend} {name}"] = f"skipped: {type(e).__name__}: {str(e).splitlines()[0][:100]}"
                continue
            result["us"][f"{backend} {name}"] = per_call_us(lambda compiled=compiled, args=args: compiled(*args))
    if os.environ.get("MY_OPS_COMPAT_HIDE", "") == "":
        node = torch.ops.my_ops.check_memory.default
        result["us"]["node alone, fused_add_rms_norm"] = per_call_us(
            lambda: node("fused_add_rms_norm", [x, residual, weight]))
        result["us"]["node alone, add_out"] = per_call_us(lambda: node("add_out", [x, b, out]))
    return result


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--runs", type=int, default=7)
    parser.add_argument("--calls", type=int, default=2000)
    parser.add_argument("--backends", default="aot_eager,inductor")
    parser.add_argument("--python", default=sys.executable, help="the interpreter whose my_ops is timed")
    parser.add_argument("--child", action="store_true", help=argparse.SUPPRESS)
    options = parser.parse_args()
    backends = options.backends.split(",")
    if options.child:
        print(json.dumps(_child(backends, options.runs, options.calls)))
        return

    variants = {"with the check": "", "without (hidden)": "FunctionalTensorMode"}
    found: dict[str, dict[str, list]] = {v: {} for v in variants}
    info = None
    for _ in range(options.rounds):
        for variant, hidden in variants.items():
            env = {**os.environ, "MY_OPS_COMPAT_HIDE": hidden}
            command = [options.python, os.path.abspath(__file__), "--child", "--backends", options.backends,
                       "--runs", str(options.runs), "--calls", str(options.calls)]
            done = subprocess.run(command, env=env, capture_output=True, text=True, check=True)
            info = json.loads(done.stdout.strip().splitlines()[-1])
            for case, us in info["us"].items():
                found[variant].setdefault(case, []).append(us)
    print(f"my_ops {info['my_ops']}, torch {info['torch']}, {info['device']}, {list(SHAPE)}; "
          f"medians of {options.runs} x {options.calls} calls, {options.rounds} rounds (median [range]), us a call")
    for case in found["with the check"]:
        cells = []
        for variant in variants:
            values = found[variant].get(case)
            if values is None:
                continue
            if isinstance(values[0], str):
                cells.append(f"{variant}: {values[0]}")
                continue
            cells.append(f"{variant} {statistics.median(values):7.1f} [{min(values):.1f}-{max(values):.1f}]")
        print(f"{case:36s} " + "   ".join(cells))


if __name__ == "__main__":
    main()
