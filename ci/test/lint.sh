#!/usr/bin/env bash
# Lint the workflows and shell scripts, offline, as part of the README test
# command: actionlint, zizmor, check-jsonschema (GitHub's workflow schema,
# vendored in the tool) and the shell-script linter.
set -euo pipefail
cd "$(dirname "$0")/../.."

python=${PYTHON:-.venv/bin/python}
bin=$(dirname "$python")
"$python" -m pip install --quiet --only-binary :all: -r ci/test/requirements-lint.txt

workflows=(.github/workflows/*.yml)
echo "== actionlint"
"$bin/actionlint" -color=false "${workflows[@]}"
echo "== zizmor"
"$bin/zizmor" --offline --no-progress "${workflows[@]}"
echo "== zizmor --persona=auditor"
"$bin/zizmor" --offline --no-progress --persona=auditor "${workflows[@]}"
echo "== check-jsonschema"
"$bin/check-jsonschema" --builtin-schema vendor.github-workflows "${workflows[@]}"
echo "== shellcheck"
"$bin/shellcheck" -x ci/*.sh ci/*/*.sh scripts/*.sh .ci/run
echo "lint: clean"
