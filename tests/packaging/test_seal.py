"""The seal holds across attempts of a run: ci/build/bundle-wheels.py takes a
wheel only from the artifact of the build that makes it, and a release seals
only once every build is there; the workflows seal before any test job and
give no test job an upload step (artifact names belong to the whole run, all
its attempts, and any job holding the run's token can replace one)."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
import zipfile
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
pytestmark = pytest.mark.skipif(not sys.platform.startswith("linux"), reason="a Linux-runner step")
VERSION = (ROOT / "VERSION").read_text().strip()
CU130 = f"my_ops-{VERSION}+cu130-cp39-abi3-manylinux_2_28_x86_64.whl"


def _wheel(path: Path, label: str = "cu130", extra: str = "") -> Path:
    version = f"{VERSION}+{label}"
    path.parent.mkdir(parents=True, exist_ok=True)
    with zipfile.ZipFile(path, "w") as zf:
        zf.writestr("my_ops/__init__.py", extra)
        zf.writestr("my_ops/_build_info.json", json.dumps({"version": version, "label": label}))
        zf.writestr(f"my_ops-{version}.dist-info/METADATA",
                    f"Metadata-Version: 2.1\nName: my_ops\nVersion: {version}\n")
        zf.writestr(f"my_ops-{version}.dist-info/WHEEL", "Wheel-Version: 1.0\n")
        zf.writestr(f"my_ops-{version}.dist-info/RECORD", "")
    return path


def _bundle(built: Path, out: Path, *args: str, env: dict | None = None) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "ci/build/bundle-wheels.py", "--event", "pull_request", "--wheels",
                           str(built), "--out", str(out), *args], cwd=ROOT, capture_output=True, text=True,
                          env={**os.environ, "GITHUB_OUTPUT": os.devnull, **(env or {})})


def test_a_copy_under_another_artifact_name_is_refused(tmp_path):
    """A job that uploads a wheel of a valid name under its own artifact (or
    beside the real one) cannot get its bytes sealed on a later attempt."""
    built = tmp_path / "built"
    _wheel(built / "wheel-cu130-linux" / CU130)
    assert _bundle(built, tmp_path / "out").returncode == 0
    _wheel(built / "wheel-zz-late" / CU130, extra="tampered = True\n")
    result = _bundle(built, tmp_path / "out2")
    assert result.returncode == 1, result.stdout
    assert "outside the artifact of the build that makes them" in result.stdout and "wheel-zz-late" in result.stdout


def test_a_release_seals_only_every_build(tmp_path):
    built = tmp_path / "built"
    _wheel(built / "wheel-cu130-linux" / CU130)
    result = _bundle(built, tmp_path / "out", "--require-all")
    assert result.returncode == 1 and "::error::missing (its build failed)" in result.stdout, result.stdout
    # what release.yml passes through wheels.yml's input
    result = _bundle(built, tmp_path / "out2", env={"REQUIRE_ALL_BUILDS": "true"})
    assert result.returncode == 1, result.stdout
    result = _bundle(built, tmp_path / "out3", env={"REQUIRE_ALL_BUILDS": "false"})
    assert result.returncode == 0 and "missing (its build failed)" in result.stdout, result.stdout + result.stderr


# ------------------------------------------------------------ the workflows
def _jobs(workflow: str) -> dict[str, str]:
    """Job id -> its text (the workflow files keep one job per two-space-indented key)."""
    text = (ROOT / ".github/workflows" / workflow).read_text().split("\njobs:\n", 1)[1]
    parts = re.split(r"^  ([\w-]+):\n", text, flags=re.M)
    return dict(zip(parts[1::2], parts[2::2]))


def test_no_test_job_starts_before_the_seal_or_uploads():
    jobs = _jobs("wheels.yml")
    for name in ("test-cpu", "test-gpu"):
        condition = re.search(r"^    if: (.*?)\n    \w", jobs[name], re.S | re.M)[1]
        assert "needs.bundle.result == 'success'" in condition, (name, condition)
        assert "upload-artifact" not in jobs[name], name
    uploaders = {name for name, body in _jobs("wheels.yml").items() if "upload-artifact" in body}
    assert uploaders == {"build-linux", "build-windows", "build-macos", "bundle"}, uploaders


def test_a_release_seals_once_every_build_succeeded():
    bundle = _jobs("wheels.yml")["bundle"]
    condition = re.search(r"^    if: (.*?)\n    \w", bundle, re.S | re.M)[1]
    assert "inputs.release" in condition and "contains(needs.*.result, 'failure')" in condition, condition
    assert "REQUIRE_ALL_BUILDS: ${{ inputs.release }}" in bundle
    caller = _jobs("release.yml")["wheels"]
    assert re.search(r"^      release: true\b", caller, re.M), caller
