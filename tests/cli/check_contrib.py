#!/usr/bin/env python3
"""check_contrib.py - contrib/grafana-dashboard.json parses, and every metric
its queries name is one `gpu-profile serve` serves (cli/prom.c's table), so
the dashboard cannot drift from the exporter; contrib/gpu-profile.service
runs `gpu-profile serve`.  Usage: check_contrib.py REPO_ROOT"""
import json
import re
import sys

root = sys.argv[1]
served = set(re.findall(r'\{"((?:DCGM_FI|gpu_profile)_[A-Za-z_]+)"',
                        open(f"{root}/cli/prom.c").read()))
dash = json.load(open(f"{root}/contrib/grafana-dashboard.json"))
bad = []
exprs = [t["expr"] for p in dash["panels"] for t in p["targets"]]
exprs += [v["query"] for v in dash["templating"]["list"] if v["type"] == "query"]
for e in exprs:
    for name in re.findall(r"\b((?:DCGM_FI|gpu_profile)_[A-Za-z_]+)\b", e):
        if name not in served:
            bad.append(f"{name} (in {e!r}) is not served")
unit = open(f"{root}/contrib/gpu-profile.service").read()
if "gpu-profile serve" not in unit:
    bad.append("the systemd unit does not run gpu-profile serve")
print(f"check_contrib: {len(dash['panels'])} panels, {len(exprs)} queries, "
      f"{len(served)} served metrics, {len(bad)} problems")
for b in bad:
    print("  " + b)
sys.exit(1 if bad or not served else 0)
