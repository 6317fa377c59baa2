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
#   4. the injected trace workload again: if it is still alive 12 s after
#      it started, cuda-gdb's backtrace of every thread (RESULTS_DIR/bt.txt);
#   5. bench_sampler real --quick (unless SKIP_BENCH=1).
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

# 4. a hang's threads
if [ -n "$w" ] && [ -x "$w/trace_workload_plain" ]; then
    echo "=== injected run, hang check $(date -u +%T)"
    timeout 45 "$B/build/gpu-profile" --engine trace --log-dir "$w/hang" -- \
        "$w/trace_workload_plain" --expect "$w/hang.json" >"$w/hang.log" 2>&1 &
    bg=$!
    sleep 12
    pid=$(ps -eo pid,comm | awk '$2 ~ /^trace_workload/ {print $1}' | head -1)
    if [ -n "$pid" ]; then
        echo "still running 12 s after it started: pid $pid"
        timeout 60 cuda-gdb -batch -p "$pid" -ex "info threads" -ex "thread apply all bt" \
            >"$R/bt.txt" 2>&1
        grep -v '^\[New \|^$' "$R/bt.txt" | head -120
        kill "$pid"
    else
        echo "exited within 12 s"
        tail -3 "$w/hang.log"
    fi
    wait "$bg" # never a bare wait: tee, above, is a child too
fi

# 5. the sampler on the real NVML
if [ "${SKIP_BENCH:-0}" != 1 ] && [ -x "$B/build/bench_sampler" ]; then
    echo "=== bench_sampler real --quick"
    timeout 60 "$B/build/bench_sampler" real --quick
    echo "rc=$?"
fi

[ -n "$w" ] && tar czf "$R/work.tgz" -C "$work_root" --exclude='*_workload' \
    --exclude='*_workload_plain' --exclude='check_trace' --exclude='check_pcsamp' \
    --exclude='check_pmsamp' --exclude='check_sass' .
echo "=== done $(date -u +%T)"
exec >&- 2>&-
wait "$tee_pid"
exit $rc
