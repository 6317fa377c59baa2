#!/bin/sh
# tests/gpu/run.sh BUILD_DIR - the Trace engine end to end on a machine with
# an NVIDIA GPU and the CUDA toolkit (see tests/gpu/README.md).
#
# Builds trace_workload.cu (twice: linked with libgpuprofile for the
# in-process runs, and plain for the injection run) and check_trace.c into a
# temporary directory, then:
#   1. trace_workload --in-process: gpufl_init(Trace) in the program;
#   2. the same with --graphs (enable_cuda_graphs_tracking);
#   2b. the in-process run returning from main without gpufl_shutdown (the
#      session ends in the exit handlers: no hang, every record written);
#   3. BUILD_DIR/gpu-profile --engine trace --log-dir D -- trace_workload
#      (CUPTI injection into an uninstrumented program);
#   4. a small PyTorch script through gpu-profile --engine trace, if
#      PyTorch with CUDA is installed (lenient checks; under injection it
#      hung in cublasCreate_v2 -> cuInit before issue 35);
#   4b. the same script with gpufl.init(Trace) in-process before
#      `import torch` (no injection);
#   4c. the script with gpufl.torch attached through gpu-profile --engine
#      trace --stack-trace: check_torch_attr.py wants its matmuls under
#      its "# @mm" line (report --by line) and aten::mm (--by op);
#   5. stack_workload.cu (-g -O0) through gpu-profile --engine trace
#      --stack-trace: each launch's kernel_detail.stack_trace names the
#      program's own functions with their lines (when the plugin was built
#      with libunwind and libdw);
#   6. pcsamp_workload (built with -lineinfo): gpufl_init(PcSampling), a
#      pointer chase and a barrier-bound kernel; check_pcsamp checks the
#      top stall reasons and the source lines they land on;
#   7. pmsamp_workload: gpufl_init(PmSampling), idle, a kernel that keeps
#      every SM busy ~400 ms, idle; check_pmsamp checks that the SM-active
#      samples are high while it runs and low before and after;
#   8. sass_workload (built with -lineinfo): gpufl_init(SassMetrics), a
#      unit-stride, a strided and a divergent kernel; check_sass checks
#      that the strided one shows worse coalescing (sectors per request)
#      and the divergent one fewer threads per warp instruction;
#   9. rangeprof_workload: gpufl_init(RangeProfiler, range_per_kernel), a
#      DRAM-bound copy and an SM-bound FMA chain; check_rangeprof.py wants
#      DRAM / SM throughput above 50 % (and within 5 % of ncu's where ncu
#      is installed);
#  10. sass_workload --deep (gpufl_init(Deep)): check_sass
#      --deep wants selected_engine nvidia.deep, rows of sample_kind 0 and
#      1 in one session over one set of dictionaries, and the SASS checks;
# and checks each session with check_trace.
#
# Exit status: 0 all passed, 1 a check failed, 77 skipped (no GPU, no nvcc),
# 2 bad usage.  GP_TRACE_KEEP=1 keeps the temporary directory (it is kept
# anyway when something failed); NVCC and CC choose the compilers;
# GP_TRACE_TIMEOUT limits each traced run (seconds, default 60).
set -u

if [ $# -ne 1 ]; then
    echo "usage: sh tests/gpu/run.sh BUILD_DIR" >&2
    exit 2
fi
here=$(cd "$(dirname "$0")" && pwd)
tests_dir=$(dirname "$here")
src=$(dirname "$tests_dir")
if ! build=$(cd "$1" 2>/dev/null && pwd); then
    echo "run.sh: $1: no such build directory" >&2
    exit 2
fi

# ---- what the tests need
if ! gpus=$(nvidia-smi -L 2>/dev/null) || ! printf '%s\n' "$gpus" | grep -q '^GPU '; then
    echo "SKIP: no NVIDIA GPU (nvidia-smi found none): the trace tests need one"
    exit 77
fi
nvcc=${NVCC:-}
if [ -z "$nvcc" ]; then
    if command -v nvcc >/dev/null 2>&1; then
        nvcc=$(command -v nvcc)
    elif [ -x /usr/local/cuda/bin/nvcc ]; then
        nvcc=/usr/local/cuda/bin/nvcc
    elif [ -n "${CUDA_HOME:-}" ] && [ -x "$CUDA_HOME/bin/nvcc" ]; then
        nvcc=$CUDA_HOME/bin/nvcc
    fi
fi
if [ -n "${NVCC:-}" ] && [ ! -x "$nvcc" ]; then
    echo "SKIP: NVCC=$NVCC is not an executable: the trace tests build a CUDA program"
    exit 77
fi
if [ -z "$nvcc" ]; then
    echo "SKIP: nvcc not found (not in PATH nor /usr/local/cuda/bin; set NVCC=...): the trace" \
        "tests build a CUDA program"
    exit 77
fi
echo "run.sh: GPU(s):"
printf '%s\n' "$gpus" | sed 's/^/  /'
echo "run.sh: nvcc $nvcc ($("$nvcc" --version | sed -n 's/.*release \([0-9.]*\).*/\1/p'))"

missing=""
for f in gpu-profile libgpuprofile.so; do
    [ -e "$build/$f" ] || missing="$missing $f"
done
if [ -n "$missing" ]; then
    echo "FAIL: $build lacks$missing: build the project first (cmake --build $build)"
    exit 1
fi
if [ ! -e "$build/libgpuprofile_cupti.so" ]; then
    echo "run.sh: note: $build/libgpuprofile_cupti.so is missing (was the build configured" \
        "with the CUDA toolkit?): the Trace engine will fall back to Monitor and the checks fail"
fi

# The session's settings are the tests' own: no GPUFL_* from the caller
# (but the plugin's location and debug output, and GPUFL_CUPTI_TRACE), no
# injection of our own.
for v in $(env | sed -n 's/^\(GPUFL_[A-Za-z0-9_]*\)=.*/\1/p'); do
    case $v in
    GPUFL_CUPTI_PLUGIN | GPUFL_ENABLE_DEBUG_OUTPUT | GPUFL_CUPTI_TRACE) ;;
    *) unset "$v" ;;
    esac
done
unset CUDA_INJECTION64_PATH

work=$(mktemp -d "${TMPDIR:-/tmp}/gp-trace.XXXXXX") || exit 2
tmo=""
if command -v timeout >/dev/null 2>&1; then
    tmo="timeout ${GP_TRACE_TIMEOUT:-60}"
fi

# ---- build
echo "run.sh: building into $work"
# nvcc_build OUT LOG ARGS...: with -arch=native (this machine's GPU), else
# nvcc's default architecture (PTX compiled at load).
nvcc_build() {
    out=$1
    blog=$2
    shift 2
    "$nvcc" -O2 -arch=native -o "$out" "$@" >"$blog" 2>&1 ||
        "$nvcc" -O2 -o "$out" "$@" >>"$blog" 2>&1
}
nvcc_build "$work/trace_workload" "$work/nvcc1.log" -I "$src/include" "$here/trace_workload.cu" \
    -L "$build" -lgpuprofile -Xlinker -rpath -Xlinker "$build" &
pid1=$!
nvcc_build "$work/trace_workload_plain" "$work/nvcc2.log" -DTW_NO_GPUFL "$here/trace_workload.cu" &
pid2=$!
# -g -O0 after nvcc_build's -O2: the stacks are the functions as written.
nvcc_build "$work/stack_workload" "$work/nvcc3.log" -g -O0 -Xcompiler -fno-omit-frame-pointer \
    "$here/stack_workload.cu" || cat "$work/nvcc3.log"
nvcc_build "$work/pcsamp_workload" "$work/nvcc4.log" -lineinfo -I "$src/include" \
    "$here/pcsamp_workload.cu" -L "$build" -lgpuprofile -Xlinker -rpath -Xlinker "$build" &
pid3=$!
nvcc_build "$work/pmsamp_workload" "$work/nvcc5.log" -I "$src/include" \
    "$here/pmsamp_workload.cu" -L "$build" -lgpuprofile -Xlinker -rpath -Xlinker "$build" ||
    cat "$work/nvcc5.log"
nvcc_build "$work/sass_workload" "$work/nvcc6.log" -lineinfo -I "$src/include" \
    "$here/sass_workload.cu" -L "$build" -lgpuprofile -Xlinker -rpath -Xlinker "$build" &
pid4=$!
"${CC:-cc}" -std=c11 -D_GNU_SOURCE -O2 -Wall -Wextra -I "$tests_dir" -o "$work/check_sass" \
    "$here/check_sass.c" -ljansson >"$work/cc3.log" 2>&1
cc3_rc=$?
"${CC:-cc}" -std=c11 -D_GNU_SOURCE -O2 -Wall -Wextra -I "$tests_dir" -o "$work/check_pcsamp" \
    "$here/check_pcsamp.c" -ljansson >"$work/cc2.log" 2>&1 &&
    "${CC:-cc}" -std=c11 -D_GNU_SOURCE -O2 -Wall -Wextra -I "$tests_dir" \
        -o "$work/check_pmsamp" "$here/check_pmsamp.c" -ljansson >>"$work/cc2.log" 2>&1
cc2_rc=$?
"${CC:-cc}" -std=c11 -D_GNU_SOURCE -O2 -Wall -Wextra -I "$tests_dir" -o "$work/check_trace" \
    "$here/check_trace.c" -ljansson >"$work/cc.log" 2>&1
cc_rc=$?
wait $pid1
rc1=$?
wait $pid2
rc2=$?
wait $pid3
rc3=$?
wait $pid4
rc4=$?
if [ $rc1 -ne 0 ] || [ $rc2 -ne 0 ] || [ $rc3 -ne 0 ] || [ $rc4 -ne 0 ] || [ $cc_rc -ne 0 ] ||
    [ $cc2_rc -ne 0 ] || [ $cc3_rc -ne 0 ]; then
    cat "$work/nvcc1.log" "$work/nvcc2.log" "$work/nvcc4.log" "$work/nvcc5.log" "$work/nvcc6.log" \
        "$work/cc.log" \
        "$work/cc2.log" "$work/cc3.log"
    echo "FAIL: building the workload or the checker failed (files in $work)"
    exit 1
fi

# ---- runs
failed=0
summary=""
result() { # name PASS|FAIL|SKIP
    summary="$summary
  $2  $1"
    [ "$2" = FAIL ] && failed=$((failed + 1))
    return 0
}

# check NAME EXPECT LOGDIR: the checker on the session with kernel rows.
check() {
    if "$work/check_trace" --expect "$2" --log-dir "$3"; then
        result "$1" PASS
    else
        result "$1" FAIL
    fi
}

# run NAME LOG CMD...: runs CMD, output into LOG and shown; status kept.
run() {
    name=$1
    log=$2
    shift 2
    echo
    echo "=== $name"
    echo "\$ $*"
    $tmo "$@" >"$log" 2>&1
    rc=$?
    cat "$log"
    if [ $rc -ne 0 ]; then
        echo "run.sh: $name: exit status $rc"
        result "$name" FAIL
        return 1
    fi
    return 0
}

n="1 in-process"
if run "$n" "$work/run1.log" "$work/trace_workload" --in-process "$work/logs1" \
    --expect "$work/expect1.json"; then
    check "$n" "$work/expect1.json" "$work/logs1"
fi

n="2 in-process, CUDA graph tracking"
if run "$n" "$work/run2.log" "$work/trace_workload" --in-process "$work/logs2" --graphs \
    --expect "$work/expect2.json"; then
    check "$n" "$work/expect2.json" "$work/logs2"
fi

n="2b in-process, no gpufl_shutdown (the session ends at exit)"
if run "$n" "$work/run2b.log" "$work/trace_workload" --in-process "$work/logs2b" --no-shutdown \
    --expect "$work/expect2b.json"; then
    check "$n" "$work/expect2b.json" "$work/logs2b"
fi

n="3 gpu-profile --engine trace (injection)"
if run "$n" "$work/run3.log" "$build/gpu-profile" --engine trace --log-dir "$work/logs3" -- \
    "$work/trace_workload_plain" --expect "$work/expect3.json"; then
    check "$n" "$work/expect3.json" "$work/logs3"
fi

n="4 PyTorch through gpu-profile --engine trace"
echo
echo "=== $n"
if python3 -c "import torch; assert torch.cuda.is_available()" >/dev/null 2>&1; then
    if run "$n" "$work/run4.log" "$build/gpu-profile" --engine trace --log-dir "$work/logs4" -- \
        python3 "$here/torch_trace.py"; then
        if "$work/check_trace" --any-name gemm,Kernel --log-dir "$work/logs4"; then
            result "$n" PASS
        else
            result "$n" FAIL
        fi
    fi
else
    echo "SKIP: PyTorch with CUDA not available"
    result "$n" SKIP
fi

# 4b: in-process gpufl.init(Trace) before `import torch` (issue 35): the
# same script, its own session; no injection.
n="4b PyTorch, in-process gpufl.init before import torch"
echo
echo "=== $n"
if python3 -c "import torch; assert torch.cuda.is_available()" >/dev/null 2>&1; then
    if run "$n" "$work/run4b.log" env PYTHONPATH="$src/python" \
        GPU_PROFILE_LIBRARY="$build/libgpuprofile.so" \
        python3 "$here/torch_trace.py" --gpufl-init "$work/logs4b"; then
        if "$work/check_trace" --any-name gemm,Kernel --log-dir "$work/logs4b"; then
            result "$n" PASS
        else
            result "$n" FAIL
        fi
    fi
else
    echo "SKIP: PyTorch with CUDA not available"
    result "$n" SKIP
fi

# 4c: the matmuls attributed to what launched them (issue 38): gpufl.torch
# attached (GP_TORCH_OPS=1; the gpufl package reaches the injected session
# through the same libgpuprofile) under --stack-trace; check_torch_attr.py
# wants torch_trace.py's "# @mm" line and aten::mm to hold its 5 gemms
# (report --by line / --by op JSON).
n="4c PyTorch kernels attributed to their Python line and aten op"
echo
echo "=== $n"
if python3 -c "import torch; assert torch.cuda.is_available()" >/dev/null 2>&1; then
    if run "$n" "$work/run4c.log" env GP_TORCH_OPS=1 PYTHONPATH="$src/python" \
        GPU_PROFILE_LIBRARY="$build/libgpuprofile.so" \
        "$build/gpu-profile" --engine trace --stack-trace --log-dir "$work/logs4c" -- \
        python3 "$here/torch_trace.py"; then
        if python3 "$here/check_torch_attr.py" "$build/gpu-profile" "$work/logs4c" \
            "$here/torch_trace.py"; then
            result "$n" PASS
        else
            result "$n" FAIL
        fi
    fi
else
    echo "SKIP: PyTorch with CUDA not available"
    result "$n" SKIP
fi

n="5 CPU stacks at launch (--stack-trace)"
if run "$n" "$work/run5.log" "$build/gpu-profile" --engine trace --stack-trace \
    --log-dir "$work/logs5" -- "$work/stack_workload" "$work/expect5.txt"; then
    want=$(sed -n 1p "$work/expect5.txt")
    want_sync=$(sed -n 2p "$work/expect5.txt")
    # the cudaDeviceSynchronize's stack: in our stack_dict, its id in the
    # synchronization_event_batch's stack_id column
    sync_stacks=$(cat "$work"/logs5/*/scope.log | grep '"stack_dict"' | grep -cF "$want_sync")
    sync_cols=$(cat "$work"/logs5/*/scope.log | grep '"type":"synchronization_event_batch"' |
        grep -c '"function_id","stack_id"\]')
    details=$(cat "$work"/logs5/*/device.log | grep '"type":"kernel_detail"' | grep -c 'tick')
    stacked=$(cat "$work"/logs5/*/device.log | grep '"type":"kernel_detail"' | grep -F "$want" |
        grep -c '"stack_trace":"main (stack_workload.cu:')
    if grep -q '"feature":"stack_trace","requested":true,"status":"fallback"' \
        "$work"/logs5/*/device.log; then
        echo "SKIP: the plugin collects no stacks (built without libunwind and libdw?)"
        result "$n" SKIP
    elif [ "$details" -eq 3 ] && [ "$stacked" -eq 3 ] && [ "$sync_stacks" -ge 1 ] &&
        [ "$sync_cols" -ge 1 ]; then
        result "$n" PASS
    else
        echo "run.sh: want 3 kernel_detail of tick whose stack_trace starts with main and holds:"
        echo "  $want"
        echo "got $details details, $stacked such stacks:"
        grep '"type":"kernel_detail"' "$work"/logs5/*/device.log | sed 's/.*"stack_trace"/  /'
        echo "want a stack_dict entry holding $want_sync: $sync_stacks; sync batches: $sync_cols"
        grep -h '"stack_dict"\|synchronization_event_batch' "$work"/logs5/*/scope.log
        result "$n" FAIL
    fi
fi

n="6 PC sampling in-process (stall reasons and source lines)"
if run "$n" "$work/run6.log" "$work/pcsamp_workload" "$work/logs6" --expect "$work/expect6.json"; then
    if "$work/check_pcsamp" --expect "$work/expect6.json" --log-dir "$work/logs6"; then
        result "$n" PASS
    else
        result "$n" FAIL
    fi
fi

n="7 PM sampling in-process (SM activity tracks a kernel)"
if [ ! -x "$work/pmsamp_workload" ]; then
    echo "run.sh: $n: pmsamp_workload did not build (see above)"
    result "$n" FAIL
elif run "$n" "$work/run7.log" "$work/pmsamp_workload" "$work/logs7"; then
    if "$work/check_pmsamp" --log-dir "$work/logs7"; then
        result "$n" PASS
    else
        result "$n" FAIL
    fi
fi

n="8 SASS metrics in-process (coalescing and divergence)"
if run "$n" "$work/run8.log" "$work/sass_workload" "$work/logs8" --expect "$work/expect8.json"; then
    if "$work/check_sass" --expect "$work/expect8.json" --log-dir "$work/logs8"; then
        result "$n" PASS
    else
        result "$n" FAIL
    fi
fi

n="9 RangeProfiler per kernel: DRAM- and SM-bound kernels"
if nvcc_build "$work/rangeprof_workload" "$work/nvcc9.log" -I "$src/include" \
    "$here/rangeprof_workload.cu" -L "$build" -lgpuprofile -Xlinker -rpath -Xlinker "$build"; then
    if run "$n" "$work/run9.log" "$work/rangeprof_workload" "$work/logs9"; then
        ncu_csv=""
        if command -v ncu >/dev/null 2>&1 &&
            ncu --csv --metrics dram__throughput.avg.pct_of_peak_sustained_elapsed,sm__throughput.avg.pct_of_peak_sustained_elapsed \
                "$work/rangeprof_workload" "$work/logs9ncu" >"$work/ncu9.csv" 2>/dev/null; then
            ncu_csv="$work/ncu9.csv"
        fi
        if NCU_REPORT="$ncu_csv" python3 "$here/check_rangeprof.py" "$work/logs9"; then
            result "$n" PASS
        else
            result "$n" FAIL
        fi
    fi
else
    cat "$work/nvcc9.log"
    result "$n" FAIL
fi

n="10 Deep in-process (PC samples and SASS metrics in one run)"
if run "$n" "$work/run10.log" "$work/sass_workload" "$work/logs10" \
    --expect "$work/expect10.json" --deep; then
    if "$work/check_sass" --deep --expect "$work/expect10.json" --log-dir "$work/logs10"; then
        result "$n" PASS
    else
        result "$n" FAIL
    fi
fi

echo
echo "run.sh: summary$summary"
if [ $failed -ne 0 ]; then
    echo "run.sh: FAIL ($failed failed; sessions and logs kept in $work)"
    exit 1
fi
if [ "${GP_TRACE_KEEP:-0}" = 1 ]; then
    echo "run.sh: files kept in $work"
else
    rm -rf "$work"
fi
echo "run.sh: PASS"
exit 0
