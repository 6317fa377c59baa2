"""Per-process attribution in the gpu_profile Python package (the `pids` /
`pid_tree` keywords, GpuSummary.process, GpuSample.process) against the fake
NVML's process lists (tests/scenarios/nvml_procs.txt; docs/test-doubles.md).
The exact values are those tests/sampler/test_nvml_procs.c checks in C.

CTest runs it with the environment of test_python_gpu_profile.  By hand,
from the build folder:

    GP_TEST_SOURCE_DIR=../tests LD_LIBRARY_PATH=tests/fake-nvml \\
    GPU_PROFILE_LIBRARY=$PWD/libgpuprofile.so.0 PYTHONPATH=../python \\
    python3 -m unittest -v ../tests/python/test_gpu_profile_procs.py
"""

import os
import subprocess
import sys
import tempfile
import time
import unittest

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)

from test_gpu_profile import env, scenario  # noqa: E402

import gpu_profile as gp  # noqa: E402
from gpu_profile import GpuMonitor, gpu_profile  # noqa: E402

GIB = 1 << 30
MIB = 1 << 20
OURS = [4000001, 4000002]  # in nvml_procs.txt; never looked up in /proc without pid_tree
# A long interval: a region is its first and last round, two samples.
ONCE = 100.0


def region(device, pids=OURS, **kw):
    with env(FAKE_NVML_SCENARIO=scenario("nvml_procs.txt")):
        with GpuMonitor(device=device, backend="nvml", interval_s=ONCE, keep_samples=True,
                        pids=pids, **kw) as mon:
            pass
    return mon


class ProcessTest(unittest.TestCase):
    def test_ours_beside_a_foreign_process(self):
        mon = region(0)
        self.assertEqual([x.process for x in mon.samples], [
            {"count": 2, "all_count": 3, "mem_used_bytes": GIB + 512 * MIB,
             "all_mem_used_bytes": 5 * GIB + 512 * MIB, "sm_pct": 35, "mem_pct": 11,
             "all_sm_pct": 75, "all_mem_pct": 41},
            {"count": 2, "all_count": 3, "mem_used_bytes": 2 * GIB + 512 * MIB,
             "all_mem_used_bytes": 6 * GIB + 512 * MIB, "sm_pct": 55, "mem_pct": 21,
             "all_sm_pct": 95, "all_mem_pct": 51},
        ])
        s = mon.summary
        self.assertEqual(s.sample_count, 2)
        self.assertEqual(s.process, {
            "count_max": 2, "mem_used_mean_bytes": 2.0 * GIB,
            "mem_used_max_bytes": 2 * GIB + 512 * MIB,
            "all_mem_used_max_bytes": 6 * GIB + 512 * MIB,
            "sm_mean_pct": 45.0, "sm_max_pct": 55, "mem_mean_pct": 16.0, "mem_max_pct": 21,
            "all_sm_mean_pct": 85.0})
        # format() is the C text summary, process lines included.
        text = s.format(ascii=True)
        self.assertIn("\n  process memory    max 2.50 GiB of 1.00 GiB used (2 processes)\n", text)
        self.assertIn("\n  process util      SM 45.0% of 85.0% | mem 16.0% of 45.0% (means)\n",
                      text)
        self.assertIn(',"process":{"count_max":2,"mem_used_mean_bytes":2147483648,'
                      '"mem_used_max_bytes":2684354560,"all_mem_used_max_bytes":6979321856,'
                      '"sm_mean_pct":45,"sm_max_pct":55,"mem_mean_pct":16,"mem_max_pct":21,'
                      '"all_sm_mean_pct":85}', s.to_json())

    def test_none_of_ours(self):
        # Device 1 runs only the foreign process: ours are 0, and known to be.
        mon = region(1)
        self.assertEqual(mon.samples[0].process, {
            "count": 0, "all_count": 1, "mem_used_bytes": 0, "all_mem_used_bytes": MIB,
            "sm_pct": 0, "mem_pct": 0, "all_sm_pct": 7, "all_mem_pct": 3})
        self.assertEqual(mon.summary.process, {
            "count_max": 0, "mem_used_mean_bytes": 0.0, "mem_used_max_bytes": 0,
            "all_mem_used_max_bytes": MIB, "sm_mean_pct": 0.0, "sm_max_pct": 0,
            "mem_mean_pct": 0.0, "mem_max_pct": 0, "all_sm_mean_pct": 7.0})

    def test_not_supported_is_none(self):
        # Device 2 answers NOT_SUPPORTED to both process calls.
        mon = region(2)
        self.assertEqual([x.process for x in mon.samples], [None, None])
        self.assertIsNotNone(mon.samples[0].util_gpu)  # the device's own metrics still read
        self.assertEqual(mon.summary.process, dict.fromkeys(
            ("count_max", "mem_used_mean_bytes", "mem_used_max_bytes", "all_mem_used_max_bytes",
             "sm_mean_pct", "sm_max_pct", "mem_mean_pct", "mem_max_pct", "all_sm_mean_pct")))
        self.assertIn("\n  process memory    n/a\n  process util      n/a\n",
                      mon.summary.format())
        self.assertIn('"process":{"count_max":null,', mon.summary.to_json())

    def test_memory_nvml_cannot_tell(self):
        # Device 3: memory NVML_VALUE_NOT_AVAILABLE, utilisation read.
        mon = region(3)
        self.assertEqual(mon.samples[0].process, {
            "count": None, "all_count": None, "mem_used_bytes": None,
            "all_mem_used_bytes": None, "sm_pct": 12, "mem_pct": 6, "all_sm_pct": 12,
            "all_mem_pct": 6})
        self.assertIsNone(mon.summary.process["mem_used_max_bytes"])
        self.assertEqual(mon.summary.process["sm_max_pct"], 12)

    def test_no_pids_no_process(self):
        mon = region(0, pids=None)
        self.assertIsNone(mon.summary.process)
        self.assertEqual([x.process for x in mon.samples], [None, None])
        self.assertNotIn("process", mon.summary.format())
        self.assertNotIn('"process"', mon.summary.to_json())

    def test_decorator(self):
        @gpu_profile(device=0, backend="nvml", interval_s=ONCE, report=False,
                     return_profile=True, pids=tuple(OURS))
        def work():
            return 7

        with env(FAKE_NVML_SCENARIO=scenario("nvml_procs.txt")):
            r = work()
        self.assertEqual(r.value, 7)
        self.assertEqual(r.gpu.process["count_max"], 2)
        self.assertEqual(r.gpu.process["sm_max_pct"], 55)
        self.assertEqual(r.gpu.process["all_sm_mean_pct"], 85.0)

    def test_pid_tree_counts_a_child(self):
        # The fake lists the PID a child writes to a file beside PID 1; with
        # pid_tree our own PID covers the child, without it nothing is ours.
        with tempfile.TemporaryDirectory() as d:
            pid_file = os.path.join(d, "child.pid")
            scen = os.path.join(d, "procs.txt")
            with open(scen, "w") as f:
                f.write("device 0\nproc 0 file:%s mem 2147483648 sm 40 memutil 15\n"
                        "proc 0 1 mem 1073741824 sm 10 memutil 5\n" % pid_file)
            child = subprocess.Popen(["sh", "-c", "echo $$ > %s; exec sleep 30" % pid_file])
            try:
                deadline = time.monotonic() + 10
                while not (os.path.exists(pid_file) and os.path.getsize(pid_file)):
                    self.assertLess(time.monotonic(), deadline, "the child wrote no PID")
                    time.sleep(0.01)
                mons = []
                for tree in (True, False):
                    with env(FAKE_NVML_SCENARIO=scen):
                        with GpuMonitor(backend="nvml", interval_s=ONCE, keep_samples=True,
                                        pids=os.getpid(), pid_tree=tree) as mon:
                            pass
                    mons.append(mon)
            finally:
                child.kill()
                child.wait()
        tree, flat = mons
        self.assertEqual(tree.samples[0].process, {
            "count": 1, "all_count": 2, "mem_used_bytes": 2 * GIB,
            "all_mem_used_bytes": 3 * GIB, "sm_pct": 40, "mem_pct": 15, "all_sm_pct": 50,
            "all_mem_pct": 20})
        self.assertEqual(tree.summary.process["count_max"], 1)
        self.assertEqual(flat.samples[0].process["count"], 0)
        self.assertEqual(flat.samples[0].process["all_count"], 2)
        self.assertEqual(flat.summary.process["mem_used_max_bytes"], 0)


class PidsArgumentTest(unittest.TestCase):
    def check(self, exc, regex, **kw):
        with self.assertRaisesRegex(exc, regex):
            GpuMonitor(backend="none", **kw)
        with self.assertRaisesRegex(exc, regex):
            gpu_profile(backend="none", **kw)

    def test_bad_pids(self):
        self.check(TypeError, r"^pids must be None, a PID \(int\) or a list of PIDs, not '4'$",
                   pids="4")
        self.check(TypeError, r"^pids must be None, a PID", pids=True)
        self.check(TypeError, r"^pids must hold ints \(process ids as os.getpid\(\) gives\), "
                   r"not 1.5$", pids=[1.5])
        self.check(TypeError, r"^pids must hold ints", pids=[1, False])
        self.check(ValueError, r"^pids: -3 is not a process id: PIDs are 1 to 2147483647$",
                   pids=-3)
        self.check(ValueError, r"^pids: 0 is not a process id", pids=[1, 0])
        self.check(ValueError, r"^pids: 2147483648 is not a process id", pids=[1 << 31])
        self.check(ValueError, r"^pids is empty: pass None", pids=[])
        self.check(ValueError, r"^pids: 257 processes is too many: at most 256; ",
                   pids=list(range(1, 258)))
        self.check(ValueError, r"^pid_tree=True needs pids", pid_tree=True)

    def test_good_pids(self):
        self.assertEqual(gp.GP_PROC_PIDS_MAX, 256)
        for pids in (os.getpid(), [os.getpid()], (1, 2), list(range(1, 257))):
            mon = GpuMonitor(backend="none", pids=pids, pid_tree=True)
            n = 1 if isinstance(pids, int) else len(pids)
            self.assertEqual((mon._opts.n_pids, mon._opts.pid_tree), (n, 1))
        mon = GpuMonitor(backend="none")
        self.assertEqual((mon._opts.n_pids, mon._opts.pid_tree), (0, 0))


if __name__ == "__main__":
    unittest.main()
