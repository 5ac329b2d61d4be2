#!/usr/bin/env bash
# Print the most recently built my_ops wheel in a folder (nothing if none).
#   ci/lib/newest-wheel.sh DIR
set -euo pipefail
newest=""
for wheel in "${1:?usage: $0 DIR}"/my_ops-*.whl; do
    [ -e "$wheel" ] || continue
    if [ -z "$newest" ] || [ "$wheel" -nt "$newest" ]; then
        newest=$wheel
    fi
done
printf '%s\n' "$newest"
