#!/usr/bin/env bash
# README command (2): every test. Sets up .venv/ and the wheel as command (1)
# does, installs the wheel, then runs the test suite (CUDA tests run where a
# GPU is present and are skipped elsewhere).
set -euo pipefail
cd "$(dirname "$0")/.."

ci/build.sh
wheel=$(ls -t dist/my_ops-*.whl | head -n 1)
.venv/bin/python -m pip install --quiet --no-deps --force-reinstall "$wheel"
.venv/bin/python -m pytest tests -q -rs "$@"
