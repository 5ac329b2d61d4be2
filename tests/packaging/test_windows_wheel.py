"""The Windows wheel's audit, run here: ci/build/pe.py reads DLLs that clang and
lld-link build for x86_64-pc-windows-msvc in the test, and ci/build/verify-wheel.py
judges a Windows-shaped copy of the +cpu wheel holding them."""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
import zipfile
from pathlib import Path

import pytest

import foreign_wheels

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "ci" / "build"))
sys.path.insert(0, str(ROOT / "build_support"))
import matrix  # noqa: E402

TOOLS = {name: shutil.which(name) for name in ("clang", "lld-link", "llvm-dlltool")}
pytestmark = pytest.mark.skipif(not all(TOOLS.values()), reason="needs clang, lld-link and llvm-dlltool")
pefile = pytest.importorskip("pefile", reason="needs pefile (abi3audit's, ci/build/requirements-verify.txt)")
import pe  # noqa: E402

TARGET = "--target=x86_64-pc-windows-msvc"


def _import_library(tmp: Path, dll: str, names: list[str]) -> Path:
    """An import library for `dll` exporting `names` (no DLL needed to link against it)."""
    definition = tmp / f"{dll}.def"
    definition.write_text(f"LIBRARY {dll}\nEXPORTS\n" + "".join(f"  {n}\n" for n in names))
    library = tmp / f"{dll}.lib"
    subprocess.run([TOOLS["llvm-dlltool"], "-m", "i386:x86-64", "-d", str(definition), "-l", str(library)],
                   check=True, capture_output=True)
    return library


def build_dll(tmp: Path, name: str, imports: dict[str, list[str]], cxx: str = "") -> Path:
    """A DLL whose exported function calls each C function of `imports` (dll -> names), plus `cxx`."""
    calls = [n for names in imports.values() for n in names if not n.startswith("?")]
    source = "".join(f'extern "C" __declspec(dllimport) void {n}(void);\n' for n in calls) + cxx
    source += 'extern "C" __declspec(dllexport) void entry(void) {' + "".join(f" {n}();" for n in calls)
    source += " cxx_calls(); }\n" if cxx else " }\n"
    (tmp / f"{name}.cpp").write_text(source)
    obj = tmp / f"{name}.obj"
    subprocess.run([TOOLS["clang"], TARGET, "-x", "c++", "-c", str(tmp / f"{name}.cpp"), "-o", str(obj)],
                   check=True, capture_output=True, text=True)
    libraries = [_import_library(tmp, dll, names) for dll, names in imports.items()]
    out = tmp / name
    subprocess.run([TOOLS["lld-link"], "/dll", "/noentry", "/nodefaultlib", f"/out:{out}", str(obj),
                    *map(str, libraries)], check=True, capture_output=True, text=True)
    return out


C10_WARN = 'namespace c10 { __declspec(dllimport) void warn(); }\nstatic void cxx_calls() { c10::warn(); }\n'


def test_pe_reader(tmp_path):
    dll = build_dll(tmp_path, "a.dll", {"torch_cpu.dll": ["aoti_torch_get_device_type", "?warn@c10@@YAXXZ"]},
                    cxx=C10_WARN)
    assert pe.is_pe(dll)
    found = pe.imports(dll)
    assert list(found) == ["torch_cpu.dll"]
    assert sorted(found["torch_cpu.dll"]) == ["?warn@c10@@YAXXZ", "aoti_torch_get_device_type"]


@pytest.mark.parametrize("fault,message", [
    (None, None),
    ("calls c10", "imports torch C++ symbols (not the stable ABI): ['?warn@c10@@YAXXZ']"),
    ("newer shim", "calls C shim functions the oldest torch it claims lacks"),
    ("links cudart", "cpu: my_ops/my_ops.dll links CUDA libraries ['cudart64_13.dll']"),
])
def test_verify_a_windows_wheel(tmp_path, fault, message):
    verify_wheel = foreign_wheels.verify_wheel()
    wheel = foreign_wheels.cpu_wheel()
    imports = {"torch_cpu.dll": ["aoti_torch_get_device_type", "torch_call_dispatcher"]}
    cxx = ""
    if fault == "calls c10":
        imports["torch_cpu.dll"].append("?warn@c10@@YAXXZ")
        cxx = C10_WARN
    elif fault == "newer shim":
        imports["torch_cpu.dll"].append("aoti_torch_a_function_from_the_future")
    elif fault == "links cudart":
        imports["cudart64_13.dll"] = ["cudaGetDeviceCount"]
    library = build_dll(tmp_path, "my_ops.dll", imports, cxx)
    extension = build_dll(tmp_path, "_C.pyd", {"my_ops.dll": ["my_ops_module_init"],
                                               "python3.dll": ["PyModule_Create2"]})
    target = tmp_path / f"{wheel.name.rsplit('-', 1)[0]}-win_amd64.whl"
    with zipfile.ZipFile(wheel) as src, zipfile.ZipFile(target, "w") as dst:
        version = json.loads(src.read("my_ops/_build_info.json"))["version"].split("+")[0]
        for item in src.infolist():
            if item.filename == "my_ops/libmy_ops.so":
                dst.writestr("my_ops/my_ops.dll", library.read_bytes())
            elif item.filename.startswith("my_ops/_C."):
                dst.writestr("my_ops/_C.pyd", extension.read_bytes())
            else:
                dst.writestr(item, src.read(item))
    result = verify_wheel.verify(target, matrix.find_build("cpu"), "win_amd64", skip_tools=True, size_limit_mb=50,
                                 base_version=version)
    if fault is None:
        assert result.failures == []
        assert result.report["torch_cxx_imports"] == {"my_ops/my_ops.dll": 0, "my_ops/_C.pyd": 0}
    else:
        assert any(message in f for f in result.failures), result.failures
