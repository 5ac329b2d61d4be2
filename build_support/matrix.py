#!/usr/bin/env python3
"""Read the build matrix (build_support/matrix.toml) and answer questions about it.

Every stage asks this script instead of repeating the data:

  matrix.py arch-list --cuda 13.0 [--platform linux-aarch64]
                                           TORCH_CUDA_ARCH_LIST for a CUDA version on a platform
                                           (default: this host's)
  matrix.py pairs [--platform linux]       one "torch-cuXYZ" pair per line (the test axis)
  matrix.py builds [--platform linux]      one build name per line (the build axis)
  matrix.py pair 2.11-cu130                everything about one pair, as JSON
  matrix.py build cu130                    everything about one build (or a pair's build)
  matrix.py torch-requirement --torch 2.11 the torch pin of a wheel built against that torch
  matrix.py gha --event push --job test-cpu the GitHub Actions matrix of one job, as JSON
  matrix.py readme-table [--update docs/install.md]  the supported-pairs table
  matrix.py build-info --torch 2.11.0      ABI family, torch pin, index URL and pairs, for the build info
  matrix.py default linux_platform         one value of [defaults]
"""

from __future__ import annotations

import argparse
import json
import os
import platform as host
import re
import sys
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

if sys.version_info >= (3, 11):
    import tomllib
else:  # pragma: no cover - Python < 3.11 builds
    try:
        import tomli as tomllib
    except ImportError:
        sys.exit("build_support/matrix.py needs Python >= 3.11 or the 'tomli' package")

MATRIX_FILE = Path(__file__).with_name("matrix.toml")
PLATFORMS = ("linux", "linux-aarch64", "windows", "macos")


class _TorchAndCuda:
    """What a build and a pair both derive from their torch and CUDA version."""

    cuda: str
    torch_build_version: str
    torch_on_pypi: bool

    @property
    def label(self) -> str:
        return cuda_label(self.cuda)

    @property
    def torch_index_url(self) -> str:
        # TORCH_INDEX_URL: another PyTorch index (ci/plan/check-sources.py reads the same
        # variable), e.g. the workflow test's stand-in on 127.0.0.1
        base = os.environ.get("TORCH_INDEX_URL", "https://download.pytorch.org/whl").rstrip("/")
        return f"{base}/{self.label}"

    @property
    def torch_install_args(self) -> list[str]:
        """pip arguments that install its torch on Linux x86_64 (torch_install_args() for others)."""
        return torch_install_args(self, "linux")

    def arch_list_for(self, platform: str) -> str:
        """TORCH_CUDA_ARCH_LIST of its wheel for `platform` (Linux aarch64 has its own)."""
        return dict(self.platform_arch_lists).get(platform, self.arch_list)  # type: ignore[attr-defined]


@dataclass(frozen=True)
class Build(_TorchAndCuda):
    """One wheel build: a CUDA version and the torch it is compiled against.

    A stable build (torch >= stable_abi_min) serves every stable pair of its
    CUDA version; a legacy build serves exactly one pair.
    """

    abi: str  # "stable" or "legacy"
    torch: str  # the torch minor built against, "2.11"
    cuda: str  # "13.0"
    torch_build_version: str  # "2.11.0"
    torch_requirement: str  # the wheel's pin: "torch>=2.10" or "torch>=2.6,<2.7"
    platforms: tuple[str, ...]
    arch_list: str  # Linux x86_64's and Windows' list (arch_list_for: any platform's)
    linux_image: str
    windows_toolkit: str
    pip_toolkit: tuple[str, ...]
    torch_on_pypi: bool  # PyPI's plain `pip install torch==X.Y.0` is this variant
    serves: tuple[str, ...]  # the pairs whose users install this wheel
    platform_arch_lists: tuple[tuple[str, str], ...] = ()  # (platform, list) where it differs

    @property
    def name(self) -> str:
        """'cu130' for a stable build, '2.6-cu124' for a legacy one."""
        return self.label if self.abi == "stable" else f"{self.torch}-{self.label}"

    def as_dict(self) -> dict[str, Any]:
        data = asdict(self)
        data.update(label=self.label, name=self.name, torch_index_url=self.torch_index_url,
                    torch_install_args=" ".join(self.torch_install_args))
        return data


@dataclass(frozen=True)
class Pair(_TorchAndCuda):
    """One (torch minor, CUDA version) combination users run, and the build that serves it."""

    torch: str  # "2.11"
    cuda: str  # "13.0"
    torch_build_version: str  # "2.11.0": the release the pair is tested with
    platforms: tuple[str, ...]
    python_oldest: str
    python_newest: str
    arch_list: str  # Linux x86_64's and Windows' list (arch_list_for: any platform's)
    linux_image: str
    windows_toolkit: str
    pip_toolkit: tuple[str, ...]
    torch_on_pypi: bool  # PyPI's plain `pip install torch==X.Y.0` is this variant
    abi: str  # "stable" or "legacy"
    build: str  # name of the Build whose wheel this pair installs
    torch_requirement: str  # that wheel's torch pin
    platform_arch_lists: tuple[tuple[str, str], ...] = ()  # (platform, list) where it differs

    @property
    def name(self) -> str:
        return f"{self.torch}-{self.label}"

    @property
    def index_path(self) -> str:
        """Where this pair's wheels live in the package index."""
        return f"whl/torch{self.torch}/{self.label}/"

    def as_dict(self) -> dict[str, Any]:
        data = asdict(self)
        data.update(
            label=self.label,
            name=self.name,
            torch_index_url=self.torch_index_url,
            torch_install_args=" ".join(self.torch_install_args),
            index_path=self.index_path,
        )
        return data


def torch_install_args(item: "Build | Pair", platform: str) -> list[str]:
    """pip arguments that install the torch of a build or pair on a platform.

    PyPI's plain `torch==X.Y.Z` is one CUDA variant on Linux x86_64 and the
    CPU build on macOS (PyTorch's only macOS build); every other platform
    and variant comes from PyTorch's own index.
    """
    args = [f"torch=={item.torch_build_version}"]
    if not torch_from_pypi(item, platform):
        args += ["--index-url", item.torch_index_url]
    return args


def torch_from_pypi(item: "Build | Pair", platform: str) -> bool:
    """Whether the torch of a build or pair on a platform is PyPI's plain `torch`."""
    return (item.torch_on_pypi and platform == "linux") or (platform == "macos" and item.cuda == CPU)


CPU = "cpu"  # the CPU-only backend, listed among the CUDA versions of matrix.toml


def cuda_label(cuda: str) -> str:
    """'12.4' -> 'cu124'; 'cpu' -> 'cpu'."""
    if cuda == CPU:
        return CPU
    major, minor = cuda.split(".")[:2]
    return f"cu{major}{minor}"


def _minor_key(version: str) -> tuple[int, int]:
    """'2.11' -> (2, 11); the CPU backend sorts before every CUDA version."""
    if version == CPU:
        return (0, 0)
    major, minor = (int(p) for p in version.split(".")[:2])
    return major, minor


def abi_of(torch_version: str, data: dict[str, Any] | None = None) -> str:
    """'stable' for torch >= [defaults].stable_abi_min, else 'legacy'."""
    data = data or load()
    stable_min = data["defaults"]["stable_abi_min"]
    return "stable" if _minor_key(torch_version) >= _minor_key(stable_min) else "legacy"


def torch_requirement(torch_version: str, data: dict[str, Any] | None = None) -> str:
    """The pin of a wheel built against this torch: '2.11' -> 'torch>=2.10'; '2.6' -> 'torch>=2.6,<2.7'."""
    data = data or load()
    if abi_of(torch_version, data) == "stable":
        return f"torch>={data['defaults']['stable_abi_min']}"
    major, minor = _minor_key(torch_version)
    return f"torch>={major}.{minor},<{major}.{minor + 1}"


def wheel_dependency(torch_version: str, data: dict[str, Any] | None = None) -> str:
    """The Requires-Dist on torch of a wheel built against this torch.

    A stable wheel says only `torch`: an installed torch of any version
    satisfies it, so installing my_ops never replaces the user's torch (an
    older one than the stable ABI serves gets the import guard's clear
    error instead), and a fresh environment still gets the newest torch. A
    legacy wheel pins its minor, as its C++ ABI needs exactly that one.
    """
    data = data or load()
    return "torch" if abi_of(torch_version, data) == "stable" else torch_requirement(torch_version, data)


def requires_python(torch_version: str, data: dict[str, Any] | None = None) -> str:
    """The Requires-Python of a wheel built against this torch: the oldest Python
    of the torch minors it serves ('>=3.10' for a stable wheel: torch 2.10 needs
    it; '>=3.9' for torch 2.6's legacy wheel). Without it, pip on a Python no
    served torch supports would pair my_ops with an older torch that cannot load it."""
    data = data or load()
    served = [minor for minor in data["torch"]
              if (abi_of(torch_version, data) == "stable" and abi_of(minor, data) == "stable")
              or _minor_key(minor) == _minor_key(torch_version)]
    if not served:
        return f">={data['defaults']['base_python']}"
    oldest = min((data["torch"][minor]["python"][0] for minor in served), key=_minor_key)
    return f">={oldest}"


# GitHub-hosted runner images: the build and CPU-test jobs take their `runs-on`
# from [defaults], and only the GPU job may reach the self-hosted runner (its
# label is written in wheels.yml). A label of another shape here is a mistake.
_HOSTED_RUNNER = re.compile(r"(ubuntu|windows|macos)-[0-9][0-9a-z.-]*")


def load(path: Path = MATRIX_FILE) -> dict[str, Any]:
    with path.open("rb") as f:
        data = tomllib.load(f)
    for key, label in data.get("defaults", {}).items():
        if key.endswith("_runner") and not (isinstance(label, str) and _HOSTED_RUNNER.fullmatch(label)):
            raise SystemExit(f"matrix.toml: [defaults] {key} = {label!r} is not a GitHub-hosted runner image "
                             "(ubuntu-*, windows-*, macos-* with a version): builds and CPU tests run on "
                             "GitHub's runners; only wheels.yml's GPU job names the self-hosted one")
    return data


def _pair_specs(data: dict[str, Any]):
    """(torch minor, torch spec, cuda, cuda spec, platforms) for every pair."""
    for torch_minor, spec in data["torch"].items():
        for cuda in spec["cuda"]:
            if cuda not in data["cuda"]:
                raise SystemExit(f"matrix.toml: torch {torch_minor} names CUDA {cuda}, "
                                 f"which has no [cuda.\"{cuda}\"] table")
            platforms = ("linux",)
            if cuda in spec.get("aarch64", []):
                platforms += ("linux-aarch64",)
            if cuda not in spec.get("linux_only", []):
                platforms += ("windows",)
            if cuda in spec.get("macos", []):
                platforms += ("macos",)
            yield torch_minor, spec, cuda, data["cuda"][cuda], platforms


def _platform_arch_lists(cuda_spec: dict[str, Any]) -> tuple[tuple[str, str], ...]:
    """(platform, arch list) of the platforms whose list is not the CUDA version's `arch_list`."""
    return tuple((p, cuda_spec[f"{p}_arch_list"]) for p in PLATFORMS if f"{p}_arch_list" in cuda_spec)


def _build(data: dict[str, Any], abi: str, torch_minor: str, spec: dict, cuda: str,
           platforms: tuple[str, ...], serves: tuple[str, ...]) -> Build:
    cuda_spec = data["cuda"][cuda]
    return Build(abi=abi, torch=torch_minor, cuda=cuda, torch_build_version=spec["build_version"],
                 torch_requirement=torch_requirement(torch_minor, data), platforms=platforms,
                 arch_list=cuda_spec["arch_list"], linux_image=cuda_spec["linux_image"],
                 windows_toolkit=cuda_spec["windows_toolkit"], pip_toolkit=tuple(cuda_spec.get("pip_toolkit", [])),
                 torch_on_pypi=spec.get("pypi_cuda") == cuda, serves=serves,
                 platform_arch_lists=_platform_arch_lists(cuda_spec))


def all_builds(data: dict[str, Any] | None = None) -> list[Build]:
    """The build axis: one stable build per CUDA version, one legacy build per older pair."""
    data = data or load()
    stable: dict[str, list] = {}
    builds = []
    for torch_minor, spec, cuda, _, platforms in _pair_specs(data):
        if abi_of(torch_minor, data) == "stable":
            stable.setdefault(cuda, []).append((torch_minor, spec, platforms))
        else:
            builds.append(_build(data, "legacy", torch_minor, spec, cuda, platforms,
                                 (f"{torch_minor}-{cuda_label(cuda)}",)))
    preferred = _minor_key(data["defaults"]["stable_build_torch"])
    for cuda, users in stable.items():
        users.sort(key=lambda u: _minor_key(u[0]))
        # the preferred minor, else the oldest later one, else the newest earlier one
        later = [u for u in users if _minor_key(u[0]) >= preferred]
        torch_minor, spec, _ = later[0] if later else users[-1]
        platforms = tuple(p for p in PLATFORMS if any(p in u[2] for u in users))
        builds.append(_build(data, "stable", torch_minor, spec, cuda, platforms,
                             tuple(f"{u[0]}-{cuda_label(cuda)}" for u in users)))
    return sorted(builds, key=lambda b: (b.abi != "stable", _minor_key(b.cuda), _minor_key(b.torch)))


def all_pairs(data: dict[str, Any] | None = None) -> list[Pair]:
    data = data or load()
    build_of = {pair: build for build in all_builds(data) for pair in build.serves}
    pairs = []
    for torch_minor, spec, cuda, cuda_spec, platforms in _pair_specs(data):
        name = f"{torch_minor}-{cuda_label(cuda)}"
        pairs.append(Pair(
            torch=torch_minor,
            cuda=cuda,
            torch_build_version=spec["build_version"],
            platforms=platforms,
            python_oldest=spec["python"][0],
            python_newest=spec["python"][-1],
            arch_list=cuda_spec["arch_list"],
            linux_image=cuda_spec["linux_image"],
            windows_toolkit=cuda_spec["windows_toolkit"],
            pip_toolkit=tuple(cuda_spec.get("pip_toolkit", [])),
            torch_on_pypi=spec.get("pypi_cuda") == cuda,
            abi=build_of[name].abi,
            build=build_of[name].name,
            torch_requirement=build_of[name].torch_requirement,
            platform_arch_lists=_platform_arch_lists(cuda_spec),
        ))
    return pairs


def find_pair(name: str, data: dict[str, Any] | None = None) -> Pair:
    """A pair by name: '2.11-cu130' (or '2.11-13.0')."""
    pairs = all_pairs(data)
    for pair in pairs:
        if name in (pair.name, f"{pair.torch}-{pair.cuda}"):
            return pair
    known = ", ".join(p.name for p in pairs)
    raise SystemExit(f"no pair {name!r} in matrix.toml; known pairs: {known}")


def find_build(name: str, data: dict[str, Any] | None = None) -> Build:
    """A build by name ('cu130', '2.6-cu124'), or the build that serves a pair ('2.13-cu130')."""
    data = data or load()
    builds = all_builds(data)
    for build in builds:
        if name == build.name or name in build.serves:
            return build
    known = ", ".join(b.name for b in builds)
    raise SystemExit(f"no build {name!r} in matrix.toml (nor a pair of one); known builds: {known}")


def default_pair(data: dict[str, Any] | None = None) -> Pair:
    data = data or load()
    return find_pair(data["defaults"]["default_pair"], data)


def host_platform() -> str:
    """This host's platform as matrix.toml names it (ci/lib/host-platform.sh's answer)."""
    machine = host.machine().lower()
    if sys.platform.startswith("linux"):
        return "linux-aarch64" if machine in ("aarch64", "arm64") else "linux"
    return "windows" if sys.platform == "win32" else "macos"


def arch_list(cuda: str, data: dict[str, Any] | None = None, platform: str | None = None) -> str:
    """TORCH_CUDA_ARCH_LIST of a CUDA version on a platform (default: this host's)."""
    data = data or load()
    major_minor = ".".join(cuda.split(".")[:2])
    if major_minor not in data["cuda"]:
        known = ", ".join(data["cuda"])
        raise SystemExit(f"matrix.toml has no arch list for CUDA {major_minor} (known: {known})")
    spec = data["cuda"][major_minor]
    return spec.get(f"{platform or host_platform()}_arch_list", spec["arch_list"])


# The build jobs and the platforms each builds on.
BUILD_JOBS = {"build-linux": ("linux", "linux-aarch64"), "build-windows": ("windows",), "build-macos": ("macos",)}
JOBS = (*BUILD_JOBS, "test-cpu", "test-gpu")


def gha_matrix(event: str, job: str, data: dict[str, Any] | None = None,
               images: dict[str, str] | None = None) -> dict[str, list[dict[str, Any]]]:
    """The `strategy.matrix` of one workflow job for a GitHub event.

    Pull requests get the pairs of [pull_request] (and the builds serving
    them); every other event all of them.
    build-linux / build-windows / build-macos: one entry per build made on
      each platform of the job (BUILD_JOBS).
    test-cpu: one entry per (pair, platform, oldest and newest Python), naming
      the build whose wheel it installs.
    test-gpu: one entry per Linux CUDA pair.
    Both test jobs also get entries with build "bundle": the label-free wheel
      of each platform, with the default pair's torch, with PyPI's torch of
      the oldest stable minor, and (test-cpu) with the CPU-only torch of the
      default minor: each loads another of its kernel libraries.
    Every entry names its wheel's artifact: `wheel-BUILD-PLATFORM` from a build
      job, `bundle-PLATFORM` from the bundle job (outside `wheel-*`, so the
      bundle job of a re-run never downloads an earlier attempt's bundles).
    images: builder image -> digest (ci/plan/check-sources.py): the builds run
      exactly those bytes, as `image@digest`.
    """
    data = data or load()
    if job not in JOBS:
        raise SystemExit(f"unknown job {job!r}; jobs: {', '.join(JOBS)}")
    pairs = all_pairs(data)
    if event == "pull_request":
        wanted = set(data["pull_request"]["pairs"])
        pairs = [p for p in pairs if p.name in wanted]
    include = []
    if job in BUILD_JOBS:
        for build in all_builds(data):
            for platform in BUILD_JOBS[job]:
                if platform in build.platforms and any(p.build == build.name and platform in p.platforms
                                                       for p in pairs):
                    entry = build.as_dict()
                    entry.update(pip_toolkit=" ".join(build.pip_toolkit), serves=",".join(build.serves),
                                 platforms=",".join(build.platforms), platform=platform,
                                 platform_tag=data["defaults"][f"{platform}_platform"],
                                 runner=data["defaults"][f"{platform}_runner"],
                                 torch_install_args=" ".join(torch_install_args(build, platform)),
                                 arch_list=build.arch_list_for(platform),
                                 image=data["cuda"][build.cuda].get(f"{platform}_image", ""),
                                 artifact=artifact_name(build.name, platform))
                    if entry["image"] and images and entry["image"] in images:
                        entry["image"] = f"{entry['image']}@{images[entry['image']]}"
                    include.append(entry)
        return {"include": include}
    default = default_pair(data)
    # the label-free wheel (PyPI's), made by ci/build/bundle-wheels.py from the
    # tested builds' files, tested as itself with the default pair's torch,
    # with the CPU-only torch of the same minor (its CPU library) and with
    # PyPI's torch of the oldest stable minor (CUDA 12: its CUDA 12 library)
    every = all_pairs(data)
    oldest = min((p for p in every if p.abi == "stable" and p.torch_on_pypi), key=lambda p: _minor_key(p.torch))
    bundle_pairs = [default] + [p for p in every if p.torch == default.torch and p.cuda == CPU] + [oldest]
    for pair, bundled in [(p, False) for p in pairs] + [(p, True) for p in bundle_pairs]:
        entry = pair.as_dict()
        entry["pip_toolkit"] = " ".join(pair.pip_toolkit)
        entry["platforms"] = ",".join(pair.platforms)
        if bundled:
            entry["build"] = "bundle"
        if job == "test-cpu":
            for platform in pair.platforms:
                for python in sorted({pair.python_oldest, pair.python_newest}):
                    include.append({**entry, "platform": platform, "python": python,
                                    "arch_list": pair.arch_list_for(platform),
                                    "artifact": artifact_name(entry["build"], platform),
                                    "runner": data["defaults"][f"{platform}_runner"],
                                    "torch_install_args": " ".join(torch_install_args(pair, platform))})
        elif "linux" in pair.platforms and pair.cuda != CPU:  # (the CPU kernels are tested by test-cpu)
            include.append({**entry, "platform": "linux", "artifact": artifact_name(entry["build"], "linux")})
    return {"include": include}


def artifact_name(build: str, platform: str) -> str:
    """The workflow artifact holding a build's wheel for a platform (build "bundle": the label-free one)."""
    return f"bundle-{platform}" if build == "bundle" else f"wheel-{build}-{platform}"


def arch_text(item: "Build | Pair") -> str:
    """Its arch lists for a table: '7.5 8.0 ... 12.0+PTX', and the platforms with their own after it."""
    text = item.arch_list.replace(";", " ")
    for platform, own in item.platform_arch_lists:
        if platform in item.platforms:
            text += f"; {platform}: {own.replace(';', ' ')}"
    return text


def readme_table(data: dict[str, Any] | None = None) -> str:
    data = data or load()
    default = data["defaults"]["default_pair"]
    lines = [
        "| torch | CUDA | wheel (label, ABI) | platforms | GPU architectures (SASS; +PTX = JIT for newer) | install |",
        "| --- | --- | --- | --- | --- | --- |",
    ]
    for pair in all_pairs(data):
        command = (f"`pip install my_ops==1.0+{pair.label} --extra-index-url "
                   f"{data['defaults']['index_url']}/{pair.index_path}`")
        tag = " (PyPI default)" if pair.name == default else ""
        lines.append(f"| {pair.torch} | {pair.cuda} | +{pair.label} {pair.abi}{tag} | "
                     f"{', '.join(pair.platforms)} | {arch_text(pair)} | {command} |")
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    sub = parser.add_subparsers(dest="command", required=True)
    p = sub.add_parser("arch-list", help="TORCH_CUDA_ARCH_LIST for a CUDA version")
    p.add_argument("--cuda", required=True)
    p.add_argument("--platform", choices=PLATFORMS, help="default: this host's")
    p = sub.add_parser("pairs", help="every pair, one per line")
    p.add_argument("--platform", choices=PLATFORMS)
    p = sub.add_parser("builds", help="every build, one per line")
    p.add_argument("--platform", choices=PLATFORMS)
    for kind, example in (("pair", "2.11-cu130, or 'default'"),
                          ("build", "cu130, 2.6-cu124, 2.13-cu130 (its build), or 'default'")):
        p = sub.add_parser(kind, help=f"one {kind} as JSON, or one field of it")
        p.add_argument("name", help=f"e.g. {example}")
        p.add_argument("--field", help="print just this field, e.g. torch_install_args")
        p.add_argument("--platform", choices=PLATFORMS, default="linux",
                       help="the platform torch_install_args and arch_list are for (default linux)")
    p = sub.add_parser("torch-requirement", help="the torch pin of a wheel")
    p.add_argument("--torch", required=True)
    p = sub.add_parser("gha", help="GitHub Actions matrix JSON of one job")
    p.add_argument("--event", default="push")
    p.add_argument("--job", required=True, choices=JOBS)
    p.add_argument("--images", type=Path, help="JSON of image -> digest (ci/plan/check-sources.py --images-out)")
    p = sub.add_parser("readme-table", help="Markdown table of supported pairs")
    p.add_argument("--update", type=Path, metavar="README",
                   help="replace the <!-- pairs:begin --> ... <!-- pairs:end --> block of this file")
    p = sub.add_parser("build-info", help="what a wheel records of the matrix, as JSON")
    p.add_argument("--torch", required=True, help="the torch version built against, e.g. 2.11.0")
    p = sub.add_parser("default", help="one value of [defaults], e.g. linux_platform")
    p.add_argument("key")
    args = parser.parse_args(argv)

    if args.command == "arch-list":
        print(arch_list(args.cuda, platform=args.platform))
    elif args.command == "pairs":
        for pair in all_pairs():
            if args.platform is None or args.platform in pair.platforms:
                print(pair.name)
    elif args.command == "builds":
        for build in all_builds():
            if args.platform is None or args.platform in build.platforms:
                print(build.name)
    elif args.command in ("pair", "build"):
        if args.command == "pair":
            item = default_pair() if args.name == "default" else find_pair(args.name)
        else:
            item = find_build(load()["defaults"]["default_pair"] if args.name == "default" else args.name)
        data = item.as_dict()
        data["torch_install_args"] = " ".join(torch_install_args(item, args.platform))
        data["arch_list"] = item.arch_list_for(args.platform)
        if args.field:
            if args.field not in data:
                raise SystemExit(f"a {args.command} has no field {args.field!r}; fields: {', '.join(data)}")
            value = data[args.field]
            print(" ".join(value) if isinstance(value, (list, tuple)) else value)
        else:
            print(json.dumps(data, indent=2))
    elif args.command == "torch-requirement":
        print(torch_requirement(args.torch))
    elif args.command == "gha":
        images = json.loads(args.images.read_text()) if args.images else None
        print(json.dumps(gha_matrix(args.event, args.job, images=images), separators=(",", ":")))
    elif args.command == "readme-table":
        if args.update:
            text = args.update.read_text()
            begin = "<!-- pairs:begin (generated by build_support/matrix.py readme-table) -->"
            end = "<!-- pairs:end -->"
            if begin not in text or end not in text:
                raise SystemExit(f"{args.update} has no {begin} ... {end} block")
            head, rest = text.split(begin, 1)
            tail = rest.split(end, 1)[1]
            args.update.write_text(f"{head}{begin}\n{readme_table()}\n{end}{tail}")
        else:
            print(readme_table())
    elif args.command == "default":
        defaults = load()["defaults"]
        if args.key not in defaults:
            raise SystemExit(f"[defaults] has no {args.key!r}; keys: {', '.join(defaults)}")
        print(defaults[args.key])
    elif args.command == "build-info":
        data = load()
        print(json.dumps({"abi": abi_of(args.torch, data),
                          "torch_requirement": torch_requirement(args.torch, data),
                          "index_url": data["defaults"]["index_url"],
                          "supported_pairs": [p.name for p in all_pairs(data)]}))
    return 0


if __name__ == "__main__":
    sys.exit(main())
