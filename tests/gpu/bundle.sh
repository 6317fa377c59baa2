#!/bin/sh
# tests/gpu/bundle.sh BUILD_DIR OUT_DIR - packs what tests/gpu/run.sh needs
# from a build made on another machine, for a GPU machine that has CUDA and
# a compiler but not our build dependencies (tests/gpu/README.md, "On a
# machine without the build dependencies"):
#   OUT_DIR/build/    gpu-profile, libgpuprofile.so*, libgpuprofile_cupti.so,
#                     bench_sampler (when built)
#   OUT_DIR/lib/      the shared libraries those need beyond glibc, CUDA and
#                     the driver (jansson, zlib,
#                     libunwind, libdw, ...), as this machine has them
#   OUT_DIR/include/  jansson's headers (the checkers are built there)
# tests/gpu/remote.sh OUT_DIR then installs the missing ones and runs the
# suite.  Exit status: 0, or 2 for bad usage or a build lacking a file.
set -eu
if [ $# -ne 2 ]; then
    echo "usage: sh tests/gpu/bundle.sh BUILD_DIR OUT_DIR" >&2
    exit 2
fi
build=$1
out=$2
for f in gpu-profile libgpuprofile.so libgpuprofile_cupti.so; do
    if [ ! -e "$build/$f" ]; then
        echo "bundle.sh: $build/$f is missing: build the project (with the CUDA toolkit) first" >&2
        exit 2
    fi
done
mkdir -p "$out/build" "$out/lib" "$out/include"
cp -a "$build"/gpu-profile "$build"/libgpuprofile.so* "$build"/libgpuprofile_cupti.so "$out/build/"
[ -x "$build/bench/bench_sampler" ] && cp "$build/bench/bench_sampler" "$out/build/"
# Every library ldd resolves for our files, but glibc's own, CUDA's (the
# target's must match its driver) and the driver's.
for f in "$out"/build/gpu-profile "$out"/build/libgpuprofile.so.* "$out"/build/libgpuprofile_cupti.so; do
    [ -L "$f" ] && continue
    ldd "$f" 2>/dev/null | sed -n 's/^[[:space:]]*\([^ ]*\) => \(\/[^ ]*\) .*/\1 \2/p'
done | sort -u | while read -r name path; do
    case $name in
    libc.so.* | libm.so.* | libpthread.so.* | libdl.so.* | librt.so.* | libutil.so.* | \
        ld-linux*.so.* | libgcc_s.so.* | libstdc++.so.* | libcupti.so.* | libcuda.so.* | \
        libnvperf*.so*) ;;
    *) cp -L "$path" "$out/lib/$name" ;;
    esac
done
cp /usr/include/jansson.h /usr/include/jansson_config.h "$out/include/"
echo "bundle.sh: $(du -sh "$out" | cut -f1) in $out ($(ls "$out/lib" | wc -l) libraries)"
