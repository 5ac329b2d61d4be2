#!/usr/bin/env bash
# The GitHub Release of a run, in steps, so nothing is public before it is
# complete, and nothing published is removed before the new files were
# verified:
#
#   ci/release/publish-github-release.sh upload release|nightly TAG DIR
#       release: a DRAFT release named TAG with every file of DIR.
#       nightly: the rolling "nightly" pre-release gets this night's files
#       (created at the first nightly, its tag on COMMIT).
#       Before a nightly's upload, versions beyond the newest `nightly_keep`
#       are deleted (as prune does), so failed nights never fill the release.
#       A re-run after the release went public finishes it: files it already
#       has are checked against DIR byte for byte (a difference stops the job,
#       nothing is replaced), only the missing ones are uploaded.
#   ci/release/publish-github-release.sh finalize release|nightly TAG [DIR]
#       release: the draft becomes public, once it holds exactly DIR's files
#       with DIR's bytes (nothing more, nothing missing). nightly: the release notes name
#       the newest nightly's commit. The `nightly` tag is never moved: a
#       workflow token may not move a tag across changes to workflow files.
#   ci/release/publish-github-release.sh prune nightly TAG
#       after the published nightly was verified: the files of versions
#       older than the newest `nightly_keep` (build_support/matrix.toml) are
#       deleted, the ones ci/release/build-site.sh no longer indexes.
#
# Needs gh, python3, GH_TOKEN (contents: write) and GH_REPO; the nightly's upload and finalize
# need COMMIT (the commit it was built from).
set -euo pipefail
cd "$(dirname "$0")/../.."

# Upload DIR's files that release TAG lacks; stop if one it has differs (ci/release/published.py).
upload_missing() {
    local tag=$1 dir=$2 missing
    missing=$(API_URL=${API_URL:-https://api.github.com} REPOSITORY=${REPOSITORY:-${GH_REPO:?GH_REPO}} \
        python3 ci/release/published.py github --tag "$tag" --dir "$dir" "${@:3}")
    if [ -z "$missing" ]; then
        echo "release $tag already holds every file, byte for byte: nothing to upload"
        return 0
    fi
    local files=()
    while IFS= read -r name; do files+=("$dir/$name"); done <<<"$missing"
    echo "release $tag: uploading the ${#files[@]} files it lacks"
    gh release upload "$tag" "${files[@]}"
}

# Delete the nightly release's files of every version but the newest KEEP.
prune_nightly() {
    local keep=$1 assets versions old version
    assets=$(gh release view nightly --json assets --jq '.assets[].name')
    # versions as ci/release/build-site.sh counts them: from the wheels
    versions=$(printf '%s\n' "$assets" | sed -n 's/^my_ops-\([^-+]*\)[-+].*\.whl$/\1/p' | sort -u -V)
    old=$(printf '%s\n' "$versions" | head -n "-$keep")
    for version in $old; do
        # every file of that version (wheels, their .metadata, the sdist, its checksums), each once
        printf '%s\n' "$assets" | grep -E -e "^my_ops-${version//./\\.}[-+.]" -e "^SHA256SUMS-${version//./\\.}\$" |
            sort -u | while read -r asset; do
                echo "deleting $asset (older than the newest $keep nightlies)"
                gh release delete-asset nightly "$asset" --yes
            done
    done
}

step=${1:?usage: $0 upload|finalize|prune release|nightly TAG [DIR]} kind=${2:?} tag=${3:?}
[ "$kind" = nightly ] && tag=nightly
case "$step:$kind" in
    upload:release)
        dir=${4:?DIR}
        # A draft is not public yet: (re)upload everything. A published
        # release's assets are what users downloaded and verified: a re-run
        # finishes it (uploads what is missing) only when every asset it has
        # is byte for byte this run's sealed file, and refuses otherwise.
        # One lookup, and only gh's "release not found" means none: any other
        # failure (a 5xx, a rate limit) stops here, since taking it for "not
        # published" would --clobber the assets of a public release.
        errors=$(mktemp)
        if is_draft=$(gh release view "$tag" --json isDraft --jq .isDraft 2>"$errors"); then
            :
        elif grep -q "release not found" "$errors"; then
            is_draft=none
        else
            cat "$errors" >&2
            echo "cannot tell whether release $tag exists (above); nothing uploaded: re-run the job" >&2
            exit 1
        fi
        case "$is_draft" in
            false)
                upload_missing "$tag" "$dir" --exact
                exit 0
                ;;
            none)
                gh release create "$tag" --draft --verify-tag --title "my_ops $tag" \
                    --notes "Wheels for every CUDA/PyTorch pair; verify downloads with SHA256SUMS and \`gh attestation verify\`."
                ;;
            true) ;;
            *) echo "gh release view $tag: unexpected isDraft '$is_draft'; nothing uploaded" >&2; exit 1 ;;
        esac
        gh release upload "$tag" --clobber "$dir"/*
        ;;
    upload:nightly)
        dir=${4:?DIR}
        commit=${COMMIT:?COMMIT: the commit the nightly was built from}
        if ! gh release view nightly >/dev/null 2>&1; then
            gh release create nightly --prerelease --title "my_ops nightly" --target "$commit" \
                --notes "Nightly builds (1.0.x.devYYYYMMDDHHMM); not for production."
        fi
        # Room first: ~40 files a night against GitHub's 1000 assets a release.
        # prune-nightly runs only after a verified nightly; nights whose verify
        # failed would otherwise pile up until every upload is refused. The
        # newest nightly_keep versions stay (the ones the live index lists).
        prune_nightly "$(python3 build_support/matrix.py default nightly_keep)"
        # the rolling release is public: a re-run adds only what is missing, never replaces
        upload_missing nightly "$dir"
        ;;
    finalize:release)
        # What goes public is exactly the sealed folder: an asset added to the draft by hand, or one
        # that differs, stops here (the upload only replaced same-named files).
        if [ -n "${4:-}" ]; then
            API_URL=${API_URL:-https://api.github.com} REPOSITORY=${REPOSITORY:-${GH_REPO:?GH_REPO}} \
                python3 ci/release/published.py github --tag "$tag" --dir "$4" --complete >/dev/null
        fi
        # "Latest" only for the highest version: a 1.0.x patch after 1.1.0, or a re-run
        # finishing an older release, must not take it from 1.1.0 (GitHub would: publishing
        # marks a release latest unless told otherwise). Tags are vX.Y.Z: sort -V orders them.
        newest=$(gh release list --exclude-drafts --exclude-pre-releases --limit 1000 \
            --json tagName --jq '.[].tagName' | { grep '^v[0-9]' || true; echo "$tag"; } | sort -V | tail -n 1)
        if [ "$newest" = "$tag" ]; then
            gh release edit "$tag" --draft=false --latest
        else
            echo "release $tag: $newest is newer and stays Latest"
            gh release edit "$tag" --draft=false --latest=false
        fi
        ;;
    finalize:nightly)
        commit=${COMMIT:?COMMIT: the commit the nightly was built from}
        gh release edit nightly --notes "Nightly builds (1.0.x.devYYYYMMDDHHMM); not for production. \
The newest was built from $commit on $(date -u +%Y-%m-%d); each version's files are listed in its SHA256SUMS-VERSION. \
The nightly tag marks the first nightly only."
        ;;
    prune:nightly)
        prune_nightly "$(python3 build_support/matrix.py default nightly_keep)"
        ;;
    *) echo "usage: $0 upload|finalize|prune release|nightly TAG [DIR]" >&2; exit 2 ;;
esac
