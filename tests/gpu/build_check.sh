#!/bin/sh
# tests/gpu/build_check.sh - compiles the GPU tests' programs without
# running them (CTest test_gpu_programs_build, on every machine with nvcc):
# pcsamp_workload.cu, pmsamp_workload.cu, sass_workload.cu and trace_workload.cu
# with nvcc -c (and bench/gpu_overhead_workload.cu, gpu_overhead.sh's), check_pcsamp.c, check_pmsamp.c, check_sass.c and check_trace.c with cc.
# Exit 0 compiled, 1 failed, 77 no nvcc.
set -u
here=$(cd "$(dirname "$0")" && pwd)
tests_dir=$(dirname "$here")
src=$(dirname "$tests_dir")
nvcc=${NVCC:-}
[ -z "$nvcc" ] && nvcc=$(command -v nvcc 2>/dev/null || true)
[ -z "$nvcc" ] && [ -x /usr/local/cuda/bin/nvcc ] && nvcc=/usr/local/cuda/bin/nvcc
if [ -z "$nvcc" ]; then
    echo "SKIP: nvcc not found"
    exit 77
fi
work=$(mktemp -d "${TMPDIR:-/tmp}/gp-gpu-build.XXXXXX") || exit 1
trap 'rm -rf "$work"' EXIT
rc=0
for cu in pcsamp_workload pmsamp_workload sass_workload trace_workload rangeprof_workload; do
    "$nvcc" -lineinfo -arch=sm_90 -I "$src/include" -c "$here/$cu.cu" -o "$work/$cu.o" ||
        rc=1
done
"$nvcc" -arch=sm_90 -c "$src/bench/gpu_overhead_workload.cu" -o "$work/gpu_overhead_workload.o" ||
    rc=1
for c in check_pcsamp check_pmsamp check_sass check_trace; do
    "${CC:-cc}" -std=c11 -D_GNU_SOURCE -O2 -Wall -Wextra -Werror -I "$tests_dir" \
        -o "$work/$c" "$here/$c.c" -ljansson || rc=1
done
[ $rc -eq 0 ] && echo "build_check: the GPU tests' programs compile"
exit $rc
