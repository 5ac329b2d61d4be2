"""Facts that expire: the runner images and action runtimes the workflows use
(ci/plan/expiry.toml, checked by ci/plan/expiry.py). Fails once one is past
its retirement date, warns (a pytest warning in the summary) within 60 days."""

from __future__ import annotations

import datetime
import importlib.util
import sys
import warnings
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
_spec = importlib.util.spec_from_file_location("expiry", ROOT / "ci/plan/expiry.py")
expiry = importlib.util.module_from_spec(_spec)
sys.modules["expiry"] = expiry  # (its dataclass looks itself up there)
_spec.loader.exec_module(expiry)

TABLE = expiry.load(ROOT / "ci/plan/expiry.toml")
LABELS = expiry.used_runner_labels()
ACTIONS = expiry.pinned_actions()


class ExpiryWarning(UserWarning):
    """A runner image or action runtime in use retires within the warning window."""


def test_the_workflows_and_matrix_are_read():
    assert {"ubuntu-24.04", "self-hosted"} <= LABELS  # literal runs-on (a list: its first label)
    assert expiry.load(ROOT / "ci/plan/expiry.toml")["warn_days"] == 60
    import tomllib

    defaults = tomllib.loads((ROOT / "build_support/matrix.toml").read_text())["defaults"]
    assert {defaults[k] for k in defaults if k.endswith("_runner")} <= LABELS  # ${{ matrix.runner }}
    assert any(a.startswith("actions/checkout@") for a in ACTIONS)
    assert all(len(a.split("@")[1]) == 40 for a in ACTIONS)


def test_every_runner_label_and_pinned_action_is_in_the_table():
    missing = [f.message for f in expiry.check(TABLE, LABELS, ACTIONS) if "is not in" in f.message]
    assert not missing, "\n".join(missing)


def test_nothing_in_use_is_past_its_date():
    """Today's date: fails once an image or runtime in use retires; warns within warn_days."""
    findings = expiry.check(TABLE, LABELS, ACTIONS)
    for finding in findings:
        if not finding.expired:
            warnings.warn(ExpiryWarning(finding.message), stacklevel=1)
    expired = [f.message for f in findings if f.expired]
    assert not expired, "\n".join(expired)


TODAY = datetime.date(2026, 11, 26)
SYNTHETIC = {
    "warn_days": 60,
    "runners": {"img-old": {"retires": TODAY, "source": "s"}, "img-soon": {"retires": TODAY + datetime.timedelta(60)},
                "img-later": {"retires": TODAY + datetime.timedelta(61)}, "img-undated": {"source": "s"}},
    "runtimes": {"node20": {"retires": datetime.date(2026, 9, 16)}, "node24": {}},
    "actions": {"a/old@" + "1" * 40: {"runtime": "node20", "tag": "v1"}, "a/new@" + "2" * 40: {"runtime": "node24"},
                "a/odd@" + "3" * 40: {"runtime": "node12"}},
}


@pytest.mark.parametrize("label,expired,warned", [
    ("img-old", True, False),      # on its date: a job asking for it fails
    ("img-soon", False, True),     # 60 days ahead: warn
    ("img-later", False, False),   # 61 days ahead: quiet
    ("img-undated", False, False),
    ("img-unknown", True, False),  # not in the table: add it
])
def test_runner_dates(label, expired, warned):
    findings = expiry.check(SYNTHETIC, {label}, set(), TODAY)
    assert [f.expired for f in findings] == ([True] if expired else [False] if warned else [])


@pytest.mark.parametrize("action,expired", [("a/old@" + "1" * 40, True), ("a/new@" + "2" * 40, False),
                                            ("a/odd@" + "3" * 40, True), ("a/none@" + "4" * 40, True)])
def test_action_runtimes(action, expired):
    findings = expiry.check(SYNTHETIC, set(), {action}, TODAY)
    assert any(f.expired for f in findings) == expired
    if action.startswith("a/old"):
        assert "node20" in findings[0].message and "retired on 2026-09-16" in findings[0].message


def test_macos_14_would_fail_again():
    """The retirement that broke the first release: naming macos-14 again fails."""
    findings = expiry.check(TABLE, {"macos-14"}, set(), TODAY)
    assert len(findings) == 1 and findings[0].expired and "13518" in findings[0].message
