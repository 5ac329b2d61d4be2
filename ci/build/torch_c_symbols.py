#!/usr/bin/env python3
"""List the C functions of torch's stable ABI (the C shim: aoti_torch_*,
torch_*) that a torch build exports, one per line: the data
ci/build/verify-wheel.py checks a stable-ABI kernel library against, so that it
calls nothing newer than the oldest torch it claims.

  python ci/build/torch_c_symbols.py > ci/build/torch-c-symbols-2.10.txt   # with that torch installed
  python ci/build/torch_c_symbols.py --wheel torch-2.10.0-...-macosx_11_0_arm64.whl \\
      > ci/build/torch-c-symbols-2.10-macos.txt                           # from a torch wheel file

The macOS list is its own: macOS torch exports fewer shim functions (no
CUDA or oneDNN ones), and a Mac resolves them only when they are called.
"""

from __future__ import annotations

import argparse
import re
import subprocess
import sys
import tempfile
import zipfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
import macho  # noqa: E402

C_SYMBOL = re.compile(r"^(aoti_torch_|torch_)\w+$")
LIBRARIES = re.compile(r"(^|/)torch/lib/lib(torch_cpu|torch_cuda)\.(so|dylib)$")


def exported(library: Path) -> set[str]:
    if macho.is_macho(library):
        names = macho.defined_symbols(library)
    else:
        out = subprocess.run(["nm", "-D", "--defined-only", str(library)], capture_output=True, text=True,
                             check=True).stdout
        names = [line.split()[-1] for line in out.splitlines() if line.strip()]
    return {n for n in names if C_SYMBOL.match(n)}


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--wheel", type=Path, help="a torch wheel file (default: the installed torch)")
    args = parser.parse_args()
    names: set[str] = set()
    if args.wheel:
        version = args.wheel.name.split("-")[1]
        with zipfile.ZipFile(args.wheel) as zf, tempfile.TemporaryDirectory() as tmp:
            for member in zf.namelist():
                if LIBRARIES.search(member):
                    names |= exported(Path(zf.extract(member, tmp)))
        source = args.wheel.name
    else:
        import torch

        lib = Path(torch.__file__).parent / "lib"
        for name in ("libtorch_cpu.so", "libtorch_cuda.so"):
            if (lib / name).is_file():
                names |= exported(lib / name)
        version, source = torch.__version__, "the installed torch"
    if not names:
        raise SystemExit("no C shim function found: is this a torch wheel or installation?")
    print(f"# C shim functions exported by torch {version} ({source}; ci/build/torch_c_symbols.py)")
    print("\n".join(sorted(names)))
    return 0


if __name__ == "__main__":
    sys.exit(main())
