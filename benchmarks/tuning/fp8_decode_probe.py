"""An fp8 op at a decode shape beside torch.compile of its composite, as the
fp8 benchmark calls them (benchmarks/providers.py): the kernels each call
launches and their device time (torch.profiler), then the time a call under
CUDA-graph replays over rotating inputs (common.time_graph, the benchmark's
timing), three times. With --ncu, only three calls of each, between
cudaProfilerStart/Stop, for

  ncu --profile-from-start off --clock-control none --metrics ... \\
      python benchmarks/tuning/fp8_decode_probe.py --ncu

which is how the static SiLU's few-row kernel was found waiting on its scale
(docs/performance.md, the fp8 table's notes).

  python benchmarks/tuning/fp8_decode_probe.py [--ncu] [rows] [d]   (default 64 8192)
"""

from __future__ import annotations

import sys
from pathlib import Path

import torch
from torch.profiler import ProfilerActivity, profile

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
import providers  # noqa: E402
from common import time_graph  # noqa: E402


def main() -> None:
    ncu = "--ncu" in sys.argv
    rows, d = (int(a) for a in ([a for a in sys.argv[1:] if a != "--ncu"] or ["64", "8192"]))
    torch.manual_seed(0)
    ops = providers.fp8("silu_and_mul_fp8")
    sets = [(torch.randn(rows, 2 * d, device="cuda", dtype=torch.bfloat16), torch.tensor([0.05], device="cuda"))
            for _ in range(64)]
    calls = {"my_ops": lambda s: ops["my_ops"](*s), "compile": lambda s: ops["compile"](*s)}
    for call in calls.values():
        for _ in range(3):
            call(sets[0])
    torch.cuda.synchronize()
    ours, theirs = (calls[n](sets[0]).view(torch.uint8) for n in calls)
    print(f"silu_and_mul_fp8 [{rows}, 2 x {d}] bf16: bytes differing from torch.compile's: "
          f"{(ours != theirs).sum().item()} of {ours.numel()}")
    if ncu:
        torch.cuda.profiler.start()
        for call in calls.values():
            for i in range(3):
                call(sets[i + 1])
        torch.cuda.synchronize()
        torch.cuda.profiler.stop()
        return
    for name, call in calls.items():
        with profile(activities=[ProfilerActivity.CUDA]) as prof:
            for i in range(5):
                call(sets[i])
            torch.cuda.synchronize()
        print(f"{name}: kernels of 5 calls")
        for e in prof.key_averages():
            if e.device_type.name == "CUDA":
                print(f"  {e.count:3d} x {e.key[:90]:<90} {e.device_time:.2f} us")
    for _ in range(3):
        print("us a call under CUDA graphs:", {n: round(time_graph(c, sets), 3) for n, c in calls.items()})


if __name__ == "__main__":
    main()
