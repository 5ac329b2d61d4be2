#!/usr/bin/env bash
# Assemble everything a release publishes, from a folder of verified wheels:
#
#   ci/assemble-release.sh --wheels DIR [--manifest JSON] [--previous DIR] [--previous-nightly DIR]
#                          [--out release] [--kind release|nightly] [--files-url URL]
#
# --manifest: file name -> sha256 of every wheel the release may publish
# (ci/bundle-wheels.py, sealed before any test job ran): a wheel under DIR
# that is not in it, or whose bytes differ, stops the release, and so does a
# wheel of the manifest that is missing.
#
#   release/dist/     every wheel, its PEP 658 .metadata and the sdist: the
#                     GitHub Release assets
#   release/dist/SHA256SUMS
#   release/pypi/     the sdist and the label-free wheels: what goes to PyPI
#   release/site/     the PEP 503 indexes and the install selector: GitHub
#                     Pages (whl/..., whl/nightly/... for nightlies)
#
# --previous / --previous-nightly: wheels published before (earlier releases'
# and nightlies' assets), indexed again so the new site, which replaces the
# old one, keeps them; of the nightlies only the newest `nightly_keep`
# versions (scripts/matrix.toml). --files-url: where the releases' assets are
# downloaded from (https://github.com/OWNER/REPO/releases/download): the
# pages link the wheels there and the site holds pages only. Without it the
# wheels are copied into the site (a self-contained index, e.g. for tests).
# The same inputs give the same output.
set -euo pipefail
cd "$(dirname "$0")/.."

wheels='' manifest='' previous='' previous_nightly='' out=release nightly=() files_url=()
python=${PYTHON:-.venv/bin/python}
while [ $# -gt 0 ]; do
    case "$1" in
        --wheels) wheels=$2; shift 2 ;;
        --manifest) manifest=$2; shift 2 ;;
        --previous) previous=$2; shift 2 ;;
        --previous-nightly) previous_nightly=$2; shift 2 ;;
        --out) out=$2; shift 2 ;;
        --files-url) files_url=(--files-url "$2"); shift 2 ;;
        --kind)
            case "$2" in
                release) nightly=() ;;
                nightly) nightly=(--nightly) ;;
                *) echo "$0: --kind is release or nightly, not '$2'" >&2; exit 2 ;;
            esac
            shift 2 ;;
        *) echo "usage: $0 --wheels DIR [--previous DIR] [--previous-nightly DIR] [--out DIR] [--kind release|nightly] [--files-url URL]" >&2; exit 2 ;;
    esac
done
[ -n "$wheels" ] || { echo "$0: --wheels is required" >&2; exit 2; }
if [ -n "$manifest" ]; then
    "$python" - "$manifest" "$wheels" <<'PY'
import hashlib, json, pathlib, sys
manifest = json.loads(pathlib.Path(sys.argv[1]).read_text())
found = sorted(pathlib.Path(sys.argv[2]).rglob("my_ops-*.whl"))
problems = [f"{w}: not sealed by this run's bundle job" for w in found if w.name not in manifest]
problems += [f"{w}: bytes differ from the sealed sha256" for w in found
             if w.name in manifest and hashlib.sha256(w.read_bytes()).hexdigest() != manifest[w.name]]
problems += [f"{name}: sealed but missing" for name in sorted(set(manifest) - {w.name for w in found})]
for problem in problems:
    print(f"::error::{problem}")
sys.exit(1 if problems else 0)
PY
fi

rm -rf "$out"
mkdir -p "$out/dist" "$out/pypi" "$out/site"
while IFS= read -r -d '' wheel; do
    target="$out/dist/$(basename "$wheel")"
    if [ -e "$target" ] && ! cmp -s "$wheel" "$target"; then
        echo "$0: two different wheels named $(basename "$wheel") under $wheels" >&2
        exit 1
    fi
    cp "$wheel" "$target"
done < <(find "$wheels" -name 'my_ops-*.whl' -print0)
[ -n "$(ls "$out/dist")" ] || { echo "$0: no my_ops wheels under $wheels" >&2; exit 1; }

echo "== sdist"
"$python" -m build --sdist --no-isolation --outdir "$out/dist" . >/dev/null
for file in "$out"/dist/*; do
    case "$(basename "$file")" in
        *.tar.gz) cp "$file" "$out/pypi/" ;;
        *+*.whl) ;;  # a local label: our index only (PyPI refuses it)
        *.whl) cp "$file" "$out/pypi/" ;;
    esac
done


echo "== index"
"$python" scripts/make_index.py --site "$out/site" "${nightly[@]}" "${files_url[@]}" "$out/dist"
if [ -n "$previous" ] && [ -d "$previous" ]; then
    "$python" scripts/make_index.py --site "$out/site" "${files_url[@]}" "$previous"
fi
if [ -n "$previous_nightly" ] && [ -d "$previous_nightly" ]; then
    # the newest nightly versions only: the index does not grow night after night
    keep=$("$python" scripts/matrix.py default nightly_keep)
    recent=$(mktemp -d)
    find "$previous_nightly" -name 'my_ops-*.whl' | sed 's#.*/my_ops-\([^-+]*\).*#\1#' | sort -u -V |
        tail -n "$keep" | while read -r version; do
            find "$previous_nightly" -name "my_ops-${version}[-+]*.whl" -exec cp {} "$recent/" \;
        done
    "$python" scripts/make_index.py --site "$out/site" --nightly "${files_url[@]}" "$recent"
    rm -rf "$recent"
fi
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
if [ ${#files_url[@]} -gt 0 ]; then
    rm -rf "$out/site/whl/files" "$out/site/whl/nightly/files"  # the pages link the release assets
fi
echo "== SHA256SUMS"
(cd "$out/dist" && sha256sum -- my_ops-* | LC_ALL=C sort -k2 >SHA256SUMS)
"$python" scripts/make_landing_page.py --site "$out/site"
echo "== $out: $(find "$out/dist" -name '*.whl' | wc -l) wheels, $(find "$out/pypi" -type f | wc -l) files for PyPI"
