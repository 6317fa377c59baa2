#!/bin/sh
# bench/report_shapes.sh - `gpu-profile report`'s speed per session shape
# (docs/performance.md "Every shape on a quiet machine"): for each shape,
# bench_read's in-process figures and Python's json module, then the whole
# command's CPU time (perf stat task-clock, 11 runs: median, best, worst)
# and its peak RSS.  Usage: sh bench/report_shapes.sh [BUILD_DIR] [SCALE]
# (SCALE divides the event counts: 10 for a quick look).
B=${1:-build}
SCALE=${2:-1}
command -v perf >/dev/null || { echo "report_shapes: needs perf (apt-get install linux-perf)" >&2; exit 2; }
one() {
    ev=$(($1 / SCALE)); shift
    rm -rf /tmp/gp_bench_read.*
    echo "=== $* --events $ev  (load $(cut -d' ' -f1-3 /proc/loadavg))"
    "$B/bench/bench_read" "$@" --events "$ev" --runs 3 --keep --jansson-mb 0 2>&1 |
        grep -E '^(shape|ours|report:|python3)' | sed 's/^/  /'
    s=$(ls -d /tmp/gp_bench_read.*/*)
    sz=$(du -sb "$s" | cut -f1)
    for i in 1 2 3 4 5 6 7 8 9 10 11; do
        perf stat -x, -e task-clock "$B/gpu-profile" report "$s" 2>&1 >/dev/null | grep task-clock | cut -d, -f1
    done | sort -n | awk -v sz="$sz" '{a[NR] = $1} END {m = a[int((NR + 1) / 2)];
        printf "  CLI: median %.1f ms of CPU (%.1f-%.1f), %.1f MB: %.0f MB/s per core (best %.0f, worst %.0f)\n",
               m, a[1], a[NR], sz / 1e6, sz / 1e3 / m, sz / 1e3 / a[1], sz / 1e3 / a[NR]}'
    /usr/bin/time -f '  CLI peak RSS %M KiB' "$B/gpu-profile" report "$s" 2>&1 >/dev/null | tail -1
    rm -rf /tmp/gp_bench_read.*
}
one 10000000 --shape legacy
one 10000000 --shape 1s
one 10000000 --shape 1s --spec-columns
one 10000000 --shape 10s
one 10000000 --shape 10s --spec-columns
one 10000000 --shape 1s --corr-digits 9 --streams 32
one 10000000 --shape 1s --devices 4 --streams 16
one 10000000 --shape ms --span-ms 100 --kernels 200
one 3000000 --shape 10s --kernels 5000
one 3000000 --shape 10s --kernels 5000 --zipf 1
one 1000000 --shape 10s --detail-every 1
