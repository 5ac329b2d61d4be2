"""bench_host.py's table alone, printed: host time per call of the small
eager calls, my_ops beside PyTorch, each pair timed in turns.

  python benchmarks/tuning/host_table.py
"""

from __future__ import annotations

import sys
from pathlib import Path

import torch

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))  # benchmarks/
import bench_host  # noqa: E402

if __name__ == "__main__":
    import my_ops

    device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
    print(f"torch {torch.__version__}, my_ops {my_ops.__version__} ({my_ops.build_info.commit[:7]}) on {device}")
    rows = bench_host.run(device, quick=False)
    baseline = {(r.family, r.mode): r.time_us for r in rows if r.provider == bench_host.BASELINES[(r.family, r.mode)]}
    for row in rows:
        ratio = row.time_us / baseline[(row.family, row.mode)]
        print(f"{row.family:20s} {row.mode:22s} {row.provider:12s} {row.time_us:7.2f} us  {ratio:5.2f}x")
