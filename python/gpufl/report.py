"""gpufl.report: the text report of a recorded session (seed 002's Report).

    from gpufl.report import generate_report, TextReport
    text = generate_report(log_dir, log_prefix="my_app", top_n=10, output_path=None)
    page = generate_report(log_dir, format="html", output_path="report.html")

The report is the C library's (`gpu-profile report`): executive summary,
scopes, kernel hotspots, copies, device and host metrics, stalls and perf
metrics when recorded, what was captured and what could not be read.
"""

import os
import sys
from typing import Optional

from ._report_c import FORMATS, ReportError, render

__all__ = ["generate_report", "TextReport", "ReportError"]


def _write(path, text):
    with open(os.fspath(path), "w", encoding="utf-8") as f:
        f.write(text)


def generate_report(log_dir=None, log_prefix: Optional[str] = None, top_n: int = 10,
                    output_path=None, session_id: Optional[str] = None,
                    format: str = "text") -> str:
    """The report of the session under log_dir, as a string.

    log_dir: a log directory (gpufl.init's log_path), a session directory,
    or a flat-layout prefix; None: the session this process recorded last.
    log_prefix: the app name (or flat file prefix) whose session to pick.
    session_id: a particular session (default: the latest).  top_n:
    kernels in the hotspots.  output_path: also write the report there.
    format: "text", "json" (the JSON report's text) or "html" (one
    self-contained page, `gpu-profile report --format html`).
    Raises ReportError (with the C library's message) when no session can
    be read, ValueError for another format.
    """
    if format not in FORMATS:
        raise ValueError("format %r: use one of %s" % (format, ", ".join(sorted(FORMATS))))
    text = render(log_dir, log_prefix=log_prefix, session_id=session_id, top_n=top_n,
                  fmt=FORMATS[format])
    if output_path is not None:
        _write(output_path, text)
    return text


class TextReport:
    """The report of a GpuFlightSession: print(), save(path), generate()."""

    def __init__(self, session, top_n: int = 10):
        self.session = session
        self.top_n = top_n

    def generate(self) -> str:
        return self.session._render(top_n=self.top_n)

    def print(self, file=None) -> None:
        (file or sys.stdout).write(self.generate())

    def save(self, path) -> None:
        _write(path, self.generate())
