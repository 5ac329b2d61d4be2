"""ci/verify-wheel.py on the wheel this test run installed, and on broken copies of it."""

from __future__ import annotations

import importlib.util
import json
import os
import shutil
import subprocess
import sys
import zipfile
from pathlib import Path

import pytest

import my_ops
from conftest import built_wheel

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "scripts"))
import matrix  # noqa: E402

# The verification tools (ci/requirements-verify.txt) are in the development
# environment; a plain user environment (ci/test-wheel.sh) has none of them.
for _tool in ("abi3audit", "check_wheel_contents", "twine", "packaging"):
    pytest.importorskip(_tool, reason="needs the tools of ci/requirements-verify.txt")
_spec = importlib.util.spec_from_file_location("verify_wheel", ROOT / "ci/verify-wheel.py")
verify_wheel = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(verify_wheel)
if verify_wheel.find_cuobjdump() is None:
    pytest.skip("needs cuobjdump (nvidia-cuda-cuobjdump)", allow_module_level=True)


def _built_wheel() -> Path:
    if not my_ops.build_info.has_cuda:
        pytest.skip("needs a CUDA build of my_ops")
    return built_wheel()


def _pair_of(wheel: Path) -> str:
    info = my_ops.build_info
    return f"{info.torch_minor}-{info.cuda_label}"


def _verify(wheel: Path, *extra: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, str(ROOT / "ci/verify-wheel.py"), str(wheel), "--pair",
                           _pair_of(wheel), *extra], capture_output=True, text=True)


def test_built_wheel_passes(tmp_path):
    wheel = _built_wheel()
    pair = matrix.find_pair(_pair_of(wheel))
    if my_ops.build_info.arch_list != pair.arch_list:
        pytest.skip(f"dist/ holds a wheel built for TORCH_CUDA_ARCH_LIST={my_ops.build_info.arch_list}")
    report = tmp_path / "report.json"
    result = _verify(wheel, "--report", str(report))
    assert result.returncode == 0, result.stdout
    data = json.loads(report.read_text())
    assert data["ok"] and data["bundled_libraries"] == []
    assert data["tools"] == {"abi3audit": "ok", "check-wheel-contents": "ok", "twine check": "ok"}
    assert data["requires_torch"] == [f"torch<{pair.torch.split('.')[0]}.{int(pair.torch.split('.')[1]) + 1},>={pair.torch}"]


def _broken_copy(wheel: Path, tmp_path: Path, add: dict[str, bytes] | None = None,
                 build_info: dict | None = None, name: str | None = None) -> Path:
    target = tmp_path / (name or wheel.name)
    with zipfile.ZipFile(wheel) as src, zipfile.ZipFile(target, "w") as dst:
        for item in src.infolist():
            data = src.read(item)
            if build_info and item.filename == "my_ops/_build_info.json":
                data = json.dumps({**json.loads(data), **build_info}).encode()
            dst.writestr(item, data)
        for path, data in (add or {}).items():
            dst.writestr(path, data)
    return target


def test_bundled_cuda_runtime_fails(tmp_path):
    wheel = _broken_copy(_built_wheel(), tmp_path, add={"my_ops.libs/libcudart-1a2b.so.13": b"\x7fELF"})
    result = _verify(wheel, "--skip-tools")
    assert result.returncode == 1
    assert "bundled: libraries grafted into the wheel: ['my_ops.libs/libcudart-1a2b.so.13']" in result.stdout


def test_missing_sm_fails(tmp_path):
    wheel = _built_wheel()
    pair = matrix.find_pair(_pair_of(wheel))
    result = subprocess.run([sys.executable, str(ROOT / "ci/verify-wheel.py"), str(wheel), "--pair",
                             pair.name, "--skip-tools"], capture_output=True, text=True,
                            env={**os.environ, "CUOBJDUMP": str(_fake_cuobjdump(tmp_path))})
    assert result.returncode == 1
    assert "sass: SASS for ['sm_80'], expected" in result.stdout
    assert "sass: PTX for [], expected" in result.stdout


def _fake_cuobjdump(tmp_path: Path) -> Path:
    """A cuobjdump that reports a library built for sm_80 only."""
    script = tmp_path / "cuobjdump"
    script.write_text("#!/bin/sh\necho 'ELF file    1: _C.1.sm_80.cubin'\n")
    script.chmod(0o755)
    return script


def test_wrong_arch_list_in_build_info_fails(tmp_path):
    wheel = _broken_copy(_built_wheel(), tmp_path, build_info={"arch_list": "8.0;9.0"})
    result = _verify(wheel, "--skip-tools")
    assert result.returncode == 1
    assert "buildinfo: arch list 8.0;9.0, expected" in result.stdout


def test_wrong_name_fails(tmp_path):
    wheel = _built_wheel()
    renamed = tmp_path / wheel.name.replace("cp39-abi3", "cp311-cp311")
    shutil.copy(wheel, renamed)
    result = _verify(renamed, "--skip-tools")
    assert result.returncode == 1
    assert "expected cp39-abi3" in result.stdout
