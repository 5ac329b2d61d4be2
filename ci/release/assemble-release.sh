#!/usr/bin/env bash
# Assemble everything a release publishes, from a folder of verified wheels:
#
#   ci/release/assemble-release.sh --wheels DIR [--manifest JSON] [--out release]
#
# --manifest: file name -> sha256 of every wheel the release may publish
# (ci/build/bundle-wheels.py, sealed before any test job ran): a wheel under DIR
# that is not in it, or whose bytes differ, stops the release, and so does a
# wheel of the manifest that is missing.
#
#   release/dist/     every wheel, its PEP 658 .metadata and the sdist: the
#                     GitHub Release assets
#   release/dist/SHA256SUMS (a nightly: SHA256SUMS-VERSION, since the rolling
#                     nightly release holds several versions)
#   release/pypi/     the sdist and the label-free wheels: what goes to PyPI
#
# The index pages are built later, from what is published at that moment
# (ci/release/build-site.sh, in the release workflow's pages job). The sdist's
# version follows MY_OPS_NIGHTLY as the wheels' does. The same inputs give
# the same output. The sdist holds exactly the tracked files (plus PKG-INFO):
# ci/release/check-sdist.py checks it against `git ls-files`.
set -euo pipefail
cd "$(dirname "$0")/../.."

wheels='' manifest='' out=release
python=${PYTHON:-.venv/bin/python}
while [ $# -gt 0 ]; do
    case "$1" in
        --wheels) wheels=$2; shift 2 ;;
        --manifest) manifest=$2; shift 2 ;;
        --out) out=$2; shift 2 ;;
        *) echo "usage: $0 --wheels DIR [--manifest JSON] [--out DIR]" >&2; exit 2 ;;
    esac
done
[ -n "$wheels" ] || { echo "$0: --wheels is required" >&2; exit 2; }
if [ -n "$manifest" ]; then
    "$python" - "$manifest" "$wheels" "$(dirname "$0")" <<'PY'
import json, pathlib, sys
sys.path.insert(0, sys.argv[3])
from file_sha256 import sha256
manifest = json.loads(pathlib.Path(sys.argv[1]).read_text())
found = sorted(pathlib.Path(sys.argv[2]).rglob("my_ops-*.whl"))
problems = [f"{w}: not sealed by this run's bundle job" for w in found if w.name not in manifest]
problems += [f"{w}: bytes differ from the sealed sha256" for w in found
             if w.name in manifest and sha256(w) != manifest[w.name]]
problems += [f"{name}: sealed but missing" for name in sorted(set(manifest) - {w.name for w in found})]
for problem in problems:
    print(f"::error::{problem}")
sys.exit(1 if problems else 0)
PY
fi

rm -rf "$out"
mkdir -p "$out/dist" "$out/pypi"
while IFS= read -r -d '' wheel; do
    target="$out/dist/$(basename "$wheel")"
    if [ -e "$target" ] && ! cmp -s "$wheel" "$target"; then
        echo "$0: two different wheels named $(basename "$wheel") under $wheels" >&2
        exit 1
    fi
    cp "$wheel" "$target"
done < <(find "$wheels" -name 'my_ops-*.whl' -print0)
[ -n "$(ls "$out/dist")" ] || { echo "$0: no my_ops wheels under $wheels" >&2; exit 1; }

# The sdist is built from a copy of the tracked files only: the builder walks
# its source tree, and this checkout may hold what a job downloaded or built
# (the wheels themselves). check-sdist.py then proves it, before any upload.
echo "== sdist"
tree=$(mktemp -d)
trap 'rm -rf "$tree"' EXIT
git ls-files -z | tar --null --files-from=- -cf - | tar -xf - -C "$tree"
if [ -z "${SOURCE_DATE_EPOCH:-}" ]; then  # the same sdist bytes from the same commit
    SOURCE_DATE_EPOCH=$(git log -1 --format=%ct)
    export SOURCE_DATE_EPOCH
fi
"$python" -m build --sdist --no-isolation --outdir "$out/dist" "$tree" >/dev/null
"$python" ci/release/check-sdist.py "$out"/dist/my_ops-*.tar.gz
for file in "$out"/dist/*; do
    case "$(basename "$file")" in
        *.tar.gz) cp "$file" "$out/pypi/" ;;
        *+*.whl) ;;  # a local label: our index only (PyPI refuses it)
        *.whl) cp "$file" "$out/pypi/" ;;
    esac
done

# PEP 658 metadata beside each indexed wheel, where the index links it
"$python" - "$out"/dist/my_ops-*+*.whl <<'PY'
import os, sys, zipfile
for wheel in sys.argv[1:]:
    if not os.path.exists(wheel):  # the unexpanded pattern: no labelled wheel
        continue
    with zipfile.ZipFile(wheel) as zf:
        name = next(n for n in zf.namelist() if n.endswith(".dist-info/METADATA"))
        open(wheel + ".metadata", "wb").write(zf.read(name))
PY
sdist=$(find "$out/dist" -name 'my_ops-*.tar.gz')
version=$(basename "$sdist" .tar.gz)
version=${version#my_ops-}
# one version for everything (a nightly's sdist needs MY_OPS_NIGHTLY, as its wheels did)
for wheel in "$out"/dist/my_ops-*.whl; do
    case "$(basename "$wheel")" in
        "my_ops-$version+"* | "my_ops-$version-"*) ;;
        *) echo "$0: the sdist is my_ops $version, but $(basename "$wheel") is not" >&2; exit 1 ;;
    esac
done
sums=SHA256SUMS
case "$version" in *.dev*) sums="SHA256SUMS-$version" ;; esac
echo "== $sums"
(cd "$out/dist" && sha256sum -- my_ops-* | LC_ALL=C sort -k2 >"$sums")
echo "== $out: $(find "$out/dist" -name '*.whl' | wc -l) wheels, $(find "$out/pypi" -type f | wc -l) files for PyPI"
