#!/usr/bin/env python3
"""Check the files about to go to PyPI against what the run sealed, right before the upload.

    ci/release/check-upload.py --dir release/pypi --record      (assemble job)
    ci/release/check-upload.py --dir release/pypi                (PyPI job, before uploading)

The folder must hold exactly the label-free wheels of the sealed manifest
(file name -> sha256, from the bundle job: MANIFEST, JSON) with those bytes,
and one sdist: nothing else, nothing missing. --record (the assemble job, which
builds the sdist) also writes the sdist's sha256 as `sdist-sha256=...` to
$GITHUB_OUTPUT: a job output cannot change after its job, so the PyPI job
checks the sdist against it (SDIST_SHA256), not against a file that travelled
with the artifact. PyPI never takes a file name twice: whatever it receives
must be what was tested.
Exit 1 with one line per problem.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import sys
from pathlib import Path


def sha256(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def problems(folder: Path, manifest: dict[str, str], sdist_sha256: str | None) -> list[str]:
    found = sorted(p for p in folder.iterdir() if p.is_file()) if folder.is_dir() else []
    wheels = [p for p in found if p.name.endswith(".whl")]
    sdists = [p for p in found if p.name.endswith(".tar.gz")]
    out = [f"{p.name}: neither a wheel nor the sdist" for p in found if p not in wheels + sdists]
    for wheel in wheels:
        if "+" in wheel.name:
            out.append(f"{wheel.name}: a local version label (PyPI refuses it)")
        elif wheel.name not in manifest:
            out.append(f"{wheel.name}: not sealed by this run's bundle job")
        elif sha256(wheel) != manifest[wheel.name]:
            out.append(f"{wheel.name}: bytes differ from the sealed sha256 {manifest[wheel.name]}")
    expected = sorted(n for n in manifest if "+" not in n)
    out += [f"{name}: sealed label-free wheel missing" for name in expected if name not in {w.name for w in wheels}]
    if len(sdists) != 1:
        out.append(f"expected one sdist, found {[p.name for p in sdists]}")
    elif sdist_sha256 is not None and sha256(sdists[0]) != sdist_sha256:
        out.append(f"{sdists[0].name}: bytes differ from the assemble job's sha256 {sdist_sha256 or '(none)'}")
    return out


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--dir", type=Path, required=True)
    parser.add_argument("--record", action="store_true", help="write the sdist's sha256 to $GITHUB_OUTPUT")
    args = parser.parse_args(argv)
    manifest = json.loads(os.environ.get("MANIFEST") or "{}")
    if not manifest:
        print("::error::MANIFEST (the bundle job's sealed manifest) is empty")
        return 1
    sdist = None if args.record else os.environ.get("SDIST_SHA256", "")
    found = problems(args.dir, manifest, sdist)
    for problem in found:
        print(f"::error::{problem}")
    if found:
        return 1
    files = sorted(p.name for p in args.dir.iterdir())
    if args.record:
        (tarball,) = args.dir.glob("*.tar.gz")
        with open(os.environ.get("GITHUB_OUTPUT", "/dev/stdout"), "a") as output:
            output.write(f"sdist-sha256={sha256(tarball)}\n")
    print(f"check-upload: {len(files)} files match what the run sealed: {', '.join(files)}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
