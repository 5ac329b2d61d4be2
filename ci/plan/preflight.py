#!/usr/bin/env python3
"""Stop a release before anything is built when a repository setting would refuse it later.

Reads the repository's settings through GitHub's REST API and checks, for
this run's kind (release: a v* tag; nightly: main):
  - the environments the publishing jobs use (release or nightly, pypi,
    github-pages) let this ref deploy: no rule, or a custom rule whose
    branch or tag pattern matches it, or "protected branches" with a
    protected branch (a tag never passes that one);
  - GitHub Pages is enabled and deployed by Actions (build type "workflow");
  - immutable releases are off for a nightly (it adds and deletes assets of
    the published rolling `nightly` release, which they forbid);
  - pull requests from forks wait for approval before they run workflows
    ("all external contributors"): a fork's workflow file could otherwise
    reach the self-hosted GPU runner.
Every problem is printed with the setting that fixes it; exit 1 if any.

Environment: API_URL, REPOSITORY (owner/name), KIND (release|nightly), REF
(refs/tags/v1.0.0, refs/heads/main), TOKEN (the job's GITHUB_TOKEN:
actions and pages read), ADMIN_TOKEN (a fine-grained token with
"Administration: read" of this repository, for the last two settings; the
PREFLIGHT_TOKEN secret). Any server that answers as GitHub's API does works
(tests/packaging/test_ci_scripts.py and ci/test/workflow_test.py serve one on 127.0.0.1).
"""

from __future__ import annotations

import fnmatch
import json
import os
import sys
import urllib.error
import urllib.request

SETTINGS = "Settings > Environments"


class Api:
    def __init__(self) -> None:
        self.base = f"{os.environ['API_URL'].rstrip('/')}/repos/{os.environ['REPOSITORY']}"

    def get(self, path: str, token_variable: str = "TOKEN") -> dict | None:
        """The JSON answer, or None for 404; PermissionError when the token may not read it."""
        token = os.environ.get(token_variable, "")
        if not token:
            raise PermissionError(f"{token_variable} is not set")
        request = urllib.request.Request(self.base + path, headers={
            "Authorization": f"Bearer {token}", "Accept": "application/vnd.github+json",
            "X-GitHub-Api-Version": "2022-11-28"})
        try:
            with urllib.request.urlopen(request, timeout=60) as response:
                return json.loads(response.read() or b"{}")
        except urllib.error.HTTPError as error:
            if error.code == 404:
                return None
            if error.code in (401, 403):
                raise PermissionError(f"{path}: HTTP {error.code}") from error
            raise


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


def main() -> int:
    api = Api()
    kind, ref = os.environ["KIND"], os.environ["REF"]
    environments = ["release", "pypi", "github-pages"] if kind == "release" else ["nightly", "github-pages"]
    problems = []
    try:
        for environment in environments:
            problem = environment_problem(api, environment, ref)
            if problem:
                problems.append(problem)
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
        repository = api.get("", "ADMIN_TOKEN") or {}
        if not repository.get("private", False):
            approval = api.get("/actions/permissions/fork-pr-contributor-approval", "ADMIN_TOKEN") or {}
            if approval.get("approval_policy") != "all_external_contributors":
                problems.append(f"pull requests from forks run workflows without approval "
                                f"({approval.get('approval_policy')!r}): a fork's workflow file could reach the "
                                "self-hosted GPU runner; in Settings > Actions > General > 'Approval for running "
                                "fork pull request workflows from contributors', choose 'Require approval for all "
                                "external contributors'")
    except PermissionError as error:
        problems.append(f"cannot read the repository's administration settings ({error}): add a fine-grained "
                        "token with 'Administration: read' on this repository as the secret PREFLIGHT_TOKEN")
    for problem in problems:
        print(f"::error::{problem}")
    if not problems:
        print(f"preflight: every setting lets this {kind} ({ref}) publish")
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())
