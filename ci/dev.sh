#!/usr/bin/env bash
# The fast loop for kernel work: rebuild the wheel of command (1) where a
# source changed (ci/build.sh: nothing when dist/'s wheel is newer than every
# source, else CMake and ninja in build/<build>/ recompile what changed),
# install it into .venv/ unless .venv/ already has those bytes, and run the
# smoke tier of the op tests (`pytest -m smoke`: each op's smoke samples from
# its spec, under a minute on 2 cores; across the CPU cores with pytest-xdist
# where .venv/ has it). No sweeps, packaging tests, lint, browser or workflow
# test: ci/test.sh (= .ci/run) stays the full gate, to run before pushing.
#
#   ci/dev.sh [--all] [pytest args]
#     ci/dev.sh                                  the smoke tier of every op
#     ci/dev.sh -k rms_norm                      the smoke tier of one op
#     ci/dev.sh --all                            every op test (the sweeps too; 4-8 minutes)
#     ci/dev.sh --all -k rms_norm                every test of one op
#     ci/dev.sh tests/ops/test_matmul.py -x      a path: all its tests, in place of tests/ops/
#     ci/dev.sh -m 'not smoke'                   -m: this marker expression instead
#     ci/dev.sh -m large_memory                  the >2^31-element tests
#                                                (skipped unless -m names them: ~13 GiB)
#   A failing test's report names its seed; MY_OPS_SEED=<seed> ci/dev.sh ... reruns it with it.
set -euo pipefail
cd "$(dirname "$0")/.."

ci/build.sh
wheel=$(ci/lib/newest-wheel.sh dist)
python=.venv/bin/python
# The installed my_ops is this wheel when every file of it has the wheel's hash.
if ! "$python" - "$wheel" <<'PY'; then
import csv, io, sys, zipfile
from importlib import metadata

with zipfile.ZipFile(sys.argv[1]) as zf:
    record = next(n for n in zf.namelist() if n.endswith(".dist-info/RECORD"))
    want = {row[0]: row[1] for row in csv.reader(io.StringIO(zf.read(record).decode()))
            if len(row) > 1 and row[1] and ".dist-info/" not in row[0]}
try:
    files = metadata.distribution("my_ops").files or []
except metadata.PackageNotFoundError:
    sys.exit(1)
have = {str(f): f"{f.hash.mode}={f.hash.value}" for f in files if f.hash}
sys.exit(0 if all(have.get(path) == digest for path, digest in want.items()) else 1)
PY
    echo "== installing $wheel into .venv"
    "$python" -m pip install --quiet --no-deps --force-reinstall "$wheel"
fi

# The tier: smoke, unless the caller asks for all (--all), names paths (run
# whole) or gives a marker expression of its own; the >2^31-element tests only
# where that expression names them.
markers=smoke
paths=(tests/ops)
rest=()
for arg in "$@"; do
    if [ "$arg" = --all ]; then
        markers="not large_memory"
        continue
    fi
    case "$arg" in
        # pytest's own selection of earlier failures: the smoke default would deselect them
        --lf | --last-failed | --ff | --failed-first | --sw | --stepwise) markers="not large_memory" ;;
    esac
    if [ -e "${arg%%::*}" ]; then
        paths=()  # the caller named what to run
        markers="not large_memory"
    fi
    rest+=("$arg")
done
# -m EXPR / -mEXPR / --markexpr EXPR replace the tier (the last one wins, as in pytest)
args_left=()
for ((i = 0; i < ${#rest[@]}; i++)); do
    case "${rest[i]}" in
        -m | --markexpr) markers=${rest[i + 1]:-}; i=$((i + 1)) ;;
        --markexpr=*) markers=${rest[i]#--markexpr=} ;;
        -m*) markers=${rest[i]#-m} ;;
        *) args_left+=("${rest[i]}") ;;
    esac
done
rest=("${args_left[@]}")
case "$markers" in
    *large_memory*) ;;
    *) markers="($markers) and not large_memory" ;;
esac
args=(-q -m "$markers")
if "$python" -c 'import xdist' 2>/dev/null; then
    args+=(-n auto)
fi
exec "$python" -m pytest "${args[@]}" "${paths[@]}" "${rest[@]}"
