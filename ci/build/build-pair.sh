#!/usr/bin/env bash
# One build, start to verified wheel: set up a build environment with the
# build's torch, build, give a Linux wheel its manylinux tag (a macOS wheel
# its deployment target's), and verify it.
# The build jobs of .github/workflows/wheels.yml run exactly this.
#
#   ci/build/build-pair.sh --build cu130 [--out wheelhouse] [--platform-tag TAG|auto]
#
# --build takes a build of build_support/matrix.toml (cu130: the stable wheel of
# CUDA 13.0; 2.6-cu124: a legacy one) or a pair it serves (2.13-cu130).
# The wheel lands in OUT/<build>/.
#
# Environment: PYTHON (interpreter for the build venv, default python3);
# CUDA_HOME / CUDACXX select nvcc; MY_OPS_LOCAL_LABEL=none builds the
# label-free PyPI wheel; MY_OPS_NIGHTLY=YYYYMMDDHHMM a nightly. --platform-tag: the tag the wheel must get
# (default: the matrix's tag of this host's platform, e.g.
# manylinux_2_28_x86_64); "auto" takes the most compatible tag this host allows.
set -euo pipefail
cd "$(dirname "$0")/../.."

build='' out=wheelhouse platform_tag='' python=${PYTHON:-python3}
while [ $# -gt 0 ]; do
    case "$1" in
        --build | --pair) build=$2; shift 2 ;;
        --out) out=$2; shift 2 ;;
        --platform-tag) platform_tag=$2; shift 2 ;;
        *) echo "usage: $0 --build NAME [--out DIR] [--platform-tag TAG|auto]" >&2; exit 2 ;;
    esac
done
[ -n "$build" ] || { echo "$0: --build is required" >&2; exit 2; }
build=$("$python" build_support/matrix.py build "$build" --field name)

platform=$(ci/lib/host-platform.sh)
if [ -z "$platform_tag" ]; then
    platform_tag=$("$python" build_support/matrix.py default "${platform}_platform")
fi

venv=.venv-build-$build
ci/lib/setup-venv.sh --build "$build" --venv "$venv" --python "$python"
vpy="$venv/bin/python"
[ -x "$vpy" ] || vpy="$venv/Scripts/python.exe"
"$vpy" -m pip install --quiet -r ci/build/requirements-verify.txt

if [ "$platform" = macos ]; then
    # macosx_11_0_arm64 -> 11.0: the compilers target it, and scikit-build-core tags the wheel with it
    MACOSX_DEPLOYMENT_TARGET=$(echo "$platform_tag" | sed -E 's/^macosx_([0-9]+)_([0-9]+)_.*/\1.\2/')
    export MACOSX_DEPLOYMENT_TARGET
fi

raw=$(mktemp -d)
trap 'rm -rf "$raw"' EXIT
ci/build/build-wheel.sh --build "$build" --out "$raw" --python "$vpy"
dest="$out/$build"
rm -rf "$dest"
mkdir -p "$dest"
verify_tag=(--platform-tag "$platform_tag")
if [ "$platform" = linux ] || [ "$platform" = linux-aarch64 ]; then
    plat=()
    if [ "$platform_tag" = auto ]; then
        verify_tag=()
    else
        plat=(--plat "$platform_tag")
    fi
    PYTHON=$vpy ci/build/repair-wheel.sh "$raw"/my_ops-*.whl "$dest" "${plat[@]}"
else
    # Windows, macOS: nothing to repair; torch's libraries come from torch, and
    # verify-wheel checks that the wheel links nothing else outside the system
    mv "$raw"/my_ops-*.whl "$dest/"
fi
wheel=$(ls "$dest"/my_ops-*.whl)
label=()
if [ "${MY_OPS_LOCAL_LABEL:-}" = none ]; then
    label=(--no-label)  # the label-free PyPI build
fi
"$vpy" ci/build/verify-wheel.py "$wheel" --build "$build" "${verify_tag[@]}" "${label[@]}" --report "$dest/verify.json"
