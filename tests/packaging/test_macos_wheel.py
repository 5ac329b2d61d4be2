"""The macOS wheel's audit, run here: ci/build/macho.py reads Mach-O files written
by the test, and ci/build/verify-wheel.py judges a macOS-shaped copy of the CPU
wheel (its libraries swapped for such files) as the build job would."""

from __future__ import annotations

import json
import struct
import sys
import zipfile
from pathlib import Path

import pytest

import foreign_wheels

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "ci" / "build"))
sys.path.insert(0, str(ROOT / "build_support"))
import macho  # noqa: E402
import matrix  # noqa: E402

SYSTEM = ["/usr/lib/libc++.1.dylib", "/usr/lib/libSystem.B.dylib"]
SHIM = ["aoti_torch_get_device_type", "torch_call_dispatcher"]  # two C shim functions torch 2.10 has


def write_macho(path: Path, dylibs: list[str], undefined: list[str], defined: list[str] = ()) -> Path:
    """A minimal arm64 Mach-O dylib: its load commands and symbol table, no code."""
    commands = b""
    for name in dylibs:
        raw = name.encode() + b"\0"
        size = (24 + len(raw) + 7) // 8 * 8
        commands += struct.pack("<6I", 0xC, size, 24, 2, 0x10000, 0x10000) + raw.ljust(size - 24, b"\0")
    symbols = [(n, 0x01) for n in undefined] + [(n, 0x0F) for n in defined]  # N_UNDF|N_EXT, N_SECT|N_EXT
    symbols.append(("debug_note", 0x24))  # a debugging (stab) entry: never an import
    symoff = 32 + len(commands) + 24
    strings, entries = b"\0", b""
    for name, n_type in symbols:
        entries += struct.pack("<IBBHQ", len(strings), n_type, 0 if n_type == 0x01 else 1, 0, 0)
        strings += b"_" + name.encode() + b"\0"  # Mach-O's leading underscore
    commands += struct.pack("<6I", 0x2, 24, symoff, len(symbols), symoff + len(entries), len(strings))
    header = struct.pack("<8I", 0xFEEDFACF, 0x0100000C, 0, 6, len(dylibs) + 1, len(commands), 0, 0)
    path.write_bytes(header + commands + entries + strings)
    return path


def test_macos_shim_list_is_macos_torchs():
    """The macOS list (from torch 2.10's macOS wheel) lacks the CUDA shims and has the MPS ones."""
    def names(path):
        return {n for n in path.read_text().split() if not n.startswith("#")}

    linux, macos = (names(ROOT / f"ci/build/torch-c-symbols-2.10{s}.txt") for s in ("", "-macos"))
    assert "aoti_torch_cuda_mm_out" in linux and "aoti_torch_cuda_mm_out" not in macos
    assert any(n.startswith("aoti_torch_mps_") for n in macos)
    assert "aoti_torch_get_device_type" in macos and "torch_call_dispatcher" in macos


def test_macho_reader(tmp_path):
    library = write_macho(tmp_path / "a.dylib", [*SYSTEM, "@rpath/libtorch_cpu.dylib"],
                          undefined=[*SHIM, "_ZN3c104warnEv"], defined=["my_ops_rms_norm_cpu"])
    assert macho.is_macho(library)
    assert macho.linked_libraries(library) == [*SYSTEM, "@rpath/libtorch_cpu.dylib"]
    assert macho.undefined_symbols(library) == [*SHIM, "_ZN3c104warnEv"]
    assert macho.defined_symbols(library) == ["my_ops_rms_norm_cpu"]
    elf = tmp_path / "b.so"
    elf.write_bytes(b"\x7fELF" + bytes(60))
    assert not macho.is_macho(elf)
    with pytest.raises(ValueError, match="not a thin 64-bit"):
        macho.linked_libraries(elf)


def _macos_copy(cpu_wheel: Path, tmp_path: Path, library: Path, extension: Path) -> Path:
    """The CPU wheel as the macOS build makes it: macosx tag, libmy_ops.dylib, Mach-O _C."""
    tag = matrix.load()["defaults"]["macos_platform"]
    target = tmp_path / f"{cpu_wheel.name.rsplit('-', 1)[0]}-{tag}.whl"
    with zipfile.ZipFile(cpu_wheel) as src, zipfile.ZipFile(target, "w") as dst:
        for item in src.infolist():
            name = item.filename
            if name == "my_ops/libmy_ops.so":
                dst.writestr("my_ops/libmy_ops.dylib", library.read_bytes())
            elif name.startswith("my_ops/_C."):
                dst.writestr(name, extension.read_bytes())
            else:
                dst.writestr(item, src.read(item))
    return target


@pytest.mark.parametrize("fault,message", [
    (None, None),
    ("links torch", "loads libraries a Mac does not have: ['@rpath/libtorch_cpu.dylib']"),
    ("calls c10", "imports torch C++ symbols (not the stable ABI): ['_ZN3c104warnEv']"),
    ("newer shim", "calls C shim functions the oldest torch it claims lacks"),
    # exported by Linux torch 2.10 (CUDA), not by macOS torch 2.10
    ("cuda shim", "torch-c-symbols-2.10-macos.txt): ['aoti_torch_cuda_mm_out']"),
])
def test_verify_a_macos_wheel(tmp_path, fault, message):
    verify_wheel = foreign_wheels.verify_wheel()
    wheel = foreign_wheels.cpu_wheel()
    dylibs, undefined = list(SYSTEM), list(SHIM)
    if fault == "links torch":
        dylibs.append("@rpath/libtorch_cpu.dylib")
    elif fault == "calls c10":
        undefined.append("_ZN3c104warnEv")
    elif fault == "newer shim":
        undefined.append("aoti_torch_a_function_from_the_future")
    elif fault == "cuda shim":
        undefined.append("aoti_torch_cuda_mm_out")
    library = write_macho(tmp_path / "libmy_ops.dylib", dylibs, undefined, defined=["my_ops_rms_norm_cpu"])
    extension = write_macho(tmp_path / "_C.so", ["@rpath/libmy_ops.dylib", *SYSTEM], ["PyModule_Create2"],
                            defined=["PyInit__C"])
    macos = _macos_copy(wheel, tmp_path, library, extension)
    data = matrix.load()
    result = verify_wheel.verify(macos, matrix.find_build("cpu", data), data["defaults"]["macos_platform"],
                                 skip_tools=True, size_limit_mb=50,
                                 base_version=json.loads(zipfile.ZipFile(wheel).read("my_ops/_build_info.json"))
                                 ["version"].split("+")[0])
    if fault is None:
        assert result.failures == []
        assert result.report["torch_c_imports_newer_than_oldest"]["my_ops/libmy_ops.dylib"] == []
    else:
        assert any(message in f for f in result.failures), result.failures
