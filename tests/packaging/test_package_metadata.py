"""What every built file says about the package: the repository's LICENSE
(BSD-3-Clause) in the sdist and in every wheel (checked by
ci/build/verify-wheel.py), named by License-File; the Project-URLs (where to
report a bug); and a Requires-Python no older than the served torches need."""

from __future__ import annotations

import importlib.util
import subprocess
import sys
import tarfile
import zipfile
from pathlib import Path

import pytest

import my_ops
from conftest import built_wheel, requires_sdist_builder

ROOT = Path(__file__).resolve().parents[2]
_spec = importlib.util.spec_from_file_location("verify_wheel", ROOT / "ci/build/verify-wheel.py")
verify_wheel = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(verify_wheel)


def test_the_repository_has_the_bsd_3_clause_license():
    text = (ROOT / "LICENSE").read_text()
    assert text.startswith("BSD 3-Clause License\n") and "Copyright (c) 2026, The my_ops authors" in text
    assert "Neither the name of the copyright holder nor the names of its" in text
    assert "BSD-3-Clause" in (ROOT / "README.md").read_text()


def test_requires_python_is_the_oldest_python_the_served_torches_support():
    """Python 3.9 must not resolve a stable wheel: pip would pair it with torch 2.8, which it cannot load into."""
    sys.path.insert(0, str(ROOT / "build_support"))
    import matrix

    data = matrix.load()
    assert matrix.requires_python("2.11.0+cu130", data) == ">=3.10"  # a stable build: torch 2.10 needs 3.10
    assert matrix.requires_python("2.15.0", data) == ">=3.10"
    assert matrix.requires_python("2.6.0+cu124", data) == ">=3.9"  # the legacy wheel serves torch 2.6 only
    stable = [m for m in data["torch"] if matrix.abi_of(m, data) == "stable"]
    assert min(data["torch"][m]["python"][0] for m in stable) == "3.10"


def _copy(wheel: Path, target: Path, drop: str = "", metadata_edit=None) -> Path:
    with zipfile.ZipFile(wheel) as src, zipfile.ZipFile(target, "w") as dst:
        for item in src.infolist():
            if drop and item.filename.endswith(drop):
                continue
            data = src.read(item)
            if metadata_edit and item.filename.endswith(".dist-info/METADATA"):
                data = metadata_edit(data.decode()).encode()
            dst.writestr(item, data)
    return target


def _license_failures(wheel: Path) -> list[str]:
    with zipfile.ZipFile(wheel) as zf:
        names = zf.namelist()
        dist_info = next(n.split("/")[0] for n in names if n.endswith(".dist-info/METADATA"))
        metadata = zf.read(f"{dist_info}/METADATA").decode()
    v = verify_wheel.Verification()
    verify_wheel.check_license(v, wheel, metadata, dist_info)
    return v.failures


def test_the_built_wheel_ships_the_license_and_urls():
    wheel = built_wheel()
    assert _license_failures(wheel) == []
    with zipfile.ZipFile(wheel) as zf:
        metadata = next(zf.read(n) for n in zf.namelist() if n.endswith(".dist-info/METADATA")).decode()
    assert "Project-URL: Issues, https://github.com/my-ops/my_ops/issues" in metadata
    assert "Requires-Python: >=3.10" in metadata if my_ops.build_info.abi == "stable" else True


def test_verification_fails_a_wheel_without_license_or_urls(tmp_path):
    wheel = built_wheel()
    failures = _license_failures(_copy(wheel, tmp_path / wheel.name, drop="/licenses/LICENSE"))
    assert any(f.startswith("license: no my_ops-") and f.endswith("/licenses/LICENSE in the wheel") for f in failures)
    (tmp_path / "urls").mkdir()
    failures = _license_failures(_copy(wheel, tmp_path / "urls" / wheel.name, metadata_edit=lambda m: "\n".join(
        line for line in m.split("\n") if not line.startswith("Project-URL: Issues"))))
    assert failures == ["license: no Project-URL for ['Issues']"]


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="a Linux-runner step")
def test_verify_wheel_checks_the_license(tmp_path):
    """The whole verification, on a +cpu wheel (no cuobjdump needed) stripped of its LICENSE."""
    wheel = built_wheel()
    if my_ops.build_info.has_cuda:
        pytest.skip("runs verify-wheel.py on the +cpu wheel (the CUDA one needs cuobjdump: test_verify_wheel.py)")
    pytest.importorskip("packaging")
    broken = _copy(wheel, tmp_path / wheel.name, drop="/licenses/LICENSE")
    for candidate, ok in [(wheel, True), (broken, False)]:
        result = subprocess.run([sys.executable, str(ROOT / "ci/build/verify-wheel.py"), str(candidate), "--build",
                                 "cpu", "--skip-tools"], capture_output=True, text=True)
        assert (result.returncode == 0) is ok, result.stdout + result.stderr
    assert "/licenses/LICENSE in the wheel" in result.stdout


def test_the_sdist_ships_the_license(tmp_path):
    requires_sdist_builder()
    subprocess.run([sys.executable, "-m", "build", "--sdist", "--no-isolation", "--outdir", str(tmp_path), str(ROOT)],
                   check=True, capture_output=True, text=True)
    (sdist,) = tmp_path.glob("my_ops-*.tar.gz")
    with tarfile.open(sdist) as tar:
        top = tar.getnames()[0].split("/")[0]
        assert tar.extractfile(f"{top}/LICENSE").read() == (ROOT / "LICENSE").read_bytes()
        info = tar.extractfile(f"{top}/PKG-INFO").read().decode()
    assert "License-Expression: BSD-3-Clause" in info and "License-File: LICENSE" in info
    assert "Project-URL: Issues, https://github.com/my-ops/my_ops/issues" in info
