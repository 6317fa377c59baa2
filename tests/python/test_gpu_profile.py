"""Tests of the gpu_profile Python package (python/gpu_profile) against the
fake NVML (docs/test-doubles.md).  Standard library only.

CTest runs it with GP_TEST_ENV (fake NVML first on LD_LIBRARY_PATH, fake
nvidia-smi first on PATH), PYTHONPATH=<source>/python,
GPU_PROFILE_LIBRARY=<the built libgpuprofile.so.0> and GP_PY_LAYOUT_DUMP
(tests/python/py_layout_dump.c).  By hand, from the build folder:

    GP_TEST_SOURCE_DIR=../tests LD_LIBRARY_PATH=tests/fake-nvml \\
    GPU_PROFILE_LIBRARY=$PWD/libgpuprofile.so.0 PYTHONPATH=../python \\
    python3 -m unittest -v ../tests/python/test_gpu_profile.py
"""

import contextlib
import ctypes
import dataclasses
import io
import os
import subprocess
import sys
import unittest

HERE = os.path.dirname(os.path.abspath(__file__))
SOURCE_TESTS = os.environ.get("GP_TEST_SOURCE_DIR") or os.path.dirname(HERE)
if not os.environ.get("PYTHONPATH"):
    sys.path.insert(0, os.path.join(os.path.dirname(SOURCE_TESTS), "python"))

import gpu_profile as gp  # noqa: E402
from gpu_profile import (  # noqa: E402
    GpuBackendError,
    GpuMonitor,
    GpuSample,
    GpuSummary,
    ProfiledResult,
    gpu_profile,
)

FAST = 0.01  # sampling interval for the tests (seconds)


def scenario(name):
    return os.path.join(SOURCE_TESTS, "scenarios", name)


@contextlib.contextmanager
def env(**values):
    """Sets environment variables (None: unset) for the block.  The fake NVML
    re-reads FAKE_NVML_SCENARIO at each first nvmlInit."""
    old = {k: os.environ.get(k) for k in values}
    try:
        for k, v in values.items():
            if v is None:
                os.environ.pop(k, None)
            else:
                os.environ[k] = v
        yield
    finally:
        for k, v in old.items():
            if v is None:
                os.environ.pop(k, None)
            else:
                os.environ[k] = v


def thread_count():
    return len(os.listdir("/proc/self/task"))


def settled_thread_count(expected, timeout_s=5.0):
    """The thread count once it reaches expected (or the deadline passes).
    A joined thread has finished, but the kernel may list its task in
    /proc/self/task for a moment after pthread_join returns (the join wakes
    on the tid futex, cleared before the task is released), more so on a
    loaded machine."""
    import time

    deadline = time.monotonic() + timeout_s
    while thread_count() != expected and time.monotonic() < deadline:
        time.sleep(0.01)
    return thread_count()


class LayoutTest(unittest.TestCase):
    """The ctypes mirrors match the C header, field by field."""

    def test_layout_matches_c(self):
        exe = os.environ.get("GP_PY_LAYOUT_DUMP")
        if not exe:
            self.skipTest("GP_PY_LAYOUT_DUMP is not set (run through CTest)")
        out = subprocess.run([exe], check=True, stdout=subprocess.PIPE,
                             universal_newlines=True).stdout
        mirrors = {
            "gp_error": gp._GpError,
            "gp_device_sample": gp._GpDeviceSample,
            "gp_sample": gp._GpSample,
            "gp_summary": gp._GpSummary,
            "gp_mig_info": gp._GpMigInfo,
            "gp_device_info": gp._GpDeviceInfo,
            "gp_options": gp._GpOptions,
            "gp_run_stats": gp._repeats._GpRunStats,
        }
        checked = 0
        for line in out.splitlines():
            if line.startswith("gpufl_"):
                continue  # test_gpufl.py checks those
            what, value = line.rsplit(" ", 1)
            value = int(value)
            if what.endswith(" size"):
                cls = mirrors[what[:-5]]
                self.assertEqual(ctypes.sizeof(cls), value, what)
            else:
                struct, field = what.split(".")
                cls = mirrors[struct]
                self.assertEqual(getattr(cls, field).offset, value, what)
            checked += 1
        self.assertGreater(checked, 70)
        # Every mirrored field was compared.
        n_fields = sum(len(c._fields_) + 1 for c in mirrors.values())
        self.assertEqual(checked, n_fields)


class LoadTest(unittest.TestCase):
    def test_library_found(self):
        self.assertTrue(os.path.basename(gp.library_path).startswith("libgpuprofile.so"))
        self.assertEqual(gp.c_library_version, "0.1.0")

    def test_missing_library_is_import_error(self):
        code = ("import gpu_profile")
        e = dict(os.environ, GPU_PROFILE_LIBRARY="/nonexistent/libgpuprofile.so.0",
                 PYTHONPATH=os.path.dirname(os.path.dirname(gp.__file__)))
        r = subprocess.run([sys.executable, "-c", code], env=e, stdout=subprocess.PIPE,
                           stderr=subprocess.PIPE, universal_newlines=True)
        self.assertNotEqual(r.returncode, 0)
        self.assertIn("ImportError", r.stderr)
        self.assertIn("/nonexistent/libgpuprofile.so.0: no such file", r.stderr)
        self.assertIn("GPU_PROFILE_LIBRARY", r.stderr)

    def test_search_order(self):
        # docs/python.md: the package folder, _install.py (absent in the
        # source tree), the source tree's build/, the standard folders
        # (/usr/local first), the system loader last.
        from gpu_profile import _native
        saved = os.environ.pop("GPU_PROFILE_LIBRARY", None)
        try:
            paths, explicit = _native.candidates()
        finally:
            if saved is not None:
                os.environ["GPU_PROFILE_LIBRARY"] = saved
        here = os.path.dirname(os.path.abspath(_native.__file__))
        self.assertFalse(explicit)
        self.assertEqual(paths[0], os.path.join(here, "libgpuprofile.so.0"))
        self.assertEqual(paths[1], os.path.normpath(
            os.path.join(here, "..", "..", "build", "libgpuprofile.so.0")))
        self.assertEqual(paths[2], "/usr/local/lib/libgpuprofile.so.0")
        self.assertIn("/usr/lib/libgpuprofile.so.0", paths)
        self.assertEqual(paths[-1], "libgpuprofile.so.0")
        self.assertEqual(len(paths), len(set(paths)))


class DefaultsTest(unittest.TestCase):
    def test_decorator_defaults(self):
        import inspect
        sig = inspect.signature(gpu_profile)
        want = {"device": 0, "interval_s": 0.2, "backend": "auto", "strict": True,
                "sync_fn": None, "warmup_s": 0.0, "report": True, "return_profile": False}
        for name, default in want.items():
            p = sig.parameters[name]
            self.assertEqual(p.kind, p.KEYWORD_ONLY, name)
            self.assertEqual(p.default, default, name)

    def test_monitor_defaults(self):
        m = GpuMonitor()
        self.assertEqual((m.device, m.interval_s, m.backend, m.strict, m.sync_fn,
                          m.warmup_s, m.keep_samples),
                         (0, 0.2, "auto", True, None, 0.0, False))
        self.assertIsNone(m.summary)
        self.assertEqual(m.samples, [])

    def test_bad_arguments(self):
        with self.assertRaises(ValueError):
            gpu_profile(backend="cuda")
        with self.assertRaises(TypeError):
            gpu_profile(report="yes")
        with self.assertRaises(TypeError):
            GpuMonitor(device="0")


class DecoratorTest(unittest.TestCase):
    def setUp(self):
        self._env = env(FAKE_NVML_SCENARIO=scenario("nvml_monitor.txt"))
        self._env.__enter__()

    def tearDown(self):
        self._env.__exit__(None, None, None)

    def test_bare_form(self):
        @gpu_profile
        def add(a, b=1):
            """adds"""
            return a + b

        self.assertEqual(add.__name__, "add")
        self.assertEqual(add.__doc__, "adds")
        out = io.StringIO()
        with contextlib.redirect_stdout(out):
            self.assertEqual(add(2, b=3), 5)
        self.assertIn("[GPU 0] NVIDIA H100 80GB HBM3", out.getvalue())

    def test_called_form_and_return_profile(self):
        @gpu_profile(interval_s=FAST, report=False, return_profile=True)
        def work():
            return "done"

        r = work()
        self.assertIsInstance(r, ProfiledResult)
        self.assertEqual(r.value, "done")
        s = r.gpu
        self.assertIsInstance(s, GpuSummary)
        self.assertEqual(s.device, 0)
        self.assertEqual(s.backend, "nvml")
        self.assertEqual(s.name, "NVIDIA H100 80GB HBM3")
        self.assertEqual(s.uuid, "GPU-12345678-0000-0000-0000-000000000000")
        self.assertEqual(s.interval_s, FAST)
        self.assertGreaterEqual(s.sample_count, 2)  # first at start, last at stop
        self.assertEqual(s.util_gpu_max, 50)  # device 0 of nvml_monitor.txt
        self.assertEqual(s.util_gpu_mean, 50.0)
        self.assertEqual(s.util_gpu_p95, 50)
        self.assertEqual(s.util_mem_max, 17)
        self.assertEqual(s.power_max_w, 100.0)
        self.assertEqual(s.temp_max_c, 35)
        self.assertEqual(s.mem_total_bytes, 80 << 30)
        self.assertIn(s.energy_source, ("counter", "power_integral"))
        self.assertGreaterEqual(s.energy_j, 0.0)
        self.assertEqual(s.throttle_reasons, ("gpu_idle",))
        self.assertIsNone(s.device_error)
        self.assertGreater(s.duration_s, 0)
        self.assertTrue(s.sparkline)

    def test_report_modes(self):
        def run(report):
            @gpu_profile(interval_s=FAST, report=report)
            def work():
                return 1
            out, err = io.StringIO(), io.StringIO()
            with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
                self.assertEqual(work(), 1)
            return out.getvalue(), err.getvalue()

        # report=True prints, to stdout, as the original package does
        # (issue 33); the command reports to stderr (its stdout is the
        # program's).
        out, err = run(True)
        self.assertEqual(err, "")
        self.assertTrue(out.startswith("[GPU 0] NVIDIA H100 80GB HBM3  GPU-"), out)
        self.assertIn("util.gpu: mean 50.0% | p50 50.0% | p95 50.0% | max 50.0%", out)

        out, err = run(False)
        self.assertEqual((out, err), ("", ""))

        got = []
        out, err = run(got.append)
        self.assertEqual((out, err), ("", ""))
        self.assertEqual(len(got), 1)
        self.assertIsInstance(got[0], GpuSummary)
        self.assertEqual(got[0].format(), got[0].format(ascii=False))

    def test_format_is_the_c_rendering(self):
        got = []

        @gpu_profile(interval_s=FAST, report=got.append)
        def work():
            pass

        work()
        s = got[0]
        text = s.format()
        self.assertIn("NVIDIA H100 80GB HBM3", text)
        self.assertTrue(text.endswith("\n"))
        self.assertEqual(str(s), text)
        self.assertTrue(s.format(ascii=True).isascii())
        self.assertIn('"schema":"gpu-profile.summary"', s.to_json().replace(" ", ""))

    def test_sync_fn_before_and_after(self):
        calls = []

        @gpu_profile(interval_s=FAST, report=False, sync_fn=lambda: calls.append("sync"))
        def work():
            calls.append("work")

        work()
        self.assertEqual(calls, ["sync", "work", "sync"])

    def test_exception_propagates_and_sampler_stops(self):
        class Boom(Exception):
            pass

        before = thread_count()
        seen = []
        calls = []

        @gpu_profile(interval_s=FAST, report=seen.append, sync_fn=lambda: calls.append(1))
        def work():
            # the sampling thread, and the NVML backend's threads for its
            # calls (bounded in time): one for NVML, one per GPU of the
            # scenario (two: each is asked for its MIG instances when the
            # devices are counted), one that reads a round's devices
            self.assertEqual(thread_count(), before + 5)
            raise Boom("inside")

        with self.assertRaises(Boom) as cm:
            work()
        self.assertEqual(str(cm.exception), "inside")
        # the sampler is joined; the monitor stays idle in the function's
        # pool with its backend open, and so its four NVML threads
        self.assertEqual(settled_thread_count(before + 4), before + 4)
        self.assertEqual(seen, [])  # no report for a call that raised
        self.assertEqual(len(calls), 2)

    def test_none_backend(self):
        @gpu_profile(backend="none", report=False, return_profile=True)
        def work():
            return 3

        r = work()
        self.assertEqual(r.value, 3)
        self.assertEqual(r.gpu.backend, "none")
        self.assertEqual(r.gpu.sample_count, 0)
        self.assertIsNone(r.gpu.util_gpu_mean)
        self.assertIsNone(r.gpu.power_mean_w)


class BackendKeptOpenTest(unittest.TestCase):
    """A decorated function opens its backend once and re-arms its stopped
    monitor for each call (gp_monitor_rearm), keeping at most a few idle."""

    def setUp(self):
        self._env = env(FAKE_NVML_SCENARIO=scenario("nvml_monitor.txt"))
        self._env.__enter__()

    def tearDown(self):
        self._env.__exit__(None, None, None)

    def test_nvml_initialised_once_for_many_calls(self):
        # The fake NVML writes its call counts at process exit.
        import tempfile
        with tempfile.TemporaryDirectory() as tmp:
            stats = os.path.join(tmp, "stats.txt")
            code = ("from gpu_profile import gpu_profile\n"
                    "@gpu_profile(interval_s=0.01, backend='nvml', report=False, "
                    "return_profile=True)\n"
                    "def f(x):\n"
                    "    return x\n"
                    "counts = [f(i).gpu.sample_count for i in range(5)]\n"
                    "assert [f(i).value for i in range(3)] == [0, 1, 2]\n"
                    "assert all(2 <= c <= 3 for c in counts), counts\n")
            e = dict(os.environ, FAKE_NVML_STATS=stats)
            subprocess.run([sys.executable, "-c", code], check=True, env=e)
            with open(stats) as f:
                calls = dict(line.rsplit(" ", 1) for line in f if not line.startswith(("#",
                                                                                      "device")))
        self.assertEqual(int(calls["nvmlInit_v2"]), 1)
        self.assertEqual(int(calls["nvmlShutdown"]), 1)  # closed when f was collected

    def test_regions_do_not_accumulate(self):
        import time

        @gpu_profile(interval_s=FAST, report=False, return_profile=True)
        def work(sleep_s):
            time.sleep(sleep_s)

        long = work(0.1).gpu
        short = work(0).gpu
        self.assertGreaterEqual(long.sample_count, 5)
        self.assertLessEqual(short.sample_count, 3)
        self.assertLess(short.duration_s, long.duration_s)

    def test_concurrent_calls_and_exceptions(self):
        import threading
        results = []

        @gpu_profile(interval_s=FAST, report=False, return_profile=True)
        def work(i):
            if i % 3 == 0:
                raise ValueError(i)
            return i

        def body(k):
            for j in range(10):
                i = k * 10 + j
                try:
                    r = work(i)
                    results.append((i, r.value, r.gpu.name))
                except ValueError as e:
                    results.append((i, e.args[0], "raised"))

        before = thread_count()
        ts = [threading.Thread(target=body, args=(k,)) for k in range(4)]
        for t in ts:
            t.start()
        for t in ts:
            t.join()
        pool = work.__closure__ and [c.cell_contents for c in work.__closure__
                                     if type(c.cell_contents).__name__ == "_MonitorPool"]
        self.assertEqual(len(pool), 1)
        self.assertLessEqual(len(pool[0].idle), gp._MonitorPool.MAX_IDLE)
        self.assertGreaterEqual(len(pool[0].idle), 1)
        del pool
        # No sampler left running once the function (and its idle monitors,
        # whose backends keep their NVML call threads) is collected.  A
        # joined Python thread may still be leaving the kernel's task list
        # for a moment, so wait for it.
        import gc
        import time
        del work, body
        gc.collect()
        self.assertEqual(settled_thread_count(before), before)
        self.assertEqual(sorted(r[0] for r in results), list(range(40)))
        for i, v, name in results:
            self.assertEqual(v, i)
            self.assertEqual(name, "raised" if i % 3 == 0 else "NVIDIA H100 80GB HBM3")

    def test_forked_child_opens_its_own(self):
        @gpu_profile(interval_s=FAST, report=False, return_profile=True)
        def work():
            return os.getpid()

        self.assertEqual(work().value, os.getpid())  # the parent's monitor is now idle
        r, w = os.pipe()
        pid = os.fork()
        if pid == 0:  # child: must not reuse the parent's open backend
            code = 1
            try:
                pool = [c.cell_contents for c in work.__closure__
                        if type(c.cell_contents).__name__ == "_MonitorPool"][0]
                parent_idle = list(pool.idle)
                res = work()
                ok = (res.value == os.getpid() and res.gpu.name == "NVIDIA H100 80GB HBM3"
                      and all(m.value != n.value for m in pool.idle for n in parent_idle))
                code = 0 if ok else 2
            finally:
                os.write(w, bytes([code]))
                os._exit(0)
        os.close(w)
        got = os.read(r, 1)
        os.close(r)
        os.waitpid(pid, 0)
        self.assertEqual(got, b"\x00")
        self.assertEqual(work().gpu.name, "NVIDIA H100 80GB HBM3")  # the parent's still works

    def test_strict_failure_keeps_nothing_open(self):
        @gpu_profile(backend="nvml", report=False)
        def work():
            pass

        with env(FAKE_NVML_SCENARIO=scenario("nvml_init_error.txt")):
            for _ in range(2):  # each call tries again, and fails again
                with self.assertRaises(GpuBackendError):
                    work()


class SmiTest(unittest.TestCase):
    """The nvidia-smi backend, through the fake nvidia-smi (first on PATH in
    CTest's environment) replaying a real capture."""

    CAPTURE = "linux-x86_64__nvidia-h100-80gb-hbm3__590.48.01.txt"

    def capture(self):
        return os.path.join(SOURCE_TESTS, "fixtures", "nvidia-smi", self.CAPTURE)

    def test_forced_smi(self):
        if not os.environ.get("GP_TEST_FAKE_SMI"):
            self.skipTest("GP_TEST_FAKE_SMI is not set (run through CTest)")
        with env(FAKE_SMI_CAPTURES=self.capture()):
            @gpu_profile(backend="smi", interval_s=0.05, report=False, return_profile=True)
            def work():
                import time
                time.sleep(0.2)
                return "ok"

            r = work()
        self.assertEqual(r.value, "ok")
        self.assertEqual(r.gpu.backend, "smi")
        self.assertEqual(r.gpu.name, "NVIDIA H100 80GB HBM3")
        self.assertGreaterEqual(r.gpu.sample_count, 1)
        self.assertIsNotNone(r.gpu.util_gpu_mean)

    def test_auto_falls_back_to_smi(self):
        if not os.environ.get("GP_TEST_FAKE_SMI"):
            self.skipTest("GP_TEST_FAKE_SMI is not set (run through CTest)")
        with env(FAKE_NVML_SCENARIO=scenario("nvml_init_error.txt"),
                 FAKE_SMI_CAPTURES=self.capture()):
            with GpuMonitor(interval_s=0.05) as mon:
                import time
                time.sleep(0.2)
        self.assertEqual(mon.summary.backend, "smi")
        self.assertEqual(mon.summary.name, "NVIDIA H100 80GB HBM3")

    def test_smi_failure_is_backend_error(self):
        with env(FAKE_SMI_CAPTURES=None):
            with self.assertRaises(GpuBackendError) as cm:
                with GpuMonitor(backend="smi", interval_s=0.05):
                    self.fail("the block must not run")
        self.assertTrue(str(cm.exception).startswith("smi: "), str(cm.exception))


class AmdTest(unittest.TestCase):
    """backend="amd" over the fake ROCm SMI (tests/fakes/fake_rocm_smi.c)."""

    def setUp(self):
        self.fake = os.environ.get("GP_TEST_FAKE_ROCM_SMI")
        if not self.fake:
            self.skipTest("GP_TEST_FAKE_ROCM_SMI is not set (no rocm_smi.h at configure time)")

    def test_amd_backend(self):
        with env(FAKE_ROCM_SMI_SCENARIO="two"):
            with GpuMonitor(device="all", backend="amd", interval_s=FAST,
                            rocm_smi_library=self.fake) as mon:
                pass
        s0, s1 = mon.summaries
        self.assertEqual(s0.backend, "amd")
        self.assertEqual(s0.name, "AMD Instinct MI210")
        self.assertEqual(s0.uuid, "1234abcd5678ef90")
        self.assertEqual(s0.util_gpu_max, 37)
        self.assertEqual(s0.power_max_w, 123.456)
        self.assertEqual(s0.temp_max_c, 45)
        self.assertEqual(s1.name, "AMD Radeon PRO W6800")
        self.assertEqual(s1.util_gpu_max, 80)
        self.assertIsNone(s1.power_max_w)  # not reported: None, never 0
        self.assertIsNone(s1.temp_max_c)
        self.assertIsNone(s1.util_mem_mean)

    def test_amd_without_amd_gpu(self):
        with env(FAKE_ROCM_SMI_SCENARIO="init_fail"):
            with self.assertRaises(GpuBackendError) as cm:
                with GpuMonitor(backend="amd", interval_s=FAST, rocm_smi_library=self.fake):
                    self.fail("the block must not run")
        self.assertTrue(str(cm.exception).startswith("amd: no AMD GPU: "), str(cm.exception))


class MoreOptionsTest(unittest.TestCase):
    """Ours, beyond the seed: several devices, PCIe, the backend paths."""

    def setUp(self):
        self._env = env(FAKE_NVML_SCENARIO=scenario("nvml_monitor.txt"))  # 2 devices
        self._env.__enter__()

    def tearDown(self):
        self._env.__exit__(None, None, None)

    def test_all_devices_and_lists(self):
        seen = []

        @gpu_profile(device="all", interval_s=FAST, report=seen.append, return_profile=True)
        def work():
            return 1

        r = work()
        self.assertEqual([g.device for g in r.gpus], [0, 1])
        self.assertIs(r.gpu, r.gpus[0])
        self.assertEqual(seen, list(r.gpus))  # the report callable gets each device
        with GpuMonitor(device=[1], interval_s=FAST) as mon:
            pass
        self.assertEqual([s.device for s in mon.summaries], [1])
        self.assertEqual(mon.summary.uuid, "GPU-12345678-0000-0000-0000-000000000001")
        one = gpu_profile(interval_s=FAST, report=False, return_profile=True)(lambda: 2)()
        self.assertEqual(len(one.gpus), 1)
        self.assertIs(one.gpu, one.gpus[0])

    def test_bad_devices(self):
        for bad in ([], ["0"], [True], "first", 1.0):
            with self.subTest(device=bad):
                with self.assertRaisesRegex(TypeError, "device must be an int"):
                    gpu_profile(device=bad)
        # A negative index names no C constant (GP_ALL_DEVICES is the C API's).
        for bad, shown in ((-2, -2), ([-1], -1), ([0, -3], -3)):
            with self.subTest(device=bad):
                with self.assertRaises(ValueError) as cm:
                    GpuMonitor(device=bad)
                self.assertEqual(str(cm.exception),
                                 "device %d is not a GPU index: use an index from 0, a UUID, or "
                                 "device=\"all\" for every GPU" % shown)
        with self.assertRaises(GpuBackendError) as cm:
            with GpuMonitor(device=5, interval_s=FAST):
                pass
        self.assertEqual(str(cm.exception), "device 5 does not exist: nvml sees 2 devices (0-1)")

    def test_device_uuid(self):
        # As gpu-profile --device takes them: a UUID in full or a prefix only
        # one device has, case-insensitive, alone or in a list.
        one = "GPU-12345678-0000-0000-0000-000000000001"
        for dev, want in ((one, [1]), (one.lower(), [1]), ("GPU-12345678-0000-0000-0000-0000000000",
                          None), ([one, 0], [1, 0]), (("gpu-12345678-0000-0000-0000-000000000000",),
                                                        [0])):
            with self.subTest(device=dev):
                if want is None:
                    with self.assertRaises(ValueError) as cm:
                        GpuMonitor(device=dev)
                    self.assertEqual(str(cm.exception),
                                     "device %r: more than one device has this UUID prefix "
                                     "(0, 1): write more of it" % dev)
                    continue
                with GpuMonitor(device=dev, interval_s=FAST) as mon:
                    pass
                self.assertEqual([s.device for s in mon.summaries], want)
        with self.assertRaises(ValueError) as cm:
            GpuMonitor(device="GPU-ffff")
        self.assertEqual(str(cm.exception),
                         "device 'GPU-ffff': no device has this UUID (the backend lists: "
                         "0 GPU-12345678-0000-0000-0000-000000000000, "
                         "1 GPU-12345678-0000-0000-0000-000000000001)")
        r = gpu_profile(device=one, interval_s=FAST, report=False, return_profile=True)(
            lambda: 3)()
        self.assertEqual((r.value, r.gpu.device, r.gpu.uuid), (3, 1, one))
        with self.assertRaises(GpuBackendError) as cm:  # the listing's own failure
            GpuMonitor(device=one, backend="nvml", nvml_library="/nonexistent/libnvidia-ml.so.1")
        self.assertIn("/nonexistent/libnvidia-ml.so.1", str(cm.exception))

    def test_mig_uuid(self):
        with env(FAKE_NVML_SCENARIO=scenario("nvml_mig.txt")):
            from gpu_profile import _list_devices, _make_options
            listing = _list_devices(_make_options(0, FAST, "auto", True, 0.0, False))
            mig = [u for i, u in listing if u.startswith("MIG-")]
            self.assertEqual(len(mig), 3)
            with GpuMonitor(device=mig[2], interval_s=FAST) as mon:
                pass
        self.assertEqual(mon.summary.device, 4)
        self.assertEqual(mon.summary.uuid, mig[2])

    def test_nvml_library_and_smi_path(self):
        with self.assertRaises(GpuBackendError) as cm:
            with GpuMonitor(backend="nvml", nvml_library="/nonexistent/libnvidia-ml.so.1"):
                pass
        self.assertIn("/nonexistent/libnvidia-ml.so.1", str(cm.exception))
        with self.assertRaises(GpuBackendError) as cm:
            with GpuMonitor(backend="smi", smi_path="/nonexistent/nvidia-smi"):
                pass
        self.assertIn("/nonexistent/nvidia-smi", str(cm.exception))
        with self.assertRaisesRegex(TypeError, "smi_path must be a path"):
            GpuMonitor(smi_path=3)
        with self.assertRaisesRegex(ValueError, "nvml_library contains a NUL character"):
            GpuMonitor(nvml_library="/lib\0x")

    def test_sample_pcie(self):
        with env(FAKE_NVML_SCENARIO=scenario("nvml_metrics.txt")):
            with GpuMonitor(interval_s=FAST, keep_samples=True, sample_pcie=True) as mon:
                pass
            with GpuMonitor(interval_s=FAST, keep_samples=True) as off:
                pass
        self.assertTrue(mon.samples)
        self.assertIsNotNone(mon.samples[0].pcie_tx_kbps)
        self.assertIsNone(off.samples[0].pcie_tx_kbps)


    def test_mig(self):
        # nvml_mig.txt: GPU 0 in MIG mode with 3 instances (devices 2-4).
        with env(FAKE_NVML_SCENARIO=scenario("nvml_mig.txt")):
            with GpuMonitor(device=[0, 4], interval_s=FAST) as mon:
                pass
        parent, inst = mon.summaries
        self.assertIsNone(parent.mig)
        self.assertEqual(inst.device, 4)
        self.assertEqual(inst.mig, {
            "profile": "1g.10gb", "gpu_instance_id": 10, "compute_instance_id": 0,
            "parent_index": 0, "parent_uuid": "GPU-00000000-0000-0000-0000-000000000000",
            "parent_name": "NVIDIA H100 80GB HBM3"})
        self.assertIsNone(inst.util_gpu_mean)  # n/a on an instance, never 0
        self.assertIsNone(inst.power_mean_w)
        self.assertEqual(inst.mem_total_bytes, 10468982784)

    def test_gpm(self):
        # nvml_gpm.txt: device 0 has GPM (no DFMA/IMMA tensor), device 1 none.
        with env(FAKE_NVML_SCENARIO=scenario("nvml_gpm.txt")):
            with GpuMonitor(device="all", interval_s=FAST, keep_samples=True) as mon:
                pass
        s0, s1 = mon.summaries
        self.assertEqual(gp.GP_GPM_COUNT, 14)
        self.assertIsNone(s1.gpm)
        if s0.sample_count >= 2:
            self.assertNotIn("tensor_dfma_active", s0.gpm)
            self.assertEqual(s0.gpm["fp32_active"], (20.0, 20.0, 20.0))
            self.assertEqual(s0.gpm["gpm_pcie_rx"][0], 2000 * 1048576.0)
            self.assertIn('"gpm":{"sm_active":{', s0.to_json())
        first = [x for x in mon.samples if x.device == 0][0]
        self.assertIsNone(first.gpm)  # the first sample of a run has none
        later = [x for x in mon.samples if x.device == 0][1:]
        for x in later:
            self.assertEqual(x.gpm["fp16_active"], 5.0)
        self.assertTrue(all(x.gpm is None for x in mon.samples if x.device == 1))


class StrictTest(unittest.TestCase):
    def test_strict_failure_raises_with_c_message(self):
        calls = []

        @gpu_profile(backend="nvml", report=False)
        def work():
            calls.append(1)

        with env(FAKE_NVML_SCENARIO=scenario("nvml_init_error.txt")):
            with self.assertRaises(GpuBackendError) as cm:
                work()
        self.assertEqual(calls, [])  # not run
        e = cm.exception
        self.assertEqual(e.status, 3)  # GP_ERR_BACKEND_UNAVAILABLE
        self.assertTrue(str(e).startswith("nvml: "), str(e))
        self.assertIn("Driver Not Loaded", str(e))
        self.assertEqual(e.message, str(e))

    def test_auto_lists_every_backend(self):
        with env(FAKE_NVML_SCENARIO=scenario("nvml_init_error.txt"), FAKE_SMI_CAPTURES=None):
            with self.assertRaises(GpuBackendError) as cm:
                with GpuMonitor(interval_s=FAST):
                    self.fail("the block must not run")
        self.assertIn("no GPU backend could be opened (tried nvml, smi)", str(cm.exception))

    def test_not_strict_falls_back_to_none(self):
        with env(FAKE_NVML_SCENARIO=scenario("nvml_init_error.txt"), FAKE_SMI_CAPTURES=None):
            with GpuMonitor(interval_s=FAST, strict=False) as mon:
                pass
        self.assertEqual(mon.summary.backend, "none")
        self.assertIn("no GPU backend, nothing was sampled", mon.summary.note)
        self.assertEqual(mon.summary.sample_count, 0)


class MonitorTest(unittest.TestCase):
    def test_keep_samples(self):
        with env(FAKE_NVML_SCENARIO=scenario("nvml_monitor.txt")):
            with GpuMonitor(interval_s=FAST, keep_samples=True) as mon:
                self.assertTrue(mon.running)
            self.assertFalse(mon.running)
        s = mon.summary
        self.assertIsInstance(s, GpuSummary)
        self.assertEqual(len(mon.summaries), 1)
        self.assertGreaterEqual(len(mon.samples), 2)
        self.assertEqual(len(mon.samples), s.sample_count)
        first = mon.samples[0]
        self.assertIsInstance(first, GpuSample)
        self.assertEqual((first.device, first.slot), (0, 0))
        self.assertEqual(first.util_gpu, 50)
        self.assertEqual(first.power_w, 100.0)
        self.assertEqual(mon.samples[-1].util_gpu, 50)
        self.assertIsNone(first.pcie_tx_kbps)  # sample_pcie is off
        monos = [x.t_mono_ns for x in mon.samples]
        self.assertEqual(monos, sorted(monos))
        self.assertGreater(first.timestamp, 1e9)

    def test_lost_device(self):
        import time
        with env(FAKE_NVML_SCENARIO=scenario("nvml_monitor.txt")):
            with GpuMonitor(device=1, interval_s=FAST, keep_samples=True) as mon:
                time.sleep(0.1)
        s = mon.summary
        self.assertEqual(s.device, 1)
        self.assertEqual(s.util_gpu_max, 80)  # device 1: 80 until lost
        self.assertEqual(s.sample_count, 2)
        self.assertIsNotNone(s.device_error)
        self.assertIn("lost", s.device_error.lower())
        self.assertGreaterEqual(s.device_error_at_s, 0.0)

    def test_no_samples_kept_by_default(self):
        with GpuMonitor(interval_s=FAST) as mon:
            pass
        self.assertEqual(mon.samples, [])
        self.assertGreaterEqual(mon.summary.sample_count, 1)

    def test_exception_in_block(self):
        before = thread_count()
        with self.assertRaises(KeyError):
            with GpuMonitor(interval_s=FAST) as mon:
                raise KeyError("k")
        self.assertFalse(mon.running)
        self.assertEqual(settled_thread_count(before), before)
        self.assertIsNotNone(mon.summary)

    def test_runs_once(self):
        mon = GpuMonitor(backend="none")
        with mon:
            pass
        with self.assertRaises(RuntimeError):
            mon.start()

    def test_warmup(self):
        with GpuMonitor(interval_s=FAST, warmup_s=10.0) as mon:
            pass
        self.assertEqual(mon.summary.sample_count, 0)
        self.assertGreaterEqual(mon.summary.samples_warmup, 1)
        self.assertIsNone(mon.summary.util_gpu_mean)


class DocTest(unittest.TestCase):
    def test_monitor_help(self):
        import pydoc

        text = pydoc.render_doc(GpuMonitor, renderer=pydoc.plaintext)
        for want in ("summaries", "samples", "running", "UUID", "share/doc/gpu-profile/python.md"):
            self.assertIn(want, text)
        self.assertIn("share/doc/gpu-profile/python.md", gp.__doc__)  # installed there
        for method in (GpuMonitor.start, GpuMonitor.stop):
            self.assertTrue(method.__doc__, method.__name__)


class FrozenTest(unittest.TestCase):
    def test_summary_and_sample_are_frozen(self):
        with GpuMonitor(interval_s=FAST, keep_samples=True) as mon:
            pass
        with self.assertRaises(dataclasses.FrozenInstanceError):
            mon.summary.util_gpu_mean = 1.0
        with self.assertRaises(dataclasses.FrozenInstanceError):
            mon.samples[0].util_gpu = 1
        r = ProfiledResult(1, mon.summary)
        with self.assertRaises(dataclasses.FrozenInstanceError):
            r.value = 2
        self.assertEqual(mon.summary, dataclasses.replace(mon.summary))


if __name__ == "__main__":
    unittest.main()
