"""gpufl.viz: a recorded session drawn in the terminal (seed 002's
Visualization), with the standard library only (no matplotlib).

    import gpufl.viz as viz
    viz.init("./logs/*.log")
    viz.show()

What it promises:

- init(pattern_or_path, log_prefix=None, session_id=None) finds sessions:
  a glob pattern (or a plain path) whose matches are grouped into sessions -
  flat-layout files `<prefix>.<channel>[.<N>].log[.gz]` are one session per
  prefix, channel files of a session directory (`device.log`,
  `scope.3.log.gz`, `system.2.log`, `.tmp/device.log`) that directory, a
  directory a session directory or a log directory (its latest session, or
  session_id's).  Each is read through the analyzer
  (gpufl.analyzer.GpuFlightSession: the C library locates it, gpufl._logs
  reads its rows).  Nothing matching, or nothing readable, is a
  FileNotFoundError naming the pattern.
- show(file=None, width=None) prints, per session: a header (app, session
  id, start in UTC, duration), a time axis, a util.gpu row per device, rows
  for memory used (% of the total, "mem used %") and power when recorded, host CPU %, one row per scope
  name (the 10 with most total time; '█' where an instance of it is open),
  and a one-line legend.  Metric rows are sparklines over the session's
  time span cut into equal columns, each column the mean of the samples in
  it; a column with no sample is blank - a missing value is never drawn as
  0.  width: the whole line's width (None: the terminal's, 100 when output
  is not a terminal).  render(width=None) returns the same text.  A str
  or path as show's file names sessions: show("train") is init("train")
  then show().
"""

import datetime
import glob
import os
import re
import shutil
import sys
import warnings

from . import _wire
from ._report_c import ReportError

__all__ = ["init", "show", "render", "sessions"]

LABEL_W = 16     # the row names
NOTE_W = 20      # room kept right of the chart for a row's figures
MIN_CELLS = 10
TOP_SCOPES = 10
BLOCKS = "▁▂▃▄▅▆▇█"  # 0 is the lowest block, not a blank: blank means no sample
OPEN = "█"

# A channel file's name (src/reader/layout.c): <channel>[.<N>].log[.gz] in a
# session directory (or its .tmp/), <prefix>.<channel>[.<N>].log[.gz] flat.
_TAIL = r"(?:%s)(?:\.[0-9]+)?\.log(?:\.gz)?" % "|".join(_wire.CHANNELS)
_FLAT = re.compile(r"^(.+?)\.%s$" % _TAIL)
_CHANNEL = re.compile(r"^%s$" % _TAIL)

_sessions = []


def init(pattern_or_path, log_prefix=None, session_id=None):
    """Load the sessions that pattern_or_path names (see the module doc);
    they replace any loaded before.  log_prefix and session_id narrow each
    location as in GpuFlightSession."""
    from .analyzer import GpuFlightSession  # here: the analyzer imports no viz

    pattern = os.fspath(pattern_or_path)
    if not isinstance(pattern, str):
        raise TypeError("init() takes a str or path, not %r" % (pattern_or_path,))
    locations = _locations(pattern)
    loaded, errors, seen = [], [], set()
    for loc in locations:
        try:
            s = GpuFlightSession(loc, log_prefix=log_prefix, session_id=session_id,
                                 load_all_rotated=True)
        except ReportError as e:
            errors.append(e.message)
            continue
        key = (s._logs.where, s.session_id)
        if key not in seen:
            seen.add(key)
            loaded.append(s)
    if not loaded:
        what = ("nothing matches it" if not locations else
                "no session could be read: " + "; ".join(errors))
        raise FileNotFoundError(
            "gpufl.viz.init(%r): %s (looked for flat-layout <prefix>.<channel>.log files, "
            "session directories and log directories)" % (pattern, what))
    for msg in errors:
        warnings.warn("gpufl.viz.init: skipped: %s" % msg, RuntimeWarning, stacklevel=2)
    _sessions[:] = loaded


def _locations(pattern):
    """The session locations a pattern's matches stand for, in match order."""
    matches = sorted(glob.glob(pattern))
    if not matches and not glob.has_magic(pattern):
        # A flat prefix ("logs/my_app") or a log_path ending in .log: the C
        # reader knows them though no file has that exact name.
        return [pattern]
    out = []
    for m in matches:
        if os.path.isdir(m):
            loc = m
        else:
            d, base = os.path.split(m)
            flat = _FLAT.match(base)
            if _CHANNEL.match(base):
                # .tmp/<channel>.log: a live or crashed session's directory
                loc = (os.path.dirname(d) if os.path.basename(d) == ".tmp" else d) or "."
            elif flat:
                loc = os.path.join(d, flat.group(1))
            else:
                continue  # not a channel file: another program's log
        if loc not in out:
            out.append(loc)
    return out


def sessions():
    """The GpuFlightSession objects init() loaded."""
    return list(_sessions)


def show(file=None, width=None):
    """Print render(width) to file (default: standard output).  A str or
    path instead of a stream names the sessions to show: show("train") is
    init("train") then show()."""
    if isinstance(file, (str, os.PathLike)):
        init(file)
        file = None
    elif file is not None and not callable(getattr(file, "write", None)):
        raise TypeError("show(file=...) takes a writable text stream (sys.stdout, an open "
                        "file) or the sessions to show as a str or path, not %r" % (file,))
    (file or sys.stdout).write(render(width))


def render(width=None):
    """The text show() prints."""
    if not _sessions:
        raise RuntimeError("gpufl.viz: no session loaded: call gpufl.viz.init(pattern) first")
    if width is None:
        width = shutil.get_terminal_size((100, 24)).columns
    if isinstance(width, bool) or not isinstance(width, int):
        raise TypeError("width must be an int, not %r" % (width,))
    cells = max(MIN_CELLS, width - LABEL_W - 2 - NOTE_W)
    return "\n".join(_render_session(s, cells) for s in _sessions)


# ------------------------------------------------------------- rendering

def _fmt_ns(ns):
    if ns == 0:
        return "0"
    for unit, scale in (("s", 10**9), ("ms", 10**6), ("us", 10**3)):
        if abs(ns) >= scale:
            return "%.4g %s" % (ns / scale, unit)
    return "%d ns" % ns


def _fmt_num(v):
    return "%.3g" % v


def _utc(ns):
    t = datetime.datetime(1970, 1, 1) + datetime.timedelta(microseconds=ns // 1000)
    return t.strftime("%Y-%m-%d %H:%M:%S.%f")[:-3] + " UTC"


class _Span:
    """The session's time span cut into `cells` equal columns."""

    def __init__(self, t0, t1, cells):
        self.t0, self.t1, self.cells = t0, max(t1, t0 + 1), cells
        self.span = self.t1 - self.t0

    def cell(self, ts):
        """The column of a time, None outside the span."""
        if ts is None or ts < self.t0 or ts > self.t1:
            return None
        return min(self.cells - 1, (ts - self.t0) * self.cells // self.span)


def _spark(span, samples, vmax):
    """samples: [(ts, value)]; a column is the mean of its samples, scaled
    to 0..vmax; no sample: blank."""
    sums = [0.0] * span.cells
    counts = [0] * span.cells
    for ts, v in samples:
        i = span.cell(ts)
        if i is not None and v is not None:
            sums[i] += v
            counts[i] += 1
    out = []
    for s, n in zip(sums, counts):
        if not n:
            out.append(" ")
            continue
        frac = min(1.0, max(0.0, (s / n) / vmax)) if vmax > 0 else 0.0
        out.append(BLOCKS[int(frac * (len(BLOCKS) - 1) + 0.5)])
    return "".join(out)


def _row(label, chart, note=""):
    if len(label) > LABEL_W:
        label = label[:LABEL_W - 1] + "…"
    return ("%-*s|%s|%s" % (LABEL_W, label, chart, note)).rstrip()


def _axis(span):
    """Tick labels at 0, 1/4 ... 1 of the span; the ends first, then the
    middle, then the quarters, each only where it fits beside the others."""
    n = span.cells
    line = [" "] * n
    placed = []
    for k in (0, 4, 2, 1, 3):
        text = _fmt_ns(span.span * k // 4)
        if k == 0:
            start = 0
        elif k == 4:
            start = n - len(text)
        else:
            start = (n - 1) * k // 4 - len(text) // 2
        end = start + len(text)  # exclusive
        if start < 0 or end > n or any(start <= b and a <= end for a, b in placed):
            continue  # no room: left out rather than overlapping (one blank kept)
        line[start:end] = text
        placed.append((start, end))
    return _row("time", "".join(line))


def _metric_row(span, label, samples, vmax, unit, scale_note=""):
    vals = [v for _, v in samples if v is not None]
    if not vals:
        return _row(label, " " * span.cells, " no samples")
    note = " mean %s max %s%s" % (_fmt_num(sum(vals) / len(vals)), _fmt_num(max(vals)), unit)
    return _row(label, _spark(span, samples, vmax), note + scale_note)


def _render_session(s, cells):
    r = s.report.get("session") or {}
    s._load(("device_metrics", "host_metrics", "scope_spans"))  # one pass for the three
    dev = s.rows("device_metrics")
    host = s.rows("host_metrics")
    scopes = s.rows("scope_spans")
    t0, t1 = r.get("start_ns"), r.get("end_ns")
    times = [x["ts_ns"] for x in dev + host if x["ts_ns"] is not None]
    times += [x["start_ns"] for x in scopes] + [x["end_ns"] for x in scopes
                                                 if x["end_ns"] is not None]
    if t0 is None:
        t0 = min(times) if times else 0
    if t1 is None:
        t1 = max(times) if times else t0
    span = _Span(t0, t1, cells)

    out = ["%s  session %s" % (r.get("app") or s.app or "?", r.get("session_id") or
                               s.session_id or "?")]
    tail = "" if r.get("end_source") == _wire.record("shutdown") else \
        "  (no shutdown record: still recording, or the process died)"
    out.append("start %s  duration %s  (%d columns of %s)%s"
               % (_utc(t0), _fmt_ns(t1 - t0), cells, _fmt_ns(span.span // cells or 1), tail))
    names = {d.get("id"): d.get("name") for d in r.get("devices") or []}
    ids = sorted({x["device_id"] for x in dev if x["device_id"] is not None} |
                 {i for i in names if i is not None})
    if names:
        out.append("devices  " + ", ".join("GPU %s %s" % (i, names[i] or "?")
                                          for i in sorted(k for k in names if k is not None)))
    out.append(_axis(span))

    if not ids:
        out.append(_row("GPU", " " * cells, " no device metrics"))
    for i in ids:
        mine = [x for x in dev if x["device_id"] == i]
        out.append(_metric_row(span, "GPU %s util %%" % i,
                               [(x["ts_ns"], x["gpu_util"]) for x in mine], 100, " %"))
        mem = [(x["ts_ns"], 100.0 * x["used_mib"] / x["total_mib"]) for x in mine
               if x["used_mib"] is not None and x["total_mib"]]
        if mem:
            # Memory used as a share of the total, not util.mem (the memory
            # controller's busy time): the label says which.
            out.append(_metric_row(span, "GPU %s mem used %%" % i, mem, 100, " %"))
        power = [(x["ts_ns"], x["power_mw"] / 1000.0) for x in mine if x["power_mw"] is not None]
        if power:
            out.append(_metric_row(span, "GPU %s power W" % i, power,
                                   max(v for _, v in power), " W"))
    cpu = [(x["ts_ns"], x["cpu_pct"]) for x in host if x["cpu_pct"] is not None]
    if cpu:
        out.append(_metric_row(span, "host CPU %", cpu, 100, " %"))

    totals = {}
    for x in scopes:
        name = x["name"] if x["name"] is not None else "scope #%s" % x["name_id"]
        end = x["end_ns"] if x["end_ns"] is not None else t1
        n, tot = totals.get(name, (0, 0))
        totals[name] = (n + 1, tot + max(0, end - x["start_ns"]))
    top = sorted(totals, key=lambda k: (-totals[k][1], k))[:TOP_SCOPES]
    if top:
        out.append("scopes by total time" if len(totals) <= TOP_SCOPES else
                   "scopes, top %d of %d by total time" % (TOP_SCOPES, len(totals)))
    for name in top:
        chart = [" "] * cells
        for x in scopes:
            xname = x["name"] if x["name"] is not None else "scope #%s" % x["name_id"]
            if xname != name:
                continue
            start = max(x["start_ns"], span.t0)
            end = min(x["end_ns"] if x["end_ns"] is not None else span.t1, span.t1)
            if end < start:
                continue  # outside the span
            a = span.cell(start)
            # Half-open [start, end): an instance ending on a column's first
            # nanosecond is not open in that column.
            b = span.cell(end - 1) if end > start else a
            for i in range(a, max(a, b) + 1):
                chart[i] = OPEN
        n, tot = totals[name]
        out.append(_row(name, "".join(chart), " %d× %s" % (n, _fmt_ns(tot))))

    out.append("legend: %s mean per column, 0-100 %% (power: 0-max W); blank: no sample; "
               "%s scope open" % (BLOCKS, OPEN))
    return "\n".join(out) + "\n"
