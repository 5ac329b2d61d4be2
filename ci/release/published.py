#!/usr/bin/env python3
"""What of a release folder is already published, and whether it is byte for byte the same.

    ci/release/published.py github --tag TAG --dir release/dist [--exact]
        prints the names of DIR's files the GitHub Release TAG does not have
        yet, one a line (all of them when the release is not published);
        exits 1 when a published asset of the same name has other bytes, and
        with --exact also when the release has an asset DIR does not.
    ci/release/published.py github --tag TAG --dir release/dist --complete
        before a draft goes public: exits 1 unless the release (its draft when
        not published yet) holds exactly DIR's files, each with DIR's bytes.
    ci/release/published.py pypi --version VERSION --dir release/pypi --set-aside DIR
        moves DIR's files that PyPI already has, with the same sha256, to
        --set-aside, and writes `pending=true|false` (files left to upload) to
        $GITHUB_OUTPUT; exits 1 when PyPI has a file of the same name with
        other bytes.
    ci/release/published.py pypi-holds --version VERSION
        after the upload: exits 0 once PyPI lists exactly the sealed files of
        my_ops VERSION, each with its sealed sha256: the label-free wheels of
        MANIFEST (the bundle job's seal, JSON name -> sha256) and the sdist
        my_ops-VERSION.tar.gz (PEP 625's name) with SDIST_SHA256 (the
        assemble job's output). A file with other bytes, or one the seal does
        not name, fails at once; a sealed file not listed yet is asked for
        again (PyPI's JSON API lags an upload by up to minutes: RETRY_SECONDS,
        default 15, doubled each time up to 20 times it, TRIES, default 10) and fails after that.

Why: a re-run after part of a version went public (the GitHub Release out,
PyPI failed) must finish it, not stop at the first step that finds its work
done, and must never replace or add to what users already downloaded with
other bytes. The folder was checked against the run's seal just before
(ci/release/check-upload.py), so "the same bytes as published" means "the
sealed bytes". A name published with other bytes is refused loudly: those
files are a different build, and only a new version can carry new bytes.

Digests: GitHub reports a `sha256:...` digest for every release asset
(since June 2025); an asset without one is downloaded and hashed. PyPI's
JSON API lists each file's sha256.
Environment: API_URL, REPOSITORY (owner/name), GH_TOKEN (github); PYPI_JSON_URL
(default https://pypi.org/pypi) (pypi). Any server that answers as those APIs
do works (tests/packaging/test_release_rerun.py serves recorded answers).
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import shutil
import sys
import time
import urllib.error
import urllib.request
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from file_sha256 import sha256  # noqa: E402


def fetch(url: str, headers: dict[str, str]) -> bytes | None:
    """The body, or None for 404."""
    try:
        with urllib.request.urlopen(urllib.request.Request(url, headers=headers), timeout=300) as response:
            return response.read()
    except urllib.error.HTTPError as error:
        if error.code == 404:
            return None
        raise


def draft_release(base: str, headers: dict[str, str], tag: str) -> dict | None:
    """The draft release named TAG (GET /releases/tags/TAG never answers a draft: list them)."""
    page = 1
    while True:
        batch = json.loads(fetch(f"{base}/releases?per_page=100&page={page}", headers) or b"[]")
        found = [r for r in batch if r.get("draft") and r.get("tag_name") == tag]
        if found or len(batch) < 100:
            return found[0] if found else None
        page += 1


def github_digests(tag: str, drafts: bool = False) -> dict[str, str] | None:
    """Asset name -> sha256 of the published release TAG (with `drafts`, else of its draft); None
    when there is none."""
    base = f"{os.environ['API_URL'].rstrip('/')}/repos/{os.environ['REPOSITORY']}"
    headers = {"Authorization": f"Bearer {os.environ['GH_TOKEN']}", "Accept": "application/vnd.github+json",
               "X-GitHub-Api-Version": "2022-11-28"}
    body = fetch(f"{base}/releases/tags/{tag}", headers)
    release = json.loads(body) if body else None
    if not release or release.get("draft"):
        release = draft_release(base, headers, tag) if drafts else None
    if not release:
        return None
    digests = {}
    for asset in release_assets(base, release, headers):
        digest = asset.get("digest") or ""
        if digest.startswith("sha256:"):
            digests[asset["name"]] = digest.removeprefix("sha256:")
        else:  # an asset uploaded before GitHub computed digests: hash its bytes
            data = fetch(asset["url"], {**headers, "Accept": "application/octet-stream"}) or b""
            digests[asset["name"]] = hashlib.sha256(data).hexdigest()
    return digests


def release_assets(base: str, release: dict, headers: dict[str, str]) -> list[dict]:
    """Every asset of `release`, from the paginated assets endpoint (100 a page): the list embedded in
    the release is not documented to be complete, and the rolling nightly holds hundreds."""
    assets, page = [], 1
    while True:
        body = fetch(f"{base}/releases/{release['id']}/assets?per_page=100&page={page}", headers)
        batch = json.loads(body) if body else []
        assets += batch
        if len(batch) < 100:
            return assets
        page += 1


def pypi_digests(version: str) -> dict[str, str]:
    """File name -> sha256 of what PyPI has for my_ops VERSION (empty when nothing)."""
    base = os.environ.get("PYPI_JSON_URL", "https://pypi.org/pypi").rstrip("/")
    body = fetch(f"{base}/my-ops/{version}/json", {"Accept": "application/json"})
    return {f["filename"]: f["digests"]["sha256"] for f in json.loads(body)["urls"]} if body else {}


def pypi_holds_problems(sealed: dict[str, str], published: dict[str, str]) -> tuple[list[str], list[str]]:
    """(sealed files PyPI does not list yet, problems no wait can fix) for my_ops on PyPI."""
    missing = sorted(set(sealed) - set(published))
    problems = [f"{name}: PyPI holds sha256 {published[name]}, the seal says {sealed[name]}"
                for name in sorted(set(sealed) & set(published)) if published[name] != sealed[name]]
    problems += [f"{name}: on PyPI but not one of this run's sealed files (uploaded by hand?)"
                 for name in sorted(set(published) - set(sealed))]
    return missing, problems


def pypi_holds(version: str) -> int:
    """The `pypi-holds` mode (the module's docstring)."""
    sealed = {name: digest for name, digest in json.loads(os.environ["MANIFEST"]).items() if "+" not in name}
    sealed[f"my_ops-{version}.tar.gz"] = os.environ["SDIST_SHA256"]
    # PyPI's JSON API is served through a CDN that can answer a cached 404 for minutes after the
    # upload (more so for a project's first version): about 28 minutes of asking (15 s, doubled, at
    # most 5 minutes a wait) before a file counts as missing.
    delay, tries = float(os.environ.get("RETRY_SECONDS", "15")), int(os.environ.get("TRIES", "10"))
    for attempt in range(tries):
        try:
            missing, problems = pypi_holds_problems(sealed, pypi_digests(version))
        except (urllib.error.URLError, OSError, ValueError) as error:  # HTTPError is a URLError
            missing, problems = sorted(sealed), []
            print(f"published: PyPI's JSON API: {error}", file=sys.stderr)
        if problems:
            for problem in problems:
                print(f"::error::{problem}", file=sys.stderr)
            print(f"::error::PyPI's my_ops {version} is not what this run sealed and tested; files on PyPI "
                  "can be yanked but never replaced: yank this version and publish a new one", file=sys.stderr)
            return 1
        if not missing:
            print(f"published: PyPI holds exactly the {len(sealed)} sealed files of my_ops {version}, "
                  "each with its sealed sha256", file=sys.stderr)
            return 0
        if attempt + 1 < tries:
            wait = min(delay * 2 ** attempt, 20 * delay)
            print(f"published: PyPI does not list {', '.join(missing)} yet; asking again in {wait:.0f} s",
                  file=sys.stderr)
            time.sleep(wait)
    print(f"::error::PyPI still does not list {', '.join(missing)} for my_ops {version}", file=sys.stderr)
    return 1


def compare(folder: Path, published: dict[str, str]) -> tuple[list[Path], list[Path], list[str]]:
    """(already published with the same bytes, not yet published, problems)."""
    same, missing, problems = [], [], []
    for path in sorted(p for p in folder.iterdir() if p.is_file()):
        if path.name not in published:
            missing.append(path)
        elif published[path.name] == sha256(path):
            same.append(path)
        else:
            problems.append(f"{path.name}: published with other bytes (sha256 {published[path.name]}, sealed "
                            f"{sha256(path)}); published files are never replaced: this run cannot finish "
                            "this version (a new version carries new builds)")
    return same, missing, problems


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    sub = parser.add_subparsers(dest="where", required=True)
    github = sub.add_parser("github")
    github.add_argument("--tag", required=True)
    github.add_argument("--dir", type=Path, required=True)
    github.add_argument("--exact", action="store_true", help="the release holds this folder's files only")
    github.add_argument("--complete", action="store_true",
                        help="before a draft goes public: the release (its draft, if not published) holds "
                             "exactly this folder's files, none missing (implies --exact)")
    pypi = sub.add_parser("pypi")
    pypi.add_argument("--version", required=True)
    pypi.add_argument("--dir", type=Path, required=True)
    pypi.add_argument("--set-aside", type=Path, required=True)
    holds = sub.add_parser("pypi-holds")
    holds.add_argument("--version", required=True)
    args = parser.parse_args(argv)
    if args.where == "pypi-holds":
        return pypi_holds(args.version)
    if args.where == "github":
        published = github_digests(args.tag, drafts=args.complete)
        if published is None:
            print(f"published: release {args.tag} is not published yet", file=sys.stderr)
            published = {}
        same, missing, problems = compare(args.dir, published)
        if args.complete:
            problems += [f"{path.name}: sealed but not in release {args.tag}" for path in missing]
        if args.exact or args.complete:
            local = {p.name for p in args.dir.iterdir()}
            problems += [f"{name}: published in release {args.tag} but not part of this run's sealed files"
                         for name in sorted(set(published) - local)]
    else:
        same, missing, problems = compare(args.dir, pypi_digests(args.version))
    for problem in problems:  # on stderr: stdout is the list of names publish-github-release.sh reads
        print(f"::error::{problem}", file=sys.stderr)
    if problems:
        return 1
    where = f"release {args.tag}" if args.where == "github" else f"PyPI (my_ops {args.version})"
    print(f"published: {len(same)} files already on {where} with the sealed bytes, {len(missing)} to publish",
          file=sys.stderr)
    if args.where == "github":
        for path in missing:
            print(path.name)
        return 0
    args.set_aside.mkdir(parents=True, exist_ok=True)
    for path in same:
        print(f"  already on PyPI, identical: {path.name}", file=sys.stderr)
        shutil.move(str(path), args.set_aside / path.name)
    with open(os.environ.get("GITHUB_OUTPUT", "/dev/stdout"), "a") as output:
        output.write(f"pending={'true' if missing else 'false'}\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
