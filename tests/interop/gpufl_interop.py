#!/usr/bin/env python3
"""GPUFlight's own analyzer over sessions we record, figure by figure.

Records sessions with this build's flight recorder and the test doubles -
Monitor with the fake NVML (scoped and continuous sampling, a device whose
metrics are partly never reported), Monitor with the fake nvidia-smi, Trace
through the fake CUPTI plugin (kernels in nested scopes, copies), PcSampling
through the fake plugin's pcsampling scenario, PmSampling, SassMetrics and
Deep through the real engines over the fake plugin's CUPTI - then runs
GPUFlight's analyzer from a GPUFlight client checkout over each: every
method (print_summary, inspect_scopes, inspect_hotspots, inspect_stalls,
inspect_profile_samples, inspect_perf_metrics, inspect_pm_sampling, the
DataFrames, generate_report, TextReport, and viz's init / show / compare
when matplotlib is there) must run without an exception, and
the figures it computes must equal what `gpu-profile report --format json`
says of the same session.

Usage:
  tests/interop/gpufl_interop.py --client DIR [--build DIR] [--python PY] [--keep]
  (or GPUFL_CLIENT_DIR=DIR).  DIR is a checkout of gpu-flight/gpufl-client
  (release 1.3: tag v1.3.0rc1); PY an interpreter with pandas and rich
  (default: /usr/bin/python3, Debian: apt-get install python3-pandas
  python3-rich).  Without a checkout it skips (exit 77), saying so.
Exit: 0 every figure agrees, 1 a difference or an exception, 77 skipped.
"""

import argparse
import json
import os
import shutil
import subprocess
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.dirname(os.path.dirname(HERE))
SKIP = 77

# ------------------------------------------------------------ recording

# Runs in a child with our gpufl package; argv: kind, log_dir.
RECORDER = r'''
import ctypes, os, sys, time
import gpufl
kind, log_dir = sys.argv[1], sys.argv[2]
opts = dict(app_name=kind, log_path=log_dir, system_sample_rate_ms=5)
if kind in ("trace", "trace_rotated"):
    # Graph tracking: the fake plugin adds a graph's graph_node_definition.
    opts.update(profiling_engine=gpufl.ProfilingEngine.Trace, backend=gpufl.BackendKind.None_,
                enable_cuda_graphs_tracking=True)
elif kind == "trace_threads":
    opts.update(profiling_engine=gpufl.ProfilingEngine.Trace, backend=gpufl.BackendKind.Nvidia)
elif kind == "pcsampling":
    # With CPU stacks: kernel_detail.stack_trace, and our stack_dict and
    # synchronization_event_batch's stack_id (the first buffer's sync, 15).
    opts.update(profiling_engine=gpufl.ProfilingEngine.PcSampling, backend=gpufl.BackendKind.None_,
                enable_stack_trace=True)
elif kind == "pmsampling":
    opts.update(profiling_engine="PmSampling", backend=gpufl.BackendKind.None_)
elif kind == "sassmetrics":
    opts.update(profiling_engine="SassMetrics", backend=gpufl.BackendKind.None_)
elif kind == "deep":
    # PC samples and SASS metrics in one session (the fake's deep scenario).
    opts.update(profiling_engine=gpufl.ProfilingEngine.Deep, backend=gpufl.BackendKind.None_)
elif kind == "monitor_smi":
    opts.update(backend=gpufl.BackendKind.Auto)
else:
    opts.update(backend=gpufl.BackendKind.Nvidia)
if kind == "monitor_continuous":
    opts.update(continuous_system_sampling=True)
if not gpufl.init(**opts):
    sys.exit("gpufl.init refused: %r" % (gpufl.last_error(),))
launch = None
if kind.startswith("trace") or kind in ("pcsampling", "pmsampling", "sassmetrics", "deep"):
    launch = ctypes.CDLL(os.environ["GPUFL_CUPTI_PLUGIN"]).fake_cupti_launch
    launch.argtypes = [ctypes.c_uint32]
if kind == "pcsampling":
    sync = ctypes.CDLL(os.environ["GPUFL_CUPTI_PLUGIN"]).fake_cupti_sync
    sync.argtypes = [ctypes.c_uint32]
    sync(15)
import itertools, threading
corr = itertools.count(101)
lock = threading.Lock()
def work(n):
    for _ in range(n):
        with lock:
            c = next(corr)
        if launch:
            launch(c)
    time.sleep(0.03)
gpufl.system_start("warmup")
work(3)
gpufl.system_stop("warmup")
for epoch in range(2):
    with gpufl.Scope("train"):
        for step in range(3):
            with gpufl.Scope("step"):
                work(20)
            with gpufl.Scope("eval"):
                work(7)
work(5)  # outside any scope
if kind == "trace_threads":
    # Two threads whose scopes overlap in time (each its own track).
    def worker(tag):
        for _ in range(3):
            with gpufl.Scope("worker_" + tag):
                with gpufl.Scope("inner"):
                    work(4)
    ts = [threading.Thread(target=worker, args=(t,)) for t in "ab"]
    for t in ts:
        t.start()
    for t in ts:
        t.join()
gpufl.shutdown()
'''

SESSIONS = [
    # name, environment beside the base one
    ("monitor_scoped", {"FAKE_NVML_SCENARIO": "tests/scenarios/nvml_monitor.txt"}),
    ("monitor_continuous", {"FAKE_NVML_SCENARIO": "tests/scenarios/nvml_monitor.txt"}),
    ("monitor_unreported", {"FAKE_NVML_SCENARIO": "tests/scenarios/nvml_soft_errors.txt"}),
    ("monitor_smi", {"FAKE_SMI_CAPTURES":
                     "tests/fixtures/nvidia-smi/linux-x86_64__nvidia-h100-80gb-hbm3__590.48.01.txt"}),
    ("trace", {"FAKE_CUPTI_SCENARIO": "launches"}),
    # Bounded long runs: every channel as many <channel>.<N>.log.gz windows
    # with sidecars, read whole by GPUFlight's load_all_rotated=True.
    ("trace_rotated", {"FAKE_CUPTI_SCENARIO": "launches", "GPUFL_LOG_ROTATE_BYTES": "2K"}),
    ("monitor_rotated", {"FAKE_NVML_SCENARIO": "tests/scenarios/nvml_monitor.txt",
                         "GPUFL_LOG_ROTATE_BYTES": "2K"}),
    ("trace_threads", {"FAKE_CUPTI_SCENARIO": "launches",
                       "FAKE_NVML_SCENARIO": "tests/scenarios/nvml_monitor.txt"}),
    # PC samples through the real aggregator (plugin/pcsamp_decode.c), and
    # the sass channel: a kept cubin's function disassembled by the real
    # runner (plugin/disasm.c) through the fake nvdisasm.
    ("pcsampling", {"FAKE_CUPTI_SCENARIO": "pcsampling",
                    "GPUFL_NVDISASM": "tests/fakes/fake_nvdisasm.sh",
                    "FAKE_NVDISASM_OUT": "tests/plugin/data/pcsamp_kernel.sass",
                    "FAKE_CUBIN": "tests/plugin/data/pcsamp_lines.cubin"}),
    # PM samples through the real PM engine over the fake PM sampling API.
    ("pmsampling", {"FAKE_CUPTI_SCENARIO": "launches"}),
    # SASS metrics (sample_kind 1 rows) through the real SASS engine.
    ("sassmetrics", {"FAKE_CUPTI_SCENARIO": "sassmetrics"}),
    # Deep: rows of sample_kind 0 and 1 over one set of dictionaries; the
    # analyzer's PC figures must ignore the SASS rows as ours do.
    ("deep", {"FAKE_CUPTI_SCENARIO": "deep"}),
]


def record(build, work, name, extra):
    log_dir = os.path.join(work, name)
    env = dict(os.environ)
    env.update({
        "PYTHONPATH": os.path.join(REPO, "python"),
        "GPU_PROFILE_LIBRARY": os.path.join(build, "libgpuprofile.so.0"),
        "GPUFL_CUPTI_PLUGIN": os.path.join(build, "tests/fake-cupti/libfake_cupti_plugin.so"),
        "PATH": os.path.join(build, "tests/fake-smi") + os.pathsep + env.get("PATH", ""),
    })
    if name == "monitor_smi":
        env.pop("LD_LIBRARY_PATH", None)  # no NVML: nvidia-smi answers
    else:
        env["LD_LIBRARY_PATH"] = os.path.join(build, "tests/fake-nvml")
    for k, v in extra.items():
        env[k] = os.path.join(REPO, v) if v.startswith("tests/") else v
    for k in ("GPUFL_DISABLED", "GPUFL_CONFIG_FILE"):
        env.pop(k, None)
    subprocess.run([sys.executable, "-c", RECORDER, name, log_dir], env=env, check=True,
                   cwd=work)
    return log_dir


# ----------------------------------------------------------------- ours

def ours(build, log_dir):
    out = subprocess.run([os.path.join(build, "gpu-profile"), "report", "--format", "json",
                          log_dir], stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                         universal_newlines=True)
    if out.returncode not in (0, 2):
        raise RuntimeError("gpu-profile report %s: exit %d: %s" % (log_dir, out.returncode,
                                                                  out.stderr))
    r = json.loads(out.stdout)
    s = r["summary"]
    f = {}
    # (GPUFlight's analyzer has no kernel or copy figures without rows.)
    if s["kernel_launches"]:
        f.update(kernels=s["kernel_launches"], kernel_time_ms=s["kernel_time_ns"] / 1e6)
    if s["memcpy_count"]:
        f.update(memcpy_count=s["memcpy_count"], memcpy_bytes=s["memcpy_bytes"])
    if r["session"].get("duration_ns") is not None:
        f["duration_ms"] = r["session"]["duration_ns"] / 1e6
    scopes = {}
    for it in r["scopes"]["items"]:
        # (A scope no kernel was attributed to has no entry in the
        # analyzer's sums: it cannot say 0.)
        if it.get("kind") == "scope" and it.get("gpu_time_inside_ns"):
            scopes[it["name"]] = it["gpu_time_inside_ns"] / 1e6
    if scopes:
        f["scope_gpu_ms"] = scopes
    begins = sum(it["count"] for it in r["scopes"]["items"] if it.get("kind") == "scope")
    if begins:
        f["scope_begins"] = begins
    hot = {k["name"]: k["count"] for k in r["hotspots"]["kernels"]}
    if hot:
        f["hotspot_calls"] = hot
    n, util, peak, pn, power = 0, 0.0, None, 0, 0.0
    for d in r["devices"]:
        if d.get("power_mean_mw") is not None:
            pn += d["samples"]
            power += d["power_mean_mw"] / 1000.0 * d["samples"]
        if d.get("util_gpu_mean_pct") is not None and d.get("util_samples", d["samples"]):
            n += d["samples"]
            util += d["util_gpu_mean_pct"] * d["samples"]
        if d.get("mem_used_max_bytes") is not None:
            mib = d["mem_used_max_bytes"] // 1048576
            peak = mib if peak is None else max(peak, mib)
    if n:
        f["gpu_util_mean"] = util / n
    if pn:
        f["power_mean_w"] = power / pn
    if peak is not None:
        f["vram_peak_mib"] = peak
    if r.get("host") and r["host"].get("cpu_mean_pct") is not None:
        f["host_cpu_mean"] = r["host"]["cpu_mean_pct"]
    pm = r.get("perf_metrics")
    if isinstance(pm, list) and pm:
        f["pm_samples"] = sum(it["samples"] for it in pm)
        f["pm_mean_by_metric"] = {it["name"]: it["mean"] for it in pm}
    sm = r.get("sass_metrics")
    if isinstance(sm, dict) and sm.get("rows"):
        f["sass_rows"] = sm["rows"]
    st = r.get("stalls")
    if st and st.get("pc_samples"):
        f["pc_samples"] = st["pc_samples"]
        by_reason = {}
        for it in st["reasons"]:
            key = it.get("metric_name") or it["name"]
            by_reason[key] = by_reason.get(key, 0) + it["samples"]
        f["pc_samples_by_reason"] = by_reason
    return f, r


# ----------------------------------------------------------------- theirs

# Runs under the analyzer's interpreter with the client's python/ first on
# the path; argv: session dir.  Prints one JSON object.
ANALYZER = r'''
import io, json, sys, traceback, contextlib
out = {"errors": []}
buf = io.StringIO()
try:
    from gpufl.analyzer import GpuFlightSession
    from gpufl.report import TextReport, generate_report
except Exception:
    print(json.dumps({"errors": ["import: " + traceback.format_exc()]})); sys.exit(0)
with contextlib.redirect_stdout(buf):
    try:
        s = GpuFlightSession(sys.argv[1], log_prefix="", load_all_rotated=True)
    except Exception:
        out["errors"].append("GpuFlightSession: " + traceback.format_exc())
        s = None
    if s is not None:
        s.console.file = buf
        for m in ("print_summary", "inspect_scopes", "inspect_hotspots", "inspect_stalls",
                  "inspect_profile_samples", "inspect_perf_metrics", "inspect_pm_sampling"):
            try:
                getattr(s, m)()
            except Exception:
                out["errors"].append(m + ": " + traceback.format_exc())
        # viz draws with matplotlib (Agg: no display); without it, say so.
        try:
            import matplotlib
            matplotlib.use("Agg")
        except ImportError:
            out["viz"] = "skipped: no matplotlib"
        else:
            try:
                from gpufl import viz
                viz.init(sys.argv[1])
                viz.show()
                viz.compare()
                out["viz"] = "ran (init, show, compare)"
            except Exception:
                out["errors"].append("viz: " + traceback.format_exc())
        for m in ("generate_report", "TextReport"):
            try:
                text = (generate_report(sys.argv[1]) if m == "generate_report"
                        else TextReport(s).generate())
                out.setdefault("text_reports", []).append(len(text))
            except TypeError:
                try:
                    TextReport(s).generate()
                except Exception:
                    out["errors"].append(m + ": " + traceback.format_exc())
            except Exception:
                out["errors"].append(m + ": " + traceback.format_exc())
if s is not None:
    f = {}
    k = s.kernels
    for name in ("kernels", "memcpy", "scopes", "perf", "pm_samples", "device_metrics",
                 "host_metrics", "scope_events"):
        df = getattr(s, name, None)
        out.setdefault("frames", {})[name] = None if df is None else int(len(df))
    if not k.empty:
        # inspect_hotspots' grouping: by name and stack_trace (NaN keys drop out).
        keys = ["name"] + (["stack_trace"] if "stack_trace" in k.columns else [])
        calls = {}
        for key, n in k.groupby(keys)["duration_ms"].count().items():
            name = key[0] if isinstance(key, tuple) else key
            calls[name] = calls.get(name, 0) + int(n)
        f["hotspot_calls"] = calls
        f["kernels"] = int(len(k))
        f["kernel_time_ms"] = float(k["duration_ms"].sum())
        if "user_scope" in k.columns:
            per_path = k.dropna(subset=["user_scope"]).groupby("user_scope")["duration_ms"].sum()
            inclusive = {}
            for path, ms in per_path.items():
                for name in set(str(path).split("|")):
                    if name and name != "global":
                        inclusive[name] = inclusive.get(name, 0.0) + float(ms)
            if inclusive:
                f["scope_gpu_ms"] = inclusive
    if not s.memcpy.empty:
        f["memcpy_count"] = int(len(s.memcpy))
        f["memcpy_bytes"] = int(s.memcpy["bytes"].sum())
    if s.session_start_ns is not None and s.session_end_ns is not None:
        f["duration_ms"] = float((s.session_end_ns - s.session_start_ns) / 1e6)
    se = s.scope_events
    if not se.empty and "event_type" in se.columns:
        f["scope_begins"] = int((se["event_type"] == 0).sum())
    dm = s.device_metrics
    if not dm.empty and "gpu_util" in dm.columns:
        import pandas as pd
        u = pd.to_numeric(dm["gpu_util"], errors="coerce").dropna()
        if not u.empty:
            f["gpu_util_mean"] = float(u.mean())
        m = pd.to_numeric(dm["used_mib"], errors="coerce").dropna()
        if not m.empty:
            f["vram_peak_mib"] = int(m.max())
        p = pd.to_numeric(dm["power_mw"], errors="coerce").dropna()
        if not p.empty:
            f["power_mean_w"] = float(p.mean()) / 1000.0
    hm = s.host_metrics
    if not hm.empty and "cpu_pct" in hm.columns:
        f["host_cpu_mean"] = float(hm["cpu_pct"].mean())
    pms = s.pm_samples
    if not pms.empty and "value" in pms.columns:
        import pandas as pd
        f["pm_samples"] = int(len(pms))
        v = pd.to_numeric(pms["value"], errors="coerce")
        f["pm_mean_by_metric"] = {str(k): float(x) for k, x in
                                  v.groupby(pms["metric_name"]).mean().items()}
    sc = s.scopes
    if not sc.empty and "type" in sc.columns and "sample_kind" in sc.columns:
        # inspect_profile_samples' SASS rows: profile_sample of kind sass_metric.
        n_sass = int(((sc["type"] == "profile_sample") & (sc["sample_kind"] == "sass_metric")).sum())
        if n_sass:
            f["sass_rows"] = n_sass
    if not sc.empty and "type" in sc.columns:
        # inspect_stalls' rows: profile_sample of kind pc_sampling.
        pc = sc[sc["type"] == "profile_sample"]
        if "sample_kind" in pc.columns:
            pc = pc[pc["sample_kind"] == "pc_sampling"]
        if not pc.empty and "sample_count" in pc.columns:
            import pandas as pd
            n = pd.to_numeric(pc["sample_count"], errors="coerce").fillna(0)
            f["pc_samples"] = int(n.sum())
            # By metric_dict's name: its reason_name reads a PC Sampling
            # API row's stall_reason (the device's index) as the activity
            # API's enum (7 "Constant Memory"), and index 0 as null - for
            # GPUFlight's own sessions too (docs/gpufl.md).
            f["pc_samples_by_reason"] = {str(k): int(v) for k, v in
                                         n.groupby(pc["metric_name"]).sum().items()}
    out["figures"] = f
out["printed"] = buf.getvalue()[-4000:]
print(json.dumps(out))
'''


def theirs(client, python, session_dir):
    env = dict(os.environ)
    env["PYTHONPATH"] = os.path.join(client, "python")
    env["COLUMNS"] = "120"
    p = subprocess.run([python, "-c", ANALYZER, session_dir], env=env, stdout=subprocess.PIPE,
                       stderr=subprocess.PIPE, universal_newlines=True)
    try:
        return json.loads(p.stdout.strip().splitlines()[-1])
    except (ValueError, IndexError):
        return {"errors": ["the analyzer printed no result: exit %d\n%s" % (p.returncode,
                                                                          p.stderr[-2000:])]}


# ------------------------------------------------------------ comparing

# (figure, relative tolerance): counts exact; times to the rounding of the
# analyzer's float ms; means to their rounding in our JSON (integers there).
TOLERANCE = {"pc_samples": 0, "pc_samples_by_reason": 0, "pm_samples": 0, "sass_rows": 0,
             "pm_mean_by_metric": 1e-9, "kernels": 0, "memcpy_count": 0, "memcpy_bytes": 0, "scope_begins": 0,
             "vram_peak_mib": 0, "hotspot_calls": 0, "power_mean_w": 0.01, "kernel_time_ms": 1e-9, "duration_ms": 1e-6,
             "scope_gpu_ms": 1e-9, "gpu_util_mean": 0.01, "host_cpu_mean": 0.02}


def agree(name, a, b):
    tol = TOLERANCE.get(name, 1e-9)
    if isinstance(a, dict) or isinstance(b, dict):
        return isinstance(a, dict) and isinstance(b, dict) and set(a) == set(b) and all(
            agree(name, a[k], b[k]) for k in a)
    if tol == 0:
        return a == b
    return abs(a - b) <= tol * max(1.0, abs(a), abs(b))


def compare(name, our, their):
    rows, ok = [], True
    for fig in sorted(set(our) | set(their)):
        a, b = our.get(fig), their.get(fig)
        if fig == "gpu_util_mean" and a is not None and b is not None:
            good = abs(a - b) <= 1.0  # our JSON rounds each device's mean
        elif fig == "host_cpu_mean" and a is not None and b is not None:
            good = abs(a - b) <= 1.0
        else:
            good = a is not None and b is not None and agree(fig, a, b)
        ok &= good
        rows.append("  %-16s %-34s %-34s %s" % (fig, short(a), short(b),
                                                "ok" if good else "DIFFERS"))
    return ok, rows


def short(v):
    if isinstance(v, float):
        return "%.6g" % v
    if isinstance(v, dict):
        return "{" + ", ".join("%s: %.6g" % (k, v[k]) for k in sorted(v)) + "}"
    return str(v)


def can_run_analyzer(python):
    r = subprocess.run([python, "-c", "import pandas, rich"], stdout=subprocess.DEVNULL,
                       stderr=subprocess.DEVNULL)
    return r.returncode == 0


def count_type(session_dir, record_type):
    """Lines of record_type in a session's plain channel logs."""
    n = 0
    for f in os.listdir(session_dir):
        if f.endswith(".log"):
            with open(os.path.join(session_dir, f)) as fp:
                n += sum(1 for line in fp if '"type":"%s"' % record_type in line)
    return n


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--client", default=os.environ.get("GPUFL_CLIENT_DIR"))
    ap.add_argument("--build", default=os.path.join(REPO, "build"))
    ap.add_argument("--python", default=None)
    ap.add_argument("--keep", action="store_true")
    a = ap.parse_args()
    if not a.client:
        print("SKIP: no GPUFlight client checkout given (--client DIR or GPUFL_CLIENT_DIR): "
              "this check needs gpu-flight/gpufl-client's python/gpufl analyzer")
        return SKIP
    analyzer = os.path.join(a.client, "python", "gpufl", "analyzer", "analyzer.py")
    if not os.path.isfile(analyzer):
        print("FAIL: %s is not a GPUFlight client checkout (no %s)" % (a.client, analyzer))
        return 1
    python = a.python or ("/usr/bin/python3" if can_run_analyzer("/usr/bin/python3")
                          else sys.executable)
    if not can_run_analyzer(python):
        print("SKIP: %s cannot import pandas and rich, which GPUFlight's analyzer needs "
              "(Debian: apt-get install python3-pandas python3-rich; or --python PY)" % python)
        return SKIP
    build = os.path.abspath(a.build)
    for need in ("gpu-profile", "libgpuprofile.so.0", "tests/fake-nvml/libnvidia-ml.so.1",
                 "tests/fake-smi/nvidia-smi", "tests/fake-cupti/libfake_cupti_plugin.so"):
        if not os.path.exists(os.path.join(build, need)):
            print("SKIP: %s/%s is missing: build the project and its test doubles first "
                  "(the CUPTI ones need a CUDA toolkit)" % (build, need))
            return SKIP
    work = tempfile.mkdtemp(prefix="gpufl_interop_")
    all_ok = True
    try:
        for name, extra in SESSIONS:
            log_dir = record(build, work, name, extra)
            sessions = [os.path.join(log_dir, d) for d in os.listdir(log_dir)]
            our, _ = ours(build, log_dir)
            their = theirs(a.client, python, sessions[0])
            ok, rows = compare(name, our, their.get("figures", {}))
            if name == "trace":  # the analyzer read a session with graph nodes in it
                nodes = count_type(sessions[0], "graph_node_definition")
                rows.append("  %-16s %-34s %-34s" % ("graph nodes", nodes, "(read past)"))
                ok &= nodes == 2
            errs = their.get("errors", [])
            ok &= not errs
            all_ok &= ok
            print("%s: %s (%s)" % (name, "ok" if ok else "FAIL", sessions[0]))
            print("  %-16s %-34s %-34s" % ("figure", "gpu-profile report", "GPUFlight analyzer"))
            for r in rows:
                print(r)
            print("  (the analyzer's frames: %s; text reports: %s characters; viz: %s)" % (
                ", ".join("%s %s" % kv for kv in sorted(their.get("frames", {}).items())),
                their.get("text_reports"), their.get("viz")))
            for e in errs:
                print("  exception in " + e.strip().replace("\n", "\n    "))
    finally:
        if a.keep:
            print("sessions kept in " + work)
        else:
            shutil.rmtree(work, ignore_errors=True)
    print("gpufl_interop: %s" % ("every figure agrees" if all_ok else "differences above"))
    return 0 if all_ok else 1


if __name__ == "__main__":
    sys.exit(main())
