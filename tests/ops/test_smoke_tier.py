"""The smoke tier (`pytest -m smoke`, ci/dev.sh's default) covers every op:
each spec names smoke samples of every dtype class it takes, one with a
non-contiguous tensor and one bad call (specs.smoke_gaps), and every op
registered in torch.ops.my_ops has such a spec, or, for an op registered from
Python outside the specs (the Triton family), a test module that lists it in
SMOKE_OPS and has smoke tests of its own."""

from __future__ import annotations

import importlib
import re
from pathlib import Path

import pytest
import torch

import my_ops
import specs
from my_ops import _rules

pytestmark = pytest.mark.smoke


def test_every_spec_names_a_complete_smoke_tier():
    gaps = [gap for spec in specs.ALL for gap in specs.smoke_gaps(spec)]
    assert not gaps, "\n".join(gaps)


def _smoke_tests_outside_specs() -> dict:
    """op name -> test module, for the tests/ops modules with SMOKE_OPS and smoke-marked tests."""
    covered = {}
    for path in sorted(Path(__file__).parent.glob("test_*.py")):
        if not re.search(r"^SMOKE_OPS = ", path.read_text(), re.MULTILINE):
            continue
        try:
            module = importlib.import_module(path.stem)
        except pytest.skip.Exception:  # its requirement (Triton) is missing: so are its ops
            continue
        marked = [name for name, fn in vars(module).items() if name.startswith("test")
                  and any(m.name == "smoke" for m in getattr(fn, "pytestmark", []))]
        assert marked, f"{path.name} lists SMOKE_OPS but marks no test smoke"
        covered.update(dict.fromkeys(module.SMOKE_OPS, path.name))
    return covered


def test_every_registered_op_is_in_the_smoke_tier():
    if my_ops.HAVE_TRITON:
        importlib.import_module("my_ops.rms_norm_triton")  # registers the Triton family, as its first use does
    # torch.ops.my_ops lists only the ops Python has looked up; the kernel library
    # lists every op it registers (with its argument rules)
    registered = {name for name in torch.ops.my_ops if hasattr(getattr(torch.ops.my_ops, name), "default")}
    registered |= set(_rules.op_names())
    in_specs = {spec.name for spec in specs.ALL if spec.smoke}
    missing = registered - in_specs - set(_smoke_tests_outside_specs())
    assert not missing, f"ops without smoke samples: {sorted(missing)}"


def test_a_spec_without_smoke_samples_is_reported():
    """The coverage check itself: a spec with no or partial smoke names is caught."""
    spec = next(s for s in specs.ALL if s.name == "rms_norm")
    bare = specs.OpSpec(spec.name, spec.args_for, samples=spec.samples, bad_calls=spec.bad_calls,
                        family=spec.family)
    assert specs.smoke_gaps(bare) == ["rms_norm: no smoke samples (OpSpec.smoke names them, in "
                                      "tests/ops/specs/rms_norm.py)"]
    bare.smoke = ("float32-grad", "bfloat16", "nonexistent")
    assert specs.smoke_gaps(bare) == [
        "rms_norm: smoke name 'nonexistent' is in neither samples nor bad_calls",
        "rms_norm: no float64 smoke sample",
        "rms_norm: no smoke sample with a non-contiguous tensor",
        "rms_norm: no smoke bad call",
    ]
