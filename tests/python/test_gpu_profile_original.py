"""gpu_profile as the original package's users meet it (issue 33; the seed's
gpu-profile, published as profgpu 0.2.0): its names beside ours, its
fall-backs and behaviours, and - re-expressed through the fake NVML and the
fake nvidia-smi, with the same inputs - every check of 0.2.0's test suite
that patched one of its private internals (tests/python/profgpu_original.py
lists which original test each of ours stands for).

Standard library only.  CTest runs it as test_python_gpu_profile_original
with the environment of test_python_gpu_profile (fake NVML first on
LD_LIBRARY_PATH, fake nvidia-smi first on PATH).  Scenarios are written at
run time into a temporary folder.  No assertion depends on timing: a region
with interval_s=3600 holds exactly two samples (the one at start and the one
at stop), and where more are taken the expected figures are computed from
the samples the monitor kept.
"""

import contextlib
import copy
import dataclasses
import io
import json
import math
import os
import pickle
import shutil
import subprocess
import sys
import tempfile
import time
import unittest

HERE = os.path.dirname(os.path.abspath(__file__))
SOURCE_TESTS = os.environ.get("GP_TEST_SOURCE_DIR") or os.path.dirname(HERE)
if not os.environ.get("PYTHONPATH"):
    sys.path.insert(0, os.path.join(os.path.dirname(SOURCE_TESTS), "python"))

import gpu_profile as gp  # noqa: E402
from gpu_profile import (GpuBackendError, GpuMonitor, GpuSample, GpuSummary,  # noqa: E402
                         gpu_profile)
from test_gpu_profile import env  # noqa: E402  (beside this file: one helper for both)

MIB = 1 << 20
FAST = 0.01
TWO = 3600.0  # interval: exactly the start and stop samples
H100 = "linux-x86_64__nvidia-h100-80gb-hbm3__590.48.01.txt"
MIG = "linux-x86_64__nvidia-h100-mig__590.48.01.txt"


class Base(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.tmp = tempfile.mkdtemp(prefix="gp-original-")

    @classmethod
    def tearDownClass(cls):
        shutil.rmtree(cls.tmp, ignore_errors=True)

    def nvml(self, text):
        """A fake NVML scenario with these lines, for the block."""
        path = os.path.join(self.tmp, "%s.txt" % self.id().rsplit(".", 1)[-1])
        with open(path, "w") as f:
            f.write(text)
        return env(FAKE_NVML_SCENARIO=path, FAKE_SMI_CAPTURES=None)

    def smi(self, capture=H100, fail=None):
        if not os.environ.get("GP_TEST_FAKE_SMI"):
            self.skipTest("GP_TEST_FAKE_SMI is not set (run through CTest)")
        return env(FAKE_SMI_CAPTURES=os.path.join(SOURCE_TESTS, "fixtures", "nvidia-smi",
                                                  capture),
                   FAKE_SMI_FAIL=fail, FAKE_NVML_SCENARIO=self.no_nvml())

    def no_nvml(self):
        path = os.path.join(self.tmp, "init_error.txt")
        with open(path, "w") as f:
            f.write("init_error 9\n")
        return path

    def two(self, **kw):
        """A region of exactly two samples (start, stop)."""
        with GpuMonitor(interval_s=TWO, keep_samples=True, **kw) as mon:
            pass
        self.assertEqual(mon.summary.n_samples, 2)
        return mon

    def many(self, **kw):
        """A region of several samples (at least the two)."""
        with GpuMonitor(interval_s=FAST, keep_samples=True, **kw) as mon:
            time.sleep(0.05)
        self.assertGreaterEqual(len(mon.samples), 2)
        return mon


def nearest_rank(values, p):
    v = sorted(values)
    rank = max(1, math.ceil(p / 100.0 * len(v)))
    return v[rank - 1]


CONSTANT = """device 0 name "TestGPU"
seq 0 util_gpu 50
seq 0 util_mem 30
seq 0 mem_used %d
seq 0 mem_total %d
seq 0 power_mw 150000
seq 0 temp_c 65
seq 0 clock_sm 1500
seq 0 clock_mem 900
""" % (4096 * MIB, 8192 * MIB)


class NamesTest(Base):
    """Point 1: the original's public names beside ours."""

    def test_summary_names(self):
        with self.nvml(CONSTANT):
            s = self.two().summary
        self.assertEqual((s.n_samples, s.sample_count), (2, 2))
        self.assertEqual(s.notes, s.note)
        self.assertEqual((s.mem_used_max_mb, s.mem_used_max_bytes), (4096.0, 4096 * MIB))
        self.assertEqual((s.mem_total_mb, s.mem_total_bytes), (8192.0, 8192 * MIB))
        # The seed's logging tutorial, as written.
        d = json.loads(json.dumps(s.__dict__))
        self.assertNotIn("_c_raw", d)
        self.assertEqual((d["n_samples"], d["mem_used_max_mb"], d["util_gpu_mean"]),
                         (2, 4096.0, 50.0))
        a = dataclasses.asdict(s)
        self.assertEqual((a["notes"], a["sample_count"]), (s.note, 2))
        self.assertEqual(json.loads(json.dumps(a)), d)
        self.assertIn("clocks            SM mean 1500 MHz (max 1500 MHz)  mem mean 900 MHz", s.format())
        self.assertIn('"schema":"gpu-profile.summary"', s.to_json().replace(" ", ""))
        for t in (pickle.loads(pickle.dumps(s)), copy.deepcopy(s)):
            self.assertEqual((t, t.format(), t.to_json()), (s, s.format(), s.to_json()))

    def test_summary_built_by_hand(self):
        s = GpuSummary(device=0, name="X", duration_s=1.0, interval_s=0.1, n_samples=10,
                       util_gpu_mean=50.0, util_gpu_p50=50.0, util_gpu_p95=50.0,
                       util_gpu_max=50.0, util_mem_mean=30.0, mem_used_max_mb=4000.0,
                       mem_total_mb=8192.0, power_mean_w=100.0, power_max_w=150.0,
                       temp_max_c=60.0, busy_time_est_s=0.5, sparkline="", notes="n")
        self.assertEqual((s.sample_count, s.note), (10, "n"))
        self.assertEqual(s.mem_used_max_bytes, 4000 * MIB)
        self.assertEqual(s.mem_total_bytes, 8192 * MIB)
        with self.assertRaises(dataclasses.FrozenInstanceError):
            s.n_samples = 1
        ours = GpuSummary(sample_count=3, note="x", mem_total_bytes=2 * MIB)
        self.assertEqual((ours.n_samples, ours.notes, ours.mem_total_mb), (3, "x", 2.0))
        with self.assertRaisesRegex(ValueError, "built by hand"):
            s.to_json()

    def test_sample_names(self):
        with self.nvml(CONSTANT):
            mon = self.many()
        # Ordered and from the monitor's start; never bounded by a wall-clock
        # figure (Python's t0 and the C monitor's start differ under load).
        last = 0.0
        for x in mon.samples:
            self.assertEqual((x.mem_used_mb, x.mem_total_mb), (4096.0, 8192.0))
            self.assertEqual((x.sm_clock_mhz, x.mem_clock_mhz), (1500, 900))
            self.assertGreaterEqual(x.t_s, last)
            last = x.t_s
        s = GpuSample(t_s=0.5, util_gpu=75.0, util_mem=None, mem_used_mb=None,
                      mem_total_mb=None, power_w=None, temp_c=None, sm_clock_mhz=1500.0,
                      mem_clock_mhz=None)
        d = dataclasses.asdict(s)
        self.assertEqual((d["t_s"], d["util_gpu"], d["clock_sm_mhz"]), (0.5, 75.0, 1500.0))
        self.assertIsNone(d["util_mem"])

    def test_store_samples(self):
        with self.nvml(CONSTANT):
            with GpuMonitor(interval_s=TWO, store_samples=True) as mon:
                pass
            self.assertEqual(len(mon.samples), 2)
            with GpuMonitor(interval_s=TWO) as mon:
                pass
            self.assertEqual(mon.samples, [])
        with self.assertRaisesRegex(ValueError, "max_samples = 10 is too small"):
            GpuMonitor(backend="none", store_samples=True, max_samples=10)

    def test_cli_main(self):
        from gpu_profile.cli import main
        err = io.StringIO()
        with contextlib.redirect_stderr(err):
            self.assertEqual(main([]), 2)
            self.assertEqual(main(["--"]), 2)
        self.assertIn("no command to run", err.getvalue())
        out = io.StringIO()
        with contextlib.redirect_stdout(out):
            rc = main(["--backend", "none", "--device", "2", "--json", "--", sys.executable,
                       "-c", "raise SystemExit(42)"])
        self.assertEqual(rc, 42)
        d = json.loads(out.getvalue())
        self.assertEqual((d["device"], d["n_samples"], d["name"]), (2, 0, "N/A"))


class FallbackTest(Base):
    """Point 2: NVML loads but sees no GPU; not strict, it falls back."""

    def test_nvml_sees_no_gpu(self):
        with self.smi():
            with env(FAKE_NVML_SCENARIO=os.path.join(SOURCE_TESTS, "scenarios",
                                                     "nvml_no_devices.txt")):
                @gpu_profile(strict=False, report=False, return_profile=True)
                def work():
                    return 7
                r = work()
                self.assertEqual((r.value, r.gpu.backend), (7, "smi"))
                # (then, for so short a region, maybe "; no sample: nvidia-smi...")
                self.assertTrue(r.gpu.notes.startswith("nvml sees no GPU: sampled with smi"),
                                r.gpu.notes)
                with GpuMonitor(backend="nvml", strict=False) as mon:
                    pass
                s = mon.summary
                self.assertEqual((s.backend, s.name), ("none", "N/A"))
                self.assertEqual(s.notes, "no GPU backend, nothing was sampled: nvml sees no GPU")
                with self.assertRaises(GpuBackendError) as cm:
                    GpuMonitor(backend="nvml").start()
                self.assertEqual(cm.exception.message,
                                 "nvml sees no GPU: check that the driver is loaded and the "
                                 "device is visible (CUDA_VISIBLE_DEVICES, container --gpus)")
                with env(FAKE_SMI_FAIL="driver"):
                    with GpuMonitor(strict=False) as mon:
                        pass
                self.assertEqual(mon.summary.backend, "none")
                self.assertTrue(mon.summary.notes.startswith(
                    "no GPU backend, nothing was sampled: nvml sees no GPU; smi: "),
                    mon.summary.notes)


class BehaviourTest(Base):
    """Point 3: behaviours as the original gives them."""

    def test_report_true_prints_to_stdout(self):
        with self.nvml(CONSTANT):
            @gpu_profile(interval_s=TWO)
            def work():
                return 1
            out, err = io.StringIO(), io.StringIO()
            with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
                self.assertEqual(work(), 1)
        self.assertEqual(err.getvalue(), "")
        self.assertTrue(out.getvalue().startswith("[GPU 0] TestGPU  GPU-fa4e0000-"))

    def test_interval_checked_at_construction(self):
        for bad in (0, -1, 0.0):
            with self.assertRaisesRegex(ValueError, r"interval_s must be > 0 \(seconds\)"):
                GpuMonitor(backend="none", interval_s=bad)
            with self.assertRaisesRegex(ValueError, "interval_s must be > 0"):
                gpu_profile(backend="none", interval_s=bad)

    def test_second_stop_returns_the_summary(self):
        with GpuMonitor(backend="none") as mon:
            pass
        self.assertIs(mon.stop(), mon.summary)
        self.assertIs(mon.stop(), mon.summary)
        with self.assertRaisesRegex(RuntimeError, "not running"):
            GpuMonitor(backend="none").stop()

    def test_none_backend(self):
        with GpuMonitor(backend="none") as mon:
            pass
        s = mon.summary
        self.assertEqual((s.name, s.notes, s.sparkline, s.n_samples),
                         ("N/A", "Backend disabled (backend='none').", "", 0))
        text = s.format()
        self.assertTrue(text.startswith("[GPU 0] N/A  [none]\n"), text)
        self.assertIn("  util.gpu: mean n/a | p50 n/a | p95 n/a | max n/a\n", text)
        self.assertNotIn("util trace", text)
        self.assertIn("  notes: Backend disabled (backend='none').\n", text)

    def test_format_lines(self):
        with self.nvml(CONSTANT):
            s = self.two(warmup_s=0).summary
        lines = s.format().splitlines()
        self.assertEqual(lines[0], "[GPU 0] TestGPU  GPU-fa4e0000-0000-0000-0000-000000000000  "
                                   "[nvml]")
        self.assertRegex(lines[1], r"^  duration: \d+\.\d{3}s \| samples: 2 @ 3600\.000s$")
        self.assertEqual(lines[2:7], [
            "  util.gpu: mean 50.0% | p50 50.0% | p95 50.0% | max 50.0%",
            "  util.mem: mean 30.0%",
            "  memory: max used 4096 MB / total 8192 MB",
            "  power: mean 150.0 W | max 150.0 W",
            "  temp: max 65 °C"])
        self.assertTrue(lines[9].startswith("  interval          3600.0"), lines[9])
        self.assertTrue(s.format(ascii=True).isascii())
        hand = GpuSummary(device=1, name="GPU1", duration_s=5.0, interval_s=0.1, n_samples=50,
                          util_gpu_mean=65.0, util_gpu_max=98.0, util_mem_mean=float("nan"),
                          temp_max_c=75.0, busy_time_est_s=2.5, sparkline="▁▃▅▇",
                          notes="warmup ignored")
        self.assertEqual(hand.format(), "\n".join([
            "[GPU 1] GPU1",
            "  duration: 5.000s | samples: 50 @ 0.100s",
            "  util.gpu: mean 65.0% | p50 n/a | p95 n/a | max 98.0%",
            "  util.mem: mean n/a",
            "  power: mean n/a | max n/a",
            "  temp: max 75 °C",
            "  busy time (est): 2.500s",
            "  util trace: ▁▃▅▇",
            "  notes: warmup ignored"]) + "\n")

    def test_sync_fn_error_is_noted(self):
        def bad():
            raise RuntimeError("sync failed")

        with GpuMonitor(backend="none", sync_fn=bad) as mon:
            pass
        self.assertEqual(mon.summary.notes, "Backend disabled (backend='none'). | "
                         "sync_fn raised RuntimeError: sync failed | "
                         "sync_fn raised RuntimeError: sync failed")

        @gpu_profile(backend="none", sync_fn=bad, report=False, return_profile=True)
        def work():
            return 3
        r = work()
        self.assertEqual(r.value, 3)
        self.assertIn("sync_fn raised RuntimeError: sync failed", r.gpu.notes)


class PrivateReexpressedTest(Base):
    """0.2.0's tests of its private internals, as public behaviour of ours
    with the same inputs (tests/python/profgpu_original.py, PRIVATE)."""

    def test_percentile_cases(self):
        # empty: None (the original's NaN; docs/python.md)
        with GpuMonitor(backend="none") as mon:
            pass
        self.assertEqual((mon.summary.util_gpu_p50, mon.summary.util_gpu_p95), (None, None))
        with self.nvml("device 0\nseq 0 util_gpu 7\n"):
            s = self.two().summary
        self.assertEqual((s.util_gpu_p50, s.util_gpu_p95, s.util_gpu_max), (7, 7, 7))
        # [10, 20]: nearest rank gives 10 (the original interpolated 15)
        with self.nvml("device 0\nseq 0 util_gpu 10 20\n"):
            s = self.two().summary
        self.assertEqual((s.util_gpu_p50, s.util_gpu_p95), (10, 20))
        # 0..100, however many were taken: the nearest rank of the samples
        with self.nvml("device 0\nseq 0 util_gpu %s\n" % " ".join(map(str, range(101)))):
            mon = self.many()
        vals = [x.util_gpu for x in mon.samples]
        s = mon.summary
        self.assertEqual(s.util_gpu_p50, nearest_rank(vals, 50))
        self.assertEqual(s.util_gpu_p95, nearest_rank(vals, 95))
        self.assertTrue(min(vals) <= s.util_gpu_p50 <= s.util_gpu_p95 <= max(vals))

    def test_sparkline_cases(self):
        with GpuMonitor(backend="none") as mon:
            pass
        self.assertEqual((mon.summary.sparkline, mon.summary.spark), ("", ()))
        with self.nvml("device 0\nseq 0 util_gpu 50\n"):
            s = self.two().summary
        self.assertEqual(len(set(s.sparkline)), 1)
        with self.nvml("device 0\nseq 0 util_gpu 0 100\n"):
            s = self.two().summary
        self.assertEqual(s.sparkline, "▁█")
        with self.nvml("device 0\nseq 0 util_gpu %s\n" % " ".join(str(i % 100)
                                                                 for i in range(200))):
            s = self.many().summary
        self.assertLessEqual(len(s.sparkline), gp.GP_SPARK_WIDTH)
        self.assertEqual(len(s.sparkline), len(s.spark))

    def test_none_backend_cases(self):
        for _ in range(2):  # opened and closed cleanly, twice
            with GpuMonitor(backend="none", keep_samples=True) as mon:
                pass
            s = mon.summary
            self.assertEqual((s.name, s.backend), ("N/A", "none"))
            self.assertIn("backend='none'", s.notes)
            for f in ("util_gpu_mean", "util_mem_mean", "mem_used_max_mb", "mem_total_mb",
                      "power_mean_w", "temp_max_c", "clock_sm_mean_mhz", "clock_mem_mean_mhz"):
                self.assertIsNone(getattr(s, f), f)

    def test_no_samples_is_none(self):
        with GpuMonitor(backend="none") as mon:
            pass
        s = mon.summary
        self.assertEqual((s.util_gpu_mean, s.util_mem_mean, s.power_mean_w, s.util_gpu_p50,
                          s.util_gpu_p95, s.busy_time_est_s, s.interval_mean_s),
                         (None,) * 7)

    def test_single_sample(self):
        with self.nvml("device 0\nseq 0 util_gpu 80\nseq 0 power_mw 200000\nseq 0 temp_c 70\n"):
            s = self.two().summary
        self.assertEqual((s.util_gpu_mean, s.power_mean_w, s.temp_max_c), (80.0, 200.0, 70))

    def test_warmup_leaves_out_early_samples(self):
        with self.nvml("device 0\nseq 0 util_gpu 99 50\n"):
            with GpuMonitor(interval_s=TWO, warmup_s=0.05) as mon:
                time.sleep(0.1)  # at least the warmup: the stop sample is after it
        s = mon.summary
        self.assertEqual((s.n_samples, s.samples_warmup, s.util_gpu_mean), (1, 1, 50.0))
        self.assertIn(" (+1 in the first 0.050s: warmup, ignored)", s.format())

    def test_max_tracking(self):
        with self.nvml("device 0\nseq 0 util_gpu 10 50 30 80 20\n"
                       "seq 0 mem_used %s\nseq 0 power_mw 10000 50000 30000 80000 20000\n"
                       "seq 0 temp_c 5 25 15 40 10\n"
                       % " ".join(str(v * 10 * MIB) for v in (10, 50, 30, 80, 20))):
            mon = self.many()
        s, xs = mon.summary, mon.samples
        self.assertEqual(s.util_gpu_max, max(x.util_gpu for x in xs))
        self.assertEqual(s.mem_used_max_mb, max(x.mem_used_mb for x in xs))
        self.assertEqual(s.power_max_w, max(x.power_w for x in xs))
        self.assertEqual(s.temp_max_c, max(x.temp_c for x in xs))
        with self.nvml("device 0\nseq 0 util_gpu 10 50\n"):
            self.assertEqual(self.two().summary.util_gpu_max, 50)

    def test_mean_calculation(self):
        with self.nvml("device 0\nseq 0 util_gpu 10 20 30 40 50\n"
                       "seq 0 util_mem 20 40 60 80 100\n"
                       "seq 0 power_mw 10000 20000 30000 40000 50000\n"):
            mon = self.many()
        s, xs = mon.summary, mon.samples
        mean = sum(x.util_gpu for x in xs) / len(xs)
        self.assertAlmostEqual(s.util_gpu_mean, mean, places=9)
        self.assertAlmostEqual(s.util_mem_mean, 2 * mean, places=9)
        self.assertAlmostEqual(s.power_mean_w, mean, places=9)

    def test_mem_total_takes_last_value(self):
        with self.nvml("device 0\nseq 0 mem_total %d %d\n" % (8000 * MIB, 16000 * MIB)):
            self.assertEqual(self.two().summary.mem_total_mb, 16000.0)

    def test_statistics_exact_and_bounded(self):
        # The original bounded a reservoir (percentiles) and a trace
        # (sparkline); ours are exact (a histogram) and the trace has at
        # most GP_SPARK_WIDTH cells; its sizing keywords are accepted.
        scen = "device 0\nseq 0 util_gpu %s\n" % " ".join(str(i % 100) for i in range(200))
        with self.nvml(scen):
            with GpuMonitor(interval_s=FAST, keep_samples=True, reservoir_size=1,
                            trace_len=1) as mon:
                time.sleep(0.05)
        vals = [x.util_gpu for x in mon.samples]
        self.assertEqual(mon.summary.util_gpu_p95, nearest_rank(vals, 95))
        self.assertLessEqual(len(mon.summary.spark), gp.GP_SPARK_WIDTH)

    def test_missing_metrics_are_none(self):
        with self.nvml("device 0\nunsupported 0 util\nunsupported 0 power\n"
                       "unsupported 0 temp\n"):
            s = self.two().summary
        self.assertEqual(s.n_samples, 2)
        self.assertEqual((s.util_gpu_mean, s.power_mean_w, s.temp_max_c, s.sparkline),
                         (None, None, None, ""))

    def test_negative_warmup_refused(self):
        # The original clamped warmup_s=-5 to 0; ours refuses it, naming it.
        with self.assertRaisesRegex(ValueError, r"warmup_s must be >= 0 \(seconds\), not -5"):
            GpuMonitor(backend="none", warmup_s=-5.0)

    def test_constant_device(self):
        with self.nvml(CONSTANT):
            mon = self.many()
            s = mon.summary
            self.assertEqual((s.name, s.util_gpu_mean, s.util_mem_mean, s.power_mean_w,
                              s.temp_max_c, s.clock_sm_mean_mhz, s.clock_mem_mean_mhz),
                             ("TestGPU", 50.0, 30.0, 150.0, 65, 1500.0, 900.0))
            self.assertTrue(all(isinstance(x, GpuSample) and x.t_s >= 0 for x in mon.samples))
            # busy time: the seed's formula, duration_s x mean / 100
            self.assertAlmostEqual(s.busy_time_est_s, s.duration_s * 0.5, places=9)
            with GpuMonitor(interval_s=TWO, warmup_s=0.05) as mon:
                time.sleep(0.1)
            self.assertEqual((mon.summary.warmup_s, mon.summary.samples_warmup), (0.05, 1))
            self.assertIn("warmup, ignored", mon.summary.format())

    def test_ramp_device(self):
        with self.nvml("device 0\nseq 0 util_gpu %s\n"
                       % " ".join(str(round(100 * i / 199)) for i in range(200))):
            mon = self.many()
        s, vals = mon.summary, [x.util_gpu for x in mon.samples]
        self.assertEqual(s.util_gpu_max, max(vals))
        self.assertAlmostEqual(s.util_gpu_mean, sum(vals) / len(vals), places=9)
        self.assertGreater(s.util_gpu_max, s.util_gpu_p50 - 1)

    def test_failing_device(self):
        # FailingBackend: reads that fail after the first ones; here the
        # start sample is read and the device is lost at the stop sample.
        scen = "device 0\nseq 0 util_gpu 42\nerror 0 lost_after 1\n"
        for strict in (False, True):
            with self.nvml(scen):
                with GpuMonitor(interval_s=TWO, strict=strict) as mon:
                    pass
            s = mon.summary
            self.assertEqual((s.n_samples, s.util_gpu_mean), (1, 42.0))
            self.assertIn("GPU is lost", s.device_error)
            # strict=True too: the summary of the samples before (docs/python.md)
            self.assertIn("  device error      device lost at", s.format())

    def test_max_samples_bound(self):
        with self.nvml(CONSTANT):
            with GpuMonitor(interval_s=0.001, store_samples=True, max_samples=100) as mon:
                time.sleep(0.3)
        self.assertLessEqual(len(mon.samples), 100)
        self.assertGreaterEqual(len(mon.samples), 50 if mon.summary.n_samples > 100 else 1)

    def test_backend_selection(self):
        self.assertEqual(GpuMonitor(backend="none").start().stop().backend, "none")
        with env(FAKE_NVML_SCENARIO=self.no_nvml(), FAKE_SMI_CAPTURES=None):
            with GpuMonitor(backend="auto", strict=False) as mon:
                pass
            self.assertEqual(mon.summary.backend, "none")
            self.assertIn("nvml: ", mon.summary.notes)
            self.assertIn("; smi: ", mon.summary.notes)
            for backend in ("auto", "nvml", "smi"):
                with self.assertRaises(GpuBackendError):
                    GpuMonitor(backend=backend, strict=True).start()

    def test_smi_backend_cases(self):
        with self.assertRaisesRegex(GpuBackendError, "smi: "):
            GpuMonitor(backend="smi", smi_path="/nonexistent/nvidia-smi").start()
        with self.smi(H100):
            s = self.smi_region()
        self.assertEqual((s.name, s.util_gpu_mean, s.util_mem_mean, s.mem_used_max_mb,
                          s.mem_total_mb, s.power_mean_w, s.temp_max_c, s.clock_sm_mean_mhz,
                          s.clock_mem_mean_mhz),
                         ("NVIDIA H100 80GB HBM3", 100.0, 11.0, 19818.0, 81559.0, 631.95, 59,
                          1980.0, 2619.0))
        with self.smi(MIG):  # N/A utilisation -> None
            s = self.smi_region()
        self.assertEqual((s.util_gpu_mean, s.util_mem_mean), (None, None))
        with self.smi(H100, fail="exit_after=1"):  # a read that fails: the device lost
            for wait_s in (0.2, 0.5, 1.0, 2.0, 4.0):
                with GpuMonitor(backend="smi", interval_s=0.05, strict=False) as mon:
                    time.sleep(wait_s)
                if mon.summary.device_error:
                    break
        self.assertIn("GPU is lost", mon.summary.device_error or "")

    def smi_region(self):
        """An smi region that got rows (nvidia-smi paces itself)."""
        for wait_s in (0.2, 0.5, 1.0, 2.0, 4.0):
            with GpuMonitor(backend="smi", interval_s=0.05) as mon:
                time.sleep(wait_s)
            if mon.summary.n_samples:
                return mon.summary
        self.fail("nvidia-smi gave no row in 4 s")


RAMP6 = """device 0 name "TestGPU"
seq 0 util_gpu 10 20 30 40 50 60
seq 0 power_mw 100000 100000 200000 200000 300000 300000
"""


class RepeatsTest(Base):
    """Point 5: profgpu 0.3's multi-run API and its extra statistics.  With
    interval_s=TWO each measured run reads the fake's next two values and a
    warmup run reads none, so every figure is known in advance."""

    def counted(self):
        calls = []

        def work():
            calls.append(1)
            return len(calls)

        return calls, work

    def test_decorator_figures(self):
        calls, work = self.counted()
        with self.nvml(RAMP6):
            f = gpu_profile(interval_s=TWO, repeats=3, warmup_runs=1, report=False,
                            return_profile=True)(work)
            r = f()
        self.assertIsInstance(r, gp.MultiRunResult)
        self.assertEqual((len(calls), r.value, r.warmup_runs, len(r.runs)), (4, 4, 1, 3))
        self.assertEqual([x.util_gpu_mean for x in r.runs], [15.0, 35.0, 55.0])
        self.assertEqual([x.n_samples for x in r.runs], [2, 2, 2])
        # The sample standard deviation (n - 1), as gpu-profile --repeats.
        self.assertEqual((r.util_gpu.mean, r.util_gpu.std, r.util_gpu.min, r.util_gpu.max),
                         (35.0, 20.0, 15.0, 55.0))
        self.assertEqual((r.util_gpu.values, r.util_gpu.n, r.util_gpu.n_unknown),
                         ((15.0, 35.0, 55.0), 3, 0))
        self.assertEqual((r.power.mean, r.power.std, r.power.min, r.power.max),
                         (200.0, 100.0, 100.0, 300.0))
        m = r.stats_for("util_gpu_max")
        self.assertEqual((m.mean, m.std, m.values), (40.0, 20.0, (20, 40, 60)))
        n = r.stats_for("n_samples")  # the original's name
        self.assertEqual((n.mean, n.std), (2.0, 0.0))
        self.assertEqual(r.gpus, tuple((x,) for x in r.runs))
        text = r.format()
        for line in ("=== Multi-Run GPU Profile (3 runs) ===", "[GPU 0] TestGPU",
                     "  runs:      3 measured, after 1 warmup run (not measured); "
                     "mean ± std (range)",
                     "  util.gpu:  35.0% ± 20.0%  (range 15.0%-55.0%)",
                     "  power:     200.0 W ± 100.0 W  (range 100.0 W-300.0 W)",
                     "--- Per-Run util.gpu mean ---", "  run 1: 15.0%  (", "  run 3: 55.0%  ("):
            self.assertIn(line, text.splitlines() if line.endswith(")") or "=" in line
                          else text)
        self.assertIn("35.0% +/- 20.0%", r.format(ascii=True))
        self.assertTrue(r.format(ascii=True).isascii())
        # A second call: its own series (the fake goes on where it stopped).
        with self.nvml(RAMP6):
            calls2, work2 = self.counted()
            self.assertEqual(gpu_profile(interval_s=TWO, repeats=2, report=False)(work2)(), 2)

    def test_stats_for_refuses(self):
        r = gp.profile_repeats(lambda: None, repeats=2, backend="none", report=False)
        with self.assertRaisesRegex(ValueError, r"stats_for\('nope'\): GpuSummary has no"):
            r.stats_for("nope")
        with self.assertRaisesRegex(ValueError, r"stats_for\('name'\): the field is not a"):
            r.stats_for("name")
        with self.assertRaises(AttributeError):  # frozen
            r.value = 1

    def test_unknown_is_none(self):
        calls, work = self.counted()
        r = gp.profile_repeats(work, repeats=3, warmup_runs=2, backend="none", strict=False,
                               report=False)
        self.assertEqual((len(calls), r.value, len(r.runs)), (5, 5, 3))
        u = r.util_gpu
        self.assertEqual((u.mean, u.std, u.min, u.max, u.n, u.n_unknown, u.values),
                         (None, None, None, None, 0, 3, (None, None, None)))
        self.assertIn("  util.gpu:  n/a ± n/a  (range n/a-n/a)", r.format())
        self.assertIn("  run 2: n/a  (", r.format())
        self.assertEqual(r.duration.n, 3)
        one = gp.profile_repeats(work, repeats=1, backend="none", report=False)
        self.assertIsInstance(one, gp.MultiRunResult)
        self.assertEqual((len(one.runs), one.duration.std), (1, None))  # one run: no spread

    def test_run_stats(self):
        s = gp.RunStats.of([10, None, 30.0, float("nan")])
        self.assertEqual((s.mean, s.min, s.max, s.n, s.n_unknown), (20.0, 10.0, 30.0, 2, 2))
        self.assertAlmostEqual(s.std, math.sqrt(200.0), places=12)
        self.assertEqual(s.values[:3], (10, None, 30.0))
        self.assertEqual(gp.RunStats.of([42.0]).std, None)
        self.assertEqual(gp.RunStats.of([]), gp.RunStats())
        self.assertEqual(gp.RunStats.of([50, 60, 70]).format("%", 1),
                         "60.0% ± 10.0%  (range 50.0%-70.0%)")
        self.assertEqual(gp.MultiRunResult.from_runs([], value=None).format(), "(no runs)")
        hand = [GpuSummary(duration_s=1.0 + i, util_gpu_mean=50.0 + 10 * i,
                           mem_used_max_mb=4000.0 + 100 * i) for i in range(3)]
        r = gp.MultiRunResult.from_runs(hand, value=7)
        self.assertEqual((r.value, r.util_gpu.mean, r.util_gpu.std, r.peak_memory.mean),
                         (7, 60.0, 10.0, 4100.0))

    def test_run_stats_cases(self):
        """profgpu 0.3's TestRunStats (its private _compute_run_stats), the
        same inputs through RunStats.of; unknowns None where 0.3 gives NaN."""
        nan = float("nan")
        s = gp.RunStats.of([42.0])
        self.assertEqual((s.mean, s.std, s.min, s.max), (42.0, None, 42.0, 42.0))
        s = gp.RunStats.of([40.0, 60.0])
        self.assertEqual((s.mean, s.min, s.max), (50.0, 40.0, 60.0))
        self.assertAlmostEqual(s.std, math.sqrt(200.0), places=12)  # n - 1
        s = gp.RunStats.of([10.0, 10.0, 10.0])
        self.assertEqual((s.mean, s.std), (10.0, 0.0))
        self.assertEqual(gp.RunStats.of([]).mean, None)
        s = gp.RunStats.of([nan, nan])
        self.assertEqual((s.mean, s.n, s.n_unknown), (None, 0, 2))
        s = gp.RunStats.of([10.0, nan, 30.0])
        self.assertEqual((s.mean, s.n, s.n_unknown), (20.0, 2, 1))
        self.assertEqual(gp.RunStats.of([1.0, 2.0, 3.0]).values, (1.0, 2.0, 3.0))
        text = gp.RunStats.of([50.0, 60.0, 70.0]).format("%", 1)
        self.assertEqual(text, "60.0% ± 10.0%  (range 50.0%-70.0%)")
        with self.assertRaises(AttributeError):
            gp.RunStats.of([1.0, 2.0]).mean = 99.0

    def test_extra_statistics_cases(self):
        """profgpu 0.3's _Aggregator checks of its new statistics, the same
        inputs through the fake NVML (whole percents, as NVML reads them:
        its 4.9 is 4 here); the expected figures are computed from the
        samples the monitor kept (the sequence's last value repeats)."""

        def region(metric, values, two=False):
            with self.nvml("device 0\nseq 0 %s %s\n" % (metric, " ".join(map(str, values)))):
                mon = self.two() if two else self.many()
            return mon.summary, mon.samples

        s, xs = region("util_gpu", [80, 20, 60, 10, 50])
        u = [x.util_gpu for x in xs]
        self.assertEqual(u[:5], [80, 20, 60, 10, 50][:len(u)])
        self.assertEqual(s.util_gpu_min, min(u))
        s, _ = region("util_gpu", [50] * 10)
        self.assertEqual((s.util_gpu_std, s.util_gpu_min), (0.0, 50))
        s, _ = region("util_gpu", [0, 100], two=True)
        self.assertEqual(s.util_gpu_std, 50.0)
        for values, idle in (([0, 2, 4, 50, 100], True), ([0, 10, 50, 75, 100], False)):
            s, xs = region("util_gpu", values)
            u = [x.util_gpu for x in xs]
            self.assertAlmostEqual(s.idle_pct, 100.0 * sum(v < 5 for v in u) / len(u))
            self.assertAlmostEqual(s.active_pct, 100.0 * sum(v >= 50 for v in u) / len(u))
        s, xs = region("mem_used", [v * MIB for v in (1000, 2000, 3000, 4000, 5000)])
        self.assertAlmostEqual(s.mem_used_mean_mb, sum(x.mem_used_mb for x in xs) / len(xs))
        for values in ([1200, 1400, 1600], [1200, 1600, 1400]):
            s, xs = region("clock_sm", values)
            c = [x.sm_clock_mhz for x in xs]
            self.assertAlmostEqual(s.sm_clock_mean_mhz, sum(c) / len(c))
            self.assertEqual(s.sm_clock_max_mhz, max(c))
        s, xs = region("temp_c", [60, 70, 80])
        self.assertAlmostEqual(s.temp_mean_c, sum(x.temp_c for x in xs) / len(xs))
        s, _ = region("util_gpu", [50], two=True)
        self.assertEqual((s.util_gpu_p5, s.util_gpu_p50, s.util_gpu_p95, s.util_gpu_p99),
                         (50, 50, 50, 50))
        with self.nvml("device 0\nseq 0 util_gpu 99 50\n"):  # one sample counted
            with GpuMonitor(interval_s=TWO, warmup_s=0.05) as mon:
                time.sleep(0.1)  # at least the warmup: the stop sample is after it
        self.assertEqual((mon.summary.n_samples, mon.summary.util_gpu_std), (1, None))
        with GpuMonitor(backend="none") as mon:  # nothing sampled
            pass
        s = mon.summary
        self.assertEqual((s.util_gpu_min, s.util_gpu_std, s.idle_pct, s.active_pct,
                          s.mem_used_mean_mb, s.util_gpu_p5, s.util_gpu_p99), (None,) * 7)

    def test_report(self):
        out = io.StringIO()
        with contextlib.redirect_stdout(out):
            self.assertEqual(gpu_profile(backend="none", repeats=2)(lambda: 3)(), 3)
        self.assertEqual(out.getvalue().count("=== Multi-Run GPU Profile (2 runs) ==="), 1)
        got = []
        r = gp.profile_repeats(lambda: 1, repeats=2, warmup_runs=1, backend="none",
                               report=got.append)
        self.assertEqual(got, [r])
        one = gpu_profile(backend="none", report=False, return_profile=True, repeats=1)(
            lambda: 5)()
        self.assertIsInstance(one, gp.ProfiledResult)

    def test_arguments_and_errors(self):
        for kw, err, text in (({"repeats": 0}, ValueError, "repeats must be >= 1, not 0"),
                              ({"warmup_runs": -1}, ValueError,
                               "warmup_runs must be >= 0, not -1"),
                              ({"repeats": 1.5}, TypeError, "repeats must be an int"),
                              ({"repeats": True}, TypeError, "repeats must be an int")):
            with self.assertRaisesRegex(err, text):
                gpu_profile(backend="none", **kw)
            with self.assertRaisesRegex(err, text):
                gp.profile_repeats(lambda: None, backend="none", **kw)
        calls, work = self.counted()

        def fails_second():
            if len(calls) == 2:
                raise KeyError("run 2")
            return work()

        got = []
        with self.assertRaisesRegex(KeyError, "run 2"):
            gpu_profile(backend="none", repeats=3, report=got.append)(fails_second)()
        self.assertEqual((len(calls), got), (2, []))

    def test_extra_statistics(self):
        with self.nvml("device 0\nseq 0 util_gpu 0 100\nseq 0 mem_used %d %d\n"
                       "seq 0 temp_c 40 60\nseq 0 clock_sm 1000 1800\n" % (MIB, 3 * MIB)):
            mon = self.two()
        s, xs = mon.summary, mon.samples
        self.assertEqual([x.util_gpu for x in xs], [0, 100])
        mem_mean = sum(x.mem_used_bytes for x in xs) / 2.0  # the fake's mem reads vary
        self.assertEqual((s.util_gpu_min, s.util_gpu_p5, s.util_gpu_p99, s.util_gpu_std),
                         (0, 0, 100, 50.0))  # population std of one region's readings
        self.assertEqual((s.util_gpu_idle_pct, s.util_gpu_active_pct), (50.0, 50.0))
        self.assertEqual((s.idle_pct, s.active_pct), (50.0, 50.0))  # 0.3's names
        self.assertEqual((s.mem_used_mean_bytes, s.mem_used_mean_mb), (mem_mean, mem_mean / MIB))
        self.assertEqual((s.temp_mean_c, s.clock_sm_max_mhz, s.sm_clock_max_mhz),
                         (sum(x.temp_c for x in xs) / 2.0, max(x.clock_sm_mhz for x in xs),
                          max(x.clock_sm_mhz for x in xs)))
        self.assertEqual(s.sm_clock_mean_mhz, s.clock_sm_mean_mhz)
        self.assertEqual(json.loads(json.dumps(s.__dict__))["idle_pct"], 50.0)
        text = s.format()
        for line in ("  util.gpu spread: min 0.0% | p5 0.0% | p99 100.0% | std 50.0%",
                     "  util.gpu idle (<5%) 50.0% | active (≥50%) 50.0%",
                     "  memory: mean used %.0f MB" % (mem_mean / MIB),
                     "  temp: mean %.0f °C" % s.temp_mean_c):
            self.assertIn(line + "\n", text)
        self.assertEqual(text.count("clocks"), 1)  # the C rendering's line only
        self.assertIn("active (>=50%)", s.format(ascii=True))
        none = GpuMonitor(backend="none", strict=False)
        with none:
            pass
        n = none.summary
        self.assertEqual((n.util_gpu_std, n.util_gpu_min, n.idle_pct, n.mem_used_mean_mb,
                          n.temp_mean_c, n.sm_clock_max_mhz), (None,) * 6)
        hand = GpuSummary(idle_pct=5.0, mem_used_mean_mb=1.0, sm_clock_max_mhz=900.0)
        self.assertEqual((hand.util_gpu_idle_pct, hand.mem_used_mean_bytes,
                          hand.clock_sm_max_mhz), (5.0, MIB, 900.0))
        hand = GpuSummary(util_gpu_std=15.3, util_gpu_p99=97.0, temp_mean_c=68.0,
                          energy_j=1800.0, sm_clock_mean_mhz=1400.0, sm_clock_max_mhz=1600.0)
        self.assertEqual(hand.format().splitlines()[-4:], [
            "  util.gpu spread: min n/a | p5 n/a | p99 97.0% | std 15.3%",
            "  temp: mean 68 °C", "  energy: 1800.0 J",
            "  clocks: SM mean 1400 MHz (max 1600 MHz)"])


if __name__ == "__main__":
    unittest.main()
