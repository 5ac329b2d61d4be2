#!/usr/bin/env bash
# After publishing, before PyPI: install what was published, as users will,
# from the package index (GitHub Pages) and from the GitHub Release, and run a
# smoke test of each. Nothing is installed into PYTHON's environment: pip
# resolves against its torch (which must stay), downloads with the index's
# sha256, and the wheel runs from a scratch folder.
#
#   ci/release/verify-published.sh VERSION TAG
# Environment: PYTHON (with the default pair's torch), INDEX_URL (default:
# build_support/matrix.toml's index_url), RELEASES_URL (default
# https://github.com/REPOSITORY/releases/download), REPOSITORY, NIGHTLY=1 for
# the whl/nightly/ index, WAIT_SECONDS (how long Pages may take to serve the
# new pages, default 600).
set -euo pipefail
cd "$(dirname "$0")/../.."

version=${1:?usage: $0 VERSION TAG} tag=${2:?usage: $0 VERSION TAG}
python=${PYTHON:-python3}
index=${INDEX_URL:-$(python3 build_support/matrix.py default index_url)}
releases=${RELEASES_URL:-https://github.com/${REPOSITORY:?REPOSITORY or RELEASES_URL}/releases/download}
pair=$(python3 build_support/matrix.py pair default --field name)
label=$(python3 build_support/matrix.py pair default --field label)
path=$(python3 build_support/matrix.py pair default --field index_path)
[ "${NIGHTLY:-0}" = 1 ] && path="whl/nightly/${path#whl/}"
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT

smoke() {  # FOLDER: import the installed wheel from there and run an op
    (cd "$work" && PYTHONPATH="$1" "$python" - "$version+$label" <<'PY'
import sys
import torch
import my_ops
assert my_ops.__version__ == sys.argv[1], (my_ops.__version__, sys.argv[1])
x = torch.randn(4, 64, dtype=torch.float64)
w = torch.rand(64, dtype=torch.float64)
got = my_ops.rms_norm(x, w, 1e-6)
want = x * torch.rsqrt(x.pow(2).mean(-1, keepdim=True) + 1e-6) * w
torch.testing.assert_close(got, want)
print("smoke test passed:", my_ops.__version__, my_ops.__file__)
PY
    )
}

torch_before=$("$python" -c 'import torch; print(torch.__version__)')
echo "== $index/$path: my_ops==$version+$label for $pair"
deadline=$(($(date +%s) + ${WAIT_SECONDS:-600}))
until "$python" -m pip download --quiet --no-deps --dest "$work/index" "my_ops==$version+$label" \
    --index-url "$index/$path" 2>"$work/err"; do
    if [ "$(date +%s)" -ge "$deadline" ]; then
        cat "$work/err" >&2
        echo "$0: $index/$path does not serve my_ops==$version+$label" >&2
        exit 1
    fi
    echo "(not served yet; Pages may still be deploying)"
    sleep 20
done
# the resolver keeps the user's torch: the wheel's requirements are met by it
"$python" -m pip install --dry-run --quiet --report "$work/report.json" "$work"/index/my_ops-*.whl
"$python" - "$work/report.json" <<'PY'
import json, sys
installs = [i["metadata"]["name"].lower().replace("_", "-") for i in json.load(open(sys.argv[1]))["install"]]
others = [name for name in installs if name != "my-ops"]
assert not others, f"installing my_ops would also install {others}: it must keep the user's torch"
PY
"$python" -m pip install --quiet --no-deps --target "$work/from-index" "$work"/index/my_ops-*.whl
smoke "$work/from-index"

sums=SHA256SUMS
[ "${NIGHTLY:-0}" = 1 ] && sums="SHA256SUMS-$version"  # the rolling nightly release holds several versions
echo "== $releases/$tag: the same wheel, and $sums"
wheel=$(basename "$work"/index/my_ops-*.whl)
mkdir "$work/release"
for file in "${wheel//+/%2B}" "$sums"; do
    "$python" - "$releases/$tag/$file" "$work/release" <<'PY'
import os, sys, urllib.parse, urllib.request
with urllib.request.urlopen(sys.argv[1], timeout=120) as response:
    data = response.read()
name = urllib.parse.unquote(sys.argv[1].rsplit("/", 1)[1])
with open(os.path.join(sys.argv[2], name), "wb") as out:
    out.write(data)
PY
done
cmp "$work/index/$wheel" "$work/release/$wheel"
(cd "$work/release" && awk -v f="$wheel" '$2 == f' "$sums" | grep . | sha256sum --check --quiet -)
"$python" -m pip install --quiet --no-deps --target "$work/from-release" "$work/release/$wheel"
smoke "$work/from-release"
[ "$("$python" -c 'import torch; print(torch.__version__)')" = "$torch_before" ]
echo "published my_ops $version verified: index and release serve the same tested bytes"
