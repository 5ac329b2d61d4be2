"""libmy_ops without Python: a LibTorch C++ program, built here against the
installed torch, loads the wheel's shared library and runs an op through
the dispatcher."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
import torch
from torch.utils import cpp_extension

import my_ops

ROOT = Path(__file__).resolve().parents[2]
CXX = os.environ.get("CXX") or shutil.which("c++") or shutil.which("g++")


@pytest.mark.skipif(not sys.platform.startswith("linux") or CXX is None, reason="needs Linux and a C++ compiler")
def test_libtorch_program_runs_an_op_without_python(tmp_path):
    library = my_ops.library.folder / "libmy_ops.so"  # (in PyPI's wheel: the loaded library's folder)
    assert library.is_file()
    torch_lib = Path(torch.__file__).parent / "lib"
    abi = int(torch._C._GLIBCXX_USE_CXX11_ABI)
    exe = tmp_path / "call_rms_norm"
    build = subprocess.run(
        # torch's headers need C++17, from 2.14 on C++20; the C++ ABI is torch's
        [CXX, "-std=c++20", f"-D_GLIBCXX_USE_CXX11_ABI={abi}", "-O0",
         *(f"-I{p}" for p in cpp_extension.include_paths()), str(ROOT / "tests/packaging/cpp/call_rms_norm.cpp"),
         f"-L{torch_lib}", f"-Wl,-rpath,{torch_lib}", "-ltorch_cpu", "-lc10", "-ldl", "-o", str(exe)],
        capture_output=True, text=True, timeout=600)
    assert build.returncode == 0, build.stderr[-3000:]
    # libmy_ops' own dependencies (libtorch_cuda, libcudart) come from the
    # library path, as in any LibTorch deployment.
    site = Path(torch.__file__).parent.parent
    paths = [str(torch_lib), *(str(p.parent) for p in site.glob("nvidia/*/lib/libcudart.so*"))]
    env = {**os.environ, "LD_LIBRARY_PATH": os.pathsep.join(paths)}
    seed = str(int.from_bytes(os.urandom(4), "little"))
    result = subprocess.run([str(exe), str(library), seed], capture_output=True, text=True, env=env, timeout=300)
    assert result.returncode == 0, f"seed {seed}\n{result.stdout}\n{result.stderr}"
    assert "refused: my_ops.rms_norm: expected weight to have shape [64] (the last dimension of x), but got [63]" \
        in result.stdout
