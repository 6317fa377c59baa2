/*
 * wire/vocab.h - the GPUFlight wire format's vocabulary, defined once:
 * channels, dictionaries, record types (with their channel and version),
 * every batch's columns in the writer's order, capability statuses and
 * the engines' wire names.  The writers (wire/), the session (recorder/),
 * the reader, the report, the exports and the command all take their names
 * from here (vocab.c holds the strings); python/gpufl/_wire.py is its
 * Python copy, compared with this table by tests/python/test_gpufl.py.
 *
 * The lists are X-macros so that each enum and its strings come from one
 * line.  Spec: shared/spec/session-log-format.md; extensions of ours are
 * marked.
 */
#ifndef GP_WIRE_VOCAB_H
#define GP_WIRE_VOCAB_H

#include "gpufl.h"

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* ------------------------------------------------------------ scopes */

/* scope_event_batch's scope_instance_id of an NVTX range (recorded as a
 * scope, docs/gpufl.md) has this bit set: it keeps NVTX ids apart from
 * gpufl scope ids, and tells a reader which is which. */
#define FL_NVTX_INSTANCE_BIT (1ull << 62)

/* ------------------------------------------------------------ channels */

/* The channels in reading order; sass (GPUFlight's disassembly: cubins,
 * PTX, source files) is written only when the PcSampling engine runs a
 * disassembler (recorder/disasm_tool.c). */
#define FL_CHANNELS(X) X(DEVICE, device) X(SCOPE, scope) X(SYSTEM, system) X(SASS, sass)

typedef enum fl_channel {
#define FL_X(id, name) FL_CH_##id,
    FL_CHANNELS(FL_X)
#undef FL_X
        FL_CH_COUNT,
    FL_CH_ALL = FL_CH_COUNT /* a record type written to every channel */
} fl_channel;

/* The channels every session writes: device, scope, system (a session's
 * common records go to each channel it writes: these, and sass when it
 * writes that). */
#define FL_CH_WRITTEN FL_CH_SASS

/* The "type" of a published window's sidecar file,
 * <session>/.gpufl-window.<channel>.<N>.json (GPUFlight 1.3; read, never
 * written by this recorder). */
#define FL_WINDOW_SIDECAR_TYPE "transport_window"
/* The "type" of GPUFlight's marker of a window it lost in transport,
 * <session>/.gpufl-transport-loss.<channel>.<N>.json (read, never
 * written). */
#define FL_WINDOW_LOSS_TYPE "transport_window_loss"

/* "device", "scope", "system", "sass"; NULL for anything else. */
const char *fl_channel_name(int ch);

/* -------------------------------------------------------- dictionaries */

#define FL_DICTS(X)                                                                                \
    X(KERNEL, kernel_dict)                                                                         \
    X(SCOPE_NAME, scope_name_dict)                                                                 \
    X(FUNCTION, function_dict)                                                                     \
    X(METRIC, metric_dict)                                                                         \
    X(SOURCE_FILE, source_file_dict)                                                               \
    X(FUNC_SYMBOL, func_symbol_dict)                                                               \
    X(STACK, stack_dict) /* ours: CPU stack id -> "outer|...|inner" (synchronizations) */          \
    X(OP, op_dict)       /* ours: framework op id (external_kind 4) -> "aten::mm" */

typedef enum fl_dict {
#define FL_X(id, name) FL_DICT_##id,
    FL_DICTS(FL_X)
#undef FL_X
        FL_DICT_COUNT
} fl_dict;

const char *fl_dict_name(fl_dict d);
/* The dictionary of a name; FL_DICT_COUNT for none. */
fl_dict fl_dict_of(const char *name);

/* ------------------------------------------------------- batch columns */

/* Each batch's columns in the order the writers write them (readers look
 * them up by name): X(batch, COLUMN, column_name).  batches.c writes the
 * scope and trace batches' rows from these lists: a cell is the row's
 * field of the column's name unless batches.c names another value. */
#define FL_COLS_KERNEL(X)                                                                          \
    X(KERNEL, DT_NS, dt_ns)                                                                        \
    X(KERNEL, KERNEL_ID, kernel_id)                                                                \
    X(KERNEL, STREAM_ID, stream_id)                                                                \
    X(KERNEL, DURATION_NS, duration_ns)                                                            \
    X(KERNEL, CORR_ID, corr_id)                                                                    \
    X(KERNEL, DYN_SHARED, dyn_shared)                                                              \
    X(KERNEL, NUM_REGS, num_regs)                                                                  \
    X(KERNEL, HAS_DETAILS, has_details)                                                            \
    X(KERNEL, EXTERNAL_KIND, external_kind)                                                        \
    X(KERNEL, EXTERNAL_ID, external_id)                                                            \
    X(KERNEL, DEVICE_ID, device_id) /* ours */

#define FL_COLS_MEMCPY(X)                                                                          \
    X(MEMCPY, DT_NS, dt_ns)                                                                        \
    X(MEMCPY, STREAM_ID, stream_id)                                                                \
    X(MEMCPY, DURATION_NS, duration_ns)                                                            \
    X(MEMCPY, BYTES, bytes)                                                                        \
    X(MEMCPY, COPY_KIND, copy_kind)                                                                \
    X(MEMCPY, CORR_ID, corr_id)                                                                    \
    X(MEMCPY, DEVICE_ID, device_id)         /* ours */                                             \
    X(MEMCPY, SRC_DEVICE_ID, src_device_id) /* ours, only with a peer-to-peer copy */              \
    X(MEMCPY, DST_DEVICE_ID, dst_device_id) /* ours, only with a peer-to-peer copy */

/* dt_ns and device_id always; each later one once some row of the
 * session has had a value for it (the optional ones from fan_speed_pct
 * to ecc_uncorrected: a non-zero value), wire/batches.c.  From
 * sm_active_pct_x100 on: our extension columns (docs/gpufl.md), NVML GPM
 * in gp_gpm_metric order, once some row has the metric. */
#define FL_COLS_DEVMETRIC(X)                                                                       \
    X(DEVMETRIC, DT_NS, dt_ns)                                                                     \
    X(DEVMETRIC, DEVICE_ID, device_id)                                                             \
    X(DEVMETRIC, GPU_UTIL, gpu_util)                                                               \
    X(DEVMETRIC, MEM_UTIL, mem_util)                                                               \
    X(DEVMETRIC, TEMP_C, temp_c)                                                                   \
    X(DEVMETRIC, POWER_MW, power_mw)                                                               \
    X(DEVMETRIC, USED_MIB, used_mib)                                                               \
    X(DEVMETRIC, TOTAL_MIB, total_mib)                                                             \
    X(DEVMETRIC, CLOCK_SM, clock_sm)                                                               \
    X(DEVMETRIC, FAN_SPEED_PCT, fan_speed_pct)                                                     \
    X(DEVMETRIC, TEMP_MEM_C, temp_mem_c)                                                           \
    X(DEVMETRIC, TEMP_JUNCTION_C, temp_junction_c)                                                 \
    X(DEVMETRIC, VOLTAGE_MV, voltage_mv)                                                           \
    X(DEVMETRIC, ENERGY_UJ, energy_uj)                                                             \
    X(DEVMETRIC, CLOCK_MEM, clock_mem)                                                             \
    X(DEVMETRIC, PCIE_BW_BPS, pcie_bw_bps)                                                         \
    X(DEVMETRIC, ECC_CORRECTED, ecc_corrected)                                                     \
    X(DEVMETRIC, ECC_UNCORRECTED, ecc_uncorrected)                                                 \
    X(DEVMETRIC, SM_ACTIVE, sm_active_pct_x100)                                                    \
    X(DEVMETRIC, SM_OCCUPANCY, sm_occupancy_pct_x100)                                              \
    X(DEVMETRIC, TENSOR_ACTIVE, tensor_active_pct_x100)                                            \
    X(DEVMETRIC, TENSOR_DFMA, tensor_dfma_pct_x100)                                                \
    X(DEVMETRIC, TENSOR_HMMA, tensor_hmma_pct_x100)                                                \
    X(DEVMETRIC, TENSOR_IMMA, tensor_imma_pct_x100)                                                \
    X(DEVMETRIC, DRAM_ACTIVE, dram_active_pct_x100)                                                \
    X(DEVMETRIC, FP64_ACTIVE, fp64_active_pct_x100)                                                \
    X(DEVMETRIC, FP32_ACTIVE, fp32_active_pct_x100)                                                \
    X(DEVMETRIC, FP16_ACTIVE, fp16_active_pct_x100)                                                \
    X(DEVMETRIC, GPM_PCIE_TX, gpm_pcie_tx_bps)                                                     \
    X(DEVMETRIC, GPM_PCIE_RX, gpm_pcie_rx_bps)                                                     \
    X(DEVMETRIC, NVLINK_TX, nvlink_tx_bps)                                                         \
    X(DEVMETRIC, NVLINK_RX, nvlink_rx_bps)
#define FL_DEVMETRIC_BASE_COLS 9

#define FL_COLS_HOSTMETRIC(X)                                                                      \
    X(HOSTMETRIC, DT_NS, dt_ns)                                                                    \
    X(HOSTMETRIC, CPU_PCT_X100, cpu_pct_x100)                                                      \
    X(HOSTMETRIC, RAM_USED_MIB, ram_used_mib)                                                      \
    X(HOSTMETRIC, RAM_TOTAL_MIB, ram_total_mib)

#define FL_COLS_SCOPE(X)                                                                           \
    X(SCOPE, DT_NS, dt_ns)                                                                         \
    X(SCOPE, SCOPE_INSTANCE_ID, scope_instance_id)                                                 \
    X(SCOPE, NAME_ID, name_id)                                                                     \
    X(SCOPE, EVENT_TYPE, event_type)                                                               \
    X(SCOPE, DEPTH, depth)                                                                         \
    X(SCOPE, REPEAT, repeat)                                                                       \
    X(SCOPE, WARMUP, warmup)                                                                       \
    X(SCOPE, ORIGINAL_START_NS, original_start_ns)                                                 \
    X(SCOPE, TID, tid) /* ours: the thread (gettid) the row was recorded on */

#define FL_COLS_SYNC(X)                                                                            \
    X(SYNC, DT_NS, dt_ns)                                                                          \
    X(SYNC, DURATION_NS, duration_ns)                                                              \
    X(SYNC, SYNC_TYPE, sync_type)                                                                  \
    X(SYNC, STREAM_ID, stream_id)                                                                  \
    X(SYNC, EVENT_ID, event_id)                                                                    \
    X(SYNC, CONTEXT_ID, context_id)                                                                \
    X(SYNC, CORR_ID, corr_id)                                                                      \
    X(SYNC, FUNCTION_ID, function_id)                                                              \
    X(SYNC, STACK_ID, stack_id) /* ours: into stack_dict, 0 none (enable_stack_trace) */

#define FL_COLS_ALLOC(X)                                                                           \
    X(ALLOC, DT_NS, dt_ns)                                                                         \
    X(ALLOC, DURATION_NS, duration_ns)                                                             \
    X(ALLOC, MEMORY_OP, memory_op)                                                                 \
    X(ALLOC, MEMORY_KIND, memory_kind)                                                             \
    X(ALLOC, ADDRESS, address)                                                                     \
    X(ALLOC, BYTES, bytes)                                                                         \
    X(ALLOC, DEVICE_ID, device_id)                                                                 \
    X(ALLOC, STREAM_ID, stream_id)                                                                 \
    X(ALLOC, CORR_ID, corr_id)

#define FL_COLS_PROFILE(X)                                                                         \
    X(PROFILE, DT_NS, dt_ns)                                                                       \
    X(PROFILE, CORR_ID, corr_id)                                                                   \
    X(PROFILE, DEVICE_ID, device_id)                                                               \
    X(PROFILE, FUNCTION_ID, function_id)                                                           \
    X(PROFILE, PC_OFFSET, pc_offset)                                                               \
    X(PROFILE, METRIC_ID, metric_id)                                                               \
    X(PROFILE, METRIC_VALUE, metric_value)                                                         \
    X(PROFILE, STALL_REASON, stall_reason)                                                         \
    X(PROFILE, SAMPLE_KIND, sample_kind)                                                           \
    X(PROFILE, SCOPE_NAME_ID, scope_name_id)                                                       \
    X(PROFILE, SOURCE_FILE_ID, source_file_id)                                                     \
    X(PROFILE, SOURCE_LINE, source_line)

#define FL_COLS_PM(X)                                                                              \
    X(PM, SAMPLE_INDEX, sample_index)                                                              \
    X(PM, DT_NS, dt_ns)                                                                            \
    X(PM, DEVICE_ID, device_id)                                                                    \
    X(PM, METRIC_ID, metric_id)                                                                    \
    X(PM, VALUE, value)                                                                            \
    X(PM, SCOPE_NAME_ID, scope_name_id)

/* ours: one row per CUDA graph launch */
#define FL_COLS_GRAPH(X)                                                                           \
    X(GRAPH, DT_NS, dt_ns)                                                                         \
    X(GRAPH, GRAPH_ID, graph_id)                                                                   \
    X(GRAPH, STREAM_ID, stream_id)                                                                 \
    X(GRAPH, DURATION_NS, duration_ns)                                                             \
    X(GRAPH, CORR_ID, corr_id)                                                                     \
    X(GRAPH, DEVICE_ID, device_id)

/* FL_COL_<BATCH>_<COLUMN>: a column's index in its batch's list above. */
#define FL_X(batch, id, name) FL_COL_##batch##_##id,
enum { FL_COLS_KERNEL(FL_X) FL_COL_KERNEL_COUNT };
enum { FL_COLS_MEMCPY(FL_X) FL_COL_MEMCPY_COUNT };
enum { FL_COLS_DEVMETRIC(FL_X) FL_COL_DEVMETRIC_COUNT };
enum { FL_COLS_HOSTMETRIC(FL_X) FL_COL_HOSTMETRIC_COUNT };
enum { FL_COLS_SCOPE(FL_X) FL_COL_SCOPE_COUNT };
enum { FL_COLS_SYNC(FL_X) FL_COL_SYNC_COUNT };
enum { FL_COLS_ALLOC(FL_X) FL_COL_ALLOC_COUNT };
enum { FL_COLS_PROFILE(FL_X) FL_COL_PROFILE_COUNT };
enum { FL_COLS_PM(FL_X) FL_COL_PM_COUNT };
enum { FL_COLS_GRAPH(FL_X) FL_COL_GRAPH_COUNT };
#undef FL_X

/* The most columns a known batch has (a reader's per-batch column map). */
#define FL_MAX_COLS 32

/* --------------------------------------------------------- record types */

/* Records that are not batches: X(TYPE, name, channel, version); version
 * 0 writes no "version" key.  From kernel_perf_metric_event on, GPUFlight
 * 1.3's records (shared/spec/session-log-format.md, "What GPUFlight 1.3
 * writes"), with the channel and version its writer gives them. */
#define FL_RECORD_TYPES(X)                                                                         \
    X(JOB_START, job_start, ALL, 1)                                                                \
    X(DICTIONARY_UPDATE, dictionary_update, ALL, 1)                                                \
    X(CAPTURE_CAPABILITIES, capture_capabilities, ALL, 1)                                          \
    X(SHUTDOWN, shutdown, ALL, 0)                                                                  \
    X(SYSTEM_START, system_start, SYSTEM, 1)                                                       \
    X(SYSTEM_STOP, system_stop, SYSTEM, 1)                                                         \
    X(KERNEL_DETAIL, kernel_detail, DEVICE, 1)                                                     \
    X(MEMSET_EVENT, memset_event, DEVICE, 0)                                                       \
    X(DEVICE_LOST_EVENT, device_lost_event, SYSTEM, 1) /* ours: a device whose sampling failed */  \
    X(DEVICE_ERROR_EVENT, device_error_event, SYSTEM, 1) /* ours: XIDs the driver reported */      \
    X(KERNEL_PERF_METRIC_EVENT, kernel_perf_metric_event, DEVICE, 0)                               \
    X(SASS_CONFIG, sass_config, DEVICE, 1)                                                         \
    X(PERF_METRIC_EVENT, perf_metric_event, SCOPE, 0)                                              \
    X(NVTX_MARKER_EVENT, nvtx_marker_event, SCOPE, 0)                                              \
    X(GRAPH_LAUNCH_EVENT, graph_launch_event, SCOPE, 0)                                            \
    X(GRAPH_NODE_DEFINITION, graph_node_definition, SCOPE, 0)                                      \
    X(DEEP_WINDOW_EVENT, deep_window_event, SCOPE, 0)                                              \
    X(PM_SAMPLING_CONFIG, pm_sampling_config, SCOPE, 1)                                            \
    X(EXECUTION_SIGNATURE, execution_signature, SCOPE, 1)                                          \
    X(CUBIN_DISASSEMBLY, cubin_disassembly, SASS, 1)                                               \
    X(PTX_DISASSEMBLY, ptx_disassembly, SASS, 1)                                                   \
    X(SOURCE_FILE_CONTENT, source_file_content, SASS, 1)                                           \
    X(CAPTURE_WINDOW, capture_window, SCOPE, 1) /* ours: a window trace rows were kept in */       \
    X(SEGMENT_START, segment_start, ALL, 1)                                                        \
    X(SEGMENT_END, segment_end, ALL, 1)                                                            \
    X(RUN_END, run_end, ALL, 1)                                                                    \
    X(DEEP_WINDOW_RULE_SUMMARY, deep_window_rule_summary, SCOPE, 0)                                \
    X(COUNTER_DATA_QUALITY_SUMMARY, counter_data_quality_summary, SCOPE, 0)                        \
    /* GPUFlight's records from before its batches (read, never written) */                        \
    X(INIT, init, ALL, 0)                                                                          \
    X(KERNEL_EVENT, kernel_event, DEVICE, 0)                                                       \
    X(MEMCPY_EVENT, memcpy_event, DEVICE, 0)                                                       \
    X(SCOPE_BEGIN, scope_begin, SCOPE, 0)                                                          \
    X(SCOPE_END, scope_end, SCOPE, 0)                                                              \
    X(SYSTEM_SAMPLE, system_sample, SYSTEM, 0)

/* Columnar batches: X(TYPE, name, channel, version, columns, the index of
 * the duration column or -1).  Every batch has dt_ns. */
#define FL_BATCH_TYPES(X)                                                                          \
    X(KERNEL_EVENT_BATCH, kernel_event_batch, DEVICE, 1, KERNEL, FL_COL_KERNEL_DURATION_NS)        \
    X(MEMCPY_EVENT_BATCH, memcpy_event_batch, DEVICE, 1, MEMCPY, FL_COL_MEMCPY_DURATION_NS)        \
    X(DEVICE_METRIC_BATCH, device_metric_batch, SYSTEM, 1, DEVMETRIC, -1)                          \
    X(HOST_METRIC_BATCH, host_metric_batch, SYSTEM, 1, HOSTMETRIC, -1)                             \
    X(SCOPE_EVENT_BATCH, scope_event_batch, SCOPE, 3, SCOPE, -1)                                   \
    X(SYNCHRONIZATION_EVENT_BATCH, synchronization_event_batch, SCOPE, 1, SYNC,                    \
      FL_COL_SYNC_DURATION_NS)                                                                     \
    X(MEMORY_ALLOC_EVENT_BATCH, memory_alloc_event_batch, SCOPE, 1, ALLOC,                         \
      FL_COL_ALLOC_DURATION_NS)                                                                    \
    X(PROFILE_SAMPLE_BATCH, profile_sample_batch, SCOPE, 1, PROFILE, -1)                           \
    X(PM_SAMPLE_BATCH, pm_sample_batch, SCOPE, 1, PM, -1)                                          \
    X(GRAPH_EVENT_BATCH, graph_event_batch, DEVICE, 1, GRAPH, FL_COL_GRAPH_DURATION_NS) /* ours */

typedef enum fl_type {
    FL_T_UNKNOWN = 0, /* a type this table does not know */
#define FL_X(id, name, ch, ver) FL_T_##id,
    FL_RECORD_TYPES(FL_X)
#undef FL_X
#define FL_X(id, name, ch, ver, cols, dur) FL_T_##id,
        FL_BATCH_TYPES(FL_X)
#undef FL_X
            FL_T_COUNT
} fl_type;

typedef struct fl_type_info {
    const char *name;
    uint8_t channel; /* FL_CH_*; FL_CH_ALL: every channel */
    uint8_t version; /* 0: no "version" key */
    bool batch;
    uint8_t ncols;           /* batches: their columns' count */
    const char *const *cols; /* batches: the columns in order */
    /* Batches: the index of dt_ns and duration_ns (-1: none). */
    int8_t col_dt, col_duration;
} fl_type_info;

/* The entry of a type; FL_T_UNKNOWN (and anything out of range) gives an
 * entry with name "" and no columns. */
const fl_type_info *fl_type_get(fl_type t);
static inline const char *fl_type_name(fl_type t)
{
    return fl_type_get(t)->name;
}
/* Whether a type name (n bytes) is a columnar batch's: the format's rule,
 * for every type, known or not, is that a batch's name ends in "_batch". */
static inline bool fl_is_batch_name(const char *name, size_t n)
{
    return n >= 6 && name && __builtin_memcmp(name + n - 6, "_batch", 6) == 0;
}
/* The type of a name (n bytes, no NUL needed); FL_T_UNKNOWN if none. */
fl_type fl_type_of(const char *name, size_t n);

/* ------------------------------------------------ capture_capabilities */

#define FL_CAP_STATUSES(X)                                                                         \
    X(COLLECTED, collected)                                                                        \
    X(FALLBACK, fallback)                                                                          \
    X(PARTIAL, partial)                                                                            \
    X(SKIPPED, skipped)                                                                            \
    X(ENABLED_NO_DATA, enabled_no_data)                                                            \
    X(NOT_REQUESTED, not_requested)

typedef enum fl_cap_status {
#define FL_X(id, name) FL_CAP_##id,
    FL_CAP_STATUSES(FL_X)
#undef FL_X
        FL_CAP_COUNT
} fl_cap_status;

const char *fl_cap_status_name(fl_cap_status s);
/* FL_CAP_COUNT for a status this table does not know (or NULL). */
fl_cap_status fl_cap_status_of(const char *name);

/* --------------------------------------------------------------- engines */

/* The engines' wire names (job_start profiling_engine, capture
 * capabilities' requested/selected_engine), in gpufl_engine's order. */
#define FL_ENGINES(X)                                                                              \
    X(MONITOR, nvidia.monitor)                                                                     \
    X(TRACE, nvidia.trace)                                                                         \
    X(PC_SAMPLING, nvidia.pc_sampling)                                                             \
    X(SASS_METRICS, nvidia.sass_metrics)                                                           \
    X(RANGE_PROFILER, nvidia.range_profiler)                                                       \
    X(DEEP, nvidia.deep)                                                                           \
    X(PM_SAMPLING, nvidia.pm_sampling)

/* "nvidia.trace", ...; "nvidia.monitor" for a value out of range. */
const char *fl_engine_wire_name(gpufl_engine e);
/* The engine of a wire name; false when it is none of them. */
bool fl_engine_of_wire(const char *name, gpufl_engine *out);

/* ------------------------------------------------------- MIG identity */

/* Ours: the gpu_static_devices entry of a MIG instance ends with the
 * object FL_KEY_MIG, these members in this order (a member the backend did
 * not report is null).  A whole GPU's entry has no such key, so a reader
 * that never saw it (GPUFlight's) reads the entry as before. */
#define FL_KEY_MIG "mig"
#define FL_MIG_KEYS(X)                                                                             \
    X(PROFILE, profile)                                                                            \
    X(GPU_INSTANCE_ID, gpu_instance_id)                                                            \
    X(COMPUTE_INSTANCE_ID, compute_instance_id)                                                    \
    X(PARENT_ID, parent_id)                                                                        \
    X(PARENT_UUID, parent_uuid)                                                                    \
    X(PARENT_NAME, parent_name)

typedef enum fl_mig_key {
#define FL_X(id, name) FL_MIG_##id,
    FL_MIG_KEYS(FL_X)
#undef FL_X
        FL_MIG_KEY_COUNT
} fl_mig_key;

/* "profile", ...; NULL out of range. */
const char *fl_mig_key_name(int k);

/* job_start's session_kind. */
#define FL_SESSION_KIND_MONITOR "monitor"
#define FL_SESSION_KIND_TRACE "trace"

#endif /* GP_WIRE_VOCAB_H */
