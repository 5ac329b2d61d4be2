#!/usr/bin/env bash
# Check that the CUDA toolkit a build will use is complete: nvcc runs, and
# the headers every .cu file includes are there (cuda_fp16.h includes CCCL's
# <nv/target>), so a partial install fails here, in one clear line, instead
# of in the middle of the build. The toolkit: CUDA_HOME, CUDA_PATH, or nvcc on PATH.
set -euo pipefail

root=${CUDA_HOME:-${CUDA_PATH:-}}
if [ -z "$root" ]; then
    nvcc=$(command -v nvcc) || { echo "$0: no CUDA toolkit: set CUDA_HOME or put nvcc on PATH" >&2; exit 1; }
    root=$(dirname "$(dirname "$nvcc")")
fi
root=${root//\\//}
"$root/bin/nvcc" --version | tail -n 2
missing=()
for header in cuda_runtime.h cuda_fp16.h cuda_bf16.h nv/target; do
    found=''
    for include in "$root/include" "$root/include/cccl"; do
        [ -e "$include/$header" ] && found=yes
    done
    [ -n "$found" ] || missing+=("$header")
done
if [ ${#missing[@]} -gt 0 ]; then
    echo "$0: the CUDA toolkit at $root lacks ${missing[*]} (install its CCCL/thrust component)" >&2
    exit 1
fi
echo "CUDA toolkit at $root: complete"
