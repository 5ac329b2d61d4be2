"""`python -m my_ops`: what this my_ops was built for, what it runs with, and
whether they fit. Exits 1 when they do not, after printing the fix."""

from __future__ import annotations

import os
import sys

import torch

from . import _build_info, _libraries


def _cuda_driver_version() -> int:
    """cuDriverGetVersion(), e.g. 13000 for a driver that supports CUDA 13.0; 0 if unknown."""
    import ctypes

    for name in ("libcuda.so.1", "nvcuda.dll"):
        try:
            library = ctypes.CDLL(name)
        except OSError:
            continue
        version = ctypes.c_int(0)
        if library.cuDriverGetVersion(ctypes.byref(version)) == 0:
            return version.value
    return 0


def _library_lines(package_info) -> tuple[list[str], object, str | None]:
    """Which kernel library this torch gets and why the others not: (lines, its build info, problem)."""
    libraries = _libraries.find(package_info)
    forced = os.environ.get(_libraries.FORCE_VARIABLE) or None
    hip = getattr(torch.version, "hip", None)
    chosen, reasons = _libraries.choose(libraries, torch.__version__, torch.version.cuda, hip, forced)
    problem = None if chosen else _libraries.mismatch_text(package_info, libraries, reasons, torch.__version__,
                                                           torch.version.cuda, hip, forced)
    lines = []
    if len(libraries) > 1 or forced:
        lines.append(f"kernel libraries ({_libraries.FORCE_VARIABLE}={forced or 'unset'}):")
        for lib in libraries:
            kind = f"CUDA {lib.info.cuda_version}" if lib.cuda else "CPU"
            status = "LOADED" if lib is chosen else "not loaded: " + reasons.get(lib.label, "")
            lines.append(f"  {lib.label} ({kind}, {lib.info.torch_range_text}): {status}")
    return lines, (chosen.info if chosen else package_info), problem


def report() -> tuple[list[str], bool]:
    package_info = _build_info.load()
    library_lines, info, library_problem = _library_lines(package_info)
    ok = True
    lines = [f"my_ops {info.version}", *library_lines]
    if info.has_cuda:
        lines.append(f"  built with CUDA {info.cuda_version} for TORCH_CUDA_ARCH_LIST={info.arch_list}")
        lines.append(f"  built against torch {info.torch_version} (CUDA {info.torch_cuda or 'none'}), "
                     f"C++11 ABI {'on' if info.cxx11_abi else 'off'}")
    else:
        # A CPU build compiles against torch's headers only, whatever CUDA that torch was built
        # with: naming its CUDA here would suggest a dependency there is not.
        lines.append("  built without CUDA kernels (CPU only)")
        lines.append(f"  built against torch {info.torch_version.split('+')[0]}'s headers, "
                     f"C++11 ABI {'on' if info.cxx11_abi else 'off'}")
    family = ("LibTorch stable ABI" if info.abi == "stable"
              else "regular C++ API, bound to one torch minor")
    lines.append(f"  binding: {family}; serves {info.torch_range_text}")
    lines.append(f"  built {info.build_date} from commit {info.commit} for {info.platform}")

    lines.append(f"running torch {torch.__version__} (CUDA {torch.version.cuda or 'none'}) on "
                 f"Python {sys.version.split()[0]}")
    problem = library_problem
    if problem:
        ok = False
        lines.append("  MISMATCH: " + problem.replace("\n", "\n  "))
    else:
        lines.append("  torch: matches this build")

    if torch.cuda.is_available():
        driver = _cuda_driver_version()
        if driver:
            lines.append(f"CUDA driver supports CUDA {driver // 1000}.{driver % 1000 // 10}")
        for index in range(torch.cuda.device_count()):
            name = torch.cuda.get_device_name(index)
            capability = torch.cuda.get_device_capability(index)
            problem = _build_info.arch_mismatch(info, name, capability)
            status = "covered by this build" if problem is None else "NOT COVERED: " + problem
            ok = ok and problem is None
            lines.append(f"GPU {index}: {name} (sm_{capability[0]}{capability[1]}): {status}")
    else:
        lines.append("no CUDA GPU visible")

    if not library_problem:
        # On a mismatch the MISMATCH text ends with the fix; here the pinned wheel is only an option.
        pinned = _build_info.wheel_for(info, torch.__version__, torch.version.cuda)
        if pinned:
            lines.append(f"optional, to pin this torch's wheel: {pinned}")
    return lines, ok


def cmake_prefix() -> int:
    """`python -m my_ops --cmake-prefix`: the folder of the kernel library this
    torch gets, which holds my_ops-config.cmake for CMake's find_package(my_ops)
    (docs/deploying.md). Exits 1, saying why, when none fits."""
    package_info = _build_info.load()
    libraries = _libraries.find(package_info)
    chosen, reasons = _libraries.choose(libraries, torch.__version__, torch.version.cuda,
                                        getattr(torch.version, "hip", None),
                                        os.environ.get(_libraries.FORCE_VARIABLE) or None)
    if chosen is None:
        print(_libraries.mismatch_text(package_info, libraries, reasons, torch.__version__, torch.version.cuda),
              file=sys.stderr)
        return 1
    print(chosen.folder)
    return 0


def main() -> int:
    if sys.argv[1:] == ["--cmake-prefix"]:
        return cmake_prefix()
    lines, ok = report()
    print("\n".join(lines))
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
