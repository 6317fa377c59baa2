#!/usr/bin/env python3
"""bench_python.py - what the Python packages add per call.

    python3 bench/bench_python.py [--build DIR] [--quick] [--json] [--only WHAT]
                                  [--kernels N] [--scope-rows N] [--runs N]

From the repository root after a normal build into build/ (`cmake -S . -B
build && cmake --build build`).  Figures (docs/performance.md, "Python"):

  (a) @gpu_profile(report=False) around an empty function, per call - the
      whole call: monitor created, sampler thread started and stopped,
      summary read - with backend="none" and with backend="nvml" against
      the fake NVML of the build (DIR/tests/fake-nvml/libnvidia-ml.so.1,
      its default scenario: one device), next to the bare call.  Target:
      <= 100 us per decorated call.
  (b) `with gfl.Scope("x"):` per iteration, the Scope object created each
      time as the seed writes it (and, for reference, one Scope object
      entered again and again), inside an active gpufl session (backend
      None_, Monitor engine) and with the session disabled (enabled=False),
      next to an empty `with` of a trivial Python context manager.
      Target: <= 2 us per Scope.
  (c) gpufl.analyzer's DataFrames: GpuFlightSession(dir).kernels on a
      session of --kernels launches (default 200 000: 50 kernels, 4
      streams, a kernel_detail at each kernel's first launch, as our
      writer writes them) and .scope_events on one of --scope-rows rows
      (default 1 000 000: begin / end rows of 20 scope names), session
      construction included, each in a fresh child process; next to
      GPUFlight's own analyzer (pure Python: $GPUFL_CLIENT_DIR/python, by
      default /tmp/gpufl-client/python) on the same files when its checkout
      is there.  Targets: >= 10x GPUFlight's analyzer on the kernels; the
      1 M-row scope_events in < 2 s.  Both need pandas: the children run
      under the first of this python and /usr/bin/python3 that has it.

Each figure is the median over rounds of (round time / calls in the round);
the configurations of one measurement are interleaved round by round, with
the garbage collector off while a round runs.  Each measurement runs in its
own child process (this script again, with --child), so that the fake NVML
is found through LD_LIBRARY_PATH (read by the loader at process start) and
gpufl's process-wide session state starts clean.

The library: $GPU_PROFILE_LIBRARY when set (always respected); else, with
--build DIR, DIR/libgpuprofile.so.0; else what the packages find by
themselves (build/libgpuprofile.so.0 of this tree first).
"""

import argparse
import gc
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
TARGET_DECORATOR_US = 100.0
TARGET_SCOPE_US = 2.0
TARGET_FRAMES_SPEEDUP = 10.0
TARGET_SCOPE_EVENTS_S = 2.0
GPUFL_CLIENT_DIR = os.environ.get("GPUFL_CLIENT_DIR") or "/tmp/gpufl-client"


# ----------------------------------------------------------------- timing


def measure(configs, calls, rounds):
    """configs: {name: fn(n) that runs n calls}, calls: {name: n}.  Returns {name: [us per
    call of each round]}, the configurations interleaved round by round."""
    out = {name: [] for name in configs}
    for name, fn in configs.items():  # warm-up: imports, first-call caches
        fn(max(1, calls[name] // 10))
    for _ in range(rounds):
        for name, fn in configs.items():
            n = calls[name]
            gc.collect()
            gc.disable()
            try:
                t0 = time.perf_counter_ns()
                fn(n)
                t1 = time.perf_counter_ns()
            finally:
                gc.enable()
            out[name].append((t1 - t0) / n / 1000.0)
    return out


def summarise(samples):
    return {name: {"median_us": statistics.median(v), "min_us": min(v), "max_us": max(v),
                   "rounds": len(v)} for name, v in samples.items()}


# --------------------------------------------------------------- children


def child_decorator(quick):
    import gpu_profile
    from gpu_profile import gpu_profile as deco

    def empty():
        pass

    none = deco(report=False, backend="none")(empty)
    nvml = deco(report=False, backend="nvml")(empty)

    def loop(f):
        def run(n):
            for _ in range(n):
                f()
        return run

    # One call first: a backend that cannot open fails here, not in a round.
    r = deco(report=False, backend="nvml", return_profile=True)(empty)()
    assert r.gpu.backend == "nvml" and r.gpu.sample_count >= 1, r.gpu
    rounds = 5 if quick else 15
    calls = {"bare": 200000 if not quick else 20000,
             "none": 2000 if not quick else 200,
             "nvml": 300 if not quick else 50}
    res = measure({"bare": loop(empty), "none": loop(none), "nvml": loop(nvml)}, calls, rounds)
    return {"library": gpu_profile.library_path, "device": r.gpu.name,
            "samples_per_call": r.gpu.sample_count, "figures": summarise(res),
            "calls": calls, "breakdown": breakdown(quick)}


def breakdown(quick):
    """Where a decorated call's time goes: each C call of one region (and
    the Python summary) timed alone, median over many regions.  Uses the
    package's private ctypes declarations: None when they have changed."""
    import ctypes
    import gpu_profile as gp
    try:
        make, err_t = gp._make_options, gp._GpError
        create, start, stop = gp._gp_monitor_create, gp._gp_monitor_start, gp._gp_monitor_stop
        summary, destroy = gp._gp_monitor_summary, gp._gp_monitor_destroy
        from_c = gp.GpuSummary._from_c
    except AttributeError:
        return None
    out = {}
    for backend in ("none", "nvml"):
        o = make(0, 0.2, backend, True, 0.0, False)
        steps = {"create": [], "start": [], "stop": [], "summary (Python)": [], "destroy": []}
        for _ in range(200 if quick else 2000):
            err, mon = err_t(), ctypes.c_void_p()
            t = [time.perf_counter_ns()]
            create(ctypes.byref(o), ctypes.byref(mon), ctypes.byref(err))
            t.append(time.perf_counter_ns())
            start(mon, ctypes.byref(err))
            t.append(time.perf_counter_ns())
            stop(mon, ctypes.byref(err))
            t.append(time.perf_counter_ns())
            from_c(summary(mon, 0).contents)
            t.append(time.perf_counter_ns())
            destroy(mon)
            t.append(time.perf_counter_ns())
            for i, k in enumerate(steps):
                steps[k].append((t[i + 1] - t[i]) / 1000.0)
        out[backend] = {k: statistics.median(v) for k, v in steps.items()}
    return out


class _Nop:
    """A trivial context manager: the baseline of an empty `with`."""

    def __enter__(self):
        return self

    def __exit__(self, exc_type, exc, tb):
        return False


def child_scope(enabled, quick):
    import gpufl as gfl

    logs = tempfile.mkdtemp(prefix="bench-python-gpufl-")
    try:
        ok = gfl.init(app_name="bench", log_path=logs, backend=gfl.BackendKind.None_,
                      profiling_engine=gfl.ProfilingEngine.Monitor, enabled=enabled)
        assert ok == enabled, (ok, gfl.last_error())
        Scope = gfl.Scope
        nop = _Nop()
        one = Scope("x")

        def seed_form(n):
            for _ in range(n):
                with Scope("x"):
                    pass

        def reused(n):
            for _ in range(n):
                with one:
                    pass

        def nop_new(n):
            for _ in range(n):
                with _Nop():
                    pass

        def nop_reused(n):
            for _ in range(n):
                with nop:
                    pass

        def empty_loop(n):
            for _ in range(n):
                pass

        configs = {"with Scope('x')": seed_form, "with one Scope": reused,
                   "with _Nop()": nop_new, "with one _Nop": nop_reused, "empty loop": empty_loop}
        # 5000 scopes = 10000 rows per round: below the 16384-row ring of the
        # thread, and flushed between rounds, so no row is ever dropped.
        calls = 5000
        rounds = 7 if quick else 31
        res = {name: [] for name in configs}
        for fn in configs.values():
            fn(calls)
        for _ in range(rounds):
            for name, fn in configs.items():
                gfl.flush()
                gc.collect()
                gc.disable()
                try:
                    t0 = time.perf_counter_ns()
                    fn(calls)
                    t1 = time.perf_counter_ns()
                finally:
                    gc.enable()
                res[name].append((t1 - t0) / calls / 1000.0)
        session = gfl.session_dir()
        gfl.shutdown()
        dropped = None
        if enabled:
            with open(os.path.join(session, "scope.log"), encoding="utf-8") as f:
                text = f.read()
            dropped = "ring_full" in text
        return {"library": gfl.library_path, "enabled": enabled, "figures": summarise(res),
                "calls": calls, "rows_dropped": dropped}
    finally:
        shutil.rmtree(logs, ignore_errors=True)


# ----------------------------------------------------------------- frames

FR_SID = "bbbbbbbb-1111-4222-8333-444444444444"
FR_T0 = 1760000000000000000


def write_frames_session(base, kernels, scope_rows):
    """A session directory base/<sid>/ in our writer's shape: kernel_event_batch
    and scope_event_batch lines of 1024 rows.  Returns base."""
    sys.path.insert(0, os.path.join(ROOT, "python"))
    from gpufl import _wire

    def rec(type_, **kw):
        d = {"version": 1, "type": type_, "session_id": FR_SID}
        d.update(kw)
        return json.dumps(d, separators=(",", ":")) + "\n"

    job = rec("job_start", pid=7, app="bench", log_path=base, ts_ns=FR_T0, hostname="h",
              devices=[{"id": 0, "name": "Bench GPU", "uuid": "GPU-B"}],
              gpu_static_devices=[], session_kind="trace", profiling_engine="nvidia.trace")
    names = ["kernel_%02d(float*, int)" % i for i in range(50)]
    scopes = ["scope_%02d" % i for i in range(20)]
    dicts = rec("dictionary_update", kernel_dict={str(i + 1): n for i, n in enumerate(names)},
                scope_name_dict={str(i + 1): n for i, n in enumerate(scopes)})
    down = json.dumps({"type": "shutdown", "pid": 7, "app": "bench", "session_id": FR_SID,
                       "ts_ns": FR_T0 + 10 ** 10}) + "\n"
    d = os.path.join(base, FR_SID)
    os.makedirs(d)
    kcols = list(_wire.columns("kernel_event_batch"))
    with open(os.path.join(d, "device.log"), "w") as f:
        f.write(job + dicts)
        seen = set()
        for b0 in range(0, kernels, 1024):
            rows = []
            for i in range(b0, min(kernels, b0 + 1024)):
                k = i % 50 + 1
                first = k not in seen
                seen.add(k)
                v = {"dt_ns": (i - b0) * 2000, "kernel_id": k, "stream_id": i % 4,
                     "duration_ns": 1000 + i % 977, "corr_id": i + 1, "dyn_shared": 0,
                     "num_regs": 32, "has_details": int(first), "external_kind": 0,
                     "external_id": 0, "device_id": 0}
                rows.append([v[c] for c in kcols])
                if first:
                    f.write(rec("kernel_detail", corr_id=i + 1, grid="(%d,1,1)" % k,
                                block="(256,1,1)", static_shared=0, local_bytes=0,
                                const_bytes=0, occupancy=0.5, reg_occupancy=1.0,
                                smem_occupancy=1.0, warp_occupancy=0.5, block_occupancy=1.0,
                                limiting_resource="warps", max_active_blocks=8,
                                local_mem_total_bytes=0, local_mem_per_thread_bytes=0,
                                user_scope="train", stack_trace=None))
            f.write(rec("kernel_event_batch", batch_id=b0 // 1024 + 1,
                        base_time_ns=FR_T0 + b0 * 2000, columns=kcols, rows=rows))
        f.write(down)
    scols = list(_wire.columns("scope_event_batch"))
    with open(os.path.join(d, "scope.log"), "w") as f:
        f.write(job + dicts)
        for b0 in range(0, scope_rows, 1024):
            rows = []
            for i in range(b0, min(scope_rows, b0 + 1024)):
                inst, end = i // 2 + 1, i % 2
                v = {"dt_ns": (i - b0) * 1000, "scope_instance_id": inst,
                     "name_id": inst % 20 + 1, "event_type": end, "depth": 0, "repeat": 0,
                     "warmup": 0, "original_start_ns": FR_T0 + (i - end) * 1000, "tid": 7}
                rows.append([v[c] for c in scols])
            f.write(rec("scope_event_batch", batch_id=b0 // 1024 + 1,
                        base_time_ns=FR_T0 + b0 * 1000, columns=scols, rows=rows, version=3))
        f.write(down)
    with open(os.path.join(d, "system.log"), "w") as f:
        f.write(job + dicts + down)
    return base


def child_frames(which, table, logs):
    """One timed read: the session object and one table, in this process."""
    if which == "gpufl-client":
        sys.path.insert(0, os.path.join(GPUFL_CLIENT_DIR, "python"))
        import warnings
        warnings.simplefilter("ignore")
    from gpufl.analyzer import GpuFlightSession
    import pandas  # noqa: F401  (imported before the clock starts, by both)
    t0 = time.perf_counter()
    if which == "gpufl-client":
        s = GpuFlightSession(logs, session_id=FR_SID)
    else:
        s = GpuFlightSession(logs)
    df = getattr(s, table)
    t1 = time.perf_counter()
    return {"seconds": t1 - t0, "rows": len(df), "columns": len(df.columns),
            "module": sys.modules["gpufl.analyzer"].__file__}


def pandas_python():
    for exe in (sys.executable, "/usr/bin/python3"):
        if subprocess.run([exe, "-c", "import pandas, numpy"], stdout=subprocess.DEVNULL,
                          stderr=subprocess.DEVNULL).returncode == 0:
            return exe
    return None


def measure_frames(args, env):
    exe = pandas_python()
    if exe is None:
        return {"skipped": "no python here has pandas and numpy (Debian: apt-get install "
                           "python3-pandas python3-numpy)"}
    tmp = tempfile.mkdtemp(prefix="bench-python-frames-")
    try:
        kernels = 20000 if args.quick and args.kernels is None else (args.kernels or 200000)
        scope_rows = (100000 if args.quick and args.scope_rows is None
                      else (args.scope_rows or 1000000))
        kdir = write_frames_session(os.path.join(tmp, "k"), kernels, 0)
        sdir = write_frames_session(os.path.join(tmp, "s"), 0, scope_rows)
        client = os.path.isdir(os.path.join(GPUFL_CLIENT_DIR, "python", "gpufl", "analyzer"))
        cases = [("ours", "kernels", kdir), ("ours", "scope_events", sdir)]
        if client:
            cases += [("gpufl-client", "kernels", kdir), ("gpufl-client", "scope_events", sdir)]
        runs = args.runs or (3 if args.quick else 5)
        out = {"python": exe, "kernels": kernels, "scope_rows": scope_rows,
               "gpufl_client": GPUFL_CLIENT_DIR if client else None, "cases": {}}
        for _ in range(runs):  # interleaved run by run
            for which, table, logs in cases:
                cmd = [exe, os.path.abspath(__file__), "--child", "frames", "--which", which,
                       "--table", table, "--logs", logs]
                r = subprocess.run(cmd, env=env, stdout=subprocess.PIPE,
                                   universal_newlines=True)
                if r.returncode != 0:
                    sys.exit("bench_python: the %s %s read failed (exit %d)"
                             % (which, table, r.returncode))
                got = json.loads(r.stdout)
                c = out["cases"].setdefault("%s %s" % (which, table),
                                            {"seconds": [], "rows": got["rows"],
                                             "columns": got["columns"]})
                c["seconds"].append(got["seconds"])
        for c in out["cases"].values():
            c["median_s"] = statistics.median(c["seconds"])
        return out
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


def print_frames(f):
    if "skipped" in f:
        print("(c) analyzer DataFrames: skipped: " + f["skipped"])
        return
    print("(c) GpuFlightSession(dir).<table>, construction included, median of %d runs "
          "(python %s)" % (len(next(iter(f["cases"].values()))["seconds"]), f["python"]))
    c = f["cases"]
    for name, v in c.items():
        print("  %-28s %8.3f s  (%s; %d rows x %d columns)"
              % (name, v["median_s"], ", ".join("%.3f" % x for x in v["seconds"]), v["rows"],
                 v["columns"]))
    ours = c["ours kernels"]["median_s"]
    if "gpufl-client kernels" in c:
        x = c["gpufl-client kernels"]["median_s"] / ours
        print("  kernels: %.1fx GPUFlight's analyzer (target >= %.0fx: %s)"
              % (x, TARGET_FRAMES_SPEEDUP, "met" if x >= TARGET_FRAMES_SPEEDUP else "MISSED"))
        x = c["gpufl-client scope_events"]["median_s"] / c["ours scope_events"]["median_s"]
        print("  scope_events: %.1fx GPUFlight's analyzer" % x)
    else:
        print("  (no GPUFlight checkout at %s: nothing to compare with)" % GPUFL_CLIENT_DIR)
    se = c["ours scope_events"]["median_s"]
    print("  scope_events, %d rows: %.3f s (target < %.0f s: %s)"
          % (c["ours scope_events"]["rows"], se, TARGET_SCOPE_EVENTS_S,
             "met" if se < TARGET_SCOPE_EVENTS_S else "MISSED"))


# ----------------------------------------------------------------- parent


def child_env(build):
    env = dict(os.environ)
    for k in list(env):
        if k.startswith(("GPUFL_", "FAKE_NVML_", "FAKE_SMI_")):
            del env[k]
    fake = os.path.join(build, "tests", "fake-nvml")
    if not os.path.exists(os.path.join(fake, "libnvidia-ml.so.1")):
        sys.exit("bench_python: no fake NVML at %s/libnvidia-ml.so.1: build the tree "
                 "(cmake --build %s) or pass --build DIR" % (fake, build))
    env["LD_LIBRARY_PATH"] = fake + (os.pathsep + env["LD_LIBRARY_PATH"]
                                     if env.get("LD_LIBRARY_PATH") else "")
    env["PYTHONPATH"] = os.path.join(ROOT, "python") + (
        os.pathsep + env["PYTHONPATH"] if env.get("PYTHONPATH") else "")
    return env


def run_child(what, args, env):
    cmd = [sys.executable, os.path.abspath(__file__), "--child", what]
    if args.quick:
        cmd.append("--quick")
    r = subprocess.run(cmd, env=env, stdout=subprocess.PIPE, universal_newlines=True)
    if r.returncode != 0:
        sys.exit("bench_python: the %s measurement failed (exit %d)" % (what, r.returncode))
    return json.loads(r.stdout)


def verdict(value, target):
    return "%.2fx the target (%s)" % (value / target, "met" if value <= target else "MISSED")


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--build", help="the build folder (default: build/ of this tree)")
    ap.add_argument("--quick", action="store_true", help="fewer calls and rounds")
    ap.add_argument("--json", action="store_true", help="print the figures as JSON")
    ap.add_argument("--only", choices=("decorator", "scope", "frames"),
                    help="one measurement only")
    ap.add_argument("--kernels", type=int, help="(c): launches in the kernels session")
    ap.add_argument("--scope-rows", type=int, help="(c): rows in the scope_events session")
    ap.add_argument("--runs", type=int, help="(c): runs of each read (default 5)")
    ap.add_argument("--child", help=argparse.SUPPRESS)
    ap.add_argument("--which", help=argparse.SUPPRESS)
    ap.add_argument("--table", help=argparse.SUPPRESS)
    ap.add_argument("--logs", help=argparse.SUPPRESS)
    args = ap.parse_args()

    if args.child:
        if args.child == "decorator":
            out = child_decorator(args.quick)
        elif args.child == "scope-active":
            out = child_scope(True, args.quick)
        elif args.child == "scope-disabled":
            out = child_scope(False, args.quick)
        elif args.child == "frames":
            out = child_frames(args.which, args.table, args.logs)
        else:
            sys.exit("unknown child %r" % args.child)
        json.dump(out, sys.stdout)
        return

    build = os.path.abspath(args.build or os.path.join(ROOT, "build"))
    env = child_env(build)
    if os.environ.get("GPU_PROFILE_LIBRARY"):
        print("library: $GPU_PROFILE_LIBRARY (respected)", file=sys.stderr)
    elif args.build:
        env["GPU_PROFILE_LIBRARY"] = os.path.join(build, "libgpuprofile.so.0")

    res = {}
    if args.only in (None, "decorator"):
        res["decorator"] = run_child("decorator", args, env)
    if args.only in (None, "scope"):
        res["scope_active"] = run_child("scope-active", args, env)
        res["scope_disabled"] = run_child("scope-disabled", args, env)
    if args.only in (None, "frames"):
        res["frames"] = measure_frames(args, env)
    if args.json:
        json.dump(res, sys.stdout, indent=2)
        print()
        return
    if "decorator" in res:
        print_decorator(res["decorator"])
    if "scope_active" in res:
        print_scope(res)
    if "frames" in res:
        print_frames(res["frames"])


def print_decorator(d):
    f = d["figures"]
    bare = f["bare"]["median_us"]
    print("library %s, python %s" % (d["library"], sys.version.split()[0]))
    print()
    print("(a) @gpu_profile(report=False) around an empty function, per call "
          "(median of %d rounds; min-max)" % f["bare"]["rounds"])
    print("  %-56s %10.3f us  (%.3f-%.3f)" % ("bare call", bare, f["bare"]["min_us"],
                                            f["bare"]["max_us"]))
    for key, label in (("none", 'backend="none"'),
                       ("nvml", 'backend="nvml", fake NVML (1 device, %d samples/call)'
                        % d["samples_per_call"])):
        m = f[key]["median_us"]
        over = m - bare
        print("  %-56s %10.3f us  (%.3f-%.3f)  overhead %.1f us: %s"
              % (label, m, f[key]["min_us"], f[key]["max_us"], over,
                 verdict(over, TARGET_DECORATOR_US)))
    b = d.get("breakdown")
    if b:
        print("  one region's parts (each timed alone, median):")
        for backend, parts in b.items():
            print("    %-6s %s" % (backend, "  ".join("%s %.1f us" % (k, v)
                                                   for k, v in parts.items())))
    print()


def print_scope(res):
    for key, title in (("scope_active", "active session (backend None_, Monitor engine)"),
                       ("scope_disabled", "session disabled (enabled=False)")):
        s = res[key]
        g = s["figures"]
        base = g["with _Nop()"]["median_us"]
        base1 = g["with one _Nop"]["median_us"]
        print("(b) gfl.Scope per iteration, %s; %d per round, median of %d rounds%s"
              % (title, s["calls"], g["empty loop"]["rounds"],
                 "" if s["rows_dropped"] is None else
                 ("; rows dropped!" if s["rows_dropped"] else "; no row dropped")))
        for name in ("empty loop", "with _Nop()", "with one _Nop", "with Scope('x')",
                     "with one Scope"):
            line = "  %-44s %10.3f us  (%.3f-%.3f)" % (name, g[name]["median_us"],
                                                     g[name]["min_us"], g[name]["max_us"])
            if name == "with Scope('x')":
                m = g[name]["median_us"]
                line += "  vs with _Nop(): +%.3f us; whole: %s" % (m - base,
                                                                  verdict(m, TARGET_SCOPE_US))
            elif name == "with one Scope":
                m = g[name]["median_us"]
                line += "  vs one _Nop: +%.3f us; whole: %s" % (m - base1,
                                                               verdict(m, TARGET_SCOPE_US))
            print(line)
        print()


if __name__ == "__main__":
    main()
