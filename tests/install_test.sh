#!/bin/sh
# Installs the build into a temporary prefix and builds consumers against it
# with find_package (shared and static) and with pkg-config; checks that the
# shared library exports only gp_ symbols and needs only libc, libm,
# pthread, libdl, libjansson and libz.
# Usage: install_test.sh BUILD_DIR SOURCE_DIR
set -eu
build=$1
src=$2
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
sh "$src/tests/install_tmp.sh" cmake "$build" "$tmp/prefix" >/dev/null
test -f "$tmp/prefix/include/gpu_profile.h"
test -f "$tmp/prefix/include/gpufl.h"
test -f "$tmp/prefix/include/gpufl/gpufl.hpp"
lib=$(ls "$tmp"/prefix/lib*/libgpuprofile.so.0* | head -n 1)
bad=$(nm -D --defined-only "$lib" | awk '$2 ~ /^[TDBR]$/ {print $3}' | grep -v -E '^(gp|gpufl)_' || true)
if [ -n "$bad" ]; then
    echo "install_test: libgpuprofile.so exports symbols without the gp_ or gpufl_ prefix:" >&2
    echo "$bad" >&2
    exit 1
fi
# The core links only libc, libm, pthread, libdl, libjansson and libz (no CUDA, no NVML).
needed=$(readelf -d "$lib" | sed -n 's/.*(NEEDED).*\[\(.*\)\]/\1/p' | grep -v -E '^lib(c|m|pthread|dl|jansson|z)\.so\.[0-9]+$' || true)
if [ -n "$needed" ]; then
    echo "install_test: libgpuprofile.so needs more than libc, libm, pthread, libdl, libjansson and libz:" >&2
    echo "$needed" >&2
    exit 1
fi
# The CUPTI plugin (when the build has one) is installed beside the core,
# where the core looks for it, and exports only its table and the two
# injection entry points CUDA and NVTX look up (and the metrics table, and
# gpufl_injection_wait: the injected session's start waited for).
if [ -f "$build/libgpuprofile_cupti.so" ]; then
    plugin=$(ls "$tmp"/prefix/lib*/libgpuprofile_cupti.so | head -n 1)
    test "$(dirname "$plugin")" = "$(dirname "$lib")"
    bad=$(nm -D --defined-only "$plugin" | awk '$2 ~ /^[TDBR]$/ {print $3}' |
        grep -v -x -E 'gpufl_cupti_plugin_v1|gpufl_cupti_metrics_v1|InitializeInjection|InitializeInjectionNvtx2|gpufl_injection_wait' || true)
    if [ -n "$bad" ]; then
        echo "install_test: libgpuprofile_cupti.so exports more than its table and entry points:" >&2
        echo "$bad" >&2
        exit 1
    fi
    if readelf -d "$plugin" | grep -q 'NEEDED.*libcuda\.so'; then
        echo "install_test: libgpuprofile_cupti.so links libcuda (it must dlopen it)" >&2
        exit 1
    fi
fi
cmake -S "$src/tests/consumer" -B "$tmp/consumer" -DCMAKE_PREFIX_PATH="$tmp/prefix" >/dev/null
cmake --build "$tmp/consumer" >/dev/null
LD_LIBRARY_PATH=$(dirname "$lib") "$tmp/consumer/consumer_shared"
"$tmp/consumer/consumer_static"
LD_LIBRARY_PATH=$(dirname "$lib") "$tmp/consumer/consumer_cxx" "$tmp/logs-cmake"
grep -q '"consumer"' "$tmp"/logs-cmake/*/scope.log
pc=$(ls -d "$tmp"/prefix/lib*/pkgconfig | head -n 1)
flags=$(PKG_CONFIG_PATH="$pc" pkg-config --cflags --libs gpu-profile)
cc -o "$tmp/consumer_pc" "$src/tests/consumer/consumer.c" $flags
LD_LIBRARY_PATH=$(dirname "$lib") "$tmp/consumer_pc"
# The C++ API through the same pkg-config flags.
c++ -std=c++17 -Wall -Wextra -Werror -pedantic -o "$tmp/consumer_cxx_pc" "$src/tests/consumer/consumer.cpp" $flags
LD_LIBRARY_PATH=$(dirname "$lib") "$tmp/consumer_cxx_pc" "$tmp/logs-pc"
grep -q '"inner"' "$tmp"/logs-pc/*/scope.log
# The Python packages (docs/python.md): installed with _install.py naming the
# installed library, which they load with no environment help at all.
if command -v python3 >/dev/null 2>&1; then
    site=$(ls -d "$tmp"/prefix/lib/python3*/*-packages 2>/dev/null | head -n 1)
    test -n "$site" || { echo "install_test: no Python site directory under the prefix" >&2; exit 1; }
    test -f "$site/gpu_profile/_install.py"
    test ! -e "$site/gpu_profile/__pycache__"
    got=$(cd "$tmp" && env -u GPU_PROFILE_LIBRARY -u LD_LIBRARY_PATH PYTHONPATH="$site" python3 -c \
        'from gpu_profile import gpu_profile, library_path; import gpufl, gpufl.report, gpufl.analyzer; print(library_path)')
    if [ "$got" != "$(dirname "$lib")/libgpuprofile.so.0" ]; then
        echo "install_test: the installed Python package loaded '$got', not the installed library" >&2
        exit 1
    fi
fi
echo "install_test: 1 passed, 0 failed"
