#!/usr/bin/env bash
# The GPU job: install a built wheel (no dependencies: the machine's torch
# stays) and run the whole suite with every CUDA test required to run.
#
#   ci/test/test-gpu.sh [WHEEL] [-- pytest args]
# Environment: PYTHON (default python3); PAIR (e.g. 2.13-cu130): the torch
# installed must be that pair's, checked before any test; MY_OPS_SANITIZE=1 also runs the CUDA
# tests of three modules under compute-sanitizer memcheck;
# MY_OPS_FOREIGN_ARCH_WHEEL, a wheel built without this GPU's SM (e.g.
# TORCH_CUDA_ARCH_LIST=8.0 on a Hopper runner), enables the end-to-end test
# of the "no kernels for this GPU" error.
set -euo pipefail
cd "$(dirname "$0")/../.."

python=${PYTHON:-python3}
wheel=${1:-}
[ $# -gt 0 ] && shift
[ "${1:-}" = "--" ] && shift
if [ -z "$wheel" ]; then
    wheel=$(ci/lib/newest-wheel.sh dist)
fi
# (the venv's Python reads the matrix too: the runner's own may lack tomllib)
[ -z "${PAIR:-}" ] || MATRIX_PYTHON=$python ci/test/check-torch.sh "$python" "$PAIR"
"$python" -m pip install --quiet --no-deps --force-reinstall "$wheel"
# The driver must run the wheel's CUDA: say so plainly, before any test fails
# with "CUDA driver version is insufficient".
(cd / && "$python" - <<'PY'
import sys

import torch

from my_ops import __main__ as info, _build_info

assert torch.cuda.is_available(), "ci/test/test-gpu.sh needs a CUDA device"
for i in range(torch.cuda.device_count()):
    print("GPU", i, torch.cuda.get_device_name(i), torch.cuda.get_device_capability(i))
build = _build_info.load()
driver = info._cuda_driver_version()
needed = int(build.cuda_version.split(".")[0])
print(f"driver supports CUDA {driver // 1000}.{driver % 1000 // 10}; the wheel was built with CUDA {build.cuda_version}")
if driver // 1000 < needed:
    sys.exit(f"this machine's NVIDIA driver supports CUDA {driver // 1000}.{driver % 1000 // 10}, but the wheel "
             f"needs a driver for CUDA {needed}.x: update the driver of this GPU runner")
PY
)
(cd /tmp && "$python" -m my_ops)
# no path given: pyproject.toml's testpaths (tests/ops/, tests/packaging/, tests/benchmarks/)
MY_OPS_REQUIRE_CUDA=1 "$python" -m pytest -q -rs -p no:cacheprovider "$@"
if [ "${MY_OPS_SANITIZE:-0}" = "1" ]; then
    # (no caching allocator: an access past a tensor but inside a cached block would go unseen)
    PYTORCH_NO_CUDA_MEMORY_CACHING=1 compute-sanitizer --tool memcheck --error-exitcode 1 --target-processes all \
        "$python" -m pytest tests/ops/test_rms_norm.py tests/ops/test_act_and_mul.py \
        tests/ops/test_fp8.py -q -x \
        -p no:cacheprovider -k "cuda and not opcheck and not gradcheck"
fi
