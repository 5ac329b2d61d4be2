#!/usr/bin/env bash
# Assemble everything a release publishes, from a folder of verified wheels:
#
#   ci/assemble-release.sh --wheels DIR [--previous DIR] [--previous-nightly DIR]
#                          [--out release] [--kind release|nightly]
#
#   release/dist/     every wheel and the sdist: the GitHub Release assets
#   release/dist/SHA256SUMS
#   release/pypi/     the sdist and the label-free wheels: what goes to PyPI
#   release/site/     the PEP 503 index per pair and the install selector:
#                     GitHub Pages (whl/..., or whl/nightly/... for --kind nightly)
#
# --previous / --previous-nightly: wheels published before (earlier releases'
# and nightlies' assets), indexed again so the new site, which replaces the
# old one, keeps them. The same inputs give the same output.
set -euo pipefail
cd "$(dirname "$0")/.."

wheels='' previous='' previous_nightly='' out=release nightly=()
python=${PYTHON:-.venv/bin/python}
while [ $# -gt 0 ]; do
    case "$1" in
        --wheels) wheels=$2; shift 2 ;;
        --previous) previous=$2; shift 2 ;;
        --previous-nightly) previous_nightly=$2; shift 2 ;;
        --out) out=$2; shift 2 ;;
        --kind)
            case "$2" in
                release) nightly=() ;;
                nightly) nightly=(--nightly) ;;
                *) echo "$0: --kind is release or nightly, not '$2'" >&2; exit 2 ;;
            esac
            shift 2 ;;
        *) echo "usage: $0 --wheels DIR [--previous DIR] [--previous-nightly DIR] [--out DIR] [--kind release|nightly]" >&2; exit 2 ;;
    esac
done
[ -n "$wheels" ] || { echo "$0: --wheels is required" >&2; exit 2; }

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

echo "== SHA256SUMS"
(cd "$out/dist" && sha256sum -- my_ops-* | LC_ALL=C sort -k2 >SHA256SUMS)

echo "== index"
"$python" scripts/make_index.py --site "$out/site" "${nightly[@]}" "$out/dist"
if [ -n "$previous" ] && [ -d "$previous" ]; then
    "$python" scripts/make_index.py --site "$out/site" "$previous"
fi
if [ -n "$previous_nightly" ] && [ -d "$previous_nightly" ]; then
    "$python" scripts/make_index.py --site "$out/site" --nightly "$previous_nightly"
fi
"$python" scripts/make_landing_page.py --site "$out/site"
echo "== $out: $(find "$out/dist" -name '*.whl' | wc -l) wheels, $(find "$out/pypi" -type f | wc -l) files for PyPI"
