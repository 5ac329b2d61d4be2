"""ci/plan/check-sources.py reads which CUDA PyPI's plain torch was built with, from the
metadata of its wheels (PEP 658), and compares it with matrix.toml's `pypi_cuda`.

The fixtures (tests/packaging/fixtures/torch_metadata/) are the Name, Version and
Requires-Dist lines of PyPI's own torch 2.10.0, 2.11.0 and 2.15.0 Linux x86_64
wheels, as installed from PyPI; a server on 127.0.0.1 serves them as PyPI does."""

from __future__ import annotations

import http.server
import importlib.util
import sys
import threading
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
FIXTURES = ROOT / "tests/packaging/fixtures/torch_metadata"
RECORDED = {p.name.removeprefix("torch-").removesuffix(".METADATA"): p.read_text() for p in FIXTURES.iterdir()}
sys.path.insert(0, str(ROOT / "build_support"))
import matrix  # noqa: E402


@pytest.fixture
def pypi(monkeypatch):
    """A PyPI simple page for torch (one Linux x86_64 wheel per version) with PEP 658 metadata."""
    metadata = dict(RECORDED)

    class Handler(http.server.BaseHTTPRequestHandler):
        def do_GET(self):  # noqa: N802
            if self.path == "/simple/torch/":
                links = "".join(f'<a href="../../packages/torch-{v}-cp312-cp312-manylinux_2_28_x86_64.whl#sha256='
                                f'{"0" * 64}" data-core-metadata="sha256={"1" * 64}">x</a>\n' for v in metadata)
                body = f"<html><body>{links}</body></html>".encode()
            elif self.path.startswith("/packages/torch-") and self.path.endswith(".whl.metadata"):
                body = metadata[self.path.split("-")[1]].encode()
            else:
                self.send_response(404)
                self.end_headers()
                return
            self.send_response(200)
            self.end_headers()
            self.wfile.write(body)

        def log_message(self, *args):
            pass

    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    monkeypatch.setenv("PYPI_SIMPLE_URL", f"http://127.0.0.1:{server.server_address[1]}/simple")
    spec = importlib.util.spec_from_file_location("check_sources", ROOT / "ci/plan/check-sources.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    module.metadata = metadata  # the tests change what the server answers through this
    yield module
    server.shutdown()


@pytest.mark.parametrize("version,cuda,requirement", [
    ("2.10.0", "12.8", "nvidia-cuda-runtime-cu12==12.8.90"),
    ("2.11.0", "13.0", "cuda-toolkit[cublas,cudart,cufft,cufile,cupti,curand,cusolver,cusparse,nvjitlink,nvrtc,"
                       "nvtx]==13.0.2"),
    ("2.15.0", "13.2", "cuda-toolkit[cublas,cudart,cufft,cufile,cupti,cusolver,cusparse,nvjitlink,nvrtc,nvtx]"
                       "==13.2.2"),
])
def test_cuda_read_from_recorded_metadata(pypi, version, cuda, requirement):
    assert pypi.cuda_of_metadata(RECORDED[version]) == (cuda, requirement)


def test_cpu_metadata_has_no_cuda(pypi):
    cpu = "\n".join(line for line in RECORDED["2.11.0"].splitlines()
                    if not line.startswith("Requires-Dist: cuda-") and "nvidia" not in line)
    assert pypi.cuda_of_metadata(cpu) is None


@pytest.mark.parametrize("version", sorted(RECORDED))
def test_matrix_pypi_cuda_matches_pypis_torch(pypi, version):
    """matrix.toml's pypi_cuda agrees with what PyPI's torch really requires."""
    minor = ".".join(version.split(".")[:2])
    spec = matrix.load()["torch"][minor]
    assert spec["build_version"] == version
    assert pypi.pypi_cuda_problem(minor, version, spec["pypi_cuda"]) is None


def test_a_wrong_pypi_cuda_is_named_with_the_fix(pypi):
    problem = pypi.pypi_cuda_problem("2.10", "2.10.0", "13.0")
    assert problem is not None
    assert "built with CUDA 12.8 (nvidia-cuda-runtime-cu12==12.8.90)" in problem
    assert 'set [torch."2.10"] pypi_cuda = "12.8"' in problem


def test_a_cpu_torch_on_pypi_is_refused(pypi):
    pypi.metadata["2.11.0"] = "\n".join(line for line in RECORDED["2.11.0"].splitlines()
                                        if not line.startswith("Requires-Dist: cuda-"))
    problem = pypi.pypi_cuda_problem("2.11", "2.11.0", "13.0")
    assert problem is not None and "a CPU build" in problem


def test_a_missing_release_is_named(pypi):
    problem = pypi.pypi_cuda_problem("2.16", "2.16.0", "13.2")
    assert problem is not None and "torch 2.16.0" in problem


def test_every_pypi_torch_of_the_matrix_is_checked(pypi):
    """Each torch minor a push run installs from PyPI has its CUDA checked."""
    checked = {minor for minor, _, _ in pypi.pypi_torches("push")}
    assert checked == set(matrix.load()["torch"])
