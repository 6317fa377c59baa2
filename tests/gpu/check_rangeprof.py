#!/usr/bin/env python3
"""check_rangeprof.py LOG_DIR - tests/gpu/run.sh step 9: the session of
rangeprof_workload has kernel_perf_metric_event rows; the copy kernel's DRAM
throughput is above 50 % of peak and the FMA kernel's SM throughput above
50 %; where `ncu` is installed (NCU_REPORT=FILE.csv: ncu --csv --metrics
dram__throughput.avg.pct_of_peak_sustained_elapsed,
sm__throughput.avg.pct_of_peak_sustained_elapsed of the same program), each
value is within 5 % (points) of Nsight Compute's."""
import csv, glob, json, os, sys

rows = []
for path in glob.glob(os.path.join(sys.argv[1], "**", "device*.log"), recursive=True):
    with open(path, encoding="utf-8") as f:
        for line in f:
            if '"kernel_perf_metric_event"' in line:
                rows.append(json.loads(line))
if not rows:
    sys.exit("FAIL: no kernel_perf_metric_event in %s" % sys.argv[1])
want = {"copy_kernel": "dram__throughput.avg.pct_of_peak_sustained_elapsed",
        "fma_kernel": "sm__throughput.avg.pct_of_peak_sustained_elapsed"}
got, bad = {}, 0
for r in rows:
    for k, m in want.items():
        if k in r["kernel_name"]:
            got[k] = r.get("metrics", {}).get(m)
for k, m in want.items():
    v = got.get(k)
    ok = v is not None and v > 50.0
    bad += not ok
    print("%s  %s %s = %s (want > 50)" % ("PASS" if ok else "FAIL", k, m, v))
ncu = os.environ.get("NCU_REPORT")
if ncu and os.path.exists(ncu):
    with open(ncu, newline="", encoding="utf-8") as f:
        for rec in csv.DictReader(f):
            for k, m in want.items():
                if k in rec.get("Kernel Name", "") and rec.get("Metric Name") == m:
                    ref = float(rec["Metric Value"].replace(",", ""))
                    ok = got.get(k) is not None and abs(got[k] - ref) <= 5.0
                    bad += not ok
                    print("%s  %s vs ncu: %s vs %.2f" % ("PASS" if ok else "FAIL", k, got.get(k), ref))
sys.exit(1 if bad else 0)
