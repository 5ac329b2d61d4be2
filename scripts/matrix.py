#!/usr/bin/env python3
"""Read the build matrix (scripts/matrix.toml) and answer questions about it.

Every stage asks this script instead of repeating the data:

  matrix.py arch-list --cuda 13.0          TORCH_CUDA_ARCH_LIST for a CUDA version
  matrix.py pairs [--platform linux]       one "torch-cuXYZ" pair per line
  matrix.py pair 2.11-cu130                everything about one pair, as JSON
  matrix.py torch-requirement --torch 2.11 the wheel's torch pin
  matrix.py gha --event push --job test-cpu the GitHub Actions matrix of one job, as JSON
  matrix.py readme-table                   the README's supported-pairs table
  matrix.py build-info                     index URL and pairs, for the wheel's build info
  matrix.py default linux_platform         one value of [defaults]
"""

from __future__ import annotations

import argparse
import json
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
        sys.exit("scripts/matrix.py needs Python >= 3.11 or the 'tomli' package")

MATRIX_FILE = Path(__file__).with_name("matrix.toml")
PLATFORMS = ("linux", "windows")


@dataclass(frozen=True)
class Pair:
    """One (torch minor, CUDA version) combination and how to build and test it."""

    torch: str  # "2.11"
    cuda: str  # "13.0"
    torch_build_version: str  # "2.11.0"
    platforms: tuple[str, ...]
    python_oldest: str
    python_newest: str
    arch_list: str
    linux_image: str
    windows_toolkit: str
    pip_toolkit: tuple[str, ...]
    torch_on_pypi: bool  # PyPI's plain `pip install torch==X.Y.0` is this variant

    @property
    def label(self) -> str:
        return cuda_label(self.cuda)

    @property
    def name(self) -> str:
        return f"{self.torch}-{self.label}"

    @property
    def torch_requirement(self) -> str:
        return torch_requirement(self.torch)

    @property
    def torch_index_url(self) -> str:
        return f"https://download.pytorch.org/whl/{self.label}"

    @property
    def torch_install_args(self) -> list[str]:
        """pip arguments that install this pair's torch build."""
        args = [f"torch=={self.torch_build_version}"]
        if not self.torch_on_pypi:
            args += ["--index-url", self.torch_index_url]
        return args

    @property
    def index_path(self) -> str:
        """Where this pair's wheels live in the package index."""
        return f"whl/torch{self.torch}/{self.label}/"

    def as_dict(self) -> dict[str, Any]:
        data = asdict(self)
        data.update(
            label=self.label,
            name=self.name,
            torch_requirement=self.torch_requirement,
            torch_index_url=self.torch_index_url,
            torch_install_args=" ".join(self.torch_install_args),
            index_path=self.index_path,
        )
        return data


def cuda_label(cuda: str) -> str:
    """'12.4' -> 'cu124'."""
    major, minor = cuda.split(".")[:2]
    return f"cu{major}{minor}"


def torch_requirement(torch_minor: str) -> str:
    """'2.11' -> 'torch>=2.11,<2.12'."""
    major, minor = (int(p) for p in torch_minor.split(".")[:2])
    return f"torch>={major}.{minor},<{major}.{minor + 1}"


def load(path: Path = MATRIX_FILE) -> dict[str, Any]:
    with path.open("rb") as f:
        return tomllib.load(f)


def all_pairs(data: dict[str, Any] | None = None) -> list[Pair]:
    data = data or load()
    pairs = []
    for torch_minor, spec in data["torch"].items():
        for cuda in spec["cuda"]:
            if cuda not in data["cuda"]:
                raise SystemExit(f"matrix.toml: torch {torch_minor} names CUDA {cuda}, "
                                 f"which has no [cuda.\"{cuda}\"] table")
            cuda_spec = data["cuda"][cuda]
            platforms = ("linux",) if cuda in spec.get("linux_only", []) else PLATFORMS
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


def default_pair(data: dict[str, Any] | None = None) -> Pair:
    data = data or load()
    return find_pair(data["defaults"]["default_pair"], data)


def arch_list(cuda: str, data: dict[str, Any] | None = None) -> str:
    data = data or load()
    major_minor = ".".join(cuda.split(".")[:2])
    if major_minor not in data["cuda"]:
        known = ", ".join(data["cuda"])
        raise SystemExit(f"matrix.toml has no arch list for CUDA {major_minor} (known: {known})")
    return data["cuda"][major_minor]["arch_list"]


JOBS = ("build-linux", "build-windows", "test-cpu", "test-gpu")


def gha_matrix(event: str, job: str, data: dict[str, Any] | None = None) -> dict[str, list[dict[str, Any]]]:
    """The `strategy.matrix` of one workflow job for a GitHub event.

    Pull requests get the pairs of [pull_request]; every other event all of them.
    build-linux / build-windows: one entry per pair built on that platform.
    test-cpu: one entry per (pair, platform, oldest and newest Python).
    test-gpu: one entry per Linux pair.
    """
    data = data or load()
    if job not in JOBS:
        raise SystemExit(f"unknown job {job!r}; jobs: {', '.join(JOBS)}")
    pairs = all_pairs(data)
    if event == "pull_request":
        wanted = set(data["pull_request"]["pairs"])
        pairs = [p for p in pairs if p.name in wanted]
    include = []
    for pair in pairs:
        entry = pair.as_dict()
        entry["pip_toolkit"] = " ".join(pair.pip_toolkit)
        entry["platforms"] = ",".join(pair.platforms)
        if job in ("build-linux", "build-windows"):
            platform = job.split("-")[1]
            if platform in pair.platforms:
                include.append({**entry, "platform": platform,
                                "platform_tag": data["defaults"][f"{platform}_platform"]})
        elif job == "test-cpu":
            for platform in pair.platforms:
                for python in sorted({pair.python_oldest, pair.python_newest}):
                    include.append({**entry, "platform": platform, "python": python,
                                    "runner": "ubuntu-24.04" if platform == "linux" else "windows-2022"})
        elif "linux" in pair.platforms:
            include.append({**entry, "platform": "linux"})
    return {"include": include}


def readme_table(data: dict[str, Any] | None = None) -> str:
    data = data or load()
    default = data["defaults"]["default_pair"]
    lines = [
        "| torch | CUDA | wheel label | platforms | GPU architectures (SASS; +PTX = JIT for newer) | install |",
        "| --- | --- | --- | --- | --- | --- |",
    ]
    for pair in all_pairs(data):
        command = (f"`pip install my_ops==1.0+{pair.label} --extra-index-url "
                   f"{data['defaults']['index_url']}/{pair.index_path}`")
        tag = " (PyPI default)" if pair.name == default else ""
        lines.append(f"| {pair.torch} | {pair.cuda} | +{pair.label}{tag} | "
                     f"{', '.join(pair.platforms)} | {pair.arch_list.replace(';', ' ')} | {command} |")
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    sub = parser.add_subparsers(dest="command", required=True)
    p = sub.add_parser("arch-list", help="TORCH_CUDA_ARCH_LIST for a CUDA version")
    p.add_argument("--cuda", required=True)
    p = sub.add_parser("pairs", help="every pair, one per line")
    p.add_argument("--platform", choices=PLATFORMS)
    p = sub.add_parser("pair", help="one pair as JSON, or one field of it")
    p.add_argument("name", help="e.g. 2.11-cu130, or 'default'")
    p.add_argument("--field", help="print just this field, e.g. torch_install_args")
    p = sub.add_parser("torch-requirement", help="the torch pin of a wheel")
    p.add_argument("--torch", required=True)
    p = sub.add_parser("gha", help="GitHub Actions matrix JSON of one job")
    p.add_argument("--event", default="push")
    p.add_argument("--job", required=True, choices=JOBS)
    p = sub.add_parser("readme-table", help="Markdown table of supported pairs")
    p.add_argument("--update", type=Path, metavar="README",
                   help="replace the <!-- pairs:begin --> ... <!-- pairs:end --> block of this file")
    sub.add_parser("build-info", help="what a wheel records of the matrix, as JSON")
    p = sub.add_parser("default", help="one value of [defaults], e.g. linux_platform")
    p.add_argument("key")
    args = parser.parse_args(argv)

    if args.command == "arch-list":
        print(arch_list(args.cuda))
    elif args.command == "pairs":
        for pair in all_pairs():
            if args.platform is None or args.platform in pair.platforms:
                print(pair.name)
    elif args.command == "pair":
        pair = default_pair() if args.name == "default" else find_pair(args.name)
        data = pair.as_dict()
        if args.field:
            if args.field not in data:
                raise SystemExit(f"a pair has no field {args.field!r}; fields: {', '.join(data)}")
            value = data[args.field]
            print(" ".join(value) if isinstance(value, (list, tuple)) else value)
        else:
            print(json.dumps(data, indent=2))
    elif args.command == "torch-requirement":
        print(torch_requirement(args.torch))
    elif args.command == "gha":
        print(json.dumps(gha_matrix(args.event, args.job), separators=(",", ":")))
    elif args.command == "readme-table":
        if args.update:
            text = args.update.read_text()
            begin = "<!-- pairs:begin (generated by scripts/matrix.py readme-table) -->"
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
        print(json.dumps({"index_url": data["defaults"]["index_url"],
                          "supported_pairs": [p.name for p in all_pairs(data)]}))
    return 0


if __name__ == "__main__":
    sys.exit(main())
