"""gpufl.analyzer: one recorded session, section by section (seed 002).

    from gpufl.analyzer import GpuFlightSession
    session = GpuFlightSession(log_dir, log_prefix="my_app", session_id=None)
    session.print_summary()
    session.inspect_hotspots(top_n=5)

The figures are the C report's (docs/report.md), read from the logs each
time a section is printed.  The session is pinned at construction: a newer
session appearing in log_dir later does not change what is shown.
`report` is the whole report as a dict (JSON schema gpu-profile.report).

Not in this release: the seed's pandas DataFrame attributes (kernels,
memcpy, scopes, scope_events, device_metrics, host_metrics, perf); they
raise NotImplementedError naming the alternatives.
"""

import sys
from typing import Optional

from . import _report_c as _c
from .report import TextReport

__all__ = ["GpuFlightSession"]

_DATAFRAMES = ("kernels", "memcpy", "scopes", "scope_events", "device_metrics",
               "host_metrics", "perf")


class GpuFlightSession:
    """A session read from log_dir (see gpufl.report.generate_report for
    log_dir, log_prefix and session_id)."""

    def __init__(self, log_dir=None, log_prefix: Optional[str] = None,
                 session_id: Optional[str] = None, top_n: int = 10):
        self.log_dir = _c.resolve_log_dir(log_dir)
        self.log_prefix = log_prefix
        self.top_n = top_n
        self.report = _c.render_json(self.log_dir, log_prefix, session_id, top_n)
        sess = self.report.get("session") or {}
        # Pinned: later reads name this session explicitly.
        self.session_id = sess.get("session_id") or session_id
        self.app = sess.get("app")

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

    def inspect_hotspots(self, top_n: int = 5, file=None) -> None:
        """The top_n kernels by total GPU time."""
        self._print(_c.SECTION_HOTSPOTS, top_n=top_n, file=file)

    def inspect_stalls(self, file=None) -> None:
        """PC-sampling stall reasons and the functions with most samples."""
        self._print(_c.SECTION_STALLS, "stalls",
                    "no PC samples in this session: the PcSampling or Deep engine records them",
                    file=file)

    def inspect_profile_samples(self, file=None) -> None:
        """The PC / SASS samples behind the stall distribution."""
        self._print(_c.SECTION_STALLS, "stalls",
                    "no PC or SASS samples in this session: the PcSampling, SassMetrics or "
                    "Deep engine records them", file=file)

    def inspect_perf_metrics(self, file=None) -> None:
        """Hardware counter results (RangeProfiler)."""
        self._print(_c.SECTION_PERF, "perf_metrics",
                    "no hardware counter results in this session: the RangeProfiler engine "
                    "records them", file=file)

    def text_report(self, top_n: Optional[int] = None) -> TextReport:
        return TextReport(self, self.top_n if top_n is None else top_n)

    def __getattr__(self, name):
        if name in _DATAFRAMES:
            raise NotImplementedError(
                "GpuFlightSession.%s (a pandas DataFrame in GPUFlight's analyzer) is not in "
                "this release: use session.report (the aggregated figures), or "
                "`gpu-profile export --format csv` (one row per kernel) / "
                "`--format chrome-trace` (every event)" % name)
        raise AttributeError(name)
