#!/usr/bin/env bash
# Create or update a virtual environment with the torch of one pair (what its
# users run) or of one build (what its wheel is compiled against), and the
# build and test tools of ci/lib/requirements.txt.
#
#   ci/lib/setup-venv.sh [--pair 2.11-cu130|default | --build cu130] [--venv .venv] [--python python3]
set -euo pipefail
cd "$(dirname "$0")/../.."

kind=pair name=default venv=.venv python=${PYTHON:-python3}
while [ $# -gt 0 ]; do
    case "$1" in
        --pair) kind=pair name=$2; shift 2 ;;
        --build) kind=build name=$2; shift 2 ;;
        --venv) venv=$2; shift 2 ;;
        --python) python=$2; shift 2 ;;
        *) echo "usage: $0 [--pair NAME | --build NAME] [--venv DIR] [--python PYTHON]" >&2; exit 2 ;;
    esac
done

# The venv first, and everything else from it: the runner's own python3 may be
# externally managed (PEP 668: Ubuntu 24.04's, Debian's), where any
# `pip install` fails, even one whose marker excludes that Python.
if [ ! -x "$venv/bin/python" ] && [ ! -x "$venv/Scripts/python.exe" ]; then
    echo "== creating $venv with $("$python" --version)"
    "$python" -m venv "$venv"
fi
venv_python="$venv/bin/python"
[ -x "$venv_python" ] || venv_python="$venv/Scripts/python.exe"
# build_support/matrix.py needs tomllib (3.11) or tomli: a test job's Python may be 3.9 or 3.10
if ! "$venv_python" -c 'import tomllib' 2>/dev/null; then
    "$venv_python" -m pip install --quiet "tomli>=2"
fi
install_args=$("$venv_python" build_support/matrix.py "$kind" "$name" --field torch_install_args \
    --platform "$(ci/lib/host-platform.sh)")  # (assigned first: a failure stops the script)
read -r -a torch_args <<<"$install_args"

# Skip pip when this venv was already set up for the same pair and requirements.
stamp="$venv/.my_ops-setup"
want="$(cat ci/lib/requirements.txt) ${torch_args[*]}"
if [ -f "$stamp" ] && [ "$(cat "$stamp")" = "$want" ]; then
    echo "== $venv is set up for ${torch_args[*]}"
    exit 0
fi
echo "== installing ${torch_args[*]} and the build/test tools into $venv"
"$venv_python" -m pip install --quiet --upgrade pip
# Two calls: torch's --index-url (PyTorch's index) would hide PyPI from the tools' install.
"$venv_python" -m pip install --quiet "${torch_args[@]}"
"$venv_python" -m pip install --quiet -r ci/lib/requirements.txt
printf '%s' "$want" >"$stamp"
