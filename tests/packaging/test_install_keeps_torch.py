"""Installing my_ops never replaces an installed torch (pip's resolver, for real).

A scratch environment holds a stand-in torch 2.6; a local index offers torch
2.15 and a my_ops wheel whose torch requirement is the one the build's
metadata provider gives. pip must plan to install my_ops alone. With the
old `torch>=2.10` requirement it planned torch 2.15 (and, with PyPI's torch,
about 3 GB of CUDA packages).
"""

from __future__ import annotations

import json
import subprocess
import sys
import venv
import zipfile
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "build_support"))
import matrix  # noqa: E402
import metadata_provider  # noqa: E402


def _wheel(folder: Path, name: str, version: str, requires: list[str]) -> Path:
    dist = f"{name}-{version}"
    path = folder / f"{dist}-py3-none-any.whl"
    meta = "".join(f"Requires-Dist: {r}\n" for r in requires)
    with zipfile.ZipFile(path, "w") as zf:
        zf.writestr(f"{name}/__init__.py", "")
        zf.writestr(f"{dist}.dist-info/METADATA", f"Metadata-Version: 2.1\nName: {name}\nVersion: {version}\n{meta}")
        zf.writestr(f"{dist}.dist-info/WHEEL",
                    "Wheel-Version: 1.0\nGenerator: test\nRoot-Is-Purelib: true\nTag: py3-none-any\n")
        zf.writestr(f"{dist}.dist-info/RECORD", "")
    return path


def _plan(tmp_path: Path, installed_torch: str | None, requires: list[str]) -> list[str]:
    index = tmp_path / "index"
    index.mkdir()
    _wheel(index, "torch", "2.15.0", [])
    _wheel(index, "my_ops", "1.0.0", requires)
    env = tmp_path / "env"
    venv.create(env, with_pip=False)
    # the environment itself: pip finds bin/python or Scripts\python.exe in it
    pip = [sys.executable, "-m", "pip", "--python", str(env), "--disable-pip-version-check"]
    if installed_torch:
        old = tmp_path / "old"
        old.mkdir()
        subprocess.run([*pip, "install", "--quiet", "--no-index", str(_wheel(old, "torch", installed_torch, []))],
                       check=True)
    report = tmp_path / "report.json"
    subprocess.run([*pip, "install", "--dry-run", "--quiet", "--no-index", "--find-links", str(index),
                    "--report", str(report), "my_ops"], check=True)
    return sorted(i["metadata"]["name"] for i in json.loads(report.read_text())["install"])


def test_stable_wheels_require_plain_torch_and_legacy_wheels_pin_their_minor():
    assert matrix.wheel_dependency("2.11.0") == "torch"
    assert matrix.wheel_dependency("2.15.0") == "torch"
    assert matrix.wheel_dependency("2.6.0") == "torch>=2.6,<2.7"


@pytest.mark.parametrize("installed", ["2.6.0", "2.11.0"])
def test_pip_keeps_an_installed_torch(tmp_path, installed):
    requires = metadata_provider.dynamic_metadata({}, {})["dependencies"]
    assert _plan(tmp_path, installed, requires) == ["my_ops"]


def test_a_fresh_environment_still_gets_torch(tmp_path):
    requires = metadata_provider.dynamic_metadata({}, {})["dependencies"]
    assert _plan(tmp_path, None, requires) == ["my_ops", "torch"]


def test_the_old_requirement_would_have_replaced_torch(tmp_path):
    """The check is real: a lower bound makes pip replace an older torch."""
    assert _plan(tmp_path, "2.6.0", ["torch>=2.10"]) == ["my_ops", "torch"]
