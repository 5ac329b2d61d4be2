#!/usr/bin/env bash
# The GitHub Release of a run, in two steps, so nothing is public before
# everything else (PyPI, Pages) has been published:
#
#   ci/publish-github-release.sh upload release|nightly TAG DIR
#       release: a DRAFT release named TAG with every file of DIR.
#       nightly: the rolling "nightly" pre-release: this night's files are
#       added, and the files of versions older than the newest `nightly_keep`
#       (scripts/matrix.toml) are deleted.
#   ci/publish-github-release.sh finalize release|nightly TAG
#       release: the draft becomes public. nightly: the `nightly` tag moves to
#       COMMIT (the commit the nightly was built from).
#
# Needs gh and GH_TOKEN (contents: write); finalize nightly needs COMMIT.
set -euo pipefail
cd "$(dirname "$0")/.."

step=${1:?usage: $0 upload|finalize release|nightly TAG [DIR]} kind=${2:?} tag=${3:?}
[ "$kind" = nightly ] && tag=nightly
case "$step:$kind" in
    upload:release)
        dir=${4:?DIR}
        if ! gh release view "$tag" >/dev/null 2>&1; then
            gh release create "$tag" --draft --verify-tag --title "my_ops $tag" \
                --notes "Wheels for every CUDA/PyTorch pair; verify downloads with SHA256SUMS and \`gh attestation verify\`."
        fi
        gh release upload "$tag" --clobber "$dir"/*
        ;;
    upload:nightly)
        dir=${4:?DIR}
        if ! gh release view nightly >/dev/null 2>&1; then
            gh release create nightly --prerelease --title "my_ops nightly" --target "${COMMIT:-main}" \
                --notes "Nightly builds (1.0.x.devYYYYMMDDHHMM); not for production."
        fi
        gh release upload nightly --clobber "$dir"/*
        keep=$(python3 scripts/matrix.py default nightly_keep)
        assets=$(gh release view nightly --json assets --jq '.assets[].name')
        versions=$(printf '%s\n' "$assets" | sed -n 's/^my_ops-\([^-+]*\).*/\1/p' | sort -u -V)
        old=$(printf '%s\n' "$versions" | head -n "-$keep")
        for version in $old; do
            printf '%s\n' "$assets" | grep -F "my_ops-$version" | while read -r asset; do
                echo "deleting $asset (older than the newest $keep nightlies)"
                gh release delete-asset nightly "$asset" --yes
            done
        done
        ;;
    finalize:release)
        gh release edit "$tag" --draft=false --latest
        ;;
    finalize:nightly)
        commit=${COMMIT:?COMMIT: the commit the nightly was built from}
        repo=$(gh repo view --json nameWithOwner --jq .nameWithOwner)
        gh api -X PATCH "repos/$repo/git/refs/tags/nightly" -f sha="$commit" -F force=true >/dev/null
        echo "tag nightly -> $commit"
        ;;
    *) echo "usage: $0 upload|finalize release|nightly TAG [DIR]" >&2; exit 2 ;;
esac
