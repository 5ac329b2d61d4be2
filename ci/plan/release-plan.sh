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
# Inputs (environment): EVENT, REF (e.g. refs/tags/v1.0.0), REPOSITORY (owner/name).
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
    *) kind=nightly nightly_version=$(date -u +%Y%m%d%H%M) ;;
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
} >>"$output"
