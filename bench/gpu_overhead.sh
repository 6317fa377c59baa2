#!/bin/bash
# bench/gpu_overhead.sh - the slowdown a GPU program sees under gpu-profile:
# each workload untraced, then under every engine, side by side with nsys
# and torch.profiler where the machine has them; a markdown table ready
# for docs/performance.md.
#
#   bash bench/gpu_overhead.sh [--build DIR] [--runs N] [--out FILE] [--dry-run]
#
# Workloads: `kernels` (bench/gpu_overhead_workload.cu: 20000 launches of a
# near-empty kernel), `memcpy` (64 MiB round trips, pinned), and
# `torch_step` (bench/gpu_overhead_torch.py: an MLP training step, when
# PyTorch with CUDA is importable).  Modes: untraced, then
# `gpu-profile -q --log-dir D --engine E --` for Monitor, Trace,
# PcSampling, SassMetrics and Deep (both with --sass-all-kernels: an
# unmodified program has no gpufl scope) and RangeProfiler, `nsys profile
# -t cuda` and, for torch_step, torch.profiler.  The runs are interleaved
# (run r of every mode, then run r+1), N each (default 5); per row the
# median wall time of the whole command, its overhead against the
# untraced median, and the median throughput the workload reports for its
# own timed loop (kernels/s, MiB/s, steps/s).  A mode whose command exits
# other than the untraced run did is a FAIL row (exit 1): a profiler never
# changes the exit status.  Targets (docs/performance.md): Monitor < 0.5 %,
# Trace < 5 %, PcSampling <= 5 % on the training step.
#
# --dry-run runs on the machine without a GPU: the workloads are a stand-in
# that prints the same line, gpu-profile gets the test suite's fake CUPTI
# plugin (GPUFL_CUPTI_PLUGIN) and fake libcuda (LD_LIBRARY_PATH), nsys and
# torch.profiler count as absent, and torch_step is run by the stand-in: the
# table has every row, its numbers mean nothing (CTest test_bench_gpu_overhead_dry
# checks its rows and columns).  Exit 0, 1 when a run failed, 2 for bad
# usage, 77 without a GPU and nvcc (not in --dry-run).  Each run is limited
# to GP_OVERHEAD_RUN_TIMEOUT seconds (default 120); NVCC and PYTHON pick
# the compiler and the interpreter.
set -u

usage() {
    echo "usage: bash bench/gpu_overhead.sh [--build DIR] [--runs N] [--out FILE] [--dry-run]" >&2
    exit 2
}

here=$(cd "$(dirname "$0")" && pwd)
run_limit=${GP_OVERHEAD_RUN_TIMEOUT:-120}
build=build
runs=5
out=
dry=0
while [ $# -gt 0 ]; do
    case $1 in
    --build) [ $# -ge 2 ] || usage; build=$2; shift 2 ;;
    --runs) [ $# -ge 2 ] || usage; runs=$2; shift 2 ;;
    --out) [ $# -ge 2 ] || usage; out=$2; shift 2 ;;
    --dry-run) dry=1; shift ;;
    -h | --help) usage ;;
    *) echo "gpu_overhead.sh: unknown argument '$1'" >&2; usage ;;
    esac
done
case $runs in
'' | *[!0-9]* | 0)
    echo "gpu_overhead.sh: --runs: '$runs' is not a positive whole number: use --runs 5" >&2
    exit 2
    ;;
esac
cli=$build/gpu-profile
if [ ! -x "$cli" ]; then
    echo "gpu_overhead.sh: no gpu-profile in '$build': build it, or give --build DIR" >&2
    exit 2
fi
if [ -z "${EPOCHREALTIME:-}" ]; then
    echo "gpu_overhead.sh: needs bash 5 (EPOCHREALTIME)" >&2
    exit 2
fi

work=$(mktemp -d "${TMPDIR:-/tmp}/gp-overhead.XXXXXX")
trap 'rm -rf "$work"' EXIT

# --------------------------------------------------------------- workloads
have_nsys=0
have_torch=0
if [ $dry = 1 ]; then
    plugin=$build/tests/fake-cupti/libfake_cupti_plugin.so
    if [ ! -f "$plugin" ]; then
        echo "gpu_overhead.sh: --dry-run needs the fake CUPTI plugin at $plugin (a build with the CUDA toolkit)" >&2
        exit 2
    fi
    export GPUFL_CUPTI_PLUGIN=$plugin
    export LD_LIBRARY_PATH=$build/tests/fake-cuda:$build/tests/fake-nvml${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}
    # Under an engine the stand-in is also a CUDA process to the fakes:
    # the test suite's capture child starts a session through the fake
    # plugin and launches three fake kernels.
    export GP_OVERHEAD_CHILD=$build/tests/gp_capture_child FAKE_CUPTI_SCENARIO=launches
    cat >"$work/standin" <<'EOF'
#!/bin/sh
# the workloads' stand-in: the line the real ones print
if [ -n "${CUDA_INJECTION64_PATH:-}" ] && [ -x "$GP_OVERHEAD_CHILD" ]; then
    "$GP_OVERHEAD_CHILD" plain >/dev/null
    [ $? = 7 ] || exit 1
fi
case $1 in
kernels) echo "gpu_overhead: units=$2 unit=kernels seconds=0.010000" ;;
memcpy) echo "gpu_overhead: units=$(($2 * $3 * 2)) unit=MiB seconds=0.020000" ;;
*) echo "gpu_overhead: units=$1 unit=steps seconds=0.030000" ;;
esac
EOF
    chmod +x "$work/standin"
    w_kernels="$work/standin kernels 20000"
    w_memcpy="$work/standin memcpy 64 20"
    w_torch="$work/standin 50"
    have_torch=1
else
    if ! nvidia-smi -L >/dev/null 2>&1; then
        echo "SKIP: no GPU (nvidia-smi -L)"
        exit 77
    fi
    nvcc=${NVCC:-$(command -v nvcc || echo /usr/local/cuda/bin/nvcc)}
    if [ ! -x "$nvcc" ]; then
        echo "SKIP: no nvcc (set NVCC)"
        exit 77
    fi
    if ! "$nvcc" -O2 -o "$work/gpu_overhead_workload" "$here/gpu_overhead_workload.cu" \
        >"$work/nvcc.log" 2>&1; then
        cat "$work/nvcc.log" >&2
        echo "gpu_overhead.sh: nvcc failed on $here/gpu_overhead_workload.cu" >&2
        exit 1
    fi
    w_kernels="$work/gpu_overhead_workload kernels 20000"
    w_memcpy="$work/gpu_overhead_workload memcpy 64 20"
    py=${PYTHON:-python3}
    if "$py" -c "import torch, sys; sys.exit(0 if torch.cuda.is_available() else 1)" 2>/dev/null; then
        have_torch=1
        w_torch="$py $here/gpu_overhead_torch.py 50"
    fi
    command -v nsys >/dev/null 2>&1 && have_nsys=1
fi

workloads="kernels memcpy"
[ $have_torch = 1 ] && workloads="$workloads torch_step"
modes="untraced Monitor Trace PcSampling SassMetrics RangeProfiler Deep nsys torch.profiler"

workload_cmd() { # WORKLOAD
    case $1 in
    kernels) echo "$w_kernels" ;;
    memcpy) echo "$w_memcpy" ;;
    torch_step) echo "$w_torch" ;;
    esac
}

# Whether MODE applies to WORKLOAD on this machine (else its row says why).
mode_absent() { # WORKLOAD MODE
    case $2 in
    nsys) [ $have_nsys = 1 ] || { echo "nsys not found"; return 0; } ;;
    torch.profiler)
        [ "$1" = torch_step ] || { echo "PyTorch workloads only"; return 0; }
        [ $dry = 0 ] || { echo "not in --dry-run"; return 0; }
        ;;
    esac
    return 1
}

# Runs WORKLOAD under MODE once: "WALL_S THROUGHPUT RC" on stdout.
run_one() { # WORKLOAD MODE
    local cmd logs t0 t1 rc line
    cmd=$(workload_cmd "$1")
    logs=$work/logs
    rm -rf "$logs" "$work"/nsys.*
    local -a pre=()
    case $2 in
    untraced) ;;
    Monitor) pre=("$cli" -q --log-dir "$logs" --engine monitor --) ;;
    SassMetrics | Deep) pre=("$cli" -q --log-dir "$logs" --engine "$2" --sass-all-kernels --) ;;
    nsys) pre=(nsys profile -t cuda --sample none --cpuctxsw none -o "$work/nsys" --force-overwrite true) ;;
    torch.profiler) cmd="$cmd --torch-profiler" ;;
    *) pre=("$cli" -q --log-dir "$logs" --engine "$2" --) ;;
    esac
    # A run that hangs (a traced program that never exits) is ended and its
    # row says FAIL (timeout's status 124), so the table still comes out.
    command -v timeout >/dev/null 2>&1 && pre=(timeout -k 5 "$run_limit" "${pre[@]}")
    t0=$EPOCHREALTIME
    # shellcheck disable=SC2086
    "${pre[@]}" $cmd >"$work/out.txt" 2>"$work/err.txt"
    rc=$?
    t1=$EPOCHREALTIME
    [ $rc = 0 ] || { echo "gpu_overhead.sh: $1 $2 exited $rc:"; tail -3 "$work/err.txt"; } >&2
    line=$(grep -m1 '^gpu_overhead: ' "$work/out.txt")
    awk -v t0="$t0" -v t1="$t1" -v rc="$rc" -v line="$line" 'BEGIN {
        tp = "n/a"
        if (match(line, /units=[0-9.]+/)) u = substr(line, RSTART + 6, RLENGTH - 6)
        if (match(line, /seconds=[0-9.]+/)) s = substr(line, RSTART + 8, RLENGTH - 8)
        if (u != "" && s + 0 > 0) tp = sprintf("%.6f", u / s)
        printf "%.6f %s %d\n", t1 - t0, tp, rc
    }'
}

median() { # values on stdin, one a line ("n/a" ignored): the median or n/a
    grep -v '^n/a$' | sort -g | awk '{ v[NR] = $1 } END {
        if (NR == 0) { print "n/a"; exit }
        if (NR % 2) print v[(NR + 1) / 2]; else print (v[NR / 2] + v[NR / 2 + 1]) / 2
    }'
}

unit_of() { # WORKLOAD
    case $1 in
    kernels) echo "kernels/s" ;;
    memcpy) echo "MiB/s" ;;
    torch_step) echo "steps/s" ;;
    esac
}

target_of() { # WORKLOAD MODE
    case $2 in
    Monitor) echo "< 0.5 %" ;;
    Trace) echo "< 5 %" ;;
    PcSampling) [ "$1" = torch_step ] && echo "≤ 5 %" || echo "" ;;
    *) echo "" ;;
    esac
}

# ------------------------------------------------------------------ runs
{
    echo "gpu_overhead.sh: $(date -u +%FT%TZ), $runs runs, $(nproc) CPUs"
    [ $dry = 1 ] && echo "gpu_overhead.sh: --dry-run: fakes, the numbers mean nothing"
    [ $dry = 1 ] || nvidia-smi --query-gpu=name,driver_version --format=csv,noheader
} >&2
status=0
for r in $(seq 1 "$runs"); do
    for w in $workloads; do
        for m in $modes; do
            mode_absent "$w" "$m" >/dev/null && continue
            res=$(run_one "$w" "$m")
            echo "$res" >>"$work/res.$w.$m"
            echo "run $r/$runs $w $m: $res" >&2
        done
    done
done

# ----------------------------------------------------------------- table
table=$work/table.md
{
    echo "| workload | mode | runs | wall median (ms) | overhead vs untraced | throughput median | target |"
    echo "|---|---|---|---|---|---|---|"
    for w in $workloads; do
        base=$(cut -d' ' -f1 "$work/res.$w.untraced" | median)
        base_rc=$(cut -d' ' -f3 "$work/res.$w.untraced" | sort -u | tr '\n' ' ')
        base_rc=${base_rc% }
        case $base_rc in 0) ;; *) status=1 ;; esac # the workload itself failed
        for m in $modes; do
            tgt=$(target_of "$w" "$m")
            if why=$(mode_absent "$w" "$m"); then
                echo "| $w | $m | 0 | n/a | n/a ($why) | n/a | $tgt |"
                continue
            fi
            f=$work/res.$w.$m
            wall=$(cut -d' ' -f1 "$f" | median)
            tp=$(cut -d' ' -f2 "$f" | median)
            rcs=$(cut -d' ' -f3 "$f" | sort -u | tr '\n' ' ')
            ms=$(awk -v s="$wall" 'BEGIN { printf "%.1f", s * 1000 }')
            if [ "$m" = untraced ]; then
                ov="—"
            else
                ov=$(awk -v a="$wall" -v b="$base" 'BEGIN { printf "%+.1f %%", (a - b) / b * 100 }')
            fi
            if [ "$rcs" != "$base_rc " ]; then
                ov="FAIL: exit ${rcs% }, untraced $base_rc"
                status=1
            fi
            [ "$tp" = n/a ] || tp="$(awk -v t="$tp" 'BEGIN { printf(t >= 100 ? "%.0f" : "%.3g", t) }') $(unit_of "$w")"
            echo "| $w | $m | $(wc -l <"$f") | $ms | $ov | $tp | $tgt |"
        done
    done
} >"$table"
cat "$table"
[ -n "$out" ] && cp "$table" "$out"
exit $status
