#!/usr/bin/env bash
# Build the GitHub Pages site: the PEP 503 indexes of every published wheel
# and the install selector.
#
#   ci/release/build-site.sh --out site [--dist DIR] [--kind release|nightly]
#                    [--previous DIR] [--previous-nightly DIR] [--files-url URL]
#
# --dist: this run's release folder (ci/release/assemble-release.sh's dist/), indexed
# as a release or, with --kind nightly, as a nightly. --previous /
# --previous-nightly: wheels published before (ci/release/fetch-released-wheels.sh),
# indexed again because each deploy replaces the whole site. Of the
# nightlies (this one included) only the newest `nightly_keep` versions of
# build_support/matrix.toml are indexed: the same ones the nightly release keeps
# (ci/release/publish-github-release.sh prune). --files-url: where the releases'
# assets are downloaded from (https://github.com/OWNER/REPO/releases/download):
# the pages link the wheels there and the site holds pages only. Without it
# the wheels are copied into the site (a self-contained index, e.g. for
# tests). The same inputs give the same site.
set -euo pipefail
cd "$(dirname "$0")/../.."

dist='' kind=release previous='' previous_nightly='' out='' files_url=()
python=${PYTHON:-python3}
while [ $# -gt 0 ]; do
    case "$1" in
        --dist) dist=$2; shift 2 ;;
        --kind) kind=$2; shift 2 ;;
        --previous) previous=$2; shift 2 ;;
        --previous-nightly) previous_nightly=$2; shift 2 ;;
        --out) out=$2; shift 2 ;;
        --files-url) files_url=(--files-url "$2"); shift 2 ;;
        *) echo "usage: $0 --out DIR [--dist DIR] [--kind release|nightly] [--previous DIR] [--previous-nightly DIR] [--files-url URL]" >&2; exit 2 ;;
    esac
done
[ -n "$out" ] || { echo "$0: --out is required" >&2; exit 2; }
case "$kind" in release | nightly) ;; *) echo "$0: --kind is release or nightly, not '$kind'" >&2; exit 2 ;; esac

rm -rf "$out"
mkdir -p "$out"
releases=() nightlies=()
[ -n "$dist" ] && { [ "$kind" = release ] && releases+=("$dist") || nightlies+=("$dist"); }
[ -n "$previous" ] && [ -d "$previous" ] && releases+=("$previous")
[ -n "$previous_nightly" ] && [ -d "$previous_nightly" ] && nightlies+=("$previous_nightly")

if [ ${#releases[@]} -gt 0 ]; then
    echo "== releases: ${releases[*]}"
    "$python" ci/release/make_index.py --site "$out" "${files_url[@]}" "${releases[@]}"
fi
if [ ${#nightlies[@]} -gt 0 ]; then
    keep=$("$python" build_support/matrix.py default nightly_keep)
    recent=$(mktemp -d)
    trap 'rm -rf "$recent"' EXIT
    # a version may be in both (this night's, already uploaded): one copy each
    find "${nightlies[@]}" -name 'my_ops-*.whl' | sed 's#.*/my_ops-\([^-+]*\).*#\1#' | sort -u -V |
        tail -n "$keep" | while read -r version; do
            find "${nightlies[@]}" -name "my_ops-${version}[-+]*.whl" -exec cp -f {} "$recent/" \;
        done
    echo "== nightlies: the newest $keep versions"
    "$python" ci/release/make_index.py --site "$out" --nightly "${files_url[@]}" "$recent"
fi
if [ ${#files_url[@]} -gt 0 ]; then
    rm -rf "$out/whl/files" "$out/whl/nightly/files"  # the pages link the release assets
fi
"$python" ci/release/make_landing_page.py --site "$out"
echo "== $out: $(find "$out" -name index.html | wc -l) pages"
