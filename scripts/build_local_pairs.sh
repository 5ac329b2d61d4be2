#!/usr/bin/env bash
# Build, repair, verify and CPU-test the wheels of several pairs on this
# Linux host with the ci/ scripts the workflows run (ci/build-pair.sh, then
# ci/test-wheel.sh). A pair whose CUDA version is not the system toolkit's
# gets a toolkit assembled from PyPI (scripts/local_toolkit.py). Takes a
# while: each pair installs its torch twice (build environment, fresh test
# environment).
#
#   scripts/build_local_pairs.sh [PAIR ...]     default: 2.11-cu130 2.13-cu130 2.15-cu132 2.6-cu124
#
# Output: wheelhouse/<pair>/ (the wheel, verify.json, test.log),
# wheelhouse/<pair>.build.log and wheelhouse/summary.txt.
set -euo pipefail
cd "$(dirname "$0")/.."

pairs=("$@")
[ ${#pairs[@]} -gt 0 ] || pairs=(2.11-cu130 2.13-cu130 2.15-cu132 2.6-cu124)
system_cuda=$(/usr/local/cuda/bin/nvcc --version 2>/dev/null | sed -n 's/.*release \([0-9]*\.[0-9]*\).*/\1/p' || true)
mkdir -p wheelhouse
summary=wheelhouse/summary.txt
: >"$summary"

for pair in "${pairs[@]}"; do
    echo "==================== $pair"
    cuda=$(python3 scripts/matrix.py pair "$pair" --field cuda)
    if [ "$cuda" = "$system_cuda" ]; then
        cuda_home=/usr/local/cuda
    else
        cuda_home=$(python3 scripts/local_toolkit.py --cuda "$cuda")
    fi
    # This host is not a manylinux_2_28 system: take the tag auditwheel allows here.
    CUDA_HOME=$cuda_home CUDACXX=$cuda_home/bin/nvcc \
        ci/build-pair.sh --pair "$pair" --out wheelhouse --platform-tag auto 2>&1 |
        tee "wheelhouse/$pair.build.log" | tail -n 1 | tee -a "$summary"
    wheel=$(ci/newest-wheel.sh "wheelhouse/$pair")
    ci/test-wheel.sh "$wheel" --pair "$pair" 2>&1 | tee "wheelhouse/$pair/test.log" | tail -n 3
    echo "   $pair CPU tests in a fresh venv: $(tail -n 1 "wheelhouse/$pair/test.log")" >>"$summary"
done
echo "==================== summary"
cat "$summary"
