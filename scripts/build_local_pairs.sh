#!/usr/bin/env bash
# Build, repair, verify and CPU-test the wheels of several pairs on this
# Linux host with the ci/ scripts the workflows run (ci/build/build-pair.sh, then
# ci/test/test-wheel.sh). Each pair's wheel is the one of the build that serves it
# (built once); a CUDA version other than the system toolkit's gets a toolkit
# assembled by scripts/local_toolkit.py. Takes a while: each build installs
# its torch, and each pair a fresh test environment with its own torch.
#
#   scripts/build_local_pairs.sh [PAIR ...]     default: 2.11-cu130 2.13-cu130 2.15-cu132 2.6-cu124
#
# Output: wheelhouse/<build>/ (the wheel, verify.json), wheelhouse/<build>.build.log,
# wheelhouse/<pair>.test.log and wheelhouse/summary.txt.
set -euo pipefail
cd "$(dirname "$0")/.."

pairs=("$@")
[ ${#pairs[@]} -gt 0 ] || pairs=(2.11-cu130 2.13-cu130 2.15-cu132 2.6-cu124)
system_cuda=$(/usr/local/cuda/bin/nvcc --version 2>/dev/null | sed -n 's/.*release \([0-9]*\.[0-9]*\).*/\1/p' || true)
mkdir -p wheelhouse
summary=wheelhouse/summary.txt
: >"$summary"

built=" "
for pair in "${pairs[@]}"; do
    echo "==================== $pair"
    build=$(python3 build_support/matrix.py build "$pair" --field name)
    if [[ "$built" != *" $build "* ]]; then
        cuda=$(python3 build_support/matrix.py build "$build" --field cuda)
        if [ "$cuda" = "$system_cuda" ]; then
            cuda_home=/usr/local/cuda
        else
            cuda_home=$(python3 scripts/local_toolkit.py --cuda "$cuda")
        fi
        # This host is not a manylinux_2_28 system: take the tag auditwheel allows here.
        CUDA_HOME=$cuda_home CUDACXX=$cuda_home/bin/nvcc \
            ci/build/build-pair.sh --build "$build" --out wheelhouse --platform-tag auto 2>&1 |
            tee "wheelhouse/$build.build.log" | tail -n 1 | tee -a "$summary"
        built="$built$build "
    fi
    wheel=$(ci/lib/newest-wheel.sh "wheelhouse/$build")
    ci/test/test-wheel.sh "$wheel" --pair "$pair" 2>&1 | tee "wheelhouse/$pair.test.log" | tail -n 3
    echo "   $pair (wheel $build) CPU tests in a fresh venv: $(tail -n 1 "wheelhouse/$pair.test.log")" >>"$summary"
done
echo "==================== summary"
cat "$summary"
