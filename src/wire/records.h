/*
 * wire/records.h - the records of the GPUFlight wire format v1 as the
 * writers take them (records.c: lifecycle records and dictionaries,
 * batches.c: the columnar batches).  Pure functions: each appends one line
 * to a buffer; no clock, no globals, no I/O.
 */
#ifndef GP_WIRE_RECORDS_H
#define GP_WIRE_RECORDS_H

#include "../abi/trace_abi.h"
#include "../util/buf.h"
#include "vocab.h"
#include "gpu_profile.h"

#include <math.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* Host metrics; a field whose bit is clear is written as null. */
enum { FL_HOST_CPU = 1u << 0, FL_HOST_RAM = 1u << 1 };
typedef struct fl_host_sample {
    unsigned valid;
    double cpu_pct; /* 0..100, whole machine, since the previous reading */
    uint64_t ram_used_mib;
    uint64_t ram_total_mib;
} fl_host_sample;

/* Whether every value of a host sample is known (a finite CPU % and the
 * RAM): the session writes a host_metric_batch row only then, because
 * GPUFlight's analyzer does arithmetic on every cell of those rows. */
static inline bool fl_host_sample_complete(const fl_host_sample *h)
{
    return (h->valid & (FL_HOST_CPU | FL_HOST_RAM)) == (FL_HOST_CPU | FL_HOST_RAM) &&
           isfinite(h->cpu_pct);
}

/* A device as job_start / system_start list it: identity from the backend,
 * live fields from the newest sample (have_sample = false: all null). */
typedef struct fl_device_live {
    uint32_t id;
    const char *name, *uuid, *vendor, *pci_bus; /* NULL -> null */
    bool have_sample;
    gp_device_sample s;
} fl_device_live;

/* gpu_static_devices / cuda_static_devices entries; a negative number or a
 * NULL string is written as null. */
typedef struct fl_device_static {
    uint32_t id;
    const char *name, *uuid, *vendor, *architecture;
    int compute_major, compute_minor;
    int64_t l2_cache_size_bytes, shared_mem_per_block_bytes, regs_per_block;
    int multi_processor_count, warp_size;
    /* Appended (ours): a MIG instance's identity, written as the entry's
     * FL_KEY_MIG object when is_mig; NULL or a whole GPU: no such key. */
    const gp_mig_info *mig;
} fl_device_static;

/* Whether two device uuids of job_start's lists name the same device: the
 * same hex digits (case aside) after an optional "GPU-" or "MIG-" prefix,
 * as NVML spells a MIG instance's uuid "MIG-..." where CUDA's 16 bytes are
 * the same.  NULL or "" is no device's. */
bool fl_device_uuid_same(const char *a, const char *b);

/* Fields every lifecycle record of a session shares. */
typedef struct fl_ident {
    int64_t pid;
    const char *app;
    const char *session_id;
} fl_ident;

/* A session's place in its run (recorder/run_ident.c).  A rank, local
 * rank or world size the launcher did not say has its have_ bit clear and
 * is written null (rank 0 is a real rank), so a zeroed struct says none. */
typedef struct fl_run_ident {
    const char *run_id;      /* NULL: none of these keys written */
    const char *rank_source; /* the variable the rank came from ("RANK", ...); NULL: none */
    int64_t rank, local_rank, world_size;
    bool have_rank, have_local_rank, have_world_size;
    uint64_t mono_ns; /* CLOCK_MONOTONIC when job_start's ts_ns was read; 0: not read */
} fl_run_ident;

typedef struct fl_job_start {
    const char *log_path;
    uint64_t ts_ns;
    const char *hostname, *ip_addr;
    fl_host_sample host;
    const fl_device_live *devices;
    size_t n_devices;
    const fl_device_static *gpu_static;
    size_t n_gpu_static;
    const fl_device_static *cuda_static;
    size_t n_cuda_static;
    const fl_device_static *rocm_static; /* AMD's: the amd backend's devices */
    size_t n_rocm_static;
    const char *session_kind;     /* "monitor" | "trace" */
    const char *profiling_engine; /* "nvidia.trace", ...; NULL: key left out */
    fl_run_ident run;             /* run_id, rank, local_rank, world_size, rank_source,
                                     monotonic_ns */
} fl_job_start;

/* Each function appends exactly one line, '\n' included. */
void fl_rec_job_start(fl_buf *b, const fl_ident *id, const fl_job_start *js);
void fl_rec_shutdown(fl_buf *b, const fl_ident *id, uint64_t ts_ns);
/* A launcher's shutdown for a child it saw end: exit_code (or -1 = null),
 * signal (0 = null), crashed. */
void fl_rec_shutdown_child(fl_buf *b, const fl_ident *id, uint64_t ts_ns, int exit_code, int signal,
                           bool crashed);
/* shutdown as a session of ours ends: a launcher's child's end when child
 * is set (as fl_rec_shutdown_child), then our lines_lost and rows_lost:
 * the lines (and batch rows among them) the session's files could not
 * take - a failed write, a removed file - 0 when none. */
typedef struct fl_shutdown {
    uint64_t ts_ns;
    bool child;
    int exit_code, signal;
    bool crashed;
    uint64_t lines_lost, rows_lost;
} fl_shutdown;
void fl_rec_shutdown_session(fl_buf *b, const fl_ident *id, const fl_shutdown *sd);
/* device_lost_event (ours, channel system): a device whose sampling failed - it
 * is not read again this session.  Keys: version, type, pid, app,
 * session_id, ts_ns, device_id, name, uuid (NULL: null), status (the
 * failure's stable name: "device_lost", "backend", "timeout", ...),
 * message (the backend's words). */
typedef struct fl_device_lost {
    uint64_t ts_ns;
    uint32_t device_id;
    const char *name, *uuid;
    const char *status, *message;
} fl_device_lost;
void fl_rec_device_lost_event(fl_buf *b, const fl_ident *id, const fl_device_lost *d);

/* device_error_event (ours, channel system): XID errors the driver
 * reported on a device since the previous sampling round (NVML's event
 * API; docs/json-schema.md): "kind" "xid", the newest code ("xid"), how
 * many since the previous record ("count") and since sampling started
 * ("total"). */
typedef struct fl_device_error {
    uint64_t ts_ns;
    uint32_t device_id;
    const char *name, *uuid;
    uint32_t xid;
    uint64_t count, total;
} fl_device_error;
void fl_rec_device_error_event(fl_buf *b, const fl_ident *id, const fl_device_error *d);
/* system_start (start true) or system_stop. */
void fl_rec_system(fl_buf *b, const fl_ident *id, bool start, const char *name, uint64_t ts_ns,
                   const fl_host_sample *host, const fl_device_live *devices, size_t n_devices);

typedef struct fl_dict_entry {
    uint64_t id; /* op_dict's are 64-bit hashes */
    const char *name;
} fl_dict_entry;
/* One dictionary per line. */
void fl_rec_dictionary(fl_buf *b, const char *session_id, fl_dict dict,
                       const fl_dict_entry *entries, size_t n);

typedef struct fl_capability {
    const char *feature;
    bool requested;
    fl_cap_status status;
    const char *mode, *reason_code, *message;
} fl_capability;
void fl_rec_capabilities(fl_buf *b, const char *session_id, uint64_t ts_ns,
                         const char *requested_engine, const char *selected_engine,
                         const fl_capability *caps, size_t n);

/* A launch's theoretical occupancy, as kernel_detail carries it
 * (computed by recorder/occupancy.h). */
typedef enum fl_limiter {
    FL_LIMIT_WARPS = 0,
    FL_LIMIT_REGISTERS,
    FL_LIMIT_SHARED_MEM,
    FL_LIMIT_BLOCKS,
} fl_limiter;

typedef struct fl_occupancy {
    /* Fractions 0..1 of the SM's warp slots: each is what the one resource
     * alone would allow; occupancy is the smallest of them. */
    double occupancy;
    double warp_occupancy;  /* max warps per SM vs the block's warps */
    double reg_occupancy;   /* registers */
    double smem_occupancy;  /* shared memory */
    double block_occupancy; /* max resident blocks per SM */
    int max_active_blocks;  /* per SM */
    fl_limiter limiting;    /* the resource that sets occupancy (ties: the
                               order of fl_limiter) */
} fl_occupancy;

/* "warps", "registers", "shared_mem", "blocks". */
const char *fl_limiter_name(fl_limiter l);

/* Rows of the batches.  t_ns is absolute; the writer turns it into dt_ns
 * from base_time_ns = the first row's time (rows come sorted by time). */
typedef struct fl_device_row {
    uint64_t t_ns;
    uint32_t device_id;
    gp_device_sample s; /* invalid metrics are written as null */
} fl_device_row;

typedef struct fl_host_row {
    uint64_t t_ns;
    fl_host_sample h;
} fl_host_row;

enum { FL_SCOPE_BEGIN = 0, FL_SCOPE_END = 1 };
typedef struct fl_scope_row {
    uint64_t t_ns;
    uint64_t instance_id;
    uint64_t original_start_ns;
    uint32_t name_id;
    uint16_t depth;
    uint8_t event_type; /* FL_SCOPE_* */
    uint8_t pad_;
} fl_scope_row;

/* device_metric_batch: dt_ns and device_id, then - in the vocabulary's
 * order - each metric column that has had a value: a metric column once
 * some row reported it (gpu_util ... clock_sm), an optional one (energy_uj
 * from GP_M_ENERGY, clock_mem from GP_M_CLOCK_MEM, pcie_bw_bps from both
 * GP_M_PCIE_*) once some row had a non-zero value for it; a written column
 * is null in a row that did not report it.  *seen is the session's mask of
 * such columns (bit FL_COL_DEVMETRIC_*), read and updated, so that a
 * column stays in every later batch of the session; seen NULL: this
 * batch's rows alone decide (fl_rec_device_batch). */
void fl_rec_device_batch_cols(fl_buf *b, const char *session_id, uint64_t batch_id,
                              const fl_device_row *rows, size_t n, uint32_t *seen);
void fl_rec_device_batch(fl_buf *b, const char *session_id, uint64_t batch_id,
                         const fl_device_row *rows, size_t n);
void fl_rec_host_batch(fl_buf *b, const char *session_id, const char *hostname, const char *ip_addr,
                       uint64_t batch_id, const fl_host_row *rows, size_t n);
/* scope_event_batch: the spec's eight columns, without our tid (a writer
 * that does not know the threads). */
void fl_rec_scope_batch(fl_buf *b, const char *session_id, uint64_t batch_id,
                        const fl_scope_row *rows, size_t n);
/* A scope row with the thread it was recorded on, as the session's writer
 * holds it once drained (the ring's 32-byte row has no room for the thread,
 * and needs none: each ring is one thread's). */
typedef struct fl_scope_event {
    fl_scope_row row;
    uint32_t tid;            /* gettid() of the thread whose ring held the row */
    uint32_t repeat, warmup; /* a begin row's benchmark metadata (0: none) */
} fl_scope_event;
/* scope_event_batch with every column: the spec's eight, then our tid. */
void fl_rec_scope_events(fl_buf *b, const char *session_id, uint64_t batch_id,
                         const fl_scope_event *rows, size_t n);

/* One line a writer of ours made (n bytes, its '\n' or not): its type
 * (FL_T_UNKNOWN when it names none we know) and, for a batch, its rows in
 * *rows (0 otherwise) - what losing the line costs. */
fl_type fl_line_account(const char *line, size_t n, uint64_t *rows);

/* The Trace engine's records (abi/trace_abi.h rows).  Batches: base_time_ns is
 * the first row's t_ns, n == 0 appends nothing; channel device unless
 * noted. */
void fl_rec_kernel_batch(fl_buf *b, const char *session_id, uint64_t batch_id,
                         const fl_kernel_row *rows, size_t n);
/* memcpy_event_batch: the spec's six columns, then src_device_id and
 * dst_device_id only when some row is peer-to-peer (row.peer != 0). */
void fl_rec_memcpy_batch(fl_buf *b, const char *session_id, uint64_t batch_id,
                         const fl_memcpy_row *rows, size_t n);
/* memset_event: one record per memset (our definition of the spec's name). */
void fl_rec_memset_event(fl_buf *b, const fl_ident *id, const fl_memset_row *r);
/* synchronization_event_batch (channel scope). */
void fl_rec_sync_batch(fl_buf *b, const char *session_id, uint64_t batch_id,
                       const fl_sync_row *rows, size_t n);
/* memory_alloc_event_batch (channel scope). */
void fl_rec_alloc_batch(fl_buf *b, const char *session_id, uint64_t batch_id,
                        const fl_alloc_row *rows, size_t n);
/* An NVTX range as nvtx_marker_event carries it (channel scope, written
 * when the range ends). */
typedef struct fl_nvtx_range {
    const char *name, *domain; /* NULL: "" (domain: the default one) */
    uint64_t start_ns, end_ns;
    uint64_t marker_id;    /* CUPTI's id of the range */
    bool open_at_shutdown; /* ours, written only when true: the range had not
                              ended when the session did; end_ns is the
                              session's end */
} fl_nvtx_range;
/* nvtx_marker_event, GPUFlight 1.3's keys in its order: type, pid, app,
 * session_id, name, domain, start_ns, end_ns, duration_ns, marker_id. */
void fl_rec_nvtx_marker(fl_buf *b, const fl_ident *id, const fl_nvtx_range *r);
/* Ours: a capture window (docs/json-schema.md "capture_window"), written
 * once it closes, or at shutdown with open_at_shutdown. */
typedef struct fl_capture_window_rec {
    uint32_t index;      /* 0, 1, ... in the order the windows opened */
    const char *trigger; /* "delay", "cudaProfilerApi" or "nvtx" */
    const char *name;    /* the NVTX range's name; NULL: "" */
    uint64_t start_ns, end_ns;
    bool open_at_shutdown; /* the window had not closed when the session ended */
} fl_capture_window_rec;
void fl_rec_capture_window(fl_buf *b, const fl_ident *id, const fl_capture_window_rec *w);
/* graph_launch_event (channel scope), one per graph launch, GPUFlight's keys
 * in its order: type, pid, app, session_id, start_ns, end_ns, duration_ns,
 * graph_id, device_id, stream_id, corr_id, graph_exec_key ("0x" and the
 * handle in hex, as GPUFlight writes it; left out when exec_key is 0). */
void fl_rec_graph_launch(fl_buf *b, const fl_ident *id, const fl_graph_row *r);
/* graph_node_definition (channel scope), one per node of an executable
 * graph, GPUFlight 1.3's keys in its order: type, session_id,
 * graph_exec_key ("0x" and the handle in hex), node_index, node_type,
 * dependency_count; then ours: graph_id, graph_node_id (CUPTI's ids),
 * kernel_name (null: not known), stack_id (into our stack_dict, written
 * before; null: none). */
void fl_rec_graph_node(fl_buf *b, const char *session_id, const fl_graph_node_row *r);
/* graph_event_batch: our extension (channel device), the form sessions
 * before graph_launch_event carried; the recorder no longer writes it. */
void fl_rec_graph_batch(fl_buf *b, const char *session_id, uint64_t batch_id,
                        const fl_graph_row *rows, size_t n);

/* cubin_disassembly (channel sass), one per function, GPUFlight 1.3's
 * writer's keys in its order - version, type, session_id, cubin_crc,
 * function_name, entries [{pc, sass}] - with ours after function_name:
 * function_id (its function_dict entry, which profile_sample_batch rows
 * use). */
void fl_rec_cubin_disassembly(fl_buf *b, const char *session_id, uint64_t cubin_crc,
                              const char *function_name, uint32_t function_id,
                              const fl_sass_entry *entries, size_t n);

/* The range profiler's records, GPUFlight 1.3's keys in its order, numbers
 * as it writes them (fixed, 4 decimals; -1 / -1.0000 where not collected),
 * then ours: "metrics" {CUPTI name: value or null, ...} with every metric
 * evaluated (left out when there are none).
 * perf_metric_event (channel scope, a scope range): pid, app, session_id,
 * name, start_ns, end_ns, device_id, sm_throughput_pct, l1_hit_rate_pct,
 * l2_hit_rate_pct, dram_read_bytes, dram_write_bytes, tensor_active_pct,
 * user_scope, scope_depth. */
void fl_rec_perf_metric(fl_buf *b, const fl_ident *id, const fl_perf_row *r);
/* kernel_perf_metric_event (channel device, a kernel range): pid, app,
 * session_id, device_id, range_index, range_name, kernel_name,
 * launch_ordinal, the six above, achieved_occupancy_pct, the shared-memory
 * bank conflicts (load, store, all, wavefronts) and GPUFlight's derived
 * shared_bank_conflict_overhead_pct and shared_bank_conflict_nway. */
void fl_rec_kernel_perf_metric(fl_buf *b, const fl_ident *id, const fl_perf_row *r);

/* profile_sample_batch (channel scope): PC-sampling rows, sample_kind 0,
 * every column of the spec's in its order (GPUFlight 1.3's layout). */
void fl_rec_profile_batch(fl_buf *b, const char *session_id, uint64_t batch_id,
                          const fl_sample_row *rows, size_t n);
/* pm_sample_batch (channel scope): PM-sampling rows, the spec's six
 * columns in its order; value with at most six decimals (the rows' values
 * are finite: the plugin leaves the others out). */
void fl_rec_pm_batch(fl_buf *b, const char *session_id, uint64_t batch_id, const fl_pm_row *rows,
                     size_t n);
/* pm_sampling_config (channel scope): GPUFlight 1.3's keys and order. */
void fl_rec_pm_config(fl_buf *b, const char *session_id, const fl_pm_config *c);
/* kernel_detail: occ NULL (device limits unknown) writes the occupancy
 * fields as null; user_scope NULL is null; stack_trace NULL is "" (a
 * string always: GPUFlight's analyzer groups by it); const_bytes is null
 * (CUPTI does not give it). */
void fl_rec_kernel_detail(fl_buf *b, const fl_ident *id, const fl_kernel_row *k,
                          const fl_occupancy *occ, const char *user_scope, const char *stack_trace);
/* The same line in two parts, for a writer that writes one detail per
 * launch and repeats a configuration's: the head, from '{' up to and
 * including "corr_id": (the session's identity only), and the tail, from
 * the ',' after the corr_id value to the '\n' (the launch's configuration
 * only).  head + the corr_id's digits + tail = fl_rec_kernel_detail. */
void fl_rec_kernel_detail_head(fl_buf *b, const fl_ident *id);
void fl_rec_kernel_detail_tail(fl_buf *b, const fl_kernel_row *k, const fl_occupancy *occ,
                               const char *user_scope, const char *stack_trace);

/* sass_config (device channel): the SASS metrics configured on a device
 * and those skipped (refused by CUPTI on its chip). */
void fl_rec_sass_config(fl_buf *b, const char *session_id, uint64_t ts_ns, uint32_t device_id,
                        const char *const *configured, size_t n_configured,
                        const char *const *skipped, size_t n_skipped);

#endif /* GP_WIRE_RECORDS_H */
