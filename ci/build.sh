#!/usr/bin/env bash
# README command (1), the main job: the wheel of this host's default pair
# (torch 2.11 + the system CUDA 13.0 toolkit) in dist/, with .venv/ set up
# as needed. Skips the build when dist/ already holds a wheel newer than
# every source file. `--build cpu` builds another build of build_support/matrix.toml
# with the same torch (the +cpu wheel); MY_OPS_OUT=DIR builds into DIR.
set -euo pipefail
cd "$(dirname "$0")/.."

build=default
if [ "${1:-}" = --build ]; then
    build=${2:?usage: $0 [--build NAME]}
fi
ci/lib/setup-venv.sh

# The first source file (tracked or new) changed after the wheel, if any.
changed_since() {
    git ls-files -z --cached --others --exclude-standard -- src build_support python \
        CMakeLists.txt pyproject.toml VERSION |
        while IFS= read -r -d '' file; do
            if [ "$file" -nt "$1" ]; then
                echo "$file"
                return
            fi
        done
}

out=${MY_OPS_OUT:-dist}
wheel=$(ci/lib/newest-wheel.sh "$out")
if [ -n "$wheel" ] && [ -z "$(changed_since "$wheel")" ]; then
    echo "== $wheel is up to date"
else
    rm -f "$out"/my_ops-*.whl
    ci/build/build-wheel.sh --build "$build" --out "$out"
fi
