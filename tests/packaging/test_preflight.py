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

    def __init__(self, answers: dict, headers: dict | None = None):
        """`headers`: sent with every answer (e.g. GitHub's token expiry header)."""
        self.answers, self.asked, self.headers = answers, [], headers or {}
        self.env: dict[str, str] = {}
        api = self

        class Handler(http.server.BaseHTTPRequestHandler):
            def do_GET(self):  # noqa: N802
                prefix = "/repos/my-ops/my_ops"
                path = urllib.parse.unquote(self.path)
                # repository paths without the prefix; others (/orgs/...) as they are
                key = path[len(prefix):].lstrip("/") if path.startswith(prefix) else path
                api.asked.append(key)
                found = key in api.answers
                body = json.dumps(api.answers[key] if found else {"message": "Not Found"}).encode()
                self.send_response(200 if found else 404)
                self.send_header("Content-Type", "application/json")
                for name, value in api.headers.items():
                    self.send_header(name, value)
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
               "COMMIT": COMMIT, "TOKEN": "t", "ADMIN_TOKEN": "t", "TODAY": today, **self.env}
        try:
            return subprocess.run([sys.executable, str(ROOT / "ci/plan/preflight.py"), *args], env=env,
                                  capture_output=True, text=True, timeout=60)
        finally:
            self.server.shutdown()


COMMIT = "4c1d2e3f" * 5  # the commit a tag points to
# main: the tag's commit is on it (compare main...COMMIT: "behind"), and an active ruleset requires pull requests
MAIN = {f"compare/main...{COMMIT}": {"status": "behind", "ahead_by": 0, "behind_by": 3},
        "rules/branches/main": [{"type": "pull_request", "ruleset_source_type": "Repository", "ruleset_id": 7,
                                 "parameters": {"required_approving_review_count": 1,
                                                "dismiss_stale_reviews_on_push": True}},
                                {"type": "deletion", "ruleset_id": 7}]}


def _answers(**changes) -> dict:
    answers = {**copy.deepcopy(RECORDED), **copy.deepcopy(MAIN)}
    answers[""] = {**answers[""], "default_branch": "main"}
    answers["releases/tags/nightly"] = {"tag_name": "nightly", "draft": False, "prerelease": True, "assets": []}
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
    # a ruleset that covers v* tags but not this run's v1.0.0 (30b N2)
    ({"rulesets/42": _ruleset(conditions={"ref_name": {"include": ["refs/tags/v*"],
                                                       "exclude": ["refs/tags/v1.*"]}})},
     "no tag ruleset restricts who may create or move v* tags (refs/tags/v0.0.0 and refs/tags/v1.0.0)"),
    ({"rulesets/42": _ruleset(conditions={"ref_name": {"include": ["refs/tags/v0.*"], "exclude": []}})},
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
        assert not lines and not [line for line in result.stdout.splitlines()
                                  if line.startswith("::warning::") and "retire" in line], result.stdout
    else:
        assert len(lines) == 1 and lines[0].startswith(annotation), result.stdout


# ------------------------------------------------------------------ main
@pytest.mark.parametrize("status", ["diverged", "ahead", None])
def test_a_release_of_a_commit_not_on_main_stops(status):
    answers = _answers(**{f"compare__main...{COMMIT}": {"status": status} if status else None})
    result = RecordedApi(answers).run()
    assert result.returncode == 1 and f"the tag's commit {COMMIT[:12]} is not on main" in result.stdout, \
        result.stdout


def test_a_commit_that_main_points_at_is_on_main():
    result = RecordedApi(_answers(**{f"compare__main...{COMMIT}": {"status": "identical"}})).run()
    assert result.returncode == 0, result.stdout


@pytest.mark.parametrize("kind", ["release", "nightly"])
def test_an_unprotected_main_stops_releases_and_nightlies(kind):
    answers = _answers(rules__branches__main=[{"type": "deletion", "ruleset_id": 7}])
    result = RecordedApi(answers).run(kind=kind)
    assert result.returncode == 1 and "main accepts pushes without a pull request" in result.stdout, result.stdout


def test_classic_branch_protection_with_reviews_counts():
    answers = _answers(rules__branches__main=None, **{"branches/main/protection": {
        "required_pull_request_reviews": {"required_approving_review_count": 1}}})
    result = RecordedApi(answers).run()
    assert result.returncode == 0, result.stdout


def test_pull_requests_without_approvals_pass_with_a_warning():
    rules = copy.deepcopy(MAIN["rules/branches/main"])
    rules[0]["parameters"]["required_approving_review_count"] = 0
    result = RecordedApi(_answers(rules__branches__main=rules)).run()
    assert result.returncode == 0 and "::warning::main requires pull requests but no approving review" \
        in result.stdout, result.stdout


# ------------------------------------------------------------- token expiry
EXPIRY = "github-authentication-token-expiration"


@pytest.mark.parametrize("expires,status,annotation", [
    ("2027-06-01 00:00:00 UTC", 0, None),
    ("2026-12-20 09:30:00 UTC", 0, "::warning::PREFLIGHT_TOKEN expires on 2026-12-20, in 24 days"),
    ("2026-11-25 23:00:00 UTC", 1, "::error::PREFLIGHT_TOKEN expired on 2026-11-25"),
    ("2026-12-20 09:30:00 +0000", 0, "::warning::PREFLIGHT_TOKEN expires on 2026-12-20"),
    ("next week", 1, "cannot read its expiry date"),
])
@pytest.mark.parametrize("check", [(), ("--check", "gpu-runner")])
def test_the_token_expiry_github_reports_warns_then_fails(expires, status, annotation, check):
    result = RecordedApi(_answers(), headers={EXPIRY: expires}).run(*check, today="2026-11-26")
    assert result.returncode == status, result.stdout
    if annotation:
        assert annotation in result.stdout, result.stdout
    else:
        assert "PREFLIGHT_TOKEN expire" not in result.stdout, result.stdout


def test_a_token_without_an_expiry_date_is_said():
    result = RecordedApi(_answers()).run("--check", "gpu-runner")
    assert result.returncode == 0 and "PREFLIGHT_TOKEN has no expiry date" in result.stdout, result.stdout


# ------------------------------------------------------ the GPU runner's group
GROUPS = "/orgs/my-ops/actions/runner-groups?visible_to_repository=my_ops&per_page=100"
GPU_GROUP = {"id": 3, "name": "gpu", "visibility": "selected", "default": False, "allows_public_repositories": True,
             "restricted_to_workflows": True,
             "selected_workflows": ["my-ops/my_ops/.github/workflows/wheels.yml@refs/heads/main",
                                    "my-ops/my_ops/.github/workflows/wheels.yml@refs/tags/v1.0.0"]}
DEFAULT_GROUP = {"id": 1, "name": "Default", "visibility": "all", "default": True, "allows_public_repositories": False,
                 "restricted_to_workflows": False, "selected_workflows": []}


def _with_groups(group: dict | None = None, runners: dict | None = None, repositories: list | None = None) -> dict:
    gpu = {**GPU_GROUP, **(group or {})}
    return _answers(**{
        GROUPS: {"total_count": 2, "runner_groups": [DEFAULT_GROUP, gpu]},
        "/orgs/my-ops/actions/runner-groups/1/runners?per_page=100": {"total_count": 0, "runners": []},
        "/orgs/my-ops/actions/runner-groups/3/runners?per_page=100": runners or GPU_RUNNER,
        "/orgs/my-ops/actions/runner-groups/3/repositories?per_page=100": {
            "total_count": 1, "repositories": repositories or [{"full_name": "my-ops/my_ops"}]}})


def _guard(answers: dict, org_token: str = "o") -> subprocess.CompletedProcess:
    api = RecordedApi(answers)
    api.env["ORG_TOKEN"] = org_token
    return api.run("--check", "gpu-runner")


def test_gpu_group_settings_pass_with_the_org_token():
    result = _guard(_with_groups())
    assert result.returncode == 0, result.stdout
    assert "not verified" not in result.stdout and "and the GPU runner's runner group" in result.stdout


@pytest.mark.parametrize("group,runners,repositories,message", [
    ({"visibility": "all"}, None, None, "is open to 'all' repositories of my-ops"),
    ({}, None, [{"full_name": "my-ops/my_ops"}, {"full_name": "my-ops/other"}], "also serves my-ops/other"),
    ({"allows_public_repositories": False}, None, None, "does not allow public repositories"),
    ({"restricted_to_workflows": False}, None, None, "runs any workflow file of the repository"),
    ({"selected_workflows": ["my-ops/my_ops/.github/workflows/wheels.yml@refs/heads/main",
                             "my-ops/my_ops/.github/workflows/wheels.yml@refs/pull/*"]}, None, None,
     "also runs my-ops/my_ops/.github/workflows/wheels.yml@refs/pull/*"),
    ({"selected_workflows": ["my-ops/my_ops/.github/workflows/release.yml@refs/heads/main"]}, None, None,
     "also runs my-ops/my_ops/.github/workflows/release.yml@refs/heads/main"),
    ({}, {"total_count": 0, "runners": []}, None, "no runner labelled gpu in any runner group of my-ops"),
])
def test_each_gpu_group_setting_that_lets_unreviewed_code_in_fails(group, runners, repositories, message):
    result = _guard(_with_groups(group, runners, repositories))
    assert result.returncode == 1 and message in result.stdout, result.stdout


@pytest.mark.parametrize("ref,workflows,ok", [
    ("refs/tags/v1.0.0", ["wheels.yml@refs/heads/main", "wheels.yml@refs/tags/v1.0.0"], True),
    ("refs/tags/v1.0.0", ["wheels.yml@refs/heads/main", "wheels.yml@v1.0.0"], True),
    # GitHub matches the ref exactly: a pattern admits no tag (pytorch/test-infra#8502)
    ("refs/tags/v1.0.0", ["wheels.yml@refs/heads/main", "wheels.yml@refs/tags/v*"], False),
    ("refs/tags/v1.0.0", ["wheels.yml@refs/heads/main", "wheels.yml@refs/tags/v0.9.0"], False),
    ("refs/heads/main", ["wheels.yml@main"], True),
    ("refs/heads/main", ["wheels.yml@refs/tags/v1.0.0"], False),
])
def test_the_gpu_group_must_admit_this_runs_ref(ref, workflows, ok):
    """A group that admits only another ref leaves the run's GPU jobs queued until the watchdog
    cancels the run: the guard names the exact entry to add (and, with no time to wait, fails)."""
    answers = _with_groups({"selected_workflows": [f"my-ops/my_ops/.github/workflows/{w}" for w in workflows]})
    api = RecordedApi(answers)
    api.env.update(ORG_TOKEN="o", RUN_REF=ref, GPU_GUARD_WAIT_SECONDS="0")
    result = api.run("--check", "gpu-runner")
    assert (result.returncode == 0) == ok, result.stdout
    assert ("does not admit this run" in result.stdout) == (not ok)
    if not ok:
        assert f"add my-ops/my_ops/.github/workflows/wheels.yml@{ref} to its Selected workflows" in result.stdout


def test_without_the_org_token_a_tag_run_is_told_the_entry_to_add():
    api = RecordedApi(_with_groups())
    api.env.update(RUN_REF="refs/tags/v1.0.0")
    result = api.run("--check", "gpu-runner")
    assert result.returncode == 0, result.stdout
    assert "add my-ops/my_ops/.github/workflows/wheels.yml@refs/tags/v1.0.0 to the GPU runner group" in result.stdout


def test_without_the_org_token_the_guard_says_what_it_did_not_verify():
    result = _guard(_with_groups(), org_token="")
    assert result.returncode == 0, result.stdout
    assert "::warning::not verified: the GPU runner's organization runner group" in result.stdout
    assert "GPU_GUARD_ORG_TOKEN" in result.stdout and "nothing else could be checked" in result.stdout


def test_an_owner_without_runner_groups_is_said_not_verified():
    result = _guard(_answers())  # no runner-groups answer (404): a user account, not an organization
    assert "not verified" in result.stdout and "is not an organization" in result.stdout, result.stdout


def test_a_nightly_needs_the_rolling_release_made_by_hand():
    result = RecordedApi(_answers(releases__tags__nightly=None)).run(kind="nightly")
    assert result.returncode == 1 and "the rolling 'nightly' pre-release does not exist" in result.stdout, \
        result.stdout
    assert RecordedApi(_answers(releases__tags__nightly=None)).run(kind="release").returncode == 0


# ------------------------------------------------- who approves the upload
def _reviewers(prevent: bool, *reviewers: dict) -> dict:
    pypi = copy.deepcopy(RECORDED["environments/pypi"])
    rule = next(r for r in pypi["protection_rules"] if r["type"] == "required_reviewers")
    rule.update(prevent_self_review=prevent, reviewers=list(reviewers))
    return pypi


USER = {"type": "User", "reviewer": {"login": "maintainer", "id": 3}}
OTHER = {"type": "User", "reviewer": {"login": "second", "id": 4}}
TEAM = {"type": "Team", "reviewer": {"slug": "release-managers", "id": 9}}


@pytest.mark.parametrize("pypi,status,text", [
    (_reviewers(False, USER, OTHER), 1, "lets the person who pushed the tag approve their own upload"),
    (_reviewers(False, TEAM), 1, "lets the person who pushed the tag approve their own upload"),
    (_reviewers(True, USER, OTHER), 0, None),
    (_reviewers(False, USER), 0, "::warning::environment 'pypi' has one reviewer, who may approve"),
    (_reviewers(True, USER), 0, "::warning::environment 'pypi' has one reviewer and prevents self-review"),
])
def test_the_pypi_approval_is_someone_elses_where_it_can_be(pypi, status, text):
    result = RecordedApi(_answers(environments__pypi=pypi)).run()
    assert result.returncode == status, result.stdout
    if text:
        assert text in result.stdout, result.stdout
    assert "v* tags may be created by the bypass list of ruleset 'release tags': Team 7" in result.stdout
