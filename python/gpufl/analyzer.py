"""gpufl.analyzer: one recorded session, section by section (seed 002).

    from gpufl.analyzer import GpuFlightSession
    session = GpuFlightSession(log_dir, log_prefix="my_app", session_id=None)
    session.print_summary()
    session.inspect_hotspots(top_n=5)

The figures are the C report's (docs/report.md), read from the logs each
time a section is printed.  The session is pinned at construction: a newer
session appearing in log_dir later does not change what is shown.
`report` is the whole report as a dict (JSON schema gpu-profile.report).

The seed's DataFrame attributes, with GPUFlight 1.3's analyzer's names and
columns (kernels, memcpy, memset, scopes, scope_events, device_metrics,
host_metrics, perf, pm_samples; ours: scope_spans) are the session's events, read by
gpufl._logs from the same session the report names: built on first access
and kept.  They need pandas, which this package does not depend on:
without it each attribute raises AttributeError (hasattr is False) saying
to install python3-pandas, and the first one warns once (RuntimeWarning);
`session.rows(name)` gives the same table as a list of dicts with the
standard library alone (the DataFrames are built from those rows).
"""

import sys
import warnings
from typing import Optional

from . import _frames, _logs
from . import _report_c as _c
from .report import TextReport
from . import _wire

__all__ = ["GpuFlightSession"]

_pandas_told = False  # the missing-pandas warning is given once per process
_DATAFRAMES = _logs.TABLES  # kernels, memcpy, scopes, scope_events, device_metrics, ...
_JOB_START = _wire.record("job_start")


class GpuFlightSession:
    """A session read from log_dir (see gpufl.report.generate_report for
    log_dir, log_prefix and session_id)."""

    def __init__(self, log_dir=None, session_id: Optional[str] = None,
                 log_prefix: Optional[str] = None, max_stack_depth: int = 5,
                 load_all_rotated: bool = False, *, top_n: int = 10):
        for name, v in (("max_stack_depth", max_stack_depth), ("top_n", top_n)):
            if isinstance(v, bool) or not isinstance(v, int):
                raise TypeError("%s must be an int, not %r" % (name, v))
        if max_stack_depth < 1:
            raise ValueError("max_stack_depth must be at least 1, not %d" % max_stack_depth)
        if not isinstance(load_all_rotated, bool):
            raise TypeError("load_all_rotated must be a bool, not %r" % (load_all_rotated,))
        self.log_dir = _c.resolve_log_dir(log_dir)
        self.log_prefix = log_prefix
        self.top_n = top_n
        self.max_stack_depth = max_stack_depth
        self.load_all_rotated = load_all_rotated
        self.report = _c.render_json(self.log_dir, log_prefix, session_id, top_n)
        sess = self.report.get("session") or {}
        # Pinned: later reads name this session explicitly.
        self.session_id = sess.get("session_id") or session_id
        self.app = self.app_name = sess.get("app")
        # The same session for the rows, located now (an absolute path:
        # the tables are read later, perhaps from another directory).
        self._logs = _logs.SessionLogs.from_report(self.report, load_all_rotated)
        self._static_devices = None
        self._contents = None
        self._loaded = set()  # batch types in _contents
        self._rows = {}
        self._frames = {}
        self._noted = False

    def _render(self, sections=_c.SECTION_ALL, top_n=None):
        return _c.render(self.log_dir, log_prefix=self.log_prefix, session_id=self.session_id,
                         top_n=self.top_n if top_n is None else top_n, sections=sections)

    def _print(self, sections, empty_key=None, empty_msg=None, top_n=None, file=None):
        out = file or sys.stdout
        if empty_key is not None and not self.report.get(empty_key):
            engine = ((self.report.get("capture") or {}).get("selected_engine") or
                      (self.report.get("session") or {}).get("profiling_engine"))
            out.write("%s (this session's engine: %s)\n" % (empty_msg, engine or "unknown"))
            return
        out.write(self._render(sections, top_n))

    def print_summary(self, file=None) -> None:
        """Executive summary: time span, kernels, copies, devices, energy."""
        self._print(_c.SECTION_SUMMARY, file=file)

    def inspect_scopes(self, file=None) -> None:
        """Scope timing: count, total, mean, p50/p99, GPU time inside."""
        self._print(_c.SECTION_SCOPES, file=file)

    def inspect_hotspots(self, top_n: int = 5, max_stack_depth: Optional[int] = None,
                         file=None) -> None:
        """The top_n kernels by total GPU time.  max_stack_depth is
        GPUFlight's (frames of each launch stack shown); the C report
        prints its own stack section, so it is accepted, not used."""
        self._print(_c.SECTION_HOTSPOTS, top_n=top_n, file=file)

    def inspect_stalls(self, file=None) -> None:
        """PC-sampling stall reasons (NVIDIA's names, a meaning each) overall, per
        kernel and per scope, then the hottest PCs and source lines."""
        self._print(_c.SECTION_STALLS, "stalls",
                    "no PC samples in this session: the PcSampling or Deep engine records them",
                    file=file)

    def inspect_profile_samples(self, file=None) -> None:
        """The PC / SASS samples behind the stall distribution: the report's
        stalls section (hot PCs and source lines per kernel with their stall
        mix, SASS metric rows)."""
        self._print(_c.SECTION_STALLS, "stalls",
                    "no PC or SASS samples in this session: the PcSampling, SassMetrics or "
                    "Deep engine records them", file=file)

    def inspect_perf_metrics(self, file=None) -> None:
        """Hardware counter results (RangeProfiler) and PM-sampling timelines
        (PmSampling: per metric, samples, mean, min, max)."""
        self._print(_c.SECTION_PERF, "perf_metrics",
                    "no hardware counter results in this session: the RangeProfiler and "
                    "PmSampling engines record them", file=file)

    def text_report(self, top_n: Optional[int] = None) -> TextReport:
        return TextReport(self, self.top_n if top_n is None else top_n)

    def rows(self, table: str) -> list:
        """One table as a list of dicts, all with the same keys (no pandas
        needed): "kernels", "memcpy", "memset", "scopes" (PC / SASS samples),
        "scope_events" (GPUFlight's: one row per begin / end),
        "scope_spans" (ours: one row per scope instance), "device_metrics",
        "host_metrics", "perf" (counter results), "pm_samples".  Columns:
        docs/python.md.  Read from the logs at the first call, then kept;
        the list is shared, do not modify it."""
        if table not in _DATAFRAMES:
            raise ValueError("no table %r: use one of %s" % (table, ", ".join(_DATAFRAMES)))
        got = self._rows.get(table)
        if got is None:
            self._load((table,))
            got = self._rows[table] = _logs.table_rows(self._contents, table)
        return got

    def _load(self, tables):
        """Reads the batches of these tables not read yet, in one pass (a
        table's rows are kept only when it is asked for: the kernels of a
        long trace need not be held to draw its metrics)."""
        want = set().union(*(_logs.TABLE_BATCHES[t] for t in tables)) - self._loaded
        if not want and self._contents is not None:
            return
        c = self._logs.read(want)
        if self._contents is not None:
            c.batches.update(self._contents.batches)
        else:
            self._note(5)
        self._contents = c
        self._loaded |= want

    def _note(self, stacklevel):
        """GPUFlight's note on the windows a light read leaves out, said
        once per session object (at its first read, of rows or columns)."""
        if self._noted:
            return
        self._noted = True
        if not self.load_all_rotated:
            self._logs.files()  # the light read's choice, and its notes
        if self._logs.notes:
            warnings.warn("GpuFlightSession: " + "; ".join(self._logs.notes), RuntimeWarning,
                          stacklevel=stacklevel)

    @property
    def static_devices(self) -> list:
        """The devices of the session's job_start, as GPUFlight's analyzer
        takes them: gpu_static_devices, else cuda_static_devices followed by
        rocm_static_devices; [] when it has none."""
        if self._static_devices is None:
            self._load(())
            start = self._contents.first(_JOB_START) or {}
            sd = start.get("gpu_static_devices")
            if not isinstance(sd, list) or not sd:
                sd = []
                for key in ("cuda_static_devices", "rocm_static_devices"):
                    v = start.get(key)
                    if isinstance(v, list):
                        sd.extend(v)
            self._static_devices = sd
        return self._static_devices

    @property
    def read_problems(self) -> dict:
        """What the last read of the logs for a table skipped (counters of
        gpufl._logs.SessionLogs.problems); zeros before any table."""
        return dict(self._logs.problems)

    def _frame(self, name):
        try:
            import pandas as pd
        except ImportError:
            # An AttributeError, so hasattr(session, "kernels") is False and
            # getattr(session, "kernels", None) is None; the warning says
            # what to install, once per process.
            msg = ("GpuFlightSession.%s needs pandas (Debian: apt-get install python3-pandas; "
                   "or pip install pandas), which is not importable here; without it, "
                   "session.rows(%r) gives the same table as a list of dicts" % (name, name))
            global _pandas_told
            if not _pandas_told:
                _pandas_told = True
                warnings.warn(msg, RuntimeWarning, stacklevel=3)
            raise AttributeError(msg) from None
        df = self._frames.get(name)
        if df is None:
            # Columns filled by the C library, when it can give this table
            # exactly; else (and for memset, perf, scope_spans) the rows.
            self._note(4)
            df = _frames.frame(pd, self._logs, name)
            if df is None:
                df = _to_frame(pd, self.rows(name), _logs.COLUMNS[name])
            self._frames[name] = df
        return df

    def __getattr__(self, name):
        if name in _DATAFRAMES:
            return self._frame(name)
        raise AttributeError("%r object has no attribute %r" % (type(self).__name__, name))


def _to_frame(pd, rows, columns):
    """A DataFrame of the rows.  Integer columns with missing values become
    pandas' nullable Int64: the default (float64 with NaN) would round
    nanosecond times since the epoch, which need 61 bits."""
    keys = list(rows[0]) if rows else list(columns)
    data = {}
    for k in keys:
        vals = [r[k] for r in rows]
        present = [v for v in vals if v is not None]
        if (present and len(present) < len(vals) and
                all(type(v) is int for v in present)):
            data[k] = pd.array(vals, dtype="Int64")
        else:
            data[k] = vals
    return pd.DataFrame(data, columns=keys)
