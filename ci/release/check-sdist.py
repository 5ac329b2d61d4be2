#!/usr/bin/env python3
"""Fail unless an sdist holds exactly the repository's tracked files.

    ci/release/check-sdist.py SDIST [--repo DIR]

Its members (below the top folder my_ops-VERSION/) must be `git ls-files`
of DIR (default: this checkout) plus the files the sdist builder generates
(PKG-INFO): a file the job downloaded or built into the tree (a wheel, a
manifest) must never reach PyPI inside the sdist, and a tracked file missing
from it would make a broken source build. Each member's bytes must be the
commit's (HEAD's blob; the working tree's where a developer changed it): the
sdist's sha256 is recorded by the job that builds it, so nothing run in that
job may have changed a file after the build. Runs before anything is published.
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


def committed_bytes(repo: Path, names: list[str]) -> dict[str, bytes]:
    """Each tracked file's content as the checkout has it: HEAD's blob, or the file on disk where the
    working tree changed it (a developer's run; in CI the checkout is the commit)."""
    dirty = set(subprocess.run(["git", "diff", "--name-only", "-z", "HEAD"], cwd=repo, capture_output=True,
                               check=True).stdout.decode().split("\0"))
    out = {n: (repo / n).read_bytes() if not (repo / n).is_symlink() else str((repo / n).readlink()).encode()
           for n in names if n in dirty and (repo / n).exists()}
    clean = [n for n in names if n not in out]
    batch = subprocess.run(["git", "cat-file", "--batch"], cwd=repo, capture_output=True, check=True,
                           input="".join(f"HEAD:{n}\n" for n in clean).encode()).stdout
    position = 0
    for name in clean:
        header_end = batch.index(b"\n", position)
        header = batch[position:header_end].split()
        if header[-1] == b"missing":
            position = header_end + 1
            continue
        size = int(header[2])
        out[name] = batch[header_end + 1:header_end + 1 + size]
        position = header_end + 1 + size + 1
    return out


def byte_problems(sdist: Path, repo: Path, names: set[str]) -> list[str]:
    """Members whose bytes differ from the commit's (a tool that changed the sdist after it was built)."""
    expected = committed_bytes(repo, sorted(names))
    problems = []
    with tarfile.open(sdist) as tar:
        for member in tar.getmembers():
            name = member.name.partition("/")[2]
            if name not in expected:
                continue
            data = member.linkname.encode() if member.issym() else tar.extractfile(member).read()
            if data != expected[name]:
                problems.append(f"{name}: its bytes differ from the commit's")
    return problems


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
    problems += byte_problems(args.sdist, args.repo, found & (want - GENERATED))
    for problem in problems:
        print(f"::error::{args.sdist.name}: {problem}")
    if not problems:
        print(f"== {args.sdist.name}: {len(found)} files, exactly the tracked ones (the commit's bytes) and "
              f"{', '.join(sorted(GENERATED))}")
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())
