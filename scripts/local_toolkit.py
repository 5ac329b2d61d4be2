#!/usr/bin/env python3
"""Assemble a CUDA toolkit from PyPI packages, for building a pair on a Linux
host that lacks that CUDA version.

  scripts/local_toolkit.py --cuda 13.2 [--prefix .toolkits]   # prints the CUDA_HOME to use

The packages come from scripts/matrix.toml (`pip_toolkit` of the CUDA
version). CUDA 13 packages install into one tree, nvidia/cu13/{bin,include,
lib,nvvm}, which is a toolkit root once lib64 points at lib. CUDA 12.x has no
such packages (the cu12 nvcc wheels lack nvcc itself); asking for one fails
with that explanation.
"""

from __future__ import annotations

import argparse
import subprocess
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
import matrix  # noqa: E402

ROOT = Path(__file__).resolve().parent.parent


def assemble(cuda: str, prefix: Path) -> Path:
    data = matrix.load()
    spec = data["cuda"].get(cuda)
    if spec is None:
        raise SystemExit(f"matrix.toml has no CUDA {cuda}")
    packages = spec.get("pip_toolkit", [])
    if not packages:
        raise SystemExit(
            f"CUDA {cuda} cannot be assembled from PyPI: its nvidia-cuda-nvcc wheels carry no nvcc "
            f"(see matrix.toml). Install the CUDA {cuda} toolkit and set CUDA_HOME, or build this "
            f"pair in its builder container ({spec['linux_image']})."
        )
    target = prefix / f"cuda-{cuda}"
    root = target / "nvidia" / f"cu{cuda.split('.')[0]}"
    stamp = target / ".packages"
    if not (stamp.is_file() and stamp.read_text() == "\n".join(packages)):
        subprocess.run([sys.executable, "-m", "pip", "install", "--quiet", "--no-deps", "--upgrade",
                        "--target", str(target), *packages], check=True)
        stamp.write_text("\n".join(packages))
    nvcc = root / "bin" / "nvcc"
    if not nvcc.is_file():
        raise SystemExit(f"{nvcc} is missing after installing {' '.join(packages)}")
    lib64 = root / "lib64"
    if not lib64.exists():
        lib64.symlink_to("lib")
    # Linking with -lcudart needs the unversioned name the runtime wheel leaves out.
    runtime = sorted((root / "lib").glob("libcudart.so.*"))
    if runtime and not (root / "lib" / "libcudart.so").exists():
        (root / "lib" / "libcudart.so").symlink_to(runtime[0].name)
    return root


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--cuda", required=True, help="CUDA version, e.g. 13.2")
    parser.add_argument("--prefix", type=Path, default=ROOT / ".toolkits")
    args = parser.parse_args()
    print(assemble(args.cuda, args.prefix.resolve()))
    return 0


if __name__ == "__main__":
    sys.exit(main())
