#!/bin/sh
# bench/export_sqlite.sh - `gpu-profile export --format sqlite`'s speed
# (docs/performance.md "SQLite export"): a bench_read session of N kernel
# launches (--shape 1s), then the command's CPU time (perf stat task-clock,
# 5 runs: median, best, worst) in kernel rows per second per core, beside
# csv, chrome-trace and report on the same session, and the database's
# size.  Usage: sh bench/export_sqlite.sh [BUILD_DIR] [EVENTS] (1000000).
B=${1:-build}
EV=${2:-1000000}
command -v perf >/dev/null || { echo "export_sqlite: needs perf (apt-get install linux-perf)" >&2; exit 2; }
rm -rf /tmp/gp_bench_read.*
"$B/bench/bench_read" --shape 1s --events "$EV" --runs 1 --keep --no-python --jansson-mb 0 2>&1 |
    grep -E '^shape' | sed 's/^/  /'
s=$(ls -d /tmp/gp_bench_read.*/*)
db=$(mktemp -d)/out.db
echo "session $s: $(du -sb "$s" | cut -f1) bytes, load $(cut -d' ' -f1-3 /proc/loadavg)"
one() {
    name=$1; shift
    for i in 1 2 3 4 5; do
        perf stat -x, -e task-clock "$B/gpu-profile" "$@" "$s" 2>&1 >/dev/null | grep task-clock | cut -d, -f1
    done | sort -n | awk -v ev="$EV" -v n="$name" '{a[NR] = $1} END {m = a[int((NR + 1) / 2)];
        printf "  %-22s median %7.1f ms of CPU (%.1f-%.1f): %.2f M kernel rows/s per core\n",
               n, m, a[1], a[NR], ev / m / 1e3}'
}
one "export sqlite" export --format sqlite -o "$db"
echo "  database: $(stat -c %s "$db") bytes"
one "export csv" export --format csv -o /dev/null
one "export chrome-trace" export --format chrome-trace -o /dev/null
one "report" report
rm -rf "$(dirname "$db")" /tmp/gp_bench_read.*
