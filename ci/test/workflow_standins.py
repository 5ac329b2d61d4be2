"""Stand-ins on 127.0.0.1 for what the workflows talk to, for ci/test/workflow_test.py.

One HTTP server answers as
  /api/...           GitHub's REST API: a run's jobs (names as the jobs API
                     gives them, "wheels / gpu ..." under release.yml), the
                     run's cancel, environments and their deployment rules,
                     Pages, immutable releases, fork-approval policy;
  /torch/LABEL/torch/, /pypi/torch/
                     PyTorch's index and PyPI's simple page for torch: every
                     torch wheel the matrix names (names only), and on
                     PyTorch's index also `label_torch_wheels`, this host's
                     torch relabelled (torch-2.11.0+cpu: the CPU build's
                     venv installs it from /torch-files/);
  /pip/simple/NAME/, /pip/files/FILE
                     the index pip installs from (PIP_INDEX_URL): torch is
                     this host's own (`host_wheels`, a wheel that links the
                     installed torch instead of 4 GB of copies), every other
                     name is redirected to PyPI;
  /registry/...      a container registry (token and manifest digests; a
                     pinned action's image has the digest ci/plan/expiry.toml
                     records, unless `moved_action_images`);
  /site/...          GitHub Pages: the site the pages job deployed;
  /OWNER/NAME/releases/download/TAG/FILE
                     the GitHub Release's assets.
Each scenario sets `state` before act runs; the real ci/ scripts run against it.
"""

from __future__ import annotations

import hashlib
import http.server
import json
import threading
import urllib.parse
from datetime import datetime, timedelta, timezone
from pathlib import Path


def default_state() -> dict:
    return {
        "torch_wheels": set(),      # file names served on the torch pages
        "environments": {},          # name -> {"deployment_branch_policy": ..., "policies": [...]}
        "pages": {"build_type": "workflow"},
        "immutable": False,
        "approval": "all_external_contributors",
        "gpu_jobs": [],              # extra jobs the jobs API lists: (name, status, minutes ago)
        "release_dir": None,         # the scenario's assembled release folder (the release's assets)
        "site_dir": None,            # the site the scenario deployed to Pages
        "pypi_dir": None,            # the files the scenario uploaded to PyPI
        "cancelled": False,
        "host_wheels": None,         # folder of the wheels /pip/ serves itself (torch)
        "label_torch_wheels": None,  # folder of torch wheels with a local label (torch-X+cpu-...) that
                                     # /torch/LABEL/torch/ lists and /torch-files/ serves: this host's torch
        "torch_metadata": {},        # torch version -> its wheels' METADATA (default: matrix.toml's pypi_cuda)
        "moved_action_images": False,  # the pinned actions' image tags name other digests than recorded
        "rulesets": [{"id": 1, "name": "release tags", "target": "tag", "enforcement": "active",
                      "conditions": {"ref_name": {"include": ["refs/tags/v*"], "exclude": []}},
                      "rules": [{"type": "creation"}, {"type": "update"}, {"type": "deletion"}]}],
    }


def _recorded_action_digests() -> dict[str, str]:
    """"REPOSITORY/manifests/SHA" -> the image_digest ci/plan/expiry.toml records for that pinned action."""
    import tomllib

    table = tomllib.loads((Path(__file__).resolve().parents[2] / "ci/plan/expiry.toml").read_text())["actions"]
    return {f"{entry['image'].partition('/')[2]}/manifests/{pin.rsplit('@', 1)[1]}": entry["image_digest"]
            for pin, entry in table.items() if "image" in entry and "image_digest" in entry}


def _pypi_torch_metadata(version: str) -> str:
    import sys

    sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "build_support"))
    import matrix

    cuda = next(spec.get("pypi_cuda") for spec in matrix.load()["torch"].values() if spec["build_version"] == version)
    return (f"Metadata-Version: 2.4\nName: torch\nVersion: {version}\n"
            f'Requires-Dist: cuda-toolkit[cudart]=={cuda}.0; platform_system == "Linux"\n')


class StandIns:
    def __init__(self) -> None:
        self.state = default_state()
        server = self

        class Handler(http.server.BaseHTTPRequestHandler):
            def do_HEAD(self):  # noqa: N802
                self.answer(head=True)

            def do_GET(self):  # noqa: N802
                self.answer()

            def do_POST(self):  # noqa: N802
                if self.path.endswith("/cancel"):
                    server.state["cancelled"] = True
                self.send(202, b"{}")

            def send(self, code: int, body: bytes, headers: dict | None = None, head: bool = False):
                self.send_response(code)
                for key, value in (headers or {}).items():
                    self.send_header(key, value)
                self.send_header("Content-Length", str(len(body)))
                self.end_headers()
                if not head:
                    self.wfile.write(body)

            def answer(self, head: bool = False):
                path = urllib.parse.unquote(urllib.parse.urlparse(self.path).path)
                code, body, headers = server.route(path, self.path)
                self.send(code, body, headers, head)

            def log_message(self, *args):
                pass

        self.httpd = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        threading.Thread(target=self.httpd.serve_forever, daemon=True).start()
        self.url = f"http://127.0.0.1:{self.httpd.server_address[1]}"

    def close(self) -> None:
        self.httpd.shutdown()

    # ---------------------------------------------------------------- routes
    def route(self, path: str, raw: str) -> tuple[int, bytes, dict]:
        state = self.state
        if path.startswith("/api/repos/"):
            return self.api(path.split("/", 5)[5] if path.count("/") >= 5 else "", raw)
        if path.startswith("/torch/") or path.startswith("/pypi/torch/"):
            on_pypi = path.startswith("/pypi/")
            label = None if on_pypi else path.split("/")[2]
            files = sorted(f for f in state["torch_wheels"]
                           if ("+" not in f if on_pypi else f"+{label}-" in f))
            links = "".join(f'<a href="/files/{urllib.parse.quote(f)}#sha256={"0" * 64}">{f}</a><br>\n'
                            for f in files)
            # the one torch pip can install from PyTorch's index here: this host's own, under the label
            # (state["label_torch_wheels"]), served with its real sha256
            own = Path(state["label_torch_wheels"]) if state["label_torch_wheels"] and not on_pypi else None
            for wheel in sorted(own.glob(f"torch-*+{label}-*.whl")) if own is not None else []:
                links += (f'<a href="/torch-files/{urllib.parse.quote(wheel.name)}#sha256='
                          f'{hashlib.sha256(wheel.read_bytes()).hexdigest()}">{wheel.name}</a><br>\n')
            return 200, f"<html><body>\n{links}</body></html>".encode(), {"Content-Type": "text/html"}
        if path.startswith("/pip/"):
            return self.pip(path)
        if path.startswith("/torch-files/") and state["label_torch_wheels"]:
            target = Path(state["label_torch_wheels"]) / path.rsplit("/", 1)[1]
            if target.is_file():
                return 200, target.read_bytes(), {"Content-Type": "application/octet-stream"}
            return 404, b"", {}
        if path.startswith("/pypi/my-ops/") and path.endswith("/json"):
            # PyPI's JSON API (ci/release/published.py): state["pypi_files"], file name -> sha256, and
            # the files the upload stand-in put in state["pypi_dir"]
            files = dict(state.get("pypi_files") or {})
            uploaded = Path(state["pypi_dir"]) if state.get("pypi_dir") else None
            if uploaded is not None and uploaded.is_dir():
                files.update({f.name: hashlib.sha256(f.read_bytes()).hexdigest() for f in uploaded.iterdir()})
            body = {"urls": [{"filename": n, "digests": {"sha256": h}} for n, h in files.items()]}
            return (200, json.dumps(body).encode(), {"Content-Type": "application/json"}) if files else (404, b"", {})
        if path.startswith("/files/torch-") and path.endswith(".whl.metadata"):
            # PEP 658 metadata of PyPI's torch: the CUDA requirement of its matrix.toml pypi_cuda
            # (state["torch_metadata"]: version -> METADATA text, to make it disagree)
            version = path[len("/files/torch-"):].split("-")[0]
            return 200, state["torch_metadata"].get(version, _pypi_torch_metadata(version)).encode(), {}
        if path == "/registry/token":
            return 200, b'{"token": "stand-in"}', {}
        if path.startswith("/registry/v2/") and "/manifests/" in path:
            digest = "sha256:" + hashlib.sha256(path.encode()).hexdigest()
            recorded = _recorded_action_digests().get(path[len("/registry/v2/"):])
            if recorded and not state["moved_action_images"]:
                digest = recorded
            return 200, b"", {"Docker-Content-Digest": digest}
        if path.startswith("/site/") or "/releases/download/" in path:
            if path.startswith("/site/"):
                if state["site_dir"] is None:
                    return 404, b"", {}
                target = Path(state["site_dir"]) / path[len("/site/"):]
                if target.is_dir():
                    target = target / "index.html"
            else:
                if state["release_dir"] is None:
                    return 404, b"", {}
                target = Path(state["release_dir"]) / "dist" / path.rsplit("/", 1)[1]
            if target.is_file():
                kind = "text/html" if target.suffix == ".html" else "application/octet-stream"
                return 200, target.read_bytes(), {"Content-Type": kind}
            return 404, b"", {}
        return 404, b"", {}

    def pip(self, path: str) -> tuple[int, bytes, dict]:
        folder = Path(self.state["host_wheels"]) if self.state["host_wheels"] else None
        if path.startswith("/pip/files/") and folder is not None:
            target = folder / path.rsplit("/", 1)[1]
            if target.is_file():
                return 200, target.read_bytes(), {"Content-Type": "application/octet-stream"}
            return 404, b"", {}
        name = path.removeprefix("/pip/simple/").strip("/").lower()
        own = sorted(folder.glob(f"{name}-*.whl")) if folder is not None and name else []
        if own:
            links = "".join(f'<a href="/pip/files/{urllib.parse.quote(w.name)}#sha256='
                            f'{hashlib.sha256(w.read_bytes()).hexdigest()}">{w.name}</a><br>\n' for w in own)
            return 200, f"<html><body>\n{links}</body></html>".encode(), {"Content-Type": "text/html"}
        return 302, b"", {"Location": f"https://pypi.org/simple/{name}/"}

    def api(self, rest: str, raw: str) -> tuple[int, bytes, dict]:
        """`rest` is what follows /repos/OWNER/NAME/."""
        state = self.state

        def ok(data) -> tuple[int, bytes, dict]:
            return 200, json.dumps(data).encode(), {"Content-Type": "application/json"}

        if rest == "":
            return ok({"private": False, "default_branch": "main"})
        if rest.startswith("compare/main..."):  # the tag's commit is main's (ci/plan/preflight.py)
            return ok({"status": "identical", "ahead_by": 0, "behind_by": 0})
        if rest == "rules/branches/main":  # main takes pull requests only
            return ok([{"type": "pull_request", "ruleset_id": 2,
                        "parameters": {"required_approving_review_count": 1}}])
        if rest == "releases/tags/nightly":  # made by hand once (docs/releasing.md)
            return ok({"id": 1, "tag_name": "nightly", "draft": False, "prerelease": True, "assets": []})
        if rest == "actions/runs":  # the repository's runs in progress (gpu-watchdog): none besides this one
            return ok({"total_count": 0, "workflow_runs": []})
        if rest.startswith("actions/runs/") and rest.endswith("/jobs"):
            if "page=1" not in raw:
                return ok({"jobs": []})
            now = datetime.now(timezone.utc)
            # a completed job passed (gpu-watchdog fails with a GPU job that did not)
            jobs = [{"name": name, "status": status,
                     "created_at": (now - timedelta(minutes=ago)).strftime("%Y-%m-%dT%H:%M:%SZ"),
                     "conclusion": "success" if status == "completed" else None}
                    for name, status, ago in state["gpu_jobs"]]
            return ok({"jobs": jobs})
        if rest.startswith("environments/"):
            parts = rest.split("/")
            environment = state["environments"].get(parts[1])
            if environment is None:
                return 404, b"{}", {}
            if len(parts) > 2 and parts[2] == "deployment-branch-policies":
                return ok({"branch_policies": environment.get("policies", [])})
            return ok({"name": parts[1], "deployment_branch_policy": environment.get("deployment_branch_policy"),
                       "protection_rules": environment.get("protection_rules", [])})
        if rest == "rulesets":
            return ok(state["rulesets"])
        if rest.startswith("rulesets/"):
            found = [r for r in state["rulesets"] if str(r["id"]) == rest.split("/")[1]]
            return ok(found[0]) if found else (404, b"{}", {})
        if rest == "pages":
            return ok(state["pages"]) if state["pages"] else (404, b"{}", {})
        if rest == "immutable-releases":
            return ok({"enabled": state["immutable"]})
        if rest == "actions/permissions/fork-pr-contributor-approval":
            return ok({"approval_policy": state["approval"]})
        if rest.startswith("branches/"):
            return ok({"name": rest.split("/", 1)[1], "protected": True})
        return 404, b"{}", {}


# What GitHub creates for Pages with source "GitHub Actions": the default branch only.
PAGES_DEFAULT = {"deployment_branch_policy": {"protected_branches": False, "custom_branch_policies": True},
                 "policies": [{"name": "main", "type": "branch"}]}
# The one-time setting of docs/releasing.md: a person approves each PyPI upload.
PYPI_WITH_REVIEWERS = {"deployment_branch_policy": None,
                       "protection_rules": [{"id": 1, "type": "required_reviewers",
                                             "reviewers": [{"type": "User", "reviewer": {"login": "maintainer"}}]}]}
# The one-time setting of docs/releasing.md: tags v* may deploy too.
PAGES_WITH_TAGS = {**PAGES_DEFAULT, "policies": [{"name": "main", "type": "branch"}, {"name": "v*", "type": "tag"}]}
