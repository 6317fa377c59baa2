"""gpufl.upload_logs, gpufl.session and gpufl.recording, over the C
library's gpufl_upload_logs (include/gpufl.h; docs/python.md, "Upload").

What this module promises: upload_logs() never raises for a problem of the
machine or the backend - the result's success is False and its message says
why (the URL and HTTP status, never the API key); with the kill switch on
(init(enabled=False) or GPUFL_DISABLED) it returns success with 0 events and
makes no connection at all.  Wrong argument types raise TypeError.
"""

import contextlib
import ctypes
import time
import warnings
from typing import Optional

from gpu_profile._native import c_enum as _c_enum, c_string as _c_string, declare as _declare

_ERROR_MAX = 1024


class _FlError(ctypes.Structure):
    _fields_ = [("status", _c_enum), ("message", ctypes.c_char * _ERROR_MAX)]


class _UploadOptions(ctypes.Structure):
    _fields_ = [
        ("log_path", ctypes.c_char_p),
        ("backend_url", ctypes.c_char_p),
        ("api_key", ctypes.c_char_p),
        ("api_path", ctypes.c_char_p),
        ("session_id", ctypes.c_char_p),
        ("force", ctypes.c_bool),
        ("enabled", ctypes.c_bool),
        ("timeout_s", ctypes.c_double),
        ("connect_timeout_s", ctypes.c_double),
        ("max_retries", ctypes.c_int),
        ("retry_delay_ms", ctypes.c_int),
    ]


class _UploadResult(ctypes.Structure):
    _fields_ = [
        ("success", ctypes.c_bool),
        ("events_uploaded", ctypes.c_uint64),
        ("events_rejected", ctypes.c_uint64),
        ("files_processed", ctypes.c_uint64),
        ("files_skipped_by_cursor", ctypes.c_uint64),
        ("bytes_uploaded", ctypes.c_uint64),
        ("sessions_uploaded", ctypes.c_uint64),
        ("sessions_skipped", ctypes.c_uint64),
        ("http_status", ctypes.c_int),
        ("message", ctypes.c_char * _ERROR_MAX),
    ]


_options_init = _declare("gpufl_upload_options_init", None, ctypes.POINTER(_UploadOptions))
_upload = _declare("gpufl_upload_logs", _c_enum, ctypes.POINTER(_UploadOptions),
                   ctypes.POINTER(_UploadResult), ctypes.POINTER(_FlError))

_COUNTS = ("events_uploaded", "events_rejected", "files_processed", "files_skipped_by_cursor",
           "bytes_uploaded", "sessions_uploaded", "sessions_skipped")


class UploadResult:
    """What upload_logs() did: success, events_uploaded, events_rejected,
    files_processed, files_skipped_by_cursor, bytes_uploaded (uncompressed
    NDJSON), sessions_uploaded, sessions_skipped, http_status (of the
    request that failed; None when none failed or no HTTP answer came),
    status (the gpufl_status name) and message."""

    def __init__(self, success=True, message="", status="GPUFL_OK", http_status=None,
                 elapsed_ms=0, **counts):
        self.success = success
        self.message = message
        self.status = status
        self.http_status = http_status
        for k in _COUNTS:
            setattr(self, k, counts.get(k, 0))
        # GPUFlight's fields: the call's wall time, its message as a list,
        # and the backend's spool ids (this uploader's backend API answers
        # none: always empty).
        self.elapsed_ms = elapsed_ms
        self.warnings = [message] if message and (not success or status != "GPUFL_OK") else []
        self.spool_ids = []

    def __bool__(self):
        return bool(self.success)

    def __repr__(self):
        return "UploadResult(success=%r, events_uploaded=%d, files_processed=%d, " \
               "files_skipped_by_cursor=%d, bytes_uploaded=%d, http_status=%r, message=%r)" % (
                   self.success, self.events_uploaded, self.files_processed,
                   self.files_skipped_by_cursor, self.bytes_uploaded, self.http_status,
                   self.message)


class _NoopUploadResult(UploadResult):
    """What upload_logs() answers with the kill switch on (GPUFlight's
    name): success, nothing read or sent, a warning saying why."""

    def __init__(self, why="gpufl is disabled: upload_logs is a no-op"):
        super().__init__(True, why, "GPUFL_DISABLED")


def _disabled_result(why):
    return _NoopUploadResult(why)


def upload_logs(log_path="", backend_url: str = "", api_key: str = "", api_path: str = "", *,
                session_id: str = "", force: bool = False, timeout_s: float = 60.0,
                connect_timeout_s: float = 10.0, max_retries: int = 2,
                retry_delay_ms: int = 500) -> UploadResult:
    """Upload the finished sessions at log_path (a session directory or a
    log directory; "" = the session this process recorded last) to a
    GPUFlight backend.  backend_url, api_key and api_path default to
    GPUFL_BACKEND_URL, GPUFL_API_KEY and GPUFL_API_PATH (else /api/v1).
    A re-run resumes where a failed upload stopped; force also sends
    sessions still recording or crashed.  Returns an UploadResult."""
    import gpufl
    if gpufl._disabled:
        return _disabled_result("gpufl is disabled (init(enabled=False) or GPUFL_DISABLED): "
                                "upload skipped, nothing read or sent")
    if not log_path:
        log_path = gpufl.last_session_dir() or ""
    for name, v in (("force", force),):
        if not isinstance(v, bool):
            raise TypeError("%s must be a bool, not %r" % (name, v))
    for name, v in (("timeout_s", timeout_s), ("connect_timeout_s", connect_timeout_s)):
        if isinstance(v, bool) or not isinstance(v, (int, float)):
            raise TypeError("%s must be a number of seconds, not %r" % (name, v))
    for name, v in (("max_retries", max_retries), ("retry_delay_ms", retry_delay_ms)):
        if isinstance(v, bool) or not isinstance(v, int):
            raise TypeError("%s must be an int, not %r" % (name, v))
    o = _UploadOptions()
    _options_init(ctypes.byref(o))
    keep = [_c_string("log_path", log_path), _c_string("backend_url", backend_url),
            _c_string("api_key", api_key), _c_string("api_path", api_path),
            _c_string("session_id", session_id)]
    o.log_path, o.backend_url, o.api_key, o.api_path, o.session_id = keep
    o.force = force
    o.timeout_s = float(timeout_s)
    o.connect_timeout_s = float(connect_timeout_s)
    o.max_retries = max(-1, min(max_retries, 1 << 20))
    o.retry_delay_ms = max(-1, min(retry_delay_ms, 1 << 30))
    r = _UploadResult()
    err = _FlError()
    t0 = time.monotonic()
    st = _upload(ctypes.byref(o), ctypes.byref(r), ctypes.byref(err))
    elapsed_ms = int((time.monotonic() - t0) * 1000)
    del keep
    counts = {k: getattr(r, k) for k in _COUNTS}
    return UploadResult(bool(r.success), r.message.decode("utf-8", "replace"),
                        gpufl.STATUS_NAMES.get(st, "status %d" % st),
                        r.http_status if r.http_status > 0 else None, elapsed_ms, **counts)


def _warn_failed(res, where):
    import gpufl
    if not res.success:
        warnings.warn("%s: upload failed: %s" % (where, res.message), gpufl.GpuflWarning,
                      stacklevel=3)


class SessionHandle:
    """What `with gpufl.recording(...) as s:` gives: s.started (init's
    answer), s.session_dir, and after the block s.upload_result (None when
    no session was recorded or upload=False)."""

    def __init__(self, started, session_dir):
        self.started = started
        self.session_dir = session_dir
        self.upload_result: Optional[UploadResult] = None


@contextlib.contextmanager
def recording(*args, backend_url: str = "", api_key: str = "", api_path: str = "",
              upload: bool = True, **init_options):
    """init(*args, **init_options) on entry (as gpufl.init takes them); on
    exit - also when the block raises - shutdown() and, with upload,
    upload_logs() of this session to backend_url (a failure is a
    GpuflWarning, never an exception; the block's own exception goes on).
    Gives a SessionHandle."""
    import gpufl
    started = gpufl.init(*args, backend_url=backend_url, api_key=api_key, api_path=api_path,
                         **init_options)
    handle = SessionHandle(started, gpufl.session_dir() if started else None)
    try:
        yield handle
    finally:
        if started:
            gpufl.shutdown()
        if upload and (started or gpufl._disabled):
            handle.upload_result = upload_logs(handle.session_dir or "", backend_url, api_key,
                                               api_path)
            _warn_failed(handle.upload_result, "gpufl.session")


@contextlib.contextmanager
def session(*args, **kwargs):
    """GPUFlight's `with gpufl.session(...) as ok:`: recording() giving
    init's answer (True: a session was recorded) instead of the handle."""
    with recording(*args, **kwargs) as handle:
        yield handle.started
