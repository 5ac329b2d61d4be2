#!/usr/bin/env bash
# Verify PyPI's label-free wheels (ci/build/bundle-wheels.py's output) as every
# other wheel is verified: each kernel library against its build (SASS/PTX
# per SM of its platform's arch list, symbols, build record), then the name,
# metadata, size, abi3audit, check-wheel-contents and `twine check`
# (ci/build/verify-wheel.py --label-free). The bundle job runs it before any
# test job, so PyPI never gets a wheel the checks did not pass.
#
#   ci/build/verify-bundles.sh BUNDLES    (BUNDLES/bundle-<platform>/my_ops-*.whl)
#
# Environment: PYTHON (for the tools' venv, default python3).
set -euo pipefail
cd "$(dirname "$0")/../.."

bundles=${1:?usage: $0 BUNDLES}
python=${PYTHON:-python3}
venv=.venv-verify
[ -x "$venv/bin/python" ] || "$python" -m venv "$venv"
"$venv/bin/python" -m pip install --quiet -r ci/build/requirements-verify.txt
count=0
for folder in "$bundles"/bundle-*/; do
    platform=$(basename "$folder")
    platform=${platform#bundle-}
    tag=$("$venv/bin/python" build_support/matrix.py default "${platform}_platform")
    for wheel in "$folder"my_ops-*.whl; do
        [ -e "$wheel" ] || continue  # (the platform's default build failed: the run fails there already)
        "$venv/bin/python" ci/build/verify-wheel.py "$wheel" --label-free --platform-tag "$tag"
        count=$((count + 1))
    done
done
[ "$count" -gt 0 ] || { echo "$0: no label-free wheel under $bundles" >&2; exit 1; }
echo "verify-bundles: $count label-free wheels pass"
