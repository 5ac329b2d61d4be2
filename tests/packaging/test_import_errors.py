"""Every refusal at import ends with one next step for its cause: the exact pip
command of the published wheel that fits (its index and pairs from the build
info, written from build_support/matrix.toml), "upgrade torch", or what to do
with a MY_OPS_LIBRARY that names no library here. For the label-free wheel
(several kernel libraries) and a labelled one alike."""

from __future__ import annotations

import dataclasses
import os
import subprocess
import sys
from pathlib import Path

import pytest

import my_ops
from my_ops import _build_info, _libraries

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "build_support"))
import matrix  # noqa: E402

MATRIX = matrix.load()
INDEX = MATRIX["defaults"]["index_url"]
PAIRS = tuple(p.name for p in matrix.all_pairs(MATRIX))

# A stable cu130 build as the build writes it: index and pairs from the matrix.
STABLE = _build_info.BuildInfo(
    version="1.0.0+cu130", label="cu130", torch_version="2.11.0+cu130", torch_cuda="13.0",
    cuda_version="13.0.88", arch_list="7.5;8.0;8.6;9.0;10.0;12.0+PTX", cxx11_abi=True,
    build_date="2026-11-22T00:00:00Z", commit="abc", abi="stable", torch_requirement="torch>=2.10",
    index_url=INDEX, supported_pairs=PAIRS)


def _library(label: str, cuda: str = "") -> _libraries.Library:
    return _libraries.Library(label, Path("/nowhere") / label,
                              dataclasses.replace(STABLE, label=label, cuda_version=cuda))


LABEL_FREE = dataclasses.replace(STABLE, version="1.0.0", label="")
CPU, CU126, CU130 = _library("cpu"), _library("cu126", "12.6.85"), _library("cu130", "13.0.88")


def _label_free_error(libraries, torch_version, torch_cuda, hip=None, forced=None) -> str:
    chosen, reasons = _libraries.choose(libraries, torch_version, torch_cuda, hip, forced)
    assert chosen is None, f"{chosen.label} loads into torch {torch_version}"
    return _libraries.mismatch_text(LABEL_FREE, libraries, reasons, torch_version, torch_cuda, hip, forced)


def _last_line(text: str) -> str:
    return text.strip().splitlines()[-1].strip()


def test_the_build_info_carries_the_matrix_index_and_pairs():
    """What the commands below are made of: the installed build's own record."""
    assert my_ops.build_info.index_url == INDEX
    assert tuple(my_ops.build_info.supported_pairs) == PAIRS


# ------------------------------------------------------ the label-free wheel
def test_label_free_without_a_fitting_library_names_the_pinned_wheel():
    """PyPI's torch 2.10 is CUDA 12.8: a label-free wheel without a CUDA 12 library."""
    text = _label_free_error([CPU, CU130], "2.10.0", "12.8")
    assert "cu130: it is built with CUDA 13.0, another major version than torch's 12.8" in text
    assert _last_line(text) == f"pip install my_ops==1.0.0+cu128 --extra-index-url {INDEX}/whl/torch2.10/cu128/"
    assert "MY_OPS_LIBRARY" not in text


def test_label_free_under_an_old_torch_says_upgrade_torch():
    text = _label_free_error([CPU, CU126, CU130], "2.9.1", "12.8")
    assert _last_line(text).startswith('Upgrade torch to >= 2.10 (installing my_ops never replaces your torch): '
                                       'pip install --upgrade "torch>=2.10"')
    assert "MY_OPS_LIBRARY" not in text and "build my_ops from source" not in text


@pytest.mark.parametrize("torch_version, torch_cuda, index", [
    ("2.9.1+cpu", None, " --index-url https://download.pytorch.org/whl/cpu"),
    ("2.9.1+cu126", "12.6", " --index-url https://download.pytorch.org/whl/cu126"),
    ("2.9.1+cu130", "13.0", " --index-url https://download.pytorch.org/whl/cu13"),
])
def test_an_old_torch_of_pytorchs_index_upgrades_within_its_variant(torch_version, torch_cuda, index):
    """A CPU-only or CUDA 12 torch from PyTorch's index must not be upgraded to PyPI's CUDA 13 build."""
    text = _label_free_error([CPU, CU126, CU130], torch_version, torch_cuda)
    upgrade = _last_line(text).split("; or,")[0]
    assert upgrade.startswith('Upgrade torch to >= 2.10') and index in upgrade, upgrade


def test_an_old_torch_with_a_legacy_pair_also_gets_its_wheel():
    text = _label_free_error([CPU, CU126, CU130], "2.6.0+cu124", "12.4")
    assert _last_line(text).endswith("; or, to keep torch 2.6, the wheel built for it: pip install "
                                     f"my_ops==1.0.0+cu124 --extra-index-url {INDEX}/whl/torch2.6/cu124/")


def test_a_misspelled_library_names_the_ones_there_are():
    text = _label_free_error([CPU, CU130], "2.13.0", "13.0", forced="cu126")
    assert text == ("my_ops 1.0.0: MY_OPS_LIBRARY=cu126 names no library here (available: cpu, cu130); "
                    "unset MY_OPS_LIBRARY (this torch then gets cu130), or set it to one of those.")


def test_a_misspelled_library_where_none_fits_also_names_the_next_step():
    text = _label_free_error([CPU, CU130], "2.9.1", "12.8", forced="cu126")
    assert "MY_OPS_LIBRARY=cu126 names no library here" in text
    assert _last_line(text).startswith("Upgrade torch to >= 2.10"), text


def test_a_forced_library_that_cannot_load_says_unset_it():
    text = _label_free_error([CPU, CU126, CU130], "2.10.0", "12.8", forced="cu130")
    assert "MY_OPS_LIBRARY=cu130, but it is built with CUDA 13.0, another major version" in text
    assert text.endswith("unset MY_OPS_LIBRARY (this torch then gets cu126).")


def test_a_torch_of_no_published_pair_gets_the_per_cuda_index():
    """A stable wheel serves every torch >= 2.10 of its CUDA major: torch 2.15 with CUDA 12.9 (no such
    pair) takes the cu128 wheel of the per-CUDA index."""
    text = _label_free_error([CPU, CU130], "2.15.0+cu129", "12.9")
    assert _last_line(text) == f"pip install my_ops==1.0.0+cu128 --extra-index-url {INDEX}/whl/cu128/"


def test_a_cuda_minor_without_a_pair_gets_the_older_toolkit_of_its_minor():
    """PyTorch's cu129 builds of 2.11 (published, not a my_ops pair): the cu128 wheel of 2.11."""
    text = _label_free_error([CPU, CU130], "2.11.0+cu129", "12.9")
    assert _last_line(text) == f"pip install my_ops==1.0.0+cu128 --extra-index-url {INDEX}/whl/torch2.11/cu128/"


def test_a_newer_cpu_torch_gets_the_cpu_index():
    """A CPU-only torch newer than every pair (a future 2.16) still loads the stable +cpu wheel."""
    assert _build_info.wheel_for(STABLE, "2.16.0+cpu", None) == (
        f"pip install my_ops==1.0.0+cpu --extra-index-url {INDEX}/whl/cpu/")


def test_a_record_without_pairs_names_this_torchs_own_pair():
    assert _build_info.wheel_for(dataclasses.replace(STABLE, supported_pairs=()), "2.12.0", "13.0") == (
        f"pip install my_ops==1.0.0+cu130 --extra-index-url {INDEX}/whl/torch2.12/cu130/")


def test_no_published_wheel_builds_from_source():
    text = _label_free_error([CPU, CU126, CU130], "2.11.0+cu118", "11.8")
    assert "my_ops publishes no wheel for torch 2.11 with cu118" in _last_line(text)
    assert _last_line(text).endswith("--no-binary my_ops my_ops==1.0.0")


@pytest.mark.parametrize("library", [CPU, CU130], ids=["cpu", "cu130"])
def test_a_labelled_wheel_under_rocm_says_rocm(library):
    """A labelled wheel (one library) neither loads into a ROCm torch nor calls it CPU-only."""
    chosen, reasons = _libraries.choose([library], "2.11.0+rocm6.4", None, "6.4.0")
    assert chosen is None
    text = _libraries.mismatch_text(library.info, [library], reasons, "2.11.0+rocm6.4", None, "6.4.0")
    assert "ROCm build" in text and "CPU-only build" not in text, text
    assert _last_line(text).startswith("my_ops has no ROCm kernels"), text


def test_rocm_gets_no_wheel_it_cannot_use():
    text = _label_free_error([CPU, CU126, CU130], "2.11.0+rocm6.4", None, hip="6.4.0")
    assert _last_line(text).startswith("my_ops has no ROCm kernels: use it with a CUDA or CPU-only torch")


def test_a_nightly_names_its_own_version_and_the_nightly_index():
    nightly = dataclasses.replace(STABLE, version="1.0.1.dev202611240300+cu130")
    assert _build_info.wheel_for(nightly, "2.10.0", "12.8") == (
        f"pip install my_ops==1.0.1.dev202611240300+cu128 --extra-index-url {INDEX}/whl/nightly/torch2.10/cu128/")


# ---------------------------------------------------------- a labelled wheel
@pytest.mark.parametrize("torch_version, torch_cuda, wheel", [
    ("2.11.0+cu126", "12.6", "my_ops==1.0.0+cu126 --extra-index-url {INDEX}/whl/torch2.11/cu126/"),
    ("2.10.0", "12.8", "my_ops==1.0.0+cu128 --extra-index-url {INDEX}/whl/torch2.10/cu128/"),
    ("2.13.0+cpu", None, "my_ops==1.0.0+cpu --extra-index-url {INDEX}/whl/torch2.13/cpu/"),
])
def test_a_labelled_wheel_names_the_wheel_that_fits(torch_version, torch_cuda, wheel):
    text = _build_info.torch_mismatch(STABLE, torch_version, torch_cuda)
    assert _last_line(text) == "pip install " + wheel.format(INDEX=INDEX)


def test_a_labelled_wheel_under_an_old_torch_says_upgrade_torch():
    text = _build_info.torch_mismatch(STABLE, "2.9.1+cu130", "13.0")
    assert _last_line(text).startswith("Upgrade torch to >= 2.10")


# --------------------------------------------- for real: `import my_ops` here
def _import(code: str, **env) -> subprocess.CompletedProcess:
    environment = {k: v for k, v in os.environ.items() if k != _libraries.FORCE_VARIABLE}
    return subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=300,
                          env={**environment, **env}, cwd=ROOT / "tests")


def test_import_under_an_old_torch_says_upgrade_torch():
    """The installed build (labelled or label-free), with the running torch reported as 2.9."""
    result = _import("import torch; torch.__version__ = '2.9.1'; import my_ops")
    assert result.returncode != 0 and "ImportError: my_ops" in result.stderr, result.stderr
    assert _last_line(result.stderr).startswith('Upgrade torch to >= 2.10'), result.stderr


def test_import_with_a_misspelled_library():
    result = _import("import my_ops", MY_OPS_LIBRARY="cu999")
    assert result.returncode != 0, result.stdout
    labels = ", ".join(lib.label for lib in my_ops.libraries)
    assert (f"MY_OPS_LIBRARY=cu999 names no library here (available: {labels}); unset MY_OPS_LIBRARY "
            f"(this torch then gets {my_ops.library.label})") in result.stderr, result.stderr
