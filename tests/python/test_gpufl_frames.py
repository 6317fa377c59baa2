#!/usr/bin/env python3
"""test_gpufl_frames.py - gpufl.analyzer's DataFrames from the C columns
(gpufl._frames over gpufl_columns_read).

Each table the C columns build is compared with the frame the rows give
(gpufl._logs.table_rows through analyzer._to_frame): the same columns,
dtypes, values and order, exactly - on the synthetic session of
test_gpufl.py, on every GPUFlight 1.3 layout, and on sessions generated
here with nulls, reals, extra and missing columns, unknown ids and kernels
out of start order.  Exact values and unknowns (NaN / <NA> / None) are
checked for the synthetic session.  What the columns cannot give exactly
(an integer above INT64_MAX) falls back to the rows, with the same frame.  The frame's columns stay valid
after everything else of the read is gone (they view the C memory).

Needs numpy and pandas: run by a python3 that has both (this one, else
/usr/bin/python3: Debian's python3-pandas); exits 77, saying so, when none
has them.
"""

import gc
import json
import os
import random
import shutil
import subprocess
import sys
import tempfile
import unittest
import warnings

HERE = os.path.dirname(os.path.abspath(__file__))


def _reexec():
    """This file again under a python3 with pandas and numpy (exit 77 when
    there is none)."""
    try:
        import numpy  # noqa: F401
        import pandas  # noqa: F401
        return
    except ImportError:
        pass
    for exe in ("/usr/bin/python3",):
        if exe != sys.executable and os.path.exists(exe) and subprocess.run(
                [exe, "-c", "import numpy, pandas"], stdout=subprocess.DEVNULL,
                stderr=subprocess.DEVNULL).returncode == 0:
            os.execv(exe, [exe] + sys.argv)
    print("SKIP: no python3 here has numpy and pandas (Debian: apt-get install python3-pandas)")
    sys.exit(77)


if __name__ == "__main__":
    _reexec()

sys.path.insert(0, HERE)
import numpy as np  # noqa: E402
import pandas as pd  # noqa: E402

import test_gpufl as T  # noqa: E402
from gpufl import _frames, _logs  # noqa: E402
from gpufl.analyzer import GpuFlightSession, _to_frame  # noqa: E402

SID = T.SYN_SID


def rows_frame(s, table):
    return _to_frame(pd, s.rows(table), _logs.COLUMNS[table])


class Base(unittest.TestCase):
    def setUp(self):
        self.tmp = tempfile.mkdtemp(prefix="gpufl-frames-")
        self.addCleanup(shutil.rmtree, self.tmp, True)

    def same(self, s, table, columns=True):
        """The C columns' frame of table, checked equal to the rows'."""
        got = _frames.frame(pd, s._logs, table)
        if columns:
            self.assertIsNotNone(got, table)
        want = rows_frame(s, table)
        if got is not None:
            pd.testing.assert_frame_equal(got, want, check_exact=True, obj=table)
        return got


class SyntheticTest(Base):
    def setUp(self):
        super().setUp()
        T.write_synthetic_session(self.tmp)
        self.s = GpuFlightSession(self.tmp, load_all_rotated=True)

    def test_every_table_as_the_rows(self):
        for t in _frames.TABLES:
            with self.subTest(table=t):
                self.same(self.s, t)

    def test_kernels_exact(self):
        k = _frames.frame(pd, self.s._logs, "kernels")
        self.assertEqual(list(k.columns), list(_logs.COLUMNS["kernels"]))
        self.assertEqual(k["start_ns"].tolist(),
                         [T.SYN_T0 + 1 * T.MS, T.SYN_T0 + 1 * T.MS + 5000,
                          T.SYN_T0 + 1 * T.MS + 9000])
        self.assertEqual(str(k["start_ns"].dtype), "int64")
        self.assertEqual(k["duration_ms"].tolist(), [0.001, 0.002, 0.0015])
        self.assertEqual(k["name"].tolist(), ["k_a(float*)", "k_b(int)", "k_a(float*)"])
        # kernel 1's detail (corr 21) stays in force for its third launch
        self.assertEqual(k["grid"].tolist(), ["(8,1,1)", "(1,1,1)", "(8,1,1)"])
        self.assertEqual(k["user_scope"].tolist(), ["train", "train|step", "train"])
        self.assertEqual(k["has_details"].tolist(), [True, True, False])
        self.assertEqual(str(k["has_details"].dtype), "bool")
        # unknown: None in an object column (the batch has no device_id;
        # the details' const_bytes and stack_trace are null), never 0
        for c in ("device_id", "const_bytes", "stack_trace"):
            self.assertEqual(k[c].tolist(), [None] * 3, c)
            self.assertEqual(k[c].dtype, object, c)
        self.assertEqual(k["session_id"].tolist(), [SID] * 3)
        row = {c: (None if v is None or (isinstance(v, float) and np.isnan(v)) else v)
               for c, v in k.iloc[0].items()}
        self.assertEqual(row, T.SYN_KERNEL_0)

    def test_unknowns(self):
        d = _frames.frame(pd, self.s._logs, "device_metrics")
        # gpu_util has one null: nullable Int64, <NA> there (not 0)
        self.assertEqual(str(d["gpu_util"].dtype), "Int64")
        self.assertEqual([None if v is pd.NA else v for v in d["gpu_util"]],
                         [0, 20, 100, None, 50])
        self.assertEqual(d["used_mib"].tolist(), [None] * 5)
        self.assertEqual(d["power_mw"].isna().tolist(), [False, False, False, True, False])
        h = _frames.frame(pd, self.s._logs, "host_metrics")
        self.assertEqual(h["cpu_pct"].tolist(), [12.5, 50.0])
        e = _frames.frame(pd, self.s._logs, "scope_events")
        self.assertEqual(e["name"].tolist(), ["train", "step", "step", "train", "step"])
        self.assertEqual(e["event_type"].tolist(), [0, 0, 1, 1, 0])
        m = _frames.frame(pd, self.s._logs, "memcpy")
        self.assertEqual(m["kind"].tolist(), ["HtoD", "DtoH"])
        self.assertEqual(m["throughput_gbps"].tolist(), [4096 / 400, 2048 / 300])
        # no rows: the table's columns, as the rows give them
        p = _frames.frame(pd, self.s._logs, "pm_samples")
        self.assertEqual((len(p), list(p.columns)), (0, list(_logs.COLUMNS["pm_samples"])))

    def test_analyzer_uses_columns_and_counts(self):
        calls = []
        real = _frames.frame

        def spy(pd_, logs, table):
            got = real(pd_, logs, table)
            calls.append((table, got is not None))
            return got
        s = GpuFlightSession(self.tmp, load_all_rotated=True)
        _frames.frame, saved = spy, _frames.frame
        try:
            k = s.kernels
        finally:
            _frames.frame = saved
        self.assertEqual(calls, [("kernels", True)])
        self.assertIs(s.kernels, k)  # built once
        p = s.read_problems
        self.assertEqual((p["files"], p["bad_lines"], p["other_session_records"],
                          p["gz_errors"]), (4, 1, 1, 0))
        pd.testing.assert_frame_equal(k, rows_frame(s, "kernels"), check_exact=True)

    def test_light_read(self):
        # load_all_rotated=False with two system windows: GPUFlight's light
        # read, one file per channel (system.log, not system.1.log.gz), the
        # C reader's too; its note said once, at the first frame.
        with warnings.catch_warnings(record=True) as told:
            warnings.simplefilter("always")
            s = GpuFlightSession(self.tmp)
            d = s.device_metrics
            self.assertEqual(len(d), 2)  # system.log's two rows only
            self.assertEqual(s.read_problems["files"], 3)
            self.same(s, "device_metrics")
            s.kernels
        self.assertEqual([str(w.message) for w in told],
                         ["GpuFlightSession: 2 system log windows found; read only system.log: "
                          "pass load_all_rotated=True to read them all"])
        self.assertEqual(told[0].filename, __file__)

    def test_columns_outlive_the_read(self):
        k = _frames.frame(pd, self.s._logs, "kernels")
        col = k["corr_id"]
        del k
        gc.collect()
        junk = [np.full(1 << 16, 7, np.int64) for _ in range(64)]  # reuse freed memory
        self.assertEqual(col.tolist(), [21, 22, 23])
        del junk


class LayoutsTest(Base):
    def test_every_layout(self):
        for layout in T.GL_LAYOUTS:
            with self.subTest(layout=layout):
                s = GpuFlightSession(T.gl_build(layout, os.path.join(self.tmp, layout)))
                for t in _frames.TABLES:
                    self.same(s, t)


def _gen_session(base, seed, n_batches=40):
    """A session of batches with nulls, reals, extra and missing columns,
    unknown ids and rows out of start order; returns its directory."""
    rnd = random.Random(seed)
    sid = "eeeeeeee-%04d-4222-8333-444444444444" % seed
    d = os.path.join(base, sid)
    os.makedirs(d)
    t0 = 1760000000000000000

    def rec(type_, **kw):
        r = {"version": 1, "type": type_, "session_id": sid}
        r.update(kw)
        return json.dumps(r, separators=(",", ":")) + "\n"

    def cell(kind):
        x = rnd.random()
        if x < 0.15:
            return None
        if kind == "real" and x < 0.4:
            return rnd.randint(0, 10 ** 6) / 7.0
        return rnd.randint(0, 10 ** 6)

    out = [rec("job_start", app="gen", pid=1, ts_ns=t0),
           rec("dictionary_update", kernel_dict={str(i): "k%d" % i for i in range(1, 6)},
               scope_name_dict={str(i): "s%d" % i for i in range(1, 4)},
               metric_dict={"1": "smsp__a", "2": "smsp__b"},
               function_dict={"1": "f"}, source_file_dict={"1": "a.cu"})]
    tables = {
        "kernel_event_batch": ["kernel_id", "stream_id", "duration_ns", "corr_id", "has_details",
                               "num_regs", "dyn_shared", "device_id"],
        "memcpy_event_batch": ["stream_id", "duration_ns", "bytes", "copy_kind", "corr_id"],
        "scope_event_batch": ["scope_instance_id", "name_id", "event_type", "depth", "tid"],
        "device_metric_batch": ["device_id", "gpu_util", "power_mw", "temp_c"],
        "host_metric_batch": ["cpu_pct_x100", "ram_used_mib"],
        "pm_sample_batch": ["sample_index", "device_id", "metric_id", "value",
                            "scope_name_id"],
        "profile_sample_batch": ["device_id", "function_id", "pc_offset", "metric_id",
                                 "metric_value", "stall_reason", "sample_kind",
                                 "scope_name_id", "source_file_id", "source_line"],
    }
    ids = {"kernel_id": 7, "name_id": 4, "metric_id": 3, "scope_name_id": 4,
           "function_id": 2, "source_file_id": 2, "copy_kind": 11, "stall_reason": 14,
           "sample_kind": 3, "has_details": 2, "event_type": 2}
    reals = {"value", "metric_value", "gpu_util"}
    for b in range(n_batches):
        t = rnd.choice(sorted(tables))
        cols = [c for c in tables[t] if rnd.random() > 0.1]
        if rnd.random() < 0.2:
            cols.append("extra_%d" % rnd.randint(0, 2))
        rows = []
        for _ in range(rnd.randint(0, 30)):
            row = [rnd.randint(-5000, 5000) if rnd.random() > 0.05 else None]
            for c in cols:
                if c in ids:
                    row.append(None if rnd.random() < 0.1 else rnd.randint(0, ids[c] - 1))
                else:
                    row.append(cell("real" if c in reals else "int"))
            rows.append(row)
            corr = row[cols.index("corr_id") + 1] if "corr_id" in cols else None
            if t == "kernel_event_batch" and corr is not None and rnd.random() < 0.2:
                out.append(rec("kernel_detail", corr_id=corr,
                               grid=rnd.choice(["(1,1,1)", "(2,1,1)", None]),
                               occupancy=rnd.choice([0.5, 1, None]),
                               max_active_blocks=rnd.choice([4, None]),
                               user_scope=rnd.choice(["a|b", ""])))
        out.append(rec(t, batch_id=b, base_time_ns=t0 + rnd.randint(0, 10 ** 9),
                       columns=["dt_ns"] + cols, rows=rows))
    out.append(rec("shutdown", ts_ns=t0 + 10 ** 10))
    with open(os.path.join(d, "device.log"), "w") as f:
        f.write("".join(out))
    return d


class GeneratedTest(Base):
    def test_generated_sessions(self):
        for seed in range(12):
            d = _gen_session(self.tmp, seed)
            s = GpuFlightSession(d)
            for t in _frames.TABLES:
                with self.subTest(seed=seed, table=t):
                    # a real where the rows do arithmetic may send a table
                    # back to the rows; the frame is the rows' either way
                    self.same(s, t, columns=False)
                    pd.testing.assert_frame_equal(getattr(s, t), rows_frame(s, t),
                                                  check_exact=True)

    def test_columns_used(self):
        # these sessions have reals only where no arithmetic is done: every
        # table comes from the columns
        built = 0
        for seed in range(6):
            s = GpuFlightSession(_gen_session(self.tmp, 100 + seed))
            built += sum(_frames.frame(pd, s._logs, t) is not None for t in _frames.TABLES)
        self.assertEqual(built, 6 * len(_frames.TABLES))

    def test_uint_falls_back(self):
        d = os.path.join(self.tmp, SID)
        os.makedirs(d)
        with open(os.path.join(d, "device.log"), "w") as f:
            f.write(json.dumps({"type": "memcpy_event_batch", "version": 1, "session_id": SID,
                                "base_time_ns": 1, "columns": ["dt_ns", "bytes"],
                                "rows": [[0, 2 ** 64 - 1], [1, 5]]}) + "\n")
        s = GpuFlightSession(d)
        self.assertIsNone(_frames.frame(pd, s._logs, "memcpy"))
        self.assertEqual(s.memcpy["bytes"].tolist(), [2 ** 64 - 1, 5])


if __name__ == "__main__":
    unittest.main()
