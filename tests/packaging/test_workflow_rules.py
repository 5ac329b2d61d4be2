"""Who can reach the self-hosted GPU runner, read statically from .github/workflows.

GitHub runs a pull request's own copy of the workflow files (a fork's, a
Dependabot branch's, any unmerged branch's): a condition in them protects
nothing for that run, so the GPU jobs must not run for pull requests at all,
nor for refs whose code was not reviewed (a manual run from a branch). What
stops a pull request's modified copy is the runner's own settings, which the
gpu-guard job checks before every GPU run (not only in releases). These tests
evaluate the jobs' `if:` expressions for each kind of event.
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest

yaml = pytest.importorskip("yaml", reason="needs PyYAML (ci/lib/requirements.txt)")

ROOT = Path(__file__).resolve().parents[2]
WORKFLOWS = ROOT / ".github" / "workflows"
REPOSITORY = "my-ops/my_ops"


def _load(name: str) -> dict:
    data = yaml.safe_load((WORKFLOWS / name).read_text())
    data["on"] = data.pop(True, data.get("on"))  # YAML 1.1 reads the key `on` as true
    return data


# ------------------------------------------------- GitHub's expressions, evaluated
_TOKEN = re.compile(r"\s*(?:(?P<string>'(?:[^']|'')*')|(?P<op>&&|\|\||==|!=|!|\(|\)|,)"
                    r"|(?P<number>\d+)|(?P<name>[A-Za-z_][\w.\-]*))")


def evaluate(expression: str, context: dict):
    """A GitHub Actions expression (the subset these workflows use) in `context` (dotted names)."""
    text = expression.strip()
    if text.startswith("${{") and text.endswith("}}"):
        text = text[3:-2]
    python, position = [], 0
    while position < len(text.rstrip()):
        match = _TOKEN.match(text, position)
        assert match, f"cannot read {text[position:]!r} in {expression!r}"
        position = match.end()
        if match["string"] is not None:
            python.append(repr(match["string"][1:-1].replace("''", "'")))
        elif match["op"]:
            python.append({"&&": " and ", "||": " or ", "!": " not "}.get(match["op"], match["op"]))
        elif match["number"]:
            python.append(match["number"])
        elif text[position:].lstrip().startswith("("):
            python.append(f"_call_{match['name']}")
        else:
            python.append(f"_get({match['name']!r})")
    functions = {"_call_startsWith": lambda a, b: str(a).lower().startswith(str(b).lower()),
                 "_call_cancelled": lambda: False, "_call_always": lambda: True,
                 "_call_success": lambda: True, "_call_failure": lambda: False}

    def get(name: str):
        assert name in context, f"{name} is not in the test's context (expression {expression!r})"
        return context[name]

    return eval("".join(python), {"__builtins__": {}, "_get": get, **functions})  # noqa: S307


# Each event a run of wheels.yml can come from (directly, or called by release.yml).
EVENTS = {
    # GPU jobs may run: the code on main was reviewed; a v* tag needs the tag ruleset's bypass
    "push to main": ({"github.event_name": "push", "github.ref": "refs/heads/main"}, True),
    "v* tag (release.yml)": ({"github.event_name": "push", "github.ref": "refs/tags/v1.0.0"}, True),
    "nightly (release.yml)": ({"github.event_name": "schedule", "github.ref": "refs/heads/main"}, True),
    "manual run from main": ({"github.event_name": "workflow_dispatch", "github.ref": "refs/heads/main"}, True),
    # never: the workflow file and code are the pull request's or an unreviewed branch's
    "same-repository pull request": ({"github.event_name": "pull_request", "github.ref": "refs/pull/1/merge",
                                      "github.event.pull_request.head.repo.full_name": REPOSITORY,
                                      "github.actor": "someone"}, False),
    "fork pull request": ({"github.event_name": "pull_request", "github.ref": "refs/pull/2/merge",
                           "github.event.pull_request.head.repo.full_name": "someone/my_ops",
                           "github.actor": "someone"}, False),
    "Dependabot pull request": ({"github.event_name": "pull_request", "github.ref": "refs/pull/3/merge",
                                 "github.event.pull_request.head.repo.full_name": REPOSITORY,
                                 "github.actor": "dependabot[bot]"}, False),
    "manual run from a branch": ({"github.event_name": "workflow_dispatch", "github.ref": "refs/heads/feature"},
                                 False),
    "release.yml dry run from a branch": ({"github.event_name": "workflow_dispatch",
                                           "github.ref": "refs/heads/try-release"}, False),
}


def _context(event: dict, jobs: dict) -> dict:
    context = {"github.repository": REPOSITORY, "github.actor": "maintainer",
               "github.event.pull_request.head.repo.full_name": REPOSITORY, **event,
               "needs.matrix.result": "success", "needs.matrix.outputs.gpu-tests": "1",
               "needs.build-linux.result": "success", "needs.bundle.result": "success"}
    guard = jobs.get("gpu-guard")
    ran = guard is not None and evaluate(guard.get("if", "true"), context)
    context["needs.gpu-guard.result"] = "success" if ran else "skipped"
    return context


def _self_hosted_jobs(workflow: dict) -> dict:
    return {name: job for name, job in workflow["jobs"].items()
            if "self-hosted" in (job.get("runs-on") if isinstance(job.get("runs-on"), list)
                                 else [job.get("runs-on", "")])}


def test_no_workflow_runs_a_pull_request_with_this_repositorys_rights():
    """pull_request_target / workflow_run would run a pull request's code with secrets and the runner."""
    for path in WORKFLOWS.glob("*.yml"):
        triggers = _load(path.name)["on"]
        assert not {"pull_request_target", "workflow_run"} & set(triggers), path.name


@pytest.mark.parametrize("event", list(EVENTS))
def test_gpu_jobs_run_only_for_reviewed_code(event):
    wheels = _load("wheels.yml")
    jobs = wheels["jobs"]
    gpu_jobs = _self_hosted_jobs(wheels)
    assert gpu_jobs, "wheels.yml has no self-hosted job: update this test"
    values, allowed = EVENTS[event]
    context = _context(values, jobs)
    for name, job in gpu_jobs.items():
        assert "gpu-guard" in job["needs"], f"{name} must wait for gpu-guard (the runner-settings check)"
        assert "needs.gpu-guard.result == 'success'" in job["if"], name
        assert evaluate(job["if"], context) == allowed, f"{name} for a {event}"
    # the watchdog (GitHub-hosted, with `actions: write`) runs exactly when the GPU jobs do
    assert evaluate(jobs["gpu-watchdog"]["if"], context) == allowed


def test_no_other_workflow_names_the_gpu_runner():
    for path in WORKFLOWS.glob("*.yml"):
        if path.name != "wheels.yml":
            assert not _self_hosted_jobs(_load(path.name)), f"{path.name} names a self-hosted runner"


def test_gpu_guard_checks_the_runner_settings_on_every_gpu_event():
    """The runner-settings check is not a release-only step: it gates every GPU run, with the admin token."""
    wheels = _load("wheels.yml")
    guard = wheels["jobs"]["gpu-guard"]
    assert guard["runs-on"] == "ubuntu-24.04"  # GitHub-hosted: it runs before the GPU machine is touched
    steps = [s for s in guard["steps"] if "preflight.py" in s.get("run", "")]
    assert len(steps) == 1 and "--check gpu-runner" in steps[0]["run"]
    assert steps[0]["env"]["ADMIN_TOKEN"] == "${{ secrets.PREFLIGHT_TOKEN }}"
    # a release runs wheels.yml through workflow_call: the secret must be passed on, by name
    assert "PREFLIGHT_TOKEN" in wheels["on"]["workflow_call"]["secrets"]
    release = _load("release.yml")
    assert release["jobs"]["wheels"]["secrets"] == {"PREFLIGHT_TOKEN": "${{ secrets.PREFLIGHT_TOKEN }}",
                                                    "GPU_GUARD_ORG_TOKEN": "${{ secrets.GPU_GUARD_ORG_TOKEN }}"}
    assert steps[0]["env"]["ORG_TOKEN"] == "${{ secrets.GPU_GUARD_ORG_TOKEN }}"
    assert "GPU_GUARD_ORG_TOKEN" in wheels["on"]["workflow_call"]["secrets"]


def test_pypi_job_waits_for_a_person_and_checks_the_sealed_files():
    """The last, irreversible step: environment `pypi` (the preflight checks its reviewers), and a
    check of the exact files it uploads against the sealed manifest before the upload."""
    release = _load("release.yml")
    pypi = release["jobs"]["pypi"]
    assert pypi["environment"] == "pypi"
    steps = pypi["steps"]
    upload = next(i for i, s in enumerate(steps) if s.get("uses", "").startswith("pypa/gh-action-pypi-publish@"))
    checks = [i for i, s in enumerate(steps) if "ci/release/check-upload.py" in s.get("run", "")]
    assert checks and checks[-1] < upload, "the sealed-manifest check must run right before the upload"
    check = steps[checks[-1]]
    assert steps[upload]["with"]["packages-dir"].rstrip("/") in check["run"]
    assert check["env"]["MANIFEST"] == "${{ needs.wheels.outputs.manifest }}"
    assert "needs.assemble.outputs." in check["env"]["SDIST_SHA256"]
    assert {"wheels", "assemble", "verify"} <= set(pypi["needs"])
    # the image the action pulls by tag is checked against its recorded digest right before it runs
    image = [i for i, s in enumerate(steps) if "check-sources.py --action-images-only" in s.get("run", "")]
    assert image and image[-1] == upload - 1 and steps[image[-1]].get("if") == steps[upload].get("if")
    # and what PyPI then holds is compared with the seal, after the upload, whether or not it ran
    holds = [i for i, s in enumerate(steps) if "published.py pypi-holds" in s.get("run", "")]
    assert holds and holds[0] > upload and "if" not in steps[holds[0]]
    assert steps[holds[0]]["env"]["MANIFEST"] == check["env"]["MANIFEST"]
    assert steps[holds[0]]["env"]["SDIST_SHA256"] == check["env"]["SDIST_SHA256"]


def test_gpu_watchdog_starts_with_the_gpu_jobs():
    """Not during the builds (up to two hours of a hosted runner and of its own timeout): it needs what the
    GPU jobs need, and runs exactly when they do, a failed bundle included."""
    jobs = _load("wheels.yml")["jobs"]
    watchdog, gpu = jobs["gpu-watchdog"], jobs["test-gpu"]
    assert set(gpu["needs"]) <= set(watchdog["needs"]), "the watchdog must wait for what the GPU jobs wait for"
    for event, (values, allowed) in EVENTS.items():
        for bundle in ("success", "failure", "skipped"):
            context = {**_context(values, jobs), "needs.bundle.result": bundle}
            assert evaluate(watchdog["if"], context) == evaluate(gpu["if"], context), (event, bundle)


def test_gpu_guard_counts_the_gpu_jobs_rather_than_compare_json_text():
    """gha-matrix.sh counts the entries (json.load); an `if:` comparing the matrix's JSON text would
    break on a space."""
    guard = _load("wheels.yml")["jobs"]["gpu-guard"]
    assert "{" not in guard["if"].replace("${{", "").replace("}}", "")
    values, _ = EVENTS["push to main"]
    for count, runs in (("0", False), ("3", True)):
        context = {**_context(values, {}), "needs.matrix.outputs.gpu-tests": count}
        assert evaluate(guard["if"], context) == runs


@pytest.mark.parametrize("job,first_public", [("github-release", "actions/attest-build-provenance@"),
                                              ("pages", "ci/release/build-site.sh")])
def test_every_publishing_job_checks_the_seal_before_anything_goes_out(job, first_public):
    """The GitHub Release attests and uploads release/dist, the pages hash it: both check the folder against
    the bundle job's manifest and the assemble job's sdist sha256 first (ci/release/check-upload.py --assets)."""
    steps = _load("release.yml")["jobs"][job]["steps"]
    out = next(i for i, s in enumerate(steps) if first_public in s.get("uses", "") + s.get("run", ""))
    checks = [i for i, s in enumerate(steps) if "ci/release/check-upload.py --assets --dir release/dist"
              in s.get("run", "")]
    assert checks and checks[0] < out, f"{job}: the seal check must come before {first_public}"
    env = steps[checks[0]]["env"]
    assert env == {"MANIFEST": "${{ needs.wheels.outputs.manifest }}",
                   "SDIST_SHA256": "${{ needs.assemble.outputs.sdist-sha256 }}"}
    assert {"wheels", "assemble"} <= set(_load("release.yml")["jobs"][job]["needs"])


def test_pypi_sends_only_what_it_lacks_and_never_skips_a_different_file():
    """A re-run after a partial upload: ci/release/published.py sets aside what PyPI has with the sealed
    bytes, stops on a file it has with other bytes; skip-existing (which would skip that too) stays off."""
    steps = _load("release.yml")["jobs"]["pypi"]["steps"]
    upload = next(i for i, s in enumerate(steps) if s.get("uses", "").startswith("pypa/gh-action-pypi-publish@"))
    pending = next(i for i, s in enumerate(steps) if "ci/release/published.py pypi" in s.get("run", ""))
    assert pending < upload and steps[pending]["id"] == "pending"
    assert steps[upload]["if"] == "steps.pending.outputs.pending == 'true'"
    assert not steps[upload]["with"].get("skip-existing", False)


def test_a_dry_run_reports_the_preflight_and_goes_on():
    """The preflight runs for every run; only a publishing run stops on it (a dry run's findings are
    annotations), and it checks the settings for the ref the tag will have."""
    release = _load("release.yml")
    preflight = release["jobs"]["preflight"]
    assert "if" not in preflight, "a dry run must run the preflight too"
    (step,) = [s for s in preflight["steps"] if "ci/plan/preflight.py" in s.get("run", "")]
    assert step["continue-on-error"] == "${{ needs.plan.outputs.publish != 'true' }}"
    assert step["env"]["REF"] == "${{ needs.plan.outputs.preflight-ref }}"
    assert release["on"]["workflow_dispatch"]["inputs"]["kind"]["options"] == ["nightly", "release"]
    assert release["jobs"]["plan"]["steps"][-1]["env"]["DRY_RUN_KIND"] == "${{ inputs.kind }}"


def test_a_releases_artifacts_outlive_a_slow_approval():
    """The PyPI job downloads `release` after a person approves it, and a re-run of failed jobs
    downloads the builds' and bundles' artifacts: under a tag every upload keeps them 90 days (the
    action caps it at the repository's maximum); other runs keep the repository's default (0)."""
    for name in ("wheels.yml", "release.yml"):
        for job_name, job in _load(name)["jobs"].items():
            for step in job.get("steps", []):
                if step.get("uses", "").startswith("actions/upload-artifact@"):
                    days = step["with"].get("retention-days")
                    assert days is not None, f"{name} {job_name}: {step['with'].get('name')}"
                    assert evaluate(days, {"github.ref": "refs/tags/v1.0.0"}) == 90
                    assert evaluate(days, {"github.ref": "refs/heads/main"}) == 0
                    assert evaluate(days, {"github.ref": "refs/pull/1/merge"}) == 0
