#!/usr/bin/env python3
"""Stop a release before anything is built when a repository setting would refuse it later,
and keep the self-hosted GPU runner out of reach of code nobody reviewed.

    ci/plan/preflight.py                   the release/nightly preflight (KIND)
    ci/plan/preflight.py --check gpu-runner  only the GPU runner's settings (wheels.yml, before
                                           any GPU job of any event)

Reads the repository's settings through GitHub's REST API and checks, for
this run's kind (release: a v* tag; nightly: main):
  - the environments the publishing jobs use (release or nightly, pypi,
    github-pages) let this ref deploy: no rule, or a custom rule whose
    branch or tag pattern matches it, or "protected branches" with a
    protected branch (a tag never passes that one);
  - a human stands before PyPI (releases): the `pypi` environment has
    required reviewers, and an active tag ruleset covers `v*` tags and
    restricts their creation and update (only its bypass list may push the
    tag that starts a release);
  - GitHub Pages is enabled and deployed by Actions (build type "workflow");
  - a nightly: the rolling `nightly` pre-release exists (created once by
    hand: the job's token may be refused creating its tag);
  - immutable releases are off for a nightly (it adds and deletes assets of
    the published rolling `nightly` release, which they forbid);
  - the GPU runner (also alone, --check gpu-runner): pull requests from
    forks wait for approval before they run workflows ("all external
    contributors"), and no repository-level runner carries the `gpu` label
    (any workflow file of any branch can name a repository's runner; an
    organization runner group limited to selected workflows cannot be reached
    from a pull request's copy of them);
  - a release's commit is on the default branch, and that branch requires
    pull requests (an active branch ruleset's pull_request rule, or classic
    branch protection with required reviews);
  - the dated facts of ci/plan/expiry.toml (runner images, action runtimes):
    an expired one is an error, one within its warning window a warning; so
    is the PREFLIGHT_TOKEN's expiry date, which GitHub sends with every
    answer as the github-authentication-token-expiration header (an error
    once past, a warning within 30 days);
  - with --check gpu-runner and ORG_TOKEN (an organization token, "Self-hosted
    runners: read"; the GPU_GUARD_ORG_TOKEN secret), the organization runner
    group that holds the gpu runner: this repository only, "Allow public
    repositories" for a public one, and workflow access limited to wheels.yml
    at main and v* tags. Without it those settings are printed as not
    verified: neither the repository's token nor PREFLIGHT_TOKEN can read them.
Every problem is printed with the setting that fixes it; exit 1 if any.

Environment: API_URL, REPOSITORY (owner/name), KIND (release|nightly), REF
(refs/tags/v1.0.0, refs/heads/main), TOKEN (the job's GITHUB_TOKEN:
actions and pages read), ADMIN_TOKEN (a fine-grained token with
"Administration: read" of this repository, for the fork-approval policy,
the repository's runners and immutable releases; the PREFLIGHT_TOKEN secret),
COMMIT (the commit the run builds), ORG_TOKEN (optional, above), RUN_REF
(with --check gpu-runner: the run's ref, which the runner group's selected
workflows must admit), TODAY
(YYYY-MM-DD, default: today in UTC). Any server that answers as
GitHub's API does works (tests/packaging/test_preflight.py serves recorded
answers, ci/test/workflow_test.py stand-ins, on 127.0.0.1).
"""

from __future__ import annotations

import argparse
import datetime
import fnmatch
import json
import os
import sys
import time
import urllib.error
import urllib.request
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
import expiry  # noqa: E402

SETTINGS = "Settings > Environments"


EXPIRY_HEADER = "github-authentication-token-expiration"  # GitHub sends it for tokens with an expiry date
TOKEN_WARNING_DAYS = 30


class Api:
    def __init__(self) -> None:
        self.root = os.environ["API_URL"].rstrip("/")
        self.base = f"{self.root}/repos/{os.environ['REPOSITORY']}"
        self.expiry: dict[str, str | None] = {}  # token variable -> its expiry header, once one answer came

    def get(self, path: str, token_variable: str = "TOKEN", root: bool = False) -> dict | None:
        """The JSON answer, or None for 404; PermissionError when the token may not read it.
        `root`: `path` is from the API's root (/orgs/...), not from the repository's."""
        token = os.environ.get(token_variable, "")
        if not token:
            raise PermissionError(f"{token_variable} is not set")
        request = urllib.request.Request((self.root if root else self.base) + path, headers={
            "Authorization": f"Bearer {token}", "Accept": "application/vnd.github+json",
            "X-GitHub-Api-Version": "2022-11-28"})
        try:
            with urllib.request.urlopen(request, timeout=60) as response:
                self.expiry[token_variable] = response.headers.get(EXPIRY_HEADER)
                return json.loads(response.read() or b"{}")
        except urllib.error.HTTPError as error:
            if error.code == 404:
                return None
            if error.code in (401, 403):
                expired = " (a 401: the token is wrong or has expired)" if error.code == 401 else ""
                raise PermissionError(f"{path}: HTTP {error.code}{expired}") from error
            raise


def parse_expiry(text: str) -> datetime.datetime | None:
    """GitHub's expiry header, e.g. '2027-01-31 09:00:00 UTC' (or with a numeric offset)."""
    for pattern, value in (("%Y-%m-%d %H:%M:%S %Z", text), ("%Y-%m-%d %H:%M:%S %z", text)):
        try:
            moment = datetime.datetime.strptime(value.strip(), pattern)
        except ValueError:
            continue
        return moment if moment.tzinfo else moment.replace(tzinfo=datetime.timezone.utc)
    return None


def token_expiry(api: Api, variable: str, secret: str, today: datetime.date) -> tuple[list[str], list[str]]:
    """(errors, warnings) about the expiry date GitHub reported for the token in `variable`."""
    if variable not in api.expiry:
        return [], []  # never answered: the PermissionError already names the secret
    header = api.expiry[variable]
    if not header:
        print(f"preflight: {secret} has no expiry date (GitHub sent no {EXPIRY_HEADER} header)")
        return [], []
    moment = parse_expiry(header)
    if moment is None:
        return [f"{secret}: cannot read its expiry date {header!r} ({EXPIRY_HEADER})"], []
    days = (moment.date() - today).days
    renew = (f"create a new fine-grained token with the same permissions and store it as the secret {secret} "
             "(docs/releasing.md)")
    if days < 0:
        return [f"{secret} expired on {moment:%Y-%m-%d}: {renew}"], []
    if days <= TOKEN_WARNING_DAYS:
        return [], [f"{secret} expires on {moment:%Y-%m-%d}, in {days} days: {renew}"]
    return [], []


def ref_matches(ref: str, policies: list[dict]) -> bool:
    """Whether a custom deployment rule lets `ref` deploy (GitHub's fnmatch patterns, per ref type)."""
    kind, name = ("tag", ref.removeprefix("refs/tags/")) if ref.startswith("refs/tags/") else \
        ("branch", ref.removeprefix("refs/heads/"))
    for policy in policies:
        if policy.get("type", "branch") == kind and fnmatch.fnmatchcase(name, policy["name"]) and \
                ("/" in policy["name"] or "/" not in name):
            return True
    return False


def environment_problem(api: Api, environment: str, ref: str) -> str | None:
    answer = api.get(f"/environments/{environment}")
    if answer is None:
        # Not created yet: GitHub creates it on first use, with no rules
        # (github-pages comes with Pages, whose check names the fix).
        return None
    policy = answer.get("deployment_branch_policy")
    if not policy:
        return None
    what = "tag" if ref.startswith("refs/tags/") else "branch"
    name = ref.split("/", 2)[-1]
    if policy.get("protected_branches"):
        if what == "branch" and (api.get(f"/branches/{name}") or {}).get("protected"):
            return None
        return (f"environment '{environment}' deploys from protected branches only, and {what} '{name}' is not "
                f"one: in {SETTINGS} > {environment}, choose 'Selected branches and tags' and add the {what} "
                f"rule '{'v*' if what == 'tag' else name}'")
    policies = []
    page = 1
    while True:
        batch = (api.get(f"/environments/{environment}/deployment-branch-policies?per_page=100&page={page}")
                 or {}).get("branch_policies", [])
        policies += batch
        if len(batch) < 100:
            break
        page += 1
    if ref_matches(ref, policies):
        return None
    rules = ", ".join(f"{p.get('type', 'branch')} '{p['name']}'" for p in policies) or "none"
    return (f"environment '{environment}' does not let {what} '{name}' deploy (its rules: {rules}): in "
            f"{SETTINGS} > {environment} > Deployment branches and tags, add the {what} rule "
            f"'{'v*' if what == 'tag' else name}'")


def reviewers_problem(api: Api, environment: str) -> str | None:
    """None when the environment makes a person approve each job that uses it."""
    fix = (f"in {SETTINGS} > {environment}, tick 'Required reviewers' and add the people who may "
           "approve a release")
    answer = api.get(f"/environments/{environment}")
    if answer is None:
        return f"environment '{environment}' does not exist, so nobody approves its jobs: create it, and {fix}"
    rules = [r for r in answer.get("protection_rules") or [] if r.get("type") == "required_reviewers"]
    if not any(r.get("reviewers") for r in rules):
        return f"environment '{environment}' has no required reviewers: a tag would publish unreviewed; {fix}"
    reviewers = [x for r in rules for x in r.get("reviewers") or []]
    several = len(reviewers) > 1 or any(x.get("type") == "Team" for x in reviewers)
    if not any(r.get("prevent_self_review") for r in rules):
        if several:
            return (f"environment '{environment}' lets the person who pushed the tag approve their own upload: in "
                    f"{SETTINGS} > {environment}, tick 'Prevent self-review'")
        print(f"::warning::environment '{environment}' has one reviewer, who may approve a release they tagged "
              "themselves: add a second reviewer and tick 'Prevent self-review' when there is one")
    elif not several:
        print(f"::warning::environment '{environment}' has one reviewer and prevents self-review: a release that "
              "reviewer tags waits for an approval nobody can give; someone else must push the tag")
    return None


TAG_EXAMPLE = "refs/tags/v0.0.0"  # any release tag: the ruleset must cover the v* pattern


def ref_in_conditions(ref: str, conditions: dict) -> bool:
    """Whether a ruleset's ref_name conditions cover `ref` (~ALL, or fnmatch patterns)."""
    names = (conditions or {}).get("ref_name") or {}
    include, exclude = names.get("include") or [], names.get("exclude") or []
    covered = lambda patterns: any(p == "~ALL" or fnmatch.fnmatchcase(ref, p) for p in patterns)  # noqa: E731
    return covered(include) and not covered(exclude)


def tag_ruleset_problem(api: Api, ref: str = "") -> str | None:
    """None when an active tag ruleset limits who may create or move a v* tag: v* tags in general
    (TAG_EXAMPLE) and this run's own tag `ref` (a ruleset on refs/tags/v1.* leaves v2.0.0 free;
    one excluding refs/tags/v1.* leaves this run's v1.0.0 free)."""
    refs = [TAG_EXAMPLE] + ([ref] if ref.startswith("refs/tags/") else [])
    fix = ("in Settings > Rules > Rulesets, add a tag ruleset (Enforcement: Active; target tags: "
           "include 'v*') with 'Restrict creations', 'Restrict updates' and 'Restrict deletions', and "
           "only the release managers in its bypass list")
    summaries = api.get("/rulesets?targets=tag&includes_parents=true&per_page=100") or []
    found = []
    for summary in summaries:
        if summary.get("target", "tag") != "tag" or summary.get("enforcement") != "active":
            continue
        ruleset = api.get(f"/rulesets/{summary['id']}") or {}
        if not all(ref_in_conditions(r, ruleset.get("conditions") or {}) for r in refs):
            continue
        kinds = {rule.get("type") for rule in ruleset.get("rules") or []}
        if {"creation", "update"} <= kinds:
            bypass = ", ".join(f"{a.get('actor_type')} {a.get('actor_id')}" for a in ruleset.get("bypass_actors") or [])
            print(f"preflight: v* tags may be created by the bypass list of ruleset '{ruleset.get('name')}': "
                  f"{bypass or 'nobody (or it is not visible to this token)'}")
            return None
        found.append(f"'{ruleset.get('name')}' restricts {sorted(kinds) or 'nothing'}")
    what = f" (active ones covering v*: {'; '.join(found)})" if found else ""
    return (f"no tag ruleset restricts who may create or move v* tags ({' and '.join(refs)}), and a v* tag "
            f"starts a release{what}: {fix}")


def main_branch_problems(api: Api, kind: str, commit: str) -> list[str]:
    """A release's commit is on the default branch, and that branch takes changes only through pull requests."""
    problems = []
    default = (api.get("") or {}).get("default_branch") or "main"
    if kind == "release":
        # compare DEFAULT...COMMIT: "behind" or "identical" when COMMIT is reachable from DEFAULT
        status = (api.get(f"/compare/{default}...{commit}") or {}).get("status")
        if status not in ("identical", "behind"):
            problems.append(f"the tag's commit {commit[:12]} is not on {default} (compare: {status or 'not found'}): "
                            f"tag a commit of {default}, which went through review, and push the tag again")
    rules = api.get(f"/rules/branches/{default}") or []
    reviews = [r.get("parameters") or {} for r in rules if r.get("type") == "pull_request"]
    if not reviews:
        try:  # classic branch protection (Administration: read)
            protection = api.get(f"/branches/{default}/protection", "ADMIN_TOKEN") or {}
        except PermissionError:
            protection = {}
        if protection.get("required_pull_request_reviews") is not None:
            reviews = [protection["required_pull_request_reviews"]]
    if not reviews:
        problems.append(f"{default} accepts pushes without a pull request, so a release or nightly can build "
                        "code nobody reviewed: in Settings > Rules > Rulesets, add a branch ruleset (Enforcement: "
                        f"Active, target: the default branch) with 'Require a pull request before merging'")
    elif all(int(r.get("required_approving_review_count", 0) or 0) < 1 for r in reviews):
        print(f"::warning::{default} requires pull requests but no approving review: a maintainer can merge "
              "their own change unreviewed (ruleset: 'Required approvals' 1 or more)")
    return problems


# The settings of the GPU runner's organization runner group, readable only with an organization token.
GROUP_SETTINGS = ("its repository access (this repository only), 'Allow public repositories' and its workflow "
                  "access (Selected workflows: wheels.yml at refs/heads/main and at each release tag, "
                  "added once the tag is pushed)")
# GitHub matches a selected workflow's ref exactly (no patterns: pytorch/test-infra#8502 adds each
# release tag by hand) and takes only refs that exist: a release tag's entry is added after the push,
# while the builds run; gpu-guard waits for it this long (GPU_GUARD_WAIT_SECONDS).
GUARD_WAIT_SECONDS = 90 * 60


def allowed_workflow(entry: str, repository: str) -> bool:
    """A runner group's selected workflow that is wheels.yml at main or at release tags."""
    path, _, ref = entry.partition("@")
    return path.lower() == f"{repository}/.github/workflows/wheels.yml".lower() and \
        (ref in ("refs/heads/main", "main") or ref.startswith(("refs/tags/v", "v")))


def admits(entry: str, repository: str, ref: str) -> bool:
    """Whether a selected-workflow entry lets wheels.yml run at `ref`: the same ref (GitHub takes no
    patterns), written in full or short (`main`, `v1.0.0`); owner and name in any case."""
    path, _, wanted = entry.partition("@")
    short = ref.removeprefix("refs/heads/").removeprefix("refs/tags/")
    return path.lower() == f"{repository}/.github/workflows/wheels.yml".lower() and wanted in (ref, short)


NOT_ADMITTED = "does not admit this run"


def runner_group_problems(api: Api) -> tuple[list[str], list[str]]:
    """(problems, unverified) of the organization runner groups that hold a `gpu` runner (ORG_TOKEN)."""
    repository = os.environ["REPOSITORY"]
    org, name = repository.split("/")
    if not os.environ.get("ORG_TOKEN"):
        return [], [f"the GPU runner's organization runner group: {GROUP_SETTINGS} (no ORG_TOKEN: add a "
                    "fine-grained token of the organization with 'Self-hosted runners: read' as the secret "
                    "GPU_GUARD_ORG_TOKEN to check them)"]
    try:
        groups = (api.get(f"/orgs/{org}/actions/runner-groups?visible_to_repository={name}&per_page=100",
                          "ORG_TOKEN", root=True) or {}).get("runner_groups")
    except PermissionError as error:
        return [f"GPU_GUARD_ORG_TOKEN cannot read the organization's runner groups ({error}): it needs "
                "'Self-hosted runners: read' on the organization"], []
    if groups is None:
        return [], [f"the GPU runner's runner group: {org} is not an organization (no runner groups)"]
    problems, found = [], 0
    public = not (api.get("", "ADMIN_TOKEN") or {}).get("private", False)
    for group in groups:
        runners = (api.get(f"/orgs/{org}/actions/runner-groups/{group['id']}/runners?per_page=100", "ORG_TOKEN",
                           root=True) or {}).get("runners", [])
        if not any("gpu" in {label.get("name") for label in r.get("labels", [])} for r in runners):
            continue
        found += 1
        where = f"runner group '{group.get('name')}' (holds a gpu runner)"
        if group.get("visibility") != "selected":
            problems.append(f"{where} is open to {group.get('visibility')!r} repositories of {org}: set "
                            "Repository access to this repository only")
        else:
            repos = (api.get(f"/orgs/{org}/actions/runner-groups/{group['id']}/repositories?per_page=100",
                             "ORG_TOKEN", root=True) or {}).get("repositories", [])
            others = sorted(r.get("full_name", "?") for r in repos if r.get("full_name") != repository)
            if others:
                problems.append(f"{where} also serves {', '.join(others)}: limit it to {repository}")
        if public and not group.get("allows_public_repositories"):
            problems.append(f"{where} does not allow public repositories: GPU jobs of this public repository "
                            "would wait until gpu-watchdog cancels the run; tick 'Allow public repositories'")
        workflows = group.get("selected_workflows") or []
        if not group.get("restricted_to_workflows") or not workflows:
            problems.append(f"{where} runs any workflow file of the repository, a pull request's copy "
                            "included: set Workflow access to Selected workflows (wheels.yml at "
                            "refs/heads/main, and at each release tag once pushed)")
        else:
            wrong = [w for w in workflows if not allowed_workflow(w, repository)]
            if wrong:
                problems.append(f"{where} also runs {', '.join(wrong)}: only wheels.yml at refs/heads/main "
                                "and at release tags (refs/tags/v...) may reach the GPU runner")
            run_ref = os.environ.get("RUN_REF", "")
            if run_ref and not any(admits(w, repository, run_ref) for w in workflows):
                problems.append(f"{where} {NOT_ADMITTED} ({run_ref}): its GPU jobs would wait until "
                                f"gpu-watchdog cancels the run; add {repository}/.github/workflows/wheels.yml@"
                                f"{run_ref} to its Selected workflows (GitHub matches the ref exactly)")
    if not found:
        problems.append(f"no runner labelled gpu in any runner group of {org} that this repository may use: "
                        "the GPU jobs would wait until gpu-watchdog cancels the run")
    return problems, []


def gpu_runner_problems(api: Api) -> list[str]:
    """What would let code nobody reviewed reach the self-hosted GPU runner (needs ADMIN_TOKEN)."""
    problems = []
    repository = api.get("", "ADMIN_TOKEN") or {}
    if not repository.get("private", False):
        approval = api.get("/actions/permissions/fork-pr-contributor-approval", "ADMIN_TOKEN") or {}
        if approval.get("approval_policy") != "all_external_contributors":
            problems.append(f"pull requests from forks run workflows without approval "
                            f"({approval.get('approval_policy')!r}): a fork's workflow file could reach the "
                            "self-hosted GPU runner; in Settings > Actions > General > 'Approval for running "
                            "fork pull request workflows from contributors', choose 'Require approval for all "
                            "external contributors'")
    runners = (api.get("/actions/runners?per_page=100", "ADMIN_TOKEN") or {}).get("runners", [])
    exposed = [r.get("name", "?") for r in runners if "gpu" in {label.get("name") for label in r.get("labels", [])}]
    if exposed:
        problems.append(f"the GPU runner {', '.join(exposed)} is registered to the repository, where every "
                        "workflow file of every branch and pull request can name it: register it in an "
                        "organization runner group limited to this repository with Workflow access 'Selected "
                        "workflows' (.github/workflows/wheels.yml at refs/heads/main and at each release tag) "
                        "(docs/releasing.md)")
    return problems


def expiry_report(today: str | None) -> tuple[list[str], list[str]]:
    """(errors, warnings) of the dated facts the workflows rely on (ci/plan/expiry.py)."""
    findings = expiry.check(expiry.load(), expiry.used_runner_labels(), expiry.pinned_actions(),
                            expiry.parse_date(today) if today else None)
    return ([f.message for f in findings if f.expired], [f.message for f in findings if not f.expired])


def report(warnings: list[str], problems: list[str]) -> None:
    """As GitHub annotations: the warnings, then the problems."""
    for warning in warnings:
        print(f"::warning::{warning}")
    for problem in problems:
        print(f"::error::{problem}")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--check", choices=("all", "gpu-runner"), default="all")
    args = parser.parse_args(argv)
    api = Api()
    problems = []
    today = datetime.date.fromisoformat(os.environ["TODAY"]) if os.environ.get("TODAY") else \
        datetime.datetime.now(datetime.timezone.utc).date()
    if args.check == "gpu-runner":
        try:
            problems += gpu_runner_problems(api)
        except PermissionError as error:
            problems.append(f"cannot read the repository's administration settings ({error}): add a "
                            "fine-grained token with 'Administration: read' on this repository as the secret "
                            "PREFLIGHT_TOKEN")
        group_problems, unverified = runner_group_problems(api)
        # A release tag's entry can only be added once the tag exists: wait for it while the builds run.
        wait = int(os.environ.get("GPU_GUARD_WAIT_SECONDS", GUARD_WAIT_SECONDS))
        waited, told = 0, False
        while waited < wait and group_problems and all(NOT_ADMITTED in p for p in group_problems):
            if not told:
                print(f"::warning::{group_problems[0]}; waiting up to {wait // 60} minutes for it", flush=True)
                told = True
            time.sleep(60)
            waited += 60
            group_problems, unverified = runner_group_problems(api)
        problems += group_problems
        run_ref = os.environ.get("RUN_REF", "")
        if unverified and run_ref.startswith("refs/tags/"):
            print(f"::warning::a release tag: add {os.environ['REPOSITORY']}/.github/workflows/wheels.yml@{run_ref} "
                  "to the GPU runner group's Selected workflows now, before the builds finish (GitHub matches "
                  "the ref exactly and takes it only once the tag exists)")
        warnings = []
        for variable, secret in (("ADMIN_TOKEN", "PREFLIGHT_TOKEN"), ("ORG_TOKEN", "GPU_GUARD_ORG_TOKEN")):
            expired, expiring = token_expiry(api, variable, secret, today)
            problems += expired
            warnings += expiring
        report(warnings + [f"not verified: {setting}" for setting in unverified], problems)
        if not problems:
            checked = "the repository's runners and fork approval" + ("" if unverified else
                                                                        ", and the GPU runner's runner group")
            print(f"preflight: checked {checked}; " + ("nothing else could be checked (see the warnings)"
                                                      if unverified else "the GPU runner is out of reach of "
                                                      "unreviewed workflow files"))
        return 1 if problems else 0
    kind, ref = os.environ["KIND"], os.environ["REF"]
    environments = ["release", "pypi", "github-pages"] if kind == "release" else ["nightly", "github-pages"]
    try:
        for environment in environments:
            problem = environment_problem(api, environment, ref)
            if problem:
                problems.append(problem)
        if kind == "release":
            problems += filter(None, [reviewers_problem(api, "pypi"), tag_ruleset_problem(api, ref)])
        problems += main_branch_problems(api, kind, os.environ.get("COMMIT", ""))
        if kind == "nightly" and api.get("/releases/tags/nightly") is None:
            problems.append("the rolling 'nightly' pre-release does not exist: create it once by hand (gh release "
                            "create nightly --prerelease --title 'my_ops nightly' --target main); the workflow's "
                            "token may be refused creating its tag (a tag ruleset restricting creations, or "
                            "workflow files changed since the commit)")
        pages = api.get("/pages")
        if pages is None:
            problems.append("GitHub Pages is not enabled: in Settings > Pages, set Source to 'GitHub Actions'")
        elif pages.get("build_type") != "workflow":
            problems.append(f"GitHub Pages builds from a branch (build_type {pages.get('build_type')!r}): in "
                            "Settings > Pages, set Source to 'GitHub Actions'")
    except PermissionError as error:
        problems.append(f"the job's token cannot read the environments or Pages ({error}): the preflight job "
                        "needs `actions: read` and `pages: read`")
    try:
        immutable = api.get("/immutable-releases", "ADMIN_TOKEN") or {}
        if kind == "nightly" and immutable.get("enabled"):
            problems.append("immutable releases are on: the nightly adds and deletes assets of the published "
                            "rolling `nightly` release, which they forbid; turn them off in Settings > General > "
                            "Releases, or publish releases only")
        problems += gpu_runner_problems(api)
    except PermissionError as error:
        problems.append(f"cannot read the repository's administration settings ({error}): add a fine-grained "
                        "token with 'Administration: read' on this repository as the secret PREFLIGHT_TOKEN")
    expired, expiring = expiry_report(os.environ.get("TODAY"))
    problems += expired
    token_expired, token_expiring = token_expiry(api, "ADMIN_TOKEN", "PREFLIGHT_TOKEN", today)
    problems += token_expired
    expiring += token_expiring
    report(expiring, problems)
    if not problems:
        print(f"preflight: every setting lets this {kind} ({ref}) publish")
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())
