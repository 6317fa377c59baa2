#!/bin/bash
# tests/gpu/overhead_dry.sh BUILD_DIR - CTest test_bench_gpu_overhead_dry (label
# unit, no GPU): bench/gpu_overhead.sh --dry-run over the fakes, and its
# table checked exactly: the header, every (workload, mode) row in order,
# the runs, the target column, the rows the machine lacks as n/a with why,
# and the numeric cells' shapes (not their values: they time stand-ins).
set -u
build=${1:?usage: overhead_dry.sh BUILD_DIR}
src=$(cd "$(dirname "$0")/../.." && pwd)
out=$(mktemp)
trap 'rm -f "$out" "$out.table"' EXIT
bash "$src/bench/gpu_overhead.sh" --dry-run --runs 2 --build "$build" --out "$out.table" >"$out" 2>"$out.err"
rc=$?
if [ $rc != 0 ]; then
    cat "$out" "$out.err"
    echo "FAIL: gpu_overhead.sh --dry-run exited $rc"
    rm -f "$out.err"
    exit 1
fi
rm -f "$out.err"
if ! cmp -s "$out" "$out.table"; then
    echo "FAIL: --out's file is not the table printed"
    exit 1
fi
fail=0
want_rows=""
for w in kernels memcpy torch_step; do
    for m in untraced Monitor Trace PcSampling SassMetrics RangeProfiler Deep nsys torch.profiler; do
        want_rows="$want_rows$w $m
"
    done
done
got_rows=$(awk -F' [|] ' 'NR > 2 { sub(/^[|] /, "", $1); print $1, $2 }' "$out")
if [ "$got_rows" != "${want_rows%
}" ]; then
    echo "FAIL: rows differ"
    diff <(printf '%s' "$want_rows") <(printf '%s\n' "$got_rows")
    fail=1
fi
head -2 "$out" >"$out.head"
printf '%s\n' "| workload | mode | runs | wall median (ms) | overhead vs untraced | throughput median | target |" \
    "|---|---|---|---|---|---|---|" | cmp -s - "$out.head" || { echo "FAIL: header"; cat "$out.head"; fail=1; }
rm -f "$out.head"
# Each row: 7 cells; measured rows: runs 2, a wall in ms, an overhead (a
# dash for untraced), a throughput in the workload's unit; absent rows:
# runs 0 and n/a with the reason; the targets of the brief.
awk -F'|' '
function bad(why) { printf "FAIL: line %d: %s: %s\n", NR, why, $0; fail = 1 }
NR <= 2 { next }
{
    if (NF != 9) { bad("not 7 cells"); next }
    for (i = 2; i <= 8; i++) { gsub(/^ +| +$/, "", $i) }
    w = $2; m = $3
    unit = w == "kernels" ? "kernels/s" : w == "memcpy" ? "MiB/s" : "steps/s"
    tgt = m == "Monitor" ? "< 0.5 %" : m == "Trace" ? "< 5 %" : \
          (m == "PcSampling" && w == "torch_step") ? "≤ 5 %" : ""
    if ($8 != tgt) bad("target")
    absent = m == "nsys" || m == "torch.profiler"
    if (absent) {
        why = m == "nsys" ? "nsys not found" : \
              w == "torch_step" ? "not in --dry-run" : "PyTorch workloads only"
        if ($4 != "0" || $5 != "n/a" || $6 != "n/a (" why ")" || $7 != "n/a") bad("absent row")
        next
    }
    if ($4 != "2") bad("runs")
    if ($5 !~ /^[0-9]+\.[0-9]$/) bad("wall")
    if (m == "untraced" ? $6 != "—" : $6 !~ /^[-+][0-9]+\.[0-9] %$/) bad("overhead")
    if ($7 !~ ("^[0-9.e+]+ " unit "$")) bad("throughput")
}
END { exit fail }' "$out" || fail=1
if [ $fail = 0 ]; then
    echo "PASS: gpu_overhead.sh --dry-run: 27 rows, 7 columns"
else
    cat "$out"
fi
exit $fail
