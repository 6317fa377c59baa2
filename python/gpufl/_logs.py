"""gpufl._logs: one session's logs as rows, for Python consumers that need
the events themselves rather than the C report's aggregates (the analyzer's
tables, gpufl.viz).  Standard library only.

What it promises:

- The session is located exactly as the C reader does it (the same
  `log_dir`, `log_prefix`, `session_id` rules as gpufl.report), because it
  asks the C library: the JSON report's `read.session_dir` (a session
  directory, or a flat-layout prefix) and `session.session_id`.  Nothing
  here guesses a session on its own.
- Files are read in the C reader's order: channels device, scope, system;
  in a session directory each channel's gzipped windows
  `<channel>.<N>.log.gz` by N, then its plain `<channel>.log`; in the flat
  layout `<prefix>.<channel>.log`.  Lines are streamed, one JSON object per
  line; nothing stops the read.  Skipped and counted (`SessionLogs.problems`):
  a line that is not a JSON object with a "type" (`bad_lines`; a last line
  without its newline, torn by a writer that was killed or is still
  writing, counts here too), a batch whose columns and rows do not match or
  hold a cell that is not a number or null (`bad_records`), a record of
  another session (`other_session_records`), a broken gzip window (what
  decompressed before the break is kept, `gz_errors`), a file that cannot
  be opened (`unreadable_files`).
- Records that every channel carries (job_start, dictionary_update,
  capture_capabilities, shutdown) are taken once.
- A batch row is a dict of every column by name plus `ts_ns` =
  `base_time_ns + dt_ns`; cells are kept as written (null stays None).
- `table_rows(contents, name)` builds the analyzer's tables from that:
  lists of dicts with fixed keys, names resolved through the dictionaries,
  times as integer ns since the epoch.

Memory: `records()` streams; `read()` keeps every row of the session.
"""

import gzip
import json
import os
import re
import zlib

from . import _report_c, _wire

__all__ = ["SessionLogs", "Contents", "TABLES", "table_rows", "CHANNELS"]

# The wire format's names (gpufl._wire: the C library's table, src/wire/vocab.h).
CHANNELS = _wire.CHANNELS
COMMON_TYPES = _wire.COMMON_TYPES
DICTIONARIES = _wire.DICTIONARIES

_WINDOW = re.compile(r"^(%s)\.([0-9]+)\.log\.gz$" % "|".join(CHANNELS))
_NUMBER = (int, float)


class Contents:
    """Everything read from one session (SessionLogs.read()).

    dictionaries: {"kernel_dict": {id: name}, ...} (int ids; every
    dictionary of the spec is present, possibly empty).  batches: {batch
    type: [row dicts]} in read order.  records: every other record in read
    order (job_start, kernel_detail, memset_event, system_start, ...).
    """

    def __init__(self, session_id):
        self.session_id = session_id
        self.dictionaries = {name: {} for name in DICTIONARIES}
        self.batches = {}
        self.records = []

    def rows(self, batch_type):
        return self.batches.get(batch_type, [])

    def first(self, rtype):
        return next((r for r in self.records if r.get("type") == rtype), None)

    def last(self, rtype):
        return next((r for r in reversed(self.records) if r.get("type") == rtype), None)

    def name(self, dictionary, ident):
        """The name of ident in a dictionary; None for 0, null or unknown."""
        if ident is None:
            return None
        return self.dictionaries[dictionary].get(ident)


class SessionLogs:
    """The logs of one session: `where` is a session directory or a flat
    prefix (`<prefix>.<channel>.log`); `session_id` (None: no filter) is
    the session whose records are kept."""

    def __init__(self, where, session_id=None, flat=None):
        where = os.fspath(where)
        # The C reader says which it read (report read.flat); without it, a
        # directory is a session directory.
        self.flat = (not os.path.isdir(where)) if flat is None else bool(flat)
        # Absolute: a caller may change directory between reads.
        self.where = os.path.abspath(where)
        self.session_id = session_id or None
        self.problems = _zero_problems()

    @classmethod
    def from_report(cls, report):
        """The session a JSON report (gpufl._report_c.render_json) read."""
        read = report.get("read") or {}
        where = read.get("session_dir")
        if not where:
            raise _report_c.ReportError("the report names no session directory", "GPUFL_ERR_IO")
        return cls(where, (report.get("session") or {}).get("session_id"), read.get("flat"))

    @classmethod
    def open(cls, log_dir=None, log_prefix=None, session_id=None):
        """Locate a session as gpufl.report.generate_report does (the C
        reader's rules; ReportError when there is none) and return it."""
        return cls.from_report(_report_c.render_json(log_dir, log_prefix, session_id))

    def files(self):
        """[(channel, path)] in read order."""
        out = []
        for ch in CHANNELS:
            if self.flat:
                path = "%s.%s.log" % (self.where, ch)
                if os.path.isfile(path):
                    out.append((ch, path))
                continue
            try:
                names = os.listdir(self.where)
            except OSError:
                names = []
            windows = []
            for n in names:
                m = _WINDOW.match(n)
                if m and m.group(1) == ch and int(m.group(2)) > 0:
                    windows.append((int(m.group(2)), n))
            for _, n in sorted(windows):
                out.append((ch, os.path.join(self.where, n)))
            if "%s.log" % ch in names:
                out.append((ch, os.path.join(self.where, "%s.log" % ch)))
        return out

    def _lines(self, path):
        """The file's complete lines (bytes, without the newline)."""
        gz = path.endswith(".gz")
        try:
            f = gzip.open(path, "rb") if gz else open(path, "rb")
        except OSError:
            self.problems["unreadable_files"] += 1
            return
        with f:
            try:
                for line in f:
                    if not line.endswith(b"\n"):
                        # Torn: its writer has not finished it (or never will).
                        self.problems["bad_lines"] += 1
                        return
                    yield line
            except (OSError, EOFError, zlib.error):
                # A broken or truncated window: what came before is kept.
                if gz:
                    self.problems["gz_errors"] += 1
                else:
                    self.problems["unreadable_files"] += 1

    def records(self, batch_types=None):
        """Yield (channel, record) for every record of the session, in read
        order; batch_types (None: all) limits the batches yielded to those
        types.  The counters in `problems` describe this pass."""
        self.problems = p = _zero_problems()
        seen_common = set()
        for ch, path in self.files():
            p["files"] += 1
            for line in self._lines(path):
                p["lines"] += 1
                try:
                    rec = json.loads(line)
                except ValueError:
                    if line.strip():
                        p["bad_lines"] += 1
                    continue
                if not isinstance(rec, dict) or not isinstance(rec.get("type"), str):
                    p["bad_lines"] += 1
                    continue
                sid = rec.get("session_id")
                if self.session_id and sid is not None and sid != self.session_id:
                    p["other_session_records"] += 1
                    continue
                t = rec["type"]
                if t in COMMON_TYPES:
                    key = json.dumps(rec, sort_keys=True)
                    if key in seen_common:
                        continue
                    seen_common.add(key)
                elif t.endswith("_batch"):
                    if batch_types is not None and t not in batch_types:
                        continue
                    if not _batch_ok(rec):
                        p["bad_records"] += 1
                        continue
                yield ch, rec

    def read(self, batch_types=None):
        """The session as a Contents: every record, and the rows of the
        batches of batch_types (None: all; a table needs only its own,
        TABLE_BATCHES, and a session's rows can be millions)."""
        c = Contents(self.session_id)
        for _, rec in self.records(batch_types):
            t = rec["type"]
            if t == _DICTIONARY_UPDATE:
                for name in DICTIONARIES:
                    d = rec.get(name)
                    if isinstance(d, dict):
                        target = c.dictionaries[name]
                        for k, v in d.items():
                            try:
                                target[int(k)] = v
                            except ValueError:
                                pass  # not a decimal id: no row can refer to it
            elif t.endswith("_batch"):
                c.batches.setdefault(t, []).extend(batch_rows(rec))
            else:
                c.records.append(rec)
        return c


_DICTIONARY_UPDATE = _wire.record("dictionary_update")
_KERNEL_DETAIL_TYPE = _wire.record("kernel_detail")


def _zero_problems():
    return {"files": 0, "lines": 0, "bad_lines": 0, "bad_records": 0,
            "other_session_records": 0, "gz_errors": 0, "unreadable_files": 0}


def _batch_ok(rec):
    cols, rows = rec.get("columns"), rec.get("rows")
    base = rec.get("base_time_ns")
    if not isinstance(cols, list) or not isinstance(rows, list):
        return False
    if not all(isinstance(c, str) for c in cols):
        return False
    if "dt_ns" in cols and (isinstance(base, bool) or not isinstance(base, int)):
        return False  # no absolute time for its rows
    n = len(cols)
    for row in rows:
        if not isinstance(row, list) or len(row) != n:
            return False
        for v in row:
            if v is not None and (isinstance(v, bool) or not isinstance(v, _NUMBER)):
                return False
    return True


def batch_rows(rec):
    """The rows of a (checked) batch record as dicts, with ts_ns."""
    cols = rec["columns"]
    base = rec.get("base_time_ns")
    out = []
    for row in rec["rows"]:
        d = dict(zip(cols, row))
        dt = d.get("dt_ns")
        d["ts_ns"] = base + dt if isinstance(base, int) and isinstance(dt, int) else base
        out.append(d)
    return out


# ------------------------------------------------------------------ tables

COPY_KINDS = {1: "HtoD", 2: "DtoH", 8: "DtoD", 10: "PtoP"}  # as the C report
SAMPLE_KINDS = {0: "pc_sampling", 1: "sass_metric", 2: "isa_source_map"}
NVTX_INSTANCE_BASE = _wire.NVTX_INSTANCE_BIT  # docs/gpufl.md: NVTX ranges' scope_instance_id

_KERNEL_DETAIL = ("grid", "block", "static_shared", "local_bytes", "occupancy",
                  "reg_occupancy", "smem_occupancy", "warp_occupancy", "block_occupancy",
                  "limiting_resource", "max_active_blocks", "user_scope")

# Each table's keys, in order; a batch column not listed is appended.
COLUMNS = {
    "kernels": ("start_ns", "end_ns", "duration_ns", "device_id", "stream_id", "corr_id",
                "kernel_id", "name", "num_regs", "dyn_shared") + _KERNEL_DETAIL +
               ("has_details", "external_kind", "external_id"),
    "memcpy": ("start_ns", "end_ns", "duration_ns", "device_id", "stream_id", "corr_id",
               "bytes", "copy_kind", "kind", "src_device_id", "dst_device_id"),
    "scopes": ("ts_ns", "device_id", "corr_id", "function_id", "function", "pc_offset",
               "metric_id", "metric", "metric_value", "stall_reason", "sample_kind",
               "sample_kind_name", "scope_name_id", "scope_name", "source_file_id",
               "source_file", "source_line"),
    "scope_events": ("name", "kind", "start_ns", "end_ns", "duration_ns", "depth",
                     "scope_instance_id", "name_id", "open_at_end"),
    # ts_ns, then the batch's columns after its dt_ns.
    "device_metrics": ("ts_ns",) + _wire.columns("device_metric_batch")[1:],
    "host_metrics": ("ts_ns", "cpu_pct", "cpu_pct_x100", "ram_used_mib", "ram_total_mib"),
    "perf": ("ts_ns", "sample_index", "device_id", "metric_id", "metric", "value",
             "scope_name_id", "scope_name"),
}
TABLES = tuple(COLUMNS)
# The batches each table is built from.
TABLE_BATCHES = {"kernels": _wire.batch("kernel_event_batch"),
                 "memcpy": _wire.batch("memcpy_event_batch"),
                 "scopes": _wire.batch("profile_sample_batch"),
                 "scope_events": _wire.batch("scope_event_batch"),
                 "device_metrics": _wire.batch("device_metric_batch"),
                 "host_metrics": _wire.batch("host_metric_batch"),
                 "perf": _wire.batch("pm_sample_batch")}

# Batch columns that a table states under another key (or drops).
_CONSUMED = {"dt_ns", "ts_ns"}


def _normalise(table, rows, extra_from):
    """Every row with every key of the table (None where unknown), plus the
    batch columns the table does not list, in first-seen order."""
    keys = list(COLUMNS[table])
    known = set(keys) | _CONSUMED
    for src in extra_from:
        for k in src:
            if k not in known:
                known.add(k)
                keys.append(k)
    return [{k: r.get(k) for k in keys} for r in rows]


def _end(start, dur):
    return start + dur if isinstance(start, int) and isinstance(dur, int) else None


def _kernels(c):
    details = {}
    for r in c.records:
        if r.get("type") == _KERNEL_DETAIL_TYPE and r.get("corr_id") is not None:
            details[r["corr_id"]] = r
    src = c.rows(TABLE_BATCHES["kernels"])
    current = {}  # kernel_id -> its detail in force (docs/gpufl.md's rule)
    out = []
    for r in src:
        kid = r.get("kernel_id")
        if r.get("has_details") and r.get("corr_id") in details:
            current[kid] = details[r["corr_id"]]
        d = current.get(kid) or {}
        row = dict(r)
        row.update({k: d.get(k) for k in _KERNEL_DETAIL})
        row["start_ns"] = r["ts_ns"]
        row["end_ns"] = _end(r["ts_ns"], r.get("duration_ns"))
        row["name"] = c.name("kernel_dict", kid)
        out.append(row)
    out.sort(key=lambda x: (x["start_ns"] is None, x["start_ns"] or 0))
    return _normalise("kernels", out, _distinct_keysets(src))


def _distinct_keysets(rows):
    seen, out = set(), []
    for r in rows:
        k = tuple(r)
        if k not in seen:
            seen.add(k)
            out.append(r)
    return out


def _memcpy(c):
    src = c.rows(TABLE_BATCHES["memcpy"])
    out = []
    for r in src:
        row = dict(r)
        row["start_ns"] = r["ts_ns"]
        row["end_ns"] = _end(r["ts_ns"], r.get("duration_ns"))
        row["kind"] = COPY_KINDS.get(r.get("copy_kind"))
        out.append(row)
    out.sort(key=lambda x: (x["start_ns"] is None, x["start_ns"] or 0))
    return _normalise("memcpy", out, _distinct_keysets(src))


def _profile_samples(c):
    src = c.rows(TABLE_BATCHES["scopes"])
    out = []
    for r in src:
        row = dict(r)
        row["function"] = c.name("function_dict", r.get("function_id"))
        row["metric"] = c.name("metric_dict", r.get("metric_id"))
        row["scope_name"] = c.name("scope_name_dict", r.get("scope_name_id"))
        row["source_file"] = c.name("source_file_dict", r.get("source_file_id"))
        row["sample_kind_name"] = SAMPLE_KINDS.get(r.get("sample_kind"))
        out.append(row)
    return _normalise("scopes", out, _distinct_keysets(src))


def _scope_events(c):
    """Begin / end rows joined per instance, as the C report joins them."""
    open_ = {}  # scope_instance_id -> [start_ns, name_id, depth]
    out = []
    for r in c.rows(TABLE_BATCHES["scope_events"]):
        iid, t, et = r.get("scope_instance_id"), r.get("ts_ns"), r.get("event_type")
        if iid is None or t is None or et is None:
            continue
        if et in (0, 2):  # begin, continuation-open (began in an earlier window)
            if et == 2 and iid in open_:
                continue
            orig = r.get("original_start_ns")
            start = orig if et == 2 and orig else t
            open_[iid] = [start, r.get("name_id"), r.get("depth")]
        elif et == 1:  # end
            b = open_.pop(iid, None)
            if b is None:
                orig = r.get("original_start_ns")
                if not orig or orig > t:
                    continue  # an end whose begin was never read
                b = [orig, r.get("name_id"), r.get("depth")]
            out.append(_scope_row(c, iid, b[0], t, b[1] or r.get("name_id"),
                                  b[2] if b[2] is not None else r.get("depth")))
        # 3, continuation-close: the scope is still open
    for iid, b in open_.items():
        out.append(_scope_row(c, iid, b[0], None, b[1], b[2]))
    out.sort(key=lambda x: (x["start_ns"], x["scope_instance_id"]))
    return _normalise("scope_events", out, ())


def _scope_row(c, iid, start, end, name_id, depth):
    return {"name": c.name("scope_name_dict", name_id),
            "kind": "nvtx" if iid >= NVTX_INSTANCE_BASE else "scope",
            "start_ns": start, "end_ns": end,
            "duration_ns": max(0, end - start) if end is not None else None,
            "depth": depth, "scope_instance_id": iid, "name_id": name_id,
            "open_at_end": end is None}


def _device_metrics(c):
    src = c.rows(TABLE_BATCHES["device_metrics"])
    return _normalise("device_metrics", src, _distinct_keysets(src))


def _host_metrics(c):
    src = c.rows(TABLE_BATCHES["host_metrics"])
    out = []
    for r in src:
        row = dict(r)
        x = r.get("cpu_pct_x100")
        row["cpu_pct"] = x / 100.0 if x is not None else None
        out.append(row)
    return _normalise("host_metrics", out, _distinct_keysets(src))


def _perf(c):
    src = c.rows(TABLE_BATCHES["perf"])
    out = []
    for r in src:
        row = dict(r)
        row["metric"] = c.name("metric_dict", r.get("metric_id"))
        row["scope_name"] = c.name("scope_name_dict", r.get("scope_name_id"))
        out.append(row)
    return _normalise("perf", out, _distinct_keysets(src))


_BUILDERS = {"kernels": _kernels, "memcpy": _memcpy, "scopes": _profile_samples,
             "scope_events": _scope_events, "device_metrics": _device_metrics,
             "host_metrics": _host_metrics, "perf": _perf}


def table_rows(contents, table):
    """One of TABLES built from a Contents: a list of dicts, all with the
    same keys (COLUMNS[table] first)."""
    try:
        build = _BUILDERS[table]
    except KeyError:
        raise ValueError("no table %r: use one of %s" % (table, ", ".join(TABLES))) from None
    return build(contents)
