#!/usr/bin/env python3
"""check_torch_attr.py - tests/gpu/run.sh's step 4c: torch_trace.py's
matmuls attributed to what launched them.

usage: check_torch_attr.py GPU_PROFILE LOG_DIR SCRIPT [MM_CALLS]

Reads `GPU_PROFILE report --format json --by line LOG_DIR` and `--by op`
and wants, exactly: the group of SCRIPT's "# @mm" line (named
`qualname (path:line)`, the path ending in SCRIPT's file name) and the
group `aten::mm` each holding MM_CALLS (default 5) launches of kernels
whose name contains "gemm" (case-insensitive: cuBLAS's), and every launch
of such a kernel in those two groups.  Prints what it saw; exit 0 when all
hold, 1 when one does not, 2 on bad usage or an unreadable report.
"""
import json
import os
import subprocess
import sys


def report(gp, log_dir, by):
    cmd = [gp, "report", "--format", "json", "--by", by, log_dir]
    r = subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, timeout=600)
    if r.returncode != 0:
        sys.exit("check_torch_attr: %s: exit %d: %s" % (" ".join(cmd), r.returncode,
                                                         r.stderr.decode()[-2000:]))
    return json.loads(r.stdout.decode())


def gemm_launches(group):
    return sum(k["launches"] for k in group["kernels"] if "gemm" in k["name"].lower())


def mm_line(script):
    with open(script) as f:
        for i, text in enumerate(f, 1):
            if text.rstrip().endswith("# @mm"):
                return i
    sys.exit("check_torch_attr: %s has no '# @mm' line" % script)


def check_groups(rep, want_name, what, calls, fails):
    """The group want_name (a predicate) holds `calls` gemm launches, and
    no other group has one."""
    groups = rep["hotspots"].get("groups") or []
    print("%s: %d groups; top: %s" % (what, len(groups),
                                      ", ".join("%s (%d)" % (g["name"], g["launches"])
                                                for g in groups[:5])))
    mine = [g for g in groups if want_name(g["name"])]
    if len(mine) != 1:
        fails.append("%s: %d groups match, 1 wanted" % (what, len(mine)))
        return
    got = gemm_launches(mine[0])
    if got != calls:
        fails.append("%s: %s has %d gemm launches, %d wanted (kernels: %s)" % (
            what, mine[0]["name"], got, calls,
            ", ".join("%s x%d" % (k["name"], k["launches"]) for k in mine[0]["kernels"])))
    others = sum(gemm_launches(g) for g in groups if g is not mine[0])
    if others:
        fails.append("%s: %d gemm launches in other groups" % (what, others))


def main(argv):
    if len(argv) not in (4, 5):
        sys.exit(__doc__)
    gp, log_dir, script = argv[1], argv[2], argv[3]
    calls = int(argv[4]) if len(argv) == 5 else 5
    line = mm_line(script)
    suffix = "%s:%d)" % (os.path.basename(script), line)
    fails = []
    check_groups(report(gp, log_dir, "line"),
                 lambda n: n.endswith(suffix) and ("/" + suffix in n or "(" + suffix in n),
                 "by line (want ...%s)" % suffix, calls, fails)
    check_groups(report(gp, log_dir, "op"), lambda n: n == "aten::mm", "by op (want aten::mm)",
                 calls, fails)
    for f in fails:
        print("FAIL: " + f)
    print("check_torch_attr: %s" % ("ok" if not fails else "%d failed" % len(fails)))
    return 1 if fails else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
