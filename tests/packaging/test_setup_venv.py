"""ci/lib/setup-venv.sh and ci/test/test-wheel.sh under an externally managed
Python (PEP 668: Ubuntu 24.04's and Debian's python3, a self-hosted GPU
runner's), where any `pip install` with that Python fails, even one whose
marker excludes it. Debian's own /usr/bin/python3 is such a Python."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
pytestmark = pytest.mark.skipif(not sys.platform.startswith("linux"), reason="a Linux-runner step")
SYSTEM_PYTHON = "/usr/bin/python3"


@pytest.fixture(scope="module")
def managed_python() -> str:
    if not Path(SYSTEM_PYTHON).is_file():
        pytest.skip(f"no {SYSTEM_PYTHON}")
    probe = subprocess.run([SYSTEM_PYTHON, "-c", "import sysconfig, os, venv, ensurepip; print(os.path.isfile("
                            "os.path.join(sysconfig.get_path('stdlib'), 'EXTERNALLY-MANAGED')))"],
                           capture_output=True, text=True)
    if probe.returncode != 0 or probe.stdout.strip() != "True":
        pytest.skip(f"{SYSTEM_PYTHON} is not an externally managed Python with venv ({probe.stderr.strip()})")
    return SYSTEM_PYTHON


def _offline_env(tmp_path: Path) -> dict[str, str]:
    """No index: the scripts get as far as installing torch, which then cannot be found."""
    empty = tmp_path / "no-wheels"
    empty.mkdir(exist_ok=True)
    env = {k: v for k, v in os.environ.items() if not k.startswith("PIP_") and k != "VIRTUAL_ENV"}
    return {**env, "PIP_NO_INDEX": "1", "PIP_FIND_LINKS": str(empty), "PIP_DISABLE_PIP_VERSION_CHECK": "1"}


def test_the_managed_python_refuses_pip(managed_python, tmp_path):
    """The premise: this Python refuses any install, marker or not."""
    result = subprocess.run([managed_python, "-m", "pip", "install", "tomli>=2; python_version < '3.11'"],
                            capture_output=True, text=True, env=_offline_env(tmp_path))
    assert result.returncode != 0 and "externally-managed-environment" in result.stdout + result.stderr


def test_setup_venv_works_with_an_externally_managed_python(managed_python, tmp_path):
    venv = tmp_path / "venv"
    result = subprocess.run(["bash", "ci/lib/setup-venv.sh", "--pair", "default", "--venv", str(venv),
                             "--python", managed_python], cwd=ROOT, capture_output=True, text=True,
                            env=_offline_env(tmp_path), timeout=600)
    out = result.stdout + result.stderr
    assert "externally-managed-environment" not in out, out
    # it created the venv from that Python, read the matrix with it, and went on to torch
    assert (venv / "pyvenv.cfg").is_file() and f"home = {Path(managed_python).parent}" in (
        venv / "pyvenv.cfg").read_text()
    assert "== installing torch==" in out, out
    assert result.returncode != 0 and "No matching distribution found for torch==" in out, out


def test_test_wheel_works_with_an_externally_managed_python(managed_python, tmp_path):
    wheel = tmp_path / "my_ops-1.0.0-cp39-abi3-linux_x86_64.whl"
    wheel.write_bytes(b"")  # never reached: torch cannot be installed offline
    result = subprocess.run(["bash", "ci/test/test-wheel.sh", str(wheel), "--pair", "default", "--python",
                             managed_python], cwd=ROOT, capture_output=True, text=True,
                            env=_offline_env(tmp_path), timeout=600)
    out = result.stdout + result.stderr
    assert "externally-managed-environment" not in out, out
    assert "== fresh venv" in out and "No matching distribution found for torch==" in out, out
