#!/usr/bin/env bash
# Create or update the GitHub Release of this run and upload its files:
#   ci/publish-github-release.sh KIND TAG DIR
# KIND release: a normal release named TAG. KIND nightly: the rolling
# pre-release "nightly" (files of earlier nights stay). Needs gh and GH_TOKEN.
set -euo pipefail

kind=${1:?usage: $0 release|nightly TAG DIR} tag=${2:?} dir=${3:?}
flags=(--title "my_ops $tag" --notes "Wheels for every CUDA/PyTorch pair; verify downloads with SHA256SUMS and \`gh attestation verify\`.")
if [ "$kind" = nightly ]; then
    tag=nightly
    flags=(--title "my_ops nightly" --prerelease --notes "Nightly builds (1.0.x.devYYYYMMDD); not for production.")
fi
if ! gh release view "$tag" >/dev/null 2>&1; then
    gh release create "$tag" "${flags[@]}"
fi
gh release upload "$tag" --clobber "$dir"/*
