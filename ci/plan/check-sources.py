#!/usr/bin/env python3
"""Check, before anything is built, that everything the run will download exists.

For one GitHub event's matrix (build_support/matrix.py gha): every torch wheel a
build or test job installs (torch X.Y.0 of that CUDA variant, for that
platform and Python) is on PyTorch's index (or PyPI, for PyPI's own
variant), PyPI's plain `torch==X.Y.0` is built with the CUDA version
matrix.toml's `pypi_cuda` says (read from its Linux x86_64 wheel's metadata,
PEP 658: the version of its `cuda-toolkit` / `nvidia-cuda-runtime[-cuXY]`
requirement), and every builder image the Linux builds run in exists. Each image
is resolved to its digest, written as JSON to --images-out: the builds of
this run use exactly those bytes (`image@sha256:...`), and the digest goes
into the release notes. And the image of every pinned Docker action
(ci/plan/expiry.toml's `image`, tagged with the pinned SHA: the PyPI
upload's) exists and is still the image recorded there (`image_digest`): a
pin without one stops the run here rather than the PyPI job after the
GitHub Release is public, and a tag PyPA re-pointed or rebuilt stops it
before that image is handed the run's OIDC token. The PyPI job checks the
action images again, alone, right before the upload (--action-images-only).

    ci/plan/check-sources.py --event push [--images-out images.json]
    ci/plan/check-sources.py --action-images-only

Environment (so the tests can stand in on 127.0.0.1): TORCH_INDEX_URL
(default https://download.pytorch.org/whl), PYPI_SIMPLE_URL (default
https://pypi.org/simple), REGISTRY_URL (default https://registry-1.docker.io),
REGISTRY_AUTH_URL (default https://auth.docker.io/token), ACTION_REGISTRY_URL
(default https://<the image's registry host>).
Exit status 1 with one line per missing thing; 0 when all exist.
"""

from __future__ import annotations

import argparse
import html
import json
import os
import re
import sys
import urllib.error
import urllib.parse
import urllib.request
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "build_support"))
import matrix  # noqa: E402

sys.path.insert(0, str(Path(__file__).resolve().parent))
import expiry  # noqa: E402

TORCH_INDEX = os.environ.get("TORCH_INDEX_URL", "https://download.pytorch.org/whl").rstrip("/")
PYPI_SIMPLE = os.environ.get("PYPI_SIMPLE_URL", "https://pypi.org/simple").rstrip("/")
REGISTRY = os.environ.get("REGISTRY_URL", "https://registry-1.docker.io").rstrip("/")
REGISTRY_AUTH = os.environ.get("REGISTRY_AUTH_URL", "https://auth.docker.io/token")
WHEEL_PLATFORM = {"linux": r"manylinux[0-9a-z_]*_x86_64", "linux-aarch64": r"manylinux[0-9a-z_]*_aarch64",
                  "windows": r"win_amd64", "macos": r"macosx_\d+_\d+_arm64"}
BUILD_PYTHON = "3.12"  # the Python of the Linux builder images and of the Windows and macOS build jobs
MANIFEST_TYPES = ", ".join([
    "application/vnd.oci.image.index.v1+json", "application/vnd.docker.distribution.manifest.list.v2+json",
    "application/vnd.oci.image.manifest.v1+json", "application/vnd.docker.distribution.manifest.v2+json"])


def fetch(url: str, headers: dict[str, str] | None = None, method: str = "GET") -> tuple[bytes, dict[str, str]]:
    request = urllib.request.Request(url, headers=headers or {}, method=method)
    with urllib.request.urlopen(request, timeout=60) as response:
        return response.read(), dict(response.headers.items())


_pages: dict[str, dict[str, str]] = {}


def wheel_links(index_page: str) -> dict[str, str]:
    """File name -> absolute URL of every file a PEP 503 project page lists (cached per page)."""
    if index_page not in _pages:
        body, _ = fetch(index_page)
        hrefs = [html.unescape(h) for h in re.findall(r'href="([^"#]+)', body.decode())]
        _pages[index_page] = {urllib.parse.unquote(h.rsplit("/", 1)[-1]): urllib.parse.urljoin(index_page, h)
                              for h in hrefs}
    return _pages[index_page]


def wheel_files(index_page: str) -> list[str]:
    """The file names a PEP 503 project page lists."""
    return list(wheel_links(index_page))


# The requirement that names the CUDA toolkit a torch wheel was built with:
# cuda-toolkit[...]==13.0.2 (torch 2.11 on), nvidia-cuda-runtime-cu12==12.8.90
# (CUDA 12 builds), nvidia-cuda-runtime==13.x (the CUDA 13 name without suffix).
CUDA_REQUIREMENT = re.compile(r"^(cuda-toolkit|nvidia-cuda-runtime(?:-cu\d+)?)\s*(?:\[[^\]]*\])?\s*"
                              r"==\s*(\d+)\.(\d+)", re.I)


def cuda_of_metadata(metadata: str) -> tuple[str, str] | None:
    """(CUDA major.minor, the requirement it was read from) of a torch wheel's METADATA; None for a CPU build."""
    for line in metadata.splitlines():
        if line.lower().startswith("requires-dist:"):
            requirement = line.split(":", 1)[1].strip()
            match = CUDA_REQUIREMENT.match(requirement)
            if match and "extra ==" not in requirement:
                return f"{match[2]}.{match[3]}", requirement.split(";")[0].strip()
    return None


def pypi_cuda_problem(minor: str, version: str, expected: str) -> str | None:
    """None when PyPI's plain torch `version` (Linux x86_64) is built with CUDA `expected`."""
    page = f"{PYPI_SIMPLE}/torch/"
    # any CPython's Linux x86_64 wheel: they share their requirements
    pattern = re.compile(rf"torch-{re.escape(version)}(-\d+)?-cp\d+-cp\d+t?-{WHEEL_PLATFORM['linux']}\.whl$")
    try:
        links = wheel_links(page)
        wheel = next((name for name in sorted(links) if pattern.match(name)), None)
        if wheel is None:
            return f"torch {version} for linux: no wheel on {page} to read its CUDA version from"
        metadata, _ = fetch(links[wheel] + ".metadata")  # PEP 658: the wheel's METADATA alone
    except (urllib.error.URLError, OSError) as error:
        return f"{page}: the metadata of PyPI's torch {version}: {error}"
    found = cuda_of_metadata(metadata.decode("utf-8", "replace"))
    if found is None:
        return (f"PyPI's torch {version} ({wheel}) requires no CUDA runtime: a CPU build, but "
                f"build_support/matrix.toml says pypi_cuda = \"{expected}\" for torch {minor}")
    cuda, requirement = found
    if cuda != expected:
        return (f"PyPI's torch {version} is built with CUDA {cuda} ({requirement}), but build_support/matrix.toml "
                f"says pypi_cuda = \"{expected}\" for torch {minor}: set [torch.\"{minor}\"] pypi_cuda = \"{cuda}\"")
    return None


def torch_wheel_problem(version: str, label: str, from_pypi: bool, platform: str, python: str) -> str | None:
    """None when torch `version` of CUDA `label` exists for that platform and Python."""
    tag = "cp" + python.replace(".", "")
    local = "" if from_pypi else rf"\+{label}"
    page = f"{PYPI_SIMPLE}/torch/" if not local else f"{TORCH_INDEX}/{label}/torch/"
    # (an optional build number; the ABI tag "none" of torch 2.10's macOS wheels)
    pattern = re.compile(rf"torch-{re.escape(version)}{local}(-\d+)?-{tag}-({tag}|none)-"
                         rf"{WHEEL_PLATFORM[platform]}\.whl$")
    try:
        files = wheel_files(page)
    except (urllib.error.URLError, OSError) as error:
        return f"{page}: {error}"
    if any(pattern.match(f) for f in files):
        return None
    return (f"torch {version}+{label} for {platform}, Python {python}: no such wheel on {page} "
            f"(PyTorch does not publish this pair: remove it from build_support/matrix.toml)")


def image_digest(image: str) -> str:
    """The digest of `repository:tag` in the registry; raises LookupError when it does not exist."""
    repository, _, tag = image.partition(":")
    if "/" not in repository:
        repository = f"library/{repository}"
    headers = {"Accept": MANIFEST_TYPES}
    try:
        token_body, _ = fetch(f"{REGISTRY_AUTH}?service=registry.docker.io&scope=repository:{repository}:pull")
        headers["Authorization"] = f"Bearer {json.loads(token_body)['token']}"
    except (urllib.error.URLError, OSError, KeyError, ValueError) as error:
        raise LookupError(f"{image}: no registry token ({error})") from error
    try:
        _, answer = fetch(f"{REGISTRY}/v2/{repository}/manifests/{tag}", headers, method="HEAD")
    except urllib.error.HTTPError as error:
        raise LookupError(f"{image}: the registry answers {error.code}: no such image") from error
    except (urllib.error.URLError, OSError) as error:
        raise LookupError(f"{image}: {error}") from error
    digest = {k.lower(): v for k, v in answer.items()}.get("docker-content-digest", "")
    if not digest.startswith("sha256:"):
        raise LookupError(f"{image}: the registry gave no digest")
    return digest


def action_images() -> list[tuple[str, str]]:
    """(`image:sha`, recorded digest or "") of every pinned action that runs a prebuilt image
    (expiry.toml's `image` and `image_digest`)."""
    table = expiry.load().get("actions", {})
    return sorted((f"{table[pin]['image']}:{pin.rsplit('@', 1)[1]}", table[pin].get("image_digest", ""))
                  for pin in expiry.pinned_actions() if "image" in table.get(pin, {}))


def action_image_problem(image: str, recorded: str) -> tuple[str, bool] | None:
    """None when the registry has `host/repository:tag` and it names the `recorded` digest, else
    (why not, whether only the digest is wrong) (OCI distribution API: an anonymous bearer token
    from the registry's own WWW-Authenticate challenge; the digest is the HEAD answer's
    Docker-Content-Digest)."""
    name, _, tag = image.rpartition(":")
    host, _, repository = name.partition("/")
    base = os.environ.get("ACTION_REGISTRY_URL", f"https://{host}").rstrip("/")
    url = f"{base}/v2/{repository}/manifests/{tag}"
    headers = {"Accept": MANIFEST_TYPES}
    for attempt in range(2):
        try:
            _, answer = fetch(url, headers, method="HEAD")
        except urllib.error.HTTPError as error:
            challenge = error.headers.get("WWW-Authenticate", "") if error.headers else ""
            if error.code == 401 and attempt == 0 and challenge.lower().startswith("bearer "):
                fields = dict(re.findall(r'(\w+)="([^"]*)"', challenge))
                query = urllib.parse.urlencode({k: v for k, v in fields.items() if k in ("service", "scope")})
                try:
                    body, _ = fetch(f"{fields.get('realm', '')}?{query}")
                    headers["Authorization"] = f"Bearer {json.loads(body)['token']}"
                except (urllib.error.URLError, OSError, KeyError, ValueError) as failure:
                    return f"{image}: no registry token ({failure})", False
                continue
            return (f"{image}: the registry answers {error.code}: the pinned action's image does not exist; "
                    "pin the action to a commit that has one (a release branch's head, not an annotated "
                    "tag's object) and record it in ci/plan/expiry.toml"), False
        except (urllib.error.URLError, OSError) as error:
            return f"{image}: {error}", False
        digest = {k.lower(): v for k, v in answer.items()}.get("docker-content-digest", "")
        if not recorded:
            return (f"{image}: no image_digest recorded in ci/plan/expiry.toml; the registry names "
                    f"{digest or '(no digest)'}: check it and record it", True)
        if digest != recorded:
            return (f"{image}: the tag now names {digest or '(no digest)'}, not the {recorded} recorded in "
                    "ci/plan/expiry.toml: the image that would hold this run's PyPI token changed; find out "
                    "why (PyPA re-pointed or rebuilt the tag) before recording the new digest", True)
        return None
    return f"{image}: the registry refused the token it issued", False


def needed(event: str) -> tuple[set[tuple[str, str, bool, str, str]], set[str]]:
    """(torch wheels as (version, label, from_pypi, platform, python), builder images) of one event's run."""
    data = matrix.load()
    wheels, images = set(), set()
    for job in matrix.BUILD_JOBS:
        for entry in matrix.gha_matrix(event, job, data)["include"]:
            build = matrix.find_build(entry["name"], data)
            wheels.add((build.torch_build_version, build.label, matrix.torch_from_pypi(build, entry["platform"]),
                        entry["platform"], BUILD_PYTHON))
            if entry.get("image"):
                images.add(entry["image"])
    for entry in matrix.gha_matrix(event, "test-cpu", data)["include"]:
        pair = matrix.find_pair(entry["name"], data)
        wheels.add((pair.torch_build_version, pair.label, matrix.torch_from_pypi(pair, entry["platform"]),
                    entry["platform"], entry["python"]))
    return wheels, images


def pypi_torches(event: str) -> list[tuple[str, str, str]]:
    """(minor, version, pypi_cuda) of every torch minor whose PyPI wheel the event's jobs install."""
    data = matrix.load()
    minors = {(w[0], w[1]) for w in needed(event)[0] if w[2]}  # (version, label) taken from PyPI
    out = []
    for minor, spec in data["torch"].items():
        cuda = spec.get("pypi_cuda")
        if cuda and any(version == spec["build_version"] for version, _ in minors):
            out.append((minor, spec["build_version"], cuda))
    return out


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--event")
    parser.add_argument("--images-out", type=Path)
    parser.add_argument("--action-images-only", action="store_true",
                        help="check only the pinned actions' images (the PyPI job, before the upload)")
    args = parser.parse_args()
    if args.action_images_only:
        problems = [p[0] for image, digest in action_images() if (p := action_image_problem(image, digest))]
        for problem in problems:
            print(f"::error::{problem}")
        if not problems:
            print("action images: " + ", ".join(f"{i} is {d}" for i, d in action_images()))
        return 1 if problems else 0
    if not args.event:
        parser.error("--event is required (or --action-images-only)")
    wheels, images = needed(args.event)
    problems = [p for w in sorted(wheels) if (p := torch_wheel_problem(*w))]
    pypi_variants = pypi_torches(args.event)
    problems += [p for v in pypi_variants if (p := pypi_cuda_problem(*v))]
    digests = {}
    for image in sorted(images):
        try:
            digests[image] = image_digest(image)
        except LookupError as error:
            problems.append(str(error))
    pinned_images = action_images()
    image_problems = [p for image, recorded in pinned_images if (p := action_image_problem(image, recorded))]
    # A missing image stops every run. A changed or unrecorded digest stops a release's (before the
    # GitHub Release is public; the PyPI job checks again before its upload); elsewhere it is a
    # warning: PyPA rebuilds a tag now and then, and pull requests and main need no PyPI token.
    release = os.environ.get("GITHUB_REF", "").startswith("refs/tags/v")
    warnings = [message for message, digest_only in image_problems if digest_only and not release]
    problems += [message for message, digest_only in image_problems if not (digest_only and not release)]
    print(f"checked {len(wheels)} torch wheels, the CUDA of {len(pypi_variants)} PyPI torch releases, "
          f"{len(images)} builder images and {len(pinned_images)} action images")
    for warning in warnings:
        print(f"::warning::{warning} (an error in a release's run)")
    for problem in problems:
        print(f"::error::{problem}")
    if args.images_out:
        args.images_out.write_text(json.dumps(digests, indent=1, sort_keys=True) + "\n")
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())
