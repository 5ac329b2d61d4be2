#!/usr/bin/env python3
"""Run every benchmark family on one device, side by side with the baselines.

  python benchmarks/run.py [--device cuda|cpu] [--quick] [--name h100]

Writes benchmarks/results/<name>.csv and <name>.png and prints a table of the
headline shapes with each target's ratio. CPU runs use 2 threads, like the
development machines.
"""

from __future__ import annotations

import argparse
import importlib
import math
import re
import sys
from pathlib import Path

import torch

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
import providers  # noqa: E402
from common import RESULTS, Row, copy_bandwidth, finish, write_csv  # noqa: E402

# Every bench_<family>.py here, each with run(device, quick) and BASELINES; host time last.
FAMILIES = sorted((importlib.import_module(p.stem) for p in HERE.glob("bench_*.py")),
                  key=lambda m: (m.__name__ == "bench_host", m.__name__))


def plot(rows: list[Row], path: Path) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    dense = re.compile(r"^\d+x\d+$")  # not the headline's 3-D shape, not a slice (rows x hidden/stride)
    sweeps = [("hidden size (32768 rows, bf16)", lambda s: dense.match(s) and s.startswith("32768x"),
               lambda s: int(s.split("x")[1])),
              ("rows (hidden 4096, bf16)", lambda s: dense.match(s) and s.endswith("x4096"),
               lambda s: int(s.split("x")[0]))]
    fig, axes = plt.subplots(1, 2, figsize=(13, 4.5))
    for ax, (label, pick, key) in zip(axes, sweeps):
        for provider in dict.fromkeys(r.provider for r in rows):
            points = sorted((key(r.shape), r.gbps) for r in rows if r.family == "rms_norm" and r.mode == "fwd"
                            and r.dtype == "bfloat16" and r.provider == provider and pick(r.shape))
            if points:
                ax.plot(*zip(*points), marker="o", label=provider)
        ax.set_xscale("log", base=2)
        ax.set_xlabel(label)
        ax.set_ylabel("effective GB/s")
        ax.grid(True, alpha=0.3)
        ax.legend()
    fig.suptitle(f"rms_norm forward on {rows[0].device}")
    fig.tight_layout()
    fig.savefig(path, dpi=110)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--device", default="cuda" if torch.cuda.is_available() else "cpu")
    parser.add_argument("--quick", action="store_true", help="headline shapes only")
    parser.add_argument("--name", help="result file name (default: the device name)")
    args = parser.parse_args()

    device = torch.device(args.device)
    if device.type == "cpu":
        torch.set_num_threads(2)
        name = args.name or "cpu"
        device_name = "CPU, 2 threads"
    else:
        name = args.name or torch.cuda.get_device_name().split()[1].lower()
        device_name = torch.cuda.get_device_name()
    for option in ("cache_size_limit", "recompile_limit"):
        if hasattr(torch._dynamo.config, option):
            setattr(torch._dynamo.config, option, 256)

    copy_gbps = copy_bandwidth(device) if device.type == "cuda" else math.nan
    rows: list[Row] = []
    baselines: dict = {}
    for family in FAMILIES:
        rows += family.run(device, args.quick)
        baselines.update(family.BASELINES)
    rows = finish(rows, copy_gbps, baselines)
    for row in rows:
        row.device = device_name
    RESULTS.mkdir(exist_ok=True)
    write_csv(rows, RESULTS / f"{name}.csv")
    if device.type == "cuda" and not args.quick:
        plot(rows, RESULTS / f"{name}.png")

    print(f"device: {device_name}; torch {torch.__version__}; liger: {providers.HAVE_LIGER}; "
          f"copy bandwidth {copy_gbps:.0f} GB/s")
    print(f"{'op':<20}{'mode':<9}{'dtype':<10}{'shape':<16}{'provider':<14}{'us':>10}{'GB/s':>9}{'%copy':>7}{'speedup':>9}")
    for r in rows:
        print(f"{r.family:<20}{r.mode:<9}{r.dtype:<10}{r.shape:<16}{r.provider:<14}{r.time_us:>10.1f}"
              f"{r.gbps:>9.0f}{r.pct_of_copy:>7.1f}{r.speedup_vs_baseline:>9.2f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
