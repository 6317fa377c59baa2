"""The C library's declarations for gpu_profile (include/gpu_profile.h):
constants, ctypes mirrors of its structs (checked field by field against the
compiler's layout by tests/python/test_gpu_profile.py) and its functions.
Nothing here has behaviour of its own.
"""

import ctypes

from ._native import c_enum as _c_enum, declare as _declare


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

_BACKENDS = {"auto": 0, "nvml": 1, "smi": 2, "none": 3, "amd": 4}
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
        # Health (docs/metrics.md "Health"), valid by health_valid bits.
        ("health_valid", ctypes.c_uint32),
        ("fan_speed_pct", ctypes.c_uint32),
        ("ecc_sbe_volatile", ctypes.c_uint64),
        ("ecc_dbe_volatile", ctypes.c_uint64),
        ("ecc_sbe_aggregate", ctypes.c_uint64),
        ("ecc_dbe_aggregate", ctypes.c_uint64),
        ("retired_pages_sbe", ctypes.c_uint32),
        ("retired_pages_dbe", ctypes.c_uint32),
        ("remapped_rows_corr", ctypes.c_uint32),
        ("remapped_rows_unc", ctypes.c_uint32),
        ("remap_pending", ctypes.c_uint32),
        ("remap_failure", ctypes.c_uint32),
        ("pcie_replay_count", ctypes.c_uint64),
        ("nvlink_crc_flit_errs", ctypes.c_uint64),
        ("nvlink_recovery_errs", ctypes.c_uint64),
        ("mem_temp_c", ctypes.c_int32),
        ("enc_util_pct", ctypes.c_uint32),
        ("dec_util_pct", ctypes.c_uint32),
        ("xid_last", ctypes.c_uint32),
        ("xid_count", ctypes.c_uint64),
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
        ("pci_bus_id", ctypes.c_char * 32),  # GP_PCI_BUS_ID_MAX
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
        ("stuck_known", ctypes.c_uint32),
        ("stuck_episodes", ctypes.c_uint32),
        ("stuck_longest_s", ctypes.c_double),
        ("health_valid", ctypes.c_uint32),
        ("xid_count", ctypes.c_uint64),
        ("xid_last", ctypes.c_uint32),
        ("ecc_sbe_volatile_increase", ctypes.c_uint64),
        ("ecc_dbe_volatile_increase", ctypes.c_uint64),
        ("retired_pages_sbe_increase", ctypes.c_uint64),
        ("retired_pages_dbe_increase", ctypes.c_uint64),
        ("remapped_rows_corr_increase", ctypes.c_uint64),
        ("remapped_rows_unc_increase", ctypes.c_uint64),
        ("remap_pending", ctypes.c_uint32),
        ("remap_failure", ctypes.c_uint32),
        ("pcie_replay_increase", ctypes.c_uint64),
        ("nvlink_crc_flit_increase", ctypes.c_uint64),
        ("nvlink_recovery_increase", ctypes.c_uint64),
        ("fan_max_pct", ctypes.c_uint32),
        ("mem_temp_max_c", ctypes.c_int32),
        ("enc_util_mean_pct", ctypes.c_double),
        ("enc_util_max_pct", ctypes.c_uint32),
        ("dec_util_mean_pct", ctypes.c_double),
        ("dec_util_max_pct", ctypes.c_uint32),
    ]


class _GpRunStats(ctypes.Structure):
    """gp_run_stats: one metric across runs (the multi-run API, _repeats.py)."""

    _fields_ = [
        ("n", ctypes.c_uint64),
        ("n_unknown", ctypes.c_uint64),
        ("mean", ctypes.c_double),
        ("std", ctypes.c_double),
        ("min", ctypes.c_double),
        ("max", ctypes.c_double),
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
        ("rocm_smi_library", ctypes.c_char_p),
        ("stuck_after_s", ctypes.c_double),
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
_gp_run_stats_compute = _declare("gp_run_stats_compute", _c_enum,
                                 ctypes.POINTER(ctypes.c_double), ctypes.c_size_t,
                                 ctypes.POINTER(_GpRunStats), ctypes.POINTER(_GpError))
