"""Which kernel library a torch gets (python/my_ops/_libraries.py), and PyPI's
label-free wheel that holds several (ci/build/bundle-wheels.py), loaded for real."""

from __future__ import annotations

import dataclasses
import json
import os
import subprocess
import sys
import zipfile
from pathlib import Path

import pytest

import my_ops
from my_ops import _build_info, _libraries

ROOT = Path(__file__).resolve().parents[2]


def _library(label: str, cuda: str = "", requirement: str = "torch>=2.10") -> _libraries.Library:
    info = dataclasses.replace(my_ops.build_info, label=label, cuda_version=cuda, abi="stable",
                               torch_requirement=requirement)
    return _libraries.Library(label, Path("/nowhere") / label, info)


WHEEL = [_library("cpu"), _library("cu124", "12.4.131"), _library("cu126", "12.6.85"), _library("cu130", "13.0.88")]


@pytest.mark.parametrize("torch_version, torch_cuda, chosen", [
    ("2.11.0+cpu", None, "cpu"),
    ("2.10.0", "12.8", "cu126"),          # PyPI's torch 2.10: the newest CUDA 12 toolkit not newer than 12.8
    ("2.11.0+cu126", "12.6", "cu126"),
    ("2.11.0+cu124", "12.4", "cu124"),
    ("2.11.0", "13.0", "cu130"),
    ("2.15.0", "13.2", "cu130"),
    ("2.15.0+cu129", "12.9", "cu126"),
])
def test_each_torch_gets_the_newest_library_that_fits(torch_version, torch_cuda, chosen):
    library, reasons = _libraries.choose(WHEEL, torch_version, torch_cuda)
    assert library is not None and library.label == chosen
    assert set(reasons) == {lib.label for lib in WHEEL} - {chosen} and all(reasons.values())


@pytest.mark.parametrize("torch_version, torch_cuda, hip, words", [
    ("2.11.0+cu118", "11.8", None, "another major version"),
    ("2.20.0+cu140", "14.0", None, "another major version"),
    ("2.11.0+rocm6.4", None, "6.4.0", "ROCm"),
    ("2.6.0+cu124", "12.4", None, "torch >= 2.10"),
    ("2.11.0+cu123", "12.3", None, "newer than torch's 12.3"),
])
def test_nothing_fits_names_why_and_what_would(torch_version, torch_cuda, hip, words, monkeypatch):
    monkeypatch.delenv(_libraries.FORCE_VARIABLE, raising=False)
    library, reasons = _libraries.choose(WHEEL, torch_version, torch_cuda, hip)
    assert library is None and any(words in why for why in reasons.values()), reasons
    text = _libraries.mismatch_text(my_ops.build_info, WHEEL, reasons, torch_version, torch_cuda)
    assert f"torch {torch_version}" in text and all(f"\n  {lib.label}: " in text for lib in WHEEL)
    # one next step, and not the CPU kernels under a torch they cannot serve either
    assert "pip install" in text.splitlines()[-1] and _libraries.FORCE_VARIABLE not in text


def test_forcing_a_library():
    # the CPU kernels serve a CUDA torch too (CPU tensors), when asked for
    library, reasons = _libraries.choose(WHEEL, "2.11.0", "13.0", forced="cpu")
    assert library.label == "cpu" and all("MY_OPS_LIBRARY=cpu" in why for why in reasons.values())
    # but nothing that cannot load: CUDA 13 kernels into a CUDA 12 torch
    library, reasons = _libraries.choose(WHEEL, "2.10.0", "12.8", forced="cu130")
    assert library is None and "MY_OPS_LIBRARY=cu130, but" in reasons["cu130"]
    library, reasons = _libraries.choose(WHEEL, "2.11.0", "13.0", forced="cu999")
    assert library is None and "MY_OPS_LIBRARY=cu999 names no library here" in reasons["cpu"]


def test_a_labelled_wheel_keeps_its_own_check():
    """One library: the wheel's own torch check (a CUDA 13.2 toolkit serves torch's CUDA 13.0 too)."""
    (only,) = [_library("cu132", "13.2.86")]
    library, reasons = _libraries.choose([only], "2.13.0", "13.0")
    assert library is only and reasons == {}
    library, reasons = _libraries.choose([only], "2.13.0+cpu", None)
    assert library is None and "CPU-only" in reasons["cu132"]


# -------------------------------------------- the label-free wheel, for real
def _wheels_of(label: str) -> list[Path]:
    return [w for w in sorted(ROOT.glob(f"dist/my_ops-*+{label}-*.whl")) + sorted(ROOT.glob(
        f"wheelhouse/*/my_ops-*+{label}-*.whl")) if my_ops.__version__.split("+")[0] in w.name]


@pytest.fixture(scope="module")
def label_free_wheel(tmp_path_factory) -> Path:
    if not my_ops.build_info.has_cuda:
        pytest.skip("bundles the installed CUDA build's wheel with a +cpu one: the installed build is CPU-only")
    cpu, cuda = _wheels_of("cpu"), _wheels_of(my_ops.build_info.cuda_label)
    if not cpu or not cuda or my_ops.build_info.abi != "stable":
        pytest.skip("needs a +cpu and a CUDA wheel of this version in dist/ or wheelhouse/ "
                    "(MY_OPS_OUT=wheelhouse/cpu ci/build.sh --build cpu)")
    sys.path.insert(0, str(ROOT / "ci" / "build"))
    import importlib

    bundle = importlib.import_module("bundle-wheels")
    tags = cuda[0].name.split("-", 2)[2]

    def commit(wheel: Path) -> str:
        return json.loads(zipfile.ZipFile(wheel).read("my_ops/_build_info.json"))["commit"]

    # the bundler takes libraries of one commit only (it compares their Python files)
    matching = [w for w in cpu if w.name.endswith(tags) and commit(w) == commit(cuda[0])]
    if not matching:
        pytest.skip(f"no +cpu wheel with the tags {tags} of the CUDA wheel's commit {commit(cuda[0])[:10]}: "
                    "MY_OPS_OUT=wheelhouse/cpu ci/build.sh --build cpu")
    out = tmp_path_factory.mktemp("label-free")
    return bundle.label_free(cuda[0], matching[:1], out)


def _run(wheel: Path, tmp_path: Path, code: str, **env) -> subprocess.CompletedProcess:
    target = tmp_path / "site"
    if not target.exists():
        with zipfile.ZipFile(wheel) as zf:
            zf.extractall(target)
    environment = {k: v for k, v in os.environ.items() if k != _libraries.FORCE_VARIABLE}
    return subprocess.run([sys.executable, "-c", code], cwd=tmp_path, capture_output=True, text=True,
                          env={**environment, "PYTHONPATH": str(target), **env})


def test_the_label_free_wheel_holds_each_library(label_free_wheel):
    with zipfile.ZipFile(label_free_wheel) as zf:
        names = zf.namelist()
        top = json.loads(zf.read("my_ops/_build_info.json"))
        record = zf.read(next(n for n in names if n.endswith(".dist-info/RECORD"))).decode()
    assert top["label"] == "" and top["libraries"] == sorted(["cpu", my_ops.build_info.cuda_label])
    for label in top["libraries"]:
        assert json.loads(zipfile.ZipFile(label_free_wheel).read(
            f"my_ops/_libraries/{label}/_build_info.json"))["label"] == label
        assert any(n.startswith(f"my_ops/_libraries/{label}/_C.") for n in names)
    assert not any(n.startswith("my_ops/_C.") or n.startswith("my_ops/libmy_ops") for n in names)
    assert all(f"{n}," in record for n in names if not n.endswith("RECORD"))


SMOKE = """
import torch
{patch}
import my_ops
x, w = torch.randn(3, 64, dtype=torch.float64), torch.rand(64, dtype=torch.float64)
want = x * torch.rsqrt(x.pow(2).mean(-1, keepdim=True) + 1e-6) * w
torch.testing.assert_close(my_ops.rms_norm(x, w, 1e-6), want)
print(my_ops.library.label, my_ops.build_info.cuda_version or "cpu", my_ops.__version__)
"""


def test_the_running_torch_gets_its_library(label_free_wheel, tmp_path):
    import torch

    result = _run(label_free_wheel, tmp_path, SMOKE.format(patch=""))
    assert result.returncode == 0, result.stderr
    label, _, version = result.stdout.split()
    assert label == (my_ops.build_info.cuda_label if torch.version.cuda else "cpu")
    assert "+" not in version
    # a CPU-only torch (its CUDA reported absent) gets the CPU kernels, and they work
    result = _run(label_free_wheel, tmp_path, SMOKE.format(patch="torch.version.cuda = None"))
    assert result.returncode == 0, result.stderr
    assert result.stdout.split()[:2] == ["cpu", "cpu"]
    # forced
    result = _run(label_free_wheel, tmp_path, SMOKE.format(patch=""), MY_OPS_LIBRARY="cpu")
    assert result.returncode == 0 and result.stdout.split()[0] == "cpu", result.stderr


def test_python_m_my_ops_says_which_and_why(label_free_wheel, tmp_path):
    result = _run(label_free_wheel, tmp_path, "import runpy; runpy.run_module('my_ops', run_name='__main__')",
                  MY_OPS_LIBRARY="cpu")
    assert "kernel libraries (MY_OPS_LIBRARY=cpu)" in result.stdout, result.stdout + result.stderr
    assert "cpu (CPU, torch >= 2.10): LOADED" in result.stdout
    cuda = my_ops.build_info.cuda_label
    assert f"{cuda} (CUDA " in result.stdout and "not loaded: MY_OPS_LIBRARY=cpu" in result.stdout
    # a torch no library serves: an ImportError naming what would
    result = _run(label_free_wheel, tmp_path, "import torch; torch.version.cuda = '11.8'; import my_ops")
    assert result.returncode != 0 and "has no kernel library for torch" in result.stderr
    assert "another major version" in result.stderr
    assert "my_ops publishes no wheel for torch" in result.stderr.strip().splitlines()[-1]


def test_the_label_free_wheel_refuses_with_the_next_step(label_free_wheel, tmp_path):
    """For real, from PyPI's wheel: an old torch is told to upgrade, a misspelled MY_OPS_LIBRARY what there is."""
    result = _run(label_free_wheel, tmp_path, "import torch; torch.__version__ = '2.9.1'; import my_ops")
    assert result.returncode != 0 and "has no kernel library for torch 2.9.1" in result.stderr, result.stderr
    assert result.stderr.strip().splitlines()[-1].startswith("Upgrade torch to >= 2.10")
    cuda = my_ops.build_info.cuda_label
    result = _run(label_free_wheel, tmp_path, "import my_ops", MY_OPS_LIBRARY="cu126")
    assert result.returncode != 0
    assert f"MY_OPS_LIBRARY=cu126 names no library here (available: cpu, {cuda})" in result.stderr, result.stderr
    with zipfile.ZipFile(label_free_wheel) as zf:  # the license travels into PyPI's wheel too
        assert any(n.endswith(".dist-info/licenses/LICENSE") for n in zf.namelist())


def test_build_info_lists_the_libraries():
    assert my_ops.library.info == my_ops.build_info
    assert _build_info.load().version == my_ops.__version__
