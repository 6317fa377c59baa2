"""ctypes access to gpufl_report_logs() (include/gpufl.h): the C report of
any session's logs, as text (whole or chosen sections) or JSON.  Shared by
gpufl.report and gpufl.analyzer."""

import ctypes
import json
import signal
import threading

from gpu_profile._native import c_string

from . import STATUS_NAMES, _FlError, _c_enum, _declare, _fl_strerror, last_session_dir

GPUFL_REPORT_TEXT = 0
GPUFL_REPORT_JSON = 1
GPUFL_REPORT_HTML = 2
# generate_report(format=...)'s words, as `gpu-profile report --format` takes them.
FORMATS = {"text": GPUFL_REPORT_TEXT, "json": GPUFL_REPORT_JSON, "html": GPUFL_REPORT_HTML}

SECTION_SUMMARY = 1 << 0
SECTION_SCOPES = 1 << 1
SECTION_HOTSPOTS = 1 << 2
SECTION_MEMORY = 1 << 3
SECTION_DEVICES = 1 << 4
SECTION_HOST = 1 << 5
SECTION_STALLS = 1 << 6
SECTION_CAPTURE = 1 << 7
SECTION_READ = 1 << 8
SECTION_PERF = 1 << 9
SECTION_RUN = 1 << 10  # the run section: gpu-profile report only (the library reads one session)
SECTION_OPS = 1 << 11  # framework ops (external correlation): their kernels
SECTION_ALL = 0


class _ReportOptions(ctypes.Structure):
    _fields_ = [
        ("session_id", ctypes.c_char_p),
        ("log_prefix", ctypes.c_char_p),
        ("top_n", ctypes.c_int),
        ("format", _c_enum),
        ("sections", ctypes.c_uint),
    ]


_report_options_init = _declare("gpufl_report_options_init", None,
                                ctypes.POINTER(_ReportOptions))
_report_logs = _declare("gpufl_report_logs", _c_enum, ctypes.c_char_p,
                        ctypes.POINTER(_ReportOptions), ctypes.POINTER(ctypes.c_void_p),
                        ctypes.POINTER(ctypes.c_size_t), ctypes.POINTER(_FlError))
_free = _declare("gpufl_free", None, ctypes.c_void_p)


class ReportError(RuntimeError):
    """The logs could not be found or read; `status` is the C status name
    ("GPUFL_ERR_IO", ...), `message` the C library's text (it names the
    path and what to do)."""

    def __init__(self, message, status):
        super().__init__(message)
        self.message = message
        self.status = status


def _bytes(name, value):
    return c_string(name, value, "a str or a path", none_ok=True)


def resolve_log_dir(log_dir):
    """log_dir, or this process's last session when it is None."""
    if log_dir is not None:
        return log_dir
    d = last_session_dir()
    if d is None:
        raise ReportError("no log_dir given and this process recorded no session: pass the "
                          "log directory (the log_path of gpufl.init, by default the app "
                          "name)", "GPUFL_ERR_STATE")
    return d


def _interruptible(call):
    """call() with the stop signals that have a Python handler (SIGINT's
    KeyboardInterrupt, ...) blocked in this thread, so that they stay
    pending: the C reader looks for a pending one between reads and ends
    the read at once (its handler, Python's, runs as they are unblocked,
    raising KeyboardInterrupt here).  Unblocked, Python would only see ^C
    once the whole read returned.  In the main thread only (where Python
    runs handlers); a signal the kernel gives another thread of this
    process is still seen after the read."""
    if threading.current_thread() is not threading.main_thread() or \
            not hasattr(signal, "pthread_sigmask"):
        return call()
    stops = set()
    for name in ("SIGINT", "SIGTERM", "SIGHUP", "SIGQUIT"):
        sig = getattr(signal, name, None)
        if sig is not None and callable(signal.getsignal(sig)):
            stops.add(sig)
    if not stops:
        return call()
    old = signal.pthread_sigmask(signal.SIG_BLOCK, stops)
    try:
        return call()
    finally:
        signal.pthread_sigmask(signal.SIG_SETMASK, old)


def render(log_dir, log_prefix=None, session_id=None, top_n=10, fmt=GPUFL_REPORT_TEXT,
           sections=SECTION_ALL):
    """The report text (or JSON text) of the session at log_dir."""
    if isinstance(top_n, bool) or not isinstance(top_n, int):
        raise TypeError("top_n must be an int, not %r" % (top_n,))
    if top_n < 1:
        raise ValueError("top_n must be at least 1, not %d" % top_n)
    o = _ReportOptions()
    _report_options_init(ctypes.byref(o))
    o.session_id = _bytes("session_id", session_id)
    o.log_prefix = _bytes("log_prefix", log_prefix)
    o.top_n = min(top_n, 2**31 - 1)
    o.format = fmt
    o.sections = sections
    out = ctypes.c_void_p()
    n = ctypes.c_size_t()
    err = _FlError()
    path = _bytes("log_dir", resolve_log_dir(log_dir))
    st = _interruptible(lambda: _report_logs(path, ctypes.byref(o), ctypes.byref(out),
                                             ctypes.byref(n), ctypes.byref(err)))
    if st != 0:
        raise ReportError(err.message.decode("utf-8", "replace") or _fl_strerror(st).decode(),
                          STATUS_NAMES.get(st, "status %d" % st))
    try:
        return ctypes.string_at(out, n.value).decode("utf-8", "replace")
    finally:
        _free(out)


def render_json(log_dir, log_prefix=None, session_id=None, top_n=10):
    """The report as a dict (schema gpu-profile.report, docs/report.md)."""
    return json.loads(render(log_dir, log_prefix, session_id, top_n, GPUFL_REPORT_JSON))
