#!/usr/bin/env bash
# PyPI's label-free wheel, checked the way users get it: a package index on
# 127.0.0.1 holding only that wheel (what the release sends to PyPI), and a
# fresh venv per torch minor with PyPI's own torch. In each, `pip install
# my_ops` from that index must keep torch, load the kernel library that fits
# (`python -m my_ops` says which), and pass a CPU test subset; then, with
# torch's CUDA reported absent, the CPU library must load and compute right.
# Too slow for the test command (a fresh torch per minor): run it by hand
# after changing the packaging.
#
#   scripts/pypi_wheel_check.sh WHEEL [--expect "2.10=cu124 2.11=cu130 2.15=cu130"]
#
# Output: one log per torch and summary.txt under wheelhouse/pypi-check/.
set -euo pipefail
cd "$(dirname "$0")/.."

wheel=${1:?usage: $0 WHEEL [--expect "MINOR=LABEL ..."]}
shift
expect="2.10=cu124 2.11=cu130 2.12=cu130 2.13=cu130 2.14=cu130 2.15=cu130"
while [ $# -gt 0 ]; do
    case "$1" in
        --expect) expect=$2; shift 2 ;;
        *) echo "usage: $0 WHEEL [--expect \"MINOR=LABEL ...\"]" >&2; exit 2 ;;
    esac
done
out=wheelhouse/pypi-check
mkdir -p "$out"
summary=$out/summary.txt
echo "wheel $(basename "$wheel")" >"$summary"

work=$(mktemp -d)
trap 'kill "$server" 2>/dev/null || true; rm -rf "$work"' EXIT
mkdir -p "$work/index/my-ops"
cp "$wheel" "$work/index/my-ops/"
name=$(basename "$wheel")
digest=$(sha256sum "$wheel" | cut -d' ' -f1)
printf '<!DOCTYPE html><html><body><a href="%s#sha256=%s">%s</a></body></html>\n' \
    "${name//+/%2B}" "$digest" "$name" >"$work/index/my-ops/index.html"
port=$(python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')
python3 -m http.server --bind 127.0.0.1 --directory "$work/index" "$port" >"$work/server.log" 2>&1 &
server=$!
sleep 1

check_one() {  # MINOR LABEL VENV: the whole check for one torch, in a fresh venv
    local minor=$1 want=$2 venv=$3 vpy=$3/bin/python before after
    python3 -m venv "$venv"
    "$vpy" -m pip install --quiet --upgrade pip
    "$vpy" -m pip install --quiet "torch==$minor.*" "pytest>=8" "numpy>=1.26" "expecttest>=0.2" "hypothesis>=6"
    before=$("$vpy" -c 'import torch; print(torch.__version__, torch.version.cuda)')
    echo "torch: $before"
    "$vpy" -m pip install --no-cache-dir --dry-run --quiet --report "$venv/report.json" my_ops \
        --index-url "http://127.0.0.1:$port/"
    "$vpy" -c 'import json, sys; names = [i["metadata"]["name"] for i in json.load(open(sys.argv[1]))["install"]]
assert names == ["my_ops"], f"pip would also install {names}"' "$venv/report.json"
    "$vpy" -m pip install --no-cache-dir --quiet my_ops --index-url "http://127.0.0.1:$port/"
    after=$("$vpy" -c 'import torch; print(torch.__version__, torch.version.cuda)')
    [ "$before" = "$after" ] || { echo "torch changed: $before -> $after"; return 1; }
    (cd / && "$vpy" -m my_ops) | tee "$venv/info"
    grep -q "^  $want (.*): LOADED" "$venv/info" || { echo "expected the $want library to be loaded"; return 1; }
    "$vpy" -m pytest -q -p no:cacheprovider -m "not large_memory" tests/ops/test_rms_norm.py \
        tests/ops/test_act_and_mul.py tests/ops/test_elementwise.py tests/ops/test_matmul.py tests/ops/test_call_paths.py
    (cd / && "$vpy" -c '
import torch
torch.version.cuda = None  # as a CPU-only torch reports it
import my_ops
assert my_ops.library.label == "cpu", my_ops.library
x, w = torch.randn(5, 300, dtype=torch.float64), torch.rand(300, dtype=torch.float64)
want = x * torch.rsqrt(x.pow(2).mean(-1, keepdim=True) + 1e-6) * w
torch.testing.assert_close(my_ops.rms_norm(x, w, 1e-6), want)
print("torch reporting no CUDA: the cpu library, right numbers")')
}

status=0
for item in $expect; do
    minor=${item%%=*} want=${item#*=}
    log=$out/torch$minor.log
    echo "==================== torch $minor (PyPI's), expecting the $want library"
    set +e
    (set -e; check_one "$minor" "$want" "$work/venv-$minor") >"$log" 2>&1  # (errexit holds in a plain subshell)
    rc=$?
    set -e
    if [ "$rc" = 0 ]; then
        result="ok: $(grep -m1 '^torch: ' "$log" | cut -d' ' -f2-3), $want loaded, $(grep -E '[0-9]+ passed' "$log" | tail -n 1)"
    else
        result="FAILED (see $log): $(tail -n 2 "$log" | tr '\n' ' ')"
        status=1
    fi
    echo "torch $minor: $result" | tee -a "$summary"
    rm -rf "$work/venv-$minor"
done
exit $status
