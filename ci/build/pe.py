"""Read what a Windows DLL or .pyd imports, on any host (pefile, which abi3audit brings).

ci/build/verify-wheel.py audits the Windows wheel's libraries with this: the DLLs
each one loads and the names it imports from each.
"""

from __future__ import annotations

from pathlib import Path

PE_MAGIC = b"MZ"


def is_pe(path: Path) -> bool:
    with open(path, "rb") as f:
        return f.read(2) == PE_MAGIC


def imports(path: Path) -> dict[str, list[str]]:
    """DLL name -> the names imported from it (ordinal-only imports as '#N')."""
    import pefile

    pe = pefile.PE(str(path), fast_load=True)
    pe.parse_data_directories(directories=[pefile.DIRECTORY_ENTRY["IMAGE_DIRECTORY_ENTRY_IMPORT"],
                                           pefile.DIRECTORY_ENTRY["IMAGE_DIRECTORY_ENTRY_DELAY_IMPORT"]])
    found: dict[str, list[str]] = {}
    # (delay-loaded DLLs too: they are imports that load on first call)
    for entry in [*getattr(pe, "DIRECTORY_ENTRY_IMPORT", []), *getattr(pe, "DIRECTORY_ENTRY_DELAY_IMPORT", [])]:
        names = [i.name.decode() if i.name else f"#{i.ordinal}" for i in entry.imports]
        found.setdefault(entry.dll.decode(), []).extend(names)
    pe.close()
    return found
