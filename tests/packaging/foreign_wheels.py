"""What the tests of other platforms' wheels (test_macos_wheel.py,
test_windows_wheel.py) share: this host's +cpu wheel, which they copy into
the other platform's shape, and ci/build/verify-wheel.py, which judges it."""

from __future__ import annotations

import importlib.util
from pathlib import Path

import pytest

import my_ops

ROOT = Path(__file__).resolve().parents[2]


def verify_wheel():
    """ci/build/verify-wheel.py as a module."""
    pytest.importorskip("packaging", reason="needs packaging (ci/build/requirements-verify.txt)")
    spec = importlib.util.spec_from_file_location("verify_wheel", ROOT / "ci/build/verify-wheel.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def cpu_wheel() -> Path:
    """The +cpu wheel of the installed my_ops's version (skips without one)."""
    version = my_ops.build_info.version.split("+")[0]
    wheels = sorted(ROOT.glob(f"wheelhouse/*/my_ops-{version}+cpu-*.whl")) + sorted(
        ROOT.glob(f"dist/my_ops-{version}+cpu-*.whl"))
    if not wheels:
        pytest.skip("needs the +cpu wheel (ci/test.sh builds it into wheelhouse/cpu/)")
    return wheels[-1]
