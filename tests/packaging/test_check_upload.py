"""ci/release/check-upload.py: PyPI gets exactly the sealed label-free wheels and the assembled sdist."""

from __future__ import annotations

import hashlib
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
WHEEL = "my_ops-1.0.0-cp39-abi3-manylinux_2_28_x86_64.whl"
LABELLED = "my_ops-1.0.0+cu130-cp39-abi3-manylinux_2_28_x86_64.whl"
SDIST = "my_ops-1.0.0.tar.gz"


def _folder(tmp_path: Path) -> tuple[Path, dict]:
    folder = tmp_path / "pypi"
    folder.mkdir()
    (folder / WHEEL).write_bytes(os.urandom(64))
    (folder / SDIST).write_bytes(os.urandom(64))
    manifest = {WHEEL: hashlib.sha256((folder / WHEEL).read_bytes()).hexdigest(), LABELLED: "0" * 64}
    return folder, manifest


def _run(folder: Path, manifest: dict, *args: str, sdist: str | None = None, output: Path | None = None):
    env = {**os.environ, "MANIFEST": json.dumps(manifest)}
    if sdist is not None:
        env["SDIST_SHA256"] = sdist
    if output is not None:
        env["GITHUB_OUTPUT"] = str(output)
    return subprocess.run([sys.executable, str(ROOT / "ci/release/check-upload.py"), "--dir", str(folder), *args],
                          env=env, capture_output=True, text=True)


def test_record_then_check(tmp_path):
    folder, manifest = _folder(tmp_path)
    output = tmp_path / "github_output"
    recorded = _run(folder, manifest, "--record", output=output)
    assert recorded.returncode == 0, recorded.stdout
    sdist = dict(line.split("=", 1) for line in output.read_text().splitlines())["sdist-sha256"]
    assert sdist == hashlib.sha256((folder / SDIST).read_bytes()).hexdigest()
    assert _run(folder, manifest, sdist=sdist).returncode == 0


@pytest.mark.parametrize("change,message", [
    ("wheel-bytes", "bytes differ from the sealed sha256"),
    ("sdist-bytes", "bytes differ from the assemble job's sha256"),
    ("stranger", "not sealed by this run's bundle job"),
    ("labelled", "a local version label"),
    ("missing", "sealed label-free wheel missing"),
    ("other-file", "neither a wheel nor the sdist"),
    ("no-sdist-output", "bytes differ from the assemble job's sha256 (none)"),
])
def test_anything_but_the_sealed_files_stops_the_upload(tmp_path, change, message):
    folder, manifest = _folder(tmp_path)
    sdist = hashlib.sha256((folder / SDIST).read_bytes()).hexdigest()
    if change == "wheel-bytes":
        (folder / WHEEL).write_bytes(b"tampered")
    elif change == "sdist-bytes":
        (folder / SDIST).write_bytes(b"tampered")
    elif change == "stranger":
        (folder / WHEEL.replace("x86_64", "aarch64")).write_bytes(b"x")
    elif change == "labelled":
        (folder / LABELLED).write_bytes(b"x")
    elif change == "missing":
        (folder / WHEEL).unlink()
    elif change == "other-file":
        (folder / "notes.txt").write_text("x")
    elif change == "no-sdist-output":
        sdist = ""
    result = _run(folder, manifest, sdist=sdist)
    assert result.returncode == 1 and message in result.stdout, result.stdout
