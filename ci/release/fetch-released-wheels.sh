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
    gh release download "$tag" --pattern 'my_ops-*.whl' --dir "$out/$tag" --skip-existing
done
