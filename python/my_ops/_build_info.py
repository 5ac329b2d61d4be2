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


def _pinned_version(info: BuildInfo) -> tuple[str, str]:
    """(the version a pin names, the index root): this release's whole base version and
    <index>/whl (a patch release's ==1.0.1+cu128 must not send anyone back to 1.0.0, which
    ==1.0+cu128 would); a nightly's whole version and <index>/whl/nightly."""
    base = info.version.split("+")[0]
    if ".dev" in base:
        return base, f"{info.index_url}/whl/nightly"
    return base, f"{info.index_url}/whl"


def _pairs(info: BuildInfo) -> list[tuple[tuple[int, int], str]]:
    """supported_pairs as ((major, minor), label): '2.10-cu128' -> ((2, 10), 'cu128')."""
    pairs = []
    for pair in info.supported_pairs:
        minor, _, label = pair.partition("-")
        pairs.append((_minor_tuple(minor), label))
    return pairs


def _label_cuda(label: str) -> tuple[int, int] | None:
    """'cu128' -> (12, 8), 'cu130' -> (13, 0); None for 'cpu'."""
    match = re.fullmatch(r"cu(\d+)(\d)", label)
    return (int(match.group(1)), int(match.group(2))) if match else None


def wheel_for(info: BuildInfo, torch_version: str, torch_cuda: str | None) -> str | None:
    """The pip command of the published my_ops wheel that loads into this torch, or None.

    The wheel of this torch's own pair (its minor and CUDA label) when my_ops
    publishes one; else, for a CUDA torch, the pair of its minor whose toolkit is
    of torch's CUDA major and no newer than torch's CUDA (torch 2.11+cu129: cu128);
    else, for a torch a stable wheel serves, the per-CUDA index of such a toolkit.
    """
    pin, root = _pinned_version(info)
    minor, label = _minor_tuple(torch_version), cuda_label(torch_cuda)
    pairs = _pairs(info)
    wanted = tuple(int(p) for p in torch_cuda.split(".")[:2]) if torch_cuda else None

    def fits(candidate: str) -> bool:  # (the CPU build fits a CPU torch; a CUDA one, as the import guard says)
        cuda = _label_cuda(candidate)
        if wanted is None or cuda is None:
            return wanted is None and cuda is None
        return cuda[0] == wanted[0] and cuda <= wanted

    newest = {}  # the newest fitting label of this torch's minor, and of any minor a stable wheel serves
    stable_floor = info.torch_range[0] if info.abi == "stable" else None
    for pair_minor, pair_label in sorted(pairs, key=lambda p: _label_cuda(p[1]) or (0, 0)):
        if fits(pair_label):
            if pair_minor == minor:
                newest["pair"] = pair_label
            if stable_floor and pair_minor >= stable_floor:
                newest["stable"] = pair_label
    if (minor, label) in pairs or not pairs:  # (a build record without pairs: this torch's own)
        chosen, folder = label, f"torch{minor[0]}.{minor[1]}/{label}"
    elif "pair" in newest:
        chosen = newest["pair"]
        folder = f"torch{minor[0]}.{minor[1]}/{chosen}"
    elif "stable" in newest and minor >= stable_floor:
        chosen = newest["stable"]
        folder = chosen  # the per-CUDA index: any torch the stable wheels serve
    else:
        return None
    return f"pip install my_ops=={pin}+{chosen} --extra-index-url {root}/{folder}/"


def install_command(info: BuildInfo, torch_version: str, torch_cuda: str | None) -> str:
    """The pip command for the my_ops wheel that fits this torch, or, where my_ops
    publishes none, what to do instead."""
    command = wheel_for(info, torch_version, torch_cuda)
    if command:
        return command
    minor = minor_of(torch_version)
    label = cuda_label(torch_cuda)
    pairs = ", ".join(info.supported_pairs)
    return (f"my_ops publishes no wheel for torch {minor} with {label}; supported pairs: "
            f"{pairs}. Install one of those torch builds, or build my_ops from source "
            f"against this torch: {build_from_source(info.version, commit=info.commit)}")


TORCH_INDEX = "https://download.pytorch.org/whl"


def _same_variant_index(info: BuildInfo, torch_version: str) -> str:
    """' --index-url <PyTorch's index of this torch's variant>' for a torch from such an index
    (a +cpu or +cuXYZ version), so an upgrade keeps it CPU-only or on its CUDA major (PyPI's
    Linux torch is a CUDA 13 build); the CUDA variant is the one the newest supported torch
    minor publishes for that major. Empty for PyPI's own torch (no local label)."""
    label = torch_version.partition("+")[2]
    if label == "cpu":
        return f" --index-url {TORCH_INDEX}/cpu"
    if not (label.startswith("cu") and label[2:].isdigit()):
        return ""
    lower, _ = info.torch_range
    same_major = [(minor, pair_label) for minor, pair_label in _pairs(info)
                  if minor >= lower and pair_label.startswith(label[:4]) and pair_label[2:].isdigit()]
    return f" --index-url {TORCH_INDEX}/{max(same_major)[1]}" if same_major else ""


def next_step(info: BuildInfo, torch_version: str, torch_cuda: str | None, torch_hip: str | None = None) -> str:
    """The one thing to do when no library of this install loads into the given torch:
    upgrade an older torch than the stable ABI serves, install the wheel that fits,
    or build from source where no published wheel does."""
    lower, _ = info.torch_range
    running = _minor_tuple(torch_version)
    if torch_hip:
        return ("my_ops has no ROCm kernels: use it with a CUDA or CPU-only torch, e.g. "
                "pip install --force-reinstall torch --index-url https://download.pytorch.org/whl/cpu")
    if info.abi == "stable" and running < lower:
        text = (f"Upgrade torch to >= {lower[0]}.{lower[1]} (installing my_ops never replaces your torch): "
                f'pip install --upgrade "torch>={lower[0]}.{lower[1]}"{_same_variant_index(info, torch_version)}')
        pinned = wheel_for(info, torch_version, torch_cuda)
        if pinned and f"/torch{running[0]}.{running[1]}/" in pinned:
            text += f"; or, to keep torch {running[0]}.{running[1]}, the wheel built for it: {pinned}"
        return text
    command = wheel_for(info, torch_version, torch_cuda)
    if command:
        return "Install the my_ops wheel for this torch:\n  " + command
    return install_command(info, torch_version, torch_cuda)


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
        f"(CUDA {torch_cuda or 'none'}): " + "; ".join(problems) + " (`python -m my_ops` shows the details).\n"
        + next_step(info, torch_version, torch_cuda)
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
