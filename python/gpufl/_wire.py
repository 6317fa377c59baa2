"""gpufl._wire: the GPUFlight wire format's vocabulary as the C library
defines it in src/wire/vocab.h - channels, dictionaries, record types with
their channel and version, every batch's columns in the writer's order,
capability statuses and the engines' wire names.

The Python log reader (gpufl._logs) takes its names from here, and
tests/python/test_gpufl.py compares this module with the C table entry by
entry (through tests/wire/vocab_dump.c), so a name changed on one side
only fails the suite.
"""

__all__ = ["CHANNELS", "ALL_CHANNELS", "DICTIONARIES", "RECORDS", "BATCHES", "COMMON_TYPES",
           "CAPABILITY_STATUSES", "ENGINES", "SESSION_KINDS", "NVTX_INSTANCE_BIT",
           "WINDOW_SIDECAR_TYPE", "WINDOW_LOSS_TYPE"]

# In reading order; sass (GPUFlight's disassembly) is read, never written.
CHANNELS = ("device", "scope", "system", "sass")
ALL_CHANNELS = "*"  # the channel of a record type written to every channel

DICTIONARIES = ("kernel_dict", "scope_name_dict", "function_dict", "metric_dict",
                "source_file_dict", "func_symbol_dict", "stack_dict", "op_dict")

# Records that are not batches: name -> (channel, version); version 0: the
# record carries no "version" key.
RECORDS = {
    "job_start": (ALL_CHANNELS, 1),
    "dictionary_update": (ALL_CHANNELS, 1),
    "capture_capabilities": (ALL_CHANNELS, 1),
    "shutdown": (ALL_CHANNELS, 0),
    "system_start": ("system", 1),
    "system_stop": ("system", 1),
    "kernel_detail": ("device", 1),
    "memset_event": ("device", 0),
    "device_lost_event": ("system", 1),  # ours: a device whose sampling failed
    "device_error_event": ("system", 1),  # ours: XIDs the driver reported
    # GPUFlight 1.3's own records.
    "kernel_perf_metric_event": ("device", 0),
    "sass_config": ("device", 1),
    "perf_metric_event": ("scope", 0),
    "nvtx_marker_event": ("scope", 0),
    "graph_launch_event": ("scope", 0),
    "graph_node_definition": ("scope", 0),
    "deep_window_event": ("scope", 0),
    "pm_sampling_config": ("scope", 1),
    "execution_signature": ("scope", 1),
    "cubin_disassembly": ("sass", 1),
    "ptx_disassembly": ("sass", 1),
    "source_file_content": ("sass", 1),
    "capture_window": ("scope", 1),  # ours: a window trace rows were kept in
    "segment_start": (ALL_CHANNELS, 1),
    "segment_end": (ALL_CHANNELS, 1),
    "run_end": (ALL_CHANNELS, 1),
    "deep_window_rule_summary": ("scope", 0),
    "counter_data_quality_summary": ("scope", 0),
    # GPUFlight's records from before its batches (read, never written).
    "init": (ALL_CHANNELS, 0),
    "kernel_event": ("device", 0),
    "memcpy_event": ("device", 0),
    "scope_begin": ("scope", 0),
    "scope_end": ("scope", 0),
    "system_sample": ("system", 0),
}

# Columnar batches: name -> (channel, version, columns in the writer's order).
BATCHES = {
    "kernel_event_batch": ("device", 1, (
        "dt_ns", "kernel_id", "stream_id", "duration_ns", "corr_id", "dyn_shared", "num_regs",
        "has_details", "external_kind", "external_id", "device_id")),
    "memcpy_event_batch": ("device", 1, (
        "dt_ns", "stream_id", "duration_ns", "bytes", "copy_kind", "corr_id", "device_id",
        "src_device_id", "dst_device_id")),
    "device_metric_batch": ("system", 1, (
        "dt_ns", "device_id", "gpu_util", "mem_util", "temp_c", "power_mw", "used_mib",
        "total_mib", "clock_sm", "fan_speed_pct", "temp_mem_c", "temp_junction_c", "voltage_mv",
        "energy_uj", "clock_mem", "pcie_bw_bps", "ecc_corrected", "ecc_uncorrected",
        "sm_active_pct_x100", "sm_occupancy_pct_x100", "tensor_active_pct_x100",
        "tensor_dfma_pct_x100", "tensor_hmma_pct_x100", "tensor_imma_pct_x100",
        "dram_active_pct_x100", "fp64_active_pct_x100", "fp32_active_pct_x100",
        "fp16_active_pct_x100", "gpm_pcie_tx_bps", "gpm_pcie_rx_bps", "nvlink_tx_bps",
        "nvlink_rx_bps")),
    "host_metric_batch": ("system", 1, (
        "dt_ns", "cpu_pct_x100", "ram_used_mib", "ram_total_mib")),
    "scope_event_batch": ("scope", 3, (
        "dt_ns", "scope_instance_id", "name_id", "event_type", "depth", "repeat", "warmup",
        "original_start_ns", "tid")),
    "synchronization_event_batch": ("scope", 1, (
        "dt_ns", "duration_ns", "sync_type", "stream_id", "event_id", "context_id", "corr_id",
        "function_id", "stack_id")),
    "memory_alloc_event_batch": ("scope", 1, (
        "dt_ns", "duration_ns", "memory_op", "memory_kind", "address", "bytes", "device_id",
        "stream_id", "corr_id")),
    "profile_sample_batch": ("scope", 1, (
        "dt_ns", "corr_id", "device_id", "function_id", "pc_offset", "metric_id", "metric_value",
        "stall_reason", "sample_kind", "scope_name_id", "source_file_id", "source_line")),
    "pm_sample_batch": ("scope", 1, (
        "sample_index", "dt_ns", "device_id", "metric_id", "value", "scope_name_id")),
    "graph_event_batch": ("device", 1, (
        "dt_ns", "graph_id", "stream_id", "duration_ns", "corr_id", "device_id")),
}

COMMON_TYPES = frozenset(t for t, (ch, _) in RECORDS.items() if ch == ALL_CHANNELS)

CAPABILITY_STATUSES = ("collected", "fallback", "partial", "skipped", "enabled_no_data",
                       "not_requested")

# In gpufl.ProfilingEngine's order.
ENGINES = ("nvidia.monitor", "nvidia.trace", "nvidia.pc_sampling", "nvidia.sass_metrics",
           "nvidia.range_profiler", "nvidia.deep", "nvidia.pm_sampling")

SESSION_KINDS = ("monitor", "trace")

# scope_event_batch's scope_instance_id of an NVTX range has this bit set.
NVTX_INSTANCE_BIT = 1 << 62

# The "type" of a published window's sidecar, .gpufl-window.<channel>.<N>.json
# (GPUFlight 1.3; read, never written).
WINDOW_SIDECAR_TYPE = "transport_window"

# The "type" of GPUFlight's marker of a window it lost in transport,
# .gpufl-transport-loss.<channel>.<N>.json (read, never written).
WINDOW_LOSS_TYPE = "transport_window_loss"

# Ours: a MIG instance's gpu_static_devices entry ends with the object
# MIG_KEY, these members in this order; a whole GPU's has no such key.
MIG_KEY = "mig"
MIG_KEYS = ("profile", "gpu_instance_id", "compute_instance_id", "parent_id", "parent_uuid",
            "parent_name")


def columns(batch):
    """A batch type's columns in the writer's order."""
    return BATCHES[batch][2]


def record(name):
    """name, when it is a record type of the vocabulary (else KeyError): for
    code that names a type, so that a misspelt name fails at import."""
    RECORDS[name]
    return name


def batch(name):
    """name, when it is a batch type of the vocabulary (else KeyError)."""
    BATCHES[name]
    return name
