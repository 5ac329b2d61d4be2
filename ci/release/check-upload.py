#!/usr/bin/env python3
"""Check the files about to be published against what the run sealed, right before they go out.

    ci/release/check-upload.py --dir release/pypi --record      (assemble job)
    ci/release/check-upload.py --dir release/pypi                (PyPI job, before uploading)
    ci/release/check-upload.py --dir release/dist --assets       (GitHub Release and pages jobs)

The folder must hold exactly the label-free wheels of the sealed manifest
(file name -> sha256, from the bundle job: MANIFEST, JSON) with those bytes,
and one sdist: nothing else, nothing missing. --record (the assemble job, which
builds the sdist) also writes the sdist's sha256 as `sdist-sha256=...` to
$GITHUB_OUTPUT: a job output cannot change after its job, so the PyPI job
checks the sdist against it (SDIST_SHA256), not against a file that travelled
with the artifact. PyPI never takes a file name twice: whatever it receives
must be what was tested.
--assets checks the GitHub Release's folder the same way: every wheel of the
manifest (labelled and label-free) with its sealed bytes, the sdist with the
assemble job's sha256, each `<wheel>.metadata` equal to the METADATA inside
that wheel (PEP 658), and the checksum file (SHA256SUMS, a nightly's
SHA256SUMS-VERSION) listing exactly the my_ops files with their sha256. The
GitHub Release attests and uploads this folder and the index pages hash it,
so nothing there may differ from what the seal names.
Exit 1 with one line per problem.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import zipfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from file_sha256 import sha256  # noqa: E402


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


def asset_problems(folder: Path, manifest: dict[str, str], sdist_sha256: str | None) -> list[str]:
    """problems() for the GitHub Release folder: every sealed wheel, the sdist, PEP 658 files, checksums."""
    found = sorted(p for p in folder.iterdir() if p.is_file()) if folder.is_dir() else []
    names = {p.name for p in found}
    wheels = [p for p in found if p.name.endswith(".whl")]
    sdists = [p for p in found if p.name.endswith(".tar.gz")]
    metadata = [p for p in found if p.name.endswith(".whl.metadata")]
    sums = [p for p in found if p.name == "SHA256SUMS" or p.name.startswith("SHA256SUMS-")]
    out = [f"{p.name}: not a release asset (wheel, .metadata, sdist, SHA256SUMS)" for p in found
           if p not in wheels + sdists + metadata + sums]
    for wheel in wheels:
        if wheel.name not in manifest:
            out.append(f"{wheel.name}: not sealed by this run's bundle job")
        elif sha256(wheel) != manifest[wheel.name]:
            out.append(f"{wheel.name}: bytes differ from the sealed sha256 {manifest[wheel.name]}")
    out += [f"{name}: sealed wheel missing" for name in sorted(set(manifest) - names)]
    for file in metadata:
        wheel = folder / file.name.removesuffix(".metadata")
        if not wheel.is_file():
            out.append(f"{file.name}: no wheel of that name beside it")
            continue
        with zipfile.ZipFile(wheel) as archive:
            inside = next((n for n in archive.namelist() if n.endswith(".dist-info/METADATA")), None)
            if inside is None or archive.read(inside) != file.read_bytes():
                out.append(f"{file.name}: differs from the METADATA inside {wheel.name}")
    if len(sdists) != 1:
        out.append(f"expected one sdist, found {[p.name for p in sdists]}")
    elif sdist_sha256 is not None and sha256(sdists[0]) != sdist_sha256:
        out.append(f"{sdists[0].name}: bytes differ from the assemble job's sha256 {sdist_sha256 or '(none)'}")
    if len(sums) != 1:
        out.append(f"expected one checksum file, found {[p.name for p in sums]}")
    else:
        listed = {}
        for line in sums[0].read_text().splitlines():
            digest, _, name = line.partition("  ")
            listed[name] = digest
        actual = {p.name: sha256(p) for p in found if p.name.startswith("my_ops-")}
        if listed != actual:
            wrong = sorted(n for n in set(listed) | set(actual) if listed.get(n) != actual.get(n))
            out.append(f"{sums[0].name}: does not list exactly the files' sha256 (differs for {wrong[:5]})")
    return out


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--dir", type=Path, required=True)
    parser.add_argument("--record", action="store_true", help="write the sdist's sha256 to $GITHUB_OUTPUT")
    parser.add_argument("--assets", action="store_true", help="the GitHub Release's folder (release/dist)")
    args = parser.parse_args(argv)
    manifest = json.loads(os.environ.get("MANIFEST") or "{}")
    if not manifest:
        print("::error::MANIFEST (the bundle job's sealed manifest) is empty")
        return 1
    sdist = None if args.record else os.environ.get("SDIST_SHA256", "")
    found = (asset_problems if args.assets else problems)(args.dir, manifest, sdist)
    for problem in found:
        print(f"::error::{problem}")
    if found:
        return 1
    files = sorted(p.name for p in args.dir.iterdir())
    if args.record and not args.assets:
        (tarball,) = args.dir.glob("*.tar.gz")
        with open(os.environ.get("GITHUB_OUTPUT", "/dev/stdout"), "a") as output:
            output.write(f"sdist-sha256={sha256(tarball)}\n")
    print(f"check-upload: {len(files)} files match what the run sealed: {', '.join(files)}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
