"""gpufl: the flight recorder (seed 002's Python API, as GPUFlight 1.3 spells
it) over libgpuprofile.

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
as a keyword (the first ones also by position, in GPUFlight 1.3's order, or
an InitOptions) and returns True when a session started, False when the kill
switch is on (enabled=False, GPUFL_DISABLED) or the C library refused (a
GpuflWarning then says why, and last_error() keeps it) - it never raises for
a problem of the machine, so instrumented code keeps running.  Arguments
that are wrong in the code itself (unknown keyword, wrong type, removed
keyword) raise TypeError / ValueError at the call.  Scopes, system phases
and shutdown never fail: before init, after shutdown or when disabled they
do nothing.  clean_logs() deletes only session files (docs/python.md).
"""

import ctypes
import enum
import functools
import inspect
import os
import re
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
    "push_external_op",
    "pop_external_op",
    "op_id",
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
    "InitOptions",
    "clean_logs",
    "recording",
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
                       "Nvidia, Amd (ROCm SMI), None / None_ (no device metrics).")


class ProfilingEngine(enum.IntEnum):
    """The engine ladder; each level adds to the one below (docs/gpufl.md)."""

    Monitor = 0
    Trace = 1
    PcSampling = 2
    SassMetrics = 3
    RangeProfiler = 4
    Deep = 5
    PmSampling = 6
    # GPUFlight 1.3's name for RangeProfiler with range_per_kernel=True (one
    # range per kernel, kernel replay); Python only: init() maps it.
    RangeProfilerKernelReplay = 7


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
        ("rotate_size", ctypes.c_char_p),
        ("rotate_interval_ms", ctypes.c_int),
        ("max_disk", ctypes.c_char_p),
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
_fl_scope_begin_bench = _declare("gpufl_scope_begin_bench", _FlScope, ctypes.c_char_p,
                                 ctypes.c_uint32, ctypes.c_uint32)
_fl_scope_end = _declare("gpufl_scope_end", None, ctypes.POINTER(_FlScope))
_fl_system_start = _declare("gpufl_system_start", None, ctypes.c_char_p)
_fl_system_stop = _declare("gpufl_system_stop", None, ctypes.c_char_p)
_fl_push_op = _declare("gpufl_push_external_op", _c_enum, ctypes.c_char_p,
                       ctypes.POINTER(ctypes.c_uint64))
_fl_pop_op = _declare("gpufl_pop_external_op", None)
_fl_op_id = _declare("gpufl_op_id", ctypes.c_uint64, ctypes.c_char_p)
_fl_engine_parse = _declare("gpufl_engine_parse", _c_enum, ctypes.c_char_p,
                            ctypes.POINTER(ctypes.c_int))
_fl_backend_parse = _declare("gpufl_backend_parse", _c_enum, ctypes.c_char_p,
                             ctypes.POINTER(ctypes.c_int))

c_library_version = _fl_version().decode()

# ------------------------------------------------------------- warnings


class GpuflWarning(RuntimeWarning):
    """init() could not start a session; the message is the C library's."""


_last_error: Optional[Tuple[str, str]] = None
# For clean_logs (GPUFlight's names): whether init() started the session
# now recording, and the log_path / app_name of the last init().
_session_active = False
_last_log_path: Optional[str] = None
_last_app_name: Optional[str] = None
_last_session_dir: Optional[str] = None
# True after an init the kill switch turned off, until the next init:
# Scope and the other calls then skip even the C call.
_disabled = False
_lock = threading.Lock()
_get_ident = threading.get_ident

# ----------------------------------------------------------------- init

# The seed's InitOptions, in its order, with its defaults.
_STRING_FIELDS = ("app_name", "log_path", "backend_url", "api_key", "api_path", "config_file",
                  "pm_sampling_metrics", "metrics", "capture_range", "capture_range_end",
                  "rotate_size", "max_disk")
_BOOL_FIELDS = ("remote_upload", "enable_stack_trace", "enable_source_collection",
                "enable_external_correlation", "enable_synchronization",
                "enable_memory_tracking", "enable_cuda_graphs_tracking",
                "continuous_system_sampling", "flush_logs_always", "enable_debug_output",
                "enabled", "compact_kernel_details", "range_per_kernel",
                "sass_all_kernels")
_INT_FIELDS = ("system_sample_rate_ms", "kernel_sample_rate_ms", "cupti_buffer_kib",
               "cupti_max_buffers", "pc_sampling_period", "pm_sampling_interval_us",
               "pm_sampling_max_samples", "capture_delay_ms", "capture_duration_ms",
               "rotate_interval_ms")

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
    eng = given["profiling_engine"]
    if eng is ProfilingEngine.RangeProfilerKernelReplay or (
            isinstance(eng, str) and eng.lower() == "rangeprofilerkernelreplay"):
        given = dict(given, profiling_engine=ProfilingEngine.RangeProfiler,
                     range_per_kernel=True)
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


def _init_keywords(*, app_name: str = "gpufl", log_path: str = "", backend_url: str = "",
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
         capture_duration_ms: int = 0, rotate_size: Union[str, int] = "",
         rotate_interval_ms: int = 0, max_disk: Union[str, int] = "", **legacy) -> bool:
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
    after init, for duration_ms; 0 = none): docs/gpufl.md "Capture windows";
    rotate_size / rotate_interval_ms / max_disk (bounded long runs: windows
    <channel>.<N>.log.gz past a size such as "64M" or an age, and detail
    counted instead of written past a disk budget): docs/gpufl.md
    "Rotation and max_disk".
    """
    global _last_error, _disabled
    given = dict(locals())
    del given["legacy"]
    if not isinstance(metrics, str):
        given["metrics"] = ",".join(str(m) for m in metrics)
    for size in ("rotate_size", "max_disk"):
        if isinstance(given[size], int) and not isinstance(given[size], bool):
            given[size] = str(given[size])
    for key in legacy:
        if key in _REMOVED:
            raise TypeError("init() got an unexpected keyword argument %r: it was removed in "
                            "v1.0; use %s" % (key, _REMOVED[key]))
    if "sampling_auto_start" in legacy:
        # Renamed in 1.0.4, removed in 1.2 (GPUFlight 1.3 raises too).
        raise TypeError("init(sampling_auto_start=...) was removed in v1.2: use "
                        "continuous_system_sampling (False: sample only inside scopes and "
                        "between system_start/system_stop; True: from init to shutdown)")
    if legacy:
        raise TypeError("init() got an unexpected keyword argument %r" % next(iter(legacy)))

    if remote_upload:
        # The seed's one-release shim ended with v1.2 (GPUFlight 1.3 raises
        # too): nothing is uploaded during or at the end of a session by
        # itself any more.
        raise TypeError("init(remote_upload=True) was removed in v1.2: upload after the "
                        "session ends - call gpufl.upload_logs() after gpufl.shutdown(), or "
                        "use `with gpufl.session(backend_url=..., api_key=...):`")
    o, keep = _make_options(given)

    err = _FlError()
    with _lock:
        st = _fl_init(ctypes.byref(o), ctypes.byref(err))
        # The kill switch is the last init's: a refused init that was not
        # switched off leaves gpufl enabled (GPUFlight's rule).
        _disabled = st == GPUFL_DISABLED
        if st == GPUFL_OK:
            _last_error = None
            _remember_dir()
            return True
        msg = err.message.decode("utf-8", "replace") or _fl_strerror(st).decode()
        _last_error = (STATUS_NAMES.get(st, "status %d" % st), msg)
        if st == GPUFL_DISABLED:
            return False
    warnings.warn("gpufl.init: no session started: %s" % msg, GpuflWarning, stacklevel=3)
    return False


def _env_disabled():
    return os.environ.get("GPUFL_DISABLED", "").strip().lower() in ("1", "true", "yes", "on")


# GPUFlight 1.3's positional order (its binding's gpufl.init), as far as
# this build has the fields; the rest are keywords only.
_POSITIONAL = ("app_name", "log_path", "continuous_system_sampling", "system_sample_rate_ms",
               "kernel_sample_rate_ms", "backend", "enable_debug_output", "enable_stack_trace",
               "enable_source_collection", "profiling_engine", "config_file",
               "enable_external_correlation", "enable_synchronization",
               "enable_memory_tracking", "enable_cuda_graphs_tracking",
               "pm_sampling_interval_us", "pm_sampling_max_samples")


def init(*args, **kwargs) -> bool:
    """Start a recording session.  init(options) with an InitOptions, or
    init(app_name, log_path, ...) with the fields as GPUFlight 1.3 orders
    them (_POSITIONAL) and every field as a keyword; a keyword overrides
    the InitOptions' field.  See _init_keywords for the fields."""
    global _session_active, _last_log_path, _last_app_name, _disabled, _last_error
    if args and isinstance(args[0], InitOptions):
        if len(args) > 1:
            raise TypeError("init(options) takes no other positional argument; give the "
                            "other fields as keywords")
        given = args[0]._fields()
        given.update(kwargs)
        kwargs, args = given, ()
    if len(args) > len(_POSITIONAL):
        raise TypeError("init() takes at most %d positional arguments (%s), %d given; give "
                        "the others as keywords" % (len(_POSITIONAL), ", ".join(_POSITIONAL),
                                                    len(args)))
    if _env_disabled():
        # GPUFlight's reading of the kill switch (surrounding blanks
        # allowed); the C library reads the same values, unpadded.
        _disabled, _session_active = True, False
        _last_error = ("GPUFL_DISABLED", "GPUFL_DISABLED=%s: gpufl is switched off"
                       % os.environ["GPUFL_DISABLED"].strip())
        return False
    for name, value in zip(_POSITIONAL, args):
        if name in kwargs:
            raise TypeError("init() got multiple values for argument %r" % name)
        kwargs[name] = value
    started = _init_keywords(**kwargs)
    # For clean_logs(): where this init writes, and whether it still does.
    _last_app_name = kwargs.get("app_name", "gpufl")
    _last_log_path = kwargs.get("log_path") or None
    # A refused second init leaves the first session recording.
    _session_active = started or bool(_fl_is_active())
    return started


class InitOptions:
    """The seed's InitOptions (and this build's additions) as an object:
    every field of init(), with init()'s defaults; init(options) starts a
    session with them.  Fields are plain attributes, checked when init()
    reads them; a name that is not a field is an AttributeError."""

    __slots__ = tuple(p.name for p in inspect.signature(_init_keywords).parameters.values()
                      if p.kind is inspect.Parameter.KEYWORD_ONLY)

    def __init__(self, **fields):
        for p in inspect.signature(_init_keywords).parameters.values():
            if p.kind is inspect.Parameter.KEYWORD_ONLY:
                setattr(self, p.name, p.default)
        for k, v in fields.items():
            if k not in self.__slots__:
                raise TypeError("InitOptions has no field %r" % k)
            setattr(self, k, v)

    def _fields(self):
        return {k: getattr(self, k) for k in self.__slots__}

    def __eq__(self, other):
        return isinstance(other, InitOptions) and self._fields() == other._fields()

    def __repr__(self):
        # The key is a secret: said to be set, never shown.
        shown = ("%s=%r" % (k, "<set>" if k == "api_key" and v else v)
                 for k, v in self._fields().items())
        return "gpufl.InitOptions(%s)" % ", ".join(shown)


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
    if _disabled and not _fl_is_active():
        return  # switched off: the C library is not even asked
    global _session_active
    with _lock:
        _remember_dir()
        _fl_shutdown()
        _session_active = False


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


_scope_names = {}  # str -> its encoded bytes, for _CScope


def _scope_name(name):
    # Names are encoded once per distinct name: `with gfl.Scope("x"):`
    # builds a scope per entry, and the C library's own name cache is
    # keyed by the pointer, which a cached bytes object keeps stable.
    b = _scope_names.get(name) if type(name) is str else None
    if b is None:
        b = _name_arg(name)
        if type(name) is str and len(_scope_names) < 4096:
            _scope_names[name] = b
    return b


def _count_arg(what, v):
    if isinstance(v, bool) or not isinstance(v, int):
        raise TypeError("Scope(%s=...) must be an int, not %r" % (what, v))
    if v < 0:
        raise ValueError("Scope(%s=...) must be >= 0, not %d" % (what, v))
    if v > 0xFFFFFFFF:
        raise ValueError("Scope(%s=...) must be at most 4294967295 (the wire's uint32), not %d"
                         % (what, v))
    return v


class _CScope:
    """One C scope (gpufl_scope_begin / _end), entered once: GPUFlight's
    binding class of the same name, which Scope builds per entry.  repeat
    and warmup go on the scope's begin row (gpufl_scope_begin_bench); tag
    is GPUFlight's too, which neither it nor this recorder writes."""

    __slots__ = ("_bname", "_s", "_repeat", "_warmup")

    def __init__(self, name, tag="", *, repeat=0, warmup=0):
        self._bname = _scope_name(name)
        self._repeat = _count_arg("repeat", repeat)
        self._warmup = _count_arg("warmup", warmup)
        self._s = None

    def __enter__(self):
        if self._repeat or self._warmup:
            s = _fl_scope_begin_bench(self._bname, self._repeat, self._warmup)
        else:
            s = _fl_scope_begin(self._bname)
        self._s = s if s.instance_id else None
        return self

    def __exit__(self, exc_type=None, exc=None, tb=None):
        s, self._s = self._s, None
        if s is not None:
            _fl_scope_end(s)
        return False


# The module's own _CScope: GPUFlight's tests (and a user's) may replace
# gpufl._CScope to watch scopes; Scope then builds one per entry.
_NATIVE_CSCOPE = _CScope


class Scope:
    """A named region, GPUFlight 1.3's Scope(name, tag="", *, repeat=None,
    warmup=0): `with gpufl.Scope("train"):`, `@gpufl.Scope("step")`, or a
    benchmark loop `for i in gpufl.Scope("mm", repeat=10, warmup=3):` that
    yields -3..-1 inside a "mm_warmup" scope, then 0..9 inside "mm".

    Scopes nest per thread; kernels launched inside are attributed to the
    innermost one.  One Scope object may be entered by several threads and
    re-entered: each entry is its own C scope.  Before init, after shutdown
    or with the kill switch on, nothing is recorded (the loop still runs).
    A wrong argument raises at the call: TypeError for a type, ValueError
    for a negative repeat or warmup.
    """

    __slots__ = ("name", "tag", "repeat", "warmup", "_bname", "_open")

    def __init__(self, name: str, tag: str = "", *, repeat: Optional[int] = None,
                 warmup: int = 0):
        # A name that is not a string fails here, not at entry.  The
        # common case (a known name, no loop) costs no call: the seed
        # builds a Scope per `with`.
        b = _scope_names.get(name) if type(name) is str else None
        self._bname = b if b is not None else _scope_name(name)
        if type(tag) is not str and not isinstance(tag, str):
            raise TypeError("a scope's tag must be a str, not %r" % (tag,))
        self.name = name
        self.tag = tag
        self.repeat = repeat if repeat is None else _count_arg("repeat", repeat)
        self.warmup = warmup if type(warmup) is int and 0 <= warmup <= 0xFFFFFFFF else (
            _count_arg("warmup", warmup))
        # thread ident -> its open C scopes (a list when this object is
        # re-entered on that thread).  Each thread touches only its own
        # key, so the GIL's atomic dict operations are enough.
        self._open = {}

    def __enter__(self):
        if _disabled:
            return self
        if _CScope is _NATIVE_CSCOPE:
            # The C scope itself, without a _CScope object: this is the
            # hot path (docs/performance.md, "Python": <= 2 us a scope).
            inner = _fl_scope_begin(self._bname)
            if not inner.instance_id:
                return self
        else:
            inner = _CScope(self.name, self.tag)
            inner.__enter__()
        d = self._open
        tid = _get_ident()
        prev = d.get(tid)
        if prev is None:
            d[tid] = inner
        elif type(prev) is list:
            prev.append(inner)
        else:
            d[tid] = [prev, inner]
        return self

    def __exit__(self, exc_type, exc, tb):
        d = self._open
        tid = _get_ident()
        v = d.pop(tid, None)
        if v is None:
            return False
        if type(v) is list:
            inner = v.pop()
            if v:
                d[tid] = v
        else:
            inner = v
        if type(inner) is _FlScope:
            _fl_scope_end(inner)
        else:
            inner.__exit__(exc_type, exc, tb)
        return False

    def __call__(self, fn):
        name, tag, bname = self.name, self.tag, self._bname

        @functools.wraps(fn)
        def wrapper(*args, **kwargs):
            if _disabled:
                return fn(*args, **kwargs)
            if _CScope is _NATIVE_CSCOPE:
                s = _fl_scope_begin(bname)
                try:
                    return fn(*args, **kwargs)
                finally:
                    _fl_scope_end(s)
            with _CScope(name, tag):
                return fn(*args, **kwargs)

        return wrapper

    def __iter__(self):
        # Checked here, not at the first next(): `for _ in Scope("x")`
        # fails on entry to the loop.
        if self.repeat is None:
            raise TypeError("a Scope is iterable only with repeat=N (the measured iterations): "
                            "use `with gpufl.Scope(...):` otherwise")
        return self._iterate()

    def _iterate(self):
        name, tag, repeat, warmup = self.name, self.tag, self.repeat, self.warmup
        if _disabled:
            yield from range(-warmup, repeat)
            return
        # Warm-up iterations in their own "<name>_warmup" scope, closed
        # before the measured scope opens (GPUFlight's BenchInvoker rule),
        # so a report tells cold-start cost from steady state.
        if warmup > 0:
            w = _CScope(name + "_warmup", tag, repeat=warmup, warmup=0)
            w.__enter__()
            try:
                yield from range(-warmup, 0)
            finally:
                w.__exit__(None, None, None)
        inner = _CScope(name, tag, repeat=repeat, warmup=warmup)
        inner.__enter__()
        try:
            yield from range(repeat)
        finally:
            inner.__exit__(None, None, None)

    def __repr__(self):
        extra = "" if self.repeat is None else ", repeat=%d, warmup=%d" % (self.repeat,
                                                                          self.warmup)
        return "gpufl.Scope(%r%s%s)" % (self.name, ", %r" % self.tag if self.tag else "", extra)


def system_start(name: str) -> None:
    """Start a system phase (the sampler runs between system_start and
    system_stop when continuous_system_sampling is False)."""
    if not _disabled:
        _fl_system_start(_name_arg(name))


def system_stop(name: str) -> None:
    """End the system phase started with the same name."""
    if not _disabled:
        _fl_system_stop(_name_arg(name))


# ------------------------------------------------------------ framework ops


def push_external_op(name: str) -> bool:
    """Name a framework op ("aten::mm") on this thread until the matching
    pop_external_op(): the kernels launched in between carry it (CUPTI
    external correlation, kind CUSTOM1; gpufl.torch calls this around
    every aten op).  False when no Trace session with
    enable_external_correlation runs; pop anyway."""
    if _disabled:
        return False
    return _fl_push_op(_scope_name(name), None) == 0


def pop_external_op() -> None:
    """End the innermost push_external_op() of this thread."""
    if not _disabled:
        _fl_pop_op()


def op_id(name: str) -> int:
    """An op name's id on kernel rows (external_id): FNV-1a 64 of the
    name's UTF-8 bytes, as GPUFlight's gpufl.torch computes it."""
    return int(_fl_op_id(_name_arg(name)))


def _init_signature():
    kw = inspect.signature(_init_keywords).parameters
    params = [kw[n].replace(kind=inspect.Parameter.POSITIONAL_OR_KEYWORD) for n in _POSITIONAL]
    params += [p for n, p in kw.items() if n not in _POSITIONAL]
    return inspect.Signature(params, return_annotation=bool)


init.__signature__ = _init_signature()


# ------------------------------------------------------------- clean_logs

# A session directory's files clean_logs removes: the channel windows
# (GPUFlight 1.3's pattern) and their sidecars.  Anything else - a .tmp/ of
# a session still recording or crashed, a lock, the user's own files -
# keeps the file and its directory.
_CLEANABLE = re.compile(r"^(?:(?:device|scope|system|sass)(?:\.\d+)?\.log(?:\.gz)?|"
                        r"\.gpufl-window\.(?:device|scope|system|sass)\.\d+\.json)$")


def clean_logs(log_path: Optional[str] = None, log_prefix: Optional[str] = None, *,
               dry_run: bool = False) -> list:
    """Delete the sessions under log_path (GPUFlight 1.3's clean_logs):
    in each session subdirectory its channel files (`<channel>[.<N>].log[.gz]`)
    and window sidecars, then the subdirectory when nothing else was in it.
    Files directly in log_path, and every other file, are never touched.

    log_path: the directory of session subdirectories (an init's log_path;
    a trailing ".log" is dropped); None: the last init()'s log_path, else
    its app_name.  log_prefix: ignored (the layout has no prefix since
    v1.2), with a DeprecationWarning.  dry_run: list, delete nothing.

    Returns the paths removed (or that would be), subdirectories after
    their files.  Raises RuntimeError while this process records a session
    (shutdown() first), ValueError without a log_path to use.  A file that
    cannot be removed is a warning naming it and why; the rest go on.
    """
    if _session_active or is_active():
        raise RuntimeError("clean_logs() refused: a gpufl session is active in this process "
                           "(init() without shutdown()): call gpufl.shutdown() first")
    if log_prefix is not None:
        warnings.warn("clean_logs(log_prefix=...) is ignored: since v1.2 the logs are "
                      "<log_path>/<session_id>/<channel>.log, with no prefix; pass log_path "
                      "only", DeprecationWarning, stacklevel=2)
    if log_path is None:
        log_path = _last_log_path or _last_app_name
    if not log_path:
        raise ValueError("clean_logs(): no log_path given and no init() to take it from: "
                         "pass log_path=... (the directory of session subdirectories)")
    log_path = os.fspath(log_path)
    if log_path.endswith(".log"):
        log_path = log_path[:-4]
    matched = []
    try:
        entries = sorted(os.listdir(log_path))
    except OSError:
        entries = []  # nothing there: nothing to clean
    for entry in entries:
        sub = os.path.join(log_path, entry)
        if os.path.islink(sub) or not os.path.isdir(sub):
            continue
        try:
            names = os.listdir(sub)
        except OSError:
            continue
        files = sorted(os.path.join(sub, n) for n in names if _CLEANABLE.match(n) and
                       os.path.isfile(os.path.join(sub, n)))
        matched.extend(files)
        if names and len(files) == len(names):
            matched.append(sub)
    if dry_run:
        return matched
    removed = []
    for path in matched:
        try:
            if os.path.isdir(path):
                os.rmdir(path)  # only a directory all of whose files went
            else:
                os.remove(path)
            removed.append(path)
        except OSError as e:
            warnings.warn("gpufl.clean_logs: could not remove %s: %s" % (path, e.strerror),
                          GpuflWarning, stacklevel=2)
    return removed


# ----------------------------------------------------------------- upload
# (at the end: _upload reads this module's state when called)
from gpufl import _upload  # noqa: E402
from gpufl._upload import (UploadResult, _NoopUploadResult, recording, session,  # noqa: E402,F401
                           upload_logs)
