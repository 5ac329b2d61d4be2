"""The C test program of the CPU kernels (tests/ops/c/), without torch.

Built with the system C compiler and run twice: optimised, and under
AddressSanitizer + UndefinedBehaviorSanitizer where the compiler supports them.
"""

from __future__ import annotations

import os
import shutil
import subprocess
from pathlib import Path

import pytest
import torch

ROOT = Path(__file__).resolve().parents[2]
SOURCES = [ROOT / "tests/ops/c/test_cpu_kernels.c", *sorted((ROOT / "src/kernels/cpu").glob("*.c"))]
CC = os.environ.get("CC") or shutil.which("cc") or shutil.which("gcc")

pytestmark = pytest.mark.skipif(CC is None, reason="no C compiler")


def _build_and_run(tmp_path: Path, flags: list[str]) -> str:
    exe = tmp_path / "test_cpu_kernels"
    subprocess.run([CC, "-std=c11", "-Wall", "-Wextra", "-Werror", *flags, *map(str, SOURCES),
                    "-lm", "-o", str(exe)], check=True, capture_output=True, text=True)
    # from torch's generator, which the suite seeds per test: the seed a failure prints
    # (MY_OPS_SEED=...) gives the C program the same seed again
    seed = str(int(torch.randint(0, 2**32, (1,), dtype=torch.int64)))
    result = subprocess.run([str(exe), seed], capture_output=True, text=True, timeout=300)
    assert result.returncode == 0, f"seed {seed}\n{result.stdout}\n{result.stderr}"
    assert " 0 failed" in result.stdout
    return result.stdout


def test_c_kernels_optimised(tmp_path):
    _build_and_run(tmp_path, ["-O3", "-fno-trapping-math"])  # the wheel's flags (CMakeLists.txt)


def test_c_kernels_sanitized(tmp_path):
    probe = subprocess.run([CC, "-fsanitize=address,undefined", "-x", "c", "-", "-o",
                            str(tmp_path / "probe")], input="int main(void){return 0;}",
                           capture_output=True, text=True)
    if probe.returncode != 0:
        pytest.skip("the C compiler has no AddressSanitizer/UBSan runtime")
    _build_and_run(tmp_path, ["-O1", "-g", "-fsanitize=address,undefined", "-fno-sanitize-recover=all"])
