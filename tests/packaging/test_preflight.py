"""ci/plan/preflight.py against recorded GitHub API answers (tests/packaging/fixtures/github_settings.json),
served on 127.0.0.1: a human before PyPI (the `pypi` environment's reviewers, a tag ruleset on v*),
the GPU runner's settings, and the dated facts of ci/plan/expiry.toml."""

from __future__ import annotations

import copy
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
RECORDED = json.loads((ROOT / "tests/packaging/fixtures/github_settings.json").read_text())
pytestmark = pytest.mark.skipif(not sys.platform.startswith("linux"), reason="a Linux-runner step")


class RecordedApi:
    """Answers /repos/my-ops/my_ops/<path?query> from a dict; 404 for anything else."""

    def __init__(self, answers: dict):
        self.answers, self.asked = answers, []
        api = self

        class Handler(http.server.BaseHTTPRequestHandler):
            def do_GET(self):  # noqa: N802
                prefix = "/repos/my-ops/my_ops"
                key = urllib.parse.unquote(self.path)[len(prefix):].lstrip("/")
                api.asked.append(key)
                found = self.path.startswith(prefix) and key in api.answers
                body = json.dumps(api.answers[key] if found else {"message": "Not Found"}).encode()
                self.send_response(200 if found else 404)
                self.send_header("Content-Type", "application/json")
                self.end_headers()
                self.wfile.write(body)

            def log_message(self, *args):
                pass

        self.server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        threading.Thread(target=self.server.serve_forever, daemon=True).start()
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}"

    def run(self, *args: str, kind: str = "release", today: str = "2026-11-26") -> subprocess.CompletedProcess:
        ref = "refs/tags/v1.0.0" if kind == "release" else "refs/heads/main"
        env = {**os.environ, "API_URL": self.url, "REPOSITORY": "my-ops/my_ops", "KIND": kind, "REF": ref,
               "TOKEN": "t", "ADMIN_TOKEN": "t", "TODAY": today}
        try:
            return subprocess.run([sys.executable, str(ROOT / "ci/plan/preflight.py"), *args], env=env,
                                  capture_output=True, text=True, timeout=60)
        finally:
            self.server.shutdown()


def _answers(**changes) -> dict:
    answers = copy.deepcopy(RECORDED)
    for key, value in changes.items():
        key = key.replace("__", "/")
        if value is None:
            answers.pop(key)
        else:
            answers[key] = value
    return answers


GPU_RUNNER = {"total_count": 1, "runners": [{"id": 5, "name": "h100-box", "os": "Linux", "status": "online",
                                             "busy": False, "labels": [{"id": 1, "name": "self-hosted"},
                                                                       {"id": 2, "name": "Linux"},
                                                                       {"id": 4, "name": "gpu"}]}]}


@pytest.mark.parametrize("kind", ["release", "nightly"])
def test_recorded_settings_pass(kind):
    result = RecordedApi(_answers()).run(kind=kind)
    assert result.returncode == 0, result.stdout + result.stderr
    assert "every setting lets this" in result.stdout


def _pypi_without(rule_type: str) -> dict:
    pypi = copy.deepcopy(RECORDED["environments/pypi"])
    pypi["protection_rules"] = [r for r in pypi["protection_rules"] if r["type"] != rule_type]
    return pypi


def _ruleset(**fields) -> dict:
    return {**RECORDED["rulesets/42"], **fields}


@pytest.mark.parametrize("answers,message", [
    ({"environments/pypi": _pypi_without("required_reviewers")},
     "environment 'pypi' has no required reviewers"),
    ({"environments/pypi": {**RECORDED["environments/pypi"],
                            "protection_rules": [{"id": 1, "type": "required_reviewers", "reviewers": []}]}},
     "environment 'pypi' has no required reviewers"),
    ({"environments/pypi": None}, "environment 'pypi' does not exist"),
    ({"rulesets/42": _ruleset(enforcement="evaluate"),
      "rulesets?targets=tag&includes_parents=true&per_page=100":
          [{**RECORDED["rulesets?targets=tag&includes_parents=true&per_page=100"][1], "enforcement": "evaluate"}]},
     "no tag ruleset restricts who may create or move v* tags"),
    ({"rulesets/42": _ruleset(conditions={"ref_name": {"include": ["refs/tags/release-*"], "exclude": []}})},
     "no tag ruleset restricts who may create or move v* tags"),
    ({"rulesets/42": _ruleset(rules=[{"type": "deletion"}])}, "'release tags' restricts ['deletion']"),
    ({"rulesets?targets=tag&includes_parents=true&per_page=100": []}, "Settings > Rules > Rulesets"),
    ({"actions/runners?per_page=100": GPU_RUNNER}, "the GPU runner h100-box is registered to the repository"),
    ({"actions/permissions/fork-pr-contributor-approval": {"approval_policy": "first_time_contributors"}},
     "Require approval for all external contributors"),
])
def test_a_release_stops_on_each_setting_that_lets_a_tag_publish_unreviewed(answers, message):
    result = RecordedApi(_answers(**{k.replace("/", "__"): v for k, v in answers.items()})).run()
    assert result.returncode == 1, result.stdout
    assert message in result.stdout, result.stdout
    assert "::error::" in result.stdout


def test_ruleset_that_covers_every_tag_counts():
    ruleset = _ruleset(conditions={"ref_name": {"include": ["~ALL"], "exclude": []}})
    result = RecordedApi(_answers(rulesets__42=ruleset)).run()
    assert result.returncode == 0, result.stdout


def test_a_nightly_does_not_need_the_pypi_reviewers():
    result = RecordedApi(_answers(environments__pypi=None)).run(kind="nightly")
    assert result.returncode == 0, result.stdout


@pytest.mark.parametrize("answers,ok", [
    ({}, True),
    ({"actions/runners?per_page=100": GPU_RUNNER}, False),
    ({"actions/permissions/fork-pr-contributor-approval": {"approval_policy": "first_time_contributors"}}, False),
    ({"environments/pypi": None, "pages": None}, True),  # only the runner's settings count here
])
def test_gpu_runner_check_alone(answers, ok):
    api = RecordedApi(_answers(**{k.replace("/", "__"): v for k, v in answers.items()}))
    result = api.run("--check", "gpu-runner")
    assert (result.returncode == 0) == ok, result.stdout
    assert not any(key.startswith(("environments", "pages", "rulesets")) for key in api.asked)


def test_gpu_runner_check_without_the_admin_token_names_the_secret():
    api = RecordedApi(_answers())
    env = {**os.environ, "API_URL": api.url, "REPOSITORY": "my-ops/my_ops", "TOKEN": "t", "ADMIN_TOKEN": ""}
    try:
        result = subprocess.run([sys.executable, str(ROOT / "ci/plan/preflight.py"), "--check", "gpu-runner"],
                                env=env, capture_output=True, text=True, timeout=60)
    finally:
        api.server.shutdown()
    assert result.returncode == 1 and "PREFLIGHT_TOKEN" in result.stdout


@pytest.mark.parametrize("days,status,annotation", [(400, 0, None), (59, 0, "::warning::"), (0, 1, "::error::")])
def test_release_preflight_warns_and_fails_on_dated_facts(tmp_path, days, status, annotation):
    """The expiry check of tests/packaging/test_expiry.py, in the release's own output: a runner
    image in use dated `days` after today passes, warns within 60 days, fails on its day."""
    import datetime
    import re

    today = datetime.date(2026, 11, 26)
    table = (ROOT / "ci/plan/expiry.toml").read_text()
    dated = re.sub(r'(\[runners\."ubuntu-24\.04"\]\n)', rf"\1retires = {today + datetime.timedelta(days=days)}\n",
                   table)
    assert dated != table
    (tmp_path / "expiry.toml").write_text(dated)
    api = RecordedApi(_answers())
    os.environ["EXPIRY_TABLE"] = str(tmp_path / "expiry.toml")
    try:
        result = api.run(today=today.isoformat())
    finally:
        del os.environ["EXPIRY_TABLE"]
    assert result.returncode == status, result.stdout
    lines = [line for line in result.stdout.splitlines() if "ubuntu-24.04" in line]
    if annotation is None:
        assert not lines and "::warning::" not in result.stdout
    else:
        assert len(lines) == 1 and lines[0].startswith(annotation), result.stdout
