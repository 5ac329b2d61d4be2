#!/usr/bin/env python3
"""Add wheels to the my_ops package index: one PEP 503 simple index per pair.

  scripts/make_index.py --site site WHEEL_OR_DIR... [--nightly] [--base-url URL]

Layout (relative to --site):
  index.html                                   the install selector (make_landing_page.py)
  whl/torch2.11/cu130/index.html               PEP 503 root of one pair's index
  whl/torch2.11/cu130/my-ops/index.html        links with #sha256=, data-requires-python,
                                               and PEP 658/714 metadata attributes
  whl/torch2.11/cu130/my-ops/<wheel>           the wheel, and <wheel>.metadata beside it
  whl/nightly/torch2.11/cu130/...              the same for nightly builds (--nightly)

A +cuXYZ label alone is not unique across torch minors, so every pair gets
its own index; the pair is read from each wheel's own build info. The
script is idempotent: existing files stay, a wheel already present must be
byte-identical (released files are immutable), and every page is rewritten
from the files on disk, so adding a release keeps all earlier ones.
Label-free wheels (the PyPI default) are not indexed: PyPI serves them.
"""

from __future__ import annotations

import argparse
import hashlib
import html
import json
import re
import shutil
import sys
import zipfile
from pathlib import Path
from urllib.parse import quote

PROJECT = "my-ops"  # PEP 503 normalised name of my_ops


def sha256(path: Path) -> str:
    digest = hashlib.sha256()
    with path.open("rb") as f:
        for block in iter(lambda: f.read(1 << 20), b""):
            digest.update(block)
    return digest.hexdigest()


class NotIndexed(ValueError):
    """A wheel that belongs on PyPI, not in this index."""


def wheel_facts(wheel: Path) -> tuple[str, str, bytes, str]:
    """(torch minor, label, METADATA bytes, Requires-Python) of a my_ops wheel."""
    with zipfile.ZipFile(wheel) as zf:
        info = json.loads(zf.read("my_ops/_build_info.json"))
        dist_info = next(n.split("/")[0] for n in zf.namelist() if n.split("/")[0].endswith(".dist-info"))
        metadata = zf.read(f"{dist_info}/METADATA")
    minor = ".".join(info["torch_version"].split(".")[:2])
    requires_python = re.search(rb"^Requires-Python: (.+)$", metadata, re.M)
    return minor, info.get("label", ""), metadata, requires_python.group(1).decode().strip() if requires_python else ""


def page(title: str, links: list[str]) -> str:
    body = "\n".join(f"    {link}<br/>" for link in links)
    return (f"<!DOCTYPE html>\n<html>\n  <head>\n    <meta name=\"pypi:repository-version\" content=\"1.0\">\n"
            f"    <title>{html.escape(title)}</title>\n  </head>\n  <body>\n    <h1>{html.escape(title)}</h1>\n"
            f"{body}\n  </body>\n</html>\n")


def add_wheel(wheel: Path, site: Path, nightly: bool) -> Path:
    minor, label, metadata, _ = wheel_facts(wheel)
    if not label:
        raise NotIndexed(f"{wheel.name} has no local label (the PyPI default wheel): not indexed")
    parts = ["whl", *(["nightly"] if nightly else []), f"torch{minor}", label, PROJECT]
    project_dir = site.joinpath(*parts)
    project_dir.mkdir(parents=True, exist_ok=True)
    target = project_dir / wheel.name
    if target.exists():
        if sha256(target) != sha256(wheel):
            raise ValueError(f"{target} exists with different contents: released files are immutable; "
                             "bump the version instead")
    else:
        shutil.copy2(wheel, target)
    (project_dir / f"{wheel.name}.metadata").write_bytes(metadata)
    return project_dir


def write_project_page(project_dir: Path) -> None:
    links = []
    for wheel in sorted(project_dir.glob("*.whl")):
        _, _, _, requires_python = wheel_facts(wheel)
        metadata_hash = sha256(project_dir / f"{wheel.name}.metadata")
        attributes = [f'href="{quote(wheel.name)}#sha256={sha256(wheel)}"']
        if requires_python:
            attributes.append(f'data-requires-python="{html.escape(requires_python)}"')
        attributes.append(f'data-dist-info-metadata="sha256={metadata_hash}"')
        attributes.append(f'data-core-metadata="sha256={metadata_hash}"')
        links.append(f"<a {' '.join(attributes)}>{html.escape(wheel.name)}</a>")
    pair = "/".join(project_dir.parts[-3:-1])
    (project_dir / "index.html").write_text(page(f"Links for my_ops ({pair})", links))
    (project_dir.parent / "index.html").write_text(page(f"my_ops index ({pair})", [f'<a href="{PROJECT}/">{PROJECT}</a>']))


def build(site: Path, inputs: list[Path], nightly: bool) -> list[Path]:
    wheels: list[Path] = []
    for item in inputs:
        wheels += sorted(item.rglob("my_ops-*.whl")) if item.is_dir() else [item]
    touched = set()
    for wheel in wheels:
        try:
            touched.add(add_wheel(wheel, site, nightly))
        except NotIndexed as error:
            print(f"skip: {error}", file=sys.stderr)
    # every project page on disk, so pages stay right even for pairs not touched now
    for project_dir in sorted((site / "whl").rglob(PROJECT)) if (site / "whl").exists() else []:
        if project_dir.is_dir():
            write_project_page(project_dir)
    return sorted(touched)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("inputs", nargs="+", type=Path, help="wheels, or folders searched for my_ops-*.whl")
    parser.add_argument("--site", type=Path, required=True, help="the index root (created or extended)")
    parser.add_argument("--nightly", action="store_true", help="add to whl/nightly/ instead")
    args = parser.parse_args()
    try:
        indexed = build(args.site, args.inputs, args.nightly)
    except ValueError as error:
        print(f"error: {error}", file=sys.stderr)
        return 1
    for project_dir in indexed:
        print(f"indexed {project_dir.relative_to(args.site).parent}/")
    return 0


if __name__ == "__main__":
    sys.exit(main())
