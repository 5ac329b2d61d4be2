#!/usr/bin/env bash
# Download the wheels of earlier GitHub Releases, so a new index keeps them:
#   ci/release/fetch-released-wheels.sh OUT_DIR [release|nightly]
# release: every v* release; nightly: the rolling "nightly" pre-release.
# Needs the gh CLI, curl and GH_TOKEN (read access). With no releases yet,
# OUT_DIR stays empty; any failed download fails the script (a page rebuilt
# without an earlier release's wheels would drop that release from the index).
#
# The labelled wheels only: the index pages list nothing else (PyPI serves the
# label-free ones), and each page's entries come from the wheel itself (its
# build info names the pairs it serves; its bytes give the #sha256), so every
# labelled wheel is downloaded, not only its metadata. The API lists each
# release's assets (a few paginated calls); the files come from their
# browser_download_url, outside the REST API's budget of the job's token
# (1000 requests an hour for the repository: `gh release download` spends one
# per file, some 300 a nightly index). The repository is public, so those
# URLs need no token.
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
    mkdir -p "$out/$tag"
    id=$(gh api "repos/{owner}/{repo}/releases/tags/$tag" --jq .id)
    gh api --paginate "repos/{owner}/{repo}/releases/$id/assets?per_page=100" \
        --jq '.[] | select(.name | test("^my_ops-[^/]*[+][^/]*[.]whl$"))
              | "\(.name) \(.browser_download_url) \(.digest // "")"' |
        while read -r name url digest; do
            [ -f "$out/$tag/$name" ] || curl -fsSL --retry 3 -o "$out/$tag/$name" "$url"
            # the index hashes these bytes for its #sha256= links: they must be the asset GitHub
            # lists (its digest, since June 2025), not whatever a download URL served
            got="sha256:$(sha256sum "$out/$tag/$name" | cut -d' ' -f1)"
            if [ -n "$digest" ] && [ "$got" != "$digest" ]; then
                echo "::error::$tag/$name: downloaded bytes ($got) are not the release asset's digest ($digest)" >&2
                exit 1
            fi
        done
done
