"""What each private torch name of my_ops/_torch_compat.py buys in host time:
bench_host.py's eager calls (rms_norm beside F.rms_norm, both roads, and
fused_add_rms_norm beside its eager composite; no_grad, grad, inference_mode)
in a process with every name, and in one process per name with that name
hidden (MY_OPS_COMPAT_HIDE=<name>: my_ops takes the name's public fallback).
The processes take turns, --rounds times; each cell is the median over rounds
of the process's own median, us a call (bfloat16 [1, 4096] on a GPU, float32
on the CPU), with its range.

  python benchmarks/tuning/private_names.py [--rounds 3] [--names A,B]
"""

from __future__ import annotations

import argparse
import json
import os
import re
import statistics
import subprocess
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
COMPAT = HERE.parents[1] / "python" / "my_ops" / "_torch_compat.py"


def names() -> list[str]:
    """The private names _torch_compat looks up (as test_torch_compat.py reads them)."""
    return re.findall(r"_private\([^,]+, \"(\w+)\"\)", COMPAT.read_text())


def _child() -> dict:
    import torch

    import my_ops

    sys.path.insert(0, str(HERE.parent))  # benchmarks/
    import bench_host

    device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
    dtype = torch.bfloat16 if device.type == "cuda" else torch.float32
    found = {}
    for mode, context in bench_host.MODES.items():
        with context():
            for family, calls in bench_host._cases(device, dtype, mode).items():
                if family == "silu_and_mul":
                    continue
                for provider, us in bench_host.interleaved_us(calls, device).items():
                    found[f"{family} {mode} {provider}"] = us
    return {"torch": torch.__version__, "my_ops": my_ops.build_info.commit[:7],
            "device": torch.cuda.get_device_name() if device.type == "cuda" else "cpu", "us": found}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--names", default=",".join(names()), help="the names to hide, one process each")
    parser.add_argument("--child", action="store_true", help=argparse.SUPPRESS)
    options = parser.parse_args()
    if options.child:
        print(json.dumps(_child()))
        return
    variants = {"all": "", **{name: name for name in options.names.split(",") if name}}
    found: dict[str, dict[str, list[float]]] = {v: {} for v in variants}
    info = None
    for _ in range(options.rounds):
        for variant, hidden in variants.items():
            env = {**os.environ, "MY_OPS_COMPAT_HIDE": hidden}
            done = subprocess.run([sys.executable, os.path.abspath(__file__), "--child"], env=env,
                                  capture_output=True, text=True, check=True)
            info = json.loads(done.stdout.strip().splitlines()[-1])
            for case, us in info["us"].items():
                found[variant].setdefault(case, []).append(us)
    print(f"my_ops {info['my_ops']}, torch {info['torch']}, {info['device']}; {options.rounds} rounds in turns, "
          "median [range] of each process's median, us a call")
    print(f"{'case':44s} " + " ".join(f"{v[:22]:>24s}" for v in variants))
    for case in found["all"]:
        cells = [f"{statistics.median(found[v][case]):7.2f} [{min(found[v][case]):.1f}-{max(found[v][case]):.1f}]"
                 for v in variants]
        print(f"{case:44s} " + " ".join(f"{c:>24s}" for c in cells))


if __name__ == "__main__":
    main()
