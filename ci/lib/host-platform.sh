#!/usr/bin/env bash
# The platform of this host as build_support/matrix.toml names it: linux,
# linux-aarch64, windows (Git Bash) or macos (Apple silicon); anything else
# is an error.
set -euo pipefail
case "$(uname -s)-$(uname -m)" in
    Linux-x86_64) echo linux ;;
    Linux-aarch64 | Linux-arm64) echo linux-aarch64 ;;
    MINGW*-* | MSYS*-* | CYGWIN*-*) echo windows ;;
    Darwin-arm64) echo macos ;;
    *) echo "$0: no wheels are built for $(uname -s) $(uname -m)" >&2; exit 2 ;;
esac
