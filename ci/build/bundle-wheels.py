#!/usr/bin/env python3
"""Seal a run's built wheels and make each platform's label-free wheel from them.

    ci/build/bundle-wheels.py --event push --wheels built/ --out bundles/ [--manifest manifest.json]

--wheels holds the build jobs' artifacts, one folder each, named as the
artifact (download-artifact's layout for a pattern). Every wheel in it must be
one this event's matrix builds (build_support/matrix.py gha), with this run's
version, in the folder of the build that makes it, once: anything else (a
wheel some other job slipped in, under any artifact name) fails.
--require-all (a release): every wheel of the matrix must be there; the
release seals once, after every build and before any test job.
For each platform whose base build is there, the label-free wheel (what
PyPI gets) is made from the tested builds' wheels, without a second
compilation: the base build's wheel without its local label, holding the
kernel library of every build of `label_free_builds` (build_support/matrix.toml)
made for that platform, one folder each (my_ops/_libraries/<label>/). The
base is the default build where the platform has it, else (macOS, CPU only)
the first of `label_free_builds` the platform has: decided from the matrix,
never from what happened to build, so a failed default build leaves its
platform without a label-free wheel rather than with a CPU-only one. At
import my_ops loads the one that fits the running torch (python/my_ops/
_libraries.py). It is written to OUT/bundle-PLATFORM/, and is itself tested
by the CPU and GPU jobs.

The manifest (file name -> sha256 of every labelled and label-free wheel) is
printed as `manifest=JSON` to $GITHUB_OUTPUT: a job output cannot change
after this job, so the release publishes exactly these bytes
(ci/release/assemble-release.sh --manifest), whatever a later job uploads.
"""

from __future__ import annotations

import argparse
import base64
import hashlib
import json
import os
import re
import sys
import zipfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "build_support"))
import matrix  # noqa: E402
import metadata_provider  # noqa: E402

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "release"))
from file_sha256 import sha256  # noqa: E402

ZIP_DATE = (1980, 1, 1, 0, 0, 0)


def expected_wheels(event: str, version: str) -> dict[str, tuple[str, str, str]]:
    """File name -> (build name, platform, artifact) of every wheel the event's build jobs make."""
    expected = {}
    for job in matrix.BUILD_JOBS:
        for entry in matrix.gha_matrix(event, job)["include"]:
            name = f"my_ops-{version}+{entry['label']}-cp39-abi3-{entry['platform_tag']}.whl"
            expected[name] = (entry["name"], entry["platform"], entry["artifact"])
    return expected


def record_line(path: str, data: bytes) -> str:
    digest = base64.urlsafe_b64encode(hashlib.sha256(data).digest()).rstrip(b"=").decode()
    return f"{path},sha256={digest},{len(data)}"


def is_library_file(name: str) -> bool:
    """A file of the package's kernel library: my_ops/ itself, not Python (_C, libmy_ops, the build record)."""
    folder, _, file = name.rpartition("/")
    return folder == "my_ops" and not file.endswith(".py")


def label_free(default: Path, others: list[Path], out: Path) -> Path:
    """PyPI's wheel: `default` (a labelled wheel) without its local label, holding the
    kernel library of `default` and of each of `others` (labelled wheels of the same
    version and platform) under my_ops/_libraries/<label>/; every other byte of
    default's files kept, its build record (label "") listing the libraries."""
    match = re.match(r"my_ops-([^-+]+)\+[^-]+-(.+)\.whl$", default.name)
    if not match:
        raise SystemExit(f"{default.name}: not a labelled my_ops wheel")
    version, tags = match.groups()
    target = out / f"my_ops-{version}-{tags}.whl"
    out.mkdir(parents=True, exist_ok=True)
    new_info = f"my_ops-{version}.dist-info"
    files: list[tuple[str, bytes, int]] = []
    python: dict[str, bytes] = {}
    labels = []
    for source in [default, *others]:
        if not re.match(rf"my_ops-{re.escape(version)}\+[^-]+-{re.escape(tags)}\.whl$", source.name):
            raise SystemExit(f"{source.name}: not the version and platform of {default.name}")
        with zipfile.ZipFile(source) as src:
            label = json.loads(src.read("my_ops/_build_info.json"))["label"]
            labels.append(label)
            old_info = next(n.split("/")[0] for n in src.namelist() if n.endswith(".dist-info/METADATA"))
            for item in src.infolist():
                if item.is_dir():  # RECORD lists files only; the wheel needs no directory entries
                    continue
                data = src.read(item)
                if is_library_file(item.filename):
                    files.append((f"my_ops/_libraries/{label}/{item.filename[len('my_ops/'):]}", data,
                                  item.external_attr))
                elif item.filename.startswith("my_ops/"):
                    # one Python package for every library: the builds are of one commit
                    if python.setdefault(item.filename, data) != data:
                        raise SystemExit(f"{source.name}: {item.filename} differs from {default.name}'s")
                    if source == default:
                        files.append((item.filename, data, item.external_attr))
                elif source == default:
                    name = item.filename.replace(old_info + "/", new_info + "/", 1)
                    if name == f"{new_info}/RECORD":
                        continue
                    if name == f"{new_info}/METADATA":
                        data = re.sub(rb"^Version: .*$", f"Version: {version}".encode(), data, count=1, flags=re.M)
                    files.append((name, data, item.external_attr))
            if source == default:
                info = json.loads(src.read("my_ops/_build_info.json"))
    if len(set(labels)) != len(labels):
        raise SystemExit(f"two kernel libraries labelled alike: {labels}")
    info.update(version=version, label="", libraries=sorted(labels))
    files.append(("my_ops/_build_info.json", (json.dumps(info, indent=2, sort_keys=True) + "\n").encode(),
                  0o644 << 16))
    files.sort(key=lambda f: f[0])
    record = "\n".join([record_line(n, d) for n, d, _ in files] + [f"{new_info}/RECORD,,", ""])
    files.append((f"{new_info}/RECORD", record.encode(), 0o644 << 16))
    with zipfile.ZipFile(target, "w", zipfile.ZIP_DEFLATED) as dst:
        for name, data, attributes in files:
            item = zipfile.ZipInfo(name, ZIP_DATE)
            item.external_attr = attributes
            item.compress_type = zipfile.ZIP_DEFLATED
            dst.writestr(item, data)
    return target


def base_builds(data: dict) -> dict[str, str]:
    """Platform -> the build whose wheel its label-free wheel is made from."""
    default = matrix.find_build(data["defaults"]["default_pair"], data)
    builds = matrix.all_builds(data)
    base = {}
    for platform in matrix.PLATFORMS:
        if platform in default.platforms:
            base[platform] = default.name
            continue
        for member in data["defaults"]["label_free_builds"]:
            if any(b.name == member and platform in b.platforms for b in builds):
                base[platform] = member
                break
    return base


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--event", required=True)
    parser.add_argument("--wheels", type=Path, required=True)
    parser.add_argument("--out", type=Path, required=True)
    parser.add_argument("--manifest", type=Path, help="also write the manifest here")
    parser.add_argument("--require-all", action="store_true", default=os.environ.get("REQUIRE_ALL_BUILDS") == "true",
                        help="fail unless every build's wheel is there (default: $REQUIRE_ALL_BUILDS == true)")
    args = parser.parse_args()
    version = metadata_provider.base_version()
    expected = expected_wheels(args.event, version)
    found = sorted(args.wheels.rglob("*.whl"))
    unexpected = [w.name for w in found if w.name not in expected]
    if unexpected:
        print(f"::error::wheels that no build of this run makes: {', '.join(unexpected)}")
        return 1
    misplaced = [str(w.relative_to(args.wheels)) for w in found
                 if w.parent.relative_to(args.wheels) != Path(expected[w.name][2])]
    if misplaced:
        print(f"::error::wheels outside the artifact of the build that makes them: {', '.join(misplaced)}")
        return 1
    missing = sorted(set(expected) - {w.name for w in found})
    for name in missing:
        print(f"{'::error::' if args.require_all else ''}missing (its build failed): {name}")
    if missing and args.require_all:
        return 1
    data = matrix.load()
    base = base_builds(data)
    members = data["defaults"]["label_free_builds"]
    manifest = {w.name: sha256(w) for w in found}
    for wheel in found:
        build, platform, _ = expected[wheel.name]
        if base.get(platform) == build:
            others = [w for w in found if expected[w.name][:2] != (build, platform)
                      and expected[w.name][0] in members and expected[w.name][1] == platform]
            bundle = label_free(wheel, others, args.out / f"bundle-{platform}")
            manifest[bundle.name] = sha256(bundle)
            print(f"label-free wheel for {platform}: {bundle.name} "
                  f"(from {', '.join(w.name for w in [wheel, *others])})")
    text = json.dumps(manifest, sort_keys=True, separators=(",", ":"))
    if args.manifest:
        args.manifest.write_text(text + "\n")
    with open(os.environ.get("GITHUB_OUTPUT", "/dev/stdout"), "a") as output:
        output.write(f"manifest={text}\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
