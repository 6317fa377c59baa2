"""gpufl._logs: one session's logs as rows, for Python consumers that need
the events themselves rather than the C report's aggregates (the analyzer's
tables, gpufl.viz).  Standard library only.

What it promises:

- The session is located exactly as the C reader does it (the same
  `log_dir`, `log_prefix`, `session_id` rules as gpufl.report), because it
  asks the C library: the JSON report's `read.session_dir` (a session
  directory, or a flat-layout prefix) and `session.session_id`.  Nothing
  here guesses a session on its own.
- Files are read in the C reader's order (src/reader/layout.c): channels
  device, scope, system, sass; in each, the windows `<channel>.<N>.log` or
  `.log.gz` by N (one file per window: the session root's before .tmp/'s,
  a non-empty one before an empty husk, the uncompressed before the
  gzipped), then the plain `<channel>.log` (or `.log.gz`), then a live or
  crashed session's `.tmp/<channel>.log`; the flat layout's
  `<prefix>.<channel>[.<N>].log[.gz]` the same way (N from 0 there: window
  0 after the others, as GPUFlight's analyzer reads it).  A window with a
  sidecar `.gpufl-window.<channel>.<N>.json` is checked against it (size
  and zlib CRC-32 of its payload file): a sidecar that is not valid or does
  not match is counted (`bad_windows`) and said in `SessionLogs.warnings`,
  and the window is read all the same.  A record type the vocabulary does
  not know is yielded, counted (`unknown_types`) and said once per type.
  Lines are streamed, one JSON object per line; nothing stops the read.
  Skipped and counted (`SessionLogs.problems`):
  a line that is not a JSON object with a "type" (`bad_lines`; a last line
  without its newline, torn by a writer that was killed or is still
  writing, counts here too), a batch whose columns and rows do not match or
  hold a cell that is not a number or null (`bad_records`), a record of
  another session (`other_session_records`), a broken gzip window (what
  decompressed before the break is kept, `gz_errors`), a file that cannot
  be opened - a dangling symlink, a directory, a FIFO (never opened) - said
  in `warnings` too (`unreadable_files`).  A window GPUFlight marked lost
  in transport (`.gpufl-transport-loss.<channel>.<N>.json` in the session
  directory) is counted (`lost_windows`) and said.
- Records that every channel carries (job_start, dictionary_update,
  capture_capabilities, shutdown) are taken once.
- A batch row is a dict of every column by name plus `ts_ns` =
  `base_time_ns + dt_ns`; cells are kept as written (null stays None).
- `table_rows(contents, name)` builds the analyzer's tables from that:
  lists of dicts with fixed keys, names resolved through the dictionaries,
  times as integer ns since the epoch.

Memory: `records()` streams; `read()` keeps every row of the session.
"""

import errno
import gzip
import json
import os
import re
import stat
import zlib

from . import _report_c, _wire

__all__ = ["SessionLogs", "Contents", "TABLES", "table_rows", "CHANNELS"]

# The wire format's names (gpufl._wire: the C library's table, src/wire/vocab.h).
CHANNELS = _wire.CHANNELS
COMMON_TYPES = _wire.COMMON_TYPES
DICTIONARIES = _wire.DICTIONARIES

# A channel file's name after its prefix: <channel>[.<N>].log[.gz].
_TAIL = re.compile(r"^(%s)(?:\.([0-9]+))?\.log(\.gz)?$" % "|".join(CHANNELS))
_TMP_DIR = ".tmp"
_SIDECAR = ".gpufl-window.%s.%d.json"
_LOSS = ".gpufl-transport-loss."
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

    def __init__(self, where, session_id=None, flat=None, all_windows=True):
        where = os.fspath(where)
        # False: one file per channel (GPUFlight's analyzer without
        # load_all_rotated): the plain <channel>.log, else the lowest window;
        # `notes` then says what was left out.
        self.all_windows = bool(all_windows)
        self.notes = []
        # The C reader says which it read (report read.flat); without it, a
        # directory is a session directory.
        self.flat = (not os.path.isdir(where)) if flat is None else bool(flat)
        # Absolute: a caller may change directory between reads.
        self.where = os.path.abspath(where)
        self.session_id = session_id or None
        self.problems = _zero_problems()
        self.warnings = []  # "file:line: message", as the C reader's

    @classmethod
    def from_report(cls, report, all_windows=True):
        """The session a JSON report (gpufl._report_c.render_json) read."""
        read = report.get("read") or {}
        where = read.get("session_dir")
        if not where:
            raise _report_c.ReportError("the report names no session directory", "GPUFL_ERR_IO")
        return cls(where, (report.get("session") or {}).get("session_id"), read.get("flat"),
                   all_windows)

    @classmethod
    def open(cls, log_dir=None, log_prefix=None, session_id=None):
        """Locate a session as gpufl.report.generate_report does (the C
        reader's rules; ReportError when there is none) and return it."""
        return cls.from_report(_report_c.render_json(log_dir, log_prefix, session_id))

    def _candidates(self):
        """Every channel file: (channel, window, in_tmp, gz, size, path, zero);
        zero: the flat layout's window 0 (window is 0 then, as for the plain
        file).  Every entry by such a name, whatever it is: one that cannot
        be read is said when it is read (_lines), never left out."""
        if self.flat:
            d, prefix = os.path.split(self.where)
            places = [(d or ".", prefix + ".", False)]
        else:
            places = [(self.where, "", False), (os.path.join(self.where, _TMP_DIR), "", True)]
        out = []
        for d, prefix, in_tmp in places:
            try:
                names = os.listdir(d)
            except OSError:
                continue
            for n in names:
                if not n.startswith(prefix):
                    continue
                m = _TAIL.match(n[len(prefix):])
                path = os.path.join(d, n)
                if not m:
                    continue
                win = m.group(2)
                zero = win is not None and int(win) == 0
                if zero and (not self.flat or win != "0"):
                    continue
                try:
                    st = os.stat(path)
                except OSError:
                    try:
                        st = os.lstat(path)
                    except OSError:
                        continue
                size = st.st_size if stat.S_ISREG(st.st_mode) else 0
                out.append((m.group(1), int(win or 0), in_tmp, bool(m.group(3)), size, path,
                            zero))
        return out

    def _file_list(self):
        """[(channel, window, path)] in read order, one file per window."""
        def slot(c):
            ch, win, in_tmp, zero = c[0], c[1], c[2], c[6]
            return (CHANNELS.index(ch), 0 if win else 1 if zero else 2 + in_tmp, win)
        best = {}
        for c in self._candidates():
            # the session root's, a non-empty one, the uncompressed one
            rank = (c[2], c[4] == 0, c[3], c[5])
            k = slot(c)
            if k not in best or rank < best[k][0]:
                best[k] = (rank, c)
        out = [(c[0], c[1], c[5]) for _, (_, c) in sorted(best.items())]
        return out if self.all_windows else self._one_per_channel(sorted(best.items()))

    def _one_per_channel(self, slots):
        """GPUFlight's light read: per channel the plain file (the session
        root's, else .tmp/'s), else its lowest window; a note for each
        channel with more."""
        self.notes = []
        by_ch = {}
        for (_, kind, win), (_, c) in slots:
            # plain first (kind 2, 3), then window 0 of the flat layout, then by N
            key = (0, kind) if kind >= 2 else (1, win)
            by_ch.setdefault(c[0], []).append((key, c))
        out = []
        for ch in CHANNELS:
            cands = sorted(by_ch.get(ch, []), key=lambda kc: kc[0])
            if not cands:
                continue
            chosen = cands[0][1]
            if len(cands) > 1:
                self.notes.append("%d %s log windows found; read only %s: pass "
                                  "load_all_rotated=True to read them all" % (
                                      len(cands), ch, os.path.basename(chosen[5])))
            out.append((chosen[0], chosen[1], chosen[5]))
        return out

    def files(self):
        """[(channel, path)] in read order."""
        return [(ch, path) for ch, _, path in self._file_list()]

    def _warn(self, path, msg):
        self.warnings.append("%s:1: %s" % (path, msg))

    def _check_sidecar(self, ch, window, path):
        """The window's sidecar, if it has one, against its payload."""
        side = os.path.join(self.where, _SIDECAR % (ch, window))
        if not os.path.exists(side):
            return
        why = _sidecar_problem(side, ch, window, self.session_id, self.where, path)
        if why:
            self.problems["bad_windows"] += 1
            self._warn(side, "window sidecar %s; the window is read all the same" % why)

    def _unreadable(self, path, why):
        self.problems["unreadable_files"] += 1
        self.warnings.append("%s:0: %s" % (path, why))

    def _lines(self, path):
        """The file's complete lines (bytes, without the newline)."""
        gz = path.endswith(".gz")
        try:
            # Never opened when it is not a regular file: a FIFO would wait.
            kind = _kind(os.stat(path).st_mode)
            if kind:
                self._unreadable(path, "cannot read %s: it is %s, not a regular file (the "
                                 "reader reads regular files only: copy the session's files, "
                                 "or name the session directory)" % (path, kind))
                return
            f = gzip.open(path, "rb") if gz else open(path, "rb")
        except OSError as e:
            link = os.path.islink(path) and e.errno == errno.ENOENT
            self._unreadable(path, "cannot open %s: %s%s; its events are not read" % (
                path, os.strerror(e.errno or 0),
                " (a symbolic link to a file that is not there)" if link else ""))
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
        self.warnings = []
        seen_common, unknown = set(), set()
        for ch, window, path in self._file_list():
            p["files"] += 1
            if os.path.basename(os.path.dirname(path)) == _TMP_DIR and not self.flat:
                p["unpublished_files"] += 1
            if window and not self.flat:
                self._check_sidecar(ch, window, path)
            for lineno, line in enumerate(self._lines(path), 1):
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
                if t not in _wire.RECORDS and t not in _wire.BATCHES:
                    p["unknown_types"] += 1
                    if t not in unknown:
                        unknown.add(t)
                        self.warnings.append(
                            "%s:%d: record type \"%s\" is not known to this reader: its records "
                            "are counted, not read (one warning per type)" % (path, lineno, t))
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
        if not self.flat:
            self._lost_windows()

    def _lost_windows(self):
        """GPUFlight's markers of windows lost in transport: a warning each
        (by channel, then window), counted, as the C reader (sidecar.c)."""
        try:
            names = os.listdir(self.where)
        except OSError:
            return
        found = []
        for n in names:
            if (len(n) <= len(_LOSS) + 5 or not n.startswith(_LOSS) or not n.endswith(".json")
                    or not os.path.isfile(os.path.join(self.where, n))):
                continue
            m = re.match(r"^(.+)\.([0-9]+)$", n[len(_LOSS):-5])
            ch = m.group(1) if m else None
            order = CHANNELS.index(ch) if ch in CHANNELS else len(CHANNELS)
            found.append((order if m else len(CHANNELS), int(m.group(2)) if m else 0, n, m))
        for _, win, n, m in sorted(found, key=lambda f: (f[0], f[1], f[2])):
            path = os.path.join(self.where, n)
            why = _loss_reason(path)
            self.problems["lost_windows"] += 1
            if m:
                self._warn(path, "window %d of channel %s was lost in transport (GPUFlight's "
                           "marker%s): its events are missing from this session" % (
                               win, m.group(1)[:80], why))
            else:
                self._warn(path, "a window was lost in transport (GPUFlight's marker%s): its "
                           "events are missing from this session" % why)

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
_NVTX_MARKER = _wire.record("nvtx_marker_event")
_KERNEL_DETAIL_TYPE = _wire.record("kernel_detail")


def _zero_problems():
    return {"files": 0, "lines": 0, "bad_lines": 0, "bad_records": 0,
            "other_session_records": 0, "gz_errors": 0, "unreadable_files": 0,
            "bad_windows": 0, "unknown_types": 0, "unpublished_files": 0, "lost_windows": 0}


def _kind(mode):
    """What a file that is not a regular one is (the C reader's words), or
    None for a regular file."""
    for test, what in ((stat.S_ISDIR, "a directory"), (stat.S_ISFIFO, "a FIFO"),
                       (stat.S_ISCHR, "a character device"), (stat.S_ISBLK, "a block device"),
                       (stat.S_ISSOCK, "a socket")):
        if test(mode):
            return what
    return None if stat.S_ISREG(mode) else "not a regular file"


def _loss_reason(path):
    """'; reason "..."' from a loss marker of GPUFlight's, or ''."""
    try:
        if os.path.getsize(path) > 64 << 10:
            return ""
        with open(path, "rb") as f:
            j = json.loads(f.read())
    except (OSError, ValueError):
        return ""
    if not isinstance(j, dict) or j.get("type") != _wire.WINDOW_LOSS_TYPE:
        return ""
    why = j.get("reason")
    return '; reason "%s"' % why[:80] if isinstance(why, str) and why else ""


def _sidecar_problem(side, ch, window, session_id, where, read_path):
    """What is wrong with a window's sidecar (the C reader's messages), or
    None."""
    try:
        if os.path.getsize(side) > 64 << 10:
            return "is not valid: not a file of at most 65536 bytes"
        with open(side, "rb") as f:
            j = json.loads(f.read())
    except (OSError, ValueError) as e:
        return "is not valid: not JSON (%s)" % e
    if not isinstance(j, dict):
        return "is not valid: not a JSON object"
    if j.get("type") != _wire.WINDOW_SIDECAR_TYPE:
        return "is not valid: its \"type\" is not \"%s\"" % _wire.WINDOW_SIDECAR_TYPE
    if j.get("channel") != ch:
        return "is not valid: its \"channel\" is not \"%s\"" % ch
    if _uint(j.get("window_sequence")) != window:
        return "is not valid: its \"window_sequence\" is not %d" % window
    sid = j.get("session_id")
    if isinstance(sid, str) and session_id and sid != session_id:
        return "is not valid: it describes session %s, not %s" % (sid, session_id)
    name = j.get("payload_file")
    if not isinstance(name, str) or not name or "/" in name:
        return "is not valid: no \"payload_file\" name"
    want_bytes, want_crc = _uint(j.get("payload_bytes")), _uint(j.get("payload_crc32"))
    if want_bytes is None or want_crc is None or want_crc > 0xFFFFFFFF:
        return ("is not valid: \"payload_bytes\" or \"payload_crc32\" is missing or not a "
                "non-negative integer")
    base = os.path.basename(read_path)
    payload = read_path if name == base else None
    for d in ([] if payload else [where, os.path.join(where, _TMP_DIR)]):
        if os.path.isfile(os.path.join(d, name)):
            payload = os.path.join(d, name)
            break
    if payload is None:
        return "names payload %s, which is not in the session directory (read %s)" % (name, base)
    crc, size = 0, 0
    try:
        with open(payload, "rb") as f:
            for chunk in iter(lambda: f.read(1 << 16), b""):
                crc = zlib.crc32(chunk, crc)
                size += len(chunk)
    except OSError as e:
        return "names payload %s, which cannot be read: %s" % (name, e.strerror)
    if size != want_bytes:
        return "does not match %s: payload_bytes %d, the file has %d" % (name, want_bytes, size)
    if crc != want_crc:
        return "does not match %s: payload_crc32 %d, the file's is %d" % (name, want_crc, crc)
    return None


def _uint(v):
    return v if isinstance(v, int) and not isinstance(v, bool) and v >= 0 else None


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
# CUPTI's CUpti_ActivityPCSamplingStallReason (activity-API PC samples,
# metric_id 0), as the C report names them (src/report/fields.c).
STALL_REASONS = ("invalid", "none", "instruction fetch", "execution dependency",
                 "memory dependency", "texture", "sync", "constant memory", "pipe busy",
                 "memory throttle", "not selected", "other", "sleeping")
SAMPLE_KINDS = {0: "pc_sampling", 1: "sass_metric", 2: "isa_source_map"}
NVTX_INSTANCE_BASE = _wire.NVTX_INSTANCE_BIT  # docs/gpufl.md: NVTX ranges' scope_instance_id

# A kernel's columns from its kernel_detail: column -> the record's key.
_KERNEL_DETAIL = {"grid": "grid", "block": "block", "static_shared_bytes": "static_shared",
                  "local_bytes": "local_bytes", "const_bytes": "const_bytes",
                  "occupancy": "occupancy", "reg_occupancy": "reg_occupancy",
                  "smem_occupancy": "smem_occupancy", "warp_occupancy": "warp_occupancy",
                  "block_occupancy": "block_occupancy", "limiting_resource": "limiting_resource",
                  "max_active_blocks": "max_active_blocks",
                  "local_mem_total_bytes": "local_mem_total_bytes",
                  "local_mem_per_thread_bytes": "local_mem_per_thread_bytes",
                  "user_scope": "user_scope", "stack_trace": "stack_trace"}
_SPAN = ("start_ns", "end_ns", "duration_ns", "duration_ms")

# Each table's keys, in order (GPUFlight 1.3's analyzer's names first where
# it has the table); a batch column not listed is appended.
COLUMNS = {
    "kernels": ("session_id",) + _SPAN + ("device_id", "stream_id", "corr_id", "kernel_id",
                                          "name", "num_regs", "dyn_shared_bytes") +
               tuple(_KERNEL_DETAIL) + ("has_details", "external_kind", "external_id"),
    "memcpy": ("session_id",) + _SPAN + ("device_id", "stream_id", "corr_id", "bytes",
                                         "copy_kind", "kind", "throughput_gbps",
                                         "src_device_id", "dst_device_id"),
    # memset_event records: these, then the record's own keys.
    "memset": ("session_id",) + _SPAN,
    "scopes": ("session_id", "ts_ns", "device_id", "corr_id", "function_id", "function_name",
               "pc_offset", "metric_id", "metric_name", "metric_value", "stall_reason",
               "stall_reason_name",
               "sample_kind", "sample_kind_name", "scope_name_id", "scope_name",
               "source_file_id", "source_file", "source_line"),
    # GPUFlight's: one row per begin / end (event_type 0 / 1, 2 / 3 the
    # continuation rows of a scope across windows).
    "scope_events": ("session_id", "ts_ns", "scope_instance_id", "name", "name_id",
                     "event_type", "depth"),
    # Ours: one row per scope instance, begin and end joined.
    "scope_spans": ("name", "kind", "start_ns", "end_ns", "duration_ns", "depth",
                    "scope_instance_id", "name_id", "open_at_end"),
    # ts_ns, then the batch's columns after its dt_ns.
    "device_metrics": ("session_id", "ts_ns") + _wire.columns("device_metric_batch")[1:],
    "host_metrics": ("session_id", "ts_ns", "cpu_pct", "cpu_pct_x100", "ram_used_mib",
                     "ram_total_mib"),
    # Counter results: perf_metric_event (kind "scope") and
    # kernel_perf_metric_event (kind "kernel") records, then their own keys.
    "perf": ("session_id", "kind", "name"),
    "pm_samples": ("session_id", "ts_ns", "sample_index", "device_id", "metric_id",
                   "metric_name", "value", "scope_name_id", "scope_name"),
}
TABLES = tuple(COLUMNS)
_KERNELS = _wire.batch("kernel_event_batch")
# The batches each table is built from (records are always read).
TABLE_BATCHES = {"kernels": (_KERNELS,),
                 "memcpy": (_wire.batch("memcpy_event_batch"),),
                 "memset": (),
                 "scopes": (_wire.batch("profile_sample_batch"),),
                 "scope_events": (_wire.batch("scope_event_batch"),),
                 "scope_spans": (_wire.batch("scope_event_batch"),),
                 "device_metrics": (_wire.batch("device_metric_batch"),),
                 "host_metrics": (_wire.batch("host_metric_batch"),),
                 # the kernels name kernel replay's numbered ranges
                 "perf": (_KERNELS,),
                 "pm_samples": (_wire.batch("pm_sample_batch"),)}

# Batch columns that a table states under another key (or drops).
_CONSUMED = {"dt_ns", "ts_ns"}
_RENAMED = {"kernels": {"dyn_shared"}}


def _normalise(table, rows, extra_from):
    """Every row with every key of the table (None where unknown), plus the
    batch columns the table does not list, in first-seen order."""
    keys = list(COLUMNS[table])
    known = set(keys) | _CONSUMED | _RENAMED.get(table, set())
    for src in extra_from:
        for k in src:
            if k not in known:
                known.add(k)
                keys.append(k)
    return [{k: r.get(k) for k in keys} for r in rows]


def _end(start, dur):
    return start + dur if isinstance(start, int) and isinstance(dur, int) else None


def _ms(ns):
    return ns / 1e6 if isinstance(ns, (int, float)) and not isinstance(ns, bool) else None


def _kernels(c):
    details = {}
    for r in c.records:
        if r.get("type") == _KERNEL_DETAIL_TYPE and r.get("corr_id") is not None:
            details[r["corr_id"]] = r
    src = c.rows(_KERNELS)
    current = {}  # kernel_id -> its detail in force (docs/gpufl.md's rule)
    out = []
    for r in src:
        kid = r.get("kernel_id")
        if r.get("has_details") and r.get("corr_id") in details:
            current[kid] = details[r["corr_id"]]
        d = current.get(kid) or {}
        row = dict(r)
        row.update({k: d.get(key) for k, key in _KERNEL_DETAIL.items()})
        row["session_id"] = c.session_id
        row["start_ns"] = r["ts_ns"]
        row["end_ns"] = _end(r["ts_ns"], r.get("duration_ns"))
        row["duration_ms"] = _ms(r.get("duration_ns"))
        row["dyn_shared_bytes"] = r.get("dyn_shared")
        hd = r.get("has_details")
        row["has_details"] = None if hd is None else bool(hd)
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


def _batch_table(c, table, fill=None, by_start=False):
    """A batch table's rows as written, each with its session id and the
    columns fill(row, r) derives; by_start: in start order, unknown last."""
    src = c.rows(TABLE_BATCHES[table][0])
    out = []
    for r in src:
        row = dict(r)
        row["session_id"] = c.session_id
        if fill:
            fill(row, r)
        out.append(row)
    if by_start:
        out.sort(key=lambda x: (x["start_ns"] is None, x["start_ns"] or 0))
    return _normalise(table, out, _distinct_keysets(src))


def _memcpy(c):
    def fill(row, r):
        dur, size = r.get("duration_ns"), r.get("bytes")
        row["start_ns"] = r["ts_ns"]
        row["end_ns"] = _end(r["ts_ns"], dur)
        row["duration_ms"] = _ms(dur)
        row["kind"] = COPY_KINDS.get(r.get("copy_kind"))
        # bytes per ns = GB/s; None for a copy of no measured duration
        row["throughput_gbps"] = (size / dur if isinstance(size, (int, float)) and
                                  isinstance(dur, (int, float)) and dur > 0 else None)
    return _batch_table(c, "memcpy", fill, by_start=True)


def _profile_samples(c):
    def fill(row, r):
        row["function_name"] = c.name("function_dict", r.get("function_id"))
        row["metric_name"] = c.name("metric_dict", r.get("metric_id"))
        row["scope_name"] = c.name("scope_name_dict", r.get("scope_name_id"))
        row["source_file"] = c.name("source_file_dict", r.get("source_file_id"))
        row["sample_kind_name"] = SAMPLE_KINDS.get(r.get("sample_kind"))
        row["stall_reason_name"] = _stall_name(row)
    return _batch_table(c, "scopes", fill)


def _stall_name(row):
    """A PC sample's stall reason by name: metric_dict's (PC Sampling API
    rows), else CUPTI's activity enum's; None for other samples."""
    if row.get("sample_kind") != 0:
        return None
    if row.get("metric_id"):
        return row.get("metric_name")
    r = row.get("stall_reason")
    return STALL_REASONS[r] if isinstance(r, int) and 0 <= r < len(STALL_REASONS) else None


def _span(rec):
    """A record's (start_ns, duration_ns): GPUFlight's start_ns / end_ns,
    else ts_ns / duration_ns; None without a time (as the C report)."""
    def num(k):
        v = rec.get(k)
        return v if isinstance(v, int) and not isinstance(v, bool) and v >= 0 else None
    start, end, dur = num("start_ns"), num("end_ns"), num("duration_ns")
    if start:
        return start, (end - start if end is not None and end >= start else dur or 0)
    ts = num("ts_ns")
    return (ts, dur or 0) if ts else None


def _scope_spans(c):
    """Begin / end rows joined per instance, as the C report joins them."""
    open_ = {}  # scope_instance_id -> [start_ns, name_id, depth]
    out = []
    for r in c.rows(TABLE_BATCHES["scope_spans"][0]):
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
    # GPUFlight's NVTX ranges: nvtx_marker_event records (no instance id).
    for rec in c.records:
        if rec.get("type") != _NVTX_MARKER:
            continue
        span = _span(rec)
        if span is None or not isinstance(rec.get("name"), str):
            continue
        out.append({"name": rec["name"], "kind": "nvtx", "start_ns": span[0],
                    "end_ns": span[0] + span[1], "duration_ns": span[1], "depth": None,
                    "scope_instance_id": None, "name_id": None, "open_at_end": False})
    out.sort(key=lambda x: (x["start_ns"], x["scope_instance_id"] is None,
                            x["scope_instance_id"] or 0))
    return _normalise("scope_spans", out, ())


def _scope_events(c):
    """GPUFlight's scope_events: every begin / end row as written."""
    def fill(row, r):
        row["name"] = c.name("scope_name_dict", r.get("name_id"))
    return _batch_table(c, "scope_events", fill)


def _scope_row(c, iid, start, end, name_id, depth):
    return {"name": c.name("scope_name_dict", name_id),
            "kind": "nvtx" if iid >= NVTX_INSTANCE_BASE else "scope",
            "start_ns": start, "end_ns": end,
            "duration_ns": max(0, end - start) if end is not None else None,
            "depth": depth, "scope_instance_id": iid, "name_id": name_id,
            "open_at_end": end is None}


def _device_metrics(c):
    return _batch_table(c, "device_metrics")


def _host_metrics(c):
    def fill(row, r):
        x = r.get("cpu_pct_x100")
        row["cpu_pct"] = x / 100.0 if x is not None else None
    return _batch_table(c, "host_metrics", fill)


def _pm_samples(c):
    def fill(row, r):
        row["metric_name"] = c.name("metric_dict", r.get("metric_id"))
        row["scope_name"] = c.name("scope_name_dict", r.get("scope_name_id"))
    return _batch_table(c, "pm_samples", fill)


_PERF_KINDS = {_wire.record("perf_metric_event"): "scope",
               _wire.record("kernel_perf_metric_event"): "kernel"}
_MEMSET = _wire.record("memset_event")
_RECORD_ONLY = ("type", "version")  # a record's keys that are not a row's
_HIT_RATES = ("l1_hit_rate_pct", "l2_hit_rate_pct")


def _record_rows(c, types, table, fill):
    """Rows of the records of these types: fill(row, record) adds the
    table's own columns; the record's keys follow, first seen first."""
    out, extra = [], {}
    for rec in c.records:
        if rec.get("type") not in types:
            continue
        row = {k: v for k, v in rec.items() if k not in _RECORD_ONLY}
        row.setdefault("session_id", c.session_id)
        fill(row, rec)
        extra.update(dict.fromkeys(row))
        out.append(row)
    return _normalise(table, out, [extra])


def _fill_span(row, rec):
    span = _span(rec)
    if span is not None:
        row["start_ns"], row["duration_ns"] = span
        row["end_ns"] = span[0] + span[1]
        row["duration_ms"] = _ms(span[1])


def _memset(c):
    return _record_rows(c, (_MEMSET,), "memset", _fill_span)


def _perf(c):
    """Counter results as GPUFlight's analyzer gives them: a hit rate
    outside 0-100 % is not a rate (None), and kernel replay's numbered
    ranges ("0", "1", ...) are named by their launch_ordinal: the n-th
    kernel of the session by start time."""
    by_launch = None

    def fill(row, rec):
        nonlocal by_launch
        kind = _PERF_KINDS[rec["type"]]
        row["kind"] = kind
        name = next((rec.get(k) for k in ("name", "kernel_name", "range_name", "user_scope")
                     if isinstance(rec.get(k), str) and rec.get(k)), None)
        ordinal = rec.get("launch_ordinal")
        if (kind == "kernel" and (name is None or name.isdigit()) and
                isinstance(ordinal, int) and not isinstance(ordinal, bool)):
            if by_launch is None:
                by_launch = [k["name"] for k in _kernels(c)]  # by start time
            if 1 <= ordinal <= len(by_launch) and by_launch[ordinal - 1]:
                name = row["kernel_name"] = by_launch[ordinal - 1]
        row["name"] = name
        for k in _HIT_RATES:
            v = rec.get(k)
            if k in rec and not (isinstance(v, _NUMBER) and not isinstance(v, bool) and
                                 0 <= v <= 100):
                row[k] = None
        s, e = rec.get("start_ns"), rec.get("end_ns")
        if isinstance(s, int) and isinstance(e, int):
            row["duration_ms"] = _ms(e - s)

    return _record_rows(c, tuple(_PERF_KINDS), "perf", fill)


_BUILDERS = {"kernels": _kernels, "memcpy": _memcpy, "memset": _memset,
             "scopes": _profile_samples, "scope_events": _scope_events,
             "scope_spans": _scope_spans, "device_metrics": _device_metrics,
             "host_metrics": _host_metrics, "perf": _perf, "pm_samples": _pm_samples}


def table_rows(contents, table):
    """One of TABLES built from a Contents: a list of dicts, all with the
    same keys (COLUMNS[table] first)."""
    try:
        build = _BUILDERS[table]
    except KeyError:
        raise ValueError("no table %r: use one of %s" % (table, ", ".join(TABLES))) from None
    return build(contents)
