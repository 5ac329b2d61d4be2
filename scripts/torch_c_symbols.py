#!/usr/bin/env python3
"""List the C functions of torch's stable ABI (the C shim: aoti_torch_*,
torch_*) that the installed torch exports, one per line: the data
ci/verify-wheel.py checks a stable-ABI kernel library against, so that it
calls nothing newer than the oldest torch it claims.

  python scripts/torch_c_symbols.py > scripts/torch-c-symbols-2.10.txt   # with that torch installed
"""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

import torch

C_SYMBOL = re.compile(r"^(aoti_torch_|torch_)\w+$")


def exported(library: Path) -> set[str]:
    out = subprocess.run(["nm", "-D", "--defined-only", str(library)], capture_output=True, text=True,
                         check=True).stdout
    return {line.split()[-1] for line in out.splitlines() if C_SYMBOL.match(line.split()[-1])}


def main() -> int:
    lib = Path(torch.__file__).parent / "lib"
    names: set[str] = set()
    for name in ("libtorch_cpu.so", "libtorch_cuda.so"):
        if (lib / name).is_file():
            names |= exported(lib / name)
    print(f"# C shim functions exported by torch {torch.__version__} (scripts/torch_c_symbols.py)")
    print("\n".join(sorted(names)))
    return 0


if __name__ == "__main__":
    sys.exit(main())
