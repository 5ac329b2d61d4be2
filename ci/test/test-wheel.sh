#!/usr/bin/env bash
# Install a wheel the way a user would, into a fresh virtual environment that
# already has the pair's torch, and run the CPU test suite there.
#
#   ci/test/test-wheel.sh WHEEL [--pair 2.11-cu130|default] [--python python3.13] [-- pytest args]
#
# Also checks that installing the wheel keeps the user's torch (its pin must
# accept the torch the pair was built for).
set -euo pipefail
cd "$(dirname "$0")/../.."

[ $# -ge 1 ] || { echo "usage: $0 WHEEL [--pair NAME] [--python PYTHON] [-- pytest args]" >&2; exit 2; }
wheel=$(cd "$(dirname "$1")" && pwd)/$(basename "$1")
shift
pair=default python=${PYTHON:-python3}
while [ $# -gt 0 ]; do
    case "$1" in
        --pair) pair=$2; shift 2 ;;
        --python) python=$2; shift 2 ;;
        --) shift; break ;;
        *) echo "unknown argument $1" >&2; exit 2 ;;
    esac
done

venv=$(mktemp -d)/venv
trap 'rm -rf "$(dirname "$venv")"' EXIT
# The venv first, and everything else from it: this job's python may be
# externally managed (PEP 668), where any `pip install` fails.
"$python" -m venv "$venv"
vpy="$venv/bin/python"
[ -x "$vpy" ] || vpy="$venv/Scripts/python.exe"
# build_support/matrix.py needs tomllib (3.11) or tomli: this job's Python may be 3.9 or 3.10
if ! "$vpy" -c 'import tomllib' 2>/dev/null; then
    "$vpy" -m pip install --quiet "tomli>=2"
fi
install_args=$("$vpy" build_support/matrix.py pair "$pair" --field torch_install_args \
    --platform "$(ci/lib/host-platform.sh)")  # (assigned first: a failure stops the script)
read -r -a torch_args <<<"$install_args"
echo "== fresh venv $venv with $("$python" --version) and ${torch_args[*]}"
"$vpy" -m pip install --quiet --upgrade pip
# Two calls: torch's --index-url (PyTorch's index) would hide PyPI from the test tools' install.
"$vpy" -m pip install --quiet "${torch_args[@]}"
"$vpy" -m pip install --quiet "pytest>=8" "numpy>=1.26" "expecttest>=0.2" "hypothesis>=6"
torch_before=$("$vpy" -c 'import torch; print(torch.__version__)')
MATRIX_PYTHON=$vpy ci/test/check-torch.sh "$vpy" "$pair"

echo "== pip install $(basename "$wheel")"
"$vpy" -m pip install --quiet "$wheel"
torch_after=$("$vpy" -c 'import torch; print(torch.__version__)')
if [ "$torch_before" != "$torch_after" ]; then
    echo "installing the wheel replaced torch $torch_before with $torch_after" >&2
    exit 1
fi
(cd "$(dirname "$venv")" && "$vpy" -m my_ops)
# no path given: pyproject.toml's testpaths (tests/ops/, tests/packaging/, tests/benchmarks/)
"$vpy" -m pytest -q -rs -p no:cacheprovider "$@"
