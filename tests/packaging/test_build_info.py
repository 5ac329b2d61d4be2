"""The wheel's build info and the guards built on it: the import guard, the
arch guard and `python -m my_ops`, with faked build info and faked GPUs."""

from __future__ import annotations

import dataclasses
import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
import torch

import my_ops
from my_ops import _build_info
from my_ops._build_info import BuildInfo, arch_covers, arch_mismatch, install_command, torch_mismatch

INFO = BuildInfo(
    version="1.0.0+cu130", label="cu130", torch_version="2.11.0+cu130", torch_cuda="13.0",
    cuda_version="13.0.88", arch_list="7.5;8.0;8.6;9.0;10.0;12.0+PTX", cxx11_abi=True,
    build_date="2026-11-22T00:00:00Z", commit="abc", abi="stable", torch_requirement="torch>=2.10",
    index_url="https://example.test/idx",
    supported_pairs=("2.6-cu124", "2.10-cu128", "2.11-cu126", "2.11-cu130", "2.15-cu132"),
)
LEGACY = dataclasses.replace(
    INFO, version="1.0.0+cu124", label="cu124", torch_version="2.6.0+cu124", torch_cuda="12.4",
    cuda_version="12.4.131", arch_list="5.0;6.0;7.0;7.5;8.0;8.6;9.0+PTX", abi="legacy",
    torch_requirement="torch>=2.6,<2.7")


def test_installed_build_info_describes_this_build():
    info = my_ops.build_info
    assert info.version == my_ops.__version__
    lower, upper = info.torch_range  # the running torch is one this build serves
    running = tuple(int(p) for p in _build_info.minor_of(torch.__version__).split("."))
    assert lower <= running and (upper is None or running < upper)
    assert info.abi in ("stable", "legacy")
    assert info.label in ("", "cpu") or info.label == info.cuda_label
    if info.has_cuda:
        assert _build_info.parse_arch_list(info.arch_list)
    assert info.supported_pairs and all("-" in p for p in info.supported_pairs)


# ------------------------------------------------------------- import guard
def test_matching_torch_passes():
    assert torch_mismatch(INFO, "2.11.0+cu130", "13.0") is None
    assert torch_mismatch(INFO, "2.11.3", "13.2") is None  # patch releases and CUDA minors fit


def test_stable_wheel_serves_every_later_torch_of_its_cuda_major():
    for torch_version, cuda in [("2.10.0+cu130", "13.0"), ("2.13.0", "13.0"), ("2.15.0", "13.2"),
                                ("2.19.1", "13.9")]:
        assert torch_mismatch(INFO, torch_version, cuda) is None, torch_version


def test_stable_wheel_refuses_older_torch():
    problem = torch_mismatch(INFO, "2.9.1+cu130", "13.0")
    assert "it uses the LibTorch stable ABI of torch >= 2.10" in problem
    assert "my_ops==1.0.0+cu130 --extra-index-url https://example.test/idx/whl/torch2.9/cu130/" not in problem
    # no wheel and no source build serves torch 2.9: torch must move
    assert problem.splitlines()[-1].startswith('Upgrade torch to >= 2.10 (installing my_ops never replaces your '
                                               'torch): pip install --upgrade "torch>=2.10"')


def test_legacy_wheel_serves_its_minor_only():
    assert torch_mismatch(LEGACY, "2.6.0+cu124", "12.4") is None
    problem = torch_mismatch(LEGACY, "2.7.0+cu126", "12.6")
    assert "compiled against torch 2.6.0+cu124" in problem
    assert LEGACY.torch_range_text == "torch 2.6"
    assert INFO.torch_range_text == "torch >= 2.10"


def test_other_torch_names_the_wheel_that_fits():
    problem = torch_mismatch(LEGACY, "2.10.0+cu128", "12.8")
    assert "compiled against torch 2.6.0+cu124" in problem
    assert problem.splitlines()[-1].strip() == ("pip install my_ops==1.0.0+cu128 "
                                                "--extra-index-url https://example.test/idx/whl/torch2.10/cu128/")


def test_other_cuda_major_rejected():
    problem = torch_mismatch(INFO, "2.11.0+cu126", "12.6")
    assert "built with CUDA 13.0.88, but this torch uses CUDA 12.6" in problem
    assert "my_ops==1.0.0+cu126 --extra-index-url https://example.test/idx/whl/torch2.11/cu126/" in problem


def test_cpu_torch_rejected_for_cuda_wheel():
    problem = torch_mismatch(INFO, "2.11.0+cpu", None)
    assert "this torch is a CPU-only build" in problem


def test_unsupported_pair_says_so():
    command = install_command(INFO, "2.7.1+cu118", "11.8")
    assert "publishes no wheel for torch 2.7 with cu118" in command
    assert "2.6-cu124" in command
    # building from source: the tools, then the sdist of this version, replacing the installed wheel
    assert command.endswith("pip install scikit-build-core cmake ninja && pip install --no-build-isolation "
                            "--no-cache-dir --force-reinstall --no-deps --no-binary my_ops my_ops==1.0.0")
    # a nightly has no sdist on PyPI: its commit is built instead
    nightly = dataclasses.replace(INFO, version="1.0.1.dev202611240300+cu130", commit="0123abc")
    assert install_command(nightly, "2.7.1+cu118", "11.8").endswith(
        '--force-reinstall --no-deps "my_ops @ git+https://github.com/my-ops/my_ops@0123abc"')


def _copy_installed_package(tmp_path: Path, **changes) -> Path:
    """A copy of the installed my_ops with its build info changed, importable from tmp_path.

    From PyPI's label-free wheel, the copy is laid out as a labelled wheel of
    the library this torch loaded (its files and build record at the top): the
    guard of a one-library wheel is what these tests check (test_libraries.py
    checks the choice among several)."""
    target = tmp_path / "site"
    package = Path(my_ops.__file__).parent
    shutil.copytree(package, target / "my_ops", ignore=shutil.ignore_patterns("__pycache__", "_libraries"))
    if my_ops.library.folder != package:
        for item in my_ops.library.folder.iterdir():
            shutil.copy2(item, target / "my_ops" / item.name)
        changes = {"version": my_ops.__version__, **changes}
    info_file = target / "my_ops" / "_build_info.json"
    data = json.loads(info_file.read_text())
    data.update(changes)
    info_file.write_text(json.dumps(data))
    return target


# The installed package relabelled as a legacy build for another torch minor.
FOREIGN_LEGACY = dict(torch_version="2.9.0+cu128", torch_cuda="12.8", abi="legacy",
                      torch_requirement="torch>=2.9,<2.10")


def _run(code_or_module: list[str], site: Path) -> subprocess.CompletedProcess:
    env = dict(os.environ, PYTHONPATH=str(site))
    return subprocess.run([sys.executable, *code_or_module], capture_output=True, text=True,
                          env=env, cwd=site, timeout=300)


def test_import_with_foreign_build_info_raises_clear_import_error(tmp_path):
    site = _copy_installed_package(tmp_path, **FOREIGN_LEGACY)
    result = _run(["-c", "import my_ops"], site)
    assert result.returncode != 0
    assert "ImportError: my_ops" in result.stderr
    assert f"does not fit torch {torch.__version__}" in result.stderr
    assert "compiled against torch 2.9.0+cu128" in result.stderr
    assert "Install the my_ops wheel for this torch:\n  pip install my_ops==" in result.stderr
    assert "undefined symbol" not in result.stderr


def test_stable_build_under_older_torch_raises_clear_import_error(tmp_path):
    """The running torch relabelled as too old for a stable build of this wheel."""
    running = tuple(int(p) for p in torch.__version__.split(".")[:2])
    site = _copy_installed_package(tmp_path, abi="stable",
                                   torch_requirement=f"torch>={running[0]}.{running[1] + 1}")
    result = _run(["-c", "import my_ops"], site)
    assert result.returncode != 0
    assert f"it uses the LibTorch stable ABI of torch >= {running[0]}.{running[1] + 1}" in result.stderr
    assert "undefined symbol" not in result.stderr


def test_python_m_my_ops_reports_match(tmp_path):
    site = _copy_installed_package(tmp_path)
    result = _run(["-m", "my_ops"], site)
    assert result.returncode == 0, result.stdout + result.stderr
    assert f"my_ops {my_ops.__version__}" in result.stdout
    assert "torch: matches this build" in result.stdout
    assert (f"binding: {'LibTorch stable ABI' if my_ops.build_info.abi == 'stable' else 'regular C++ API'}"
            in result.stdout)
    # everything fits: the pinned wheel is an option, not a command to run
    assert "optional, to pin this torch's wheel: pip install my_ops==" in result.stdout
    assert "--force-reinstall" not in result.stdout


def test_python_m_my_ops_does_not_give_a_cpu_build_a_cuda_torch(tmp_path):
    """A CPU build compiled against a CUDA torch's headers needs no CUDA: the report must not say it does."""
    site = _copy_installed_package(tmp_path, label="cpu", cuda_version="", arch_list="",
                                   torch_version="2.11.0+cu130", torch_cuda="13.0")
    result = _run(["-m", "my_ops"], site)
    built = [line for line in result.stdout.splitlines() if "built against" in line]
    assert built == ["  built against torch 2.11.0's headers, C++11 ABI on"], result.stdout + result.stderr
    assert "built without CUDA kernels (CPU only)" in result.stdout


def test_python_m_my_ops_reports_mismatch(tmp_path):
    site = _copy_installed_package(tmp_path, **FOREIGN_LEGACY)
    result = _run(["-m", "my_ops"], site)
    assert result.returncode == 1
    assert "MISMATCH" in result.stdout and "compiled against torch 2.9.0+cu128" in result.stdout


def test_python_m_my_ops_reports_mismatch_without_orig_argv(tmp_path):
    """Python 3.9 has no sys.orig_argv: the report must not depend on it."""
    site = _copy_installed_package(tmp_path, **FOREIGN_LEGACY)
    code = ("import runpy, sys\n"
            "if hasattr(sys, 'orig_argv'): del sys.orig_argv\n"
            "runpy.run_module('my_ops', run_name='__main__', alter_sys=True)\n")
    result = _run(["-c", code], site)
    assert result.returncode == 1, result.stdout + result.stderr
    assert "MISMATCH" in result.stdout and "compiled against torch 2.9.0+cu128" in result.stdout


def test_import_by_another_module_without_orig_argv_still_raises(tmp_path):
    site = _copy_installed_package(tmp_path, **FOREIGN_LEGACY)
    code = "import sys\nif hasattr(sys, 'orig_argv'): del sys.orig_argv\nimport my_ops\n"
    result = _run(["-c", code], site)
    assert result.returncode != 0
    assert "ImportError: my_ops" in result.stderr


# --------------------------------------------------------------- arch guard
@pytest.mark.parametrize("capability,covered", [
    ((7, 5), True), ((8, 0), True), ((8, 9), True),  # 8.9 runs sm_86 SASS
    ((9, 0), True), ((10, 3), True), ((12, 1), True),  # 12.1 runs sm_120 SASS
    ((13, 0), True),  # newer than the list: PTX of 12.0
    ((6, 1), False), ((7, 0), False),
])
def test_arch_covers(capability, covered):
    assert arch_covers(INFO.arch_list, capability) is covered


def test_arch_without_ptx_does_not_cover_newer_gpus():
    assert not arch_covers("8.0;8.6", (9, 0))
    assert arch_covers("8.0+PTX", (9, 0))


def test_arch_mismatch_message_names_gpu_sm_and_list():
    message = arch_mismatch(INFO, "Tesla P100", (6, 0))
    assert "has no kernels for Tesla P100 (sm_60, compute capability 6.0)" in message
    assert "TORCH_CUDA_ARCH_LIST=7.5;8.0;8.6;9.0;10.0;12.0+PTX" in message
    assert ('pip install scikit-build-core cmake ninja && TORCH_CUDA_ARCH_LIST="6.0" pip install '
            '--no-build-isolation --no-cache-dir --force-reinstall --no-deps --no-binary my_ops my_ops==1.0.0'
            in message)
    assert arch_mismatch(INFO, "NVIDIA H100", (9, 0)) is None


def test_cpu_build_explains_missing_cuda():
    cpu = dataclasses.replace(INFO, label="cpu", cuda_version="", arch_list="")
    assert "CPU-only build" in arch_mismatch(cpu, "NVIDIA H100", (9, 0))


def test_bad_arch_list_entry_rejected():
    with pytest.raises(ValueError, match="bad TORCH_CUDA_ARCH_LIST entry 'sm90'"):
        _build_info.parse_arch_list("8.0;sm90")


FOREIGN_WHEEL = os.environ.get("MY_OPS_FOREIGN_ARCH_WHEEL")


@pytest.mark.skipif(not torch.cuda.is_available(), reason="needs a CUDA device")
@pytest.mark.skipif(not FOREIGN_WHEEL, reason="set MY_OPS_FOREIGN_ARCH_WHEEL to a wheel built without this GPU's SM")
def test_first_cuda_op_on_uncovered_gpu_raises_clear_error(tmp_path):
    """End to end: a real wheel built for other GPUs, on this GPU."""
    subprocess.run([sys.executable, "-m", "pip", "install", "--quiet", "--no-deps", "--target",
                    str(tmp_path), FOREIGN_WHEEL], check=True)
    code = ("import torch, my_ops\n"
            "x = torch.randn(4, 64, device='cuda')\n"
            "my_ops.rms_norm(x, torch.ones(64, device='cuda'))\n"
            "torch.cuda.synchronize()\n")
    result = _run(["-c", code], tmp_path)
    major, minor = torch.cuda.get_device_capability()
    assert result.returncode != 0
    assert f"has no kernels for {torch.cuda.get_device_name()} (sm_{major}{minor}" in result.stderr, result.stderr
    assert "it was built for TORCH_CUDA_ARCH_LIST=" in result.stderr
    assert "no kernel image is available" not in result.stderr
