"""ci/ scripts that talk to GitHub, run against a stand-in API on 127.0.0.1,
and the release plan for each event."""

from __future__ import annotations

import http.server
import json
import os
import subprocess
import sys
import threading
import tomllib
from datetime import datetime, timedelta, timezone
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
# These steps run on the workflows' Linux runners only; the Windows and macOS
# test jobs have other shells (Git Bash, bash 3.2) and no /dev/null for Python.
pytestmark = pytest.mark.skipif(not sys.platform.startswith("linux"), reason="a Linux-runner step")


class FakeRunApi:
    """GET .../actions/runs/1/jobs and POST .../actions/runs/1/cancel; `others`: jobs of run 2, in progress."""

    def __init__(self, jobs: list[dict], others: list[dict] | None = None, failures: int = 0):
        """`failures`: the first GETs answered 502 (a transient error of GitHub's API)."""
        self.jobs, self.others, self.cancelled, self.failures = jobs, others, False, failures
        self.extra_env: dict[str, str] = {}
        self.other_run_listings = 0
        api = self

        class Handler(http.server.BaseHTTPRequestHandler):
            def do_GET(self):  # noqa: N802
                if api.failures > 0:
                    api.failures -= 1
                    self.send_response(502)
                    self.end_headers()
                    return
                if "/actions/runs?status=in_progress" in self.path:
                    api.other_run_listings += 1
                    runs = [{"id": 1}] + ([{"id": 2}] if api.others is not None else [])
                    body = json.dumps({"total_count": len(runs), "workflow_runs": runs}).encode()
                else:
                    jobs = api.others if "/actions/runs/2/" in self.path else api.jobs
                    body = json.dumps({"jobs": jobs if "page=1" in self.path else []}).encode()
                self.send_response(200)
                self.end_headers()
                self.wfile.write(body)

            def do_POST(self):  # noqa: N802
                api.cancelled = self.path.endswith("/actions/runs/1/cancel")
                self.send_response(202)
                self.end_headers()

            def log_message(self, *args):
                pass

        self.server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        threading.Thread(target=self.server.serve_forever, daemon=True).start()
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}"

    def run_watchdog(self, minutes: str, timeout: float = 60) -> subprocess.CompletedProcess:
        env = {**os.environ, "API_URL": self.url, "REPOSITORY": "my-ops/my_ops", "RUN_ID": "1", "TOKEN": "t",
               "GPU_QUEUE_MINUTES": minutes, "POLL_SECONDS": "0.05", "STARTED_POLL_SECONDS": "0.05",
               "RETRY_SECONDS": "0.01", **self.extra_env}
        try:
            return subprocess.run([sys.executable, str(ROOT / "ci/test/gpu-watchdog.py")], env=env,
                                  capture_output=True, text=True, timeout=timeout)
        finally:
            self.server.shutdown()

    def assert_watchdog_keeps_waiting(self) -> None:
        """Still polling after 2 s, nothing cancelled: the run is not done and nothing is stuck."""
        with pytest.raises(subprocess.TimeoutExpired):
            self.run_watchdog("45", timeout=2)
        assert not self.cancelled


def _stamp(minutes_ago: float) -> str:
    return (datetime.now(timezone.utc) - timedelta(minutes=minutes_ago)).strftime("%Y-%m-%dT%H:%M:%SZ")


def _job(name: str, status: str, minutes_ago: float, conclusion: str = "success", attempt: int = 1,
         completed_ago: float = 1) -> dict:
    """A job of the jobs API; a completed one carries its conclusion and when it completed."""
    job = {"name": name, "status": status, "created_at": _stamp(minutes_ago), "run_attempt": attempt}
    if status == "completed":
        job.update(conclusion=conclusion, completed_at=_stamp(completed_ago))
    return job


# As the jobs API names them: bare in a run of wheels.yml, prefixed with the
# caller's job ("wheels / ") when release.yml calls it.
CALLERS = pytest.mark.parametrize("caller", ["", "wheels / "])


@CALLERS
def test_watchdog_cancels_a_run_whose_gpu_jobs_find_no_runner(caller):
    api = FakeRunApi([_job(f"{caller}gpu 2.11-cu130", "queued", 50), _job(f"{caller}gpu 2.12-cu130", "queued", 50),
                      _job(f"{caller}test 2.11-cu130 linux py3.10", "completed", 60),
                      _job(f"{caller}gpu-watchdog", "in_progress", 55)])
    result = api.run_watchdog("45")
    assert result.returncode == 1
    assert "no self-hosted GPU runner" in result.stdout and f"{caller}gpu 2.11-cu130" in result.stdout
    assert api.cancelled


@CALLERS
def test_watchdog_passes_once_every_gpu_job_has_passed(caller):
    api = FakeRunApi([_job(f"{caller}gpu 2.11-cu130", "completed", 50),
                      _job(f"{caller}gpu 2.12-cu130", "completed", 50, conclusion="skipped"),
                      _job(f"{caller}gpu-watchdog", "in_progress", 50)])
    result = api.run_watchdog("45")
    assert result.returncode == 0 and not api.cancelled
    assert "every GPU job passed" in result.stdout


def test_watchdog_stays_while_a_gpu_job_runs():
    """A started GPU job is not the end: the watchdog fails with it if it fails (re-run below)."""
    api = FakeRunApi([_job("wheels / gpu 2.11-cu130", "in_progress", 50),
                      _job("wheels / gpu 2.12-cu130", "completed", 50),
                      _job("wheels / gpu-watchdog", "in_progress", 50)])
    api.assert_watchdog_keeps_waiting()


def test_watchdog_leaves_running_gpu_jobs_before_the_hosted_runners_limit():
    """GitHub stops a hosted job at 360 minutes, which would fail the run: past WATCH_MINUTES, with a
    GPU runner at work on this run (legs queued behind it included), the watchdog exits 0."""
    api = FakeRunApi([_job("wheels / gpu 2.11-cu130", "in_progress", 50),
                      _job("wheels / gpu 2.12-cu130", "queued", 50),
                      _job("wheels / gpu-watchdog", "in_progress", 50)])
    api.extra_env = {"WATCH_MINUTES": "0"}
    result = api.run_watchdog("45")
    assert result.returncode == 0 and not api.cancelled, result.stdout
    assert "360-minute" in result.stdout


def test_watchdog_leaves_a_queue_behind_another_runs_gpu_job_before_the_limit():
    """Past WATCH_MINUTES, legs queued while the one GPU runner works on another run's job (main's
    run of the tag's commit, a nightly) are not stuck: the watchdog exits 0 rather than be stopped."""
    api = FakeRunApi([_job("wheels / gpu 2.11-cu130", "queued", 50),
                      _job("wheels / gpu-watchdog", "in_progress", 55)],
                     others=[{"name": "gpu 2.11-cu130", "status": "in_progress", "labels": ["gpu"]}])
    api.extra_env = {"WATCH_MINUTES": "0"}
    result = api.run_watchdog("45")
    assert result.returncode == 0 and not api.cancelled, result.stdout
    assert "360-minute" in result.stdout


def test_watchdog_past_its_time_still_watches_a_queue_no_runner_answers():
    """Past WATCH_MINUTES, GPU jobs that no runner has taken are still watched (and cancelled)."""
    api = FakeRunApi([_job("wheels / gpu 2.11-cu130", "queued", 50),
                      _job("wheels / gpu-watchdog", "in_progress", 55)])
    api.extra_env = {"WATCH_MINUTES": "0"}
    result = api.run_watchdog("45")
    assert result.returncode == 1 and api.cancelled, result.stdout


@pytest.mark.parametrize("conclusion", ["failure", "cancelled", "timed_out"])
def test_watchdog_fails_with_a_failed_gpu_job(conclusion):
    """So that "re-run failed jobs" (failed jobs and their dependents) re-runs the watchdog too."""
    api = FakeRunApi([_job("wheels / gpu 2.11-cu130", "completed", 50, conclusion=conclusion),
                      _job("wheels / gpu 2.12-cu130", "completed", 50),
                      _job("wheels / gpu-watchdog", "in_progress", 50)])
    result = api.run_watchdog("45")
    assert result.returncode == 1 and not api.cancelled, result.stdout
    assert f"wheels / gpu 2.11-cu130 ({conclusion})" in result.stdout


@pytest.mark.parametrize("attempt_field", [True, False])
def test_watchdog_of_a_rerun_watches_only_the_rerun_gpu_jobs(attempt_field):
    """Attempt 2 of "re-run failed jobs": 2.12's GPU job passed in attempt 1 and is listed as it
    was; 2.11's runs again and finds no runner. Neither the jobs API's `run_attempt` nor (without
    it) the earlier job's completion before this watchdog was created may let 2.12 count."""
    earlier = _job("wheels / gpu 2.12-cu130", "completed", 200, attempt=1, completed_ago=120)
    rerun = _job("wheels / gpu 2.11-cu130", "queued", 50, attempt=2)
    watchdog = _job("wheels / gpu-watchdog", "in_progress", 50, attempt=2)
    if not attempt_field:
        for job in (earlier, rerun, watchdog):
            del job["run_attempt"]
    api = FakeRunApi([earlier, rerun, watchdog])
    api.extra_env = {"RUN_ATTEMPT": "2"}
    result = api.run_watchdog("45")
    assert result.returncode == 1 and api.cancelled, result.stdout
    assert "wheels / gpu 2.11-cu130 within 45 minutes" in result.stdout


def test_watchdog_waits_while_the_gpu_runner_is_busy_with_another_run():
    """A push to main and the tag of its commit share the runner: queued behind main's GPU legs is not stuck."""
    busy = {**_job("gpu 2.11-cu130 cu130", "in_progress", 20), "labels": ["self-hosted", "linux", "x64", "gpu"]}
    api = FakeRunApi([_job("wheels / gpu 2.11-cu130 cu130", "queued", 70),
                      _job("wheels / gpu-watchdog", "in_progress", 70)], others=[busy])
    api.assert_watchdog_keeps_waiting()


def test_watchdog_lists_other_runs_sparingly():
    """Each listing of other runs costs a call per run from the token's 1,000 an hour: polled every
    0.05 s for 2 s, the watchdog lists them once (every OTHER_RUNS_POLL_SECONDS, default 300)."""
    busy = {**_job("gpu 2.11-cu130 cu130", "in_progress", 20), "labels": ["self-hosted", "linux", "x64", "gpu"]}
    api = FakeRunApi([_job("wheels / gpu 2.11-cu130 cu130", "queued", 70),
                      _job("wheels / gpu-watchdog", "in_progress", 70)], others=[busy])
    api.assert_watchdog_keeps_waiting()
    assert api.other_run_listings == 1


def test_watchdog_another_runs_cpu_job_does_not_count_as_a_busy_gpu_runner():
    cpu = {**_job("test 2.11-cu130 linux py3.10", "in_progress", 20), "labels": ["ubuntu-24.04"]}
    api = FakeRunApi([_job("wheels / gpu 2.11-cu130 cu130", "queued", 70),
                      _job("wheels / gpu-watchdog", "in_progress", 70)], others=[cpu])
    result = api.run_watchdog("45")
    assert result.returncode == 1 and api.cancelled, result.stdout


@pytest.mark.parametrize("failures", [3, 6])  # within one call's retries; past them (a poll that knows nothing)
def test_watchdog_outlasts_transient_api_errors(failures):
    api = FakeRunApi([_job("wheels / gpu 2.11-cu130", "completed", 50),
                      _job("wheels / gpu-watchdog", "in_progress", 50)], failures=failures)
    result = api.run_watchdog("45")
    assert result.returncode == 0 and "every GPU job passed" in result.stdout, result.stdout + result.stderr
    assert "HTTP 502; again in" in result.stdout


def test_watchdog_legs_queued_behind_this_runs_own_gpu_jobs_are_not_stuck():
    api = FakeRunApi([_job("wheels / gpu 2.11-cu130 cu130", "in_progress", 70),
                      _job("wheels / gpu 2.12-cu130 cu130", "queued", 70),
                      _job("wheels / gpu-watchdog", "in_progress", 70)])
    api.assert_watchdog_keeps_waiting()


def test_watchdog_waits_for_the_bundle_job():
    """GPU jobs need the bundle job: while it runs, no GPU job yet is not 'none will come'."""
    api = FakeRunApi([_job("wheels / build cu130 linux", "completed", 30),
                      _job("wheels / bundle (seal, label-free wheels)", "in_progress", 2),
                      _job("wheels / gpu-watchdog", "in_progress", 30)])
    api.assert_watchdog_keeps_waiting()


@CALLERS
def test_watchdog_passes_when_no_gpu_job_will_run(caller):
    # The caller's own jobs (plan done, assemble waiting for this run) are not waited for.
    api = FakeRunApi([_job(f"{caller}build cu130 linux", "completed", 30),
                      _job(f"{caller}gpu-watchdog", "in_progress", 30),
                      _job("plan", "completed", 40), _job("assemble", "pending", 1)])
    result = api.run_watchdog("45")
    assert result.returncode == 0 and not api.cancelled, result.stdout + result.stderr
    assert "no GPU job was created" in result.stdout


def test_watchdog_waits_while_builds_run():
    """No GPU job yet and a build still running: not done; a stuck GPU job later still counts."""
    api = FakeRunApi([_job("wheels / build cu130 linux", "in_progress", 30),
                      _job("wheels / gpu-watchdog", "in_progress", 30)])
    api.assert_watchdog_keeps_waiting()


@pytest.mark.parametrize("event,ref,repository,kind,publish", [
    ("push", "refs/tags/v{version}", "my-ops/my_ops", "release", "true"),
    ("schedule", "refs/heads/main", "my-ops/my_ops", "nightly", "true"),
    ("workflow_dispatch", "refs/heads/main", "my-ops/my_ops", "nightly", "true"),
    ("workflow_dispatch", "refs/heads/experiment", "my-ops/my_ops", "nightly", "false"),
    ("schedule", "refs/heads/main", "someone/my_ops", "nightly", "false"),
    # a manual release dry run (input kind=release): the tag's version, never published, even from main
    ("workflow_dispatch release", "refs/heads/experiment", "my-ops/my_ops", "release", "false"),
    ("workflow_dispatch release", "refs/heads/main", "my-ops/my_ops", "release", "false"),
    ("schedule release", "refs/heads/main", "my-ops/my_ops", "nightly", "true"),  # only a manual run asks
])
def test_release_plan(event, ref, repository, kind, publish):
    version = (ROOT / "VERSION").read_text().strip()
    event, _, dry_run_kind = event.partition(" ")
    result = subprocess.run(["bash", str(ROOT / "ci/plan/release-plan.sh")], capture_output=True, text=True,
                            env={**os.environ, "EVENT": event, "REF": ref.format(version=version),
                                 "REPOSITORY": repository, "GITHUB_OUTPUT": "/dev/stdout",
                                 "DRY_RUN_KIND": dry_run_kind})
    assert result.returncode == 0, result.stderr
    plan = dict(line.split("=", 1) for line in result.stdout.splitlines())
    assert plan["kind"] == kind and plan["publish"] == publish
    assert (len(plan["nightly-version"]) == 12) == (kind == "nightly")
    assert plan["version"] == version if kind == "release" else plan["version"].endswith(plan["nightly-version"])
    # the preflight checks the settings the tag will meet
    assert plan["preflight-ref"] == (f"refs/tags/v{version}" if kind == "release" else ref)


def test_release_plan_refuses_a_tag_that_is_not_the_version():
    result = subprocess.run(["bash", str(ROOT / "ci/plan/release-plan.sh")], capture_output=True, text=True,
                            env={**os.environ, "EVENT": "push", "REF": "refs/tags/v9.9.9",
                                 "REPOSITORY": "my-ops/my_ops"})
    assert result.returncode != 0 and "does not match VERSION" in result.stderr


# ------------------------------------------------ release guards (stand-ins)
sys.path.insert(0, str(ROOT / "ci" / "test"))
import workflow_standins  # noqa: E402


@pytest.fixture
def stand_ins():
    servers = workflow_standins.StandIns()
    yield servers
    servers.close()


def _run(script: str, servers, extra: dict, *args: str) -> subprocess.CompletedProcess:
    env = {**os.environ, "API_URL": f"{servers.url}/api", "REPOSITORY": "my-ops/my_ops", "TOKEN": "t",
           "ADMIN_TOKEN": "t", "TORCH_INDEX_URL": f"{servers.url}/torch", "PYPI_SIMPLE_URL": f"{servers.url}/pypi",
           "REGISTRY_URL": f"{servers.url}/registry", "REGISTRY_AUTH_URL": f"{servers.url}/registry/token",
           "ACTION_REGISTRY_URL": f"{servers.url}/registry", **extra}
    return subprocess.run([sys.executable, str(ROOT / script), *args], env=env, capture_output=True, text=True,
                          timeout=120)


def _all_torch_wheels() -> set[str]:
    sys.path.insert(0, str(ROOT / "ci" / "test"))
    import workflow_test

    return set(workflow_test.every_torch_wheel())


def test_check_sources_passes_when_everything_exists_and_pins_images(stand_ins, tmp_path):
    stand_ins.state["torch_wheels"] = _all_torch_wheels()
    result = _run("ci/plan/check-sources.py", stand_ins, {}, "--event", "push",
                  "--images-out", str(tmp_path / "i.json"))
    assert result.returncode == 0, result.stdout + result.stderr
    images = json.loads((tmp_path / "i.json").read_text())
    assert images and all(d.startswith("sha256:") and len(d) == 71 for d in images.values())


def test_check_sources_names_a_torch_wheel_pytorch_does_not_publish(stand_ins):
    wheels = _all_torch_wheels()
    gone = next(w for w in sorted(wheels) if "+cu126" in w and "aarch64" in w)
    stand_ins.state["torch_wheels"] = wheels - {gone}
    result = _run("ci/plan/check-sources.py", stand_ins, {}, "--event", "push")
    assert result.returncode == 1
    assert "no such wheel" in result.stdout and "aarch64" in result.stdout


def test_check_sources_names_a_missing_image(stand_ins):
    stand_ins.state["torch_wheels"] = _all_torch_wheels()
    result = _run("ci/plan/check-sources.py", stand_ins, {"REGISTRY_URL": f"{stand_ins.url}/nowhere"},
                  "--event", "push")
    assert result.returncode == 1 and "no such image" in result.stdout


def test_check_sources_names_a_pinned_action_without_its_image(stand_ins):
    """The PyPI upload action runs ghcr.io/pypa/gh-action-pypi-publish:<pinned sha>: a pin the
    registry has no image for stops the run before anything is built or published."""
    stand_ins.state["torch_wheels"] = _all_torch_wheels()
    result = _run("ci/plan/check-sources.py", stand_ins, {"ACTION_REGISTRY_URL": f"{stand_ins.url}/nowhere"},
                  "--event", "push")
    assert result.returncode == 1
    assert "ghcr.io/pypa/gh-action-pypi-publish:" in result.stdout
    assert "the pinned action's image does not exist" in result.stdout


# the image digest ci/plan/expiry.toml records for the pinned PyPI upload action
RECORDED_PYPI_ACTION_DIGEST = next(
    entry["image_digest"] for pin, entry in tomllib.loads((ROOT / "ci/plan/expiry.toml").read_text())["actions"].items()
    if pin.startswith("pypa/gh-action-pypi-publish@") and "image_digest" in entry)


def test_check_sources_refuses_a_pinned_actions_image_that_changed(stand_ins):
    """The PyPI action pulls its image by tag: a tag that now names other bytes than the digest
    ci/plan/expiry.toml records stops a release's run before anything is built (and the PyPI job,
    checked again right before the upload); a pull request's or main's run only warns of it."""
    stand_ins.state["torch_wheels"] = _all_torch_wheels()
    assert _run("ci/plan/check-sources.py", stand_ins, {}, "--action-images-only").returncode == 0
    stand_ins.state["moved_action_images"] = True
    for ref, args, refused in [("refs/tags/v1.0.0", ["--event", "push"], True),
                               ("refs/heads/main", ["--action-images-only"], True),
                               ("refs/heads/main", ["--event", "push"], False),
                               ("refs/pull/7/merge", ["--event", "pull_request"], False)]:
        result = _run("ci/plan/check-sources.py", stand_ins, {"GITHUB_REF": ref}, *args)
        assert result.returncode == (1 if refused else 0), (ref, args, result.stdout)
        assert "the tag now names sha256:" in result.stdout and RECORDED_PYPI_ACTION_DIGEST in result.stdout
        assert ("::error::" if refused else "::warning::") in result.stdout


def test_check_sources_takes_the_registry_token_its_challenge_names(stand_ins):
    """ghcr.io answers 401 with a Bearer challenge; the anonymous token it names opens the manifest."""
    seen = []

    class Registry(http.server.BaseHTTPRequestHandler):
        def do_HEAD(self):  # noqa: N802
            seen.append((self.path, self.headers.get("Authorization")))
            if self.headers.get("Authorization") != "Bearer anonymous":
                self.send_response(401)
                self.send_header("WWW-Authenticate", f'Bearer realm="http://127.0.0.1:{port}/token",'
                                 'service="ghcr.io",scope="repository:pypa/gh-action-pypi-publish:pull"')
            else:
                self.send_response(200)
                self.send_header("Docker-Content-Digest", RECORDED_PYPI_ACTION_DIGEST)
            self.send_header("Content-Length", "0")
            self.end_headers()

        def do_GET(self):  # noqa: N802
            seen.append((self.path, None))
            body = b'{"token": "anonymous"}' if self.path.startswith("/token?") else b""
            self.send_response(200 if body else 404)
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

        def log_message(self, *args):
            pass

    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Registry)
    port = server.server_address[1]
    threading.Thread(target=server.serve_forever, daemon=True).start()
    try:
        stand_ins.state["torch_wheels"] = _all_torch_wheels()
        result = _run("ci/plan/check-sources.py", stand_ins, {"ACTION_REGISTRY_URL": f"http://127.0.0.1:{port}"},
                      "--event", "push")
    finally:
        server.shutdown()
    assert result.returncode == 0, result.stdout + result.stderr
    assert "1 action images" in result.stdout
    manifest = [p for p, _ in seen if "/manifests/" in p]
    assert manifest and manifest[0].startswith("/v2/pypa/gh-action-pypi-publish/manifests/")
    assert any(p.startswith("/token?") and "scope=repository%3Apypa%2Fgh-action-pypi-publish%3Apull" in p
               for p, _ in seen)


@pytest.mark.parametrize("kind,ref,pages,ok", [
    ("release", "refs/tags/v1.0.0", workflow_standins.PAGES_WITH_TAGS, True),
    ("release", "refs/tags/v1.0.0", workflow_standins.PAGES_DEFAULT, False),  # GitHub's default: main only
    ("nightly", "refs/heads/main", workflow_standins.PAGES_DEFAULT, True),
    ("release", "refs/tags/v1.0.0", {"deployment_branch_policy": {"protected_branches": True,
                                                                  "custom_branch_policies": False}}, False),
])
def test_preflight_reads_the_pages_environment_rules(stand_ins, kind, ref, pages, ok):
    stand_ins.state["environments"] = {"github-pages": pages, "pypi": workflow_standins.PYPI_WITH_REVIEWERS}
    result = _run("ci/plan/preflight.py", stand_ins, {"KIND": kind, "REF": ref})
    assert (result.returncode == 0) == ok, result.stdout
    if not ok:
        assert "github-pages" in result.stdout and "v*" in result.stdout


@pytest.mark.parametrize("setting,value,kind,message", [
    ("approval", "first_time_contributors", "release", "Require approval for all external contributors"),
    ("immutable", True, "nightly", "immutable releases are on"),
    ("pages", None, "release", "Source to 'GitHub Actions'"),
    ("pages", {"build_type": "legacy"}, "release", "builds from a branch"),
])
def test_preflight_stops_on_each_setting_that_would_refuse_a_step(stand_ins, setting, value, kind, message):
    stand_ins.state["environments"] = {"github-pages": workflow_standins.PAGES_WITH_TAGS,
                                       "pypi": workflow_standins.PYPI_WITH_REVIEWERS}
    stand_ins.state[setting] = value
    ref = "refs/tags/v1.0.0" if kind == "release" else "refs/heads/main"
    result = _run("ci/plan/preflight.py", stand_ins, {"KIND": kind, "REF": ref})
    assert result.returncode == 1 and message in result.stdout, result.stdout


def test_preflight_without_the_admin_token_says_which_secret(stand_ins):
    stand_ins.state["environments"] = {"github-pages": workflow_standins.PAGES_WITH_TAGS,
                                       "pypi": workflow_standins.PYPI_WITH_REVIEWERS}
    result = _run("ci/plan/preflight.py", stand_ins, {"KIND": "release", "REF": "refs/tags/v1.0.0", "ADMIN_TOKEN": ""})
    assert result.returncode == 1 and "PREFLIGHT_TOKEN" in result.stdout


def test_preflight_environment_rule_for_another_tag_pattern_refuses(stand_ins):
    stand_ins.state["environments"] = {
        "github-pages": workflow_standins.PAGES_WITH_TAGS,
        "pypi": {"deployment_branch_policy": {"protected_branches": False, "custom_branch_policies": True},
                 "policies": [{"name": "release-*", "type": "tag"}]}}
    result = _run("ci/plan/preflight.py", stand_ins, {"KIND": "release", "REF": "refs/tags/v1.0.0"})
    assert result.returncode == 1 and "'pypi'" in result.stdout


def _wheel(path: Path, version: str, extra: bytes = b"", label: str = "cu130") -> Path:
    import zipfile

    path.parent.mkdir(parents=True, exist_ok=True)
    with zipfile.ZipFile(path, "w") as zf:
        zf.writestr("my_ops/__init__.py", b"" + extra)
        zf.writestr("my_ops/_build_info.json", json.dumps({"version": version, "label": label}))
        zf.writestr(f"my_ops-{version}.dist-info/METADATA",
                    f"Metadata-Version: 2.1\nName: my_ops\nVersion: {version}\n")
        zf.writestr(f"my_ops-{version}.dist-info/WHEEL", "Wheel-Version: 1.0\n")
        zf.writestr(f"my_ops-{version}.dist-info/RECORD", "")
    return path


def test_bundle_seals_the_builds_and_refuses_a_stranger(tmp_path):
    version = (ROOT / "VERSION").read_text().strip()
    built = tmp_path / "built"
    _wheel(built / "wheel-cu130-linux" / f"my_ops-{version}+cu130-cp39-abi3-manylinux_2_28_x86_64.whl",
           f"{version}+cu130")
    result = subprocess.run([sys.executable, "ci/build/bundle-wheels.py", "--event", "pull_request",
                             "--wheels", str(built),
                             "--out", str(tmp_path / "out"), "--manifest", str(tmp_path / "m.json")],
                            cwd=ROOT, capture_output=True, text=True, env={**os.environ, "GITHUB_OUTPUT": os.devnull})
    assert result.returncode == 0, result.stdout + result.stderr
    manifest = json.loads((tmp_path / "m.json").read_text())
    plain = f"my_ops-{version}-cp39-abi3-manylinux_2_28_x86_64.whl"
    assert plain in manifest and (tmp_path / "out" / "bundle-linux" / plain).is_file()
    import zipfile

    with zipfile.ZipFile(tmp_path / "out" / "bundle-linux" / plain) as zf:
        assert json.loads(zf.read("my_ops/_build_info.json"))["label"] == ""
        assert f"Version: {version}\n" in zf.read(f"my_ops-{version}.dist-info/METADATA").decode()
        record = zf.read(f"my_ops-{version}.dist-info/RECORD").decode()
        assert "my_ops/__init__.py,sha256=" in record
    # a wheel no build of the run makes
    _wheel(built / "wheel-rogue" / f"my_ops-{version}-cp39-abi3-manylinux_2_28_x86_64.whl", version)
    result = subprocess.run([sys.executable, "ci/build/bundle-wheels.py", "--event", "pull_request",
                             "--wheels", str(built),
                             "--out", str(tmp_path / "out2")], cwd=ROOT, capture_output=True, text=True,
                            env={**os.environ, "GITHUB_OUTPUT": os.devnull})
    assert result.returncode == 1 and "no build of this run makes" in result.stdout


def test_bundle_macos_label_free_wheel_is_the_cpu_one(tmp_path):
    """macOS has the CPU build only: its label-free wheel is made from that. On
    Linux the CPU wheel is no stand-in for a failed default build."""
    import zipfile

    version = (ROOT / "VERSION").read_text().strip()
    built = tmp_path / "built"
    _wheel(built / "wheel-cpu-macos" / f"my_ops-{version}+cpu-cp39-abi3-macosx_11_0_arm64.whl", f"{version}+cpu",
           label="cpu")
    _wheel(built / "wheel-cpu-linux" / f"my_ops-{version}+cpu-cp39-abi3-manylinux_2_28_x86_64.whl", f"{version}+cpu",
           label="cpu")
    result = subprocess.run([sys.executable, "ci/build/bundle-wheels.py", "--event", "pull_request",
                             "--wheels", str(built),
                             "--out", str(tmp_path / "out")], cwd=ROOT, capture_output=True, text=True,
                            env={**os.environ, "GITHUB_OUTPUT": os.devnull})
    assert result.returncode == 0, result.stdout + result.stderr
    plain = tmp_path / "out" / "bundle-macos" / f"my_ops-{version}-cp39-abi3-macosx_11_0_arm64.whl"
    with zipfile.ZipFile(plain) as zf:
        assert json.loads(zf.read("my_ops/_build_info.json"))["libraries"] == ["cpu"]
        assert "my_ops/_libraries/cpu/_build_info.json" in zf.namelist()
    assert not (tmp_path / "out" / "bundle-linux").exists()


# ------------------------------------------- ci/release/publish-github-release.sh
FAKE_GH = """#!/usr/bin/env bash
# A stand-in gh: answers from $GH_STATE, logs every call to $GH_LOG.
echo "$*" >>"$GH_LOG"
case "$1 $2" in
    "release view")
        case "$*" in
            *isDraft*) cat "$GH_STATE/is_draft" ;;
            *assets*) cat "$GH_STATE/assets" ;;
        esac ;;
esac
"""


def _publish(tmp_path, *args, assets=(), is_draft="true"):
    bin_dir, state = tmp_path / "bin", tmp_path / "state"
    bin_dir.mkdir(exist_ok=True)
    state.mkdir(exist_ok=True)
    (bin_dir / "gh").write_text(FAKE_GH)
    (bin_dir / "gh").chmod(0o755)
    (state / "assets").write_text("".join(f"{a}\n" for a in assets))
    (state / "is_draft").write_text(is_draft + "\n")
    log = tmp_path / "gh.log"
    log.write_text("")
    result = subprocess.run(["bash", "ci/release/publish-github-release.sh", *args], cwd=ROOT, capture_output=True,
                            text=True,
                            env={**os.environ, "PATH": f"{bin_dir}:{os.environ['PATH']}", "GH_STATE": str(state),
                                 "GH_LOG": str(log), "COMMIT": "0" * 40})
    return result, log.read_text().splitlines()


def test_prune_keeps_the_newest_nightlies_whole(tmp_path):
    sys.path.insert(0, str(ROOT / "build_support"))
    import matrix

    keep = int(matrix.load()["defaults"]["nightly_keep"])
    versions = [f"1.0.1.dev202611{day:02d}0317" for day in range(1, keep + 3)]
    assets = []
    for v in versions:  # every kind of file a nightly uploads
        wheel = f"my_ops-{v}+cu130-cp39-abi3-manylinux_2_28_x86_64.whl"
        assets += [wheel, f"{wheel}.metadata", f"my_ops-{v}-cp39-abi3-manylinux_2_28_x86_64.whl",
                   f"my_ops-{v}.tar.gz", f"SHA256SUMS-{v}"]
    result, calls = _publish(tmp_path, "prune", "nightly", "nightly", assets=assets)
    assert result.returncode == 0, result.stdout + result.stderr
    deleted = [c.split()[3] for c in calls if c.startswith("release delete-asset")]
    old = versions[:-keep]
    assert sorted(deleted) == sorted(a for a in assets if any(v in a for v in old)), deleted
    assert len(deleted) == len(set(deleted)) == 5 * len(old)


def test_a_published_release_is_never_uploaded_again(tmp_path, monkeypatch):
    """A published asset with other bytes stops the job, nothing is uploaded (the finish mode's other cases:
    tests/packaging/test_release_rerun.py)."""
    (tmp_path / "dist").mkdir()
    (tmp_path / "dist" / "my_ops-1.0.0.tar.gz").write_text("")
    release = {"id": 7, "tag_name": "v1.0.0", "draft": False,
               "assets": [{"name": "my_ops-1.0.0.tar.gz", "url": "x", "digest": "sha256:" + "1" * 64}]}

    class Release(http.server.BaseHTTPRequestHandler):
        def do_GET(self):  # noqa: N802
            # GET /releases/tags/v1.0.0, and its assets (/releases/7/assets?per_page=100&page=1)
            self.send_response(200)
            self.end_headers()
            self.wfile.write(json.dumps(release["assets"] if "/assets?" in self.path else release).encode())

        def log_message(self, *args):
            pass

    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Release)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    monkeypatch.setenv("API_URL", f"http://127.0.0.1:{server.server_address[1]}")
    monkeypatch.setenv("GH_REPO", "my-ops/my_ops")
    monkeypatch.setenv("GH_TOKEN", "t")
    try:
        result, calls = _publish(tmp_path, "upload", "release", "v1.0.0", str(tmp_path / "dist"), is_draft="false")
    finally:
        server.shutdown()
    assert result.returncode == 1 and "published with other bytes" in result.stderr
    assert not any(c.startswith("release upload") for c in calls)
    result, calls = _publish(tmp_path, "upload", "release", "v1.0.0", str(tmp_path / "dist"), is_draft="true")
    assert result.returncode == 0, result.stderr
    assert any(c.startswith("release upload v1.0.0 --clobber") for c in calls)
