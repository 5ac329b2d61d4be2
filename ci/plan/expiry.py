#!/usr/bin/env python3
"""Check the dated facts of ci/plan/expiry.toml against what the workflows use.

    ci/plan/expiry.py [--today YYYY-MM-DD]

Every runner label the workflows and build_support/matrix.toml name, and every
action they pin (owner/name@sha), must have an entry; a runner image, or the
runtime of a pinned action (e.g. node20), past its `retires` date is an
error, one within `warn_days` of it a warning. Prints `::error::` and
`::warning::` lines (GitHub shows them as annotations); exit 1 on any error.
The release preflight (ci/plan/preflight.py) and tests/packaging/test_expiry.py
run the same check.
"""

from __future__ import annotations

import argparse
import datetime
import os
import re
import sys
from dataclasses import dataclass
from pathlib import Path

if sys.version_info >= (3, 11):
    import tomllib
else:  # pragma: no cover - Python < 3.11
    import tomli as tomllib

ROOT = Path(__file__).resolve().parents[2]
TABLE = Path(__file__).with_name("expiry.toml")
WORKFLOWS = ROOT / ".github" / "workflows"
MATRIX = ROOT / "build_support" / "matrix.toml"


@dataclass(frozen=True)
class Finding:
    expired: bool  # an error (past its date, or missing from the table); else a warning
    message: str


def load(path: Path | None = None) -> dict:
    """The table: ci/plan/expiry.toml, or the file EXPIRY_TABLE names (the tests' dated copies)."""
    with Path(path or os.environ.get("EXPIRY_TABLE") or TABLE).open("rb") as f:
        return tomllib.load(f)


def parse_date(text: str) -> datetime.date:
    return datetime.date.fromisoformat(text)


def _workflow_texts(workflows: Path = WORKFLOWS) -> list[str]:
    return [p.read_text() for p in sorted(workflows.glob("*.y*ml"))]


def used_runner_labels(workflows: Path = WORKFLOWS, matrix: Path = MATRIX) -> set[str]:
    """Runner labels the workflows name literally (runs-on) and the matrix's `*_runner` values.

    A `runs-on` list names one self-hosted runner by its labels: its first
    label (`self-hosted`) stands for it. Expressions (${{ matrix.runner }})
    come from the matrix.
    """
    labels = set()
    for text in _workflow_texts(workflows):
        for value in re.findall(r"^\s*runs-on:\s*(.+?)\s*(?:#.*)?$", text, re.M):
            if "${{" in value:
                continue
            if value.startswith("["):
                labels.add(value.strip("[]").split(",")[0].strip().strip("'\""))
            else:
                labels.add(value.strip("'\""))
    with matrix.open("rb") as f:
        defaults = tomllib.load(f)["defaults"]
    labels |= {value for key, value in defaults.items() if key.endswith("_runner")}
    return labels


def pinned_actions(workflows: Path = WORKFLOWS) -> set[str]:
    """Every `owner/name@sha` the workflows use (local ./ workflows and actions aside)."""
    return {f"{name}@{sha}" for text in _workflow_texts(workflows)
            for name, sha in re.findall(r"uses:\s*([\w.-]+/[\w./-]+)@([0-9a-f]{40})", text)}


def _dated(kind: str, name: str, entry: dict, today: datetime.date, warn_days: int, what: str) -> list[Finding]:
    retires = entry.get("retires")
    if retires is None:
        return []
    source = entry.get("source", "ci/plan/expiry.toml")
    if retires <= today:
        return [Finding(True, f"{what} retired on {retires} ({source}): move off it")]
    if (retires - today).days <= warn_days:
        return [Finding(False, f"{what} retires on {retires}, in {(retires - today).days} days ({source}): "
                               "plan the move now")]
    return []


def check(table: dict, labels: set[str], actions: set[str], today: datetime.date | None = None) -> list[Finding]:
    """Errors and warnings for the runner labels and pinned actions in use."""
    today = today or datetime.datetime.now(datetime.timezone.utc).date()
    warn_days = int(table.get("warn_days", 60))
    runners, runtimes, known = table.get("runners", {}), table.get("runtimes", {}), table.get("actions", {})
    findings = []
    for label in sorted(labels):
        if label not in runners:
            findings.append(Finding(True, f"runner '{label}' is not in ci/plan/expiry.toml: add it with its "
                                          "announced retirement date (actions/runner-images) and source"))
            continue
        findings += _dated("runner", label, runners[label], today, warn_days, f"runner image '{label}'")
    for action in sorted(actions):
        entry = known.get(action)
        if entry is None:
            findings.append(Finding(True, f"action {action} is not in ci/plan/expiry.toml: add it with the "
                                          "`runs.using` of its action.yml at that commit"))
            continue
        findings += _dated("action", action, entry, today, warn_days, f"action {action} ({entry.get('tag', '?')})")
        runtime = entry.get("runtime", "")
        if runtime not in runtimes:
            findings.append(Finding(True, f"action {action}: runtime {runtime!r} is not in ci/plan/expiry.toml"))
            continue
        findings += _dated("runtime", runtime, runtimes[runtime], today, warn_days,
                           f"action {action} ({entry.get('tag', '?')}) runs on {runtime}, which")
    return findings


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--today", help="YYYY-MM-DD (default: today, UTC)")
    args = parser.parse_args(argv)
    findings = check(load(), used_runner_labels(), pinned_actions(), parse_date(args.today) if args.today else None)
    for finding in findings:
        print(f"::{'error' if finding.expired else 'warning'}::{finding.message}")
    if not findings:
        print("expiry: no runner image or action runtime in use retires within the warning window")
    return 1 if any(f.expired for f in findings) else 0


if __name__ == "__main__":
    sys.exit(main())
