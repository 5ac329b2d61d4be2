#!/usr/bin/env python3
"""Add wheels to the my_ops package index: PEP 503 simple indexes per pair and per CUDA version.

  ci/release/make_index.py --site site WHEEL_OR_DIR... [--nightly] [--files-url URL]

Layout (relative to --site):
  index.html                                   the install selector (make_landing_page.py)
  whl/files/<wheel>, <wheel>.metadata          every wheel once, with its PEP 658 metadata
                                               (without --files-url)
  whl/torch2.11/cu130/index.html               PEP 503 root of one pair's index
  whl/torch2.11/cu130/my-ops/index.html        links with #sha256=, data-requires-python,
                                               and PEP 658/714 metadata attributes
  whl/cu130/my-ops/index.html                  the stable-ABI wheels of CUDA 13.0 (any torch >= 2.10)
  whl/nightly/...                              the same for nightly builds (--nightly)

With --files-url the pages link each wheel where it is published instead
(URL/<tag>/<wheel>, e.g. a GitHub Release's assets; <tag> is v<version> for a
release and `nightly` for a nightly), and the site keeps only the pages: it
stays small however many releases it indexes. The <wheel>.metadata files
(PEP 658) must then be published beside the wheels, and whl/files/ is only
the working set the pages are computed from (ci/release/assemble-release.sh takes
both out of the site).

A +cuXYZ label alone does not say which torch a legacy wheel was compiled
against, so every pair gets its own index. A stable-ABI wheel serves every
pair of its CUDA version that its build info lists: each of those pages
links the one shared file (one file, one sha256), and so does its CUDA
version's page. Which pages list a wheel is read from the wheel itself.
The script is idempotent: existing files stay, a wheel already present must
be byte-identical (released files are immutable), and every page is
rewritten from the files on disk, so adding a release keeps all earlier ones.
Label-free wheels (the PyPI default) are not indexed: PyPI serves them.
"""

from __future__ import annotations

import argparse
import html
import json
import re
import shutil
import sys
import zipfile
from pathlib import Path
from urllib.parse import quote

sys.path.insert(0, str(Path(__file__).resolve().parent))
from file_sha256 import sha256  # noqa: E402

PROJECT = "my-ops"  # PEP 503 normalised name of my_ops


class NotIndexed(ValueError):
    """A wheel that belongs on PyPI, not in this index."""


def _minor(version: str) -> tuple[int, int]:
    major, minor = version.split(".")[:2]
    return int(major), int(re.match(r"\d+", minor).group())


def wheel_facts(wheel: Path) -> tuple[dict, bytes, str]:
    """(build info, METADATA bytes, Requires-Python) of a my_ops wheel."""
    with zipfile.ZipFile(wheel) as zf:
        info = json.loads(zf.read("my_ops/_build_info.json"))
        dist_info = next(n.split("/")[0] for n in zf.namelist() if n.split("/")[0].endswith(".dist-info"))
        metadata = zf.read(f"{dist_info}/METADATA")
    requires_python = re.search(rb"^Requires-Python: (.+)$", metadata, re.M)
    return info, metadata, requires_python.group(1).decode().strip() if requires_python else ""


def index_dirs(info: dict) -> list[str]:
    """The indexes that list a wheel: its pair's ('torch2.6/cu124'), or for a
    stable-ABI wheel every pair of its CUDA version it serves and 'cu130'."""
    label = info.get("label", "")
    if info.get("abi") != "stable":
        minor = ".".join(info["torch_version"].split(".")[:2])
        return [f"torch{minor}/{label}"]
    lower = _minor(info["torch_requirement"].split(">=", 1)[1].split(",")[0])
    served = []
    for pair in info.get("supported_pairs", []):
        minor, pair_label = pair.split("-")
        if pair_label == label and _minor(minor) >= lower:
            served.append(f"torch{minor}/{label}")
    return [*served, label]


def page(title: str, links: list[str]) -> str:
    body = "\n".join(f"    {link}<br/>" for link in links)
    return (f"<!DOCTYPE html>\n<html>\n  <head>\n    <meta name=\"pypi:repository-version\" content=\"1.0\">\n"
            f"    <title>{html.escape(title)}</title>\n  </head>\n  <body>\n    <h1>{html.escape(title)}</h1>\n"
            f"{body}\n  </body>\n</html>\n")


def add_wheel(wheel: Path, root: Path) -> None:
    info, metadata, _ = wheel_facts(wheel)
    if not info.get("label"):
        raise NotIndexed(f"{wheel.name} has no local label (the PyPI default wheel): not indexed")
    files = root / "files"
    files.mkdir(parents=True, exist_ok=True)
    target = files / wheel.name
    if target.exists():
        if sha256(target) != sha256(wheel):
            raise ValueError(f"{target} exists with different contents: released files are immutable; "
                             "bump the version instead")
    else:
        shutil.copy2(wheel, target)
    (files / f"{wheel.name}.metadata").write_bytes(metadata)


def release_tag(wheel_name: str) -> str:
    """The GitHub Release that holds a wheel: v1.0.0, or nightly for 1.0.1.devN."""
    version = wheel_name.split("-")[1].split("+")[0]
    return "nightly" if ".dev" in version else f"v{version}"


def write_pages(root: Path, files_url: str | None) -> list[str]:
    """Every index page under root (whl/ or whl/nightly/), from the wheels in root/files."""
    listed: dict[str, list[str]] = {}
    for wheel in sorted((root / "files").glob("*.whl")):
        info, _, requires_python = wheel_facts(wheel)
        metadata_hash = sha256(wheel.parent / f"{wheel.name}.metadata")
        for index in index_dirs(info):
            if files_url:
                href = f"{files_url.rstrip('/')}/{release_tag(wheel.name)}/{quote(wheel.name)}"
            else:
                href = "../" * (index.count("/") + 2) + "files/" + quote(wheel.name)
            attributes = [f'href="{href}#sha256={sha256(wheel)}"']
            if requires_python:
                attributes.append(f'data-requires-python="{html.escape(requires_python)}"')
            attributes.append(f'data-dist-info-metadata="sha256={metadata_hash}"')
            attributes.append(f'data-core-metadata="sha256={metadata_hash}"')
            listed.setdefault(index, []).append(f"<a {' '.join(attributes)}>{html.escape(wheel.name)}</a>")
    for index, links in listed.items():
        project_dir = root / index / PROJECT
        project_dir.mkdir(parents=True, exist_ok=True)
        (project_dir / "index.html").write_text(page(f"Links for my_ops ({index})", links))
        (project_dir.parent / "index.html").write_text(
            page(f"my_ops index ({index})", [f'<a href="{PROJECT}/">{PROJECT}</a>']))
    return sorted(listed)


def build(site: Path, inputs: list[Path], nightly: bool, files_url: str | None = None) -> list[str]:
    root = site / "whl" / "nightly" if nightly else site / "whl"
    wheels: list[Path] = []
    for item in inputs:
        wheels += sorted(item.rglob("my_ops-*.whl")) if item.is_dir() else [item]
    for wheel in wheels:
        try:
            add_wheel(wheel, root)
        except NotIndexed as error:
            print(f"skip: {error}", file=sys.stderr)
    return write_pages(root, files_url) if (root / "files").is_dir() else []


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("inputs", nargs="+", type=Path, help="wheels, or folders searched for my_ops-*.whl")
    parser.add_argument("--site", type=Path, required=True, help="the index root (created or extended)")
    parser.add_argument("--nightly", action="store_true", help="add to whl/nightly/ instead")
    parser.add_argument("--files-url", help="link wheels at URL/<tag>/<wheel> (e.g. GitHub Release "
                                            "downloads) instead of copying them into the site")
    args = parser.parse_args()
    try:
        indexed = build(args.site, args.inputs, args.nightly, args.files_url)
    except ValueError as error:
        print(f"error: {error}", file=sys.stderr)
        return 1
    prefix = "whl/nightly" if args.nightly else "whl"
    for index in indexed:
        print(f"indexed {prefix}/{index}/")
    return 0


if __name__ == "__main__":
    sys.exit(main())
