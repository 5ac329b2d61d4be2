#!/usr/bin/env bash
# Windows build prerequisites that are not an action: long paths (the CUDA
# toolkit and pip's build folders exceed MAX_PATH). A no-op elsewhere, so it
# runs anywhere.
set -euo pipefail
case "$(uname -s)" in
    MINGW* | MSYS* | CYGWIN*)
        reg add 'HKLM\SYSTEM\CurrentControlSet\Control\FileSystem' //v LongPathsEnabled //t REG_DWORD //d 1 //f
        git config --global core.longpaths true
        ;;
    *) echo "not Windows: nothing to set up" ;;
esac
