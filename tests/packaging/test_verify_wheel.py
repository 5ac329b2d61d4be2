"""ci/build/verify-wheel.py on the wheel this test run installed, and on broken copies of it."""

from __future__ import annotations

import importlib.util
import json
import os
import re
import shutil
import subprocess
import sys
import zipfile
from pathlib import Path

import pytest

import my_ops
from conftest import built_wheel

ROOT = Path(__file__).resolve().parents[2]
# Release and verification steps run on the workflows' Linux runners (bash, nm,
# readelf, sha256sum, symlinks); the Windows and macOS test jobs skip them.
pytestmark = pytest.mark.skipif(not sys.platform.startswith("linux"), reason="a Linux-runner step")
sys.path.insert(0, str(ROOT / "build_support"))
import matrix  # noqa: E402

# The verification tools (ci/build/requirements-verify.txt) are in the development
# environment; a plain user environment (ci/test/test-wheel.sh) has none of them.
for _tool in ("abi3audit", "check_wheel_contents", "twine", "packaging"):
    pytest.importorskip(_tool, reason="needs the tools of ci/build/requirements-verify.txt")
_spec = importlib.util.spec_from_file_location("verify_wheel", ROOT / "ci/build/verify-wheel.py")
verify_wheel = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(verify_wheel)
if verify_wheel.find_cuobjdump() is None:
    pytest.skip("needs cuobjdump (nvidia-cuda-cuobjdump)", allow_module_level=True)


def _built_wheel() -> Path:
    if not my_ops.build_info.has_cuda:
        pytest.skip("needs a CUDA build of my_ops")
    return built_wheel()


def _build_of(wheel: Path) -> matrix.Build:
    info = my_ops.build_info
    return matrix.find_build(f"{info.torch_minor}-{info.cuda_label}")  # the build serving this pair


def _verify(wheel: Path, *extra: str, env: dict | None = None) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, str(ROOT / "ci/build/verify-wheel.py"), str(wheel), "--build",
                           _build_of(wheel).name, *extra], capture_output=True, text=True, env=env)


def test_built_wheel_passes(tmp_path):
    wheel = _built_wheel()
    build = _build_of(wheel)
    if my_ops.build_info.arch_list != build.arch_list:
        pytest.skip(f"dist/ holds a wheel built for TORCH_CUDA_ARCH_LIST={my_ops.build_info.arch_list}")
    report = tmp_path / "report.json"
    result = _verify(wheel, "--report", str(report))
    assert result.returncode == 0, result.stdout
    data = json.loads(report.read_text())
    assert data["ok"] and data["bundled_libraries"] == []
    assert data["tools"] == {"abi3audit": "ok", "check-wheel-contents": "ok", "twine check": "ok"}
    assert data["abi"] == my_ops.build_info.abi == build.abi
    if build.abi == "stable" and importlib.util.find_spec("torch_abi_audit"):
        # the second opinion read both shared objects: stable ABI only, nothing newer than the oldest torch
        audit = data["torch_abi_audit"]
        assert sorted(audit) == sorted(["libmy_ops.so", next(n for n in audit if n.startswith("_C"))])
        assert audit["libmy_ops.so"]["uses_torch"] and audit["libmy_ops.so"]["stable"]
        oldest = tuple(map(int, matrix.load()["defaults"]["stable_abi_min"].split(".")))
        assert tuple(map(int, audit["libmy_ops.so"]["min_torch_version"].split(".")[:2])) <= oldest
        assert all(a["stable"] or not a["uses_torch"] for a in audit.values())
    if build.abi == "stable":
        assert data["requires_torch"] == ["torch"]  # a stable wheel never replaces an installed torch
        # the stable wheel's shared objects import no torch C++ symbol
        assert set(data["torch_cxx_imports"].values()) == {0} and len(data["torch_cxx_imports"]) == 2


def _broken_copy(wheel: Path, tmp_path: Path, add: dict[str, bytes] | None = None,
                 build_info: dict | None = None, name: str | None = None,
                 replace: dict[str, bytes] | None = None, drop: tuple[str, ...] = ()) -> Path:
    target = tmp_path / (name or wheel.name)
    with zipfile.ZipFile(wheel) as src, zipfile.ZipFile(target, "w") as dst:
        for item in src.infolist():
            if item.filename in drop:
                continue
            data = src.read(item)
            if build_info and item.filename == "my_ops/_build_info.json":
                data = json.dumps({**json.loads(data), **build_info}).encode()
            data = (replace or {}).get(item.filename, data)
            dst.writestr(item, data)
        for path, data in (add or {}).items():
            dst.writestr(path, data)
    return target


def test_bundled_cuda_runtime_fails(tmp_path):
    wheel = _broken_copy(_built_wheel(), tmp_path, add={"my_ops.libs/libcudart-1a2b.so.13": b"\x7fELF"})
    result = _verify(wheel, "--skip-tools")
    assert result.returncode == 1
    assert "bundled: libraries grafted into the wheel: ['my_ops.libs/libcudart-1a2b.so.13']" in result.stdout


@pytest.mark.parametrize("missing", ["my_ops-config.cmake", "my_ops-config-version.cmake"])
def test_wheel_without_the_cmake_package_fails(tmp_path, missing):
    """find_package(my_ops) reads both files beside the kernel library."""
    wheel = _built_wheel()
    with zipfile.ZipFile(wheel) as zf:
        assert f"my_ops/{missing}" in zf.namelist()  # (the built wheel has it: the copy lacks only that)
    broken = _broken_copy(wheel, tmp_path, drop=(f"my_ops/{missing}",))
    result = _verify(broken, "--skip-tools")
    assert result.returncode == 1
    assert f"cmake: ['my_ops/{missing}'] missing: find_package(my_ops) reads them" in result.stdout, result.stdout


def test_missing_sm_fails(tmp_path):
    wheel = _built_wheel()
    result = _verify(wheel, "--skip-tools", env={**os.environ, "CUOBJDUMP": str(_fake_cuobjdump(tmp_path))})
    assert result.returncode == 1
    assert "sass: SASS for ['sm_80'], expected" in result.stdout
    assert "sass: PTX for [], expected" in result.stdout


def _fake_cuobjdump(tmp_path: Path) -> Path:
    """A cuobjdump that reports a library built for sm_80 only."""
    script = tmp_path / "cuobjdump"
    script.write_text("#!/bin/sh\necho 'ELF file    1: _C.1.sm_80.cubin'\n")
    script.chmod(0o755)
    return script


def _verify_with_library(tmp_path, c_source: str) -> subprocess.CompletedProcess:
    """Verify the built wheel with its libmy_ops replaced by one compiled from c_source."""
    wheel = _built_wheel()
    if my_ops.build_info.abi != "stable" or not shutil.which("cc"):
        pytest.skip("needs a stable-ABI build and a C compiler")
    source = tmp_path / "lib.c"
    source.write_text(c_source)
    library = tmp_path / "libmy_ops.so"
    subprocess.run(["cc", "-shared", "-fPIC", str(source), "-o", str(library)], check=True)
    broken = tmp_path / "broken"
    broken.mkdir()
    wheel = _broken_copy(wheel, broken, replace={"my_ops/libmy_ops.so": library.read_bytes()})
    return _verify(wheel, "--skip-tools", env={**os.environ, "CUOBJDUMP": str(_fake_cuobjdump(tmp_path))})


def test_torch_cxx_symbol_in_stable_wheel_fails(tmp_path):
    """A libmy_ops that calls into torch's C++ API (c10::...) is not a stable-ABI build."""
    result = _verify_with_library(tmp_path, "extern void _ZN3c104warnEv(void);\nvoid f(void) { _ZN3c104warnEv(); }\n")
    assert result.returncode == 1
    assert ("symbols: my_ops/libmy_ops.so imports torch C++ symbols (not the stable ABI): ['c10::warn()']"
            in result.stdout)
    if importlib.util.find_spec("torch_abi_audit"):  # the second opinion agrees
        assert "torch-abi-audit finds libmy_ops.so outside the stable ABI" in result.stdout


def test_torch_abi_audit_dates_a_shim_function_the_oldest_torch_lacks(tmp_path):
    """aoti_torch_cpu_nonzero_static came with torch 2.11 (PyTorch's shim_function_versions.txt):
    both audits refuse it in a wheel that claims torch 2.10."""
    pytest.importorskip("torch_abi_audit", reason="needs ci/build/requirements-verify.txt (Linux x86_64)")
    result = _verify_with_library(
        tmp_path, "extern int aoti_torch_cpu_nonzero_static(void);\n"
                  "int f(void) { return aoti_torch_cpu_nonzero_static(); }\n")
    assert result.returncode == 1
    assert "torch-abi-audit finds libmy_ops.so needs torch 2.11.0, newer than the oldest it claims" in result.stdout
    assert "calls C shim functions the oldest torch it claims lacks" in result.stdout


def test_shim_function_newer_than_the_oldest_torch_fails(tmp_path):
    """A stable library must call only C shim functions the oldest torch it claims
    exports (ci/build/torch-c-symbols-<stable_abi_min>.txt): else it fails to load there."""
    result = _verify_with_library(
        tmp_path,
        "extern int torch_from_a_future_release(void);\nint f(void) { return torch_from_a_future_release(); }\n")
    assert result.returncode == 1
    assert "calls C shim functions the oldest torch it claims lacks" in result.stdout
    assert "torch_from_a_future_release" in result.stdout


def test_shim_function_list_is_the_oldest_stable_torch():
    import matrix

    path = ROOT / "ci" / "build" / f"torch-c-symbols-{matrix.load()['defaults']['stable_abi_min']}.txt"
    header = path.read_text().splitlines()[0]
    assert header.startswith(f"# C shim functions exported by torch {matrix.load()['defaults']['stable_abi_min']}.")
    assert "aoti_torch_get_current_cuda_stream" in path.read_text()  # the CUDA library's too


def test_wrong_arch_list_in_build_info_fails(tmp_path):
    wheel = _broken_copy(_built_wheel(), tmp_path, build_info={"arch_list": "8.0;9.0"})
    result = _verify(wheel, "--skip-tools")
    assert result.returncode == 1
    assert "buildinfo: arch list 8.0;9.0, expected" in result.stdout


def test_an_aarch64_wheel_is_held_to_the_aarch64_arch_list(tmp_path):
    """The same library named for Linux aarch64 must carry that platform's list (sm_110 for CUDA 13)."""
    wheel = _built_wheel()
    build = _build_of(wheel)
    aarch64 = build.arch_list_for("linux-aarch64")
    if aarch64 == build.arch_list:
        pytest.skip(f"{build.name} has one arch list for every platform")
    renamed = tmp_path / re.sub(r"-[^-]+\.whl$", "-manylinux_2_28_aarch64.whl", wheel.name)
    shutil.copy(wheel, renamed)
    result = _verify(renamed, "--skip-tools")
    assert result.returncode == 1
    assert f"expected {aarch64}" in result.stdout
    assert "sm_110" in result.stdout or build.cuda < "13"


def _label_free(tmp_path: Path) -> Path:
    """PyPI's label-free wheel made from the built one alone (ci/build/bundle-wheels.py)."""
    spec = importlib.util.spec_from_file_location("bundle_wheels", ROOT / "ci/build/bundle-wheels.py")
    bundle = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(bundle)
    wheel = _built_wheel()
    if _build_of(wheel).name != matrix.find_build(matrix.load()["defaults"]["default_pair"]).name:
        pytest.skip("the label-free wheel is made from the default build's wheel")
    return bundle.label_free(wheel, [], tmp_path / "bundle")


def _verify_label_free(wheel: Path, report: Path, *extra: str) -> tuple[subprocess.CompletedProcess, dict]:
    result = subprocess.run([sys.executable, str(ROOT / "ci/build/verify-wheel.py"), str(wheel), "--label-free",
                             "--report", str(report), *extra], capture_output=True, text=True)
    return result, json.loads(report.read_text())


def test_label_free_wheel_is_verified_library_by_library_and_by_the_tools(tmp_path):
    """PyPI's wheel gets every check a labelled one gets; made from one build only, it lacks the
    other libraries of label_free_builds, and that is all that fails."""
    wheel = _label_free(tmp_path)
    result, report = _verify_label_free(wheel, tmp_path / "report.json")
    assert report["tools"] == {"abi3audit": "ok", "check-wheel-contents": "ok", "twine check": "ok"}
    label = _build_of(wheel).label
    assert report["libraries"][f"my_ops/_libraries/{label}"]["sass"]  # its device code was read
    assert result.returncode == 1
    assert [f.split(":")[0] for f in report["failures"]] == ["libraries"], report["failures"]
    assert f"holds ['{label}'], expected" in report["failures"][0]


@pytest.mark.parametrize("change,message", [
    ("arch", "buildinfo {label}: arch list 8.0;9.0, expected"),
    ("label", "name: version"),
    ("cmake", "cmake: ['my_ops/_libraries/{label}/my_ops-config.cmake'] missing"),
    ("buildinfo", "buildinfo {label}: my_ops/_libraries/{label}/_build_info.json is missing"),
])
def test_label_free_wheel_faults_are_found(tmp_path, change, message):
    wheel = _label_free(tmp_path)
    label = _build_of(wheel).label
    if change == "arch":
        record = f"my_ops/_libraries/{label}/_build_info.json"
        with zipfile.ZipFile(wheel) as zf:
            info = json.loads(zf.read(record))
        broken = _broken_copy(wheel, tmp_path, replace={record: json.dumps({**info, "arch_list": "8.0;9.0"}).encode()})
    elif change == "cmake":
        broken = _broken_copy(wheel, tmp_path, drop=(f"my_ops/_libraries/{label}/my_ops-config.cmake",))
    elif change == "buildinfo":
        broken = _broken_copy(wheel, tmp_path, drop=(f"my_ops/_libraries/{label}/_build_info.json",))
    else:
        broken = tmp_path / wheel.name.replace("-cp39", f"+{label}-cp39")
        shutil.copy(wheel, broken)
    result, report = _verify_label_free(broken, tmp_path / "report.json", "--skip-tools")
    assert result.returncode == 1
    assert any(f.startswith(message.format(label=label)) for f in report["failures"]), report["failures"]


def test_wrong_name_fails(tmp_path):
    wheel = _built_wheel()
    renamed = tmp_path / wheel.name.replace("cp39-abi3", "cp311-cp311")
    shutil.copy(wheel, renamed)
    result = _verify(renamed, "--skip-tools")
    assert result.returncode == 1
    assert "expected cp39-abi3" in result.stdout


def test_repair_keeps_both_libraries_and_grafts_nothing(tmp_path):
    """auditwheel repair (ci/build/repair-wheel.sh), as the Linux build jobs run it."""
    pytest.importorskip("auditwheel", reason="needs the tools of ci/build/requirements-verify.txt")
    wheel = _built_wheel()
    out = tmp_path / "repaired"
    result = subprocess.run(["bash", str(ROOT / "ci/build/repair-wheel.sh"), str(wheel), str(out)],
                            capture_output=True, text=True, env={**os.environ, "PYTHON": sys.executable})
    assert result.returncode == 0, result.stdout + result.stderr
    (repaired,) = out.glob("my_ops-*.whl")
    assert "manylinux" in repaired.name
    with zipfile.ZipFile(repaired) as zf:
        libraries = sorted(n for n in zf.namelist() if ".so" in n)
    assert libraries == ["my_ops/_C.abi3.so", "my_ops/libmy_ops.so"]
