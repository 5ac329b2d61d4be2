"""Building the same commit twice gives byte-identical wheels."""

from __future__ import annotations

import hashlib
import os
import subprocess
import sys
from pathlib import Path

import pytest

import my_ops

ROOT = Path(__file__).resolve().parents[2]
# Release and verification steps run on the workflows' Linux runners (bash, nm,
# readelf, sha256sum, symlinks); the Windows and macOS test jobs skip them.
pytestmark = pytest.mark.skipif(not sys.platform.startswith("linux"), reason="a Linux-runner step")


@pytest.mark.skipif(subprocess.run(["git", "-C", str(ROOT), "rev-parse", "--verify", "--quiet", "HEAD"],
                                   capture_output=True).returncode != 0,
                    reason="needs a git checkout with a commit (the build date is the commit's)")
def test_two_clean_builds_are_byte_identical(tmp_path):
    pytest.importorskip("scikit_build_core", reason="needs the build tools of ci/lib/requirements.txt")
    env = dict(os.environ)
    env.pop("SOURCE_DATE_EPOCH", None)  # ci/build/build-wheel.sh takes the commit's time
    if my_ops.build_info.has_cuda:
        env["TORCH_CUDA_ARCH_LIST"] = "8.0;9.0+PTX"  # two targets keep the test short; SASS and PTX both
    else:
        env["MY_OPS_CUDA"] = "OFF"
    digests = []
    for attempt in ("first", "second"):
        env["MY_OPS_BUILD_DIR"] = str(tmp_path / f"build-{attempt}")  # nothing reused between the two
        out = tmp_path / attempt
        result = subprocess.run(["bash", str(ROOT / "ci/build/build-wheel.sh"), "--out", str(out), "--python",
                                 sys.executable], capture_output=True, text=True, env=env, cwd=ROOT, timeout=1200)
        assert result.returncode == 0, result.stdout[-3000:] + result.stderr[-3000:]
        (wheel,) = out.glob("my_ops-*.whl")
        digests.append((wheel.name, hashlib.sha256(wheel.read_bytes()).hexdigest()))
    assert digests[0] == digests[1]
