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


# ------------------------------------------------- the GitHub Release's folder (--assets)
def _wheel(path: Path, metadata: bytes) -> None:
    import zipfile

    with zipfile.ZipFile(path, "w") as archive:
        archive.writestr("my_ops/__init__.py", os.urandom(32).hex())
        archive.writestr("my_ops-1.0.0.dist-info/METADATA", metadata)


def _assets(tmp_path: Path) -> tuple[Path, dict, str]:
    """release/dist as assemble-release.sh writes it: wheels, PEP 658 files, the sdist, SHA256SUMS."""
    folder = tmp_path / "dist"
    folder.mkdir()
    for name in (WHEEL, LABELLED):
        _wheel(folder / name, f"Metadata-Version: 2.4\nName: my_ops\nVersion: 1.0.0\nX: {name}\n".encode())
    (folder / (LABELLED + ".metadata")).write_bytes(
        f"Metadata-Version: 2.4\nName: my_ops\nVersion: 1.0.0\nX: {LABELLED}\n".encode())
    (folder / SDIST).write_bytes(os.urandom(64))
    digest = {p.name: hashlib.sha256(p.read_bytes()).hexdigest() for p in sorted(folder.iterdir())}
    (folder / "SHA256SUMS").write_text("".join(f"{h}  {n}\n" for n, h in sorted(digest.items())))
    manifest = {n: digest[n] for n in (WHEEL, LABELLED)}
    return folder, manifest, digest[SDIST]


def test_assets_that_match_the_seal_pass(tmp_path):
    folder, manifest, sdist = _assets(tmp_path)
    result = _run(folder, manifest, "--assets", sdist=sdist)
    assert result.returncode == 0, result.stdout


@pytest.mark.parametrize("change,message", [
    ("labelled-bytes", "bytes differ from the sealed sha256"),
    ("label-free-missing", "sealed wheel missing"),
    ("stranger", "not sealed by this run's bundle job"),
    ("sdist-bytes", "bytes differ from the assemble job's sha256"),
    ("metadata", "differs from the METADATA inside"),
    ("metadata-alone", "no wheel of that name beside it"),
    ("sums", "SHA256SUMS: does not list exactly the files' sha256"),
    ("two-sums", "expected one checksum file"),
    ("other-file", "not a release asset"),
])
def test_anything_the_seal_does_not_name_stops_the_release(tmp_path, change, message):
    folder, manifest, sdist = _assets(tmp_path)
    if change == "labelled-bytes":  # tampered after the seal, SHA256SUMS rewritten to match
        _wheel(folder / LABELLED, b"Metadata-Version: 2.4\nName: my_ops\n")
        digest = {p.name: hashlib.sha256(p.read_bytes()).hexdigest() for p in sorted(folder.iterdir())
                  if p.name.startswith("my_ops-")}
        (folder / "SHA256SUMS").write_text("".join(f"{h}  {n}\n" for n, h in sorted(digest.items())))
    elif change == "label-free-missing":
        (folder / WHEEL).unlink()
    elif change == "stranger":
        (folder / WHEEL.replace("x86_64", "aarch64")).write_bytes(b"x")
    elif change == "sdist-bytes":
        (folder / SDIST).write_bytes(b"tampered")
    elif change == "metadata":
        (folder / (LABELLED + ".metadata")).write_bytes(b"Metadata-Version: 2.4\nName: evil\n")
    elif change == "metadata-alone":
        (folder / (WHEEL.replace("x86_64", "aarch64") + ".metadata")).write_bytes(b"x")
    elif change == "sums":
        text = (folder / "SHA256SUMS").read_text()
        (folder / "SHA256SUMS").write_text(text.replace(manifest[WHEEL], "0" * 64))
    elif change == "two-sums":
        (folder / "SHA256SUMS-1.0.0").write_text("")
    elif change == "other-file":
        (folder / "install.sh").write_text("curl | sh")
    result = _run(folder, manifest, "--assets", sdist=sdist)
    assert result.returncode == 1 and message in result.stdout, result.stdout


def test_release_scripts_share_one_sha256(tmp_path):
    """The seal (bundle-wheels.py), its checks (check-upload.py, assemble-release.sh, published.py)
    and the index (make_index.py) hash with ci/release/file_sha256.py, read in blocks: a file over
    one block hashes as hashlib does over its bytes, and no script keeps a copy of its own."""
    sys.path.insert(0, str(ROOT / "ci" / "release"))
    from file_sha256 import sha256

    data = os.urandom((1 << 20) * 2 + 123)
    (tmp_path / "f").write_bytes(data)
    assert sha256(tmp_path / "f") == hashlib.sha256(data).hexdigest()
    scripts = ["ci/build/bundle-wheels.py", "ci/release/check-upload.py", "ci/release/make_index.py",
               "ci/release/published.py", "ci/release/assemble-release.sh"]
    for script in scripts:
        text = (ROOT / script).read_text()
        assert "from file_sha256 import sha256" in text and "def sha256" not in text, script
