#!/usr/bin/env python3
"""check_contrib.py - contrib/grafana-dashboard.json parses, and every metric
its queries name is one `gpu-profile serve` serves (cli/prom.c's table,
cli/prom_procs.c's per-process families), so
the dashboard cannot drift from the exporter; contrib/gpu-profile.service
runs `gpu-profile serve` on loopback with the hardening contrib/README.md
lists, and (where systemd-analyze reads unit files offline) verifies clean
and rates at most MAX_EXPOSURE.  Usage: check_contrib.py REPO_ROOT"""
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile


# The hardening a metrics exporter can take (contrib/README.md): each key
# with the value the unit must give it (a list: every one of these lines).
HARDENING = {
    "DynamicUser": "yes", "CapabilityBoundingSet": "", "AmbientCapabilities": "",
    "NoNewPrivileges": "yes", "ProtectSystem": "strict", "ProtectHome": "yes",
    "PrivateTmp": "yes", "PrivateMounts": "yes", "ProtectProc": "invisible",
    "DevicePolicy": "closed",
    "DeviceAllow": ["/dev/nvidiactl rw", "char-nvidia rw", "char-nvidiactl rw",
                    "char-nvidia-frontend rw", "char-nvidia-caps r"],
    "ProtectKernelTunables": "yes", "ProtectKernelModules": "yes",
    "ProtectKernelLogs": "yes", "ProtectControlGroups": "yes", "ProtectClock": "yes",
    "ProtectHostname": "yes", "RestrictAddressFamilies": "AF_INET AF_INET6 AF_UNIX",
    "IPAddressDeny": "any", "IPAddressAllow": "localhost", "SystemCallArchitectures": "native",
    "SystemCallFilter": ["@system-service", "~@privileged"], "SystemCallErrorNumber": "EPERM",
    "RestrictNamespaces": "yes", "RestrictRealtime": "yes", "RestrictSUIDSGID": "yes",
    "LockPersonality": "yes", "MemoryDenyWriteExecute": "yes", "UMask": "0077",
}
MAX_EXPOSURE = 2.0  # systemd 252 rates the unit 1.4; the unhardened one was 8.3


def service_keys(unit):
    """[Service]'s key = value lines, in order, as (key, value)."""
    out, section = [], None
    for line in unit.splitlines():
        line = line.strip()
        if not line or line.startswith("#"):
            continue
        if line.startswith("["):
            section = line
        elif section == "[Service]":
            k, _, v = line.partition("=")
            out.append((k.strip(), v.strip()))
    return out


def listens_on_loopback(exec_start):
    """serve's own default (no --listen) is loopback; else the address given."""
    m = re.search(r"--listen[= ](\S+)", exec_start)
    if not m:
        return True
    host = m.group(1).rsplit(":", 1)[0]
    return host in ("127.0.0.1", "localhost", "[::1]")


def check_unit(unit):
    bad = []
    keys = service_keys(unit)
    got = {}
    for k, v in keys:
        got.setdefault(k, []).append(v)
    exec_start = " ".join(got.get("ExecStart", []))
    if not listens_on_loopback(exec_start):
        bad.append(f"the unit listens beyond loopback ({exec_start!r}): serve's default is "
                   "127.0.0.1; contrib/README.md says how to open it")
    for k, want in HARDENING.items():
        want = want if isinstance(want, list) else [want]
        if got.get(k) != want:
            bad.append(f"the unit's {k} is {got.get(k)!r}, not {want!r}")
    bad += systemd_checks(unit)
    return bad


def systemd_checks(unit):
    """systemd-analyze, where this systemd can read a unit file offline
    (systemd 250+): no unknown key, and the exposure score bounded."""
    tool = shutil.which("systemd-analyze")
    if not tool:
        print("check_contrib: no systemd-analyze: the unit's score not checked")
        return []
    bad = []
    with tempfile.TemporaryDirectory() as d:
        path = os.path.join(d, "gpu-profile.service")
        with open(path, "w") as f:  # an ExecStart that exists, for verify
            f.write(unit.replace("/usr/local/bin/gpu-profile", "/bin/true"))
        r = subprocess.run([tool, "security", "--offline=true", path],
                           stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        m = re.search(r"Overall exposure level for [^:]*: ([0-9.]+)", r.stdout)
        if not m:
            print("check_contrib: systemd-analyze security --offline does not work here "
                  f"({r.stderr.strip()[:200]!r}): the unit's score not checked")
            return []
        score = float(m.group(1))
        print(f"check_contrib: systemd-analyze security rates the unit {score}")
        if score > MAX_EXPOSURE:
            bad.append(f"systemd-analyze security rates the unit {score} (at most "
                       f"{MAX_EXPOSURE})")
        r = subprocess.run([tool, "verify", path], stdout=subprocess.PIPE,
                           stderr=subprocess.PIPE, text=True)
        for line in (r.stdout + r.stderr).splitlines():
            if path in line or "Unknown" in line:
                bad.append("systemd-analyze verify: " + line)
    return bad


root = sys.argv[1]
# A family row is {"NAME", ...}, F("NAME", ...) (a sample field) or, for the
# health figures, H("NAME", ...).
served = set(re.findall(r'(?:\{|\b[FH]\()"((?:DCGM_FI|gpu_profile)_[A-Za-z_]+)"',
                        open(f"{root}/cli/prom.c").read() +
                        open(f"{root}/cli/prom_procs.c").read()))
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
bad += check_unit(unit)
print(f"check_contrib: {len(dash['panels'])} panels, {len(exprs)} queries, "
      f"{len(served)} served metrics, {len(bad)} problems")
for b in bad:
    print("  " + b)
sys.exit(1 if bad or not served else 0)
