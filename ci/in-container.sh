#!/usr/bin/env bash
# Run a command in a container image over this checkout, as a `container:`
# job would, but as a step: the image is pulled only now, after
# ci/free-disk.sh made room for it.
#
#   ci/in-container.sh IMAGE COMMAND [ARGS...]
# Environment: IN_CONTAINER_ENV, names of variables to pass through
# (space-separated). Without Docker (or with IMAGE empty) the command runs
# on this host, so every step also runs on a plain Linux machine.
set -euo pipefail
cd "$(dirname "$0")/.."

image=${1?usage: $0 IMAGE COMMAND [ARGS...]}
shift
if [ -z "$image" ] || ! command -v docker >/dev/null 2>&1 || ! docker info >/dev/null 2>&1; then
    echo "== no Docker engine (or no image): running $1 on this host"
    exec "$@"
fi
env_args=()
for name in ${IN_CONTAINER_ENV:-}; do
    env_args+=(--env "$name")
done
echo "== docker run $image $*"
exec docker run --rm --volume "$PWD:$PWD" --workdir "$PWD" "${env_args[@]}" "$image" "$@"
