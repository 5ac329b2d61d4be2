"""scikit-build-core metadata provider: the wheel's version and torch pin.

Loaded by the build backend through [[tool.dynamic-metadata]] in
pyproject.toml. It decides, before CMake runs:

  version       VERSION + a local label naming the CUDA toolkit of the build:
                "1.0.0+cu130", or "1.0.0+cpu" without CUDA. No label when
                MY_OPS_LOCAL_LABEL=none (the PyPI default wheel), for the
                sdist itself (PyPI refuses local labels), and when building
                from an sdist (pip requires the sdist's version).
                MY_OPS_NIGHTLY=YYYYMMDDHHMM makes a nightly: "1.0.1.devYYYYMMDDHHMM"
                (the minute, so two nightlies of one day never share a name).
  dependencies  from the torch installed in the build environment, through
                build_support/matrix.py: plain "torch" for a stable-ABI build (it
                loads into torch 2.10 and every later one, and installing it
                never replaces an installed torch), "torch>=2.6,<2.7" for a
                legacy one (bound to the torch minor it was compiled against).
  requires-python  the oldest Python of the torch minors the wheel serves:
                ">=3.10" for a stable-ABI build (torch 2.10 needs it), ">=3.9" for
                torch 2.6's legacy one.

CMake checks that the nvcc it uses matches the label (build_support/MyOpsCuda.cmake).
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
from importlib import metadata
from pathlib import Path
from typing import Any, Mapping

ROOT = Path(__file__).resolve().parent.parent
_build_state = "wheel"


def build_state(state: str) -> None:
    """Told by the backend what it is building: "sdist", "wheel", "editable", ..."""
    global _build_state
    _build_state = state


def dynamic_wheel(settings: Mapping[str, Any]) -> dict[str, bool]:
    """The torch pin is decided again when a wheel is built from the sdist."""
    return {"dependencies": True, "requires-python": True}


def find_nvcc() -> str | None:
    """The nvcc CMake will use: $CUDACXX, $CUDA_HOME/bin, $CUDA_PATH/bin, PATH, /usr/local/cuda/bin."""
    if os.environ.get("CUDACXX"):
        return os.environ["CUDACXX"]
    for var in ("CUDA_HOME", "CUDA_PATH"):
        root = os.environ.get(var)
        if root:
            for name in ("nvcc", "nvcc.exe"):
                candidate = Path(root) / "bin" / name
                if candidate.is_file():
                    return str(candidate)
    found = shutil.which("nvcc")
    if found:
        return found
    fallback = Path("/usr/local/cuda/bin/nvcc")
    return str(fallback) if fallback.is_file() else None


def cuda_mode() -> str:
    mode = os.environ.get("MY_OPS_CUDA", "AUTO").strip().upper() or "AUTO"
    if mode in ("0", "OFF", "NO", "FALSE"):
        return "OFF"
    if mode in ("1", "ON", "YES", "TRUE"):
        return "ON"
    if mode != "AUTO":
        raise ValueError(f"MY_OPS_CUDA must be AUTO, ON or OFF, but is {mode!r}")
    return mode


def nvcc_version(nvcc: str) -> str:
    """'13.0' from `nvcc --version`."""
    out = subprocess.run([nvcc, "--version"], capture_output=True, text=True, check=True).stdout
    match = re.search(r"release (\d+)\.(\d+)", out)
    if not match:
        raise RuntimeError(f"cannot read the CUDA version from `{nvcc} --version`:\n{out}")
    return f"{match.group(1)}.{match.group(2)}"


def local_label() -> str:
    """'cu130', 'cpu', or '' for no label."""
    if os.environ.get("MY_OPS_LOCAL_LABEL", "").strip().lower() == "none":
        return ""
    if _build_state == "sdist" or (ROOT / "PKG-INFO").is_file():  # an sdist, or built from one
        return ""
    mode = cuda_mode()
    nvcc = None if mode == "OFF" else find_nvcc()
    if nvcc is None:
        if mode == "ON":
            raise RuntimeError("MY_OPS_CUDA=ON but no nvcc was found: set CUDA_HOME or CUDACXX")
        return "cpu"
    return "cu" + nvcc_version(nvcc).replace(".", "")


def base_version() -> str:
    version = (ROOT / "VERSION").read_text().strip()
    nightly = os.environ.get("MY_OPS_NIGHTLY", "").strip()
    if nightly:
        if not re.fullmatch(r"\d{12}", nightly):
            raise ValueError(f"MY_OPS_NIGHTLY must be a UTC time YYYYMMDDHHMM, but is {nightly!r}")
        major, minor, patch = (int(p) for p in version.split("."))
        version = f"{major}.{minor}.{patch + 1}.dev{nightly}"
    return version


def installed_torch() -> str:
    try:
        return metadata.version("torch")
    except metadata.PackageNotFoundError:
        raise RuntimeError(
            "my_ops is built against the torch installed in the build environment, and none is "
            "installed (pip's isolated build environment has none). Install torch and the build "
            "tools first, then build without build isolation: pip install torch scikit-build-core "
            "cmake ninja && pip install --no-build-isolation --no-cache-dir --no-binary my_ops "
            f"my_ops=={base_version()} (in a checkout: pip install --no-build-isolation .)"
        ) from None


def torch_requirement() -> str:
    sys.path.insert(0, str(ROOT / "build_support"))
    import matrix

    return matrix.wheel_dependency(installed_torch())


def requires_python() -> str:
    """The oldest Python of the torch minors the wheel serves (build_support/matrix.py)."""
    sys.path.insert(0, str(ROOT / "build_support"))
    import matrix

    return matrix.requires_python(installed_torch())


def dynamic_metadata(settings: Mapping[str, Any], project: Mapping[str, Any]) -> dict[str, Any]:
    label = local_label()
    version = base_version() + (f"+{label}" if label else "")
    return {"version": version, "dependencies": [torch_requirement()], "requires-python": requires_python()}
