"""The kernel libraries of this install, and which one the running torch gets.

A labelled wheel (+cu130, +cpu, ...) holds one kernel library: my_ops/_C with
my_ops/_build_info.json beside it. PyPI's label-free wheel holds several, one
folder each under my_ops/_libraries/<label>/ (its _C, its kernels and its
_build_info.json): CPU, CUDA 12 and CUDA 13 (macOS: CPU). At import the one
that fits the running torch is loaded as my_ops._C:
  - a CPU-only torch gets the CPU library;
  - a CUDA torch gets a library of the same CUDA major built with a toolkit
    no newer than torch's CUDA, the newest such: its kernels then need no
    newer driver, and its CUDA runtime is the one torch brought;
  - nothing fits (a ROCm torch, a future CUDA major, a torch too old): an
    ImportError that ends with what to do (upgrade torch, or the exact pip
    command of the published wheel that fits: build info's index and pairs).
MY_OPS_LIBRARY=<label> (e.g. cpu) forces one; it must still load into this torch,
and a label this install does not have is an error naming the ones it has.

Pure Python, and no import of my_ops._C, so `python -m my_ops` can explain a
mismatch.
"""

from __future__ import annotations

import importlib.machinery
import importlib.util
import sys
from dataclasses import dataclass, replace
from pathlib import Path

from . import _build_info

FORCE_VARIABLE = "MY_OPS_LIBRARY"
FOLDER = "_libraries"


@dataclass(frozen=True)
class Library:
    label: str  # "cpu", "cu126", "cu130", ...
    folder: Path  # holds _C and _build_info.json
    info: _build_info.BuildInfo

    @property
    def cuda(self) -> tuple[int, int] | None:
        if not self.info.has_cuda:
            return None
        major, minor = self.info.cuda_version.split(".")[:2]
        return int(major), int(minor)


def find(package_info: _build_info.BuildInfo) -> list[Library]:
    """Every kernel library of the installed package, from its build records."""
    top = _build_info.build_info_path().parent
    folders = sorted(p.parent for p in (top / FOLDER).glob("*/_build_info.json"))
    if not folders:
        return [Library(package_info.label or package_info.cuda_label, top, package_info)]
    libraries = []
    for folder in folders:
        info = _build_info.load(folder / "_build_info.json")
        # the package's version (label-free), the library's own build facts
        libraries.append(Library(folder.name, folder, replace(info, version=package_info.version)))
    return libraries


def why_not(library: Library, torch_version: str, torch_cuda: str | None, torch_hip: str | None,
            forced: bool = False) -> str | None:
    """Why `library` cannot serve this torch, or None when it can. Forced, the
    CPU library serves a CUDA torch too (CPU tensors only); nothing else is bent."""
    info = library.info
    lower, upper = info.torch_range
    running = _build_info._minor_tuple(torch_version)
    if running < lower or (upper is not None and running >= upper):
        return f"it serves {info.torch_range_text}"
    if torch_hip:
        return f"this torch is a ROCm build (HIP {torch_hip}), and my_ops has no ROCm kernels"
    if library.cuda is None:
        return (None if not torch_cuda or forced
                else f"this torch is a CUDA {torch_cuda} build, which gets a CUDA library")
    if not torch_cuda:
        return f"it has CUDA {info.cuda_version} kernels, but this torch is a CPU-only build"
    wanted = tuple(int(p) for p in torch_cuda.split(".")[:2])
    if library.cuda[0] != wanted[0]:
        return (f"it is built with CUDA {library.cuda[0]}.{library.cuda[1]}, "
                f"another major version than torch's {torch_cuda}")
    if library.cuda > wanted:
        return f"it is built with CUDA {library.cuda[0]}.{library.cuda[1]}, newer than torch's {torch_cuda}"
    return None


def choose(libraries: list[Library], torch_version: str, torch_cuda: str | None, torch_hip: str | None = None,
           forced: str | None = None) -> tuple[Library | None, dict[str, str]]:
    """(the library to load or None, label -> why each other one is not loaded)."""
    if len(libraries) == 1 and not forced:
        # a labelled wheel: nothing to choose, only whether it loads here (a ROCm torch: never)
        problem = (why_not(libraries[0], torch_version, torch_cuda, torch_hip) if torch_hip
                   else _build_info.torch_mismatch(libraries[0].info, torch_version, torch_cuda))
        return (None, {libraries[0].label: problem}) if problem else (libraries[0], {})
    reasons = {lib.label: why_not(lib, torch_version, torch_cuda, torch_hip) for lib in libraries}
    if forced:
        chosen = next((lib for lib in libraries if lib.label == forced), None)
        if chosen is None:
            return None, {lib.label: f"{FORCE_VARIABLE}={forced} names no library here" for lib in libraries}
        problem = why_not(chosen, torch_version, torch_cuda, torch_hip, forced=True)
        if problem is not None:
            return None, {**reasons, forced: f"{FORCE_VARIABLE}={forced}, but {problem}"}
        return chosen, {lib.label: f"{FORCE_VARIABLE}={forced}" for lib in libraries if lib is not chosen}
    fitting = [lib for lib in libraries if reasons[lib.label] is None]
    chosen = max(fitting, key=lambda lib: lib.cuda or (0, 0), default=None)
    for lib in fitting:
        if lib is not chosen:
            reasons[lib.label] = f"{chosen.label} is built with a newer CUDA that still fits"
    return chosen, {label: why for label, why in reasons.items() if chosen is None or label != chosen.label}


def unknown_forced(libraries: list[Library], forced: str | None) -> bool:
    """Whether MY_OPS_LIBRARY names a library this install does not have (a typo, or another wheel's)."""
    return bool(forced) and all(lib.label != forced for lib in libraries)


def mismatch_text(package_info: _build_info.BuildInfo, libraries: list[Library], reasons: dict[str, str],
                  torch_version: str, torch_cuda: str | None, torch_hip: str | None = None,
                  forced: str | None = None) -> str:
    """The ImportError for a torch no library of this install serves (or that MY_OPS_LIBRARY,
    `forced`, cannot have): what each library lacks, then the one next step for the cause at hand."""
    if len(libraries) == 1 and not forced and not torch_hip:
        return _build_info.torch_mismatch(libraries[0].info, torch_version, torch_cuda) or ""
    available = ", ".join(lib.label for lib in libraries)
    if forced:
        # without the variable, would a library of this install fit?
        unforced, _ = choose(libraries, torch_version, torch_cuda, torch_hip)
        instead = (f"unset {FORCE_VARIABLE} (this torch then gets {unforced.label})" if unforced
                   else f"unset {FORCE_VARIABLE}")
        if unknown_forced(libraries, forced):
            text = (f"my_ops {package_info.version}: {FORCE_VARIABLE}={forced} names no library here "
                    f"(available: {available}); {instead}, or set it to one of those.")
            if unforced is None:  # none of those loads here either: what would
                text += "\n" + _build_info.next_step(package_info, torch_version, torch_cuda, torch_hip)
            return text
        if unforced is not None:
            return (f"my_ops {package_info.version}: {reasons.get(forced, f'{FORCE_VARIABLE}={forced} does not load')}"
                    f" (torch {torch_version}, CUDA {torch_cuda or 'none'}); {instead}.")
    lines = [f"my_ops {package_info.version} has no kernel library for torch {torch_version} "
             f"(CUDA {torch_cuda or 'none'}); `python -m my_ops` shows the details:"]
    lines += [f"  {label}: {why}" for label, why in reasons.items()]
    lines.append(_build_info.next_step(package_info, torch_version, torch_cuda, torch_hip))
    return "\n".join(lines)


def load_extension(library: Library, package: str = "my_ops"):
    """Import the library's _C as <package>._C (which registers the ops)."""
    name = f"{package}._C"
    if name in sys.modules:
        return sys.modules[name]
    for suffix in importlib.machinery.EXTENSION_SUFFIXES:
        path = library.folder / f"_C{suffix}"
        if path.is_file():
            spec = importlib.util.spec_from_file_location(name, path)
            module = importlib.util.module_from_spec(spec)
            sys.modules[name] = module
            try:
                spec.loader.exec_module(module)
            except BaseException:
                del sys.modules[name]
                raise
            return module
    raise ImportError(f"my_ops: the {library.label} kernel library in {library.folder} has no _C module: the "
                      "install is incomplete; reinstall it: pip install --force-reinstall --no-deps my_ops")
