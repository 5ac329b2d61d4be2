"""Read what a 64-bit Mach-O binary (a macOS .dylib or .so) imports, without Apple's tools.

ci/build/verify-wheel.py audits the macOS wheel's libraries with this, on any host:
the libraries each one loads (LC_LOAD_DYLIB and kin) and the symbols it
leaves undefined (its symbol table), with the leading underscore Mach-O
gives C names removed.
"""

from __future__ import annotations

import struct
from pathlib import Path

MH_MAGIC_64 = 0xFEEDFACF
LC_SYMTAB = 0x2
# LC_LOAD_DYLIB, LC_LOAD_WEAK_DYLIB, LC_REEXPORT_DYLIB, LC_LAZY_LOAD_DYLIB, LC_LOAD_UPWARD_DYLIB
LOAD_COMMANDS = {0xC, 0x80000018, 0x8000001F, 0x20, 0x80000023}
N_STAB, N_TYPE, N_EXT, N_UNDF, N_SECT = 0xE0, 0x0E, 0x01, 0x0, 0xE


def _commands(data: bytes):
    """(cmd, offset of the command) for each load command of a thin 64-bit little-endian Mach-O."""
    if len(data) < 32 or struct.unpack_from("<I", data, 0)[0] != MH_MAGIC_64:
        raise ValueError("not a thin 64-bit little-endian Mach-O file (fat, 32-bit or another format)")
    ncmds = struct.unpack_from("<I", data, 16)[0]
    offset = 32
    for _ in range(ncmds):
        cmd, size = struct.unpack_from("<II", data, offset)
        yield cmd, offset
        offset += size


def is_macho(path: Path) -> bool:
    with open(path, "rb") as f:
        head = f.read(4)
    return len(head) == 4 and struct.unpack("<I", head)[0] == MH_MAGIC_64


def linked_libraries(path: Path) -> list[str]:
    """The install names of the libraries the binary loads, in order."""
    data = path.read_bytes()
    names = []
    for cmd, offset in _commands(data):
        if cmd in LOAD_COMMANDS:
            name_offset = struct.unpack_from("<I", data, offset + 8)[0]
            start = offset + name_offset
            names.append(data[start:data.index(b"\0", start)].decode())
    return names


def _external_symbols(path: Path, defined: bool) -> list[str]:
    data = path.read_bytes()
    symbols = []
    for cmd, offset in _commands(data):
        if cmd != LC_SYMTAB:
            continue
        symoff, nsyms, stroff, _ = struct.unpack_from("<IIII", data, offset + 8)
        for i in range(nsyms):
            strx, n_type = struct.unpack_from("<IB", data, symoff + 16 * i)
            if n_type & N_STAB or not n_type & N_EXT or (n_type & N_TYPE == N_SECT) != defined:
                continue
            if not defined and n_type & N_TYPE != N_UNDF:
                continue
            name = data[stroff + strx:data.index(b"\0", stroff + strx)].decode()
            symbols.append(name[1:] if name.startswith("_") else name)
    return symbols


def undefined_symbols(path: Path) -> list[str]:
    """The external symbols the binary expects another image to define."""
    return _external_symbols(path, defined=False)


def defined_symbols(path: Path) -> list[str]:
    """The external symbols the binary defines (what a library exports)."""
    return _external_symbols(path, defined=True)
