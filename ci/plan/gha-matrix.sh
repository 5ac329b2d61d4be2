#!/usr/bin/env bash
# The matrices of the wheels workflow's jobs for one GitHub event, as
# `job=JSON` lines appended to $GITHUB_OUTPUT (printed when it is unset), and
# `gpu-tests=N`, the number of GPU test jobs (0 in a fork: GITHUB_REPOSITORY).
# First checks that every torch wheel and builder image the run will use
# exists (ci/plan/check-sources.py), and pins each image to the digest it has now.
#
#   EVENT=pull_request ci/plan/gha-matrix.sh
set -euo pipefail
cd "$(dirname "$0")/../.."

event=${EVENT:-push}
output=${GITHUB_OUTPUT:-/dev/stdout}
images=$(mktemp)
trap 'rm -f "$images"' EXIT
python3 ci/plan/check-sources.py --event "$event" --images-out "$images"
echo "builder images (pinned for this run):"
cat "$images"
for job in build-linux build-windows build-macos test-cpu test-gpu; do
    matrix=$(python3 build_support/matrix.py gha --event "$event" --job "$job" --images "$images")
    echo "${job}=${matrix}" >>"$output"
    [ "$job" = test-gpu ] && test_gpu=$matrix
done
# how many GPU test jobs the run has (gpu-guard runs only if any), read from
# the JSON rather than compared with its text
gpu_tests=$(printf '%s' "$test_gpu" | python3 -c 'import json, sys; print(len(json.load(sys.stdin)["include"]))')
# A fork (GITHUB_REPOSITORY, set on every runner, is not matrix.toml's repository) has
# neither the GPU runner nor PREFLIGHT_TOKEN: gpu-guard would fail its pushes to main,
# and GPU jobs would wait for a runner that never comes. None there.
canonical=$(python3 build_support/matrix.py default repository)
if [ -n "${GITHUB_REPOSITORY:-}" ] && [ "$GITHUB_REPOSITORY" != "$canonical" ]; then
    echo "$GITHUB_REPOSITORY is not $canonical: no GPU jobs in this run"
    gpu_tests=0
fi
echo "gpu-tests=$gpu_tests" >>"$output"
