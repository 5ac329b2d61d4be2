#!/usr/bin/env python3
"""Run every benchmark family on one device, side by side with the baselines,
and append the rows to the machine kind's history.

  python benchmarks/run.py [--device cuda|cpu] [--quick] [--family NAME ...] [--machine KIND]

Appends to benchmarks/results/history-<kind>.csv (history.py: one CSV per
machine kind, with the run's date, the wheel's commit, the machine, torch and
CUDA on every row; nothing else writes results) and prints the run's table.
Then `python benchmarks/make_page.py` regenerates docs/performance.md from
the history. CPU runs use 2 threads, like the development machines.
"""

from __future__ import annotations

import argparse
import datetime
import importlib
import math
import platform
import sys
from pathlib import Path

import torch

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
import history  # noqa: E402
import providers  # noqa: E402
from common import Row, copy_bandwidth, finish  # noqa: E402

# Every bench_<family>.py here, each with run(device, quick) and BASELINES; host time last.
FAMILIES = sorted((importlib.import_module(p.stem) for p in HERE.glob("bench_*.py")),
                  key=lambda m: (m.__name__ == "bench_host", m.__name__))
CPU_THREADS = 2


def cpu_name() -> str:
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or platform.machine()


def records(rows: list[Row], date: str, machine: str, device: torch.device) -> list[dict]:
    """The run's rows as history records; a host mode's time is host time."""
    import my_ops

    out = []
    for r in rows:
        host = r.mode.startswith("host/")
        out.append({"date": date, "commit": my_ops.build_info.commit[:7], "machine": machine,
                    "torch": torch.__version__, "cuda": (torch.version.cuda or "") if device.type == "cuda" else "",
                    "op": r.family, "mode": r.mode, "dtype": r.dtype, "shape": r.shape, "provider": r.provider,
                    "time_us": math.nan if host else r.time_us, "gbps": r.gbps, "pct_of_copy": r.pct_of_copy,
                    "host_us": r.time_us if host else math.nan, "baseline": r.baseline,
                    "speedup_vs_baseline": r.speedup_vs_baseline, "timing": r.timing, "note": r.note,
                    "source": "benchmarks/run.py"})
    return out


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--device", default="cuda" if torch.cuda.is_available() else "cpu")
    parser.add_argument("--quick", action="store_true", help="headline shapes only")
    parser.add_argument("--family", action="append", metavar="NAME",
                        help="only bench_NAME.py (repeatable; default: every family)")
    parser.add_argument("--machine", help="machine kind, the history's name (default: cpu, or the GPU's "
                                          "model, e.g. h100)")
    args = parser.parse_args()

    device = torch.device(args.device)
    if device.type == "cpu":
        torch.set_num_threads(CPU_THREADS)
        kind = args.machine or "cpu"
        device_name = f"{cpu_name()}, {CPU_THREADS} threads"
    else:
        kind = args.machine or torch.cuda.get_device_name().split()[1].lower()
        device_name = torch.cuda.get_device_name()
    families = [f for f in FAMILIES if not args.family or f.__name__.removeprefix("bench_") in args.family]
    unknown = set(args.family or ()) - {f.__name__.removeprefix("bench_") for f in FAMILIES}
    if unknown:
        parser.error(f"no benchmarks/bench_{sorted(unknown)[0]}.py")
    for option in ("cache_size_limit", "recompile_limit"):
        if hasattr(torch._dynamo.config, option):
            setattr(torch._dynamo.config, option, 256)

    date = datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ")
    copy_gbps = copy_bandwidth(device) if device.type == "cuda" else math.nan
    rows: list[Row] = []
    baselines: dict = {}
    for family in families:
        rows += family.run(device, args.quick)
        baselines.update(family.BASELINES)
    rows = finish(rows, copy_gbps, baselines)
    for row in rows:
        row.device = device_name
    path = history.path_for(kind)
    history.append(records(rows, date, device_name, device), path)

    print(f"device: {device_name}; torch {torch.__version__}; liger: {providers.HAVE_LIGER}; "
          f"copy bandwidth {copy_gbps:.0f} GB/s; {len(rows)} rows appended to {path}")
    print(f"{'op':<20}{'mode':<9}{'dtype':<10}{'shape':<16}{'provider':<14}{'us':>10}{'GB/s':>9}{'%copy':>7}{'speedup':>9}")
    for r in rows:
        print(f"{r.family:<20}{r.mode:<9}{r.dtype:<10}{r.shape:<16}{r.provider:<14}{r.time_us:>10.1f}"
              f"{r.gbps:>9.0f}{r.pct_of_copy:>7.1f}{r.speedup_vs_baseline:>9.2f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
