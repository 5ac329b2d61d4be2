#!/usr/bin/env bash
# Debian's chromium and chromium-driver for the install-selector test
# (tests/packaging/test_landing_page.py). Needs root (apt-get); elsewhere it says what
# is missing and the test is skipped.
set -euo pipefail
if command -v chromium >/dev/null && command -v chromedriver >/dev/null; then
    exit 0
fi
if [ "$(id -u)" != 0 ] || ! command -v apt-get >/dev/null; then
    echo "chromium/chromium-driver missing and apt-get unavailable: the install-selector test will be skipped" >&2
    exit 0
fi
echo "== installing chromium and chromium-driver"
export DEBIAN_FRONTEND=noninteractive
apt-get update -qq
apt-get install -y -qq chromium chromium-driver >/dev/null
