#!/usr/bin/env bash
# The matrices of the wheels workflow's jobs for one GitHub event, as
# `job=JSON` lines appended to $GITHUB_OUTPUT (printed when it is unset).
#
#   EVENT=pull_request ci/gha-matrix.sh
set -euo pipefail
cd "$(dirname "$0")/.."

event=${EVENT:-push}
output=${GITHUB_OUTPUT:-/dev/stdout}
for job in build-linux build-windows test-cpu test-gpu; do
    echo "${job}=$(python3 scripts/matrix.py gha --event "$event" --job "$job")" >>"$output"
done
