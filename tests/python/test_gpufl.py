"""Tests of the gpufl Python package (python/gpufl) against the C library and
the fake NVML.  Run through CTest (test_python_gpufl), which sets
GPU_PROFILE_LIBRARY, PYTHONPATH, GP_PY_LAYOUT_DUMP and the test doubles'
environment.

Each test records into its own temporary directory (the cwd), so a log_path
left at its default lands there.
"""

import ctypes
import io
import json
import os
import shutil
import subprocess
import sys
import tempfile
import unittest
import warnings

HERE = os.path.dirname(os.path.abspath(__file__))
SOURCE_TESTS = os.environ.get("GP_TEST_SOURCE_DIR") or os.path.dirname(HERE)
if not os.environ.get("PYTHONPATH"):
    sys.path.insert(0, os.path.join(os.path.dirname(SOURCE_TESTS), "python"))

import gpufl  # noqa: E402
import gpufl as gfl  # noqa: E402
from gpufl import report as gfl_report  # noqa: E402
from gpufl.analyzer import GpuFlightSession  # noqa: E402
from gpufl.report import ReportError, TextReport, generate_report  # noqa: E402

SEED_FIELDS = [
    ("app_name", "gpufl"), ("log_path", ""), ("backend_url", ""), ("api_key", ""),
    ("api_path", ""), ("remote_upload", False), ("enable_stack_trace", False),
    ("enable_source_collection", True), ("enable_external_correlation", True),
    ("enable_synchronization", True), ("enable_memory_tracking", False),
    ("enable_cuda_graphs_tracking", False), ("system_sample_rate_ms", 0),
    ("kernel_sample_rate_ms", 0), ("continuous_system_sampling", False),
    ("backend", gfl.BackendKind.Auto), ("profiling_engine", gfl.ProfilingEngine.Monitor),
    ("config_file", ""), ("flush_logs_always", False), ("enable_debug_output", False),
    ("enabled", True),
]


def read_log(path):
    with open(path) as f:
        return [json.loads(line) for line in f if line.strip()]


class Base(unittest.TestCase):
    def setUp(self):
        self.old_cwd = os.getcwd()
        self.tmp = tempfile.mkdtemp(prefix="gpufl-py-")
        os.chdir(self.tmp)
        self.old_env = dict(os.environ)
        for k in list(os.environ):
            if k.startswith("GPUFL_"):
                del os.environ[k]
        os.environ["FAKE_NVML_SCENARIO"] = os.path.join(SOURCE_TESTS, "scenarios",
                                                        "nvml_monitor.txt")

    def tearDown(self):
        gfl.shutdown()
        os.environ.clear()
        os.environ.update(self.old_env)
        os.chdir(self.old_cwd)
        shutil.rmtree(self.tmp, ignore_errors=True)

    def start(self, **kw):
        kw.setdefault("app_name", "t")
        kw.setdefault("backend", gfl.BackendKind.None_)
        self.assertTrue(gfl.init(**kw), gfl.last_error())
        return gfl.session_dir()


class LayoutTest(unittest.TestCase):
    def test_layout_matches_c(self):
        exe = os.environ.get("GP_PY_LAYOUT_DUMP")
        if not exe:
            self.skipTest("GP_PY_LAYOUT_DUMP is not set (run through CTest)")
        from gpufl import _report_c
        mirrors = {
            "gpufl_error": gfl._FlError,
            "gpufl_init_options": gfl._FlOptions,
            "gpufl_scope": gfl._FlScope,
            "gpufl_report_options": _report_c._ReportOptions,
        }
        out = subprocess.run([exe], check=True, stdout=subprocess.PIPE,
                             universal_newlines=True).stdout
        checked = 0
        for line in out.splitlines():
            if not line.startswith("gpufl_"):
                continue
            what, value = line.rsplit(" ", 1)
            if what.endswith(" size"):
                self.assertEqual(ctypes.sizeof(mirrors[what[:-5]]), int(value), what)
            else:
                struct, field = what.split(".")
                self.assertEqual(getattr(mirrors[struct], field).offset, int(value), what)
            checked += 1
        self.assertEqual(checked, sum(len(c._fields_) + 1 for c in mirrors.values()))


class EnumTest(unittest.TestCase):
    def test_backend_kind(self):
        B = gfl.BackendKind
        self.assertEqual([(m.name, int(m)) for m in B],
                         [("Auto", 0), ("Nvidia", 1), ("Amd", 2), ("None", 3)])
        self.assertIs(B.None_, B["None"])
        self.assertIs(getattr(B, "None"), B.None_)
        self.assertEqual(B.None_.name, "None")

    def test_profiling_engine(self):
        E = gfl.ProfilingEngine
        self.assertEqual([(m.name, int(m)) for m in E],
                         [("Monitor", 0), ("Trace", 1), ("PcSampling", 2), ("SassMetrics", 3),
                          ("RangeProfiler", 4), ("Deep", 5)])


class OptionsTest(unittest.TestCase):
    """Every keyword reaches its C field (the struct init() hands to C)."""

    def defaults(self, **over):
        d = dict(SEED_FIELDS, cupti_buffer_kib=0, cupti_max_buffers=0)
        d.update(over)
        return d

    def test_signature_is_the_seed(self):
        import inspect
        params = inspect.signature(gfl.init).parameters
        seed = [(n, p.default) for n, p in params.items()
                if p.kind == p.KEYWORD_ONLY][:len(SEED_FIELDS)]
        self.assertEqual(seed, SEED_FIELDS)

    def test_defaults_equal_c_defaults(self):
        o, _ = gfl._make_options(self.defaults())
        c = gfl._FlOptions()
        gfl._fl_options_init(ctypes.byref(c))
        for name, _ in gfl._FlOptions._fields_:
            if name in ("log_fn", "log_user"):
                continue
            a, b = getattr(o, name), getattr(c, name)
            if isinstance(b, bytes) or b is None:
                # C NULL and "" both mean "left at default".
                self.assertIn(a or b"", (b or b"", b"gpufl" if name == "app_name" else b""),
                              name)
            else:
                self.assertEqual(a, b, name)

    def test_every_field_set(self):
        values = dict(app_name="app", log_path="lp", backend_url="http://h", api_key="k",
                      api_path="/p", remote_upload=True, enable_stack_trace=True,
                      enable_source_collection=False, enable_external_correlation=False,
                      enable_synchronization=False, enable_memory_tracking=True,
                      enable_cuda_graphs_tracking=True, system_sample_rate_ms=17,
                      kernel_sample_rate_ms=5, continuous_system_sampling=True,
                      backend=gfl.BackendKind.Nvidia,
                      profiling_engine=gfl.ProfilingEngine.RangeProfiler,
                      config_file="c.json", flush_logs_always=True, enable_debug_output=True,
                      enabled=False, cupti_buffer_kib=64, cupti_max_buffers=3)
        o, keep = gfl._make_options(self.defaults(**values))
        for name, v in values.items():
            got = getattr(o, name)
            want = v.encode() if isinstance(v, str) else v
            self.assertEqual(got, want, name)

    def test_enum_names_as_strings(self):
        o, _ = gfl._make_options(self.defaults(backend="none", profiling_engine="pcsampling"))
        self.assertEqual((o.backend, o.profiling_engine), (3, 2))

    def test_bad_values(self):
        with self.assertRaisesRegex(ValueError, r"profiling_engine='Fast' is not a "
                                    r"ProfilingEngine: use one of Monitor, Trace"):
            gfl.init(profiling_engine="Fast")
        with self.assertRaisesRegex(TypeError, "backend must be a gpufl.BackendKind"):
            gfl.init(backend=1.5)
        with self.assertRaisesRegex(TypeError, "system_sample_rate_ms must be an int"):
            gfl.init(system_sample_rate_ms="50")
        with self.assertRaisesRegex(TypeError, "system_sample_rate_ms must be an int"):
            gfl.init(system_sample_rate_ms=True)
        with self.assertRaisesRegex(TypeError, "app_name must be a str"):
            gfl.init(app_name=3)
        with self.assertRaisesRegex(TypeError, "enabled must be a bool"):
            gfl.init(enabled="no")
        with self.assertRaisesRegex(ValueError, "out of range"):
            gfl.init(system_sample_rate_ms=2**40)
        self.assertFalse(gfl.is_active())

    def test_unknown_keyword(self):
        with self.assertRaisesRegex(TypeError,
                                    r"init\(\) got an unexpected keyword argument 'bogus'"):
            gfl.init(bogus=1)


class MigrationTest(Base):
    def test_removed_keywords_name_the_replacement(self):
        cases = {
            "enable_profiling": r"profiling_engine=gpufl\.ProfilingEngine\.Monitor.*"
                                r"ProfilingEngine\.PcSampling",
            "enable_perf_scope": r"profiling_engine=gpufl\.ProfilingEngine\.RangeProfiler",
            "remote_config": r"backend_url=",
        }
        for key, want in cases.items():
            with self.subTest(key=key):
                with self.assertRaisesRegex(TypeError, r"unexpected keyword argument '%s': "
                                            r"it was removed in v1\.0; use %s" % (key, want)):
                    gfl.init(**{key: True})
                self.assertFalse(gfl.is_active())

    def test_sampling_auto_start_is_deprecated_alias(self):
        with warnings.catch_warnings(record=True) as w:
            warnings.simplefilter("always")
            d = self.start(sampling_auto_start=True, system_sample_rate_ms=5)
        self.assertEqual([x.category for x in w], [DeprecationWarning])
        self.assertIn("continuous_system_sampling", str(w[0].message))
        self.assertEqual(w[0].filename, __file__)
        # continuous sampling: host metrics arrive without any scope.
        import time
        time.sleep(0.1)
        gfl.shutdown()
        rows = [r for r in read_log(os.path.join(d, "system.log"))
                if r["type"] == "host_metric_batch"]
        self.assertTrue(rows)

    def test_sampling_auto_start_conflict(self):
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            with self.assertRaisesRegex(TypeError, "give only continuous_system_sampling"):
                gfl.init(continuous_system_sampling=True, sampling_auto_start=False)

    def test_remote_upload_warns(self):
        with warnings.catch_warnings(record=True) as w:
            warnings.simplefilter("always")
            lines = []
            self.start(remote_upload=True)
        self.assertEqual([x.category for x in w], [DeprecationWarning])
        del lines


class SessionTest(Base):
    def test_init_writes_session_with_options(self):
        d = self.start(app_name="my_app", system_sample_rate_ms=7,
                       enable_memory_tracking=True, profiling_engine="Monitor")
        self.assertTrue(gfl.is_active())
        self.assertEqual(os.path.dirname(d), "my_app")  # log_path defaults to app_name
        self.assertEqual(os.path.basename(d), gfl.session_id())
        gfl.system_start("phase")
        gfl.system_stop("phase")
        gfl.shutdown()
        self.assertFalse(gfl.is_active())
        self.assertIsNone(gfl.session_dir())
        self.assertEqual(gfl.last_session_dir(), os.path.abspath(d))
        dev = read_log(os.path.join(d, "device.log"))
        self.assertEqual(dev[0]["type"], "job_start")
        self.assertEqual(dev[0]["app"], "my_app")
        caps = {c["feature"]: c for c in dev[1]["capabilities"]}
        self.assertEqual(caps["host_metrics"]["message"], "/proc every 7 ms")
        self.assertTrue(caps["memory_tracking"]["requested"])
        self.assertEqual(caps["device_metrics"]["reason_code"], "backend_none")
        sysl = read_log(os.path.join(d, "system.log"))
        self.assertEqual([(r["type"], r["name"]) for r in sysl if "name" in r],
                         [("system_start", "phase"), ("system_stop", "phase")])
        self.assertEqual(sysl[-1]["type"], "shutdown")

    def test_nvidia_backend_uses_fake_nvml(self):
        d = self.start(backend=gfl.BackendKind.Nvidia, system_sample_rate_ms=5,
                       continuous_system_sampling=True)
        import time
        time.sleep(0.1)
        gfl.shutdown()
        dev = read_log(os.path.join(d, "device.log"))
        self.assertEqual(dev[0]["devices"][0]["name"], "NVIDIA H100 80GB HBM3")
        # device metric batches are written to the system channel
        sysl = read_log(os.path.join(d, "system.log"))
        self.assertTrue([r for r in sysl if r["type"] == "device_metric_batch"])

    def test_log_path_and_debug_output(self):
        err = io.StringIO()
        r, w = os.pipe()
        saved = os.dup(2)
        os.dup2(w, 2)
        try:
            self.start(log_path="logs/run.log", enable_debug_output=True)
            gfl.shutdown()
        finally:
            os.dup2(saved, 2)
            os.close(saved)
            os.close(w)
        with os.fdopen(r) as f:
            err.write(f.read())
        self.assertTrue(os.path.isdir("logs/run"))  # ".log" dropped, per the spec
        self.assertIn("[gpufl]", err.getvalue())

    def test_env_and_config_file(self):
        with open("cfg.json", "w") as f:
            json.dump({"app_name": "from_config", "system_sample_rate_ms": 9}, f)
        os.environ["GPUFL_CONFIG_FILE"] = "cfg.json"
        d = gfl.init(backend=gfl.BackendKind.None_) and gfl.session_dir()
        self.assertTrue(d)
        gfl.shutdown()
        dev = read_log(os.path.join(d, "device.log"))
        self.assertEqual(dev[0]["app"], "from_config")

    def test_c_refusal_is_a_warning_and_false(self):
        os.environ["GPUFL_PROFILING_ENGINE"] = "Turbo"
        with warnings.catch_warnings(record=True) as w:
            warnings.simplefilter("always")
            self.assertFalse(gfl.init(backend=gfl.BackendKind.None_))
        self.assertEqual([x.category for x in w], [gfl.GpuflWarning])
        self.assertIn("GPUFL_PROFILING_ENGINE", str(w[0].message))
        status, msg = gfl.last_error()
        self.assertIn("GPUFL_PROFILING_ENGINE", msg)
        self.assertFalse(gfl.is_active())

    def test_amd_not_in_this_build(self):
        with warnings.catch_warnings(record=True) as w:
            warnings.simplefilter("always")
            self.assertFalse(gfl.init(backend=gfl.BackendKind.Amd))
        self.assertEqual(len(w), 1)
        self.assertIn("not supported", gfl.last_error()[0])

    def test_second_init_while_active(self):
        self.start()
        with warnings.catch_warnings(record=True) as w:
            warnings.simplefilter("always")
            self.assertFalse(gfl.init(backend=gfl.BackendKind.None_))
        self.assertEqual(len(w), 1)
        self.assertTrue(gfl.is_active())

    def test_calls_before_init_are_noops(self):
        with gfl.Scope("nothing"):
            pass
        gfl.system_start("x")
        gfl.system_stop("x")
        gfl.flush()
        gfl.shutdown()
        self.assertEqual(os.listdir("."), [])


class KillSwitchTest(Base):
    def check_off(self):
        with gfl.Scope("s"):
            pass

        @gfl.Scope("f")
        def f(x):
            return x + 1

        self.assertEqual(f(1), 2)
        gfl.system_start("p")
        gfl.system_stop("p")
        gfl.flush()
        gfl.shutdown()
        self.assertFalse(gfl.is_active())
        self.assertEqual(os.listdir("."), [])  # no log directory, nothing

    def test_enabled_false(self):
        with warnings.catch_warnings():
            warnings.simplefilter("error")  # no warning for the kill switch
            self.assertIs(gfl.init(app_name="my_app", enabled=False), False)
        self.check_off()

    def test_env_disabled_wins(self):
        for v in ("1", "true", "YES", "On"):
            with self.subTest(v=v):
                os.environ["GPUFL_DISABLED"] = v
                self.assertIs(gfl.init(app_name="my_app", enabled=True), False)
                self.assertIn("GPUFL_DISABLED", gfl.last_error()[1])
                self.check_off()

    def test_init_after_disabled_starts(self):
        self.assertFalse(gfl.init(enabled=False))
        self.start()
        self.assertTrue(gfl.is_active())


class ScopeTest(Base):
    def scope_rows(self, d):
        names = {}
        rows = []
        for r in read_log(os.path.join(d, "scope.log")):
            if r["type"] == "dictionary_update":
                for k, v in (r.get("scope_name_dict") or {}).items():
                    names[int(k)] = v
            elif r["type"] == "scope_event_batch":
                cols = r["columns"]
                for row in r["rows"]:
                    rows.append(dict(zip(cols, row)))
        return names, rows

    def test_context_manager_decorator_nesting_threads(self):
        import threading
        d = self.start()
        s = gfl.Scope("shared")
        with gfl.Scope("outer") as o:
            self.assertIsInstance(o, gfl.Scope)
            with s:
                with s:  # re-entered on the same thread
                    pass

        @gfl.Scope("decorated")
        def work(a, b=2):
            """doc"""
            return a * b

        self.assertEqual(work(3), 6)
        self.assertEqual(work.__name__, "work")
        self.assertEqual(work.__doc__, "doc")

        def thread_body():
            for _ in range(50):
                with s:
                    pass

        ts = [threading.Thread(target=thread_body) for _ in range(4)]
        for t in ts:
            t.start()
        for t in ts:
            t.join()
        gfl.shutdown()
        self.assertEqual(s._open, {})
        names, rows = self.scope_rows(d)
        by_name = {}
        for r in rows:
            n = names.get(r.get("name_id"))
            by_name.setdefault(n, []).append(r)
        self.assertEqual(sorted(by_name), ["decorated", "outer", "shared"])
        counts = {n: len({r["scope_instance_id"] for r in v}) for n, v in by_name.items()}
        # every instance has its begin (0) and its end (1)
        self.assertEqual(sorted(r["event_type"] for r in rows), [0] * 204 + [1] * 204)
        self.assertEqual(counts, {"outer": 1, "shared": 202, "decorated": 1})

    def test_exception_propagates_and_scope_closes(self):
        d = self.start()

        @gfl.Scope("boom")
        def boom():
            raise KeyError("k")

        with self.assertRaises(KeyError):
            boom()
        with self.assertRaises(ValueError):
            with gfl.Scope("with_boom"):
                raise ValueError("v")
        gfl.shutdown()
        text = generate_report(d)
        for name in ("boom", "with_boom"):
            self.assertRegex(text, r"\n  scope +1 .* %s\n" % name)
        self.assertNotIn("open at end", text)

    def test_bad_name(self):
        with self.assertRaisesRegex(TypeError, "scope or phase name must be a str"):
            gfl.Scope(3)
        with self.assertRaisesRegex(TypeError, "scope or phase name must be a str"):
            gfl.system_start(None)


class ReportTest(Base):
    def record(self, app="my_app", log_path=""):
        d = self.start(app_name=app, log_path=log_path)
        for _ in range(3):
            with gfl.Scope("step"):
                pass
        gfl.shutdown()
        return d

    def test_generate_report_matches_cli(self):
        d = self.record()
        text = generate_report(".", log_prefix="my_app", top_n=10)
        self.assertIn(os.path.basename(d), text)
        cli = os.environ.get("GP_TEST_CLI")
        if cli:
            out = subprocess.run([cli, "report", d], stdout=subprocess.PIPE,
                                 universal_newlines=True).stdout
            self.assertEqual(text, out)

    def test_output_path_and_this_process(self):
        d = self.record()
        text = generate_report(None, output_path="r.txt")
        with open("r.txt") as f:
            self.assertEqual(f.read(), text)
        self.assertEqual(text, generate_report(d))
        self.assertEqual(text, generate_report("my_app"))

    def test_log_prefix_in_shared_log_dir(self):
        a = self.record("app_a", "logs")
        b = self.record("app_b", "logs")
        self.assertIn(os.path.basename(a), generate_report("logs", log_prefix="app_a"))
        self.assertIn(os.path.basename(b), generate_report("logs", log_prefix="app_b"))
        with self.assertRaises(ReportError) as cm:
            generate_report("logs", log_prefix="app_c")
        self.assertIn("app_c", cm.exception.message)
        self.assertEqual(cm.exception.status, gfl._fl_strerror(6).decode())

    def test_missing_dir(self):
        with self.assertRaises(ReportError) as cm:
            generate_report("no-such-dir")
        self.assertIn("no-such-dir", str(cm.exception))
        with self.assertRaisesRegex(ValueError, "top_n must be at least 1"):
            generate_report(".", top_n=0)

    def test_analyzer_and_text_report(self):
        d = self.record()
        s = GpuFlightSession(".", log_prefix="my_app", session_id=None)
        self.assertEqual(s.session_id, os.path.basename(d))
        self.assertEqual(s.app, "my_app")
        self.assertEqual(s.report["schema"], "gpu-profile.report")
        out = io.StringIO()
        s.print_summary(file=out)
        s.inspect_scopes(file=out)
        self.assertIn("step", out.getvalue())
        full = generate_report(d)
        self.assertTrue(full.startswith(out.getvalue().split("\n\n")[0]))
        out = io.StringIO()
        s.inspect_stalls(file=out)
        self.assertEqual(out.getvalue(), "no PC samples in this session: the PcSampling or "
                         "Deep engine records them (this session's engine: nvidia.monitor)\n")
        out = io.StringIO()
        s.inspect_perf_metrics(file=out)
        self.assertIn("RangeProfiler engine", out.getvalue())
        # Pinned: a newer session of the same app does not change it.
        self.record()
        r = TextReport(s, top_n=10)
        self.assertEqual(r.generate(), full)
        r.save("rep.txt")
        with open("rep.txt") as f:
            self.assertEqual(f.read(), full)
        with self.assertRaisesRegex(NotImplementedError, "gpu-profile export"):
            s.kernels
        with self.assertRaises(AttributeError):
            s.nothing_like_this
        self.assertIs(gfl_report.generate_report, generate_report)


if __name__ == "__main__":
    unittest.main()
