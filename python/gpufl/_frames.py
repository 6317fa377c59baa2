"""gpufl._frames: the analyzer's DataFrames built from the C library's
columns (gpufl_columns_read, include/gpufl.h) with numpy, never a Python
object per row.

What it promises: `frame(pd, logs, table)` gives the DataFrame that
gpufl.analyzer would build from `_logs.table_rows` - the same columns in
the same order, the same dtypes (int64; pandas' nullable Int64 for an
integer column with unknowns; float64 with NaN; object for names, None
where unknown), the same values and row order - or None when it cannot
promise that (a table it does not build, a set the C library marks not
exact, a value whose Python arithmetic numpy would not reproduce); the
caller then builds it from the rows.  The C arrays are wrapped without a
copy (numpy.frombuffer) and the frame's columns may view them: the C
memory is freed when the last array viewing it is gone, never before.
"""

import ctypes
import json

from . import _FlError, _c_enum, _declare
from . import _logs, _wire

__all__ = ["frame", "TABLES"]

GPUFL_COLUMN_INT64, GPUFL_COLUMN_DOUBLE, GPUFL_COLUMN_CODES = 0, 1, 2
DETAIL = ".detail"  # GPUFL_COLUMNS_DETAIL


class _Column(ctypes.Structure):
    _fields_ = [("name", ctypes.c_char_p), ("kind", _c_enum), ("data", ctypes.c_void_p),
                ("valid", ctypes.c_void_p), ("strings", ctypes.POINTER(ctypes.c_char_p)),
                ("nstrings", ctypes.c_size_t)]


class _Set(ctypes.Structure):
    _fields_ = [("name", ctypes.c_char_p), ("nrows", ctypes.c_size_t),
                ("ncols", ctypes.c_size_t), ("cols", ctypes.POINTER(_Column)),
                ("exact", ctypes.c_bool)]


_COUNTS = ("files", "lines", "bad_lines", "bad_records", "other_session_records", "gz_errors",
           "unreadable_files", "bad_windows", "unknown_types", "unpublished_files",
           "lost_windows", "capped_files")


class _Counts(ctypes.Structure):
    _fields_ = ([("session_id", ctypes.c_char * 64)] +
                [(k, ctypes.c_uint64) for k in _COUNTS] + [("session_capped", ctypes.c_bool)])


class _Options(ctypes.Structure):
    _fields_ = [("session_id", ctypes.c_char_p), ("log_prefix", ctypes.c_char_p),
                ("batches", ctypes.c_char_p), ("one_file_per_channel", ctypes.c_bool)]


try:
    _read = _declare("gpufl_columns_read", _c_enum, ctypes.c_char_p, ctypes.POINTER(_Options),
                     ctypes.POINTER(ctypes.c_void_p), ctypes.POINTER(_FlError))
    _find = _declare("gpufl_columns_find", ctypes.POINTER(_Set), ctypes.c_void_p,
                     ctypes.c_char_p)
    _counts = _declare("gpufl_columns_counts_of", ctypes.POINTER(_Counts), ctypes.c_void_p)
    _free = _declare("gpufl_columns_free", None, ctypes.c_void_p)
except (AttributeError, OSError):  # an older library: the rows build every table
    _read = None

_KERNELS = _wire.batch("kernel_event_batch")
_COMMON_KNOWN = {"dt_ns", "ts_ns"}  # gpufl._logs._CONSUMED


class _Owner:
    """The C columns of one read: freed when the last array viewing them
    (a DataFrame's column among them) is gone."""

    def __init__(self, handle):
        self.handle = handle

    def __del__(self):
        h, self.handle = self.handle, None
        if h and _free is not None:  # None: the interpreter is going away
            _free(h)


_NP_TYPES = {ctypes.c_int64: "int64", ctypes.c_double: "float64", ctypes.c_int32: "int32",
             ctypes.c_uint8: "uint8"}


_VIEW_TYPES = {}


def _view(np, ctype, n, addr, owner):
    """n values of ctype at addr as a numpy array, without a copy, keeping
    owner alive (through the ctypes array numpy takes as its base: a
    subclass, which can hold an attribute)."""
    t = _VIEW_TYPES.get((ctype, n))
    if t is None:
        if len(_VIEW_TYPES) > 256:
            _VIEW_TYPES.clear()
        t = _VIEW_TYPES[(ctype, n)] = type("_View", (ctype * n,), {})
    a = t.from_address(addr)
    a.owner = owner
    return np.frombuffer(a, dtype=_NP_TYPES[ctype])


class _Cols:
    """One C set as numpy arrays (views of the C memory, kept while any of
    them lives)."""

    def __init__(self, np, s, owner):
        self.n = s.nrows
        self.exact = bool(s.exact)
        self.order = []
        self.cols = {}
        for i in range(s.ncols):
            c = s.cols[i]
            name = c.name.decode("utf-8", "surrogateescape")
            self.order.append(name)
            n = self.n
            ctype = {GPUFL_COLUMN_INT64: ctypes.c_int64, GPUFL_COLUMN_DOUBLE: ctypes.c_double,
                     GPUFL_COLUMN_CODES: ctypes.c_int32}[c.kind]
            if n:
                # the C library writes 0 or 1: a bool view
                valid = _view(np, ctypes.c_uint8, n, c.valid, owner).view(np.bool_)
                data = _view(np, ctype, n, c.data, owner)
            else:
                valid, data = np.zeros(0, np.bool_), np.zeros(0, _NP_TYPES[ctype])
            strings = None
            if c.kind == GPUFL_COLUMN_CODES:
                strings = [c.strings[k].decode("utf-8", "surrogateescape")
                           for k in range(c.nstrings)]
            self.cols[name] = (c.kind, data, valid, strings)

    def get(self, name):
        """(kind, data, valid, strings) of a column; an all-unknown int
        column when the set has none."""
        return self.cols.get(name)


class _Unsure(Exception):
    """This table's frame is not promised equal to the rows': build it from them."""


class _Builder:
    def __init__(self, pd, np, n):
        self.pd, self.np, self.n = pd, np, n
        self.order = None  # row order (kernels and memcpy: by start)

    def _take(self, a):
        return a if self.order is None else a[self.order]

    def none(self):
        a = self.np.empty(self.n, dtype=object)
        a[:] = None
        return a

    def numeric(self, col):
        """A batch column as _logs / _to_frame leave it (a view of the C
        memory when nothing changes: pandas copies it)."""
        np = self.np
        if col is None:
            return self.none()
        kind, data, valid, _ = col
        data, valid = self._take(data), self._take(valid)
        if valid.all():
            return data
        if not valid.any():
            return self.none()
        if kind == GPUFL_COLUMN_DOUBLE:
            return np.where(valid, data, np.nan)
        return self.pd.arrays.IntegerArray(data, ~valid)  # data is 0 where unknown

    def ints(self, data, valid):
        """Derived integers (already in row order)."""
        if valid.all():
            return data
        if not valid.any():
            return self.none()
        return self.pd.arrays.IntegerArray(self.np.where(valid, data, 0), ~valid)

    def floats(self, data, valid):
        if valid.all():
            return data
        if not valid.any():
            return self.none()
        return self.np.where(valid, data, self.np.nan)

    def objects(self, values, codes, valid):
        """A column of Python values (values[code], None where not valid; in
        row order already), with the dtype pandas gives the same list, and
        _to_frame's Int64 for integers with unknowns."""
        np, pd = self.np, self.pd
        nv = len(values)
        slot = np.where(valid, codes, nv)  # nv: None
        counts = np.bincount(slot, minlength=nv + 1)
        used = [values[k] for k in np.flatnonzero(counts[:nv])]
        present = [v for v in used if v is not None]
        none_too = bool(counts[nv]) or len(present) < len(used)
        if not present:
            return self.none()
        if all(type(v) is int for v in present):
            try:
                ints = np.array([v if type(v) is int else 0 for v in values] + [0], np.int64)
            except OverflowError:
                raise _Unsure() from None
            data = ints[slot]
            if none_too:
                isnone = np.array([v is None for v in values] + [True], dtype=np.bool_)
                return pd.arrays.IntegerArray(data, isnone[slot])
            return data
        # pandas infers the same dtype from a list of these values as from the
        # whole column: decide it from the distinct ones.
        dtype = pd.Series(present + ([None] if none_too else [])).dtype
        if dtype.kind == "f":
            return np.array([np.nan if v is None else float(v) for v in values] + [np.nan],
                            np.float64)[slot]
        table = np.empty(nv + 1, dtype=object)
        for i, v in enumerate(values):
            table[i] = v
        table[nv] = None
        out = table[slot]
        return out if dtype == object else out.astype(dtype)

    def const(self, value):
        return self.objects([value], self.np.zeros(self.n, self.np.int32),
                            self.np.ones(self.n, self.np.bool_))


def _int_col(col, what):
    """(data, valid) of an integer column for arithmetic; a real column's
    Python values mix ints and floats, which numpy cannot follow."""
    if col is None:
        return None
    if col[0] != GPUFL_COLUMN_INT64:
        raise _Unsure(what)
    return col[1], col[2]


def _names(b, np, dset, ids):
    """(values, codes, valid) of a dictionary lookup of the id column (in
    row order): Contents.name's rule - None for a null id or one the
    dictionary lacks."""
    if ids is None:
        return [None], np.zeros(b.n, np.int32), np.zeros(b.n, np.bool_)
    data, valid = _int_col(ids, "ids")
    data, valid = b._take(data), b._take(valid)
    if dset is None or dset.n == 0:
        return [None], np.zeros(b.n, np.int32), np.zeros(b.n, np.bool_)
    if not dset.exact:
        raise _Unsure("dictionary")
    _, did, _, _ = dset.get("id")
    _, dcode, _, strings = dset.get("name")
    lo, hi = int(did.min()), int(did.max())
    if lo >= 0 and hi < (1 << 22):
        lut = np.full(hi + 2, -1, np.int32)
        lut[did] = dcode
        idx = np.where(valid & (data >= 0) & (data <= hi), data, hi + 1)
        codes = lut[idx]
    else:
        srt = np.argsort(did, kind="stable")
        sid = did[srt]
        pos = np.clip(np.searchsorted(sid, data), 0, len(sid) - 1)
        hit = valid & (sid[pos] == data)
        codes = np.where(hit, dcode[srt][pos], -1).astype(np.int32)
    ok = codes >= 0
    return strings, np.where(ok, codes, 0).astype(np.int32), ok


def _extras(cols, table, known_more=()):
    known = set(_logs.COLUMNS[table]) | _COMMON_KNOWN | set(known_more)
    return [c for c in cols.order if c not in known and c != DETAIL]


def _by_start(np, cols):
    """Row order by start (ts_ns), unknown last, stable (_logs's sort);
    None when the rows are in that order already."""
    ts = cols.get("ts_ns")
    data, valid = ts[1], ts[2]
    if valid.all() and bool((data[1:] >= data[:-1]).all()):
        return None
    return np.lexsort((np.where(valid, data, 0), ~valid))


def _span(b, np, cols, out):
    """start_ns, end_ns, duration_ns, duration_ms (kernels, memcpy)."""
    ts = _int_col(cols.get("ts_ns"), "ts_ns")
    start, sv = b._take(ts[0]), b._take(ts[1])
    dcol = cols.get("duration_ns")
    out["start_ns"] = b.ints(start, sv)
    out["duration_ns"] = b.numeric(dcol)
    if dcol is None:
        out["end_ns"] = b.none()
        out["duration_ms"] = b.none()
        return None
    if dcol[0] == GPUFL_COLUMN_INT64:
        dur, dv = b._take(dcol[1]), b._take(dcol[2])
        both = sv & dv
        end = start + dur
        # Python's ints do not wrap: a sum past int64 is not ours to give.
        if bool((both & (((start ^ end) & (dur ^ end)) < 0)).any()):
            raise _Unsure("end_ns")
        out["end_ns"] = b.ints(end, both)
        out["duration_ms"] = b.floats(dur.astype(np.float64) / 1e6, dv)
        return dur, dv
    raise _Unsure("real duration")


def _kernels(b, np, cols, c):
    b.order = _by_start(np, cols)
    out = {"session_id": b.const(c["session_id"])}
    _span(b, np, cols, out)
    for k in ("device_id", "stream_id", "corr_id", "kernel_id"):
        out[k] = b.numeric(cols.get(k))
    out["name"] = b.objects(*_names(b, np, c["dicts"]("kernel_dict"), cols.get("kernel_id")))
    out["num_regs"] = b.numeric(cols.get("num_regs"))
    out["dyn_shared_bytes"] = b.numeric(cols.get("dyn_shared"))
    det = cols.get(DETAIL)
    if det is None:
        raise _Unsure("no detail column")
    _, dcodes, dvalid, texts = det
    dcodes, dvalid = b._take(dcodes), b._take(dvalid)
    details = [json.loads(t) for t in texts]
    for colname, key in _logs._KERNEL_DETAIL.items():
        out[colname] = b.objects([d.get(key) for d in details], dcodes, dvalid)
    hd = cols.get("has_details")
    if hd is None:
        out["has_details"] = b.none()
    else:
        data, valid = _int_col(hd, "has_details")
        out["has_details"] = b.objects([False, True], (b._take(data) != 0).astype(np.int32),
                                       b._take(valid))
    for k in ("external_kind", "external_id"):
        out[k] = b.numeric(cols.get(k))
    for k in _extras(cols, "kernels", ("dyn_shared",)):
        out[k] = b.numeric(cols.get(k))
    return out


def _memcpy(b, np, cols, c):
    b.order = _by_start(np, cols)
    out = {"session_id": b.const(c["session_id"])}
    span = _span(b, np, cols, out)
    for k in ("device_id", "stream_id", "corr_id", "bytes", "copy_kind"):
        out[k] = b.numeric(cols.get(k))
    ck = cols.get("copy_kind")
    kinds = sorted(_logs.COPY_KINDS.items())
    if ck is None:
        out["kind"] = b.none()
    else:
        data, valid = _int_col(ck, "copy_kind")
        data, valid = b._take(data), b._take(valid)
        codes = np.full(b.n, -1, np.int32)
        for i, (k, _) in enumerate(kinds):
            codes[valid & (data == k)] = i
        out["kind"] = b.objects([v for _, v in kinds], np.maximum(codes, 0), codes >= 0)
    size = cols.get("bytes")
    if span is None or size is None:
        out["throughput_gbps"] = b.none()
    else:
        sdata, svalid = _int_col(size, "bytes")
        sdata, svalid = b._take(sdata), b._take(svalid)
        dur, dv = span
        ok = svalid & dv & (dur > 0)
        # int / int in Python is the exact quotient rounded once: numpy's
        # float64 division is the same only while both convert exactly.
        if bool((ok & ((np.abs(sdata) > 1 << 53) | (dur > 1 << 53))).any()):
            raise _Unsure("throughput")
        out["throughput_gbps"] = b.floats(sdata.astype(np.float64) /
                                          np.where(ok, dur, 1).astype(np.float64), ok)
    for k in ("src_device_id", "dst_device_id"):
        out[k] = b.numeric(cols.get(k))
    for k in _extras(cols, "memcpy"):
        out[k] = b.numeric(cols.get(k))
    return out


def _plain(table, named=(), fill=None):
    """A batch table in read order: session_id, then COLUMNS[table] from
    the batch, names through dictionaries (column -> (dictionary, id
    column)), fill(b, np, cols, out) for the rest."""
    def build(b, np, cols, c):
        out = {}
        for k in _logs.COLUMNS[table]:
            if k == "session_id":
                out[k] = b.const(c["session_id"])
            elif k in named:
                d, idcol = named[k]
                out[k] = b.objects(*_names(b, np, c["dicts"](d), cols.get(idcol)))
            else:
                out[k] = b.numeric(cols.get(k))
        if fill:
            fill(b, np, cols, out, c)
        for k in _extras(cols, table):
            out[k] = b.numeric(cols.get(k))
        return out
    return build


def _host_fill(b, np, cols, out, c):
    x = cols.get("cpu_pct_x100")
    if x is None:
        out["cpu_pct"] = b.none()
    elif x[0] == GPUFL_COLUMN_DOUBLE:
        out["cpu_pct"] = b.floats(x[1] / 100.0, x[2])
    else:
        out["cpu_pct"] = b.floats(x[1].astype(np.float64) / 100.0, x[2])


def _samples_fill(b, np, cols, out, c):
    """sample_kind_name and stall_reason_name (_logs._stall_name)."""
    sk = cols.get("sample_kind")
    kinds = sorted(_logs.SAMPLE_KINDS.items())
    if sk is None:
        out["sample_kind_name"] = out["stall_reason_name"] = b.none()
        return
    skd, skv = _int_col(sk, "sample_kind")
    codes = np.full(b.n, -1, np.int32)
    for i, (k, _) in enumerate(kinds):
        codes[skv & (skd == k)] = i
    out["sample_kind_name"] = b.objects([v for _, v in kinds], np.maximum(codes, 0), codes >= 0)
    mid = cols.get("metric_id")
    mnames, mcodes, mok = _names(b, np, c["dicts"]("metric_dict"), mid)
    mtrue = np.zeros(b.n, np.bool_)
    if mid is not None:
        d, v = _int_col(mid, "metric_id")
        mtrue = v & (d != 0)
    sr = cols.get("stall_reason")
    reasons = list(_logs.STALL_REASONS)
    rcode = np.full(b.n, -1, np.int64)
    if sr is not None:
        d, v = _int_col(sr, "stall_reason")
        rcode = np.where(v & (d >= 0) & (d < len(reasons)), d, -1)
    values = list(mnames) + reasons
    codes = np.where(mtrue, mcodes, len(mnames) + rcode)
    valid = skv & (skd == 0) & np.where(mtrue, mok, rcode >= 0)
    out["stall_reason_name"] = b.objects(values, np.where(valid, codes, 0).astype(np.int32),
                                         valid)


_BUILD = {
    "kernels": _kernels,
    "memcpy": _memcpy,
    "scope_events": _plain("scope_events", {"name": ("scope_name_dict", "name_id")}),
    "device_metrics": _plain("device_metrics"),
    "host_metrics": _plain("host_metrics", fill=_host_fill),
    "pm_samples": _plain("pm_samples", {"metric_name": ("metric_dict", "metric_id"),
                                        "scope_name": ("scope_name_dict", "scope_name_id")}),
    "scopes": _plain("scopes", {"function_name": ("function_dict", "function_id"),
                                "metric_name": ("metric_dict", "metric_id"),
                                "scope_name": ("scope_name_dict", "scope_name_id"),
                                "source_file": ("source_file_dict", "source_file_id")},
                     fill=_samples_fill),
}
TABLES = tuple(_BUILD)


def frame(pd, logs, table):
    """The DataFrame of table read through the C columns, or None (see the
    module's doc).  logs: the session's gpufl._logs.SessionLogs; its
    `problems` become this read's."""
    if _read is None or table not in _BUILD:
        return None
    try:
        import numpy as np
    except ImportError:
        return None
    opts = _Options()
    opts.session_id = logs.session_id.encode() if logs.session_id else None
    opts.batches = ",".join(_logs.TABLE_BATCHES[table]).encode()
    # the files the rows' reader reads: all, or GPUFlight's light read
    opts.one_file_per_channel = not logs.all_windows
    handle = ctypes.c_void_p()
    err = _FlError()
    from ._report_c import _interruptible
    path = logs.where.encode("utf-8", "surrogateescape")
    st = _interruptible(lambda: _read(path, ctypes.byref(opts), ctypes.byref(handle),
                                      ctypes.byref(err)))
    if st != 0:
        return None  # the rows' reader says what it finds there
    # The owner frees the columns once nothing views them.
    return _frame_of(pd, np, logs, table, handle, _Owner(handle.value))


def _frame_of(pd, np, logs, table, handle, owner):
    counts = _counts(handle).contents
    dicts = {}

    def dict_cols(name):
        if name not in dicts:
            p = _find(handle, name.encode())
            dicts[name] = _Cols(np, p.contents, owner) if p else None
        return dicts[name]
    p = _find(handle, _logs.TABLE_BATCHES[table][0].encode())
    if not p or p.contents.nrows == 0:
        return _empty(pd, table, counts, logs)
    cols = _Cols(np, p.contents, owner)
    if not cols.exact:
        return None
    b = _Builder(pd, np, cols.n)
    try:
        data = _BUILD[table](b, np, cols, {"session_id": logs.session_id, "dicts": dict_cols})
    except _Unsure:
        return None
    first = _logs.COLUMNS[table]
    keys = list(first) + [k for k in data if k not in first]
    # Not copied: the columns that view the C arrays keep them.
    df = pd.DataFrame({k: data[k] for k in keys}, columns=keys, copy=False)
    _take_counts(logs, counts)
    return df


def _empty(pd, table, counts, logs):
    """No rows: _to_frame's empty frame (every column of the table, no
    extras)."""
    _take_counts(logs, counts)
    keys = list(_logs.COLUMNS[table])
    return pd.DataFrame({k: [] for k in keys}, columns=keys)


def _take_counts(logs, counts):
    p = _logs._zero_problems()
    for k in p:
        if k in _COUNTS:
            p[k] = int(getattr(counts, k))
    logs.problems = p
