#!/usr/bin/env bash
# Download the wheels of earlier GitHub Releases, so a new index keeps them:
#   ci/release/fetch-released-wheels.sh OUT_DIR [release|nightly]
# release: every v* release; nightly: the rolling "nightly" pre-release.
# Needs the gh CLI and GH_TOKEN (read access). With no releases yet, OUT_DIR
# stays empty; any failed download fails the script (a page rebuilt without
# an earlier release's wheels would drop that release from the index).
set -euo pipefail

out=${1:?usage: $0 OUT_DIR [release|nightly]}
kind=${2:-release}
mkdir -p "$out"
if [ "$kind" = nightly ]; then
    tags=$(gh release list --limit 1000 --json tagName --jq '.[].tagName | select(. == "nightly")')
else
    tags=$(gh release list --limit 1000 --exclude-drafts --json tagName --jq '.[].tagName | select(startswith("v"))')
fi
for tag in $tags; do
    echo "== wheels of $tag"
    # The labelled wheels only: the index pages list nothing else (PyPI
    # serves the label-free ones), and each page's entries come from the
    # wheel itself (its build info names the pairs it serves; its bytes give
    # the #sha256), so every labelled wheel is downloaded, not its metadata.
    gh release download "$tag" --pattern 'my_ops-*+*.whl' --dir "$out/$tag" --skip-existing
done
