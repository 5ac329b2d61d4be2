"""The source build (the sdist, as the import errors tell users to build it)
works against the oldest and the newest torch the stable ABI serves, and a
CUDA toolkit of another major version than torch's stops it at configure time.

The builds run scripts/source_build_check.sh, one venv per torch (PyPI's
torch with its CUDA libraries: about 3 GB each): the script's own in
.venv-source/ where they are (run the script once to keep them for later
runs), else a throwaway one per torch, deleted after the last test that
needs it, so a fresh machine never holds both torches at once. Marked
`source_build` (about two CPU builds), so `-m "not source_build"` leaves them out.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from conftest import requires_sdist_builder

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "build_support"))
import matrix  # noqa: E402

_MATRIX = matrix.load()
OLDEST = _MATRIX["defaults"]["stable_abi_min"]
NEWEST = max(_MATRIX["torch"], key=lambda minor: tuple(int(p) for p in minor.split(".")))
linux_only = pytest.mark.skipif(not sys.platform.startswith("linux"), reason="the script is bash on Linux")


def _cmake() -> str:
    found = shutil.which("cmake", path=str(Path(sys.executable).parent)) or shutil.which("cmake")
    if not found:
        pytest.skip("needs cmake")
    return found


@pytest.mark.parametrize("nvcc, torch_cuda, stops", [
    ("13.0.88", "12.8", True),    # /usr/local/cuda beside PyPI's torch 2.10
    ("12.4.131", "13.0", True),
    ("13.0.88", "13.2", False),   # PyPI's torch 2.15 with an older CUDA 13 toolkit
    ("12.4.131", "12.8", False),
])
def test_a_cuda_major_mismatch_stops_the_build(tmp_path, nvcc, torch_cuda, stops):
    script = tmp_path / "check.cmake"
    script.write_text(f'include("{(ROOT / "build_support" / "MyOpsCuda.cmake").as_posix()}")\n'
                      f'set(CMAKE_CUDA_COMPILER_VERSION "{nvcc}")\n'
                      f'my_ops_check_cuda_matches_torch("{torch_cuda}" "stable")\n'
                      'message(STATUS "configured")\n')
    result = subprocess.run([_cmake(), "-P", str(script)], capture_output=True, text=True)
    if stops:
        assert result.returncode != 0, result.stdout + result.stderr
        assert f"nvcc is CUDA {nvcc} but torch was built with CUDA {torch_cuda}" in result.stderr
        assert "MY_OPS_CUDA=OFF" in result.stderr
    else:
        assert result.returncode == 0 and "configured" in result.stdout, result.stdout + result.stderr


@pytest.fixture(scope="module")
def sdist(tmp_path_factory) -> Path:
    requires_sdist_builder()
    out = tmp_path_factory.mktemp("sdist")
    subprocess.run([sys.executable, "-m", "build", "--sdist", "--no-isolation", "--outdir", str(out), str(ROOT)],
                   check=True, capture_output=True, text=True)
    (found,) = out.glob("my_ops-*.tar.gz")
    return found


@pytest.fixture(scope="module")
def throwaway_venvs(tmp_path_factory) -> Path:
    return tmp_path_factory.mktemp("source-venvs")


def _venvs(version: str, throwaway: Path) -> dict[str, str]:
    """The script's environment for torch `version`: its kept venv where there is one, else a throwaway one."""
    if (ROOT / ".venv-source" / version / "bin" / "python").is_file():
        return {}
    return {"MY_OPS_SOURCE_VENVS": str(throwaway)}


def _check(out: Path, venvs: dict[str, str], *args: str) -> subprocess.CompletedProcess:
    """The script, its wheels and logs in `out`."""
    return subprocess.run(["bash", str(ROOT / "scripts/source_build_check.sh"), *args], capture_output=True,
                          text=True, cwd=ROOT, timeout=3000,
                          env={**os.environ, "MY_OPS_SOURCE_BUILD_OUT": str(out), **venvs})


@linux_only
@pytest.mark.source_build
def test_the_sdist_stops_on_a_toolkit_of_another_cuda_major(sdist, throwaway_venvs, tmp_path):
    """PyPI's torch 2.10 is a CUDA 12.8 build: a CUDA 13 nvcc stops at configure time, with the way out.
    (Before the builds: its torch's venv is the oldest build's, which deletes it.)"""
    nvcc = Path("/usr/local/cuda/bin/nvcc")
    if not nvcc.is_file() or "release 13." not in subprocess.run([str(nvcc), "--version"], capture_output=True,
                                                                 text=True).stdout:
        pytest.skip("needs the CUDA 13 toolkit in /usr/local/cuda")
    result = _check(tmp_path, _venvs(f"{OLDEST}.0", throwaway_venvs), "--sdist", str(sdist), "--cuda",
                    "/usr/local/cuda", f"{OLDEST}.0")
    log = (tmp_path / f"{OLDEST}.0-cuda.log").read_text()
    assert result.returncode == 1 and "FAILED" in result.stdout, result.stdout
    words = " ".join(log.split())  # (CMake wraps its message)
    assert "but torch was built with CUDA 12.8: the major versions must match" in words, log[-4000:]
    assert "Configuring incomplete" in words and "Created wheel" not in words


@linux_only
@pytest.mark.source_build
@pytest.mark.parametrize("torch_minor", sorted({OLDEST, NEWEST}))
def test_the_sdist_builds_against_each_claimed_torch(sdist, torch_minor, throwaway_venvs, tmp_path):
    version = f"{torch_minor}.0"
    try:
        result = _check(tmp_path, _venvs(version, throwaway_venvs), "--sdist", str(sdist), version)
    finally:
        shutil.rmtree(throwaway_venvs / version, ignore_errors=True)  # (the last test of this torch)
    log = tmp_path / f"{version}-cpu.log"
    assert result.returncode == 0, result.stdout + result.stderr + (log.read_text()[-4000:] if log.exists() else "")
    assert f"{version}-cpu: ok: my_ops " in result.stdout and f"running with torch {version}" in result.stdout
