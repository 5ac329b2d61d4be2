"""Building the sdist (`pip install --no-build-isolation --no-binary my_ops
my_ops`, what the import errors tell users to run) on a machine without a
CUDA toolkit (a CPU-only CI machine, a platform with no my_ops wheel) makes
the CPU kernels instead of stopping, even under a CUDA build of torch.

The toolkit is hidden in a private mount namespace (unshare): an empty folder
over /usr/local/cuda, an empty file over any nvcc in CMake's default search
folders, and no PATH entry that holds an nvcc.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import zipfile
from pathlib import Path

import pytest

from conftest import requires_sdist_builder

ROOT = Path(__file__).resolve().parents[2]


def _hidden_toolkit_env(tmp_path: Path) -> dict[str, str]:
    path = [d for d in os.environ.get("PATH", "").split(os.pathsep)
            if d and not (Path(d) / "nvcc").exists()]
    path.insert(0, str(Path(sys.executable).parent))  # the venv's cmake and ninja
    env = {k: v for k, v in os.environ.items() if k not in ("CUDA_HOME", "CUDA_PATH", "CUDACXX", "MY_OPS_CUDA")}
    env.update(PATH=os.pathsep.join(path), TMPDIR=str(tmp_path))
    return env


def _in_namespace(command: list[str], env: dict[str, str], empty: Path, **kwargs) -> subprocess.CompletedProcess:
    empty.mkdir(exist_ok=True)
    (empty.parent / "not-nvcc").write_text("")
    hide = ""
    if Path("/usr/local/cuda").exists():
        hide += 'mount --bind "$EMPTY" /usr/local/cuda && '
    for folder in ("/usr/local/bin", "/usr/bin", "/bin"):
        if Path(folder, "nvcc").is_file():
            hide += f'mount --bind "$EMPTY/../not-nvcc" {folder}/nvcc && '
    return subprocess.run(["unshare", "--user", "--map-root-user", "--mount", "sh", "-c", f'{hide}exec "$@"', "sh",
                           *command], env={**env, "EMPTY": str(empty)}, capture_output=True, text=True, **kwargs)


@pytest.fixture(scope="module")
def namespace_works(tmp_path_factory):
    if not sys.platform.startswith("linux") or shutil.which("unshare") is None:
        pytest.skip("needs Linux's unshare")
    tmp = tmp_path_factory.mktemp("probe")
    env = _hidden_toolkit_env(tmp)
    probe = _in_namespace(["sh", "-c", "command -v nvcc || ls /usr/local/cuda/bin/nvcc || "
                                 "[ -x /usr/local/bin/nvcc ] || echo hidden"], env, tmp / "empty")
    if probe.returncode != 0:
        pytest.skip(f"unprivileged user namespaces are off here: {probe.stderr.strip()}")
    assert probe.stdout.strip() == "hidden", probe.stdout
    return True


def test_sdist_builds_cpu_kernels_without_a_toolkit(namespace_works, tmp_path):
    requires_sdist_builder()
    sdist_dir = tmp_path / "sdist"
    subprocess.run([sys.executable, "-m", "build", "--sdist", "--no-isolation", "--outdir", str(sdist_dir), str(ROOT)],
                   check=True, capture_output=True, text=True, env={**os.environ, "TMPDIR": str(tmp_path)})
    (sdist,) = sdist_dir.glob("my_ops-*.tar.gz")
    env = _hidden_toolkit_env(tmp_path)
    empty = tmp_path / "empty"
    wheels = tmp_path / "wheels"
    built = _in_namespace([sys.executable, "-m", "pip", "wheel", "-v", "--no-cache-dir", "--no-build-isolation",
                           "--no-deps", "--wheel-dir", str(wheels), str(sdist)], env, empty, timeout=1500)
    assert built.returncode == 0, built.stdout[-3000:] + built.stderr[-3000:]
    assert "building the CPU kernels only" in built.stdout + built.stderr
    (wheel,) = wheels.glob("my_ops-*.whl")
    with zipfile.ZipFile(wheel) as zf:
        info = json.loads(zf.read("my_ops/_build_info.json"))
        zf.extractall(tmp_path / "site")
    assert info["cuda_version"] in ("", None) and info["arch_list"] == ""
    # it loads into this (CUDA) torch and computes on the CPU
    check = ("import torch, my_ops\n"
             "assert not my_ops.build_info.has_cuda\n"
             "x = torch.randn(64, 256, dtype=torch.float64); w = torch.rand(256, dtype=torch.float64) + 0.5\n"
             "want = x * torch.rsqrt(x.pow(2).mean(-1, keepdim=True) + 1e-6) * w\n"
             "torch.testing.assert_close(my_ops.rms_norm(x, w, 1e-6), want, rtol=1e-12, atol=1e-12)\n"
             "print('ok')\n")
    run = subprocess.run([sys.executable, "-c", check], capture_output=True, text=True, cwd=tmp_path,
                         env={**os.environ, "PYTHONPATH": str(tmp_path / "site")})
    assert run.returncode == 0 and run.stdout.strip() == "ok", run.stdout + run.stderr
