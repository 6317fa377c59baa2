"""gpufl: the flight recorder (seed 002's Python API) over libgpuprofile.

A thin ctypes layer over include/gpufl.h: the C library records on its own
threads; Python only passes options and opens and closes scopes.  Standard
library only.  See docs/python.md (installed by cmake --install as
<prefix>/share/doc/gpu-profile/python.md, e.g. /usr/local/share/doc/gpu-profile).

    import gpufl as gfl

    gfl.init(app_name="my_app", system_sample_rate_ms=50,
             continuous_system_sampling=True)
    with gfl.Scope("train"):
        ...
    gfl.shutdown()

What this module promises: init() takes every InitOptions field of the seed
as a keyword and returns True when a session started, False when the kill
switch is on (enabled=False, GPUFL_DISABLED) or the C library refused (a
GpuflWarning then says why, and last_error() keeps it) - it never raises for
a problem of the machine, so instrumented code keeps running.  Arguments
that are wrong in the code itself (unknown keyword, wrong type, removed
keyword) raise TypeError / ValueError at the call.  Scopes, system phases
and shutdown never fail: before init, after shutdown or when disabled they
do nothing.
"""

import ctypes
import enum
import functools
import os
import threading
import warnings
from typing import Optional, Tuple, Union

from gpu_profile._native import (c_enum as _c_enum, c_string as _c_string, declare as _declare,
                                 library_path)

__all__ = [
    "init",
    "shutdown",
    "Scope",
    "system_start",
    "system_stop",
    "BackendKind",
    "ProfilingEngine",
    "GpuflWarning",
    "is_active",
    "session_id",
    "session_dir",
    "last_session_dir",
    "flush",
    "last_error",
    "library_path",
    "upload_logs",
    "session",
    "UploadResult",
]

__version__ = "0.1.0"

# ------------------------------------------------------------------ enums

# BackendKind has a member named None, as in C++; Python cannot spell
# BackendKind.None, so None_ is an alias of the same value (the seed's
# trailing-underscore convention).  The functional API accepts the name.
BackendKind = enum.IntEnum("BackendKind",
                           [("Auto", 0), ("Nvidia", 1), ("Amd", 2), ("None", 3),
                            ("None_", 3)],
                           module=__name__, qualname="BackendKind")
BackendKind.__doc__ = ("Which device backend the recorder uses: Auto (NVIDIA if present), "
                       "Nvidia, Amd (not in this build), None / None_ (no device metrics).")


class ProfilingEngine(enum.IntEnum):
    """The engine ladder; each level adds to the one below (docs/gpufl.md)."""

    Monitor = 0
    Trace = 1
    PcSampling = 2
    SassMetrics = 3
    RangeProfiler = 4
    Deep = 5
    PmSampling = 6


# ------------------------------------------------------- C declarations

GPUFL_OK = 0
GPUFL_DISABLED = 1
# gpufl_status values by name (include/gpufl.h), for last_error() and
# ReportError: a name a program can compare, beside the C message.
STATUS_NAMES = {0: "GPUFL_OK", 1: "GPUFL_DISABLED", 2: "GPUFL_ERR_INVALID_ARG",
                3: "GPUFL_ERR_ENV", 4: "GPUFL_ERR_CONFIG", 5: "GPUFL_ERR_STATE",
                6: "GPUFL_ERR_IO", 7: "GPUFL_ERR_NO_MEMORY", 8: "GPUFL_ERR_THREAD",
                9: "GPUFL_ERR_BACKEND", 10: "GPUFL_ERR_NOT_SUPPORTED", 11: "GPUFL_ERR_UPLOAD"}
GPUFL_ERROR_MESSAGE_MAX = 1024

_log_fn_t = ctypes.CFUNCTYPE(None, ctypes.c_char_p, ctypes.c_void_p)


class _FlError(ctypes.Structure):
    _fields_ = [
        ("status", _c_enum),
        ("message", ctypes.c_char * GPUFL_ERROR_MESSAGE_MAX),
    ]


class _FlOptions(ctypes.Structure):
    _fields_ = [
        ("app_name", ctypes.c_char_p),
        ("log_path", ctypes.c_char_p),
        ("backend_url", ctypes.c_char_p),
        ("api_key", ctypes.c_char_p),
        ("api_path", ctypes.c_char_p),
        ("remote_upload", ctypes.c_bool),
        ("enable_stack_trace", ctypes.c_bool),
        ("enable_source_collection", ctypes.c_bool),
        ("enable_external_correlation", ctypes.c_bool),
        ("enable_synchronization", ctypes.c_bool),
        ("enable_memory_tracking", ctypes.c_bool),
        ("enable_cuda_graphs_tracking", ctypes.c_bool),
        ("system_sample_rate_ms", ctypes.c_int),
        ("kernel_sample_rate_ms", ctypes.c_int),
        ("continuous_system_sampling", ctypes.c_bool),
        ("backend", _c_enum),
        ("profiling_engine", _c_enum),
        ("config_file", ctypes.c_char_p),
        ("flush_logs_always", ctypes.c_bool),
        ("enable_debug_output", ctypes.c_bool),
        ("enabled", ctypes.c_bool),
        ("log_fn", _log_fn_t),
        ("log_user", ctypes.c_void_p),
        ("cupti_buffer_kib", ctypes.c_int),
        ("cupti_max_buffers", ctypes.c_int),
        ("compact_kernel_details", ctypes.c_bool),
        ("pc_sampling_period", ctypes.c_int),
        ("pm_sampling_metrics", ctypes.c_char_p),
        ("pm_sampling_interval_us", ctypes.c_int),
        ("pm_sampling_max_samples", ctypes.c_int),
        ("metrics", ctypes.c_char_p),
        ("range_per_kernel", ctypes.c_bool),
        ("sass_all_kernels", ctypes.c_bool),
        ("capture_range", ctypes.c_char_p),
        ("capture_range_end", ctypes.c_char_p),
        ("capture_delay_ms", ctypes.c_int),
        ("capture_duration_ms", ctypes.c_int),
    ]


class _FlScope(ctypes.Structure):
    _fields_ = [
        ("instance_id", ctypes.c_uint64),
        ("start_ticks", ctypes.c_uint64),
        ("name_id", ctypes.c_uint32),
        ("generation", ctypes.c_uint32),
        ("depth", ctypes.c_uint32),
        ("reserved_", ctypes.c_uint32),
    ]


_fl_version = _declare("gpufl_version", ctypes.c_char_p)
_fl_strerror = _declare("gpufl_strerror", ctypes.c_char_p, _c_enum)
_fl_options_init = _declare("gpufl_init_options_init", None, ctypes.POINTER(_FlOptions))
_fl_init = _declare("gpufl_init", _c_enum, ctypes.POINTER(_FlOptions), ctypes.POINTER(_FlError))
_fl_shutdown = _declare("gpufl_shutdown", None)
_fl_is_active = _declare("gpufl_is_active", ctypes.c_bool)
_fl_session_id = _declare("gpufl_session_id", ctypes.c_size_t, ctypes.c_char_p, ctypes.c_size_t)
_fl_session_dir = _declare("gpufl_session_dir", ctypes.c_size_t, ctypes.c_char_p,
                           ctypes.c_size_t)
_fl_flush = _declare("gpufl_flush", None)
_fl_scope_begin = _declare("gpufl_scope_begin", _FlScope, ctypes.c_char_p)
_fl_scope_end = _declare("gpufl_scope_end", None, ctypes.POINTER(_FlScope))
_fl_system_start = _declare("gpufl_system_start", None, ctypes.c_char_p)
_fl_system_stop = _declare("gpufl_system_stop", None, ctypes.c_char_p)
_fl_engine_parse = _declare("gpufl_engine_parse", _c_enum, ctypes.c_char_p,
                            ctypes.POINTER(ctypes.c_int))
_fl_backend_parse = _declare("gpufl_backend_parse", _c_enum, ctypes.c_char_p,
                             ctypes.POINTER(ctypes.c_int))

c_library_version = _fl_version().decode()

# ------------------------------------------------------------- warnings


class GpuflWarning(RuntimeWarning):
    """init() could not start a session; the message is the C library's."""


_last_error: Optional[Tuple[str, str]] = None
_last_session_dir: Optional[str] = None
# True after an init the kill switch turned off, until the next init:
# Scope and the other calls then skip even the C call.
_disabled = False
_lock = threading.Lock()
_get_ident = threading.get_ident

# ----------------------------------------------------------------- init

# The seed's InitOptions, in its order, with its defaults.
_STRING_FIELDS = ("app_name", "log_path", "backend_url", "api_key", "api_path", "config_file",
                  "pm_sampling_metrics", "metrics", "capture_range", "capture_range_end")
_BOOL_FIELDS = ("remote_upload", "enable_stack_trace", "enable_source_collection",
                "enable_external_correlation", "enable_synchronization",
                "enable_memory_tracking", "enable_cuda_graphs_tracking",
                "continuous_system_sampling", "flush_logs_always", "enable_debug_output",
                "enabled", "compact_kernel_details", "range_per_kernel",
                "sass_all_kernels")
_INT_FIELDS = ("system_sample_rate_ms", "kernel_sample_rate_ms", "cupti_buffer_kib",
               "cupti_max_buffers", "pc_sampling_period", "pm_sampling_interval_us",
               "pm_sampling_max_samples", "capture_delay_ms", "capture_duration_ms")

# Keywords of pre-1.0 releases (the seed's migration table): each is a
# TypeError that says what to write instead.
_REMOVED = {
    "enable_profiling": "profiling_engine=gpufl.ProfilingEngine.Monitor (for "
                        "enable_profiling=False) or profiling_engine="
                        "gpufl.ProfilingEngine.PcSampling (for enable_profiling=True; the "
                        "default is now Monitor)",
    "enable_perf_scope": "profiling_engine=gpufl.ProfilingEngine.RangeProfiler",
    "remote_config": "backend_url=... (same meaning)",
}


def _enum_arg(name, value, cls, parse):
    if isinstance(value, cls):
        return int(value)
    if isinstance(value, str):
        out = ctypes.c_int()
        if parse(value.encode(), ctypes.byref(out)) != GPUFL_OK:
            names = [m for m in cls.__members__ if not m.endswith("_")]
            raise ValueError("%s=%r is not a %s: use one of %s" %
                             (name, value, cls.__name__, ", ".join(names)))
        return out.value
    raise TypeError("%s must be a gpufl.%s (or its name as a string), not %r" %
                    (name, cls.__name__, value))



def _make_options(given):
    """The C options for init()'s keywords (a dict of every field); also
    returns the bytes objects the struct points at, to keep alive."""
    o = _FlOptions()
    _fl_options_init(ctypes.byref(o))
    keep = []
    for name in _STRING_FIELDS:
        b = _c_string(name, given[name])
        keep.append(b)
        setattr(o, name, b)
    for name in _BOOL_FIELDS:
        v = given[name]
        if not isinstance(v, (bool, int)):
            raise TypeError("%s must be a bool, not %r" % (name, v))
        setattr(o, name, bool(v))
    for name in _INT_FIELDS:
        v = given[name]
        if isinstance(v, bool) or not isinstance(v, int):
            raise TypeError("%s must be an int, not %r" % (name, v))
        if not -2**31 <= v < 2**31:
            raise ValueError("%s=%d is out of range" % (name, v))
        setattr(o, name, v)
    o.backend = _enum_arg("backend", given["backend"], BackendKind, _fl_backend_parse)
    o.profiling_engine = _enum_arg("profiling_engine", given["profiling_engine"],
                                   ProfilingEngine, _fl_engine_parse)
    return o, keep


def init(*, app_name: str = "gpufl", log_path: str = "", backend_url: str = "",
         api_key: str = "", api_path: str = "", remote_upload: bool = False,
         enable_stack_trace: bool = False, enable_source_collection: bool = True,
         enable_external_correlation: bool = True, enable_synchronization: bool = True,
         enable_memory_tracking: bool = False, enable_cuda_graphs_tracking: bool = False,
         system_sample_rate_ms: int = 0, kernel_sample_rate_ms: int = 0,
         continuous_system_sampling: bool = False,
         backend: Union[BackendKind, str] = BackendKind.Auto,
         profiling_engine: Union[ProfilingEngine, str] = ProfilingEngine.Monitor,
         config_file: str = "", flush_logs_always: bool = False,
         enable_debug_output: bool = False, enabled: bool = True,
         cupti_buffer_kib: int = 0, cupti_max_buffers: int = 0,
         compact_kernel_details: bool = False, pc_sampling_period: int = 0,
         pm_sampling_metrics: str = "", pm_sampling_interval_us: int = 0,
         pm_sampling_max_samples: int = 0,
         metrics: Union[str, list, tuple] = "", range_per_kernel: bool = False,
         sass_all_kernels: bool = False, capture_range: str = "",
         capture_range_end: str = "", capture_delay_ms: int = 0,
         capture_duration_ms: int = 0, **legacy) -> bool:
    """Start a recording session: every InitOptions field is a keyword.

    Returns True when a session started; False when the kill switch is on
    (enabled=False or GPUFL_DISABLED=1/true/yes/on, which wins) or the C
    library refused (a GpuflWarning carries its message, last_error() keeps
    it).  A field left at its default may be set by its GPUFL_* environment
    variable or by config_file (docs/gpufl.md).  cupti_buffer_kib and
    cupti_max_buffers are ours, not the seed's (the Trace engine's buffers),
    and so is compact_kernel_details (True: a kernel_detail per launch
    configuration instead of one per launch), and pc_sampling_period
    (PcSampling: 2^n cycles between samples, 5..31; 0 = the default 18),
    and pm_sampling_metrics / pm_sampling_interval_us / pm_sampling_max_samples
    (PmSampling: comma-separated metrics, "" = the default set; microseconds
    between samples, 0 = 100; samples per decode, 0 = 4096);
    metrics (RangeProfiler: CUPTI metric names, a comma-separated string or
    a list; "" = the default set) and range_per_kernel (RangeProfiler: one
    range per kernel, kernel replay, instead of one per outermost scope);
    sass_all_kernels (SassMetrics: count every kernel instead of only those
    run inside outermost scopes, the default); capture_range
    ("cudaProfilerApi" or "nvtx:NAME": trace rows only inside those
    windows), capture_range_end ("stop", "repeat" or "repeat:N"),
    capture_delay_ms / capture_duration_ms (trace rows only from delay_ms
    after init, for duration_ms; 0 = none): docs/gpufl.md "Capture windows".
    """
    global _last_error, _disabled
    given = dict(locals())
    del given["legacy"]
    if not isinstance(metrics, str):
        given["metrics"] = ",".join(str(m) for m in metrics)
    for key in legacy:
        if key in _REMOVED:
            raise TypeError("init() got an unexpected keyword argument %r: it was removed in "
                            "v1.0; use %s" % (key, _REMOVED[key]))
    if "sampling_auto_start" in legacy:
        value = legacy.pop("sampling_auto_start")
        warnings.warn("gpufl.init(sampling_auto_start=...) is deprecated: it was renamed "
                      "continuous_system_sampling in 1.0.4", DeprecationWarning, stacklevel=2)
        if continuous_system_sampling and not value:
            raise TypeError("init() got both continuous_system_sampling=True and "
                            "sampling_auto_start=False: give only continuous_system_sampling")
        given["continuous_system_sampling"] = continuous_system_sampling or value
    if legacy:
        raise TypeError("init() got an unexpected keyword argument %r" % next(iter(legacy)))

    o, keep = _make_options(given)
    if remote_upload:
        # The seed's one-release shim: the C library logs its deprecation
        # line; here an atexit handler calls upload_logs() (docs/python.md).
        warnings.warn("gpufl.init(remote_upload=True) is deprecated (v1.1): the session is "
                      "uploaded at interpreter exit; call gpufl.upload_logs() after shutdown() "
                      "or use `with gpufl.session(...)` instead", DeprecationWarning,
                      stacklevel=2)

    err = _FlError()
    with _lock:
        st = _fl_init(ctypes.byref(o), ctypes.byref(err))
        if st == GPUFL_OK:
            _disabled = False
            _last_error = None
            _remember_dir()
            if remote_upload:
                _upload.register_remote_upload(_last_session_dir, backend_url, api_key, api_path)
            return True
        msg = err.message.decode("utf-8", "replace") or _fl_strerror(st).decode()
        _last_error = (STATUS_NAMES.get(st, "status %d" % st), msg)
        if st == GPUFL_DISABLED:
            _disabled = True
            return False
    warnings.warn("gpufl.init: no session started: %s" % msg, GpuflWarning, stacklevel=2)
    return False


def _read_str(fn):
    n = fn(None, 0)
    if n == 0:
        return None
    buf = ctypes.create_string_buffer(n + 1)
    fn(buf, n + 1)
    return buf.value.decode("utf-8", "replace")


def _remember_dir():
    global _last_session_dir
    d = _read_str(_fl_session_dir)
    if d:
        # Absolute: the caller may change directory before reading it.
        _last_session_dir = os.path.abspath(d)


def shutdown() -> None:
    """Flush everything and end the session; a no-op without one."""
    if _disabled:
        return
    with _lock:
        _remember_dir()
        _fl_shutdown()


def is_active() -> bool:
    """Whether a session is recording."""
    return bool(_fl_is_active())


def session_id() -> Optional[str]:
    """The active session's id, or None."""
    return _read_str(_fl_session_id)


def session_dir() -> Optional[str]:
    """The active session's directory, or None."""
    return _read_str(_fl_session_dir)


def last_session_dir() -> Optional[str]:
    """The directory of the session this process recorded last (active or
    shut down), or None."""
    return session_dir() or _last_session_dir


def flush() -> None:
    """Write out everything recorded so far (waits about a second at most)."""
    if not _disabled:
        _fl_flush()


def last_error() -> Optional[Tuple[str, str]]:
    """(status name, message) of the last init() that did not start a
    session (the kill switch included), e.g. ("GPUFL_ERR_ENV", "..."); None
    after one that did."""
    return _last_error


# --------------------------------------------------------- scopes, phases


def _name_arg(name):
    if isinstance(name, str):
        return name.encode()
    if isinstance(name, bytes):
        return name
    raise TypeError("a scope or phase name must be a str, not %r" % (name,))


_scope_names = {}  # str -> its encoded bytes, for Scope


class Scope:
    """A named region: `with gpufl.Scope("train"):` or `@gpufl.Scope("step")`.

    Scopes nest per thread; kernels launched inside are attributed to the
    innermost one.  One Scope object may be entered by several threads and
    re-entered: each entry is its own C scope.  Before init, after shutdown
    or with the kill switch on, nothing is recorded.
    """

    __slots__ = ("name", "_bname", "_open")

    def __init__(self, name: str):
        # Names are encoded once per distinct name: `with gfl.Scope("x"):`
        # builds a Scope per entry, and the C library's own name cache is
        # keyed by the pointer, which a cached bytes object keeps stable.
        b = _scope_names.get(name) if type(name) is str else None
        if b is None:
            b = _name_arg(name)
            if len(_scope_names) < 4096:
                _scope_names[name] = b
        self._bname = b
        self.name = name
        # thread ident -> its open C scope, or a list of them when this
        # object is re-entered on that thread.  Each thread touches only its
        # own key, so the GIL's atomic dict operations are enough.
        self._open = {}

    def __enter__(self):
        if _disabled:
            return self
        s = _fl_scope_begin(self._bname)
        if s.instance_id:
            d = self._open
            tid = _get_ident()
            prev = d.get(tid)
            if prev is None:
                d[tid] = s
            elif type(prev) is list:
                prev.append(s)
            else:
                d[tid] = [prev, s]
        return self

    def __exit__(self, exc_type, exc, tb):
        d = self._open
        tid = _get_ident()
        v = d.pop(tid, None)
        if v is None:
            return False
        if type(v) is list:
            _fl_scope_end(v.pop())
            if v:
                d[tid] = v
        else:
            _fl_scope_end(v)
        return False

    def __call__(self, fn):
        bname = self._bname

        @functools.wraps(fn)
        def wrapper(*args, **kwargs):
            if _disabled:
                return fn(*args, **kwargs)
            s = _fl_scope_begin(bname)
            try:
                return fn(*args, **kwargs)
            finally:
                _fl_scope_end(s)

        return wrapper

    def __repr__(self):
        return "gpufl.Scope(%r)" % (self.name,)


def system_start(name: str) -> None:
    """Start a system phase (the sampler runs between system_start and
    system_stop when continuous_system_sampling is False)."""
    if not _disabled:
        _fl_system_start(_name_arg(name))


def system_stop(name: str) -> None:
    """End the system phase started with the same name."""
    if not _disabled:
        _fl_system_stop(_name_arg(name))


# ----------------------------------------------------------------- upload
# (at the end: _upload reads this module's state when called)
from gpufl import _upload  # noqa: E402
from gpufl._upload import UploadResult, session, upload_logs  # noqa: E402,F401
