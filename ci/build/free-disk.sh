#!/usr/bin/env bash
# Make room for a CUDA builder image on a GitHub-hosted Linux runner before
# it is pulled: PyTorch's manylinux CUDA builders unpack to more than the
# free space such a runner starts with. Removes preinstalled SDKs this project
# never uses and the runner's cached Docker images. Anything already absent
# is skipped, so it runs (and does nothing harmful) on any Linux host; it
# only deletes where CI=true, as on a hosted runner.
set -euo pipefail

df -h / | tail -n 1 | awk '{print "free before: " $4}'
if [ "${CI:-}" != "true" ] || [ "${RUNNER_ENVIRONMENT:-}" != "github-hosted" ]; then
    echo "not a GitHub-hosted runner (CI=${CI:-}, RUNNER_ENVIRONMENT=${RUNNER_ENVIRONMENT:-}): nothing removed"
    exit 0
fi
sudo=""
[ "$(id -u)" = 0 ] || sudo="sudo"
for dir in /usr/share/dotnet /usr/local/lib/android /opt/ghc /usr/local/.ghcup /opt/hostedtoolcache/CodeQL \
    /usr/local/share/powershell /usr/share/swift /usr/local/julia*; do
    [ -e "$dir" ] && $sudo rm -rf "$dir"
done
if command -v docker >/dev/null 2>&1; then
    docker image prune --all --force >/dev/null || true
    # Images go where the most room is: x64 hosted runners have a second disk
    # at /mnt with more free space than / (Docker's default root).
    if mountpoint -q /mnt && [ "$(df --output=avail -k /mnt | tail -n 1)" -gt "$(df --output=avail -k / | tail -n 1)" ]; then
        echo "moving Docker's data root to /mnt/docker"
        $sudo systemctl stop docker docker.socket
        $sudo mkdir -p /mnt/docker /etc/docker
        config=$($sudo cat /etc/docker/daemon.json 2>/dev/null || echo '{}')
        printf '%s' "$config" | python3 -c 'import json, sys; c = json.load(sys.stdin); c["data-root"] = "/mnt/docker"; print(json.dumps(c))' |
            $sudo tee /etc/docker/daemon.json >/dev/null
        $sudo systemctl start docker
        docker info --format 'Docker root: {{.DockerRootDir}}'
    fi
fi
df -h / | tail -n 1 | awk '{print "free after: " $4}'
if [ -d /mnt ]; then
    df -h /mnt | tail -n 1 | awk '{print "free on /mnt: " $4}'
fi
