#!/bin/bash
# tests/gpu/remote.sh BUNDLE_DIR RESULTS_DIR - on a GPU machine, from the
# repository root: the GPU suite over a bundle made elsewhere
# (tests/gpu/bundle.sh), as one command that fits a short lease.
#
#   1. the libraries of the bundle the machine lacks, installed beside its
#      own (ldconfig; root), jansson's headers for the checkers;
#   2. `gpu-profile -- sleep 1` (Monitor, the real NVML);
#   3. tests/gpu/run.sh with GPUFL_CUPTI_TRACE=1 (every profiler engine's
#      CUPTI call on stderr), each traced run limited to GP_TRACE_TIMEOUT
#      (default 25) seconds, the whole to RUN_LIMIT (default 300);
#   4. the injected trace workload and the PyTorch script again: if one is
#      still alive 12 s after it started, cuda-gdb's backtrace of every
#      thread (RESULTS_DIR/bt-NAME.txt) (unless SKIP_HANG=1);
#   5. tests/gpu/sass_probe.cu in its variants (unless SKIP_PROBE=1);
#   6. bench_sampler real --quick (unless SKIP_BENCH=1);
#   7. bench/gpu_overhead.sh, OVERHEAD_RUNS (default 3) runs of each
#      workload and engine, limited to OVERHEAD_LIMIT (default 300) seconds
#      (unless SKIP_OVERHEAD=1): its table in RESULTS_DIR/overhead.md.
# RESULTS_DIR gets log.txt (everything printed) and work.tgz (the sessions,
# logs and expect files of run.sh, without the binaries).  Exit status:
# run.sh's.
set -u
if [ $# -ne 2 ]; then
    echo "usage: bash tests/gpu/remote.sh BUNDLE_DIR RESULTS_DIR" >&2
    exit 2
fi
B=$(cd "$1" && pwd)
R=$2
mkdir -p "$R"
R=$(cd "$R" && pwd)
exec > >(tee "$R/log.txt") 2>&1
tee_pid=$!

echo "=== machine $(date -u +%FT%TZ)"
nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv,noheader
grep PRETTY_NAME /etc/os-release
command -v nvcc cc cuda-gdb ncu python3

# 1. what the machine lacks
mkdir -p /usr/local/lib/gpu-profile-bundle
for f in "$B"/lib/*; do
    n=$(basename "$f")
    ldconfig -p | grep -q "^[[:space:]]*$n " || cp "$f" /usr/local/lib/gpu-profile-bundle/
done
echo /usr/local/lib/gpu-profile-bundle >/etc/ld.so.conf.d/zz-gpu-profile-bundle.conf
ldconfig
cp -n "$B"/include/*.h /usr/local/include/ 2>/dev/null
if ! ldconfig -p | grep -q "libjansson.so "; then
    ln -sf "$(ldconfig -p | sed -n 's/.*libjansson\.so\.4 .*=> //p' | head -1)" \
        /usr/local/lib/libjansson.so
    ldconfig
fi
# The plugin's RUNPATH is the build machine's toolkit: add this one's.
cupti=$(ldconfig -p | sed -n 's/.*libcupti\.so\.[0-9]* .*=> //p' | head -1)
[ -n "$cupti" ] && export LD_LIBRARY_PATH=$(dirname "$cupti")${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}
ldd "$B/build/libgpuprofile_cupti.so" "$B/build/gpu-profile" | grep "not found"

# 2. Monitor
echo "=== gpu-profile -- sleep 1"
timeout 30 "$B/build/gpu-profile" -- sleep 1
echo "rc=$?"

# 3. the suite
echo "=== run.sh $(date -u +%T)"
work_root=/tmp/gp-remote
rm -rf "$work_root"
mkdir -p "$work_root"
GPUFL_CUPTI_TRACE=1 GP_TRACE_KEEP=1 GP_TRACE_TIMEOUT=${GP_TRACE_TIMEOUT:-25} TMPDIR=$work_root \
    timeout "${RUN_LIMIT:-300}" sh tests/gpu/run.sh "$B/build"
rc=$?
echo "run.sh rc=$rc $(date -u +%T)"
w=$(ls -d "$work_root"/gp-trace.* 2>/dev/null | head -1)

# 4. a hang's threads: each injected workload again, and if it is still
#    alive 12 s after it started, cuda-gdb's backtrace of every thread
#    (RESULTS_DIR/bt-NAME.txt)
hang_check() { # NAME COMM_PATTERN COMMAND...
    name=$1 comm=$2
    shift 2
    echo "=== injected run $name, hang check $(date -u +%T)"
    timeout 45 "$B/build/gpu-profile" --engine trace --log-dir "$w/hang-$name" -- "$@" \
        >"$w/hang-$name.log" 2>&1 &
    bg=$!
    sleep 12
    pid=$(ps -eo pid,comm | awk -v p="$comm" '$2 ~ p {print $1}' | head -1)
    if [ -n "$pid" ]; then
        echo "still running 12 s after it started: pid $pid"
        timeout 60 cuda-gdb -batch -p "$pid" -ex "info threads" -ex "thread apply all bt" \
            >"$R/bt-$name.txt" 2>&1
        grep -v '^\[New \|^$' "$R/bt-$name.txt" | grep -v "^#[0-9]* *0x[0-9a-f]* in ?? ()" | head -150
        kill "$pid"
    else
        echo "exited within 12 s"
        tail -3 "$w/hang-$name.log"
    fi
    wait "$bg" # never a bare wait: tee, above, is a child too
}
[ "${SKIP_HANG:-0}" = 1 ] && w_hang="" || w_hang=$w
if [ -n "$w_hang" ] && [ -x "$w/trace_workload_plain" ]; then
    hang_check plain '^trace_workload' "$w/trace_workload_plain" --expect "$w/hang.json"
fi
if [ -n "$w_hang" ] && python3 -c "import torch" 2>/dev/null; then
    hang_check torch '^python3' python3 tests/gpu/torch_trace.py
fi

# 5. the SASS Metrics API alone (tests/gpu/sass_probe.cu), in the variants
#    that tell why a session's SASS values could be zero
nvcc=$(command -v nvcc || echo /usr/local/cuda/bin/nvcc)
if [ "${SKIP_PROBE:-0}" != 1 ] && [ -x "$nvcc" ]; then
    echo "=== sass_probe $(date -u +%T)"
    cuda=$(dirname "$(dirname "$nvcc")")
    if "$nvcc" -O2 -o /tmp/sass_probe tests/gpu/sass_probe.cu -lcupti -L"$cuda/lib64/stubs" -lcuda \
        >/tmp/sass_probe.log 2>&1; then
        for a in "" "--cycles 3" "--cycles 3 --keep" "--activity" "--serial" "--activity-off" \
            "--eager --twice"; do
            # shellcheck disable=SC2086
            timeout 30 /tmp/sass_probe $a 2>&1 | grep -v "+0x[2-9a-f]0:" | head -24
        done
    else
        tail -5 /tmp/sass_probe.log
    fi
    if [ -n "$w" ] && [ -x "$w/sass_workload" ]; then
        echo "=== sass_workload with GPUFL_SASS_ALL_KERNELS=1"
        GPUFL_SASS_ALL_KERNELS=1 GPUFL_CUPTI_TRACE=1 timeout 30 "$w/sass_workload" "$w/logs8all" \
            2>&1 | grep -E "FlushData|record [0-3]:|GetDataProperties" | head -24
    fi
fi

# 6. the sampler on the real NVML
if [ "${SKIP_BENCH:-0}" != 1 ] && [ -x "$B/build/bench_sampler" ]; then
    echo "=== bench_sampler real --quick"
    timeout 60 "$B/build/bench_sampler" real --quick
    echo "rc=$?"
fi

# 7. the slowdown of a traced GPU program, per engine (docs/performance.md)
if [ "${SKIP_OVERHEAD:-0}" != 1 ]; then
    echo "=== gpu_overhead.sh $(date -u +%T)"
    timeout "${OVERHEAD_LIMIT:-300}" bash bench/gpu_overhead.sh --build "$B/build" \
        --runs "${OVERHEAD_RUNS:-3}" --out "$R/overhead.md"
    echo "rc=$?"
fi

[ -n "$w" ] && tar czf "$R/work.tgz" -C "$work_root" --exclude='*_workload' \
    --exclude='*_workload_plain' --exclude='check_trace' --exclude='check_pcsamp' \
    --exclude='check_pmsamp' --exclude='check_sass' .
echo "=== done $(date -u +%T)"
exec >&- 2>&-
wait "$tee_pid"
exit $rc
