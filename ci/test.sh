#!/usr/bin/env bash
# README command (2): every test. Sets up .venv/ and the wheel as command (1)
# does, installs the wheel, lints the workflows, scripts and code, runs the
# workflows' job graph with act, then the test suite (CUDA tests run where a
# GPU is present and are skipped elsewhere).
set -euo pipefail
cd "$(dirname "$0")/.."

ci/build.sh
# The +cpu wheel too: tests/packaging/test_libraries.py bundles it with the default
# wheel into PyPI's label-free wheel, as the release does, and loads each.
MY_OPS_OUT=wheelhouse/cpu ci/build.sh --build cpu
wheel=$(ci/lib/newest-wheel.sh dist)
.venv/bin/python -m pip install --quiet --no-deps --force-reinstall "$wheel"
.venv/bin/python -m pip install --quiet -r ci/build/requirements-verify.txt -r ci/test/requirements-browser.txt
ci/test/install-browser.sh
ci/test/lint.sh
ci/test/test-workflows.sh  # the workflows' job graph, run with act (about 9 minutes)
# no path given: pyproject.toml's testpaths (tests/ops/, tests/packaging/, tests/benchmarks/):
# both tiers of the op tests (smoke and sweep) and the performance page's currency
.venv/bin/python -m pytest -q -rs "$@"
