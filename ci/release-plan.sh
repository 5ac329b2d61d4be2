#!/usr/bin/env bash
# What a release run does, as `key=value` lines for $GITHUB_OUTPUT (printed
# when it is unset):
#   nightly-date  YYYYMMDD for scheduled and nightly-dispatched runs, else empty
#   publish       true only in the canonical repository (scripts/matrix.toml):
#                 forks run everything as a dry run and publish nothing
#   kind          release (a v* tag) or nightly
# Inputs (environment): EVENT, REF (e.g. refs/tags/v1.0.0), REPOSITORY (owner/name).
set -euo pipefail
cd "$(dirname "$0")/.."

event=${EVENT:?} ref=${REF:-} repository=${REPOSITORY:-}
canonical=$(python3 scripts/matrix.py default repository)
version=$(cat VERSION)
case "$ref" in
    refs/tags/v*)
        kind=release nightly_date=''
        if [ "${ref#refs/tags/v}" != "$version" ]; then
            echo "tag ${ref#refs/tags/} does not match VERSION $version" >&2
            exit 1
        fi
        ;;
    *) kind=nightly nightly_date=$(date -u +%Y%m%d) ;;
esac
publish=false
if [ "$repository" = "$canonical" ] && { [ "$kind" = release ] || [ "$event" = schedule ] || [ "$event" = workflow_dispatch ]; }; then
    publish=true
fi
output=${GITHUB_OUTPUT:-/dev/stdout}
{
    echo "kind=$kind"
    echo "nightly-date=$nightly_date"
    echo "publish=$publish"
} >>"$output"
