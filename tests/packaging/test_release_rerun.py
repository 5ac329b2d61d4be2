"""Finishing a version that is partly public: a re-run compares what GitHub and PyPI already have with the
sealed files (ci/release/published.py), refuses any difference, and publishes only what is missing
(ci/release/publish-github-release.sh, the PyPI job). Recorded API answers, served on 127.0.0.1."""

from __future__ import annotations

import hashlib
import http.server
import json
import os
import subprocess
import sys
import threading
import urllib.parse
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
pytestmark = pytest.mark.skipif(not sys.platform.startswith("linux"), reason="a Linux-runner step")
FILES = ["my_ops-1.0.0+cu130-cp39-abi3-manylinux_2_28_x86_64.whl", "my_ops-1.0.0-cp39-abi3-manylinux_2_28_x86_64.whl",
         "my_ops-1.0.0.tar.gz", "SHA256SUMS"]


class Recorded:
    """GitHub's `GET /repos/my-ops/my_ops/releases/tags/TAG` (and asset downloads) and PyPI's JSON API."""

    def __init__(self, release: dict | None = None, pypi: dict | list | None = None, assets: dict | None = None):
        self.release, self.pypi, self.assets, self.asked = release, pypi, assets or {}, []
        self.pypi_asked: list[str] = []
        recorded = self

        class Handler(http.server.BaseHTTPRequestHandler):
            def do_GET(self):  # noqa: N802
                recorded.asked.append(self.path)
                body, kind = None, "application/json"
                if self.path.startswith("/repos/my-ops/my_ops/releases?") and recorded.release:
                    # the release list, drafts included (page 1 only)
                    body = json.dumps([recorded.release] if "page=1" in self.path else []).encode()
                elif (self.path.startswith("/repos/my-ops/my_ops/releases/tags/") and recorded.release
                      and not recorded.release.get("draft")):  # GitHub does not find a draft by its tag
                    # as GitHub embeds them: at most the first page of assets
                    body = json.dumps({**recorded.release, "assets": recorded.release["assets"][:100]}).encode()
                elif self.path.startswith("/repos/my-ops/my_ops/releases/7/assets?") and recorded.release:
                    query = urllib.parse.parse_qs(self.path.split("?", 1)[1])
                    size, page = int(query["per_page"][0]), int(query["page"][0])
                    body = json.dumps(recorded.release["assets"][(page - 1) * size:page * size]).encode()
                elif self.path.startswith("/assets/") and self.path[8:] in recorded.assets:
                    body, kind = recorded.assets[self.path[8:]], "application/octet-stream"
                elif self.path == "/pypi/my-ops/1.0.0/json" and recorded.pypi:
                    # a list: PyPI's successive answers (its JSON lags an upload), the last one repeated
                    answers = recorded.pypi if isinstance(recorded.pypi, list) else [recorded.pypi]
                    answer = answers[min(len(recorded.pypi_asked), len(answers) - 1)]
                    recorded.pypi_asked.append(self.path)
                    body = json.dumps(answer).encode() if answer is not None else None
                self.send_response(200 if body is not None else 404)
                self.send_header("Content-Type", kind)
                self.end_headers()
                self.wfile.write(body if body is not None else b'{"message": "Not Found"}')

            def log_message(self, *args):
                pass

        self.server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        threading.Thread(target=self.server.serve_forever, daemon=True).start()
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}"
        self.env = {**os.environ, "API_URL": self.url, "REPOSITORY": "my-ops/my_ops", "GH_TOKEN": "t",
                    "PYPI_JSON_URL": f"{self.url}/pypi"}

    def run(self, *args: str, output: Path | None = None) -> subprocess.CompletedProcess:
        env = {**self.env, **({"GITHUB_OUTPUT": str(output)} if output else {})}
        return subprocess.run([sys.executable, str(ROOT / "ci/release/published.py"), *args], env=env,
                              capture_output=True, text=True, timeout=60)


@pytest.fixture
def dist(tmp_path) -> Path:
    folder = tmp_path / "dist"
    folder.mkdir()
    for name in FILES:
        (folder / name).write_bytes(os.urandom(256))
    return folder


def _sha(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def _release(dist: Path, names: list[str], draft: bool = False, digests: bool = True) -> dict:
    return {"id": 7, "tag_name": "v1.0.0", "draft": draft, "assets": [
        {"name": n, "url": f"ASSET/{n}", "digest": f"sha256:{_sha(dist / n)}" if digests else None}
        for n in names]}


def _served(recorded: Recorded, release: dict) -> dict:
    for asset in release["assets"]:
        asset["url"] = asset["url"].replace("ASSET", f"{recorded.url}/assets")
    recorded.release = release
    return release


def test_nothing_published_means_everything_is_missing(dist):
    result = Recorded().run("github", "--tag", "v1.0.0", "--dir", str(dist), "--exact")
    assert result.returncode == 0, result.stdout + result.stderr
    assert sorted(result.stdout.split()) == sorted(FILES)


def test_a_draft_counts_as_not_published(dist):
    recorded = Recorded()
    _served(recorded, _release(dist, FILES, draft=True))
    result = recorded.run("github", "--tag", "v1.0.0", "--dir", str(dist), "--exact")
    assert result.returncode == 0 and sorted(result.stdout.split()) == sorted(FILES)


@pytest.mark.parametrize("digests", [True, False])  # without GitHub's digest: downloaded and hashed
def test_published_identical_assets_are_skipped_and_only_the_missing_listed(dist, digests):
    recorded = Recorded(assets={n: (dist / n).read_bytes() for n in FILES})
    _served(recorded, _release(dist, FILES[:2], digests=digests))
    result = recorded.run("github", "--tag", "v1.0.0", "--dir", str(dist), "--exact")
    assert result.returncode == 0, result.stdout + result.stderr
    assert sorted(result.stdout.split()) == sorted(FILES[2:])
    assert any(p.startswith("/assets/") for p in recorded.asked) == (not digests)


def test_a_published_asset_with_other_bytes_is_refused_loudly(dist):
    recorded = Recorded()
    release = _served(recorded, _release(dist, FILES))
    release["assets"][0]["digest"] = "sha256:" + "0" * 64
    result = recorded.run("github", "--tag", "v1.0.0", "--dir", str(dist), "--exact")
    assert result.returncode == 1
    assert f"::error::{FILES[0]}: published with other bytes" in result.stderr


def test_every_page_of_a_large_releases_assets_is_read(dist):
    """The rolling nightly holds hundreds of assets; one beyond the first 100 with other bytes is refused."""
    recorded = Recorded()
    release = _release(dist, FILES)
    release["assets"] = [{"name": f"my_ops-0.0.{i}.tar.gz", "url": "ASSET/x", "digest": "sha256:" + "0" * 64}
                         for i in range(150)] + release["assets"]
    release["assets"][-1]["digest"] = "sha256:" + "1" * 64  # SHA256SUMS, on the second page
    _served(recorded, release)
    result = recorded.run("github", "--tag", "nightly", "--dir", str(dist))
    assert result.returncode == 1 and "SHA256SUMS: published with other bytes" in result.stderr, result.stderr


@pytest.mark.parametrize("draft", [True, False])
def test_a_release_goes_public_only_holding_exactly_the_sealed_files(dist, draft):
    """--complete (finalize): the draft, or the release a re-run finished, holds DIR's files, all of
    them, with DIR's bytes: an asset added by hand, one missing or one differing stops it."""
    def run(names: list[str], change=None) -> subprocess.CompletedProcess:
        recorded = Recorded()
        release = _release(dist, names, draft=draft)
        if change:
            change(release)
        _served(recorded, release)
        return recorded.run("github", "--tag", "v1.0.0", "--dir", str(dist), "--complete")

    assert run(FILES).returncode == 0
    extra = run(FILES, lambda r: r["assets"].append({"name": "notes.txt", "url": "ASSET/n",
                                                     "digest": "sha256:" + "0" * 64}))
    assert extra.returncode == 1 and "notes.txt: published in release v1.0.0 but not part" in extra.stderr
    missing = run(FILES[:3])
    assert missing.returncode == 1 and f"{FILES[3]}: sealed but not in release v1.0.0" in missing.stderr
    other = run(FILES, lambda r: r["assets"][0].update(digest="sha256:" + "1" * 64))
    assert other.returncode == 1 and "published with other bytes" in other.stderr


def test_a_release_asset_the_seal_does_not_name_is_refused(dist):
    recorded = Recorded()
    release = _served(recorded, _release(dist, FILES))
    release["assets"].append({"name": "extra.whl", "url": "x", "digest": "sha256:" + "1" * 64})
    assert recorded.run("github", "--tag", "v1.0.0", "--dir", str(dist), "--exact").returncode == 1
    # the rolling nightly release holds other versions: not --exact
    assert recorded.run("github", "--tag", "nightly", "--dir", str(dist)).returncode == 0


def _pypi(dist: Path, names: list[str]) -> dict:
    return {"info": {"name": "my-ops", "version": "1.0.0"},
            "urls": [{"filename": n, "digests": {"sha256": _sha(dist / n), "md5": "x"}} for n in names]}


def test_pypi_files_already_uploaded_are_set_aside(dist, tmp_path):
    pypi_dir = tmp_path / "pypi"
    pypi_dir.mkdir()
    for name in FILES[1:3]:  # the label-free wheel and the sdist
        (pypi_dir / name).write_bytes((dist / name).read_bytes())
    output = tmp_path / "output"
    result = Recorded(pypi=_pypi(dist, FILES[1:2])).run(
        "pypi", "--version", "1.0.0", "--dir", str(pypi_dir), "--set-aside", str(tmp_path / "aside"), output=output)
    assert result.returncode == 0, result.stdout + result.stderr
    assert [p.name for p in pypi_dir.iterdir()] == [FILES[2]]
    assert [p.name for p in (tmp_path / "aside").iterdir()] == [FILES[1]]
    assert output.read_text() == "pending=true\n"


def test_pypi_with_everything_uploaded_has_nothing_pending(dist, tmp_path):
    output = tmp_path / "output"
    pypi_dir = tmp_path / "pypi"
    pypi_dir.mkdir()
    (pypi_dir / FILES[2]).write_bytes((dist / FILES[2]).read_bytes())
    result = Recorded(pypi=_pypi(dist, FILES[2:3])).run(
        "pypi", "--version", "1.0.0", "--dir", str(pypi_dir), "--set-aside", str(tmp_path / "aside"), output=output)
    assert result.returncode == 0 and output.read_text() == "pending=false\n"


def test_pypi_file_with_other_bytes_stops_the_upload(dist, tmp_path):
    pypi_dir = tmp_path / "pypi"
    pypi_dir.mkdir()
    (pypi_dir / FILES[1]).write_bytes(b"rebuilt")
    output = tmp_path / "output"
    result = Recorded(pypi=_pypi(dist, FILES[1:2])).run(
        "pypi", "--version", "1.0.0", "--dir", str(pypi_dir), "--set-aside", str(tmp_path / "aside"), output=output)
    assert result.returncode == 1 and "published with other bytes" in result.stderr
    assert (pypi_dir / FILES[1]).exists() and not output.exists()


def _holds(dist: Path, recorded: Recorded, tries: int = 4) -> subprocess.CompletedProcess:
    """published.py pypi-holds with this run's seal: the manifest's wheels and the sdist's sha256."""
    recorded.env.update(MANIFEST=json.dumps({n: _sha(dist / n) for n in FILES[:2]}),
                        SDIST_SHA256=_sha(dist / FILES[2]), RETRY_SECONDS="0.01", TRIES=str(tries))
    return recorded.run("pypi-holds", "--version", "1.0.0")


def test_pypi_holds_the_sealed_files_once_its_json_catches_up(dist):
    """PyPI's JSON lags an upload: 404, then part of the files, then all, each with its sealed sha256."""
    recorded = Recorded(pypi=[None, _pypi(dist, FILES[1:2]), _pypi(dist, FILES[1:3])])
    result = _holds(dist, recorded)
    assert result.returncode == 0, result.stderr
    assert len(recorded.pypi_asked) == 3 and "does not list my_ops-1.0.0.tar.gz yet" in result.stderr
    assert "holds exactly the 2 sealed files" in result.stderr


def test_pypi_holding_other_bytes_than_the_seal_fails_at_once(dist):
    answer = _pypi(dist, FILES[1:3])
    answer["urls"][0]["digests"]["sha256"] = hashlib.sha256(b"what the upload image sent").hexdigest()
    recorded = Recorded(pypi=answer)
    result = _holds(dist, recorded)
    assert result.returncode == 1 and len(recorded.pypi_asked) == 1
    assert f"{FILES[1]}: PyPI holds sha256" in result.stderr and _sha(dist / FILES[1]) in result.stderr


def test_pypi_holding_a_file_the_seal_does_not_name_fails(dist):
    answer = _pypi(dist, FILES[1:3])
    answer["urls"].append({"filename": "my_ops-1.0.0-cp39-abi3-win_amd64.whl", "digests": {"sha256": "0" * 64}})
    result = _holds(dist, Recorded(pypi=answer))
    assert result.returncode == 1 and "my_ops-1.0.0-cp39-abi3-win_amd64.whl: on PyPI but not one of" in result.stderr


def test_pypi_never_listing_a_sealed_file_fails_after_the_retries(dist):
    recorded = Recorded(pypi=_pypi(dist, FILES[2:3]))
    result = _holds(dist, recorded, tries=3)
    assert result.returncode == 1 and len(recorded.pypi_asked) == 3
    assert f"PyPI still does not list {FILES[1]}" in result.stderr


# ------------------------------------------ publish-github-release.sh, with a gh that records its calls
FAKE_GH = """#!/usr/bin/env bash
echo "gh $*" >>"$GH_LOG"
case "$1 $2" in
    "release view")
        [ "$STATE" = none ] && { echo "release not found" >&2; exit 1; }
        [ "$STATE" = error ] && { echo "HTTP 502: Bad Gateway (https://api.github.com/graphql)" >&2; exit 1; }
        case "$*" in
            *isDraft*) [ "$STATE" = draft ] && echo true || echo false ;;
            *assets*) printf '%s\n' "$ASSETS" ;;
        esac ;;
    "release list") printf '%s\n' ${PUBLISHED_TAGS:-} ;;
esac
"""


def _publish_github_release(tmp_path: Path, env: dict, state: str, *args: str) -> tuple:
    """publish-github-release.sh ARGS with FAKE_GH in the release state `state`: (result, gh's call log)."""
    gh = tmp_path / "bin" / "gh"
    gh.parent.mkdir()
    gh.write_text(FAKE_GH)
    gh.chmod(0o755)
    log = tmp_path / "gh.log"
    env = {**env, "PATH": f"{gh.parent}:{os.environ['PATH']}", "GH_LOG": str(log), "STATE": state,
           "GH_REPO": "my-ops/my_ops"}
    result = subprocess.run(["bash", str(ROOT / "ci/release/publish-github-release.sh"), *args], env=env,
                            capture_output=True, text=True, timeout=60)
    return result, log


@pytest.mark.parametrize("tag,published_tags,latest", [
    ("v1.0.0", "", "--latest"),                          # the first release
    ("v1.1.0", "v1.0.0 v1.0.1", "--latest"),
    ("v1.0.2", "v1.0.0 v1.0.1 v1.1.0", "--latest=false"),  # a patch of an older line
    ("v1.0.10", "v1.0.9", "--latest"),                   # versions, not strings
])
def test_finalize_marks_only_the_highest_version_latest(tmp_path, tag, published_tags, latest):
    result, log = _publish_github_release(tmp_path, {**os.environ, "PUBLISHED_TAGS": published_tags}, "draft",
                                          "finalize", "release", tag)
    assert result.returncode == 0, result.stderr
    assert f"gh release edit {tag} --draft=false {latest}" in log.read_text().splitlines()


@pytest.mark.parametrize("state,published,uploads", [
    ("none", [], "create+all"),          # first attempt: a draft with every file
    ("draft", [], "clobber"),            # a re-run before it went public: the draft is replaced
    ("public", FILES[:2], "missing"),    # a re-run after: only what is missing, nothing replaced
    ("public", FILES, "nothing"),        # everything there, identical: nothing to do
])
def test_github_release_upload_finishes_a_partly_published_release(dist, tmp_path, state, published, uploads):
    recorded = Recorded()
    if published:
        _served(recorded, _release(dist, published))
    result, log = _publish_github_release(tmp_path, recorded.env, state, "upload", "release", "v1.0.0", str(dist))
    assert result.returncode == 0, result.stdout + result.stderr
    calls = [line for line in (log.read_text().splitlines() if log.exists() else []) if "release upload" in line]
    if uploads in ("create+all", "clobber"):
        assert len(calls) == 1 and "--clobber" in calls[0] and all(n in calls[0] for n in FILES)
        assert ("release create" in log.read_text()) == (uploads == "create+all")
    elif uploads == "missing":
        assert len(calls) == 1 and "--clobber" not in calls[0]
        assert all((n in calls[0]) == (n not in published) for n in FILES), calls
    else:
        assert calls == [] and "nothing to upload" in result.stdout


def test_github_release_upload_stops_when_gh_cannot_tell_whether_the_release_exists(dist, tmp_path):
    """A failed lookup (a 5xx) is not "no release": the upload must not --clobber what may be public."""
    result, log = _publish_github_release(tmp_path, Recorded().env, "error", "upload", "release", "v1.0.0",
                                          str(dist))
    assert result.returncode != 0 and "cannot tell whether release v1.0.0 exists" in result.stderr
    assert "release upload" not in log.read_text() and "release create" not in log.read_text()


def test_github_release_upload_refuses_a_published_release_with_other_bytes(dist, tmp_path):
    recorded = Recorded()
    release = _served(recorded, _release(dist, FILES))
    release["assets"][1]["digest"] = "sha256:" + "2" * 64
    result, log = _publish_github_release(tmp_path, recorded.env, "public", "upload", "release", "v1.0.0", str(dist))
    assert result.returncode != 0 and "published with other bytes" in result.stderr
    assert "release upload" not in log.read_text()


def test_a_nightly_upload_makes_room_first_whatever_verify_said(tmp_path):
    """Nights whose verify failed skip prune-nightly: the upload itself deletes versions beyond the newest
    nightly_keep, so the rolling release never reaches GitHub's 1000 assets a release."""
    keep = int(subprocess.run([sys.executable, str(ROOT / "build_support/matrix.py"), "default", "nightly_keep"],
                              capture_output=True, text=True, check=True).stdout)
    versions = [f"1.0.1.dev202611{day:02d}0317" for day in range(1, keep + 4)]  # keep + 3 nights published
    assets = [name for v in versions for name in (f"my_ops-{v}+cu130-cp39-abi3-manylinux_2_28_x86_64.whl",
                                                  f"my_ops-{v}+cu130-cp39-abi3-manylinux_2_28_x86_64.whl.metadata",
                                                  f"my_ops-{v}.tar.gz", f"SHA256SUMS-{v}")]
    tonight = tmp_path / "dist"
    tonight.mkdir()
    (tonight / "my_ops-1.0.1.dev202611300317+cu130-cp39-abi3-manylinux_2_28_x86_64.whl").write_bytes(b"w")
    recorded = Recorded()
    env = {**recorded.env, "COMMIT": "c" * 40, "ASSETS": "\n".join(assets)}
    result, log = _publish_github_release(tmp_path, env, "public", "upload", "nightly", "nightly", str(tonight))
    assert result.returncode == 0, result.stdout + result.stderr
    calls = log.read_text().splitlines()
    deleted = [c.split()[4] for c in calls if "delete-asset" in c]
    assert sorted(deleted) == sorted(a for a in assets if any(v in a for v in versions[:3])), deleted
    upload = next(i for i, c in enumerate(calls) if "release upload" in c)
    assert upload > max(i for i, c in enumerate(calls) if "delete-asset" in c), "room is made before the upload"


# ------------------------------------------ fetch-released-wheels.sh: listed by the API, fetched outside it
FETCH_GH = """#!/usr/bin/env bash
echo "gh $*" >>"$GH_LOG"
jq_filter=""
for ((i = 1; i <= $#; i++)); do [ "${!i}" = --jq ] && { j=$((i + 1)); jq_filter=${!j}; }; done
case "$1 $2" in
    "release list") printf '%s\\n' '[{"tagName": "v0.9.0"}, {"tagName": "nightly"}]' | jq -r "$jq_filter" ;;
    "api repos/{owner}/{repo}/releases/tags/v0.9.0") echo '{"id": 7}' | jq -r "$jq_filter" ;;
    "api --paginate") jq -r "$jq_filter" "$ASSETS_JSON" ;;
    *) echo "unexpected: gh $*" >&2; exit 1 ;;
esac
"""


def _fetch_env(tmp_path: Path, assets: list[dict]) -> dict[str, str]:
    """The environment of fetch-released-wheels.sh with FETCH_GH as `gh`, listing `assets`."""
    (tmp_path / "assets.json").write_text(json.dumps(assets))
    gh = tmp_path / "bin" / "gh"
    gh.parent.mkdir()
    gh.write_text(FETCH_GH)
    gh.chmod(0o755)
    return {**os.environ, "PATH": f"{gh.parent}:{os.environ['PATH']}", "GH_LOG": str(tmp_path / "gh.log"),
            "ASSETS_JSON": str(tmp_path / "assets.json")}


def test_fetch_downloads_the_labelled_wheels_by_their_download_urls(tmp_path):
    labelled = "my_ops-0.9.0+cu126-cp39-abi3-manylinux_2_28_x86_64.whl"
    others = ["my_ops-0.9.0-cp39-abi3-manylinux_2_28_x86_64.whl", f"{labelled}.metadata", "SHA256SUMS",
              "my_ops-0.9.0.tar.gz"]
    recorded = Recorded(assets={name: os.urandom(64) for name in [labelled, *others]})
    assets = [{"name": n, "url": f"{recorded.url}/api-asset/{n}", "browser_download_url": f"{recorded.url}/assets/{n}"}
              for n in [labelled, *others]]
    env = _fetch_env(tmp_path, assets)
    result = subprocess.run(["bash", str(ROOT / "ci/release/fetch-released-wheels.sh"), str(tmp_path / "out")],
                            env=env, capture_output=True, text=True, timeout=60)
    assert result.returncode == 0, result.stdout + result.stderr
    fetched = sorted(p.relative_to(tmp_path / "out").as_posix() for p in (tmp_path / "out").rglob("*") if p.is_file())
    assert fetched == [f"v0.9.0/{labelled}"]
    assert (tmp_path / "out" / "v0.9.0" / labelled).read_bytes() == recorded.assets[labelled]
    assert recorded.asked == [f"/assets/{labelled}"], "files come from browser_download_url, one request each"
    # a failed download fails the script: an index without an earlier release's wheels must not deploy
    del recorded.assets[labelled]
    (tmp_path / "out" / "v0.9.0" / labelled).unlink()
    result = subprocess.run(["bash", str(ROOT / "ci/release/fetch-released-wheels.sh"), str(tmp_path / "out")],
                            env=env, capture_output=True, text=True, timeout=60)
    assert result.returncode != 0


def test_fetch_refuses_bytes_that_are_not_the_assets_digest(tmp_path):
    """The pages job indexes what it downloads: bytes other than the API's digest of the asset stop it."""
    labelled = "my_ops-0.9.0+cu126-cp39-abi3-manylinux_2_28_x86_64.whl"
    recorded = Recorded(assets={labelled: os.urandom(64)})
    digest = "sha256:" + hashlib.sha256(recorded.assets[labelled]).hexdigest()
    assets = [{"name": labelled, "browser_download_url": f"{recorded.url}/assets/{labelled}", "digest": digest}]
    env = _fetch_env(tmp_path, assets)
    fetch = ["bash", str(ROOT / "ci/release/fetch-released-wheels.sh"), str(tmp_path / "out")]
    assert subprocess.run(fetch, env=env, capture_output=True, text=True, timeout=60).returncode == 0
    (tmp_path / "out" / "v0.9.0" / labelled).unlink()
    recorded.assets[labelled] = b"served instead"
    result = subprocess.run(fetch, env=env, capture_output=True, text=True, timeout=60)
    assert result.returncode != 0 and "are not the release asset's digest" in result.stderr, result.stderr


def test_finalize_refuses_a_draft_that_is_not_the_sealed_folder(dist, tmp_path):
    """An asset someone added to the draft would go public with it: finalize stops before the edit."""
    recorded = Recorded()
    release = _release(dist, FILES, draft=True)
    release["assets"].append({"name": "extra.whl", "url": "ASSET/extra", "digest": "sha256:" + "0" * 64})
    _served(recorded, release)
    result, log = _publish_github_release(tmp_path, {**recorded.env, "PUBLISHED_TAGS": ""}, "draft",
                                          "finalize", "release", "v1.0.0", str(dist))
    assert result.returncode != 0 and "extra.whl: published in release v1.0.0" in result.stderr
    assert "release edit" not in (log.read_text() if log.exists() else "")
    release["assets"].pop()
    (tmp_path / "again").mkdir()
    result, log = _publish_github_release(tmp_path / "again", {**recorded.env, "PUBLISHED_TAGS": ""}, "draft",
                                          "finalize", "release", "v1.0.0", str(dist))
    assert result.returncode == 0, result.stderr
    assert "gh release edit v1.0.0 --draft=false --latest" in log.read_text()
