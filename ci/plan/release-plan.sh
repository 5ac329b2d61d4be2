#!/usr/bin/env bash
# What a release run does, as `key=value` lines for $GITHUB_OUTPUT (printed
# when it is unset):
#   kind             release (a v* tag) or nightly
#   nightly-version  YYYYMMDDHHMM (UTC) for nightlies, else empty: the wheels
#                    become 1.0.(patch+1).devYYYYMMDDHHMM, unique per run
#   version          the version the run's wheels get (1.0.0, 1.0.1.devYYYYMMDDHHMM)
#   publish          true only in the canonical repository (build_support/matrix.toml),
#                    for a v* tag, the nightly schedule, or a manual run on
#                    main: forks and other branches run everything as a dry
#                    run and publish nothing
#   preflight-ref    the ref the preflight checks the settings for: this
#                    run's, or for a release dry run refs/tags/vVERSION
# Inputs (environment): EVENT, REF (e.g. refs/tags/v1.0.0), REPOSITORY (owner/name),
# DRY_RUN_KIND (release|nightly, a manual run's input: release makes it a
# release's dry run, built and assembled as the tag would be, published never).
set -euo pipefail
cd "$(dirname "$0")/../.."

event=${EVENT:?} ref=${REF:-} repository=${REPOSITORY:-}
canonical=$(python3 build_support/matrix.py default repository)
version=$(cat VERSION)
case "$ref" in
    refs/tags/v*)
        kind=release nightly_version=''
        if [ "${ref#refs/tags/v}" != "$version" ]; then
            echo "tag ${ref#refs/tags/} does not match VERSION $version" >&2
            exit 1
        fi
        ;;
    *)
        if [ "$event" = workflow_dispatch ] && [ "${DRY_RUN_KIND:-nightly}" = release ]; then
            # a manual dry run of a release: the version of VERSION, no nightly suffix, never published
            kind=release nightly_version=''
        else
            kind=nightly nightly_version=$(date -u +%Y%m%d%H%M)
        fi
        ;;
esac
publish=false
if [ "$repository" = "$canonical" ]; then
    case "$kind:$event:$ref" in
        release:push:*) publish=true ;;
        nightly:schedule:*) publish=true ;;
        nightly:workflow_dispatch:refs/heads/main) publish=true ;;
    esac
fi
output=${GITHUB_OUTPUT:-/dev/stdout}
{
    echo "kind=$kind"
    echo "nightly-version=$nightly_version"
    echo "version=$(MY_OPS_NIGHTLY=$nightly_version python3 -c 'import sys; sys.path.insert(0, "build_support")
import metadata_provider; print(metadata_provider.base_version())')"
    echo "publish=$publish"
    if [ "$kind" = release ]; then echo "preflight-ref=refs/tags/v$version"; else echo "preflight-ref=$ref"; fi
} >>"$output"
