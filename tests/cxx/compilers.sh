#!/bin/sh
# Builds tests/cxx (the C++ API's test and seed 002's C++ blocks) with g++
# and with clang++ (-std=c++17 -Wall -Wextra -Werror -pedantic) against the
# built shared library, and runs each build.  Skips (77) when either
# compiler is missing, naming it.
# Usage: compilers.sh LIBDIR SOURCE_DIR (LIBDIR holds libgpuprofile.so)
set -eu
libdir=$1
src=$2
for cxx in g++ clang++; do
    if ! command -v "$cxx" >/dev/null 2>&1; then
        echo "SKIP: $cxx is not installed (apt-get install g++ clang)"
        exit 77
    fi
done
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
for cxx in g++ clang++; do
    "$cxx" -std=c++17 -Wall -Wextra -Werror -pedantic -I"$src/include" \
        -o "$tmp/test_cxx_$cxx" "$src/tests/cxx/test_cxx.cpp" "$src/tests/cxx/seed_blocks.cpp" \
        -L"$libdir" -Wl,-rpath,"$libdir" -lgpuprofile -ljansson
    echo "== $cxx"
    "$tmp/test_cxx_$cxx"
done
echo "test_cxx_compilers: 2 passed, 0 failed"
