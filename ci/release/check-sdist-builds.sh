#!/usr/bin/env bash
# Build the release's sdist into a wheel as a user without a CUDA toolkit
# would (`pip install --no-build-isolation --no-binary my_ops my_ops`: the
# CPU kernels), install it into a scratch folder and run an op from it against
# a float64 reference, before anything is published: PyPI's sdist must build.
#
#   ci/release/check-sdist-builds.sh SDIST [--python .venv/bin/python]
#
# PYTHON (or --python) has torch and the build tools (ci/lib/setup-venv.sh).
set -euo pipefail
cd "$(dirname "$0")/../.."

[ $# -ge 1 ] || { echo "usage: $0 SDIST [--python PYTHON]" >&2; exit 2; }
sdist=$(cd "$(dirname "$1")" && pwd)/$(basename "$1")
shift
python=${PYTHON:-.venv/bin/python}
while [ $# -gt 0 ]; do
    case "$1" in
        --python) python=$2; shift 2 ;;
        *) echo "unknown argument $1" >&2; exit 2 ;;
    esac
done
python=$(cd "$(dirname "$python")" && pwd)/$(basename "$python")

scratch=$(mktemp -d)
trap 'rm -rf "$scratch"' EXIT
echo "== building $(basename "$sdist") into a wheel (CPU kernels, no toolkit)"
# MY_OPS_CUDA=OFF: the CPU build even where a toolkit happens to be installed
MY_OPS_CUDA=OFF "$python" -m pip wheel --quiet --no-build-isolation --no-deps --no-cache-dir \
    --wheel-dir "$scratch/wheels" "$sdist"
wheel=$(ls "$scratch"/wheels/my_ops-*.whl)
"$python" -m pip install --quiet --no-deps --target "$scratch/site" "$wheel"
echo "== $(basename "$wheel") installed; importing it"
(cd "$scratch" && PYTHONPATH="$scratch/site" "$python" - <<'PY'
import torch

import my_ops

assert my_ops.__file__.startswith(__import__("os").getcwd()), my_ops.__file__
assert not my_ops.build_info.has_cuda and my_ops.build_info.label == "", my_ops.build_info
x = torch.randn(64, 256, dtype=torch.float64)
w = torch.rand(256, dtype=torch.float64) + 0.5
want = x * torch.rsqrt(x.pow(2).mean(-1, keepdim=True) + 1e-6) * w
torch.testing.assert_close(my_ops.rms_norm(x, w, 1e-6), want, rtol=1e-12, atol=1e-12)
print(f"== my_ops {my_ops.build_info.version} from the sdist: rms_norm matches the float64 reference")
PY
)
