"""`pip install -e . --no-build-isolation`, as PyTorch's tutorials install
extensions: the package imports from the source folder, finds the build's
_build_info.json and _C where pip put them, and runs an op.

A CPU-only build (MY_OPS_CUDA=OFF) of a copy of the checkout, into a scratch
environment that sees this environment's torch and build tools through a
.pth file. Takes a minute or two: the C kernels and the binding compile.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import sysconfig
import venv
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]


@pytest.mark.skipif(sys.platform != "linux", reason="the scratch environment's layout is Linux's")
def test_editable_install_imports_and_runs(tmp_path):
    if not (ROOT / ".git").exists():
        pytest.skip("needs a git checkout to copy")
    pytest.importorskip("scikit_build_core", reason="needs the build backend of ci/lib/requirements.txt")
    source = tmp_path / "src"
    files = subprocess.run(["git", "ls-files", "-z"], cwd=ROOT, capture_output=True, check=True).stdout
    for name in filter(None, files.decode().split("\0")):
        if (ROOT / name).is_file():
            (source / name).parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(ROOT / name, source / name)
    env_dir = tmp_path / "env"
    venv.create(env_dir, with_pip=False)
    python = env_dir / "bin" / "python"
    site = subprocess.run([str(python), "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])"],
                          capture_output=True, text=True, check=True).stdout.strip()
    Path(site, "outer.pth").write_text(sysconfig.get_paths()["purelib"] + "\n")
    build_env = {**os.environ, "MY_OPS_CUDA": "OFF", "CMAKE_BUILD_PARALLEL_LEVEL": "2"}
    # a CUDA torch's CMake config wants a toolkit even for CPU kernels (CMakeLists.txt says so)
    nvcc = shutil.which("nvcc") or "/usr/local/cuda/bin/nvcc"
    if Path(nvcc).is_file():
        build_env["CMAKE_ARGS"] = f"-DCMAKE_CUDA_COMPILER={nvcc}"
    subprocess.run([sys.executable, "-m", "pip", "--python", str(python), "install", "--quiet", "--no-deps",
                    "--no-build-isolation", "-e", str(source)], check=True, env=build_env, timeout=900)
    check = """
import torch, my_ops
assert my_ops.__file__.startswith(%r), my_ops.__file__  # the source folder, not a copy
x = torch.randn(3, 64, dtype=torch.float64)
w = torch.rand(64, dtype=torch.float64)
want = x * torch.rsqrt(x.pow(2).mean(-1, keepdim=True) + 1e-6) * w
torch.testing.assert_close(my_ops.rms_norm(x, w, 1e-6), want)
print(my_ops.build_info.version, my_ops.build_info.label)
""" % str(source)
    result = subprocess.run([str(python), "-c", check], capture_output=True, text=True, cwd=tmp_path)
    assert result.returncode == 0, result.stdout + result.stderr
    assert result.stdout.strip().endswith("cpu")
