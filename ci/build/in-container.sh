#!/usr/bin/env bash
# Run a command in a container image over this checkout, as a `container:`
# job would, but as a step: the image is pulled only now, after
# ci/build/free-disk.sh made room for it.
#
#   ci/build/in-container.sh IMAGE COMMAND [ARGS...]
# Environment: IN_CONTAINER_ENV, names of variables to pass through
# (space-separated). With IMAGE empty the command runs on this host, so every
# step also runs on a plain Linux machine. An IMAGE without a Docker engine
# is an error where CI=true (a release built outside its image would not be
# the pinned build), and runs on the host elsewhere, or where
# IN_CONTAINER_ALLOW_HOST=1 (the workflow test's act runs, which have no
# engine).
set -euo pipefail
cd "$(dirname "$0")/../.."

image=${1?usage: $0 IMAGE COMMAND [ARGS...]}
shift
if [ -z "$image" ]; then
    exec "$@"
fi
if ! command -v docker >/dev/null 2>&1 || ! docker info >/dev/null 2>&1; then
    if [ "${CI:-}" = true ] && [ "${IN_CONTAINER_ALLOW_HOST:-0}" != 1 ]; then
        echo "$0: no Docker engine to run $image in; the build must run in its pinned image" >&2
        exit 1
    fi
    echo "== no Docker engine: running $1 on this host instead of in $image"
    exec "$@"
fi
env_args=()
for name in ${IN_CONTAINER_ENV:-}; do
    env_args+=(--env "$name")
done
echo "== docker pull $image"
docker pull --quiet "$image"
df -h / "$(docker info --format '{{.DockerRootDir}}')" | awk 'NR == 1 || !seen[$0]++'  # room left after the pull
echo "== docker run $image $*"
exec docker run --rm --volume "$PWD:$PWD" --workdir "$PWD" "${env_args[@]}" "$image" "$@"
