#!/usr/bin/env bash
# The fast loop for kernel work: rebuild the wheel of command (1) where a
# source changed (ci/build.sh: nothing when dist/'s wheel is newer than every
# source, else CMake and ninja in build/<build>/ recompile what changed),
# install it into .venv/ unless .venv/ already has those bytes, and run the op
# tests only (tests/ops/; across the CPU cores with pytest-xdist where .venv/
# has it). No packaging tests, lint, browser or workflow test: ci/test.sh
# (= .ci/run) stays the full gate, to run before pushing.
#
#   ci/dev.sh [pytest args]
#     ci/dev.sh -k rms_norm                      the tests of one op
#     ci/dev.sh tests/ops/test_matmul.py -x      a path replaces tests/ops/
#     ci/dev.sh -m large_memory                  the >2^31-element tests
#                                                (skipped by default: ~13 GiB)
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

args=(-q -m "not large_memory")
if "$python" -c 'import xdist' 2>/dev/null; then
    args+=(-n auto)
fi
paths=(tests/ops)
for arg in "$@"; do
    if [ -e "${arg%%::*}" ]; then
        paths=()  # the caller named what to run
    fi
done
exec "$python" -m pytest "${args[@]}" "${paths[@]}" "$@"
