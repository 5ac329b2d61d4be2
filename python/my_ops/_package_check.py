"""my_ops.check_package: whether this my_ops serves an AOTInductor package
(docs/deploying.md, section 4), asked before torch loads it: torch's loader
first looks up every op the package calls, so a package of a newer my_ops
that calls an op this one lacks would fail there with "Could not find schema
for my_ops::<op>", which reads as a missing `import my_ops`.
"""

from __future__ import annotations

import ctypes
import functools
import json
import os
import warnings
import zipfile

import my_ops

__all__ = ["check_package"]


def package_version(path: str | os.PathLike, model_name: str = "model") -> str | None:
    """The my_ops version the package records (its `aot_inductor.metadata`),
    None when it records none. Read from the archive's metadata files, as
    LibTorch's AOTIModelPackageLoader::load_metadata_from_package reads them
    (data/aotinductor/<model_name>/*_metadata.json), without loading the model."""
    with zipfile.ZipFile(path) as archive:
        for name in archive.namelist():
            parts = name.split("/")
            if name.endswith("_metadata.json") and parts[-3:-1] == ["aotinductor", model_name]:
                return json.loads(archive.read(name)).get("my_ops_version")
    raise ValueError(f"my_ops.check_package: {os.fspath(path)} holds no AOTInductor model named {model_name!r} "
                     "(no data/aotinductor/<model_name>/*_metadata.json): is it a package of "
                     "torch._inductor.aoti_compile_and_package?")


@functools.cache
def _package_problem():
    """The loaded kernel library's my_ops_package_problem (the rule in one place, C)."""
    found = sorted(my_ops.library.folder.glob("libmy_ops.*"))
    if not found:  # (a library without a C++ side: no version rule to ask)
        raise RuntimeError(f"my_ops.check_package: no libmy_ops library in {my_ops.library.folder}")
    problem = ctypes.CDLL(str(found[0])).my_ops_package_problem  # (the library import my_ops loaded)
    problem.restype = ctypes.c_char_p
    problem.argtypes = [ctypes.c_char_p, ctypes.c_char_p]
    return problem


def check_package(path: str | os.PathLike, model_name: str = "model") -> None:
    """Raise RuntimeError if this my_ops may not serve the AOTInductor package
    at `path`: one compiled by a my_ops of another major version, or a newer one
    (whose op arguments torch would match to this library's by name, dropping
    what it lacks, silently). Call it before torch._inductor.aoti_load_package.
    A package that records no my_ops version only warns: it cannot be checked."""
    recorded = package_version(path, model_name)
    if recorded is None:
        warnings.warn(f"my_ops.check_package: {os.fspath(path)} does not record the my_ops version that compiled "
                      "it (inductor_configs={'aot_inductor.metadata': {'my_ops_version': my_ops.__version__}}): "
                      f"not checked against this my_ops, {my_ops.build_info.version}", stacklevel=2)
        return
    problem = _package_problem()(recorded.encode(), None).decode()
    if problem:
        raise RuntimeError(f"my_ops.check_package: {os.fspath(path)}: {problem}")
