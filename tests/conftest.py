"""Shared fixtures and helpers for the my_ops test suite.

Every op is tested against a float64 reference built from plain torch ops,
on fresh random inputs (a new seed per test), for every dtype, on the CPU and,
where one is present, on a CUDA device.
"""

from __future__ import annotations

import atexit
import os
import random
import shutil
import sys
import tempfile
from pathlib import Path

import pytest
import torch

import my_ops  # noqa: F401  (registers torch.ops.my_ops)

# A compile cache of this run's own: inductor's on-disk caches key a graph on torch's trace, not on my_ops'
# Python rules that shaped it, so a cache left by an earlier checkout replays the graphs of its rules. Set
# before any test compiles (pytest-xdist's workers inherit it); a cache dir set by the caller is kept.
if "TORCHINDUCTOR_CACHE_DIR" not in os.environ:
    os.environ["TORCHINDUCTOR_CACHE_DIR"] = tempfile.mkdtemp(prefix="my_ops-tests-inductor-")
    atexit.register(shutil.rmtree, os.environ["TORCHINDUCTOR_CACHE_DIR"], ignore_errors=True)

if os.environ.get("MY_OPS_REQUIRE_CUDA") == "1" and not torch.cuda.is_available():
    raise pytest.UsageError("MY_OPS_REQUIRE_CUDA=1 but torch sees no CUDA device")

DTYPES = [torch.float32, torch.float64, torch.float16, torch.bfloat16]
DEVICES = ["cpu"] + (["cuda"] if torch.cuda.is_available() else [])
# inductor's CPU code needs the platform's C++ toolchain set up (MSVC's cl on
# Windows, an OpenMP clang can find on macOS), which the CPU test jobs there do
# not do: outside Linux, compile tests on the CPU use aot_eager.
INDUCTOR_ON_CPU = sys.platform.startswith("linux")
# Memory layouts every op must handle: a transposed view, a view at an odd
# storage offset (so not 16-byte aligned), a view with a stride of 2, and
# rows sliced from wider rows (x[..., :width] of a tensor 8 or 3 elements
# wider: the row-wise ops read these in place, at a 16-byte-aligned and an
# unaligned row stride).
LAYOUTS = ["contiguous", "transposed", "offset", "strided", "sliced", "sliced_odd"]

# (rtol, atol) of one output rounding on top of float32 (float64) arithmetic.
TOLERANCES = {
    torch.float32: (2e-5, 2e-5),
    torch.float64: (1e-12, 1e-12),
    torch.float16: (2e-3, 2e-3),
    torch.bfloat16: (1.6e-2, 1.6e-2),
}


SEED_VARIABLE = "MY_OPS_SEED"
OPS_TESTS = Path(__file__).resolve().parent / "ops"


@pytest.fixture(autouse=True)
def _fresh_seed(request):
    """A different seed for every test, never a fixed one; a failing test's
    report names it, and MY_OPS_SEED=<seed> runs the tests with that seed."""
    chosen = os.environ.get(SEED_VARIABLE)
    seed = int(chosen) if chosen else int.from_bytes(os.urandom(4), "little")
    torch.manual_seed(seed)  # every device's generator
    random.seed(seed)
    request.node.user_properties.append(("seed", seed))
    yield


@pytest.hookimpl(wrapper=True)
def pytest_runtest_makereport(item, call):
    report = yield
    seeds = [value for key, value in item.user_properties if key == "seed"]
    if report.failed and seeds:
        report.sections.append(("seed", f"rerun with this test's random inputs: {SEED_VARIABLE}={seeds[-1]} "
                                        f"python -m pytest '{item.nodeid}'"))
    return report


def pytest_collection_modifyitems(config, items):
    """Tiers of tests/ops: the spec-named samples marked `smoke` (pytest -m
    smoke, ci/dev.sh's default), everything else there `sweep`."""
    for item in items:
        if item.get_closest_marker("smoke") is None and OPS_TESTS in item.path.resolve().parents:
            item.add_marker(pytest.mark.sweep)


@pytest.fixture(params=DEVICES)
def device(request) -> str:
    return request.param


@pytest.fixture(params=DTYPES, ids=lambda d: str(d).replace("torch.", ""))
def dtype(request) -> torch.dtype:
    return request.param


def make_input(shape, dtype, device, layout="contiguous", low=-3.0, high=3.0) -> torch.Tensor:
    """Uniform random values in [low, high) with the given memory layout."""
    shape = tuple(shape)

    def fresh(s):
        return torch.empty(s, dtype=torch.float64, device=device).uniform_(low, high).to(dtype)

    if layout == "contiguous":
        return fresh(shape)
    if layout == "transposed":
        if len(shape) < 2:
            return fresh((2, *shape))[1]  # a view at an offset instead
        base = fresh((*shape[:-2], shape[-1], shape[-2]))
        return base.transpose(-1, -2)
    if layout == "offset":
        numel = 1
        for s in shape:
            numel *= s
        return fresh((numel + 1,))[1:].view(shape)
    if layout in ("sliced", "sliced_odd"):
        if len(shape) == 0:
            return fresh(shape)
        base = fresh((*shape[:-1], shape[-1] + (8 if layout == "sliced" else 3)))
        return base[..., : shape[-1]]
    if layout == "strided":
        if len(shape) == 0:
            return fresh(shape)
        base = fresh((*shape[:-1], shape[-1] * 2))
        return base[..., ::2]
    raise ValueError(layout)


def assert_matches(out: torch.Tensor, ref: torch.Tensor, dtype: torch.dtype, scale: float = 1.0):
    """out (any dtype) against a float64 reference: same shape, within the dtype's tolerance.
    An fp8 output (the fp8 family) against its fp8 reference: within one fp8 step (12.5%)."""
    if out.dtype == torch.float8_e4m3fn:
        assert ref.dtype == out.dtype and out.shape == ref.shape, (ref.dtype, out.shape, ref.shape)
        torch.testing.assert_close(out.double().cpu(), ref.double().cpu(), rtol=0.125, atol=2**-9, equal_nan=True)
        return
    assert out.dtype == dtype, f"dtype {out.dtype}, expected {dtype}"
    assert out.shape == ref.shape, f"shape {tuple(out.shape)}, expected {tuple(ref.shape)}"
    rtol, atol = TOLERANCES[dtype]
    torch.testing.assert_close(out.double().cpu(), ref.double().cpu(), rtol=rtol * scale,
                               atol=atol * scale, equal_nan=False)


def built_wheel(require_label: bool = True):
    """The built wheel of the installed build (same version and torch), or skip the test.

    The packaging tests work on the wheel that `ci/build.sh` put in dist/, or
    that scripts/build_local_pairs.sh put in wheelhouse/<pair>/.
    """
    import json
    import zipfile
    from pathlib import Path

    info = my_ops.build_info
    root = Path(__file__).resolve().parent.parent
    candidates = [*root.glob(f"dist/my_ops-{info.version}-*.whl"),
                  *root.glob(f"wheelhouse/*/my_ops-{info.version}-*.whl")]
    for wheel in sorted(candidates, key=lambda p: -p.stat().st_mtime):
        with zipfile.ZipFile(wheel) as zf:
            built = json.loads(zf.read("my_ops/_build_info.json"))
        if built["torch_version"] == info.torch_version and (built["label"] or not require_label):
            return wheel
    pytest.skip("needs the labelled wheel of the installed build in dist/ or wheelhouse/")


def requires_cuda(reason="needs a CUDA device"):
    return pytest.mark.skipif(not torch.cuda.is_available(), reason=reason)


def requires_sdist_builder() -> None:
    """Skips unless `python -m build --no-isolation` can build the sdist: build (a version, so not the CMake
    build/ folder of a checkout, imported as a namespace package) and the backend, scikit-build-core."""
    reason = "needs the sdist builder of ci/lib/requirements.txt"
    pytest.importorskip("build", minversion="1", reason=reason)
    pytest.importorskip("scikit_build_core", reason=reason)
