"""Deploying without Python: a model of my_ops ops (aoti_model.py) exported
with torch.export and compiled by AOTInductor into a .pt2 package, run by a
LibTorch C++ program (cpp/run_aoti_package.cpp) that loads the wheel's kernel
library, and by a fresh Python process. Both give the eager model's outputs
and update the residual input in place as eager does, at several batch and
sequence sizes (both dimensions are dynamic in the package).

The package and the C++ program are built once per test session; on CUDA
the same tests run on a CUDA package with the Triton RMSNorm in it, and where
two GPUs are present, the CUDA package compiled on cuda:0 runs on cuda:1.
"""

from __future__ import annotations

import copy
import ctypes
import functools
import json
import os
import re
import shutil
import subprocess
import sys
import textwrap
import zipfile
from pathlib import Path

import pytest
import torch
from torch.utils import cpp_extension

import my_ops
from aoti_model import (
    HIDDEN,
    AddOutStep,
    MLPBlock,
    add_out_inputs,
    compile_add_out_package,
    compile_package,
    example_inputs,
    reference_forward,
)
from conftest import assert_matches

ROOT = Path(__file__).resolve().parents[2]
CXX = os.environ.get("CXX") or shutil.which("c++") or shutil.which("g++")
# (batch, sequence) sizes of the calls: the example's, the smallest, others
SHAPES = [(2, 3), (1, 1), (5, 17)]
# the package's kernels (its own matmuls, fusions) against eager's: float32 rounding apart
EAGER_TOLERANCE = dict(rtol=1e-5, atol=1e-5)

pytestmark = pytest.mark.skipif(not sys.platform.startswith("linux") or CXX is None,
                                reason="AOTInductor packages and the C++ program: Linux with a C++ compiler")


@pytest.fixture(scope="session")
def runner(tmp_path_factory) -> Path:
    """cpp/run_aoti_package.cpp, built against the installed torch's libtorch."""
    torch_lib = Path(torch.__file__).parent / "lib"
    exe = tmp_path_factory.mktemp("aoti_runner") / "run_aoti_package"
    abi = int(torch._C._GLIBCXX_USE_CXX11_ABI)
    build = subprocess.run(
        # torch's headers need C++17, from 2.14 on C++20; libtorch_cuda (through
        # libtorch) registers the CUDA runner: linked though no symbol of it is called
        [CXX, "-std=c++20", f"-D_GLIBCXX_USE_CXX11_ABI={abi}", "-O0",
         *(f"-I{p}" for p in cpp_extension.include_paths()), str(ROOT / "tests/packaging/cpp/run_aoti_package.cpp"),
         f"-L{torch_lib}", f"-Wl,-rpath,{torch_lib}", "-Wl,--no-as-needed", "-ltorch", "-ltorch_cpu", "-lc10",
         "-ldl", "-o", str(exe)],
        capture_output=True, text=True, timeout=600)
    assert build.returncode == 0, build.stderr[-3000:]
    return exe


def _library_env() -> dict:
    """libmy_ops' own dependencies (libtorch_cpu; libtorch_cuda and libcudart for
    a CUDA library) come from the library path, as in any LibTorch deployment."""
    torch_lib = Path(torch.__file__).parent / "lib"
    site = Path(torch.__file__).parent.parent
    paths = [str(torch_lib), *sorted({str(p.parent) for p in site.glob("nvidia/*/lib/libcudart.so*")})]
    return {**os.environ, "LD_LIBRARY_PATH": os.pathsep.join(paths)}


@functools.cache
def _kernel_library() -> Path:
    """The kernel library as a C++ user finds it: in the folder `python -m my_ops --cmake-prefix` prints."""
    result = subprocess.run([sys.executable, "-m", "my_ops", "--cmake-prefix"], capture_output=True, text=True,
                            timeout=300)
    assert result.returncode == 0, result.stderr
    folder = Path(result.stdout.strip())
    assert folder == my_ops.library.folder
    return folder / "libmy_ops.so"


class Package:
    """A compiled package, the eager block it came from, and its device."""

    def __init__(self, device: str, tmp_path_factory) -> None:
        self.device = device
        self.block = MLPBlock(triton_head=device == "cuda", device=device).eval()
        folder = tmp_path_factory.mktemp(f"aoti_{device}")
        # -O0 for the wrapper: the package compiles in about half the time; its kernels stay optimized
        self.path = compile_package(self.block, folder / "mlp_block.pt2",
                                    {"aot_inductor.compile_wrapper_opt_level": "O0"})

    def inputs(self) -> list[torch.Tensor]:
        """[x, residual] per call, flat, on the CPU (the runners move them)."""
        return [t.cpu() for batch, seq in SHAPES for t in example_inputs(batch, seq)]

    def check(self, results: list[torch.Tensor], inputs: list[torch.Tensor], device: str | None = None) -> None:
        """results holds, per call, the output, then x and residual after the call,
        run on `device` (the package's own by default), where eager runs too."""
        device = device or self.device
        block = self.block if device == self.device else copy.deepcopy(self.block).to(device)
        assert len(results) == 3 * len(SHAPES)
        for call, (x, residual) in enumerate(zip(inputs[::2], inputs[1::2])):
            out, x_after, residual_after = results[3 * call:3 * call + 3]
            eager_residual = residual.to(device, copy=True)  # (on the CPU .to() would not copy)
            with torch.no_grad():
                eager_out = block(x.to(device), eager_residual)
            want_out, want_residual = reference_forward(block, x.to(device), residual.to(device))
            assert_matches(out, want_out, torch.float32)
            assert_matches(residual_after, want_residual, torch.float32)  # updated in place, as eager does
            torch.testing.assert_close(out, eager_out.cpu(), **EAGER_TOLERANCE)
            torch.testing.assert_close(residual_after, eager_residual.cpu(), **EAGER_TOLERANCE)
            assert torch.equal(x_after, x)  # x is read only


@pytest.fixture(scope="session")
def cpu_package(tmp_path_factory) -> Package:
    return Package("cpu", tmp_path_factory)


@pytest.fixture(scope="session")
def cuda_package(tmp_path_factory) -> Package:
    if not torch.cuda.is_available():
        pytest.skip("needs a CUDA device")
    if not my_ops.HAVE_TRITON:
        pytest.skip("the CUDA package holds the Triton RMSNorm: needs Triton")
    return Package("cuda", tmp_path_factory)


@pytest.fixture(params=["cpu", pytest.param("cuda", marks=pytest.mark.cuda)])
def package(request) -> Package:
    return request.getfixturevalue(f"{request.param}_package")


def _run_cpp(runner: Path, library: str, package: Package, tmp_path: Path, device: str | None = None,
             path: Path | None = None):
    """The C++ program on package's inputs; `path`: another package file (package's by default)."""
    inputs = package.inputs()
    torch.save(inputs, tmp_path / "inputs.pt")
    result = subprocess.run(
        [str(runner), library, str(path or package.path), str(tmp_path / "inputs.pt"),
         str(tmp_path / "outputs.pt"), device or package.device, "2"],
        capture_output=True, text=True, env=_library_env(), timeout=300)
    return result, inputs


def test_cpp_program_runs_the_package_as_eager(runner, package, tmp_path):
    result, inputs = _run_cpp(runner, str(_kernel_library()), package, tmp_path)
    assert result.returncode == 0, f"{result.stdout}\n{result.stderr}"
    package.check(list(torch.load(tmp_path / "outputs.pt")), inputs)


def test_cpp_program_without_the_kernel_library_is_told_what_to_load(runner, cpu_package, tmp_path):
    result, _ = _run_cpp(runner, "none", cpu_package, tmp_path)
    assert result.returncode == 1, f"{result.stdout}\n{result.stderr}"
    # torch's message names the op it cannot find (not where it lives); the program adds where
    assert re.search(r"Could not find schema for my_ops::\w+", result.stderr), result.stderr
    assert "hint: the package calls my_ops ops: load my_ops' kernel library" in result.stderr
    assert not (tmp_path / "outputs.pt").exists()


def _recording(package: Path, version: str | None, folder: Path, torch_version: str | None = None) -> Path:
    """A copy of package whose metadata records my_ops `version` (None: no version)
    and, given, torch `torch_version`: a package as another my_ops or torch would
    have compiled it (torch's loader reads the metadata from these files)."""
    copy_path = folder / f"recording_{version}_{torch_version}.pt2"
    with zipfile.ZipFile(package) as source, zipfile.ZipFile(copy_path, "w") as target:
        for entry in source.infolist():
            data = source.read(entry)
            if entry.filename.endswith("_metadata.json"):
                metadata = json.loads(data)
                assert metadata.pop("my_ops_version") == my_ops.__version__  # (compile_package records it)
                if version is not None:
                    metadata["my_ops_version"] = version
                if torch_version is not None:
                    metadata["torch_version"] = torch_version
                data = json.dumps(metadata).encode()
            target.writestr(entry, data)
    return copy_path


def _release() -> tuple[int, int, int]:
    return tuple(int(part) for part in re.match(r"(\d+)\.(\d+)\.(\d+)", my_ops.__version__).groups())


@pytest.mark.parametrize("recorded", ["newer-minor", "newer-patch", "next-major", "previous-major"])
def test_cpp_program_refuses_a_package_the_kernel_library_may_not_serve(runner, cpu_package, tmp_path, recorded):
    """A package compiled by a newer my_ops, or one of another major version: torch
    would match its op arguments to the library's schemas by name, dropping what the
    library lacks, silently; the program refuses it, naming both versions (the
    library's from the library it loaded: the program is built without it)."""
    major, minor, patch = _release()
    version = {"newer-minor": f"{major}.{minor + 1}.0", "newer-patch": f"{major}.{minor}.{patch + 1}",
               "next-major": f"{major + 1}.0.0", "previous-major": f"{major - 1}.9.0"}[recorded]
    package = _recording(cpu_package.path, version, tmp_path)
    result, _ = _run_cpp(runner, str(_kernel_library()), cpu_package, tmp_path, path=package)
    assert result.returncode == 1, f"{result.stdout}\n{result.stderr}"
    assert (f"the package was compiled with my_ops {version}, but the kernel library is my_ops "
            f"{my_ops.build_info.version}") in result.stderr, result.stderr
    assert not (tmp_path / "outputs.pt").exists()


@pytest.mark.parametrize("recorded", ["older-in-major", "dev-of-this-release", None])
def test_cpp_program_runs_a_package_the_kernel_library_serves(runner, cpu_package, tmp_path, recorded):
    """Compiled by an older my_ops of the library's major version (or a development
    build of its release): runs as eager. Without a recorded version: runs, saying
    that it was not checked."""
    major, minor, patch = _release()
    version = {"older-in-major": f"{major}.0.0", "dev-of-this-release": f"{major}.{minor}.{patch}.dev202601010000",
               None: None}[recorded]
    result, inputs = _run_cpp(runner, str(_kernel_library()), cpu_package, tmp_path,
                              path=_recording(cpu_package.path, version, tmp_path))
    assert result.returncode == 0, f"{result.stdout}\n{result.stderr}"
    assert ("does not record the my_ops version that compiled it" in result.stderr) == (version is None)
    cpu_package.check(list(torch.load(tmp_path / "outputs.pt")), inputs)


# (package's version, library's version, served): the rule of my_ops_package_problem
VERSION_PAIRS = [
    ("1.0.0", "1.0.0+cpu", True), ("1.0.0+cu130", "1.2.0", True), ("1.1.5", "1.2.0+cu128", True),
    ("1.2.0", "1.2.1", True), ("1.3.0", "1.2.0", False), ("1.2.1", "1.2.0+cu130", False),
    ("2.0.0", "1.9.0", False), ("0.9.0", "1.0.0", False),
    # a nightly's package: that nightly or a later one, or the release; a release's: no nightly of it
    ("1.2.1.dev202612010000", "1.2.1.dev202612010000", True), ("1.2.1.dev202612010000", "1.2.1", True),
    ("1.2.1.dev202612010000", "1.2.1.dev202611010000", False), ("1.2.1.dev202612010000", "1.2.0", False),
    ("1.2.1", "1.2.1.dev202612010000", False), ("1.2.0", "1.2.1.dev202612010000", True),
]


def _library_functions():
    """my_ops_version and my_ops_package_problem of the kernel library a C++ program loads."""
    library = ctypes.CDLL(str(_kernel_library()))  # (loaded already by import my_ops: the same library)
    library.my_ops_version.restype = ctypes.c_char_p
    library.my_ops_package_problem.restype = ctypes.c_char_p
    library.my_ops_package_problem.argtypes = [ctypes.c_char_p, ctypes.c_char_p]
    return library.my_ops_version, library.my_ops_package_problem


def test_kernel_library_knows_its_version():
    version, problem = _library_functions()
    assert version().decode() == my_ops.build_info.version
    assert problem(my_ops.build_info.version.encode(), None) == b""  # (None: its own version)


@pytest.mark.parametrize("package, library", [
    ("1.0.0rc1", "1.0.0"), ("1.0.0", "1.0.0a1"), ("1.99999999999999999999.0", "1.0.0"), ("1.0", "1.0.0"),
    ("1.0.0.dev", "1.0.0"), ("1.0.0.dev1.post1", "1.0.0"), ("", "1.0.0")])
def test_kernel_library_refuses_a_version_it_cannot_order(package, library):
    """Only the forms my_ops makes (X.Y.Z, X.Y.Z.devN) are ordered: any other is
    refused, naming it, rather than read as some release."""
    _, problem = _library_functions()
    answer = problem(package.encode(), library.encode()).decode()
    unreadable = package if package != "1.0.0" else library
    assert f": {unreadable} is not a version my_ops makes (X.Y.Z or X.Y.Z.devN)" in answer, answer


@pytest.mark.parametrize("package, library, served", VERSION_PAIRS)
def test_kernel_library_says_which_packages_it_serves(package, library, served):
    _, problem = _library_functions()
    answer = problem(package.encode(), library.encode()).decode()
    if served:
        assert answer == ""
    else:
        assert answer.startswith(f"the package was compiled with my_ops {package}, but the kernel library is "
                                 f"my_ops {library}: a package needs a kernel library of the same major "
                                 "version, at least as new"), answer


@pytest.mark.parametrize("recorded", ["newer-minor", "next-major"])
def test_check_package_refuses_a_package_this_my_ops_may_not_serve(cpu_package, tmp_path, recorded):
    """my_ops.check_package, in Python, by the library's rule, naming both versions."""
    major, minor, _ = _release()
    version = {"newer-minor": f"{major}.{minor + 1}.0", "next-major": f"{major + 1}.0.0"}[recorded]
    package = _recording(cpu_package.path, version, tmp_path)
    with pytest.raises(RuntimeError, match=re.escape(
            f"my_ops.check_package: {package}: the package was compiled with my_ops {version}, but the kernel "
            f"library is my_ops {my_ops.build_info.version}")):
        my_ops.check_package(package)


def test_check_package_refuses_a_package_of_another_torch_minor(cpu_package, tmp_path):
    """A package records the torch that compiled it: check_package refuses it under another
    torch minor (no promise for .pt2 packages across releases), passes another patch release."""
    major, minor = (int(part) for part in torch.__version__.split(".")[:2])
    for other in (f"{major}.{minor + 1}.0", f"{major}.{minor - 1}.0+cu126"):
        package = _recording(cpu_package.path, my_ops.__version__, tmp_path, other)
        with pytest.raises(RuntimeError, match=re.escape(
                f"my_ops.check_package: {package}: the package was compiled with torch {other}, but this is "
                f"torch {torch.__version__}")):
            my_ops.check_package(package)
    my_ops.check_package(_recording(cpu_package.path, my_ops.__version__, tmp_path, f"{major}.{minor}.99"))


def test_check_package_passes_a_package_this_my_ops_serves(cpu_package, tmp_path):
    """The session's package, and one of an older release of this major version;
    the version check_package reads is the one torch's loader reports."""
    my_ops.check_package(cpu_package.path)
    my_ops.check_package(_recording(cpu_package.path, f"{_release()[0]}.0.0", tmp_path))
    loaded = torch._inductor.aoti_load_package(str(cpu_package.path))
    assert my_ops._package_check.package_version(cpu_package.path) == loaded.get_metadata()["my_ops_version"]
    with pytest.warns(UserWarning, match="does not record the my_ops version that compiled it"):
        my_ops.check_package(_recording(cpu_package.path, None, tmp_path))


def test_check_package_reads_the_metadata_without_loading_the_model(tmp_path):
    """An archive of the metadata alone (no compiled model, nothing torch could
    load): checked all the same, before any op lookup."""
    major, minor, _ = _release()
    path = tmp_path / "metadata_only.pt2"
    with zipfile.ZipFile(path, "w") as archive:
        archive.writestr("metadata_only/data/aotinductor/model/x.wrapper_metadata.json",
                         json.dumps({"my_ops_version": f"{major}.{minor + 1}.0", "AOTI_DEVICE_KEY": "cpu"}))
    with pytest.raises(RuntimeError, match=f"compiled with my_ops {major}.{minor + 1}.0"):
        my_ops.check_package(path)
    with pytest.raises(ValueError, match="holds no AOTInductor model named 'other'"):
        my_ops.check_package(path, "other")


@pytest.mark.parametrize("case, content, message", [
    ("not a zip", None, "is not an AOTInductor package (not a zip archive"),
    ("not JSON", b"{my_ops_version", "its metadata is not JSON"),
    ("a list", b"[1, 2]", "its metadata is not a JSON object"),
    ("a number for the version", b'{"my_ops_version": 1}', "records my_ops_version 1, not a version string"),
    ("a NUL in the version", b'{"my_ops_version": "1.0.0\\u0000junk"}', "not a version string"),
])
def test_check_package_names_a_malformed_archive(tmp_path, case, content, message):
    """Archives that are not packages of aoti_compile_and_package: a ValueError naming the file and why."""
    path = tmp_path / "malformed.pt2"
    if content is None:
        path.write_bytes(b"not a zip archive")
    else:
        with zipfile.ZipFile(path, "w") as archive:
            archive.writestr("malformed/data/aotinductor/model/x.wrapper_metadata.json", content)
    with pytest.raises(ValueError, match=re.escape(message)):
        my_ops.check_package(path)


def test_fresh_python_process_refuses_a_package_of_a_newer_my_ops(cpu_package, tmp_path):
    """aoti_fresh_process.py checks the package (my_ops.check_package) before loading it."""
    major, minor, _ = _release()
    newer = copy.copy(cpu_package)
    newer.path = _recording(cpu_package.path, f"{major}.{minor + 1}.0", tmp_path)
    result, _ = _fresh_python(newer, tmp_path)
    assert result.returncode == 3, f"{result.stdout}\n{result.stderr[-3000:]}"
    assert f"refused: my_ops.check_package: {newer.path}: the package was compiled with my_ops" in result.stdout
    assert "step: loaded" not in result.stdout


def _docs_serve_program(tmp_path: Path) -> Path:
    """docs/deploying.md's serve.cpp, built as the runner is, for this package:
    the CPU for CUDA, the hidden size of aoti_model's block for 4096."""
    page = (ROOT / "docs/deploying.md").read_text()
    code = re.search(r"```cpp\n(// serve\.cpp\n.*?)```", page, re.DOTALL).group(1)
    assert code.count("at::kCUDA") == 1 and code.count("4096") == 2, code
    source = tmp_path / "serve.cpp"
    source.write_text(code.replace("at::kCUDA", "at::kCPU").replace("4096", str(HIDDEN)))
    torch_lib = Path(torch.__file__).parent / "lib"
    exe = tmp_path / "serve"
    build = subprocess.run(
        [CXX, "-std=c++20", f"-D_GLIBCXX_USE_CXX11_ABI={int(torch._C._GLIBCXX_USE_CXX11_ABI)}", "-O0",
         *(f"-I{p}" for p in cpp_extension.include_paths()), str(source), f'-DMY_OPS_LIBRARY="{_kernel_library()}"',
         f"-L{torch_lib}", f"-Wl,-rpath,{torch_lib}", "-Wl,--no-as-needed", "-ltorch", "-ltorch_cpu", "-lc10",
         "-ldl", "-o", str(exe)], capture_output=True, text=True, timeout=600)
    assert build.returncode == 0, build.stderr[-3000:]
    return exe


def test_docs_serve_program_checks_the_package_version(cpu_package, tmp_path):
    """The docs' program runs the package it is given (block.pt2), and refuses one
    compiled by a newer my_ops, in the words of the library it loaded."""
    serve = _docs_serve_program(tmp_path)
    major, minor, _ = _release()
    cases = [(cpu_package.path, 0, "ok\n"), (_recording(cpu_package.path, f"{major}.{minor + 1}.0", tmp_path), 1,
                                             f"the package was compiled with my_ops {major}.{minor + 1}.0, but the "
                                             f"kernel library is my_ops {my_ops.build_info.version}")]
    for package, returncode, said in cases:
        shutil.copy(package, tmp_path / "block.pt2")
        result = subprocess.run([str(serve)], cwd=tmp_path, capture_output=True, text=True, env=_library_env(),
                                timeout=300)
        assert result.returncode == returncode, f"{result.stdout}\n{result.stderr}"
        assert said in (result.stdout if returncode == 0 else result.stderr), f"{result.stdout}\n{result.stderr}"


# A call the package's fused_add_rms_norm refuses: a residual of another shape than x.
# (An exported program calls its functional form, which names itself.)
REFUSAL = "my_ops.fused_add_rms_norm_functional: expected residual to have the same shape as x"


def _extern_targets(package: Path) -> list[str]:
    """The custom ops the package's generated model calls (through torch's proxy
    executor), with their outputs, from the call list the package keeps."""
    with zipfile.ZipFile(package) as archive:
        nodes = [node for name in archive.namelist() if name.endswith(".wrapper.json")
                 for node in json.loads(archive.read(name))["nodes"]]
    return [f"{n['node']['target']} -> {len(n['node']['outputs'])}" for n in nodes]


def test_the_package_calls_fused_add_rms_norm_with_outputs(cpu_package):
    """Its generated model calls each custom op through the proxy executor, which
    only logs an op's error (torch 2.10, 2.11: the call's status is dropped); a
    refusal stops the call only by the outputs it leaves undefined. So the package
    holds fused_add_rms_norm's functional form (two outputs), not the in-place op
    (none), whose refusal would go unnoticed: docs/deploying.md."""
    assert _extern_targets(cpu_package.path) == [
        "my_ops::rms_norm -> 1", "my_ops::silu_and_mul -> 1", "my_ops::fused_add_rms_norm_functional -> 2"]
    with zipfile.ZipFile(cpu_package.path) as archive:
        source = "".join(archive.read(name).decode() for name in archive.namelist() if name.endswith(".wrapper.cpp"))
    assert source.count("aoti_torch_proxy_executor_call_function(") == 3, source[-3000:]


def test_cpp_program_fails_when_fused_add_rms_norm_refuses(runner, cpu_package, tmp_path):
    """A residual of another shape than x: the op refuses; the program fails,
    rather than write the output of a block that skipped the op."""
    x, residual = torch.randn(2, 3, HIDDEN), torch.randn(2, 4, HIDDEN)
    torch.save([x, residual], tmp_path / "inputs.pt")
    result = subprocess.run(
        [str(runner), str(_kernel_library()), str(cpu_package.path), str(tmp_path / "inputs.pt"),
         str(tmp_path / "outputs.pt"), "cpu", "2"], capture_output=True, text=True, env=_library_env(), timeout=300)
    assert result.returncode == 1, f"{result.stdout}\n{result.stderr}"
    assert REFUSAL in result.stderr, result.stderr  # my_ops' refusal, as torch logged it
    assert "call 0: ran" not in result.stdout
    assert not (tmp_path / "outputs.pt").exists()


def test_loaded_package_raises_when_fused_add_rms_norm_refuses(cpu_package, capfd):
    """The package loaded in this process: a call fused_add_rms_norm refuses
    (eagerly it raises) raises, residual untouched."""
    model = torch._inductor.aoti_load_package(str(cpu_package.path))
    x, residual = torch.randn(2, 3, HIDDEN), torch.randn(2, 4, HIDDEN)
    before = residual.clone()
    with pytest.raises(RuntimeError) as raised:
        model(x, residual)
    # (torch 2.11 logs the op's message and raises its own; accept a torch that raises the op's)
    assert REFUSAL in str(raised.value) or REFUSAL in capfd.readouterr().err
    assert torch.equal(residual, before)


def test_loaded_package_refuses_an_expanded_residual(cpu_package, capfd):
    """An expanded residual (its rows one memory): eagerly refused; in the package the
    copy back would write past its memory, so the functional form refuses it too."""
    model = torch._inductor.aoti_load_package(str(cpu_package.path))
    x, base = torch.randn(2, 3, HIDDEN), torch.randn(8 * HIDDEN)
    residual = base[:HIDDEN].expand(2, 3, HIDDEN)
    with pytest.raises(RuntimeError, match="residual is written in place, so its elements must not share memory"):
        my_ops.fused_add_rms_norm(x.clone(), residual, torch.ones(HIDDEN))
    before = base.clone()
    with pytest.raises(RuntimeError) as raised:
        model(x, residual)
    refusal = "my_ops.fused_add_rms_norm_functional: residual is written in place, so its elements must not share"
    assert refusal in str(raised.value) or refusal in capfd.readouterr().err
    assert torch.equal(base, before)


def test_loaded_package_writes_inference_tensors_as_eager_would_inside_inference_mode(cpu_package):
    """Inference tensors (a server's, made under torch.inference_mode()) passed to
    the package outside inference_mode: eagerly the op refuses to write them
    there (torch's rule for in-place updates); the package's generated code
    writes residual as plain memory, with the eager block's result."""
    model = torch._inductor.aoti_load_package(str(cpu_package.path))
    with torch.inference_mode():
        x, residual = example_inputs(2, 3)
        eager_residual = residual.clone()
        eager_out = cpu_package.block(x, eager_residual)
    want_out, want_residual = reference_forward(cpu_package.block, x, residual)
    out = model(x, residual)
    assert_matches(out, want_out, torch.float32)
    assert_matches(residual, want_residual, torch.float32)
    torch.testing.assert_close(out, eager_out, **EAGER_TOLERANCE)
    torch.testing.assert_close(residual, eager_residual, **EAGER_TOLERANCE)


# add_out, which writes out and returns nothing, in a package of its own (aoti_model.AddOutStep)
@pytest.fixture(scope="session")
def cpu_add_out_package(tmp_path_factory) -> Path:
    return compile_add_out_package(tmp_path_factory.mktemp("aoti_add_out_cpu") / "add_out.pt2")


@pytest.fixture(scope="session")
def cuda_add_out_package(tmp_path_factory) -> Path:
    if not torch.cuda.is_available():
        pytest.skip("needs a CUDA device")
    return compile_add_out_package(tmp_path_factory.mktemp("aoti_add_out_cuda") / "add_out.pt2", "cuda")


@pytest.fixture(params=["cpu", pytest.param("cuda", marks=pytest.mark.cuda)])
def add_out_package(request) -> tuple[Path, str]:
    return request.getfixturevalue(f"{request.param}_add_out_package"), request.param


def test_the_add_out_package_calls_its_functional_form(cpu_add_out_package):
    """add_out returns nothing: the package calls its functional form (one output), whose refusal stops the call."""
    assert _extern_targets(cpu_add_out_package) == ["my_ops::add_out_functional -> 1"]


def _add_out_bad_calls(device: str) -> dict:
    """Calls eager add_out refuses, with its message: (a, b, out) -> message fragment."""
    a, b, _ = add_out_inputs(4, device)
    shared = torch.randn(4 * HIDDEN + 8, device=device)
    return {
        "out float64": ((a, b, torch.zeros(4, HIDDEN, dtype=torch.float64, device=device)),
                        "expected out to have the same dtype as a (torch.float32), but got torch.float64"),
        "out a row short": ((a, b, torch.zeros(3, HIDDEN, device=device)),
                            f"expected out to have the same shape as a [4, {HIDDEN}], but got [3, {HIDDEN}]"),
        "out overlaps a": ((shared[:4 * HIDDEN].view(4, HIDDEN), b, shared[8:].view(4, HIDDEN)),
                           "out overlaps a without being the same tensor"),
        # (the copy into an expanded out would write past its memory: here into the rest of `shared`)
        "out expanded": ((a, b, shared[:HIDDEN].expand(4, HIDDEN)),
                         "out is written in place, so its elements must not share memory"),
    }


def test_loaded_add_out_package_runs_as_eager(cpu_add_out_package):
    """Valid calls, out apart or out being a: out and the output as eager's, several row counts.
    (In this process: the CPU package; the CUDA one runs from the C++ program below, as a
    fresh Python process may crash loading any package on some GPU machines.)"""
    path, device = cpu_add_out_package, "cpu"
    model = torch._inductor.aoti_load_package(str(path))
    for rows, out_is_a in [(4, False), (1, False), (37, False), (5, True)]:
        a, b, out = add_out_inputs(rows, device)
        if out_is_a:
            out = a
        want_out = a.double() + b.double()
        eager_a, eager_b, eager_out = (t.clone() for t in (a, b, out))
        eager = AddOutStep()(eager_a, eager_b, eager_a if out_is_a else eager_out)
        result = model(a, b, out)
        assert_matches(out, want_out, torch.float32)
        assert_matches(result, 2 * want_out, torch.float32)
        torch.testing.assert_close(result, eager, **EAGER_TOLERANCE)
        torch.testing.assert_close(out, eager_a if out_is_a else eager_out, **EAGER_TOLERANCE)


@pytest.mark.parametrize("case", ["out float64", "out a row short", "out overlaps a", "out expanded"])
def test_loaded_add_out_package_raises_when_add_out_refuses(cpu_add_out_package, capfd, case):
    """A call eager add_out refuses raises from the loaded package too (the
    functional form's refusal leaves its output undefined), out untouched."""
    path, device = cpu_add_out_package, "cpu"
    (a, b, out), refusal = _add_out_bad_calls(device)[case]
    with pytest.raises(RuntimeError, match=re.escape(f"my_ops.add_out: {refusal}")):
        AddOutStep()(a, b, out)  # eagerly
    model = torch._inductor.aoti_load_package(str(path))
    before = [t.clone() for t in (a, b, out)]
    with pytest.raises(RuntimeError) as raised:
        model(a, b, out)
    message = f"my_ops.add_out_functional: {refusal}"
    assert message in str(raised.value) or message in capfd.readouterr().err
    assert all(torch.equal(t, t0) for t, t0 in zip((a, b, out), before))


def test_cpp_program_runs_the_add_out_package_as_eager(runner, add_out_package, tmp_path):
    path, device = add_out_package
    inputs = [t for rows in (4, 1, 9) for t in add_out_inputs(rows)]
    torch.save(inputs, tmp_path / "inputs.pt")
    result = subprocess.run(
        [str(runner), str(_kernel_library()), str(path), str(tmp_path / "inputs.pt"),
         str(tmp_path / "outputs.pt"), device, "3"], capture_output=True, text=True, env=_library_env(), timeout=300)
    assert result.returncode == 0, f"{result.stdout}\n{result.stderr}"
    results = list(torch.load(tmp_path / "outputs.pt"))
    for call, (a, b, _) in enumerate(zip(inputs[::3], inputs[1::3], inputs[2::3])):
        output, a_after, b_after, out_after = results[4 * call:4 * call + 4]
        want = a.double() + b.double()
        assert_matches(out_after, want, torch.float32)  # written in place, as eager does
        assert_matches(output, 2 * want, torch.float32)
        assert torch.equal(a_after, a) and torch.equal(b_after, b)


def test_cpp_program_names_a_loaded_library_that_lacks_an_op(runner, cpu_add_out_package, tmp_path):
    """The library loaded, of the package's version, but without an op the package
    calls (a development build older than the package's): the hint says so,
    rather than ask to load the library."""
    package = tmp_path / "unknown_op.pt2"
    with zipfile.ZipFile(cpu_add_out_package) as source, zipfile.ZipFile(package, "w") as target:
        for entry in source.infolist():
            data = source.read(entry)
            if entry.filename.endswith(".wrapper.json"):
                data = data.replace(b"my_ops::add_out_functional", b"my_ops::add_out_from_the_future")
            target.writestr(entry, data)
    torch.save(list(add_out_inputs(2)), tmp_path / "inputs.pt")
    result = subprocess.run(
        [str(runner), str(_kernel_library()), str(package), str(tmp_path / "inputs.pt"),
         str(tmp_path / "outputs.pt"), "cpu", "3"], capture_output=True, text=True, env=_library_env(), timeout=300)
    assert result.returncode == 1, f"{result.stdout}\n{result.stderr}"
    assert "Could not find schema for my_ops::add_out_from_the_future" in result.stderr, result.stderr
    assert (f"hint: the kernel library loaded (my_ops {my_ops.build_info.version}) lacks an op the package calls"
            in result.stderr), result.stderr
    assert "before loading the package" not in result.stderr


@pytest.mark.parametrize("case", ["out float64", "out a row short"])
def test_cpp_program_fails_when_add_out_refuses(runner, add_out_package, tmp_path, case):
    """A bad out: the op refuses; the program fails, rather than return with out unwritten."""
    path, device = add_out_package
    (a, b, out), refusal = _add_out_bad_calls("cpu")[case]  # (the program moves them to the device)
    torch.save([a, b, out], tmp_path / "inputs.pt")
    result = subprocess.run(
        [str(runner), str(_kernel_library()), str(path), str(tmp_path / "inputs.pt"),
         str(tmp_path / "outputs.pt"), device, "3"], capture_output=True, text=True, env=_library_env(), timeout=300)
    assert result.returncode == 1, f"{result.stdout}\n{result.stderr}"
    assert f"my_ops.add_out_functional: {refusal}" in result.stderr, result.stderr
    assert "call 0: ran" not in result.stdout
    assert not (tmp_path / "outputs.pt").exists()


@pytest.mark.parametrize("case, check", [
    ("residual float64", "input_handles[1]: unmatched dtype"),
    ("residual transposed", "input_handles[1]: unmatched stride value"),
    ("batch 1", "input_handles[0]: dim value is too small at 0, expected it to be >= 2, but got: 1")])
def test_runtime_input_checks_fail_before_any_op(cpu_package, capfd, monkeypatch, case, check):
    """AOTI_RUNTIME_CHECK_INPUTS=1 (docs/deploying.md, "Checking a package's
    inputs"): a bad input fails in the package's own checks, before any op; a
    valid batch of 1 too (the checks take export's range, from 2)."""
    monkeypatch.setenv("AOTI_RUNTIME_CHECK_INPUTS", "1")
    model = torch._inductor.aoti_load_package(str(cpu_package.path))
    x, residual = example_inputs(1 if case == "batch 1" else 2, 3)
    if case == "residual float64":
        residual = residual.double()
    elif case == "residual transposed":
        residual = residual.transpose(0, 1).contiguous().transpose(0, 1)
    before = residual.clone()
    with pytest.raises(RuntimeError) as error:
        model(x, residual)
    err = capfd.readouterr().err
    # (torch 2.11, 2.12 and 2.14 log the check and throw run_func_'s generic error; 2.13 and 2.15 the check's)
    assert check in err and ("run_func_" in str(error.value) or check in str(error.value)), (error.value, err)
    assert "my_ops." not in err, err  # no op ran (none refused)
    assert torch.equal(residual, before)


FRESH_PROCESS = Path(__file__).with_name("aoti_fresh_process.py")


def _fresh_python(package: Package, tmp_path: Path, device: str | None = None, *options: str):
    """aoti_fresh_process.py: a fresh Python process (as a user's: `import my_ops`,
    then the package) that prints each step; -X faulthandler: a crash shows where."""
    inputs = package.inputs()
    torch.save(inputs, tmp_path / "inputs.pt")
    result = subprocess.run([sys.executable, "-X", "faulthandler", str(FRESH_PROCESS), str(package.path),
                             str(tmp_path / "inputs.pt"), str(tmp_path / "outputs.pt"), device or package.device,
                             *options], capture_output=True, text=True, timeout=600, cwd=tmp_path)
    return result, inputs


# A package of plain torch (one Linear, no my_ops), loaded and run the same way.
PLAIN_PACKAGE_PROCESS = textwrap.dedent("""
    import sys
    import torch

    model = torch._inductor.aoti_load_package(sys.argv[1])
    print(tuple(model(torch.randn(2, 8, device=sys.argv[2])).shape))
""")


def _excuse_a_crash_torch_shares(result: subprocess.CompletedProcess, device: str, tmp_path: Path) -> None:
    """A fresh process that died of a signal: load a package of plain torch the
    same way. Where that dies too, the crash is torch's own loader in this Python,
    not my_ops: an expected failure, saying so. (Seen on a GPU machine, torch
    2.11.0+cu130 with Ubuntu's Python 3.12.3: every package, a plain torch one
    too, died of SIGSEGV in AOTInductorModel's constructor, in the std::regex of
    the package's own parse_device_str; the C++ program ran the same packages.)
    That crash comes while loading: a process that got past the load (its
    `step: loaded` line) and then died is not excused. On that machine a
    my_ops wheel compiled there with its g++ 13 died alike in Python (its
    number formatting), while the same code compiled on Debian's g++ 12 ran,
    and preloading the libstdc++ of that g++ fixed it: code compiled there
    with torch imported first meets other C++ library symbols than it was
    built against. Anything else fails the test as it is."""
    if result.returncode >= 0 or re.search(r"^step: loaded ", result.stdout, re.MULTILINE):
        return
    plain = torch.nn.Linear(8, 8, device=device).eval()
    with torch.no_grad():
        program = torch.export.export(plain, (torch.randn(2, 8, device=device),))
        path = torch._inductor.aoti_compile_and_package(program, package_path=str(tmp_path / "plain.pt2"))
    control = subprocess.run([sys.executable, "-X", "faulthandler", "-c", PLAIN_PACKAGE_PROCESS, path, device],
                             capture_output=True, text=True, timeout=600, cwd=tmp_path)
    if control.returncode < 0:
        pytest.xfail(f"a package of plain torch, without my_ops, dies of signal {-control.returncode} too in a "
                     "fresh Python process here: torch's AOTInductor loader, not my_ops:\n" + control.stderr[-1500:])


def test_fresh_python_process_runs_the_package_after_import_my_ops(package, tmp_path):
    result, inputs = _fresh_python(package, tmp_path)
    _excuse_a_crash_torch_shares(result, package.device, tmp_path)
    assert result.returncode == 0, f"{result.stdout}\n{result.stderr[-3000:]}"
    package.check(torch.load(tmp_path / "outputs.pt"), inputs)


def test_fresh_python_process_without_import_my_ops_is_told_the_op(cpu_package, tmp_path):
    """torch's message names the my_ops op it cannot find (after logging "Loading
    outdated pt2 file", its guess for any failed load): docs/deploying.md."""
    result, _ = _fresh_python(cpu_package, tmp_path, None, "--no-import-my-ops")
    assert result.returncode == 3, f"{result.stdout}\n{result.stderr[-3000:]}"
    assert re.search(r"refused: .*Could not find schema for my_ops::\w+", result.stdout), result.stdout
    assert not (tmp_path / "outputs.pt").exists()


TWO_GPUS = pytest.mark.skipif(torch.cuda.device_count() < 2,
                              reason="a package compiled on cuda:0 run on cuda:1: needs two CUDA devices")


@pytest.mark.cuda
@TWO_GPUS
def test_cpp_program_runs_the_cuda_package_on_the_second_gpu(runner, cuda_package, tmp_path):
    """Compiled on cuda:0, loaded with AOTIModelPackageLoader(..., device_index=1),
    inputs on cuda:1: the eager block's outputs on cuda:1."""
    result, inputs = _run_cpp(runner, str(_kernel_library()), cuda_package, tmp_path, "cuda:1")
    assert result.returncode == 0, f"{result.stdout}\n{result.stderr}"
    assert result.stdout.count("ran on cuda:1, output on cuda:1\n") == len(SHAPES), result.stdout
    cuda_package.check(list(torch.load(tmp_path / "outputs.pt")), inputs, "cuda:1")


@pytest.mark.cuda
@TWO_GPUS
def test_fresh_python_process_runs_the_cuda_package_on_the_second_gpu(cuda_package, tmp_path):
    """Compiled on cuda:0, aoti_load_package(..., device_index=1), inputs on cuda:1:
    the eager block's outputs on cuda:1."""
    result, inputs = _fresh_python(cuda_package, tmp_path, "cuda:1", "--device-index", "1")
    _excuse_a_crash_torch_shares(result, "cuda", tmp_path)
    assert result.returncode == 0, f"{result.stdout}\n{result.stderr[-3000:]}"
    calls = re.findall(r"^step: call \d+: \S+ on (\S+) -> \S+ on (\S+)$", result.stdout, re.MULTILINE)
    assert calls == [("cuda:1", "cuda:1")] * len(SHAPES), result.stdout
    cuda_package.check(torch.load(tmp_path / "outputs.pt"), inputs, "cuda:1")


def test_compiling_with_grad_on_names_the_fix(cpu_package):
    """Compiling runs the ops on fake tensors; with grad mode on, the mutating op
    refuses the weight that requires grad, and says to use torch.no_grad()."""
    batch = torch.export.Dim("batch", min=1, max=8)
    with torch.no_grad():
        program = torch.export.export(cpu_package.block, example_inputs(2, 3), dynamic_shapes=({0: batch},) * 2)
    # (the exported program calls the op's functional form, which names itself)
    with pytest.raises(RuntimeError, match=r"my_ops.fused_add_rms_norm_functional: argument 'weight' requires grad.*"
                                           r"call it under torch.no_grad\(\)"):
        torch._inductor.aoti_compile_and_package(program)


def _cmake() -> str:
    cmake = shutil.which("cmake", path=str(Path(sys.executable).parent)) or shutil.which("cmake")
    if cmake is None:
        pytest.skip("needs CMake")
    return cmake


def _configure(project: Path, prefixes: list[Path], *options: str) -> subprocess.CompletedProcess:
    return subprocess.run([_cmake(), "-S", str(project), "-B", str(project / "build"),
                           f"-DCMAKE_PREFIX_PATH={';'.join(map(str, prefixes))}", *options],
                          capture_output=True, text=True, timeout=300)


def test_cmake_finds_the_kernel_library(tmp_path):
    """find_package(my_ops) with the prefix `python -m my_ops --cmake-prefix` prints;
    a version or a range (CMake >= 3.19) as the compatibility policy reads them."""
    library = _kernel_library()
    version = my_ops.__version__.split("+")[0]
    major = int(version.split(".")[0])
    # (what is asked, whether this version is accepted)
    asks = [(version, 1), (f"{major}.0", 1), (f"{major}.0 EXACT", 0), (version + " EXACT", 1), ("999", 0),
            (f"{major + 1}.0", 0), (f"{major}.0...<{major + 1}", 1), (f"0.1...<{major}", 0),
            (f"0.1...{version}", 1), (f"0.1...<{version}", 0), (f"{major}.0...{major + 2}.0", 1)]
    if version == f"{major}.0.0":  # (else 1.0 EXACT is another version, and is refused)
        asks[2] = (f"{major}.0 EXACT", 1)
    (tmp_path / "CMakeLists.txt").write_text(textwrap.dedent(f"""
        cmake_minimum_required(VERSION 3.19)
        project(find_my_ops LANGUAGES NONE)
        find_package(my_ops {version} REQUIRED)
        get_target_property(location my_ops::my_ops IMPORTED_LOCATION)
        message(STATUS "library=${{my_ops_LIBRARY}}|target=${{location}}|version=${{my_ops_VERSION}}|"
                       "cuda=${{my_ops_CUDA_VERSION}}|torch=${{my_ops_TORCH_VERSION}}")
    """) + "".join(f'find_package(my_ops {ask} QUIET)\nmessage(STATUS "ask {ask}: found=${{my_ops_FOUND}}")\n'
                   for ask, _ in asks))
    result = _configure(tmp_path, [library.parent])
    assert result.returncode == 0, result.stdout + result.stderr
    info = my_ops.build_info
    assert (f"library={library}|target={library}|version={info.version.split('+')[0]}|cuda={info.cuda_version}|"
            f"torch={info.torch_version}") in result.stdout
    for ask, accepted in asks:
        assert f"ask {ask}: found={accepted}" in result.stdout, (ask, result.stdout)


TORCH_MACROS = Path(torch.__file__).parent / "include/caffe2/core/macros.h"


def _fake_torch(prefix: Path, version: str, cuda: str | None) -> Path:
    """A Torch CMake package as find_package(Torch) leaves it for my_ops' check:
    TORCH_INSTALL_PREFIX, its version file, and its headers' build strings (the
    installed torch's caffe2/core/macros.h with this version and CUDA)."""
    text = TORCH_MACROS.read_text() if TORCH_MACROS.is_file() else ""
    for key, value in [("TORCH_VERSION", version), ("USE_CUDA", "ON" if cuda else "OFF"),
                       ("CUDA_VERSION", cuda or "")]:
        text, count = re.subn(rf'\{{"{key}", "[^"]*"\}}', f'{{"{key}", "{value}"}}', text)
        if count != 1:
            pytest.skip(f"this torch's {TORCH_MACROS.name} does not record {key} as expected")
    (prefix / "include/caffe2/core").mkdir(parents=True)
    (prefix / "include/caffe2/core/macros.h").write_text(text)
    config = prefix / "share/cmake/Torch"
    config.mkdir(parents=True)
    (config / "TorchConfig.cmake").write_text(
        'get_filename_component(TORCH_INSTALL_PREFIX "${CMAKE_CURRENT_LIST_DIR}/../../.." ABSOLUTE)\n')
    (config / "TorchConfigVersion.cmake").write_text(
        f'set(PACKAGE_VERSION "{version}")\nset(PACKAGE_VERSION_COMPATIBLE TRUE)\n')
    return prefix


def _torch_cases() -> list:
    """(Torch version, its CUDA, what my_ops' check says or None when it passes)."""
    info = my_ops.build_info
    lower = info.torch_range[0]
    this = (torch.__version__.split("+")[0], torch.version.cuda, None)
    cases = [pytest.param(*this, id="this-torch"),
             pytest.param(f"{lower[0]}.{lower[1] - 1}.0", torch.version.cuda,
                          f"it serves torch >= {lower[0]}.{lower[1]}", id="older-minor")]
    if info.has_cuda:
        major = int(info.cuda_version.split(".")[0])
        other = "12.8" if major != 12 else "13.0"
        cases += [pytest.param(this[0], None, "this Torch is a CPU-only build", id="cpu-only-torch"),
                  pytest.param(this[0], other, f"but this Torch uses CUDA {other} (another CUDA major version)",
                               id="other-cuda-major")]
    return cases


@pytest.mark.parametrize("torch_version, torch_cuda, problem", _torch_cases())
@pytest.mark.parametrize("order", ["torch-first", "torch-after"])
def test_cmake_refuses_a_torch_the_library_does_not_serve(tmp_path, torch_version, torch_cuda, problem, order):
    """find_package(my_ops) beside find_package(Torch), in either order: a Torch
    the kernel library does not serve stops configuring, naming the fix."""
    library = _kernel_library()
    fake = _fake_torch(tmp_path / "torch", torch_version, torch_cuda)
    finds = ["find_package(Torch REQUIRED)", "find_package(my_ops REQUIRED)"]
    (tmp_path / "project").mkdir()
    (tmp_path / "project/CMakeLists.txt").write_text(textwrap.dedent("""
        cmake_minimum_required(VERSION 3.19)
        project(serve LANGUAGES NONE)
    """) + "\n".join(finds if order == "torch-first" else finds[::-1]) + '\nmessage(STATUS "configured")\n')
    result = _configure(tmp_path / "project", [fake, library.parent])
    if problem is None:
        assert result.returncode == 0, result.stdout + result.stderr
        assert "-- configured" in result.stdout
        return
    assert result.returncode != 0, result.stdout
    message = " ".join(result.stderr.split())  # (CMake wraps its messages)
    assert f"does not fit the Torch this project found, torch {torch_version}" in message, message
    assert problem in message, message
    assert "$(python -m my_ops --cmake-prefix)" in message, message
    skipped = _configure(tmp_path / "project", [fake, library.parent], "-Dmy_ops_SKIP_TORCH_CHECK=ON")
    assert skipped.returncode == 0, skipped.stdout + skipped.stderr


def test_cmake_says_when_torch_is_found_elsewhere(tmp_path):
    """my_ops found at the top, Torch (one the library does not serve) only in a
    subdirectory: the check cannot see it, and says so instead of passing silently."""
    library = _kernel_library()
    lower = my_ops.build_info.torch_range[0]
    fake = _fake_torch(tmp_path / "torch", f"{lower[0]}.{lower[1] - 1}.0", torch.version.cuda)
    (tmp_path / "project/sub").mkdir(parents=True)
    (tmp_path / "project/CMakeLists.txt").write_text(textwrap.dedent("""
        cmake_minimum_required(VERSION 3.19)
        project(serve LANGUAGES NONE)
        find_package(my_ops REQUIRED)
        add_subdirectory(sub)
        message(STATUS "configured")
    """))
    (tmp_path / "project/sub/CMakeLists.txt").write_text("find_package(Torch REQUIRED)\n")
    result = _configure(tmp_path / "project", [fake, library.parent])
    assert result.returncode == 0, result.stdout + result.stderr
    message = " ".join(result.stderr.split())
    assert "was not checked against your Torch" in message, message
    assert "find_package(Torch) beside find_package(my_ops)" in message, message
