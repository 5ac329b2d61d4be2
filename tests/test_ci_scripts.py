"""ci/ scripts that talk to GitHub, run against a stand-in API on 127.0.0.1,
and the release plan for each event."""

from __future__ import annotations

import http.server
import json
import os
import subprocess
import sys
import threading
from datetime import datetime, timedelta, timezone
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent


class FakeRunApi:
    """GET .../actions/runs/1/jobs and POST .../actions/runs/1/cancel."""

    def __init__(self, jobs: list[dict]):
        self.jobs, self.cancelled = jobs, False
        api = self

        class Handler(http.server.BaseHTTPRequestHandler):
            def do_GET(self):  # noqa: N802
                body = json.dumps({"jobs": api.jobs if "page=1" in self.path else []}).encode()
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

    def run_watchdog(self, minutes: str) -> subprocess.CompletedProcess:
        env = {**os.environ, "API_URL": self.url, "REPOSITORY": "my-ops/my_ops", "RUN_ID": "1", "TOKEN": "t",
               "GPU_QUEUE_MINUTES": minutes, "POLL_SECONDS": "0.05"}
        try:
            return subprocess.run([sys.executable, str(ROOT / "ci/gpu-watchdog.py")], env=env,
                                  capture_output=True, text=True, timeout=60)
        finally:
            self.server.shutdown()


def _job(name: str, status: str, minutes_ago: float) -> dict:
    created = datetime.now(timezone.utc) - timedelta(minutes=minutes_ago)
    return {"name": name, "status": status, "created_at": created.strftime("%Y-%m-%dT%H:%M:%SZ")}


def test_watchdog_cancels_a_run_whose_gpu_jobs_find_no_runner():
    api = FakeRunApi([_job("gpu 2.11-cu130", "queued", 50), _job("gpu 2.12-cu130", "in_progress", 50),
                      _job("test 2.11-cu130 linux py3.10", "completed", 60)])
    result = api.run_watchdog("45")
    assert result.returncode == 1
    assert "no self-hosted GPU runner" in result.stdout and "gpu 2.11-cu130" in result.stdout
    assert api.cancelled


def test_watchdog_passes_once_every_gpu_job_has_a_runner():
    api = FakeRunApi([_job("gpu 2.11-cu130", "in_progress", 50), _job("gpu 2.12-cu130", "completed", 50)])
    result = api.run_watchdog("45")
    assert result.returncode == 0 and not api.cancelled
    assert "every GPU job has a runner" in result.stdout


def test_watchdog_passes_when_no_gpu_job_will_run():
    api = FakeRunApi([_job("build cu130 linux", "completed", 30)])
    result = api.run_watchdog("45")
    assert result.returncode == 0 and not api.cancelled


@pytest.mark.parametrize("event,ref,repository,kind,publish", [
    ("push", "refs/tags/v{version}", "my-ops/my_ops", "release", "true"),
    ("schedule", "refs/heads/main", "my-ops/my_ops", "nightly", "true"),
    ("workflow_dispatch", "refs/heads/main", "my-ops/my_ops", "nightly", "true"),
    ("workflow_dispatch", "refs/heads/experiment", "my-ops/my_ops", "nightly", "false"),
    ("schedule", "refs/heads/main", "someone/my_ops", "nightly", "false"),
])
def test_release_plan(event, ref, repository, kind, publish):
    version = (ROOT / "VERSION").read_text().strip()
    result = subprocess.run(["bash", str(ROOT / "ci/release-plan.sh")], capture_output=True, text=True,
                            env={**os.environ, "EVENT": event, "REF": ref.format(version=version),
                                 "REPOSITORY": repository, "GITHUB_OUTPUT": "/dev/stdout"})
    assert result.returncode == 0, result.stderr
    plan = dict(line.split("=", 1) for line in result.stdout.splitlines())
    assert plan["kind"] == kind and plan["publish"] == publish
    assert (len(plan["nightly-version"]) == 12) == (kind == "nightly")


def test_release_plan_refuses_a_tag_that_is_not_the_version():
    result = subprocess.run(["bash", str(ROOT / "ci/release-plan.sh")], capture_output=True, text=True,
                            env={**os.environ, "EVENT": "push", "REF": "refs/tags/v9.9.9", "REPOSITORY": "my-ops/my_ops"})
    assert result.returncode != 0 and "does not match VERSION" in result.stderr
