#!/usr/bin/env python3
"""Fail unless an sdist holds exactly the repository's tracked files.

    ci/release/check-sdist.py SDIST [--repo DIR]

Its members (below the top folder my_ops-VERSION/) must be `git ls-files`
of DIR (default: this checkout) plus the files the sdist builder generates
(PKG-INFO): a file the job downloaded or built into the tree (a wheel, a
manifest) must never reach PyPI inside the sdist, and a tracked file missing
from it would make a broken source build. Runs before anything is published.
"""

from __future__ import annotations

import argparse
import subprocess
import sys
import tarfile
from pathlib import Path

GENERATED = {"PKG-INFO"}


def members(sdist: Path) -> tuple[set[str], list[str]]:
    """(the sdist's files below its top folder, problems with its layout)."""
    problems = []
    names = set()
    top = sdist.name.removesuffix(".tar.gz")
    with tarfile.open(sdist) as tar:
        for member in tar.getmembers():
            head, _, rest = member.name.partition("/")
            if head != top:
                problems.append(f"{member.name}: outside the top folder {top}/")
            elif member.isdir():
                continue
            elif not (member.isfile() or member.issym()):
                problems.append(f"{member.name}: neither a file nor a symlink")
            else:
                names.add(rest)
    return names, problems


def tracked(repo: Path) -> set[str]:
    out = subprocess.run(["git", "ls-files", "-z"], cwd=repo, capture_output=True, check=True).stdout
    return {name for name in out.decode().split("\0") if name}


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("sdist", type=Path)
    parser.add_argument("--repo", type=Path, default=Path(__file__).resolve().parents[2])
    args = parser.parse_args()
    found, problems = members(args.sdist)
    want = tracked(args.repo) | GENERATED
    problems += [f"{name}: in the sdist but not a tracked file" for name in sorted(found - want)]
    problems += [f"{name}: tracked but missing from the sdist" for name in sorted(want - found)]
    for problem in problems:
        print(f"::error::{args.sdist.name}: {problem}")
    if not problems:
        print(f"== {args.sdist.name}: {len(found)} files, exactly the tracked ones and {', '.join(sorted(GENERATED))}")
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())
