#!/usr/bin/env bash
# Lint the workflows, shell scripts and code, offline, as part of the README
# test command: actionlint, zizmor, check-jsonschema (GitHub's workflow schema,
# vendored in the tool), the shell-script linter, ruff (the Python code;
# pyproject.toml's [tool.ruff]) and clang-format (the C, C++ and CUDA sources;
# .clang-format).
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
echo "== ruff"
"$bin/ruff" check --no-cache .
echo "== clang-format"
mapfile -t sources < <(git ls-files -- '*.c' '*.h' '*.cpp' '*.cu' '*.cuh')
if [ "${#sources[@]}" -eq 0 ]; then  # (clang-format given no file would read standard input)
    echo "lint: git ls-files found no C, C++ or CUDA source" >&2
    exit 1
fi
"$bin/clang-format" --dry-run --Werror "${sources[@]}"
echo "lint: clean"
