/*
 * report/report.h - the session report: a GPUFlight session read
 * back through reader/read.h's callbacks and summed up, streaming, into the
 * sections of the gpufl analyzer's text report: executive summary, scopes,
 * kernel hotspots (and graph launches), memcpy / memset, device and host
 * metrics, stalls, SASS metrics and the sass channel, perf metrics (PM
 * sampling, range profiler per kernel and per scope; when recorded), what
 * was captured (and deep windows), and what the reader could not read.  Rendered as aligned text or
 * as one JSON object (schema "gpu-profile.report", version 1).
 *
 * Memory grows with the number of distinct kernels, scopes, devices,
 * metrics and launch configurations, never with the number of events.
 *
 * Made of: report/collect.c (the reader's callbacks, the report's life)
 * and report/kernels.c (kernel rows, the hot path) sum the session up;
 * report/figures.c derives what both renderings say; report/text.c and
 * report/json.c render it.  Also declared through report/model.h, shared
 * with the exports (report/export.c): the session model fl_model, the
 * containers (report/maps.h) and the field readers (report/fields.h).
 *
 * Not exported; nothing here prints or exits.
 */
#ifndef FL_REPORT_H
#define FL_REPORT_H

#include "../util/buf.h"
#include "../reader/read.h"
#include "model.h"

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* ------------------------------------------------------------ the report */

/* 2: one vocabulary with the run summary (docs/json-schema.md,
 * "Vocabulary"): power in mW, "max" for the largest reading (was "peak"),
 * sums over devices; the recorder's drops in the summary. */
#define FL_REPORT_SCHEMA_VERSION 2

/*
 * The JSON (one object, keys always present in this order; units in the
 * key names; null: not recorded; percentiles are estimates within
 * "percentile_max_error_pct" = 1.6 %, min / max / mean / totals exact):
 *
 *   schema "gpu-profile.report", schema_version FL_REPORT_SCHEMA_VERSION
 *   run       null | {run_id, picked_by, report_session_id,
 *             report_session_ids [the sessions read, in order], processes [{pid,
 *             rank, world_size, local_rank, rank_source, host, session_id,
 *             app, session_kind, start_ns, gpu_time_ns, kernel_launches,
 *             memcpy_count, memcpy_bytes, memcpy_time_ns, synchronizations,
 *             synchronization_time_ns, busiest_kernel, busiest_kernel_ns,
 *             nccl_time_ns, nccl_pct}], median_gpu_time_ns,
 *             straggler_threshold_pct, stragglers [{session_id, rank, pid,
 *             gpu_time_ns, off_median_pct}], devices null | {session_id,
 *             items [{device_id, samples, util_gpu_mean_pct,
 *             util_gpu_max_pct, mem_used_max_bytes, power_mean_mw}]}, clock {basis, hosts [{host,
 *             sessions, wall_minus_monotonic_spread_ns}], cross_host_skew},
 *             other_runs [{run_id, sessions, latest_start_ns, session_ids}]}
 *   session   {app, session_id, hostname, pid, start_ns, start_source
 *             ("job_start" | "first_record"), end_ns, end_source ("shutdown"
 *             | "last_record"), duration_ns, session_kind, profiling_engine,
 *             crashed (no shutdown, not live), recording (fl_report_set_live),
 *             unpublished (files read from .tmp/), exit_code, signal,
 *             program_crashed (a
 *             launcher's shutdown), devices [{id, name, uuid, and for a MIG
 *             instance only mig {profile, gpu_instance_id,
 *             compute_instance_id, parent_id, parent_uuid, parent_name}}]}
 *   summary   {kernel_launches, kernel_distinct, kernel_time_ns, gpu_busy
 *             [{device_id (null: rows without a device), kernel_launches,
 *             kernel_time_ns, busy_ns, busy_pct}], memcpy_count,
 *             memcpy_bytes, memcpy_time_ns, memset_count, memset_bytes,
 *             memset_time_ns, graph_launches, graph_time_ns,
 *             synchronizations, synchronization_time_ns,
 *             synchronization_stacks [{stack_trace, synchronizations,
 *             time_ns}] (top 5 by time_ns), allocations, frees,
 *             util_gpu_mean_pct, metric_devices, mem_used_max_bytes,
 *             power_mean_mw, power_max_mw (sums over the metric devices),
 *             energy_j, energy_source ("counter" | "power_integral" |
 *             "mixed"), energy_partial, scope_events, scope_events_dropped,
 *             metric_rows_dropped, lines_lost, rows_lost}
 *   scopes    {percentile_max_error_pct, kernel_time_in_scopes_ns,
 *             kernel_time_outside_scopes_ns, kernel_time_unattributed_ns,
 *             unmatched_ends, items [{name, kind ("scope" | "nvtx"), count,
 *             total_ns, mean_ns, min_ns, max_ns, p50_ns, p99_ns,
 *             gpu_time_inside_ns, kernel_launches_inside, open_at_end,
 *             ends_dropped}],
 *             execution_signatures [{scope, signature, launch_count,
 *             distinct_kernels, records}]}
 *   hotspots  {distinct_kernels, top_n, percentile_max_error_pct,
 *             details_missing, by ("kernel" | "op" | "line"; op and line add
 *             grouped_launches, grouped_gpu_ns, group_count, groups [{name,
 *             launches, gpu_ns, kernels [{name, launches, gpu_ns}]}]),
 *             kernels [{rank, kernel_id, name, name_known,
 *             count, total_ns, time_pct, mean_ns, p50_ns, p90_ns, p99_ns,
 *             min_ns, max_ns, grid, block ("(x,y,z)" | "varies"),
 *             registers_min, registers_max, static_shared_bytes,
 *             occupancy_pct, limiting_resource (value | "varies")}]}
 *   graphs    null | {launches, time_ns, items [{graph_exec_key, graph_id,
 *             launches, time_ns, node_definitions}]}
 *   ops       {launches, gpu_ns, count, ops [{name, kind, id (a decimal
 *             string), named, launches, gpu_ns, kernels [...]}]} (by.c)
 *   memcpy    [{kind ("HtoD", "DtoH", "DtoD", "PtoP", "kind N"), copy_kind,
 *             count, bytes, time_ns, throughput_gb_per_s}]
 *   memset    {count, bytes, time_ns, throughput_gb_per_s}
 *   devices   [{device_id, name, samples, util_gpu_mean_pct,
 *             util_gpu_max_pct, util_mem_mean_pct, util_mem_max_pct,
 *             mem_used_max_bytes, mem_total_bytes, temp_max_c, power_mean_mw,
 *             power_max_mw, clock_sm_mean_mhz, clock_mem_mean_mhz, energy_j,
 *             energy_source, gpm: null | {NAME: null | {mean_pct|mean_bps,
 *             max_pct|max_bps}}, xid_errors, xid_last (null: no
 *             device_error_event recorded)}]
 *   host      null | {hostname, samples, cpu_mean_pct, cpu_max_pct,
 *             ram_used_max_bytes, ram_total_bytes}
 *   stalls    null | {pc_samples, sass_metric_rows, reasons [{stall_reason,
 *             metric_id, name, samples}], functions [{function_id, name,
 *             samples}]}
 *   sass_metrics null | {rows, configs [{device_id, configured_metrics,
 *             skipped_metrics}], configs_not_kept, metrics [{metric_id, name,
 *             rows, total}], kernels [{function, function_id, instructions,
 *             thread_instructions, threads_per_instruction,
 *             warp_efficiency_pct, mix_pct {global_ld, global_st, shared_ld,
 *             shared_st, branch, other}, global_requests, global_sectors,
 *             global_sectors_ideal, sectors_per_request,
 *             ideal_sectors_per_request, coalescing_efficiency_pct,
 *             shared_wavefronts, divergent_branch_targets}],
 *             kernels_not_shown, lines [the same + source_file,
 *             source_line], lines_not_shown, rows_without_source_line}
 *             (sass_metrics.h; a metric not collected: null)
 *   sass      null | {cubin_disassemblies, ptx_disassemblies, source_files,
 *             functions [name], source_file_names [name]}
 *   perf_metrics null | [{metric_id, name, samples, mean, min, max}]
 *   pm_sampling null | [{device_id, interval_us, max_samples, preset,
 *             metrics}]
 *   kernel_perf_metrics null | [{kernel_name, ranges, <the 13 metrics of
 *             kernel_perf_metric_event>: mean per range, null: none}]
 *   scope_perf_metrics null | [{name, user_scope, ranges, time_ns, <the 6
 *             metrics of perf_metric_event>}]
 *   capture   null | {requested_engine, selected_engine, ts_ns, features
 *             [{feature, requested, status, mode, reason_code, message}]}
 *   deep_windows null | [{name, windows, time_ns, launches_covered, engines,
 *             close_reason, triggered, trigger null | {rule_id, metric, op,
 *             threshold, observed, fired_ns}}]
 *   lifecycle null | {run {run_id, segment_index, roll_chain_id, part_index,
 *             previous_run_id, analysis_id, pass_index, pass_count},
 *             segment_starts, segment_ends, run_ends, deep_window_rules,
 *             counter_data_quality (each null | [records' keys]),
 *             more_records} (docs/json-schema.md)
 *   read      {partial, session_dir, flat (session_dir is a flat-layout
 *             prefix), files, lines, bytes, bad_lines,
 *             bad_records, other_session_records, unknown_types, gz_errors,
 *             bad_windows, unpublished_files (null without a
 *             fl_read_result), bad_rows, orphan_details, out_of_memory,
 *             warnings, first_warnings [text], unknown_record_types [{type,
 *             records}]}
 */

typedef struct fl_report fl_report;

fl_report *fl_report_create(void);    /* NULL: out of memory */
void fl_report_destroy(fl_report *r); /* NULL-safe */
/* Fills cb (user, record, batch, warning, stop) for fl_read_session():
 * the read stops (GP_ERR_NO_MEMORY, naming the file, line and why) when
 * the report runs out of memory or past its cap of distinct keys. */
void fl_report_callbacks(fl_report *r, fl_read_cb *cb);
/* The cap on the distinct keys (maps.h: kernel ids, names, scopes,
 * correlation ids, devices) the report keeps; 0: none.  Default: the
 * environment's GPU_PROFILE_MAX_DISTINCT, else FL_MAX_DISTINCT_DEFAULT
 * (2^20). */
void fl_report_set_max_distinct(fl_report *r, uint64_t max);
/* The cap on the bytes the report keeps (maps.h: strings, stacks,
 * details, tables); 0: none.  Default: the environment's
 * GPU_PROFILE_MAX_MEMORY, else FL_MAX_MEMORY_DEFAULT. */
void fl_report_set_max_memory(fl_report *r, uint64_t bytes);
/* The environment's bounds of a report or an export and of the reader
 * (GPU_PROFILE_MAX_DISTINCT, _MAX_MEMORY, _MAX_FILE_LINES, _MAX_FILE_BYTES)
 * checked: GP_ERR_INVALID_ARG naming the first that is set to anything but
 * a whole number from 1 (fl_env_count).  The entry points ask it before a
 * read, so that a typo is never taken for the default. */
gp_status fl_report_env_check(gp_error *err);
/* Whether an allocation failed (some figures are short: the report is not
 * to be given as complete). */
bool fl_report_out_of_memory(const fl_report *r);
/* After the read: res (NULL: none, the callbacks were fed directly) gives
 * the reader's counters; a kernel batch still waiting for its details is
 * counted now.  Call once, before rendering. */
void fl_report_finish(fl_report *r, const fl_read_result *res);
/* The session is still being recorded (gpufl_generate_report during a
 * session): no shutdown is expected yet, so the report says "still
 * recording" rather than "crashed"; JSON session.recording true. */
void fl_report_set_live(fl_report *r, bool live);
/* What the hotspots group kernel launches by (before the read):
 * FL_BY_KERNEL (the default), FL_BY_OP (the framework op: external
 * correlation), FL_BY_LINE (the innermost frame of the launch's CPU stack
 * that is the program's: docs/report.md, "Hotspots by op or line"). */
enum { FL_BY_KERNEL = 0, FL_BY_OP = 1, FL_BY_LINE = 2 };
#define FL_BY_NAMES_OR "kernel, op or line"
void fl_report_set_by(fl_report *r, int by);
/* The FL_BY_* of a name ("kernel", "op", "line"); -1 for another. */
int fl_report_by_of(const char *name);
/* The run the session belongs to (report/runs.h; borrowed: it must
 * outlive the renderings), session_id being the session the other
 * sections give: the run section (text "run", JSON "run") says every
 * process of the run.  Without it JSON "run" is null and the text has no
 * run section. */
struct fl_runs;
void fl_report_set_runs(fl_report *r, const struct fl_runs *runs, const char *session_id);
/* The renderings, appended to out.  top_n: kernels in the hotspots (< 1:
 * 10). */
void fl_report_text(const fl_report *r, int top_n, fl_buf *out);
/* Only the sections in the GPUFL_SECTION_* mask (0: all), in the report's
 * order; each section's text is byte for byte its part of the whole. */
void fl_report_text_sections(const fl_report *r, int top_n, unsigned sections, fl_buf *out);
void fl_report_json(const fl_report *r, int top_n, fl_buf *out);
/* ------------------------------------------------------------ formats */

struct fl_html; /* html.h: the HTML page's timeline, read beside the report */

/* The report's formats, one row each, in the order --format lists them:
 * X(id, name, timeline, render) - id the fl_report_format_id (and the
 * public gpufl_report_format's number), name --format's word, timeline
 * whether the read must feed an fl_html (html.h: fl_html_tee) for it,
 * render the function (formats.c).  Promises: a row added here is parsed
 * and rendered by `gpu-profile report` and gpufl_report_logs; nothing
 * else names a format. */
#define FL_REPORT_FORMATS(FIRST, X)                                                                \
    FIRST(FL_REPORT_FMT_TEXT, "text", false, render_text)                                          \
    X(FL_REPORT_FMT_JSON, "json", false, render_json)                                              \
    X(FL_REPORT_FMT_HTML, "html", true, render_html)

#define FL_REPORT_FMT_ID_(id, name, tl, fn) id,
typedef enum {
    FL_REPORT_FORMATS(FL_REPORT_FMT_ID_, FL_REPORT_FMT_ID_) FL_REPORT_FMT_N
} fl_report_format_id;
#define FL_REPORT_FMT_FIRST_(id, name, tl, fn) name
#define FL_REPORT_FMT_OR_(id, name, tl, fn) " or " name
#define FL_REPORT_FMT_BAR_(id, name, tl, fn) "|" name
#define FL_REPORT_FMT_SP_(id, name, tl, fn) " " name
#define FL_REPORT_FORMAT_NAMES_OR FL_REPORT_FORMATS(FL_REPORT_FMT_FIRST_, FL_REPORT_FMT_OR_)
#define FL_REPORT_FORMAT_NAMES_BAR FL_REPORT_FORMATS(FL_REPORT_FMT_FIRST_, FL_REPORT_FMT_BAR_)
#define FL_REPORT_FORMAT_NAMES_SP FL_REPORT_FORMATS(FL_REPORT_FMT_FIRST_, FL_REPORT_FMT_SP_)

typedef struct fl_report_format {
    const char *name;
    bool timeline;
    /* Appends the report of r (finished) to out; h: the timeline when the
     * row asks for one, else NULL; sections: the GPUFL_SECTION_* mask of
     * a text report (0: all). */
    void (*render)(const fl_report *r, const struct fl_html *h, int top_n, unsigned sections,
                   fl_buf *out);
} fl_report_format;
extern const fl_report_format fl_report_formats[FL_REPORT_FMT_N];
/* The row named name (--format's word); -1 when none has it. */
int fl_report_format_of(const char *name);

/* The bytes the report's own structures hold (maps, histograms, names):
 * for the test that memory does not grow with the events. */
size_t fl_report_mem_bytes(const fl_report *r);

#endif /* FL_REPORT_H */
