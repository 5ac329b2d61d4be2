"""The wheel's record of how it was built (my_ops/_build_info.json, written
by CMake) and the checks that compare it with the running torch and GPUs.

Pure Python with no import of my_ops._C, so it works, and explains itself,
even when the extension cannot be loaded.
"""

from __future__ import annotations

import json
import re
import sys
from dataclasses import dataclass, field
from pathlib import Path

BUILD_INFO_FILE = Path(__file__).with_name("_build_info.json")
DEFAULT_INDEX_URL = "https://my-ops.github.io/my_ops"


REPOSITORY_URL = "https://github.com/my-ops/my_ops"


def build_from_source(version: str = "", arch_list: str = "", commit: str = "") -> str:
    """The commands that build my_ops `version` from source against the installed torch and
    install it in place of what is installed: the build tools first (no build isolation, so
    the build sees this torch), no cached wheel (pip would reuse one built for another torch
    or arch list), the sdist of a release, the commit of a nightly (nightlies have no sdist
    on PyPI)."""
    arch = f'TORCH_CUDA_ARCH_LIST="{arch_list}" ' if arch_list else ""
    base = version.split("+")[0]
    if ".dev" in base and commit:
        source = f'"my_ops @ git+{REPOSITORY_URL}@{commit}"'
    else:
        source = f"--no-binary my_ops my_ops=={base}" if base else "--no-binary my_ops my_ops"
    return ("pip install scikit-build-core cmake ninja && "
            f"{arch}pip install --no-build-isolation --no-cache-dir --force-reinstall --no-deps {source}")


@dataclass(frozen=True)
class BuildInfo:
    version: str
    label: str  # "cu130", "cpu", or "" (the PyPI default wheel)
    torch_version: str  # the torch it was compiled against, e.g. "2.11.0+cu130"
    torch_cuda: str  # torch.version.cuda of that torch ("" for a CPU torch)
    cuda_version: str  # nvcc used for the kernels ("" for a CPU-only build)
    arch_list: str  # TORCH_CUDA_ARCH_LIST, e.g. "7.5;8.0;9.0+PTX"
    cxx11_abi: bool
    build_date: str
    commit: str
    platform: str = ""
    abi: str = "legacy"  # "stable": LibTorch stable ABI, serves every torch in torch_requirement
    torch_requirement: str = ""  # the wheel's pin, e.g. "torch>=2.10" or "torch>=2.6,<2.7"
    index_url: str = DEFAULT_INDEX_URL
    supported_pairs: tuple[str, ...] = field(default_factory=tuple)

    @property
    def torch_minor(self) -> str:
        return minor_of(self.torch_version)

    @property
    def torch_range(self) -> tuple[tuple[int, int], tuple[int, int] | None]:
        """(lowest minor, first minor not served or None) from torch_requirement;
        a build without one serves its own minor only."""
        lower = upper = None
        for part in self.torch_requirement.removeprefix("torch").split(","):
            part = part.strip()
            if part.startswith(">="):
                lower = _minor_tuple(part[2:])
            elif part.startswith("<"):
                upper = _minor_tuple(part[1:])
        if lower is None:
            own = _minor_tuple(self.torch_version)
            return own, (own[0], own[1] + 1)
        return lower, upper

    @property
    def torch_range_text(self) -> str:
        lower, upper = self.torch_range
        if upper is None:
            return f"torch >= {lower[0]}.{lower[1]}"
        if upper == (lower[0], lower[1] + 1):
            return f"torch {lower[0]}.{lower[1]}"
        return f"torch >= {lower[0]}.{lower[1]}, < {upper[0]}.{upper[1]}"

    @property
    def has_cuda(self) -> bool:
        return bool(self.cuda_version)

    @property
    def cuda_label(self) -> str:
        """'cu130' from the CUDA version of the build ('cpu' without CUDA)."""
        return cuda_label(self.cuda_version) if self.cuda_version else "cpu"

    def as_dict(self) -> dict:
        return {k: getattr(self, k) for k in self.__dataclass_fields__}


def minor_of(version: str) -> str:
    """'2.11.0+cu130' -> '2.11'."""
    match = re.match(r"(\d+)\.(\d+)", version)
    if not match:
        raise ValueError(f"not a version: {version!r}")
    return f"{match.group(1)}.{match.group(2)}"


def _minor_tuple(version: str) -> tuple[int, int]:
    major, minor = minor_of(version).split(".")
    return int(major), int(minor)


def cuda_label(cuda_version: str | None) -> str:
    """'13.0' -> 'cu130'; None or '' -> 'cpu'."""
    if not cuda_version:
        return "cpu"
    major, minor = cuda_version.split(".")[:2]
    return f"cu{major}{minor}"


def build_info_path() -> Path:
    """Where the build wrote _build_info.json: beside this file in a wheel; in an
    editable install (pip install -e), in the package's installed folder, which
    the package's __path__ lists next to the source folder."""
    package = sys.modules.get(__package__ or "my_ops")
    for folder in [Path(__file__).parent, *map(Path, getattr(package, "__path__", []))]:
        if (folder / BUILD_INFO_FILE.name).is_file():
            return folder / BUILD_INFO_FILE.name
    return BUILD_INFO_FILE


def load(path: Path | None = None) -> BuildInfo:
    path = path or build_info_path()
    try:
        data = json.loads(path.read_text())
    except FileNotFoundError:
        raise ImportError(
            f"my_ops: {path.name} is missing: this is not an installed my_ops build. Install a "
            f"wheel (pip install my_ops), or build one from source: {build_from_source()} "
            "(in a checkout: pip install scikit-build-core cmake ninja && pip install --no-build-isolation .)."
        ) from None
    data.pop("schema", None)
    data["supported_pairs"] = tuple(data.get("supported_pairs") or ())
    known = BuildInfo.__dataclass_fields__
    return BuildInfo(**{k: v for k, v in data.items() if k in known})


def install_command(info: BuildInfo, torch_version: str, torch_cuda: str | None) -> str:
    """The pip command for the my_ops wheel that fits this torch."""
    minor = minor_of(torch_version)
    label = cuda_label(torch_cuda)
    base = ".".join(info.version.split("+")[0].split(".")[:2])
    pair = f"{minor}-{label}"
    command = (f"pip install --force-reinstall --no-deps my_ops=={base}+{label} "
               f"--extra-index-url {info.index_url}/whl/torch{minor}/{label}/")
    if info.supported_pairs and pair not in info.supported_pairs:
        pairs = ", ".join(info.supported_pairs)
        return (f"my_ops publishes no wheel for torch {minor} with {label}; supported pairs: "
                f"{pairs}. Install one of those torch builds, or build my_ops from source "
                f"against this torch: {build_from_source(info.version, commit=info.commit)}")
    return command


def torch_mismatch(info: BuildInfo, torch_version: str, torch_cuda: str | None) -> str | None:
    """Why this build cannot load into the given torch, or None when it can."""
    problems = []
    lower, upper = info.torch_range
    running = _minor_tuple(torch_version)
    if running < lower or (upper is not None and running >= upper):
        if info.abi == "stable":
            problems.append(f"it uses the LibTorch stable ABI of {info.torch_range_text}")
        else:
            problems.append(f"it was compiled against torch {info.torch_version}, and the C++ ABI "
                            "of torch changes between minor versions")
    if info.has_cuda:
        if not torch_cuda:
            problems.append(f"it has CUDA {info.cuda_version} kernels, but this torch is a "
                            "CPU-only build")
        elif torch_cuda.split(".")[0] != info.cuda_version.split(".")[0]:
            problems.append(f"its kernels were built with CUDA {info.cuda_version}, but this torch "
                            f"uses CUDA {torch_cuda} (a different CUDA major version)")
    if not problems:
        return None
    return (
        f"my_ops {info.version} does not fit torch {torch_version} "
        f"(CUDA {torch_cuda or 'none'}): " + "; ".join(problems) + ".\n"
        "Install the my_ops wheel for this torch:\n  "
        + install_command(info, torch_version, torch_cuda)
        + "\n(`python -m my_ops` shows the details.)"
    )


def check_torch(info: BuildInfo, torch_version: str, torch_cuda: str | None) -> None:
    problem = torch_mismatch(info, torch_version, torch_cuda)
    if problem:
        raise ImportError(problem)


def parse_arch_list(arch_list: str) -> list[tuple[int, int, bool]]:
    """'7.5;9.0+PTX' -> [(7, 5, False), (9, 0, True)]: (major, minor, has PTX)."""
    archs = []
    for entry in re.split(r"[;, ]+", arch_list.strip()):
        if not entry:
            continue
        match = re.fullmatch(r"(\d+)\.(\d+)[af]?(\+PTX)?", entry)
        if not match:
            raise ValueError(f"bad TORCH_CUDA_ARCH_LIST entry {entry!r}")
        archs.append((int(match.group(1)), int(match.group(2)), bool(match.group(3))))
    return archs


def arch_covers(arch_list: str, capability: tuple[int, int]) -> bool:
    """Whether kernels built for `arch_list` run on a GPU of compute `capability`.

    SASS for sm_XY runs on sm_XZ with Z >= Y (same major); PTX for sm_XY is
    compiled by the driver for any GPU of compute capability >= X.Y.
    """
    major, minor = capability
    for arch_major, arch_minor, ptx in parse_arch_list(arch_list):
        if arch_major == major and arch_minor <= minor:
            return True
        if ptx and (arch_major, arch_minor) <= (major, minor):
            return True
    return False


def arch_mismatch(info: BuildInfo, device_name: str, capability: tuple[int, int]) -> str | None:
    """Why this build has no kernel for the GPU, or None when it has one."""
    if not info.has_cuda:
        return (f"my_ops {info.version} is a CPU-only build and has no CUDA kernels for "
                f"{device_name}; install a +cuXYZ wheel (`python -m my_ops` prints the command).")
    if arch_covers(info.arch_list, capability):
        return None
    sm = f"sm_{capability[0]}{capability[1]}"
    return (f"my_ops {info.version} has no kernels for {device_name} ({sm}, compute capability "
            f"{capability[0]}.{capability[1]}): this wheel was built for TORCH_CUDA_ARCH_LIST="
            f"{info.arch_list}. Build my_ops for this GPU with "
            f"{build_from_source(info.version, f'{capability[0]}.{capability[1]}', info.commit)} (a CUDA toolkit on "
            f"the PATH; see docs/building.md), or use a GPU the wheel covers.")
