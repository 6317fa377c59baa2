/*
 * report/report.h - the session report (report/report.c): a GPUFlight session read
 * back through reader/read.h's callbacks and summed up, streaming, into the
 * sections of the gpufl analyzer's text report: executive summary, scopes,
 * kernel hotspots, memcpy / memset, device and host metrics, stalls and
 * perf metrics (when recorded), what was captured, and what the reader
 * could not read.  Rendered as aligned text or as one JSON object (schema
 * "gpu-profile.report", version 1).
 *
 * Memory grows with the number of distinct kernels, scopes, devices,
 * metrics and launch configurations, never with the number of events.
 *
 * Also here, shared with the exports (report/export.c): fl_model, what both
 * need to know about a session besides its events - the job_start
 * identity, the dictionaries, the last capture_capabilities, the session's
 * time span - and the join of kernel rows with their kernel_detail.
 *
 * Not exported; nothing here prints or exits.
 */
#ifndef FL_REPORT_H
#define FL_REPORT_H

#include "../util/buf.h"
#include "../reader/read.h"

#include <jansson.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* ------------------------------------------------------------ the report */

/*
 * The JSON (one object, keys always present in this order; units in the
 * key names; null: not recorded; percentiles are estimates within
 * "percentile_max_error_pct" = 1.6 %, min / max / mean / totals exact):
 *
 *   schema "gpu-profile.report", schema_version 1
 *   session   {app, session_id, hostname, pid, start_ns, start_source
 *             ("job_start" | "first_record"), end_ns, end_source ("shutdown"
 *             | "last_record"), duration_ns, session_kind, profiling_engine,
 *             crashed (no shutdown, not live), recording (fl_report_set_live),
 *             exit_code, signal, program_crashed (a
 *             launcher's shutdown), devices [{id, name, uuid}]}
 *   summary   {kernel_launches, kernel_distinct, kernel_time_ns, gpu_busy
 *             [{device_id (null: rows without a device), kernel_launches,
 *             kernel_time_ns, busy_ns, busy_pct}], memcpy_count,
 *             memcpy_bytes, memcpy_time_ns, memset_count, memset_bytes,
 *             memset_time_ns, graph_launches, graph_time_ns,
 *             synchronizations, synchronization_time_ns, allocations, frees,
 *             util_gpu_mean_pct, mem_used_peak_bytes, mem_used_peak_device_id,
 *             power_mean_sum_w, power_peak_w, energy_j, energy_source
 *             ("counter" | "power_integral" | "mixed"), energy_partial}
 *   scopes    {percentile_max_error_pct, kernel_time_in_scopes_ns,
 *             kernel_time_outside_scopes_ns, kernel_time_unattributed_ns,
 *             unmatched_ends, items [{name, kind ("scope" | "nvtx"), count,
 *             total_ns, mean_ns, min_ns, max_ns, p50_ns, p99_ns,
 *             gpu_time_inside_ns, kernel_launches_inside, open_at_end}]}
 *   hotspots  {distinct_kernels, top_n, percentile_max_error_pct,
 *             details_missing, kernels [{rank, kernel_id, name, name_known,
 *             count, total_ns, time_pct, mean_ns, p50_ns, p90_ns, p99_ns,
 *             min_ns, max_ns, grid, block ("(x,y,z)" | "varies"),
 *             registers_min, registers_max, static_shared_bytes,
 *             occupancy_pct, limiting_resource (value | "varies")}]}
 *   memcpy    [{kind ("HtoD", "DtoH", "DtoD", "PtoP", "kind N"), copy_kind,
 *             count, bytes, time_ns, throughput_gb_per_s}]
 *   memset    {count, bytes, time_ns, throughput_gb_per_s}
 *   devices   [{device_id, name, samples, util_gpu_mean_pct,
 *             util_gpu_max_pct, util_mem_mean_pct, util_mem_max_pct,
 *             mem_used_peak_bytes, mem_total_bytes, temp_max_c, power_mean_w,
 *             power_max_w, clock_sm_mean_mhz, clock_mem_mean_mhz, energy_j,
 *             energy_source}]
 *   host      null | {hostname, samples, cpu_mean_pct, cpu_max_pct,
 *             ram_used_peak_bytes, ram_total_bytes}
 *   stalls    null | {pc_samples, sass_metric_rows, reasons [{stall_reason,
 *             name, samples}], functions [{function_id, name, samples}]}
 *   perf_metrics null | [{metric_id, name, samples, mean, min, max}]
 *   capture   null | {requested_engine, selected_engine, ts_ns, features
 *             [{feature, requested, status, mode, reason_code, message}]}
 *   read      {partial, session_dir, flat (session_dir is a flat-layout
 *             prefix), files, lines, bytes, bad_lines,
 *             bad_records, other_session_records, unknown_types, gz_errors
 *             (null without a fl_read_result), bad_rows, orphan_details,
 *             out_of_memory, warnings, first_warnings [text]}
 */

typedef struct fl_report fl_report;

fl_report *fl_report_create(void);    /* NULL: out of memory */
void fl_report_destroy(fl_report *r); /* NULL-safe */
/* Fills cb (user, record, batch, warning) for fl_read_session(). */
void fl_report_callbacks(fl_report *r, fl_read_cb *cb);
/* After the read: res (NULL: none, the callbacks were fed directly) gives
 * the reader's counters; a kernel batch still waiting for its details is
 * counted now.  Call once, before rendering. */
void fl_report_finish(fl_report *r, const fl_read_result *res);
/* The session is still being recorded (gpufl_generate_report during a
 * session): no shutdown is expected yet, so the report says "still
 * recording" rather than "crashed"; JSON session.recording true. */
void fl_report_set_live(fl_report *r, bool live);
/* The renderings, appended to out.  top_n: kernels in the hotspots (< 1:
 * 10). */
void fl_report_text(const fl_report *r, int top_n, fl_buf *out);
/* Only the sections in the GPUFL_SECTION_* mask (0: all), in the report's
 * order; each section's text is byte for byte its part of the whole. */
void fl_report_text_sections(const fl_report *r, int top_n, unsigned sections, fl_buf *out);
void fl_report_json(const fl_report *r, int top_n, fl_buf *out);
/* The bytes the report's own structures hold (maps, histograms, names):
 * for the test that memory does not grow with the events. */
size_t fl_report_mem_bytes(const fl_report *r);

/* --------------------------------------------- shared with the exports */

/* A kernel_detail as the report and exports use it. */
typedef struct fl_kdetail {
    uint64_t seq; /* from 1, distinct per detail record read */
    uint32_t corr_id;
    bool have_grid, have_block;
    uint32_t grid[3], block[3];
    int64_t static_shared;  /* bytes; -1: not recorded */
    double occupancy;       /* 0..1; NaN: null */
    const char *limiting;   /* "warps", ...; NULL: null */
    const char *user_scope; /* "outer|inner", "global"; NULL: null */
} fl_kdetail;

/* One kernel_event_batch row with its detail resolved by the has_details
 * rule (docs/gpufl.md): a row with has_details = 1 has the kernel_detail
 * of its corr_id, a row with has_details = 0 the detail of the nearest
 * earlier row of its kernel_id that had one. */
typedef struct fl_krow {
    uint64_t start_ns, duration_ns;
    int64_t device_id; /* -1: not recorded (see fl_model.default_device) */
    uint32_t kernel_id, stream_id, corr_id;
    int64_t dyn_shared, num_regs; /* -1: not recorded */
    int64_t external_kind;        /* 0: none */
    uint64_t external_id;
    bool has_details;
    const fl_kdetail *detail; /* NULL: none known; valid during the call */
} fl_krow;

typedef struct fl_model_device {
    int64_t id;
    char *name, *uuid; /* NULL: unknown */
} fl_model_device;

typedef struct fl_model_priv fl_model_priv;

typedef struct fl_model {
    /* job_start (the first one read); NULL / false when none was read. */
    char *app, *session_id, *hostname, *session_kind, *engine;
    int64_t pid;
    bool have_pid;
    uint64_t start_ns; /* job_start's ts_ns */
    bool have_start;
    uint64_t shutdown_ns;
    bool have_shutdown;
    json_t *shutdown;         /* the shutdown record (owned), NULL if none */
    fl_model_device *devices; /* job_start's devices, *_static_devices */
    size_t n_devices;
    /* The device of the rows that do not say theirs (kernel and memcpy
     * rows have no device_id column in the format): the only device
     * job_start lists, else -1. */
    int64_t default_device;
    /* The earliest and latest time of any record or row (a row's end
     * included); have_time false when none had a time. */
    uint64_t first_ns, last_ns;
    bool have_time;
    json_t *caps; /* the last capture_capabilities (owned), NULL if none */
    /* Kernel rows whose has_details = 1 found no kernel_detail; details
     * that no row claimed; rows or batches that could not be used. */
    uint64_t details_missing, details_orphan, bad_rows;
    bool oom;
    fl_model_priv *priv;
} fl_model;

/* fn gets every kernel row, in file order, once its detail is known (a
 * kernel batch written before its details is held until the next record
 * that is not a kernel_detail, or fl_model_finish). */
typedef void (*fl_model_kernel_fn)(void *user, const fl_krow *k);

fl_model *fl_model_create(fl_model_kernel_fn fn, void *user);
void fl_model_destroy(fl_model *m); /* NULL-safe */
/* Feed every record / batch to the model first; it calls fn from these. */
void fl_model_record(fl_model *m, int channel, fl_type t, const char *type, json_t *rec);
void fl_model_batch(fl_model *m, const fl_batch *b);
void fl_model_finish(fl_model *m);
/* Dictionary names; NULL when the id is not in the dictionary. */
const char *fl_model_kernel_name(const fl_model *m, uint64_t id);
const char *fl_model_scope_name(const fl_model *m, uint64_t id);
const char *fl_model_metric_name(const fl_model *m, uint64_t id);
const char *fl_model_function_name(const fl_model *m, uint64_t id);
/* The session's time origin: job_start's ts_ns, else the first time seen. */
uint64_t fl_model_origin(const fl_model *m);
/* The bytes the model's structures hold. */
size_t fl_model_mem_bytes(const fl_model *m);

/* uint64 -> two uint64 (a hash map; entries move when it grows). */
typedef struct fl_mval {
    uint64_t a, b;
} fl_mval;
typedef struct fl_u64map {
    uint64_t *keys;
    fl_mval *vals;
    uint8_t *used; /* used[i]: slot i holds keys[i] / vals[i] */
    size_t cap, n; /* cap: 0 or a power of two */
} fl_u64map;
/* The value of key; NULL if absent. */
fl_mval *fl_map_find(const fl_u64map *m, uint64_t key);
/* The value of key, inserted zeroed (*fresh = true) if absent; NULL when
 * out of memory.  Pointers into the map are valid until the next put. */
fl_mval *fl_map_put(fl_u64map *m, uint64_t key, bool *fresh);
void fl_map_del(fl_u64map *m, uint64_t key);
void fl_map_clear(fl_u64map *m);
void fl_map_free(fl_u64map *m);
size_t fl_map_bytes(const fl_u64map *m);

/* Batch helpers (cells as reader/read.h describes them). */
/* Cell (row, col) as an integer; false for null, a negative col, a
 * negative or non-integral value. */
bool fl_rcell_u64_slow(const fl_batch *b, size_t row, int col, uint64_t *out);
/* Inline: called for every cell of every kernel row. */
static inline bool fl_rcell_u64(const fl_batch *b, size_t row, int col, uint64_t *out)
{
    if (col >= 0 && (size_t)col < b->ncols && row < b->nrows) {
        const fl_cell *c = &b->cells[row * b->ncols + (size_t)col];
        if (c->kind == FL_CELL_INT && c->i >= 0) {
            *out = (uint64_t)c->i;
            return true;
        }
    }
    return fl_rcell_u64_slow(b, row, col, out);
}
/* Cell as a double; false for null or a negative col. */
bool fl_rcell_real(const fl_batch *b, size_t row, int col, double *out);

/* The name of a CUPTI memcpy kind ("HtoD", ...), NULL for one without. */
const char *fl_copy_kind_name(uint64_t kind);

#endif /* FL_REPORT_H */
