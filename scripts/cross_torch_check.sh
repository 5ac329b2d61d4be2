#!/usr/bin/env bash
# The stable-ABI promise, checked: ONE wheel, installed the way a user would
# into fresh virtual environments with each torch it claims, passes the CPU
# test suite in every one; under an older torch its import guard refuses it.
# Too slow for the test command (each torch is a fresh ~1 GB install): run it
# by hand after changing the binding or the build.
#
#   scripts/cross_torch_check.sh [WHEEL] [--pairs "2.11-cu130 2.12-cu130 ..."] [--refused "2.10-cu128"]
#
# Default wheel: dist/'s; default pairs: every pair served by the wheel's
# build whose torch PyPI's plain `pip install torch==X.Y.0` gives (this host
# reaches PyPI only), plus those of other CUDA versions of the same major
# that PyPI gives (e.g. PyPI's torch 2.15, a CUDA 13.2 build, for a cu130
# wheel); default refused: PyPI's torch 2.10 (CUDA 12.8: another CUDA major).
# Output: one log per torch and summary.txt under wheelhouse/cross-torch/.
set -euo pipefail
cd "$(dirname "$0")/.."

wheel='' pairs='' refused='2.10-cu128'
while [ $# -gt 0 ]; do
    case "$1" in
        --pairs) pairs=$2; shift 2 ;;
        --refused) refused=$2; shift 2 ;;
        *) wheel=$1; shift ;;
    esac
done
[ -n "$wheel" ] || wheel=$(ci/lib/newest-wheel.sh dist)
[ -f "$wheel" ] || { echo "$0: no wheel (build one with ci/build.sh)" >&2; exit 2; }
if [ -z "$pairs" ]; then
    pairs=$(python3 - "$wheel" <<'PY'
import json, sys, zipfile
sys.path.insert(0, "build_support")
import matrix
info = json.loads(zipfile.ZipFile(sys.argv[1]).read("my_ops/_build_info.json"))
major = info["cuda_version"].split(".")[0]
print(" ".join(p.name for p in matrix.all_pairs() if p.abi == "stable" and p.torch_on_pypi
               and p.cuda.split(".")[0] == major))
PY
)
fi
out=wheelhouse/cross-torch
mkdir -p "$out"
summary=$out/summary.txt
echo "wheel $(basename "$wheel")" >"$summary"
status=0
for pair in $pairs; do
    echo "==================== $pair"
    if ci/test/test-wheel.sh "$wheel" --pair "$pair" -- -m "not large_memory" >"$out/$pair.log" 2>&1; then
        result=ok
    else
        result=FAILED
        status=1
    fi
    torch_version=$(grep -m1 -o 'torch==[^ ]*' "$out/$pair.log" || true)
    echo "$pair ($torch_version): $result: $(tail -n 1 "$out/$pair.log")" | tee -a "$summary"
done
for pair in $refused; do
    echo "==================== $pair (must be refused)"
    venv=$(mktemp -d)/venv
    python3 -m venv "$venv"
    read -r -a torch_args <<<"$(python3 build_support/matrix.py pair "$pair" --field torch_install_args)"
    "$venv/bin/python" -m pip install --quiet "${torch_args[@]}"
    "$venv/bin/python" -m pip install --quiet --no-deps "$wheel"
    if (cd / && "$venv/bin/python" -c "import my_ops") >"$out/$pair.log" 2>&1; then
        echo "$pair: FAILED: the import was not refused" | tee -a "$summary"
        status=1
    elif grep -q "ImportError: my_ops .* does not fit torch" "$out/$pair.log"; then
        echo "$pair: refused as it should be: $(grep -m1 -o 'does not fit torch.*' "$out/$pair.log")" | tee -a "$summary"
    else
        echo "$pair: FAILED: not the import guard's error:" | tee -a "$summary"
        tail -n 3 "$out/$pair.log" | tee -a "$summary"
        status=1
    fi
    rm -rf "$(dirname "$venv")"
done
exit $status
