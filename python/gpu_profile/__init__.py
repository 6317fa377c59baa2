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
import os
import sys
from typing import Callable, List, Optional, Sequence, Tuple, Union

__all__ = [
    "gpu_profile",
    "GpuMonitor",
    "GpuSummary",
    "GpuSample",
    "ProfiledResult",
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
from ._process import (GP_M_PROC_MEM, GP_M_PROC_UTIL, GP_PROC_PIDS_MAX,  # noqa: E402,F401
                       pids_arg as _pids_arg, sample_process as _sample_process,
                       summary_process as _summary_process)


# ------------------------------------------------------- C declarations

GP_OK = 0
GP_ERR_BACKEND_UNAVAILABLE = 3
GP_ERROR_MESSAGE_MAX = 1024
GP_NAME_MAX = 96
GP_SPARK_WIDTH = 32
GP_SPARK_NONE = 255
GP_NOTE_MAX = 512

GP_M_UTIL_GPU = 1 << 0
GP_M_UTIL_MEM = 1 << 1
GP_M_MEM_USED = 1 << 2
GP_M_MEM_TOTAL = 1 << 3
GP_M_POWER = 1 << 4
GP_M_ENERGY = 1 << 5
GP_M_TEMP = 1 << 6
GP_M_CLOCK_SM = 1 << 7
GP_M_CLOCK_MEM = 1 << 8
GP_M_THROTTLE = 1 << 9
GP_M_PCIE_TX = 1 << 10
GP_M_PCIE_RX = 1 << 11
# GPM metrics (gp_gpm_metric order; docs/concepts.md): valid bit GP_M_GPM(i).
GPM_METRICS = (
    "sm_active", "sm_occupancy", "tensor_active", "tensor_dfma_active",
    "tensor_hmma_active", "tensor_imma_active", "dram_active", "fp64_active",
    "fp32_active", "fp16_active", "gpm_pcie_tx", "gpm_pcie_rx", "nvlink_tx", "nvlink_rx",
)
GP_GPM_COUNT = len(GPM_METRICS)


def GP_M_GPM(i):
    return 1 << (12 + i)

GP_FMT_ASCII = 1 << 0

_BACKENDS = {"auto": 0, "nvml": 1, "smi": 2, "none": 3}
_ENERGY_SOURCES = {0: None, 1: "counter", 2: "power_integral"}

# Throttle ("clock event") reason bits, as NVML defines them.
THROTTLE_REASONS = {
    0x1: "gpu_idle",
    0x2: "app_clocks",
    0x4: "sw_power_cap",
    0x8: "hw_slowdown",
    0x10: "sync_boost",
    0x20: "sw_thermal",
    0x40: "hw_thermal",
    0x80: "hw_power_brake",
    0x100: "display_clock",
}



class _GpError(ctypes.Structure):
    _fields_ = [
        ("status", _c_enum),
        ("message", ctypes.c_char * GP_ERROR_MESSAGE_MAX),
    ]


class _GpDeviceSample(ctypes.Structure):
    _fields_ = [
        ("valid", ctypes.c_uint32),
        ("util_gpu_pct", ctypes.c_uint32),
        ("util_mem_pct", ctypes.c_uint32),
        ("mem_used_bytes", ctypes.c_uint64),
        ("mem_total_bytes", ctypes.c_uint64),
        ("power_mw", ctypes.c_uint32),
        ("energy_mj", ctypes.c_uint64),
        ("temp_c", ctypes.c_int32),
        ("clock_sm_mhz", ctypes.c_uint32),
        ("clock_mem_mhz", ctypes.c_uint32),
        ("throttle_reasons", ctypes.c_uint64),
        ("pcie_tx_kbps", ctypes.c_uint32),
        ("pcie_rx_kbps", ctypes.c_uint32),
        ("gpm", ctypes.c_double * GP_GPM_COUNT),
        # Per-process attribution (GpuSample.process).
        ("proc_mem_used_bytes", ctypes.c_uint64),
        ("proc_all_mem_used_bytes", ctypes.c_uint64),
        ("proc_count", ctypes.c_uint32),
        ("proc_all_count", ctypes.c_uint32),
        ("proc_sm_pct", ctypes.c_uint32),
        ("proc_mem_pct", ctypes.c_uint32),
        ("proc_all_sm_pct", ctypes.c_uint32),
        ("proc_all_mem_pct", ctypes.c_uint32),
    ]


class _GpSample(ctypes.Structure):
    _fields_ = [
        ("t_mono_ns", ctypes.c_uint64),
        ("t_wall_ns", ctypes.c_uint64),
        ("slot", ctypes.c_uint32),
        ("device_index", ctypes.c_uint32),
        ("m", _GpDeviceSample),
    ]


class _GpMigInfo(ctypes.Structure):
    """gp_mig_info (include/gpu_profile.h): a MIG instance's identity."""

    _fields_ = [
        ("is_mig", ctypes.c_uint32),
        ("parent_index", ctypes.c_uint32),
        ("parent_uuid", ctypes.c_char * GP_NAME_MAX),
        ("parent_name", ctypes.c_char * GP_NAME_MAX),
        ("profile", ctypes.c_char * 32),
        ("gpu_instance_id", ctypes.c_int32),
        ("compute_instance_id", ctypes.c_int32),
    ]


def _mig_dict(m):
    """gp_mig_info as GpuSummary.mig: None for a whole GPU, unknowns None."""
    if not m.is_mig:
        return None
    def text(b):
        return b.decode("utf-8", "replace") or None

    return {
        "profile": text(m.profile),
        "gpu_instance_id": m.gpu_instance_id if m.gpu_instance_id >= 0 else None,
        "compute_instance_id": m.compute_instance_id if m.compute_instance_id >= 0 else None,
        "parent_index": m.parent_index,
        "parent_uuid": text(m.parent_uuid),
        "parent_name": text(m.parent_name),
    }


class _GpDeviceInfo(ctypes.Structure):
    """gp_device_info: what gp_list_devices says of a device."""

    _fields_ = [
        ("index", ctypes.c_uint32),
        ("name", ctypes.c_char * GP_NAME_MAX),
        ("uuid", ctypes.c_char * GP_NAME_MAX),
        ("valid", ctypes.c_uint32),
        ("mem_total_bytes", ctypes.c_uint64),
        ("mig", _GpMigInfo),
    ]


class _GpSummary(ctypes.Structure):
    _fields_ = [
        ("device_index", ctypes.c_uint32),
        ("name", ctypes.c_char * GP_NAME_MAX),
        ("uuid", ctypes.c_char * GP_NAME_MAX),
        ("backend", ctypes.c_char * 16),
        ("note", ctypes.c_char * GP_NOTE_MAX),
        ("duration_s", ctypes.c_double),
        ("interval_s", ctypes.c_double),
        ("warmup_s", ctypes.c_double),
        ("sample_count", ctypes.c_uint64),
        ("samples_warmup", ctypes.c_uint64),
        ("interval_mean_s", ctypes.c_double),
        ("valid", ctypes.c_uint32),
        ("util_gpu_mean", ctypes.c_double),
        ("util_gpu_p50", ctypes.c_uint32),
        ("util_gpu_p95", ctypes.c_uint32),
        ("util_gpu_max", ctypes.c_uint32),
        ("util_mem_mean", ctypes.c_double),
        ("util_mem_max", ctypes.c_uint32),
        ("mem_used_max_bytes", ctypes.c_uint64),
        ("mem_total_bytes", ctypes.c_uint64),
        ("power_mean_mw", ctypes.c_double),
        ("power_max_mw", ctypes.c_uint32),
        ("energy_j", ctypes.c_double),
        ("energy_source", _c_enum),
        ("temp_max_c", ctypes.c_int32),
        ("clock_sm_mean_mhz", ctypes.c_double),
        ("clock_mem_mean_mhz", ctypes.c_double),
        ("throttle_reasons_seen", ctypes.c_uint64),
        ("busy_time_est_s", ctypes.c_double),
        ("spark", ctypes.c_uint8 * GP_SPARK_WIDTH),
        ("spark_len", ctypes.c_uint32),
        ("device_status", _c_enum),
        ("device_error", ctypes.c_char * GP_NOTE_MAX),
        ("device_error_at_s", ctypes.c_double),
        ("gpm_mean", ctypes.c_double * GP_GPM_COUNT),
        ("gpm_p95", ctypes.c_double * GP_GPM_COUNT),
        ("gpm_max", ctypes.c_double * GP_GPM_COUNT),
        ("energy_span_s", ctypes.c_double),
        ("proc_requested", ctypes.c_uint32),
        ("proc_count_max", ctypes.c_uint32),
        ("proc_mem_used_mean_bytes", ctypes.c_double),
        ("proc_mem_used_max_bytes", ctypes.c_uint64),
        ("proc_all_mem_used_max_bytes", ctypes.c_uint64),
        ("proc_sm_mean_pct", ctypes.c_double),
        ("proc_sm_max_pct", ctypes.c_uint32),
        ("proc_mem_mean_pct", ctypes.c_double),
        ("proc_mem_max_pct", ctypes.c_uint32),
        ("proc_all_sm_mean_pct", ctypes.c_double),
        ("mig", _GpMigInfo),
        ("util_gpu_min", ctypes.c_uint32),
        ("util_gpu_p5", ctypes.c_uint32),
        ("util_gpu_p99", ctypes.c_uint32),
        ("util_gpu_std", ctypes.c_double),
        ("util_gpu_idle_pct", ctypes.c_double),
        ("util_gpu_active_pct", ctypes.c_double),
        ("mem_used_mean_bytes", ctypes.c_double),
        ("temp_mean_c", ctypes.c_double),
        ("clock_sm_max_mhz", ctypes.c_uint32),
    ]


_sync_fn_t = ctypes.CFUNCTYPE(None, ctypes.c_void_p)
_report_fn_t = ctypes.CFUNCTYPE(None, ctypes.POINTER(_GpSummary), ctypes.c_void_p)


class _GpOptions(ctypes.Structure):
    _fields_ = [
        ("device", ctypes.c_int),
        ("devices", ctypes.POINTER(ctypes.c_uint)),
        ("n_devices", ctypes.c_size_t),
        ("interval_s", ctypes.c_double),
        ("backend", _c_enum),
        ("strict", ctypes.c_int),
        ("sync_fn", _sync_fn_t),
        ("sync_user", ctypes.c_void_p),
        ("warmup_s", ctypes.c_double),
        ("keep_samples", ctypes.c_int),
        ("sample_pcie", ctypes.c_int),
        ("report", _c_enum),
        ("report_file", ctypes.c_void_p),  # FILE *
        ("report_flags", ctypes.c_uint),
        ("report_fn", _report_fn_t),
        ("report_user", ctypes.c_void_p),
        ("nvml_library", ctypes.c_char_p),
        ("smi_path", ctypes.c_char_p),
        ("backend_timeout_s", ctypes.c_double),
        ("on_sample", ctypes.c_void_p),
        ("on_sample_user", ctypes.c_void_p),
        ("pids", ctypes.POINTER(ctypes.c_int)),
        ("n_pids", ctypes.c_size_t),
        ("pid_tree", ctypes.c_int),
    ]


_gp_version = _declare("gp_version", ctypes.c_char_p)
_gp_strerror = _declare("gp_strerror", ctypes.c_char_p, _c_enum)
_gp_options_init = _declare("gp_options_init", None, ctypes.POINTER(_GpOptions))
_gp_monitor_create = _declare("gp_monitor_create", _c_enum, ctypes.POINTER(_GpOptions),
                              ctypes.POINTER(ctypes.c_void_p), ctypes.POINTER(_GpError))
_gp_monitor_start = _declare("gp_monitor_start", _c_enum, ctypes.c_void_p,
                             ctypes.POINTER(_GpError))
_gp_monitor_stop = _declare("gp_monitor_stop", _c_enum, ctypes.c_void_p,
                            ctypes.POINTER(_GpError))
_gp_monitor_rearm = _declare("gp_monitor_rearm", _c_enum, ctypes.c_void_p,
                             ctypes.POINTER(_GpError))
_gp_monitor_destroy = _declare("gp_monitor_destroy", None, ctypes.c_void_p)
_gp_monitor_device_count = _declare("gp_monitor_device_count", ctypes.c_size_t,
                                    ctypes.c_void_p)
_gp_monitor_summary = _declare("gp_monitor_summary", ctypes.POINTER(_GpSummary),
                               ctypes.c_void_p, ctypes.c_size_t)
_gp_monitor_samples = _declare("gp_monitor_samples", ctypes.POINTER(_GpSample),
                               ctypes.c_void_p, ctypes.POINTER(ctypes.c_size_t))
_gp_summary_format = _declare("gp_summary_format", ctypes.c_size_t,
                              ctypes.POINTER(_GpSummary), ctypes.c_uint,
                              ctypes.c_char_p, ctypes.c_size_t)
_gp_summary_to_json = _declare("gp_summary_to_json", ctypes.c_size_t,
                               ctypes.POINTER(_GpSummary), ctypes.c_uint,
                               ctypes.c_char_p, ctypes.c_size_t)
_gp_summary_sparkline = _declare("gp_summary_sparkline", ctypes.c_size_t,
                                 ctypes.POINTER(_GpSummary), ctypes.c_uint,
                                 ctypes.c_char_p, ctypes.c_size_t)

_gp_list_devices = _declare("gp_list_devices", _c_enum, ctypes.POINTER(_GpOptions),
                            ctypes.POINTER(ctypes.POINTER(_GpDeviceInfo)),
                            ctypes.POINTER(ctypes.c_size_t), ctypes.c_char_p, ctypes.c_size_t,
                            ctypes.c_void_p, ctypes.POINTER(_GpError))
_gp_devices_free = _declare("gp_devices_free", None, ctypes.POINTER(_GpDeviceInfo))

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

    A metric the device/backend did not report is None (never 0).
    """

    device: int
    name: str
    uuid: str
    backend: str
    note: str
    duration_s: float
    interval_s: float
    warmup_s: float
    sample_count: int
    samples_warmup: int
    interval_mean_s: float
    util_gpu_mean: Optional[float]
    util_gpu_p50: Optional[int]
    util_gpu_p95: Optional[int]
    util_gpu_max: Optional[int]
    util_mem_mean: Optional[float]
    util_mem_max: Optional[int]
    mem_used_max_bytes: Optional[int]
    mem_total_bytes: Optional[int]
    power_mean_w: Optional[float]
    power_max_w: Optional[float]
    energy_j: Optional[float]
    energy_source: Optional[str]
    temp_max_c: Optional[int]
    clock_sm_mean_mhz: Optional[float]
    clock_mem_mean_mhz: Optional[float]
    throttle_reasons: Optional[Tuple[str, ...]]
    throttle_reasons_mask: Optional[int]
    busy_time_est_s: Optional[float]
    sparkline: str
    spark: Tuple[Optional[int], ...]
    device_error: Optional[str]
    device_error_at_s: Optional[float]
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
    _raw: bytes = dataclasses.field(default=b"", repr=False, compare=False)

    def format(self, ascii: bool = False) -> str:
        """The human-friendly report (the C library's rendering)."""
        return _render(_gp_summary_format, self._raw, GP_FMT_ASCII if ascii else 0)

    def to_json(self, pretty: bool = False) -> str:
        """The summary as JSON (schema gpu-profile.summary, docs/json-schema.md)."""
        return _render(_gp_summary_to_json, self._raw, 2 if pretty else 0)

    def __str__(self):
        return self.format()

    @classmethod
    def _from_c(cls, s):
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
        return cls(
            device=s.device_index,
            name=s.name.decode("utf-8", "replace"),
            uuid=s.uuid.decode("utf-8", "replace"),
            backend=s.backend.decode(),
            note=s.note.decode("utf-8", "replace"),
            duration_s=s.duration_s,
            interval_s=s.interval_s,
            warmup_s=s.warmup_s,
            sample_count=s.sample_count,
            samples_warmup=s.samples_warmup,
            interval_mean_s=s.interval_mean_s,
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
            sparkline=_render(_gp_summary_sparkline, raw, 0),
            spark=spark,
            device_error=s.device_error.decode("utf-8", "replace") if failed else None,
            device_error_at_s=s.device_error_at_s if failed else None,
            gpm={n: (s.gpm_mean[i], s.gpm_p95[i], s.gpm_max[i])
                 for i, n in enumerate(GPM_METRICS) if v & GP_M_GPM(i)} or None,
            mig=_mig_dict(s.mig),
            process=_summary_process(s),
            _raw=raw,
        )


@dataclasses.dataclass(frozen=True)
class GpuSample:
    """One raw sample of one device (GpuMonitor(keep_samples=True))."""

    t_mono_ns: int  # CLOCK_MONOTONIC
    timestamp: float  # wall clock, seconds since the Unix epoch
    slot: int
    device: int
    util_gpu: Optional[int]
    util_mem: Optional[int]
    mem_used_bytes: Optional[int]
    mem_total_bytes: Optional[int]
    power_w: Optional[float]
    energy_mj: Optional[int]
    temp_c: Optional[int]
    clock_sm_mhz: Optional[int]
    clock_mem_mhz: Optional[int]
    throttle_reasons_mask: Optional[int]
    pcie_tx_kbps: Optional[int]
    pcie_rx_kbps: Optional[int]
    # GPM: {name: value} since the device's previous sample; None without.
    gpm: Optional[dict] = None
    # Per-process attribution: {"count", "all_count", "mem_used_bytes",
    # "all_mem_used_bytes", "sm_pct", "mem_pct", "all_sm_pct",
    # "all_mem_pct"} ("all": every process NVML lists), each None where NVML
    # did not answer; None when neither was read (no processes named).
    process: Optional[dict] = None

    @classmethod
    def _from_c(cls, s):
        m = s.m
        v = m.valid

        def ok(bit, value):
            return value if v & bit else None

        return cls(
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
                  pids=None, pid_tree=False):
    if backend not in _BACKENDS:
        raise ValueError("backend must be one of %s, not %r"
                         % (", ".join(repr(b) for b in _BACKENDS), backend))
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


def _summaries(mon):
    """Every device's GpuSummary of a stopped monitor, in slot order."""
    return tuple(GpuSummary._from_c(_gp_monitor_summary(mon, i).contents)
                 for i in range(_gp_monitor_device_count(mon)))


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
                 pids: Union[None, int, Sequence[int]] = None, pid_tree: bool = False):
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
                                   backend_timeout_s, pids, pid_tree)
        self._mon = None

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
            if self.sync_fn is not None:
                self.sync_fn()
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
        was sampled).  RuntimeError when the monitor is not running."""
        mon = self._mon
        if mon is None:
            raise RuntimeError("the monitor is not running: call start() first")
        try:
            if self.sync_fn is not None:
                self.sync_fn()
        finally:
            err = _GpError()
            try:
                st = _gp_monitor_stop(mon, ctypes.byref(err))
                if st != GP_OK:
                    _raise(st, err)
                self.summaries = list(_summaries(mon))
                self.summary = self.summaries[0] if self.summaries else None
                if self.keep_samples:
                    count = ctypes.c_size_t()
                    p = _gp_monitor_samples(mon, ctypes.byref(count))
                    self.samples = [GpuSample._from_c(p[i]) for i in range(count.value)]
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
        sys.stderr.write(summary.format())
        sys.stderr.flush()
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
    try:
        err = _GpError()
        if sync_fn is not None:
            sync_fn()
        st = _gp_monitor_start(mon, ctypes.byref(err))
        if st != GP_OK:
            _raise(st, err)
        try:
            value = fn(*args, **kwargs)
        except BaseException:
            # The function's exception wins over anything stopping raises.
            try:
                if sync_fn is not None:
                    sync_fn()
            except Exception:
                pass
            reusable = _gp_monitor_stop(mon, ctypes.byref(err)) == GP_OK
            raise
        try:
            if sync_fn is not None:
                sync_fn()
        finally:
            st = _gp_monitor_stop(mon, ctypes.byref(err))
        if st != GP_OK:
            _raise(st, err)
        reusable = True
        summaries = ()
        if need_summary:
            summaries = _summaries(mon)
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
                pids: Union[None, int, Sequence[int]] = None, pid_tree: bool = False):
    """Profile each call of a function: @gpu_profile or @gpu_profile(...).

    device: an index, "all", a GPU or MIG UUID, or a list of them (as
    GpuMonitor's).  report: True prints the summary to stderr, False prints nothing, a
    callable receives the GpuSummary.  return_profile=True makes the function
    return ProfiledResult(value, gpu).  With strict=True a backend that
    cannot be opened raises GpuBackendError before the function runs.  The
    backend is opened at the first call and kept open, idle, between calls
    (see _MonitorPool).
    """
    if not (report is True or report is False or callable(report)):
        raise TypeError("report must be True, False or a callable, not %r" % (report,))
    # Validate once, at decoration time.
    opts = _make_options(device, interval_s, backend, strict, warmup_s, False, sample_pcie,
                         nvml_library, smi_path, backend_timeout_s, pids, pid_tree)
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

    if func is not None:
        if not callable(func):
            raise TypeError("gpu_profile: %r is not callable" % (func,))
        return decorate(func)
    return decorate
