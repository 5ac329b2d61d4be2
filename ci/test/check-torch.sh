#!/usr/bin/env bash
# Fail unless PYTHON's torch is the one a pair names (its minor and its CUDA
# version): a test job that installed another variant would pass silently.
#
#   ci/test/check-torch.sh PYTHON PAIR
set -euo pipefail
cd "$(dirname "$0")/../.."

python=${1:?usage: $0 PYTHON PAIR} pair=${2:?usage: $0 PYTHON PAIR}
matrix_python=${MATRIX_PYTHON:-python3}  # one that runs build_support/matrix.py (3.11+, or with tomli)
want_torch=$("$matrix_python" build_support/matrix.py pair "$pair" --field torch)
want_cuda=$("$matrix_python" build_support/matrix.py pair "$pair" --field cuda)
read -r got_torch got_cuda < <("$python" -c '
import torch
print(".".join(torch.__version__.split("+")[0].split(".")[:2]), torch.version.cuda or "none")')
got_cuda=$(echo "$got_cuda" | cut -d. -f1-2)
[ "$got_cuda" = none ] && got_cuda=cpu  # a CPU-only torch: the pairs' "cpu" backend
if [ "$got_torch" != "$want_torch" ] || [ "$got_cuda" != "$want_cuda" ]; then
    echo "$0: pair $pair needs torch $want_torch with CUDA $want_cuda, but $python has torch $got_torch with CUDA $got_cuda" >&2
    exit 1
fi
echo "== torch $got_torch, CUDA $got_cuda: the torch of $pair"
