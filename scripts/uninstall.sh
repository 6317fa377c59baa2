#!/bin/sh
# Undoes scripts/install.sh: removes every file `cmake --install` recorded
# in the build's install_manifest.txt (the library, headers, command,
# plugin, man page, completion, docs, the Python packages with their
# _install.py, and each gpu-profile.pth), the bytecode Python wrote beside
# the packages, and the directories that held only our files (those
# named gpu_profile, gpufl or gpu-profile); shared ones like
# <prefix>/include stay.  Uses sudo when not root and a file is not ours
# to remove, as install.sh does.
# Usage: scripts/uninstall.sh [BUILD_DIR | MANIFEST]   (default: the
# repository's build/)
set -eu
arg=${1:-$(dirname "$0")/../build}
if [ -d "$arg" ]; then
    manifest=$arg/install_manifest.txt
else
    manifest=$arg
fi
if [ ! -f "$manifest" ]; then
    echo "scripts/uninstall.sh: no $manifest: it is written by scripts/install.sh" \
        "(cmake --install); name the build directory that install used" >&2
    exit 2
fi
SUDO=""
if [ "$(id -u)" != 0 ]; then
    while IFS= read -r f || [ -n "$f" ]; do
        if [ -e "$f" ] && [ ! -w "$(dirname "$f")" ]; then
            SUDO=sudo
            break
        fi
    done <"$manifest"
fi
n=0
dirs=$(mktemp)
trap 'rm -f "$dirs"' EXIT
while IFS= read -r f || [ -n "$f" ]; do
    [ -n "$f" ] || continue
    if [ -e "$f" ] || [ -L "$f" ]; then
        $SUDO rm -f -- "$f"
        n=$((n + 1))
    fi
    # Our directories: every one named gpu_profile, gpufl or gpu-profile
    # above the file, and those between (share/doc/gpu-profile/tutorials).
    d=$(dirname "$f")
    chain=""
    while [ "$d" != / ] && [ "$d" != . ]; do
        chain="$chain$d
"
        case $(basename "$d") in
        gpu_profile | gpufl | gpu-profile)
            printf '%s' "$chain" >>"$dirs"
            chain=""
            ;;
        esac
        d=$(dirname "$d")
    done
done <"$manifest"
sort -u -r "$dirs" | while IFS= read -r d; do
    [ -n "$d" ] || continue
    [ -d "$d/__pycache__" ] && $SUDO rm -rf -- "$d/__pycache__"
    $SUDO rmdir -- "$d" 2>/dev/null || true
done
# The library's entry in the loader's cache goes with it.
if command -v ldconfig >/dev/null 2>&1 && { [ "$(id -u)" = 0 ] || [ -n "$SUDO" ]; }; then
    $SUDO ldconfig || true
fi
echo "scripts/uninstall.sh: removed $n files listed in $manifest"
