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
import re
import warnings
import zipfile

import torch

import my_ops

__all__ = ["check_package"]


def package_metadata(path: str | os.PathLike, model_name: str = "model") -> dict:
    """The package's `aot_inductor.metadata`, read from the archive's metadata
    files as LibTorch's AOTIModelPackageLoader::load_metadata_from_package reads
    them (data/aotinductor/<model_name>/*_metadata.json), without loading the model.
    ValueError, naming the file, for an archive that is not such a package."""
    where = f"my_ops.check_package: {os.fspath(path)}"
    try:
        with zipfile.ZipFile(path) as archive:
            texts = [archive.read(name) for name in archive.namelist()
                     if name.endswith("_metadata.json") and name.split("/")[-3:-1] == ["aotinductor", model_name]]
    except zipfile.BadZipFile as error:
        raise ValueError(f"{where} is not an AOTInductor package (not a zip archive: {error})") from None
    if texts:
        try:
            found = [json.loads(text) for text in texts]
        except (UnicodeDecodeError, json.JSONDecodeError) as error:
            raise ValueError(f"{where}: its metadata is not JSON ({error})") from None
        if not all(isinstance(m, dict) for m in found):
            raise ValueError(f"{where}: its metadata is not a JSON object")
        if any(m != found[0] for m in found[1:]):
            raise ValueError(f"{where}: its {len(found)} metadata files of model {model_name!r} disagree")
        for key in ("my_ops_version", "torch_version"):
            value = found[0].get(key)
            if value is not None and (not isinstance(value, str) or "\0" in value):
                raise ValueError(f"{where}: its metadata records {key} {value!r}, not a version string")
        return found[0]
    raise ValueError(f"my_ops.check_package: {os.fspath(path)} holds no AOTInductor model named {model_name!r} "
                     "(no data/aotinductor/<model_name>/*_metadata.json): is it a package of "
                     "torch._inductor.aoti_compile_and_package?")


def package_version(path: str | os.PathLike, model_name: str = "model") -> str | None:
    """The my_ops version the package records, None when it records none."""
    return package_metadata(path, model_name).get("my_ops_version")


def _torch_minor(version: str) -> tuple[int, int] | None:
    found = re.match(r"(\d+)\.(\d+)", version)
    return (int(found[1]), int(found[2])) if found else None


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
    A package that records no my_ops version only warns: it cannot be checked.
    A package that records the torch that compiled it (`torch_version`) is
    refused under another torch minor: PyTorch makes no compatibility promise
    for .pt2 packages across releases (docs/deploying.md)."""
    metadata = package_metadata(path, model_name)
    compiled_with = metadata.get("torch_version")
    if compiled_with is not None and _torch_minor(str(compiled_with)) != _torch_minor(torch.__version__):
        raise RuntimeError(f"my_ops.check_package: {os.fspath(path)}: the package was compiled with torch "
                           f"{compiled_with}, but this is torch {torch.__version__}: PyTorch makes no compatibility "
                           "promise for AOTInductor packages across releases; compile it again with this torch")
    recorded = metadata.get("my_ops_version")
    if recorded is None:
        warnings.warn(f"my_ops.check_package: {os.fspath(path)} does not record the my_ops version that compiled "
                      "it (inductor_configs={'aot_inductor.metadata': {'my_ops_version': my_ops.__version__}}): "
                      f"not checked against this my_ops, {my_ops.build_info.version}", stacklevel=2)
        return
    problem = _package_problem()(recorded.encode(), None).decode()
    if problem:
        raise RuntimeError(f"my_ops.check_package: {os.fspath(path)}: {problem}")
