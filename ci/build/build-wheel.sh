#!/usr/bin/env bash
# Build one my_ops wheel into an output folder.
#
#   ci/build/build-wheel.sh [--build cu130|2.6-cu124|default] [--out dist] [--python .venv/bin/python]
#
# --build also takes a pair (2.13-cu130): the build that serves it.
#
# The build uses the torch installed for --python (no build isolation: the
# extension must be compiled against the torch that will load it) and the
# nvcc found through CUDA_HOME / CUDACXX / PATH. TORCH_CUDA_ARCH_LIST defaults
# to the build's list in build_support/matrix.toml; the build `cpu` (or
# MY_OPS_CUDA=OFF) builds +cpu.
set -euo pipefail
cd "$(dirname "$0")/../.."

build=default out=dist python=${PYTHON:-.venv/bin/python}
while [ $# -gt 0 ]; do
    case "$1" in
        --build | --pair) build=$2; shift 2 ;;
        --out) out=$2; shift 2 ;;
        --python) python=$2; shift 2 ;;
        *) echo "usage: $0 [--build NAME] [--out DIR] [--python PYTHON]" >&2; exit 2 ;;
    esac
done

if [ -z "${TORCH_CUDA_ARCH_LIST:-}" ]; then
    # (this platform's list: Linux aarch64 has its own)
    TORCH_CUDA_ARCH_LIST="$("$python" build_support/matrix.py build "$build" --field arch_list \
        --platform "$(ci/lib/host-platform.sh)")"
fi
export TORCH_CUDA_ARCH_LIST
if [ "$("$python" build_support/matrix.py build "$build" --field cuda)" = cpu ]; then
    export MY_OPS_CUDA=OFF  # the CPU-only build, even where a toolkit is installed (the CUDA images)
fi
# A checkout owned by another user (a CI container runs as root over the
# runner's checkout) makes git refuse it as "dubious ownership": the build
# would lose its commit and commit time without a word. Trust this one folder.
if [ -e .git ] && git rev-parse HEAD 2>&1 | grep -q "dubious ownership"; then
    echo "== git: marking $PWD safe (owned by another user)"
    git config --global --add safe.directory "$PWD"
fi
# Reproducible wheels: file times (and the build info's date) are the commit's.
if [ -z "${SOURCE_DATE_EPOCH:-}" ] && git rev-parse --verify --quiet HEAD >/dev/null 2>&1; then
    SOURCE_DATE_EPOCH=$(git log -1 --format=%ct)
    export SOURCE_DATE_EPOCH
elif [ -z "${SOURCE_DATE_EPOCH:-}" ] && [ -e .git ] &&
    ! git rev-parse HEAD 2>&1 | grep -q "ambiguous argument 'HEAD'"; then  # (that one: no commit yet)
    echo "$0: git cannot read this checkout's commit: the wheel would not be reproducible" >&2
    git rev-parse HEAD >&2 || true
    exit 1
fi
# A compiler cache named as launcher but not installed would fail the build:
# build without it instead, and say so.
for var in CMAKE_C_COMPILER_LAUNCHER CMAKE_CXX_COMPILER_LAUNCHER CMAKE_CUDA_COMPILER_LAUNCHER; do
    launcher=${!var:-}
    if [ -n "$launcher" ] && ! command -v "$launcher" >/dev/null 2>&1; then
        echo "== $var=$launcher is not installed: building without a compiler cache"
        unset "$var"
    fi
done
export CMAKE_BUILD_PARALLEL_LEVEL="${CMAKE_BUILD_PARALLEL_LEVEL:-$(getconf _NPROCESSORS_ONLN 2>/dev/null || echo 2)}"

mkdir -p "$out"
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
build=$("$python" build_support/matrix.py build "$build" --field name)
echo "== building $build (TORCH_CUDA_ARCH_LIST=$TORCH_CUDA_ARCH_LIST) with $("$python" -c 'import torch; print("torch", torch.__version__)')"
# One build folder per build, so several builds never share CMake
# caches (MY_OPS_BUILD_DIR overrides it, e.g. for a clean build).
"$python" -m pip wheel --no-build-isolation --no-deps --wheel-dir "$tmp" \
    --config-settings=build-dir="${MY_OPS_BUILD_DIR:-build/$build}" .
wheel=$(ls "$tmp"/my_ops-*.whl)
mv -f "$wheel" "$out/"
echo "== built $out/$(basename "$wheel")"
