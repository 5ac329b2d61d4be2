"""The build matrix (build_support/matrix.toml) and its generator: the support
policy holds, every arch list is buildable by its nvcc, the GitHub matrices
are well formed, and docs/install.md's table is the generated one."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "build_support"))
import matrix  # noqa: E402

# SM targets each nvcc accepts (NVIDIA's release notes).
NVCC_TARGETS = {
    "12.4": {50, 52, 53, 60, 61, 62, 70, 72, 75, 80, 86, 87, 89, 90},
    "12.6": {50, 52, 53, 60, 61, 62, 70, 72, 75, 80, 86, 87, 89, 90},
    "12.8": {50, 52, 53, 60, 61, 62, 70, 72, 75, 80, 86, 87, 89, 90, 100, 101, 120},
    "12.9": {50, 52, 53, 60, 61, 62, 70, 72, 75, 80, 86, 87, 89, 90, 100, 101, 103, 120, 121},
    "13.0": {75, 80, 86, 87, 88, 89, 90, 100, 103, 110, 120, 121},
    "13.2": {75, 80, 86, 87, 88, 89, 90, 100, 103, 110, 120, 121},
}
PAIRS = matrix.all_pairs()
BUILDS = matrix.all_builds()


def test_support_policy():
    names = {p.name for p in PAIRS}
    assert "2.6-cu124" in names  # my_ops==1.0+cu124 exists
    minors = sorted({p.torch for p in PAIRS}, key=lambda v: tuple(map(int, v.split("."))))
    assert minors[-4:] == ["2.12", "2.13", "2.14", "2.15"]  # the four newest minors up to 2.15
    assert matrix.default_pair().name == "2.11-cu130"
    data = matrix.load()
    for minor, spec in data["torch"].items():
        assert spec["build_version"].startswith(minor + ".")
        assert set(spec.get("linux_only", [])) <= set(spec["cuda"])
        assert spec.get("pypi_cuda") in spec["cuda"], f"torch {minor}: PyPI's variant must be built"


@pytest.mark.parametrize("pair,platform", [(p, pl) for p in PAIRS for pl in p.platforms],
                         ids=lambda v: v if isinstance(v, str) else v.name)
def test_arch_list_is_buildable_and_ends_in_ptx(pair, platform):
    arch_list = pair.arch_list_for(platform)
    if pair.cuda == matrix.CPU:
        assert arch_list == "" and pair.label == "cpu"  # no device code at all
        return
    entries = arch_list.split(";")
    sms = [int(e.replace("+PTX", "").replace(".", "")) for e in entries]
    assert set(sms) <= NVCC_TARGETS[pair.cuda], f"nvcc {pair.cuda} cannot target {set(sms) - NVCC_TARGETS[pair.cuda]}"
    assert sms == sorted(sms)
    assert entries[-1].endswith("+PTX") and not any(e.endswith("+PTX") for e in entries[:-1])
    assert {90, 80}.issubset(sms)  # Hopper and Ampere always


def test_torch_requirement():
    assert matrix.torch_requirement("2.11") == "torch>=2.10"  # stable ABI: every later torch
    assert matrix.torch_requirement("2.10.0") == "torch>=2.10"
    assert matrix.torch_requirement("2.6") == "torch>=2.6,<2.7"  # legacy: its own minor
    assert matrix.find_pair("2.6-cu124").torch_requirement == "torch>=2.6,<2.7"
    assert matrix.find_pair("2.15-cu132").torch_requirement == "torch>=2.10"


def test_one_stable_build_per_cuda_version_serves_every_stable_pair():
    stable = [b for b in BUILDS if b.abi == "stable"]
    assert sorted(b.name for b in stable) == sorted({p.label for p in PAIRS if p.abi == "stable"})
    for pair in PAIRS:
        build = matrix.find_build(pair.name)
        assert pair.name in build.serves and build.cuda == pair.cuda
        assert set(pair.platforms) <= set(build.platforms)
        assert build.abi == ("stable" if tuple(map(int, pair.torch.split("."))) >= (2, 10) else "legacy")
    # stable builds compile against 2.11 where it has the CUDA version, else the oldest later minor
    assert matrix.find_build("cu130").torch == "2.11"
    assert matrix.find_build("cu132").torch == "2.12"
    assert matrix.find_build("2.6-cu124").serves == ("2.6-cu124",)
    # the build axis per release: (4 stable CUDA + CPU) x 3 platforms + CPU on macOS + the legacy pair x 2
    assert sum(len(b.platforms) for b in BUILDS) == 18
    assert matrix.find_build("cpu").serves == tuple(f"2.{m}-cpu" for m in range(10, 16))
    x86_and_windows = sum(len(set(p.platforms) - {"linux-aarch64", "macos"}) for p in PAIRS)
    assert x86_and_windows == 48  # one build per pair and platform, as before the stable ABI


def test_torch_install_args():
    assert matrix.find_pair("2.11-cu130").torch_install_args == ["torch==2.11.0"]
    assert matrix.find_pair("2.11-cu126").torch_install_args == [
        "torch==2.11.0", "--index-url", "https://download.pytorch.org/whl/cu126"]


@pytest.mark.parametrize("event", ["push", "pull_request"])
def test_gha_matrices(event):
    build_linux = matrix.gha_matrix(event, "build-linux")["include"]
    build_windows = matrix.gha_matrix(event, "build-windows")["include"]
    build_macos = matrix.gha_matrix(event, "build-macos")["include"]
    test_cpu = matrix.gha_matrix(event, "test-cpu")["include"]
    linux_names = {e["name"] for e in build_linux}
    windows_names = {e["name"] for e in build_windows}
    pairs = PAIRS if event == "push" else [p for p in PAIRS if p.name in matrix.load()["pull_request"]["pairs"]]
    assert linux_names == {p.build for p in pairs}
    assert windows_names <= linux_names
    assert {e["name"] for e in build_macos} == {matrix.CPU}  # PyTorch's only macOS build
    assert {e["platform_tag"] for e in build_macos} == {"macosx_11_0_arm64"}
    built = {(e["name"], e["platform"]) for e in build_linux + build_windows + build_macos}
    # every pair is tested on the oldest and newest Python of its torch, with the wheel of its build
    for pair in pairs:
        for platform in pair.platforms:
            entries = [e for e in test_cpu if e["name"] == pair.name and e["platform"] == platform
                       and e["build"] != "bundle"]
            assert {e["python"] for e in entries} == {pair.python_oldest, pair.python_newest}
            assert {e["build"] for e in entries} == {pair.build}
            assert (pair.build, platform) in built
            # PyPI's torch: one CUDA build on Linux x86_64, the CPU build on macOS; else PyTorch's index
            from_pypi = (platform == "linux" and pair.torch_on_pypi) or (platform == "macos" and pair.cuda == "cpu")
            assert all(("--index-url" in e["torch_install_args"]) != from_pypi for e in entries)
    # the label-free wheel of each platform, with the default pair's torch, on both Pythons
    default = matrix.default_pair()
    bundles = {(e["name"], e["platform"], e["python"]) for e in test_cpu if e["build"] == "bundle"}
    cpu = matrix.find_pair(f"{default.torch}-cpu")
    oldest_pypi = matrix.find_pair("2.10-cu128")  # PyPI's torch 2.10: CUDA 12.8, the label-free wheel's cu126
    assert bundles == {(pair.name, p, py) for pair in (default, cpu, oldest_pypi) for p in pair.platforms
                       for py in (pair.python_oldest, pair.python_newest)}
    test_gpu = matrix.gha_matrix(event, "test-gpu")["include"]
    assert [e["name"] for e in test_gpu if e["build"] == "bundle"] == [default.name, oldest_pypi.name]
    assert not [e for e in test_gpu if e["cuda"] == matrix.CPU]
    for entry in build_linux:
        machine = "aarch64" if entry["platform"] == "linux-aarch64" else "x86_64"
        assert entry["platform_tag"] == f"manylinux_2_28_{machine}"
        builder = "manylinuxaarch64-builder" if machine == "aarch64" else "manylinux2_28-builder"
        assert re.fullmatch(rf"pytorch/{builder}:cuda\d+\.\d+", entry["image"])
        assert entry["runner"] == ("ubuntu-24.04-arm" if machine == "aarch64" else "ubuntu-24.04")
    for entry in build_windows:
        assert f"--index-url https://download.pytorch.org/whl/{entry['label']}" in entry["torch_install_args"]
        assert (entry["windows_toolkit"] == "") == (entry["name"] == "cpu")  # the CPU build installs no toolkit


# The SMs PyTorch's own Linux aarch64 CUDA wheels ship SASS for (pytorch/pytorch
# .ci/aarch64_linux/aarch64_ci_build.sh; 13.2 as 13.0): no x86-only SKU (5.0-7.5,
# 8.6), and sm_110 (Jetson Thor) from CUDA 13 on.
PYTORCH_AARCH64_SASS = {"12.6": {80, 90}, "12.8": {80, 90, 100, 120}, "13.0": {80, 90, 100, 110, 120},
                        "13.2": {80, 90, 100, 110, 120}}


@pytest.mark.parametrize("build", [b for b in BUILDS if "linux-aarch64" in b.platforms and b.cuda != matrix.CPU],
                         ids=lambda b: b.name)
def test_aarch64_arch_list_is_pytorchs_aarch64_list(build):
    """matrix.toml's promise holds on aarch64 too: every SM PyTorch's aarch64 wheels carry, and PTX of the newest."""
    arch_list = build.arch_list_for("linux-aarch64")
    sms = [int(e.replace("+PTX", "").replace(".", "")) for e in arch_list.split(";")]
    assert set(sms) == PYTORCH_AARCH64_SASS[build.cuda], arch_list
    assert arch_list.endswith(f"{max(sms) // 10}.{max(sms) % 10}+PTX")
    # the build, the verification and the workflow entry all take this list
    entry = next(e for e in matrix.gha_matrix("push", "build-linux")["include"]
                 if e["name"] == build.name and e["platform"] == "linux-aarch64")
    assert entry["arch_list"] == arch_list
    x86 = next(e for e in matrix.gha_matrix("push", "build-linux")["include"]
               if e["name"] == build.name and e["platform"] == "linux")
    assert x86["arch_list"] == build.arch_list != arch_list
    out = subprocess.run([sys.executable, str(ROOT / "build_support/matrix.py"), "build", build.name, "--field",
                          "arch_list", "--platform", "linux-aarch64"], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == arch_list
    out = subprocess.run([sys.executable, str(ROOT / "build_support/matrix.py"), "arch-list", "--cuda", build.cuda,
                          "--platform", "linux-aarch64"], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == arch_list
    assert f"linux-aarch64: {arch_list.replace(';', ' ')}" in matrix.readme_table()


def test_build_wheel_takes_this_platforms_arch_list():
    """ci/build/build-wheel.sh asks the matrix for the list of the platform it builds on."""
    text = (ROOT / "ci/build/build-wheel.sh").read_text()
    call = re.search(r'TORCH_CUDA_ARCH_LIST="\$\(.*?\)"', text, re.S)
    assert call and '--platform "$(ci/lib/host-platform.sh)"' in call.group(0)


def test_aarch64_variants_follow_pytorch():
    aarch64 = {p.name for p in PAIRS if "linux-aarch64" in p.platforms}
    assert "2.11-cu130" in aarch64 and "2.14-cu132" in aarch64 and "2.6-cu124" not in aarch64


def _gha_matrix_outputs(tmp_path: Path, event: str, **env: str) -> dict[str, str]:
    """The GITHUB_OUTPUT lines of the real ci/plan/gha-matrix.sh for `event`, its source check
    answered by the act stand-ins on 127.0.0.1."""
    sys.path.insert(0, str(ROOT / "ci" / "test"))
    import workflow_standins
    import workflow_test

    servers = workflow_standins.StandIns()
    servers.state["torch_wheels"] = set(workflow_test.every_torch_wheel())
    out = tmp_path / "github_output"
    try:
        subprocess.run(["bash", str(ROOT / "ci/plan/gha-matrix.sh")], check=True, capture_output=True, env={
            "PATH": os.environ["PATH"], "EVENT": event, "GITHUB_OUTPUT": str(out),
            "TORCH_INDEX_URL": f"{servers.url}/torch", "PYPI_SIMPLE_URL": f"{servers.url}/pypi",
            "REGISTRY_URL": f"{servers.url}/registry", "REGISTRY_AUTH_URL": f"{servers.url}/registry/token",
            "ACTION_REGISTRY_URL": f"{servers.url}/registry", **env})
    finally:
        servers.close()
    return dict(line.split("=", 1) for line in out.read_text().splitlines())


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="a Linux-runner step (bash, python3)")
@pytest.mark.parametrize("repository,gpu", [("my-ops/my_ops", True), ("someone/my_ops", False)])
def test_gha_matrix_script_has_no_gpu_jobs_in_a_fork(tmp_path, repository, gpu):
    """A fork's push to main has no GPU runner and no PREFLIGHT_TOKEN: gpu-tests=0 skips gpu-guard,
    the GPU jobs and the watchdog (their conditions need gpu-guard to succeed)."""
    lines = _gha_matrix_outputs(tmp_path, "push", GITHUB_REPOSITORY=repository)
    assert (int(lines["gpu-tests"]) > 0) == gpu
    assert json.loads(lines["test-gpu"])["include"], "the matrix itself stays (its jobs are skipped)"


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="a Linux-runner step (bash, python3)")
def test_gha_matrix_script_writes_github_outputs(tmp_path):
    """The real script, its source check answered by the stand-ins on 127.0.0.1; images come pinned."""
    lines = _gha_matrix_outputs(tmp_path, "pull_request")
    assert set(lines) == {"build-linux", "build-windows", "build-macos", "test-cpu", "test-gpu", "gpu-tests"}
    assert int(lines["gpu-tests"]) == len(json.loads(lines["test-gpu"])["include"])
    wanted = matrix.load()["pull_request"]["pairs"]
    expected = {(matrix.find_build(p).name, platform) for p in wanted
                for platform in matrix.find_pair(p).platforms if platform in ("linux", "linux-aarch64")}
    assert len(json.loads(lines["build-linux"])["include"]) == len(expected)
    assert all(re.fullmatch(r"pytorch/\S+:cuda[\d.]+@sha256:[0-9a-f]{64}", e["image"])
               for e in json.loads(lines["build-linux"])["include"])


def test_readme_table_is_generated_from_the_matrix():
    readme = (ROOT / "docs/install.md").read_text()
    match = re.search(r"<!-- pairs:begin.*?-->\n(.*?)\n<!-- pairs:end -->", readme, re.S)
    assert match, "docs/install.md lacks the <!-- pairs:begin --> ... <!-- pairs:end --> block"
    assert match.group(1) == matrix.readme_table(), "regenerate it: python3 build_support/matrix.py readme-table"


def test_unknown_pair_names_the_known_ones():
    with pytest.raises(SystemExit, match="known pairs: 2.6-cu124"):
        matrix.find_pair("2.7-cu118")


@pytest.mark.parametrize("label", ["self-hosted", "gpu", "ubuntu-latest", "[self-hosted, gpu]", "ubuntu"])
def test_build_runners_are_github_hosted_images(tmp_path, label):
    """A matrix.toml that sends builds or CPU tests anywhere but a versioned
    GitHub-hosted image (the self-hosted GPU runner, a moving `-latest`) is refused."""
    text = (ROOT / "build_support/matrix.toml").read_text()
    changed, count = re.subn(r'(?m)^linux_runner = ".*"$', f"linux_runner = {json.dumps(label)}", text)
    assert count == 1
    path = tmp_path / "matrix.toml"
    path.write_text(changed)
    with pytest.raises(SystemExit, match="linux_runner .* is not a GitHub-hosted runner image"):
        matrix.load(path)
    assert matrix.load()["defaults"]["linux_runner"].startswith("ubuntu-")
