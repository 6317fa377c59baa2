"""gpu_profile: sample GPU utilization while Python code runs.

A thin ctypes layer over the C library libgpuprofile (include/gpu_profile.h).
Standard library only.  See docs/python.md (installed by cmake --install as
<prefix>/share/doc/gpu-profile/python.md, e.g. /usr/local/share/doc/gpu-profile).

    from gpu_profile import gpu_profile, GpuMonitor

    @gpu_profile(interval_s=0.2)
    def work(): ...

    with GpuMonitor(device=0, interval_s=0.2) as mon:
        ...
    print(mon.summary.format())
"""

import ctypes
import dataclasses
import functools
import math
import os
import sys
import time
from typing import Callable, List, Optional, Sequence, Tuple, Union

__all__ = [
    "gpu_profile",
    "GpuMonitor",
    "GpuSummary",
    "GpuSample",
    "ProfiledResult",
    "MultiRunResult",
    "RunStats",
    "profile_repeats",
    "GpuBackendError",
    "library_path",
]

__version__ = "0.1.0"

# ------------------------------------------------------------ the library

# One loader for gpu_profile and gpufl (_native.py).
from ._native import (c_enum as _c_enum, c_string as _c_string,  # noqa: E402,F401
                      declare as _declare, library_path)
# Per-process attribution: the pids keywords and the figures (_process.py).
from . import _devices  # noqa: E402  (the device argument: indices, UUIDs)
from . import _seed  # noqa: E402  (the original package's names and text)
from . import _repeats  # noqa: E402  (the multi-run API)
from ._repeats import MultiRunResult, RunStats  # noqa: E402
from ._process import (GP_M_PROC_MEM, GP_M_PROC_UTIL, GP_PROC_PIDS_MAX,  # noqa: E402,F401
                       pids_arg as _pids_arg, sample_process as _sample_process,
                       summary_process as _summary_process)


# ------------------------------------------------------- C declarations

from ._cdefs import (  # noqa: E402,F401  (the C declarations)
    GP_OK, GP_ERR_BACKEND_UNAVAILABLE, GP_ERROR_MESSAGE_MAX, GP_NAME_MAX, GP_SPARK_WIDTH,
    GP_SPARK_NONE, GP_NOTE_MAX, GP_M_UTIL_GPU, GP_M_UTIL_MEM, GP_M_MEM_USED, GP_M_MEM_TOTAL,
    GP_M_POWER, GP_M_ENERGY, GP_M_TEMP, GP_M_CLOCK_SM, GP_M_CLOCK_MEM, GP_M_THROTTLE,
    GP_M_PCIE_TX, GP_M_PCIE_RX, GPM_METRICS, GP_GPM_COUNT, GP_M_GPM, GP_FMT_ASCII, _BACKENDS,
    _ENERGY_SOURCES, THROTTLE_REASONS, _GpError, _GpDeviceSample, _GpSample, _GpMigInfo,
    _mig_dict, _GpDeviceInfo, _GpSummary, _sync_fn_t, _report_fn_t, _GpOptions, _gp_version,
    _gp_strerror, _gp_options_init, _gp_monitor_create, _gp_monitor_start, _gp_monitor_stop,
    _gp_monitor_rearm, _gp_monitor_destroy, _gp_monitor_device_count, _gp_monitor_summary,
    _gp_monitor_samples, _gp_summary_format, _gp_summary_to_json, _gp_summary_sparkline,
    _gp_list_devices, _gp_devices_free)

c_library_version = _gp_version().decode()

# --------------------------------------------------------------- errors


class GpuBackendError(RuntimeError):
    """A backend could not be initialized (strict=True), or another C error.

    `status` is the C gp_status number, `message` the C library's text.
    """

    def __init__(self, message, status=GP_ERR_BACKEND_UNAVAILABLE):
        super().__init__(message)
        self.message = message
        self.status = status


def _raise(status, err):
    msg = err.message.decode("utf-8", "replace")
    if not msg:
        msg = _gp_strerror(status).decode()
    raise GpuBackendError(msg, status)


# ----------------------------------------------------------- data types


def _render(fn, raw, flags):
    s = _GpSummary.from_buffer_copy(raw)
    n = fn(ctypes.byref(s), flags, None, 0)
    buf = ctypes.create_string_buffer(n + 1)
    fn(ctypes.byref(s), flags, buf, n + 1)
    return buf.value.decode("utf-8", "replace")


@dataclasses.dataclass(frozen=True)
class GpuSummary:
    """Aggregate statistics of one device over a monitored region.

    A metric the device/backend did not report is None (never 0).  The
    original package's names (n_samples, notes, mem_used_max_mb,
    mem_total_mb: MiB) are fields too, equal to ours (_seed.py); either may
    be given to the constructor, as the original's users do.
    """

    __slots__ = ("__dict__", "_c_raw")  # the C copy stays out of __dict__

    device: int = 0
    name: str = ""
    uuid: str = ""
    backend: str = ""
    note: Optional[str] = None
    duration_s: float = 0.0
    interval_s: float = 0.0
    warmup_s: float = 0.0
    sample_count: Optional[int] = None
    samples_warmup: int = 0
    interval_mean_s: Optional[float] = None
    util_gpu_mean: Optional[float] = None
    util_gpu_p50: Optional[float] = None
    util_gpu_p95: Optional[float] = None
    util_gpu_max: Optional[float] = None
    util_mem_mean: Optional[float] = None
    util_mem_max: Optional[int] = None
    mem_used_max_bytes: Optional[int] = None
    mem_total_bytes: Optional[int] = None
    power_mean_w: Optional[float] = None
    power_max_w: Optional[float] = None
    energy_j: Optional[float] = None
    energy_source: Optional[str] = None
    temp_max_c: Optional[float] = None
    clock_sm_mean_mhz: Optional[float] = None
    clock_mem_mean_mhz: Optional[float] = None
    throttle_reasons: Optional[Tuple[str, ...]] = None
    throttle_reasons_mask: Optional[int] = None
    busy_time_est_s: Optional[float] = None
    sparkline: str = ""  # "" when nothing was sampled
    spark: Tuple[Optional[int], ...] = ()
    device_error: Optional[str] = None
    device_error_at_s: Optional[float] = None
    # GPM: {name: (mean, p95, max)} for the metrics the device reported
    # (percent, or bytes/s for *_pcie_*/nvlink_*); None without GPM.
    gpm: Optional[dict] = None
    # A MIG instance (docs/concepts.md, "MIG instances"): {"profile",
    # "gpu_instance_id", "compute_instance_id", "parent_index",
    # "parent_uuid", "parent_name"}, unknowns None; None for a whole GPU.
    mig: Optional[dict] = None
    # Per-process attribution (GpuMonitor(pids=...); docs/concepts.md): the
    # keys of the JSON's "process" object, each None where NVML did not
    # answer; None when no processes were named.
    process: Optional[dict] = None
    # The original's names (profgpu 0.2.0, the seed): the same values.
    n_samples: Optional[int] = None
    notes: Optional[str] = None
    mem_used_max_mb: Optional[float] = None
    mem_total_mb: Optional[float] = None
    # More of the distribution (profgpu 0.3's statistics; gp_summary):
    # util.gpu's min, nearest-rank p5 / p99, population std (None with
    # fewer than 2 readings), % of readings under 5 % (idle) and at 50 % or
    # more (active); memory used mean, temperature mean, SM clock max.
    util_gpu_min: Optional[float] = None
    util_gpu_p5: Optional[float] = None
    util_gpu_p99: Optional[float] = None
    util_gpu_std: Optional[float] = None
    util_gpu_idle_pct: Optional[float] = None
    util_gpu_active_pct: Optional[float] = None
    mem_used_mean_bytes: Optional[float] = None
    temp_mean_c: Optional[float] = None
    clock_sm_max_mhz: Optional[float] = None
    # ... and profgpu 0.3's names for them (and for clock_sm_mean_mhz).
    idle_pct: Optional[float] = None
    active_pct: Optional[float] = None
    mem_used_mean_mb: Optional[float] = None
    sm_clock_mean_mhz: Optional[float] = None
    sm_clock_max_mhz: Optional[float] = None
    # 0.3's: memory used max as % of the total (None unless both known).
    mem_util_pct: Optional[float] = None

    def __post_init__(self):
        _seed.fill_pairs(self, _seed.SUMMARY_PAIRS, {"sample_count": 0, "note": ""})
        if self.mem_util_pct is None and self.mem_used_max_bytes is not None \
                and self.mem_total_bytes:
            object.__setattr__(self, "mem_util_pct",
                               100.0 * self.mem_used_max_bytes / self.mem_total_bytes)

    def _c_copy(self):
        return getattr(self, "_c_raw", b"")

    # pickle / copy: the fields and the C copy (a frozen slot is set here).
    def __getstate__(self):
        return (dict(self.__dict__), self._c_copy())

    def __setstate__(self, state):
        fields, raw = state
        self.__dict__.update(fields)
        object.__setattr__(self, "_c_raw", raw)

    def format(self, ascii: bool = False) -> str:
        """The human-friendly report: the original's lines ([GPU 0] name,
        one-decimal percentages), then the C rendering's other lines
        (energy, clocks, throttle reasons, GPM, processes...), then profgpu
        0.3's statistics that are known (util.gpu min / p5 / p99 / std,
        idle / active, memory and temperature means)."""
        lines = _seed.seed_lines(self, ascii)
        raw = self._c_copy()
        if raw:
            text = _render(_gp_summary_format, raw, GP_FMT_ASCII if ascii else 0)
            lines += _seed.c_extra_lines(text)
        lines += _seed.more_lines(self, ascii, by_hand=not raw)
        out = "\n".join(lines) + "\n"
        if ascii:
            out = out.encode("ascii", "replace").decode("ascii")
        return out

    def to_json(self, pretty: bool = False) -> str:
        """The summary as JSON (schema gpu-profile.summary, docs/json-schema.md);
        only for a summary the library made (ValueError for one built by hand:
        json.dumps(dataclasses.asdict(summary)) serialises any)."""
        raw = self._c_copy()
        if not raw:
            raise ValueError("to_json() renders a summary the C library made; this one was "
                             "built by hand: use json.dumps(dataclasses.asdict(summary))")
        return _render(_gp_summary_to_json, raw, 2 if pretty else 0)

    def __str__(self):
        return self.format()

    @classmethod
    def _from_c(cls, s, none_asked=False):
        """From a gp_summary; none_asked: backend="none" was asked for (the
        original's note says so)."""
        v = s.valid

        def ok(bit, value):
            return value if v & bit else None

        spark = tuple(None if c == GP_SPARK_NONE else int(c) for c in s.spark[: s.spark_len])
        raw = bytes(ctypes.string_at(ctypes.addressof(s), ctypes.sizeof(s)))
        reasons = None
        if v & GP_M_THROTTLE:
            reasons = tuple(n for bit, n in THROTTLE_REASONS.items()
                            if s.throttle_reasons_seen & bit)
        failed = s.device_status != GP_OK
        backend = s.backend.decode()
        name = s.name.decode("utf-8", "replace")
        note = s.note.decode("utf-8", "replace")
        if backend == "none":  # the original's words for no device
            name = name or _seed.NONE_NAME
            if none_asked and not note:
                note = _seed.NONE_NOTE
        sampled = any(c is not None for c in spark)
        out = cls(
            device=s.device_index,
            name=name,
            uuid=s.uuid.decode("utf-8", "replace"),
            backend=backend,
            note=note,
            duration_s=s.duration_s,
            interval_s=s.interval_s,
            warmup_s=s.warmup_s,
            sample_count=s.sample_count,
            samples_warmup=s.samples_warmup,
            interval_mean_s=s.interval_mean_s if s.sample_count >= 2 else None,
            util_gpu_mean=ok(GP_M_UTIL_GPU, s.util_gpu_mean),
            util_gpu_p50=ok(GP_M_UTIL_GPU, s.util_gpu_p50),
            util_gpu_p95=ok(GP_M_UTIL_GPU, s.util_gpu_p95),
            util_gpu_max=ok(GP_M_UTIL_GPU, s.util_gpu_max),
            util_mem_mean=ok(GP_M_UTIL_MEM, s.util_mem_mean),
            util_mem_max=ok(GP_M_UTIL_MEM, s.util_mem_max),
            mem_used_max_bytes=ok(GP_M_MEM_USED, s.mem_used_max_bytes),
            mem_total_bytes=ok(GP_M_MEM_TOTAL, s.mem_total_bytes),
            power_mean_w=ok(GP_M_POWER, s.power_mean_mw / 1000.0),
            power_max_w=ok(GP_M_POWER, s.power_max_mw / 1000.0),
            energy_j=None if s.energy_source == 0 else s.energy_j,
            energy_source=_ENERGY_SOURCES.get(s.energy_source),
            temp_max_c=ok(GP_M_TEMP, s.temp_max_c),
            clock_sm_mean_mhz=ok(GP_M_CLOCK_SM, s.clock_sm_mean_mhz),
            clock_mem_mean_mhz=ok(GP_M_CLOCK_MEM, s.clock_mem_mean_mhz),
            throttle_reasons=reasons,
            throttle_reasons_mask=ok(GP_M_THROTTLE, s.throttle_reasons_seen),
            busy_time_est_s=ok(GP_M_UTIL_GPU, s.busy_time_est_s),
            util_gpu_min=ok(GP_M_UTIL_GPU, s.util_gpu_min),
            util_gpu_p5=ok(GP_M_UTIL_GPU, s.util_gpu_p5),
            util_gpu_p99=ok(GP_M_UTIL_GPU, s.util_gpu_p99),
            util_gpu_std=ok(GP_M_UTIL_GPU, s.util_gpu_std if math.isfinite(s.util_gpu_std)
                            else None),
            util_gpu_idle_pct=ok(GP_M_UTIL_GPU, s.util_gpu_idle_pct),
            util_gpu_active_pct=ok(GP_M_UTIL_GPU, s.util_gpu_active_pct),
            mem_used_mean_bytes=ok(GP_M_MEM_USED, s.mem_used_mean_bytes),
            temp_mean_c=ok(GP_M_TEMP, s.temp_mean_c),
            clock_sm_max_mhz=ok(GP_M_CLOCK_SM, s.clock_sm_max_mhz),
            sparkline=_render(_gp_summary_sparkline, raw, 0) if sampled else "",
            spark=spark,
            device_error=s.device_error.decode("utf-8", "replace") if failed else None,
            device_error_at_s=s.device_error_at_s if failed else None,
            gpm={n: (s.gpm_mean[i], s.gpm_p95[i], s.gpm_max[i])
                 for i, n in enumerate(GPM_METRICS) if v & GP_M_GPM(i)} or None,
            mig=_mig_dict(s.mig),
            process=_summary_process(s),
        )
        object.__setattr__(out, "_c_raw", raw)
        return out


@dataclasses.dataclass(frozen=True)
class GpuSample:
    """One raw sample of one device (GpuMonitor(keep_samples=True)).  The
    original package's names (t_s: seconds since the monitor started,
    mem_used_mb / mem_total_mb: MiB, sm_clock_mhz, mem_clock_mhz) are
    fields too, equal to ours; either may be given to the constructor."""

    t_mono_ns: Optional[int] = None  # CLOCK_MONOTONIC
    timestamp: Optional[float] = None  # wall clock, seconds since the Unix epoch
    slot: int = 0
    device: int = 0
    util_gpu: Optional[float] = None
    util_mem: Optional[float] = None
    mem_used_bytes: Optional[int] = None
    mem_total_bytes: Optional[int] = None
    power_w: Optional[float] = None
    energy_mj: Optional[int] = None
    temp_c: Optional[float] = None
    clock_sm_mhz: Optional[float] = None
    clock_mem_mhz: Optional[float] = None
    throttle_reasons_mask: Optional[int] = None
    pcie_tx_kbps: Optional[int] = None
    pcie_rx_kbps: Optional[int] = None
    # GPM: {name: value} since the device's previous sample; None without.
    gpm: Optional[dict] = None
    # Per-process attribution: {"count", "all_count", "mem_used_bytes",
    # "all_mem_used_bytes", "sm_pct", "mem_pct", "all_sm_pct",
    # "all_mem_pct"} ("all": every process NVML lists), each None where NVML
    # did not answer; None when neither was read (no processes named).
    process: Optional[dict] = None
    # The original's names (profgpu 0.2.0, the seed).
    t_s: Optional[float] = None
    mem_used_mb: Optional[float] = None
    mem_total_mb: Optional[float] = None
    sm_clock_mhz: Optional[float] = None
    mem_clock_mhz: Optional[float] = None

    def __post_init__(self):
        _seed.fill_pairs(self, _seed.SAMPLE_PAIRS, {})

    @classmethod
    def _from_c(cls, s, t0_ns=None):
        """From a gp_sample; t0_ns: when the monitor started (t_s)."""
        m = s.m
        v = m.valid

        def ok(bit, value):
            return value if v & bit else None

        return cls(
            t_s=None if t0_ns is None else max(0, s.t_mono_ns - t0_ns) / 1e9,
            t_mono_ns=s.t_mono_ns,
            timestamp=s.t_wall_ns / 1e9,
            slot=s.slot,
            device=s.device_index,
            util_gpu=ok(GP_M_UTIL_GPU, m.util_gpu_pct),
            util_mem=ok(GP_M_UTIL_MEM, m.util_mem_pct),
            mem_used_bytes=ok(GP_M_MEM_USED, m.mem_used_bytes),
            mem_total_bytes=ok(GP_M_MEM_TOTAL, m.mem_total_bytes),
            power_w=ok(GP_M_POWER, m.power_mw / 1000.0),
            energy_mj=ok(GP_M_ENERGY, m.energy_mj),
            temp_c=ok(GP_M_TEMP, m.temp_c),
            clock_sm_mhz=ok(GP_M_CLOCK_SM, m.clock_sm_mhz),
            clock_mem_mhz=ok(GP_M_CLOCK_MEM, m.clock_mem_mhz),
            throttle_reasons_mask=ok(GP_M_THROTTLE, m.throttle_reasons),
            pcie_tx_kbps=ok(GP_M_PCIE_TX, m.pcie_tx_kbps),
            pcie_rx_kbps=ok(GP_M_PCIE_RX, m.pcie_rx_kbps),
            gpm={n: m.gpm[i] for i, n in enumerate(GPM_METRICS) if v & GP_M_GPM(i)} or None,
            process=_sample_process(m),
        )


@dataclasses.dataclass(frozen=True)
class ProfiledResult:
    """What a @gpu_profile(return_profile=True) function returns."""

    value: object
    gpu: GpuSummary
    # Ours: every sampled device's summary (device=list or "all" gives
    # several); gpu is the first of them.
    gpus: Tuple[GpuSummary, ...] = ()


# -------------------------------------------------------------- monitor


GP_ALL_DEVICES = -1


def _list_devices(o):
    """[(index, uuid)] of the devices o's backend lists (gp_list_devices)."""
    out = ctypes.POINTER(_GpDeviceInfo)()
    count = ctypes.c_size_t()
    err = _GpError()
    st = _gp_list_devices(ctypes.byref(o), ctypes.byref(out), ctypes.byref(count), None, 0,
                          None, ctypes.byref(err))
    if st != GP_OK:
        _raise(st, err)
    try:
        return [(out[i].index, out[i].uuid.decode("utf-8", "replace"))
                for i in range(count.value)]
    finally:
        _gp_devices_free(out)


def _device_arg(device, o):
    """device: an index, "all", a UUID, or a list / tuple of them (_devices.py);
    o's backend fields are set already (a UUID is looked up through them)."""
    got = _devices.indices(device, lambda: _list_devices(o))
    if got == _devices.ALL:
        o.device = GP_ALL_DEVICES
    elif isinstance(got, list):
        arr = (ctypes.c_uint * len(got))(*got)
        o.devices = arr  # the struct keeps arr alive (ctypes _objects)
        o.n_devices = len(got)
    else:
        o.device = got


def _make_options(device, interval_s, backend, strict, warmup_s, keep_samples,
                  sample_pcie=False, nvml_library=None, smi_path=None, backend_timeout_s=5.0,
                  pids=None, pid_tree=False, rocm_smi_library=None):
    if backend not in _BACKENDS:
        raise ValueError("backend must be one of %s, not %r"
                         % (", ".join(repr(b) for b in _BACKENDS), backend))
    if not isinstance(interval_s, (int, float)) or not interval_s > 0:
        raise ValueError("interval_s must be > 0 (seconds), not %r" % (interval_s,))
    if not isinstance(warmup_s, (int, float)) or not warmup_s >= 0:
        raise ValueError("warmup_s must be >= 0 (seconds), not %r" % (warmup_s,))
    o = _GpOptions()
    _gp_options_init(ctypes.byref(o))
    o.interval_s = float(interval_s)
    o.backend = _BACKENDS[backend]
    o.strict = 1 if strict else 0
    o.warmup_s = float(warmup_s)
    o.keep_samples = 1 if keep_samples else 0
    o.sample_pcie = 1 if sample_pcie else 0
    o.nvml_library = _c_string("nvml_library", nvml_library, "a path (str)", none_ok=True)
    o.smi_path = _c_string("smi_path", smi_path, "a path (str)", none_ok=True)
    o.rocm_smi_library = _c_string("rocm_smi_library", rocm_smi_library, "a path (str)",
                                   none_ok=True)
    o.backend_timeout_s = float(backend_timeout_s)
    _pids_arg(pids, pid_tree, o)
    _device_arg(device, o)  # last: a UUID is looked up with the backend options above
    o.report = 1  # GP_REPORT_NONE: Python does the reporting
    return o


def _create_monitor(opts):
    """A C monitor for opts (backend opened); GpuBackendError if it fails."""
    err = _GpError()
    mon = ctypes.c_void_p()
    st = _gp_monitor_create(ctypes.byref(opts), ctypes.byref(mon), ctypes.byref(err))
    if st != GP_OK:
        _raise(st, err)
    return mon


def _summaries(mon, opts, sync_errors=()):
    """Every device's GpuSummary of a stopped monitor, in slot order; what
    sync_fn raised is added to each note (the original's sync_fn errors
    never end the region)."""
    out = []
    for i in range(_gp_monitor_device_count(mon)):
        s = GpuSummary._from_c(_gp_monitor_summary(mon, i).contents,
                               none_asked=opts.backend == _BACKENDS["none"])
        if sync_errors:
            raw = s._c_copy()
            s = dataclasses.replace(s, note=" | ".join([s.note] * bool(s.note) + list(sync_errors)),
                                    notes=None)
            object.__setattr__(s, "_c_raw", raw)
        out.append(s)
    return tuple(out)


def _call_sync(sync_fn, errors):
    """Calls sync_fn as the original does: an exception it raises is noted
    in errors (and then in the summary's note), never raised."""
    if sync_fn is None:
        return
    try:
        sync_fn()
    except Exception as e:  # noqa: BLE001 - the original's contract
        errors.append("sync_fn raised %s: %s" % (type(e).__name__, e))


class GpuMonitor:
    """Context manager that samples the GPUs while its block runs (or
    between start() and stop()).

    device: a 0-based index (default 0), "all", a GPU or MIG UUID ("GPU-..."
    in full or a prefix only one device has, as `gpu-profile --device`
    takes it), or a list / tuple of indices and UUIDs.  A bad device is a
    TypeError or ValueError here; one the backend does not have, a
    GpuBackendError at start.

    After the block (or stop()):
      summary    the GpuSummary of the first device
      summaries  a list with one GpuSummary per sampled device, in order
      samples    every raw GpuSample (keep_samples=True; else empty)
      running    True between start and stop
    An exception in the block still stops the sampler, fills `summary` and
    `summaries`, and propagates unchanged.  A monitor runs once.
    Everything: docs/python.md (installed as
    <prefix>/share/doc/gpu-profile/python.md).
    """

    def __init__(self, device: Union[int, str, Sequence[int]] = 0, interval_s: float = 0.2,
                 backend: str = "auto", strict: bool = True,
                 sync_fn: Optional[Callable[[], None]] = None, warmup_s: float = 0.0,
                 keep_samples: bool = False, *, sample_pcie: bool = False,
                 nvml_library: Optional[str] = None, smi_path: Optional[str] = None,
                 backend_timeout_s: float = 5.0,
                 pids: Union[None, int, Sequence[int]] = None, pid_tree: bool = False,
                 rocm_smi_library: Optional[str] = None, store_samples: bool = False, max_samples: int = 50_000,
                 reservoir_size: int = 4096, trace_len: int = 200):
        # The original's names: store_samples is keep_samples; max_samples
        # bounds the list kept (halved, every other sample, past it, as the
        # original does); reservoir_size and trace_len shaped its
        # approximations, which the C statistics do not need (exact).
        keep_samples = bool(keep_samples or store_samples)
        if keep_samples and (not isinstance(max_samples, int) or max_samples < 100):
            raise ValueError("max_samples = %r is too small: use at least 100, or "
                             "keep_samples=False" % (max_samples,))
        self.max_samples = max_samples
        self.store_samples = keep_samples
        self.device = device
        self.interval_s = interval_s
        self.backend = backend
        self.strict = strict
        self.sync_fn = sync_fn
        self.warmup_s = warmup_s
        self.keep_samples = keep_samples
        self.summary: Optional[GpuSummary] = None
        self.summaries: List[GpuSummary] = []
        self.samples: List[GpuSample] = []
        self._opts = _make_options(device, interval_s, backend, strict, warmup_s,
                                   keep_samples, sample_pcie, nvml_library, smi_path,
                                   backend_timeout_s, pids, pid_tree, rocm_smi_library)
        self._mon = None
        self._t0_ns = None
        self._sync_errors = []

    @property
    def running(self) -> bool:
        """True between start and stop (the sampling thread is alive)."""
        return self._mon is not None

    def start(self) -> "GpuMonitor":
        """Opens the backend, calls sync_fn, starts sampling; returns self.
        GpuBackendError if the backend cannot be opened (strict=True) or
        the device does not exist; RuntimeError on a second start."""
        if self._mon is not None or self.summary is not None:
            raise RuntimeError("a GpuMonitor runs once: create another for a new region")
        mon = _create_monitor(self._opts)
        err = _GpError()
        try:
            _call_sync(self.sync_fn, self._sync_errors)
            self._t0_ns = time.monotonic_ns()  # CLOCK_MONOTONIC, as t_mono_ns
            st = _gp_monitor_start(mon, ctypes.byref(err))
            if st != GP_OK:
                _raise(st, err)
        except BaseException:
            _gp_monitor_destroy(mon)
            raise
        self._mon = mon
        return self

    def stop(self) -> GpuSummary:
        """Calls sync_fn, stops sampling, fills summary, summaries and
        samples, closes the backend; returns summary (None when no device
        was sampled).  A second stop() returns the same summary (as the
        original's); RuntimeError when the monitor never started."""
        mon = self._mon
        if mon is None:
            if self.summaries:
                return self.summary
            raise RuntimeError("the monitor is not running: call start() first")
        try:
            _call_sync(self.sync_fn, self._sync_errors)
        finally:
            err = _GpError()
            try:
                st = _gp_monitor_stop(mon, ctypes.byref(err))
                if st != GP_OK:
                    _raise(st, err)
                self.summaries = list(_summaries(mon, self._opts, self._sync_errors))
                self.summary = self.summaries[0] if self.summaries else None
                if self.keep_samples:
                    count = ctypes.c_size_t()
                    p = _gp_monitor_samples(mon, ctypes.byref(count))
                    samples = [GpuSample._from_c(p[i], self._t0_ns) for i in range(count.value)]
                    while len(samples) > self.max_samples:
                        samples = samples[::2]
                    self.samples = samples
            finally:
                self._mon = None
                _gp_monitor_destroy(mon)
        return self.summary

    def __enter__(self):
        return self.start()

    def __exit__(self, exc_type, exc, tb):
        if exc_type is None:
            self.stop()
        else:
            # The block's exception wins over anything stopping raises.
            try:
                self.stop()
            except Exception:
                pass
        return False

    def __del__(self):
        mon = getattr(self, "_mon", None)
        if mon is not None:
            self._mon = None
            _gp_monitor_destroy(mon)


# ------------------------------------------------------------ decorator


def _report(report, summary):
    if report is True:
        # To stdout, as the original prints (the command, whose stdout is
        # the profiled program's, reports to stderr instead).
        print(summary.format(), end="", flush=True)
    elif callable(report):
        report(summary)


class _MonitorPool:
    """The idle C monitors of one decorated function.

    Opening the backend is most of a short region's cost (NVML's init is
    tens of milliseconds on a real GPU), so a decorated function keeps its
    stopped monitors, backend open, and re-arms one per call
    (gp_monitor_rearm).  Concurrent calls each take their own; at most
    MAX_IDLE stay open; all are closed when the function is collected.
    """

    MAX_IDLE = 4
    __slots__ = ("opts", "idle", "pid")

    def __init__(self, opts):
        self.opts = opts
        self.idle = []
        self.pid = os.getpid()

    def take(self):
        if self.pid != os.getpid():
            # A forked child (a DataLoader worker, multiprocessing): the
            # parent's open backend is not usable here (NVML does not
            # survive fork); forget those monitors - closing them would
            # touch the parent's handles - and open our own.
            self.idle = []
            self.pid = os.getpid()
        try:
            return self.idle.pop()  # atomic under the GIL
        except IndexError:
            pass
        return _create_monitor(self.opts)

    def give(self, mon):
        err = _GpError()
        if (self.pid == os.getpid() and len(self.idle) < self.MAX_IDLE
                and _gp_monitor_rearm(mon, ctypes.byref(err)) == GP_OK):
            self.idle.append(mon)
        else:
            _gp_monitor_destroy(mon)

    def __del__(self):
        if self.pid != os.getpid():
            return  # the parent's monitors: not ours to close
        idle, self.idle = self.idle, []
        for mon in idle:
            try:
                _gp_monitor_destroy(mon)
            except Exception:  # interpreter shutdown: the library may be gone
                pass


def _profiled_call(pool, sync_fn, need_summary, fn, args, kwargs):
    """One decorated call: (value, every device's GpuSummary, or () when not
    needed).  The monitor goes back
    to the pool only when its region ended cleanly."""
    mon = pool.take()
    reusable = False
    sync_errors = []
    try:
        err = _GpError()
        _call_sync(sync_fn, sync_errors)
        st = _gp_monitor_start(mon, ctypes.byref(err))
        if st != GP_OK:
            _raise(st, err)
        try:
            value = fn(*args, **kwargs)
        except BaseException:
            # The function's exception wins over anything stopping raises.
            _call_sync(sync_fn, sync_errors)
            reusable = _gp_monitor_stop(mon, ctypes.byref(err)) == GP_OK
            raise
        try:
            _call_sync(sync_fn, sync_errors)
        finally:
            st = _gp_monitor_stop(mon, ctypes.byref(err))
        if st != GP_OK:
            _raise(st, err)
        reusable = True
        summaries = ()
        if need_summary:
            summaries = _summaries(mon, pool.opts, sync_errors)
        return value, summaries
    finally:
        if reusable:
            pool.give(mon)
        else:
            _gp_monitor_destroy(mon)


def gpu_profile(func=None, *, device: Union[int, str, Sequence[int]] = 0,
                interval_s: float = 0.2, backend: str = "auto",
                strict: bool = True, sync_fn: Optional[Callable[[], None]] = None,
                warmup_s: float = 0.0,
                report: Union[bool, Callable[[GpuSummary], None]] = True,
                return_profile: bool = False, sample_pcie: bool = False,
                nvml_library: Optional[str] = None, smi_path: Optional[str] = None,
                backend_timeout_s: float = 5.0,
                pids: Union[None, int, Sequence[int]] = None, pid_tree: bool = False,
                repeats: int = 1, warmup_runs: int = 0, rocm_smi_library: Optional[str] = None):
    """Profile each call of a function: @gpu_profile or @gpu_profile(...).

    device: an index, "all", a GPU or MIG UUID, or a list of them (as
    GpuMonitor's).  report: True prints the summary to stdout, False prints nothing, a
    callable receives the GpuSummary.  return_profile=True makes the function
    return ProfiledResult(value, gpu).  With strict=True a backend that
    cannot be opened raises GpuBackendError before the function runs.  The
    backend is opened at the first call and kept open, idle, between calls
    (see _MonitorPool).

    repeats=N > 1 or warmup_runs=M > 0 (profgpu 0.3's multi-run API): each
    call runs the function M times unmeasured, then N times measured, and
    reports a MultiRunResult (the figures across runs); return_profile=True
    returns it.  ValueError for repeats < 1 or warmup_runs < 0.
    """
    if not (report is True or report is False or callable(report)):
        raise TypeError("report must be True, False or a callable, not %r" % (report,))
    _repeats.check_counts(repeats, warmup_runs)
    # Validate once, at decoration time.
    opts = _make_options(device, interval_s, backend, strict, warmup_s, False, sample_pcie,
                         nvml_library, smi_path, backend_timeout_s, pids, pid_tree,
                         rocm_smi_library)
    if repeats > 1 or warmup_runs > 0:
        return _repeated(func, opts, sync_fn, report, return_profile, repeats, warmup_runs)
    need_summary = report is not False or return_profile

    def decorate(fn):
        pool = _MonitorPool(opts)

        @functools.wraps(fn)
        def wrapper(*args, **kwargs):
            value, summaries = _profiled_call(pool, sync_fn, need_summary, fn, args, kwargs)
            if report is not False:
                for summary in summaries:  # one per device
                    _report(report, summary)
            if return_profile:
                return ProfiledResult(value=value, gpu=summaries[0], gpus=summaries)
            return value

        return wrapper

    return _decorator(func, decorate)


def _decorator(func, decorate):
    if func is not None:
        if not callable(func):
            raise TypeError("gpu_profile: %r is not callable" % (func,))
        return decorate(func)
    return decorate


def _repeated(func, opts, sync_fn, report, return_profile, repeats, warmup_runs):
    """gpu_profile with repeats / warmup_runs: each call a MultiRunResult,
    reported once (report=True prints its format() to stdout, a callable
    receives it), returned with return_profile=True."""

    def decorate(fn):
        pool = _MonitorPool(opts)

        @functools.wraps(fn)
        def wrapper(*args, **kwargs):
            result = _repeats.run_repeats(
                lambda: _profiled_call(pool, sync_fn, True, fn, args, kwargs),
                fn, args, kwargs, repeats, warmup_runs)
            if report is True:
                print(result.format(), flush=True)
            elif callable(report):
                report(result)
            return result if return_profile else result.value

        return wrapper

    return _decorator(func, decorate)


def profile_repeats(fn: Callable[[], object], *, repeats: int = 5, warmup_runs: int = 0,
                    device: Union[int, str, Sequence[int]] = 0, interval_s: float = 0.2,
                    backend: str = "auto", strict: bool = True,
                    sync_fn: Optional[Callable[[], None]] = None, warmup_s: float = 0.0,
                    store_samples: bool = False,
                    report: Union[bool, Callable[[MultiRunResult], None]] = True,
                    sample_pcie: bool = False, nvml_library: Optional[str] = None,
                    smi_path: Optional[str] = None, backend_timeout_s: float = 5.0,
                    pids: Union[None, int, Sequence[int]] = None,
                    pid_tree: bool = False,
                    rocm_smi_library: Optional[str] = None) -> MultiRunResult:
    """Runs fn() warmup_runs times unmeasured, then repeats times, each a
    region of its own, and returns the MultiRunResult (profgpu 0.3's
    profile_repeats); report as gpu_profile's.  store_samples is accepted
    for the original's signature: no run's samples are returned (nor were
    they by the original)."""
    if not (report is True or report is False or callable(report)):
        raise TypeError("report must be True, False or a callable, not %r" % (report,))
    if not callable(fn):
        raise TypeError("profile_repeats: %r is not callable" % (fn,))
    _repeats.check_counts(repeats, warmup_runs)
    opts = _make_options(device, interval_s, backend, strict, warmup_s, False, sample_pcie,
                         nvml_library, smi_path, backend_timeout_s, pids, pid_tree,
                         rocm_smi_library)
    return _repeated(fn, opts, sync_fn, report, True, repeats, warmup_runs)()
