#!/usr/bin/env bash
# The source build works against every torch it claims: the sdist, built the
# way the import errors tell users to (`pip install --no-build-isolation
# --no-binary my_ops my_ops`), in a venv holding one torch, then imported with
# that torch and an op checked against the float64 reference.
#
#   scripts/source_build_check.sh [--cuda CUDA_HOME] [--sdist FILE] [TORCH...]
#
# TORCH: torch versions (default: 2.10.0 and 2.15.0, the oldest and newest the
# stable ABI serves), each PyPI's build as `pip install torch==X` gives it on
# Linux (2.10: CUDA 12.8; 2.15: CUDA 13.2; about 3 GB with its CUDA libraries,
# which `import torch` needs). Without --cuda: the CPU kernels (MY_OPS_CUDA=OFF),
# against that CUDA torch's headers. With --cuda: the CUDA kernels too, with
# that toolkit, whose CUDA major must be torch's (CMake stops otherwise).
# One venv per torch, kept and reused: .venv-source/<torch>/ (or under
# $MY_OPS_SOURCE_VENVS: tests/packaging/test_source_build.py's throwaway ones).
# Logs: wheelhouse/source-build/<torch>-<cpu|cuda>.log (or under $MY_OPS_SOURCE_BUILD_OUT);
# exits 1 if any fails.
set -euo pipefail
cd "$(dirname "$0")/.."

cuda_home='' sdist='' versions=()
while [ $# -gt 0 ]; do
    case "$1" in
        --cuda) cuda_home=$2; shift 2 ;;
        --sdist) sdist=$2; shift 2 ;;
        -*) echo "usage: $0 [--cuda CUDA_HOME] [--sdist FILE] [TORCH...]" >&2; exit 2 ;;
        *) versions+=("$1"); shift ;;
    esac
done
[ ${#versions[@]} -gt 0 ] || versions=(2.10.0 2.15.0)
variant=${cuda_home:+cuda}
variant=${variant:-cpu}
python=${PYTHON:-python3}
out=${MY_OPS_SOURCE_BUILD_OUT:-wheelhouse/source-build}  # (two runs at once need two folders)
mkdir -p "$out"

if [ -z "$sdist" ]; then
    # (the builder of ci/lib/requirements.txt; the sdist is the same for every torch)
    builder=.venv/bin/python
    [ -x "$builder" ] || builder=$python
    rm -rf "$out/sdist"
    "$builder" -m build --sdist --no-isolation --outdir "$out/sdist" . >"$out/sdist.log" 2>&1 ||
        { cat "$out/sdist.log" >&2; exit 1; }
    sdist=$(ls "$out"/sdist/my_ops-*.tar.gz)
fi
echo "== sdist $sdist"

venvs=$(mkdir -p "${MY_OPS_SOURCE_VENVS:-.venv-source}" && cd "${MY_OPS_SOURCE_VENVS:-.venv-source}" && pwd)
status=0
for version in "${versions[@]}"; do
    name=$version-$variant
    venv=$venvs/$version  # (absolute: the import check runs in $out)
    log=$out/$name.log
    if [ ! -x "$venv/bin/python" ]; then
        "$python" -m venv "$venv"
    fi
    # (a subshell with its own errexit: a failing step ends this torch's run, not the others')
    set +e
    (
        set -e
        echo "== $name: installing torch and the build tools"
        # (--no-cache-dir: the kept venv is the cache; pip's own would hold another 3 GB per torch)
        "$venv/bin/python" -m pip install --quiet --no-cache-dir torch=="$version" scikit-build-core cmake ninja
        "$venv/bin/python" -c 'import torch; print("torch", torch.__version__, "CUDA", torch.version.cuda)'
        echo "== $name: building $sdist"
        rm -rf "$out/$name-wheel" "$out/$name-site"
        if [ "$variant" = cpu ]; then
            export MY_OPS_CUDA=OFF
        else
            export MY_OPS_CUDA=ON CUDA_HOME=$cuda_home
            unset CUDACXX
        fi
        PATH="$venv/bin:$PATH" "$venv/bin/python" -m pip wheel --no-build-isolation --no-deps --no-cache-dir \
            --wheel-dir "$out/$name-wheel" "$sdist"
        wheel=$(ls "$out/$name-wheel"/my_ops-*.whl)
        echo "== $name: built $(basename "$wheel")"
        "$venv/bin/python" -m pip install --quiet --no-deps --target "$out/$name-site" "$wheel"
        (cd "$out" && PYTHONPATH="$PWD/$name-site" "$venv/bin/python" - <<'PY'
import torch

import my_ops

info = my_ops.build_info
assert info.torch_version.split("+")[0] == torch.__version__.split("+")[0], (info.torch_version, torch.__version__)
x = torch.randn(64, 256, dtype=torch.float64)
w = torch.rand(256, dtype=torch.float64) + 0.5
want = x * torch.rsqrt(x.pow(2).mean(-1, keepdim=True) + 1e-6) * w
torch.testing.assert_close(my_ops.rms_norm(x, w, 1e-6), want, rtol=1e-12, atol=1e-12)
print(f"ok: my_ops {my_ops.__version__} ({my_ops.library.label}, CUDA {info.cuda_version or 'none'}) "
      f"built against and running with torch {torch.__version__}")
PY
        )
    ) >"$log" 2>&1
    rc=$?
    set -e
    if [ $rc -eq 0 ]; then
        result=$(tail -n 1 "$log")
    else
        result="FAILED (see $log): $(tail -n 1 "$log")"
        status=1
    fi
    echo "$name: $result"
done
exit $status
