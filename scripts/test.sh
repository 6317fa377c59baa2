#!/bin/sh
# Builds and runs the whole test suite three times: plain, AddressSanitizer +
# UBSan, ThreadSanitizer (the sampler and the backends run threads beside
# user code).  GPU-only tests (label "gpu") skip cleanly without a GPU.
# Usage: scripts/test.sh [plain|address|thread ...]   (default: all three)
set -eu
cd "$(dirname "$0")/.."
sh scripts/install-deps.sh
jobs=$(nproc 2>/dev/null || echo 2)
modes=${*:-plain address thread}
for mode in $modes; do
    case "$mode" in
    plain) dir=build; san="" ;;
    address) dir=build-asan; san=address ;;
    thread) dir=build-tsan; san=thread ;;
    *) echo "scripts/test.sh: unknown mode '$mode': use plain, address or thread" >&2; exit 2 ;;
    esac
    echo "=== $mode build ($dir)"
    cmake -S . -B "$dir" -DCMAKE_BUILD_TYPE=RelWithDebInfo -DGP_SANITIZE="$san" >/dev/null
    cmake --build "$dir" -j "$jobs"
    (cd "$dir" && ctest --output-on-failure -j "$jobs")
done
