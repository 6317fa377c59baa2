#!/bin/sh
# Installs a build (default: build/) with `cmake --install`: the library and
# headers, the gpu-profile command, the CUPTI plugin when built, and the
# Python packages gpu_profile and gpufl into python3's site directory
# (docs/python.md).  Uses sudo when not root, as install-deps.sh does.
# Usage: scripts/install.sh [BUILD_DIR]
set -eu
cd "$(dirname "$0")/.."
build=${1:-build}
if [ ! -f "$build/CMakeCache.txt" ]; then
    echo "scripts/install.sh: $build is not a CMake build: run cmake -S . -B $build && cmake --build $build first" >&2
    exit 2
fi
SUDO=""
if [ "$(id -u)" != 0 ]; then
    SUDO=sudo
fi
$SUDO cmake --install "$build"
# The library lands in <prefix>/lib: refresh the loader's cache for C users.
if command -v ldconfig >/dev/null 2>&1; then
    $SUDO ldconfig || true
fi
