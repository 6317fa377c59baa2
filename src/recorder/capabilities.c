/*
 * recorder/capabilities.c - capture_capabilities: one entry per feature,
 * requested or not, with its status and a message that says why.
 *
 * Promises: every feature the options can ask for has an entry, so a
 * missing kind of row is always explained; an opt-in flag set under
 * Monitor is reported as skipped, so the user learns that the flag alone
 * does nothing; a feature that lost data ends as partial with the counts,
 * never as collected.  The profiling engines' entries are
 * caps_engines.c's (one row per engine).
 */
#include "capabilities.h"
#include "capture.h"
#include "caps_int.h"
#include "say.h"
#include "scope.h"
#include "../util/error.h"
#include "trace_engine.h"

#include <stdarg.h>
#include <stdio.h>
#include <string.h>

/* The capability of a Trace feature the plugin runs: collected, or
 * fallback with CUPTI's refusal. */
static void add_trace_cap(session *s, const char *feature, uint32_t feat_bit,
                          const fl_trace_stats *st, const char *what)
{
    if (st->unavailable & feat_bit)
        fl_caps_add(s, feature, true, FL_CAP_FALLBACK, "cupti_refused", "%s", st->unavailable_msg);
    else
        fl_caps_add(s, feature, true, FL_CAP_COLLECTED, "", "%s", what);
}

/* The Monitor rung: device and host metrics from the sampler, scopes. */
static void add_monitor_caps(session *s, const char *device_note)
{
    const fl_config *c = &s->cfg;
    bool sample = c->system_sample_rate_ms > 0;
    if (!sample)
        fl_caps_add(s, "device_metrics", false, FL_CAP_NOT_REQUESTED, "",
                    "system_sample_rate_ms is 0");
    else if (c->backend == GPUFL_BACKEND_NONE)
        fl_caps_add(s, "device_metrics", true, FL_CAP_SKIPPED, "backend_none", "backend is None");
    else if (s->n_dev == 0)
        fl_caps_add(s, "device_metrics", true, FL_CAP_FALLBACK, "no_backend", "%s",
                    *device_note ? device_note : "no NVIDIA device was found");
    else
        fl_caps_add(s, "device_metrics", true, FL_CAP_COLLECTED, "", "%s every %d ms (%s)",
                    gp_monitor_backend(s->mon), c->system_sample_rate_ms,
                    c->continuous_system_sampling ? "continuous"
                                                  : "inside scopes and system phases");
    if (sample)
        fl_caps_add(s, "host_metrics", true, FL_CAP_COLLECTED, "", "/proc every %d ms",
                    c->system_sample_rate_ms);
    else
        fl_caps_add(s, "host_metrics", false, FL_CAP_NOT_REQUESTED, "",
                    "system_sample_rate_ms is 0");
    fl_caps_add(s, "scope_events", true, FL_CAP_COLLECTED, "", "%s", "");
}

/* The Trace rung: requested when the engine and the flag ask. */
static void add_trace_caps(session *s, bool tracing, const char *why)
{
    const fl_config *c = &s->cfg;
    bool trace = c->profiling_engine >= GPUFL_ENGINE_TRACE;
    fl_trace_stats st;
    fl_trace_engine_stats(s, &st);
    const struct {
        const char *feature;
        bool flag, opt_in;
        uint32_t bit;
        const char *what;
    } tf[] = {{"kernel_events", true, false, 0, "CUPTI concurrent kernel activity"},
              {"memcpy_events", true, false, FL_FEAT_MEMCPY, "CUPTI memcpy and peer-to-peer"},
              {"memset_events", true, false, FL_FEAT_MEMSET, "CUPTI memset activity"},
              {"synchronization", c->enable_synchronization, false, FL_FEAT_SYNC,
               "CUPTI synchronization activity"},
              {"memory_tracking", c->enable_memory_tracking, true, FL_FEAT_MEMORY,
               "CUPTI MEMORY2 (allocations and frees), timed by API callbacks"},
              {"cuda_graphs", c->enable_cuda_graphs_tracking, true, FL_FEAT_GRAPHS,
               "CUPTI graph trace (one graph_launch_event per graph launch) and graph "
               "resource callbacks (one graph_node_definition per node of each executable "
               "graph)"},
              {"external_correlation", c->enable_external_correlation, false, FL_FEAT_EXTERNAL,
               "CUPTI external correlation (framework ids on kernel rows)"},
              {"nvtx_ranges", true, false, FL_FEAT_NVTX,
               "NVTX ranges as nvtx_marker_event (needs NVTX_INJECTION64_PATH, set by "
               "gpu-profile)"},
              {"user_scope", true, false, FL_FEAT_SCOPES,
               "CUPTI launch callbacks: the gpufl scopes open at each launch in kernel_detail"},
              {"stack_trace", c->enable_stack_trace, true, FL_FEAT_STACKS, ""}};
    for (size_t i = 0; i < sizeof tf / sizeof tf[0]; i++) {
        bool stack = strcmp(tf[i].feature, "stack_trace") == 0;
        if (trace && tf[i].flag && tracing && stack && (st.unavailable & FL_FEAT_STACKS))
            fl_caps_add(s, tf[i].feature, true, FL_CAP_FALLBACK, "stacks_unavailable", "%s",
                        st.stacks_msg);
        else if (trace && tf[i].flag && tracing && stack)
            fl_caps_add(s, tf[i].feature, true, FL_CAP_COLLECTED, "",
                        "CPU stack at each kernel launch (libunwind), symbolised once per distinct "
                        "stack (libdw), at most %u distinct stacks",
                        st.stacks_max);
        else if (trace && tf[i].flag && tracing)
            add_trace_cap(s, tf[i].feature, tf[i].bit, &st, tf[i].what);
        else if (trace && tf[i].flag)
            fl_caps_add(s, tf[i].feature, true, FL_CAP_FALLBACK, "cupti_unavailable", "%s", why);
        else if (tf[i].flag && tf[i].opt_in)
            fl_caps_add(s, tf[i].feature, true, FL_CAP_SKIPPED, "engine_monitor",
                        "needs profiling_engine Trace or above; this session runs Monitor");
        else
            fl_caps_add(s, tf[i].feature, false, FL_CAP_NOT_REQUESTED, "", "%s", "");
    }
}

/* capture_windows: the gate keeps trace rows only, so without tracing a
 * window spec does nothing and says so. */
static void add_capture_cap(session *s, bool tracing)
{
    if (!fl_capture_active()) {
        fl_caps_add(s, "capture_windows", false, FL_CAP_NOT_REQUESTED, "",
                    "no capture_range, capture_delay_ms or capture_duration_ms: every trace row "
                    "is kept");
        return;
    }
    fl_capture_counts cc;
    fl_capture_counts_get(&cc);
    if (tracing)
        fl_caps_add(s, "capture_windows", true, FL_CAP_COLLECTED, "",
                    "trace rows kept only inside the %s windows", cc.trigger);
    else
        fl_caps_add(s, "capture_windows", true, FL_CAP_SKIPPED, "no_trace",
                    "capture windows gate trace rows; this session traces nothing");
}

void fl_caps_build(session *s, bool tracing, const char *why, const char *device_note)
{
    gpufl_engine req = s->cfg.profiling_engine;
    gpufl_engine sel = fl_caps_engines_selected(s, tracing);
    s->requested_engine = fl_engine_wire_name(req);
    s->selected_engine = fl_engine_wire_name(sel);
    add_monitor_caps(s, device_note);
    add_trace_caps(s, tracing, why);
    add_capture_cap(s, tracing);
    char above_why[800];
    snprintf(above_why, sizeof above_why, "%s",
             tracing ? "not implemented by this version; the session runs Trace" : why);
    if (tracing && sel != GPUFL_ENGINE_TRACE)
        snprintf(above_why, sizeof above_why,
                 "not implemented by this version; the session runs %s", gpufl_engine_name(sel));
    fl_caps_engines_add(s, tracing, above_why);
    fl_caps_engines_say(s, tracing, why, sel, above_why);
}

bool fl_caps_mark_lost_rows(session *s, uint64_t scope_dropped, uint64_t names_over,
                            uint64_t metric_dropped)
{
    if (scope_dropped > 0)
        fl_caps_mark_partial(
            s, "scope_events", "ring_full",
            "%llu scope events dropped: a thread opened scopes faster than the writer "
            "drained them",
            (unsigned long long)scope_dropped);
    if (names_over > 0)
        fl_caps_mark_partial(
            s, "scope_events", "name_limit",
            "%llu scopes recorded under the name \"%s\": the process had %u distinct "
            "scope names or %u bytes of them already",
            (unsigned long long)names_over, FL_SCOPE_OVERFLOW_NAME, FL_SCOPE_NAMES_MAX,
            FL_SCOPE_NAME_BYTES_MAX);
    if (metric_dropped > 0)
        fl_caps_mark_partial(s, "device_metrics", "queue_full",
                             "%llu metric rows dropped: the writer fell behind (a slow disk?)",
                             (unsigned long long)metric_dropped);
    return scope_dropped > 0 || names_over > 0 || metric_dropped > 0;
}

bool fl_caps_mark_failed_devices(session *s, const fl_device_failure *failures)
{
    bool any = false;
    for (size_t i = 0; i < s->n_dev; i++) {
        const fl_device_failure *f = &failures[i];
        if (!f->failed)
            continue;
        any = true;
        fl_caps_mark_partial(
            s, "device_metrics", f->status == GP_ERR_DEVICE_LOST ? "device_lost" : "device_failed",
            "device %u (%s) stopped reporting at ts_ns %llu (%s: %s): no row after that",
            s->live[i].id, s->live[i].uuid ? s->live[i].uuid : "no uuid",
            (unsigned long long)f->t_ns, gp_status_id(f->status), f->message);
    }
    return any;
}

/* kernel_events, collected, says what was written and what it cost. */
static void put_trace_counts(session *s, const fl_trace_stats *st, const fl_trace_counts *n)
{
    for (size_t i = 0; i < s->n_caps; i++) {
        if (strcmp(s->caps[i].feature, "kernel_events") != 0 ||
            s->caps[i].status != FL_CAP_COLLECTED)
            continue;
        snprintf(s->cap_msg[i], sizeof s->cap_msg[i],
                 "%llu kernels (%llu details), %llu memcpy, %llu memset, %llu sync, %llu "
                 "alloc/free, %llu graph launches, %llu NVTX ranges (%llu open at shutdown); "
                 "%llu CUPTI buffers, %llu other records skipped; CUPTI overhead %.3f ms in "
                 "%llu records",
                 (unsigned long long)n->kernels, (unsigned long long)n->details,
                 (unsigned long long)n->memcpys, (unsigned long long)n->memsets,
                 (unsigned long long)n->syncs, (unsigned long long)n->allocs,
                 (unsigned long long)n->graphs,
                 (unsigned long long)(n->ranges + n->ranges_open_at_end),
                 (unsigned long long)n->ranges_open_at_end, (unsigned long long)st->buffers,
                 (unsigned long long)st->other_records, st->overhead_ns / 1e6,
                 (unsigned long long)st->overhead_records);
        /* The plugin's choice for SASS metrics (plugin/cupti_plugin.c). */
        if (fl_trace_engine_wants_sass(s->cfg.profiling_engine)) {
            size_t len = strlen(s->cap_msg[i]);
            snprintf(s->cap_msg[i] + len, sizeof s->cap_msg[i] - len,
                     "; kernels run one at a time (CUPTI's KERNEL activity: beside "
                     "CONCURRENT_KERNEL the SASS metrics count 0)");
        }
    }
}

/* Records CUPTI dropped or refused make every collected activity feature
 * partial (after put_trace_counts: the loss is the final word); NVTX
 * ranges whose begin could not be kept make nvtx_ranges partial. */
static void mark_trace_losses(session *s, const fl_trace_stats *st, const fl_trace_counts *n)
{
    if (st->cupti_dropped > 0 || st->buffers_refused > 0 || st->bad_buffers > 0) {
        const char *feats[] = {"kernel_events",   "memcpy_events",   "memset_events",
                               "synchronization", "memory_tracking", "cuda_graphs"};
        for (size_t f = 0; f < sizeof feats / sizeof feats[0]; f++) {
            if (!fl_caps_is_collected(s, feats[f]))
                continue;
            fl_caps_mark_partial(
                s, feats[f], "records_dropped",
                "%llu activity records dropped by CUPTI, %llu buffer requests refused "
                "(every buffer of the pool in use: raise cupti_max_buffers or "
                "cupti_buffer_kib), %llu buffers cut short by an unreadable record",
                (unsigned long long)st->cupti_dropped, (unsigned long long)st->buffers_refused,
                (unsigned long long)st->bad_buffers);
        }
    }
    /* NVTX refused after the start (the plugin's NVTX entry point is called
     * at the program's first NVTX call): CUDA 13.0.x, unless asked. */
    if ((st->unavailable & FL_FEAT_NVTX) && fl_caps_is_collected(s, "nvtx_ranges"))
        fl_caps_set(s, "nvtx_ranges", FL_CAP_FALLBACK, "nvtx_not_injected", "%s",
                    st->unavailable == FL_FEAT_NVTX ? st->unavailable_msg
                                                    : "NVTX was not handed to CUPTI");
    if (st->graph_nodes_msg[0] && fl_caps_is_collected(s, "cuda_graphs"))
        fl_caps_mark_partial(s, "cuda_graphs", "graph_nodes_refused",
                             "graph launches traced, no graph_node_definition: %s",
                             st->graph_nodes_msg);
    else if (st->graph_nodes_lost > 0 && fl_caps_is_collected(s, "cuda_graphs"))
        fl_caps_mark_partial(s, "cuda_graphs", "graph_nodes_lost",
                             "%llu graph nodes not kept or node definitions not written: more "
                             "nodes than the plugin keeps (65536), or more definitions than it "
                             "queues (65536) between two writer cycles",
                             (unsigned long long)st->graph_nodes_lost);
    if (n->markers_lost > 0)
        fl_caps_mark_partial(
            s, "nvtx_ranges", "ranges_lost",
            "%llu NVTX ranges lost: their begin could not be kept (out of memory, more "
            "than 65536 open at once, or an id begun twice)",
            (unsigned long long)n->markers_lost);
}

/* stack_trace, collected: what was captured; launches left without a
 * stack because the table was full make it partial. */
static void put_stack_counts(session *s, const fl_trace_stats *st)
{
    /* A process with CPython: how many stacks have its frames, or why none. */
    char py[256] = "";
    if (st->stacks_python[0] && st->stack_python > 0)
        snprintf(py, sizeof py, "; %llu of them with Python frames (%.160s)",
                 (unsigned long long)st->stack_python, st->stacks_python);
    else if (st->stacks_python[0])
        snprintf(py, sizeof py, "; no Python frames (%.160s%s)", st->stacks_python,
                 strchr(st->stacks_python, ':') ? "" : ": no launch from a thread holding the GIL");
    for (size_t i = 0; i < s->n_caps; i++)
        if (strcmp(s->caps[i].feature, "stack_trace") == 0 && s->caps[i].status == FL_CAP_COLLECTED)
            snprintf(s->cap_msg[i], sizeof s->cap_msg[i],
                     "%llu launches and synchronizations with a CPU stack (libunwind), %llu "
                     "distinct stacks "
                     "symbolised (libdw), at most %u%s",
                     (unsigned long long)st->stack_captures, (unsigned long long)st->stacks,
                     st->stacks_max, py);
    if (st->stacks_overflow > 0 && fl_caps_is_collected(s, "stack_trace"))
        fl_caps_mark_partial(s, "stack_trace", "stacks_overflow",
                             "%llu launches have no stack: more than %u distinct stacks (their "
                             "stack_trace is \"\")",
                             (unsigned long long)st->stacks_overflow, st->stacks_max);
}

/* capture_windows, collected: the windows opened and every trace row the
 * gate dropped, by kind, so the session says what it did not write. */
static void put_capture_counts(session *s)
{
    if (!fl_capture_active() || !fl_caps_is_collected(s, "capture_windows"))
        return;
    fl_capture_counts cc;
    fl_capture_counts_get(&cc);
    const uint64_t *o = cc.left_out;
    fl_caps_set(s, "capture_windows", FL_CAP_COLLECTED, "",
                "%u windows captured (%s); left out (outside every window): %llu kernels, %llu "
                "memcpy, %llu memset, %llu sync, %llu graph launches (%llu trace rows)",
                cc.windows, cc.trigger, (unsigned long long)o[FL_CAPTURE_ROW_KERNEL],
                (unsigned long long)o[FL_CAPTURE_ROW_MEMCPY],
                (unsigned long long)o[FL_CAPTURE_ROW_MEMSET],
                (unsigned long long)o[FL_CAPTURE_ROW_SYNC],
                (unsigned long long)o[FL_CAPTURE_ROW_GRAPH], (unsigned long long)cc.rows_left_out);
    if (cc.windows_refused > 0)
        fl_caps_mark_partial(s, "capture_windows", "windows_refused",
                             "%u windows not opened: more than %u in one session, or no memory "
                             "(their rows were left out)",
                             cc.windows_refused, FL_CAPTURE_MAX_WINDOWS);
}

void fl_caps_trace_final(session *s, const fl_trace_stats *st, const fl_trace_counts *n)
{
    put_trace_counts(s, st, n);
    put_capture_counts(s);
    put_stack_counts(s, st);
    mark_trace_losses(s, st, n);
    fl_caps_engines_final(s, st, n);
}

/* ------------------------------------------------- what the files lost */

/* The record types that carry each feature's data, for the losses of the
 * session's files (FL_T_UNKNOWN ends a list). */
static const struct {
    const char *feature;
    fl_type types[3];
} feature_types[] = {
    {"device_metrics", {FL_T_DEVICE_METRIC_BATCH, FL_T_DEVICE_LOST_EVENT}},
    {"host_metrics", {FL_T_HOST_METRIC_BATCH}},
    {"scope_events", {FL_T_SCOPE_EVENT_BATCH}},
    {"kernel_events", {FL_T_KERNEL_EVENT_BATCH, FL_T_KERNEL_DETAIL}},
    {"memcpy_events", {FL_T_MEMCPY_EVENT_BATCH}},
    {"memset_events", {FL_T_MEMSET_EVENT}},
    {"synchronization", {FL_T_SYNCHRONIZATION_EVENT_BATCH}},
    {"memory_tracking", {FL_T_MEMORY_ALLOC_EVENT_BATCH}},
    {"cuda_graphs", {FL_T_GRAPH_LAUNCH_EVENT, FL_T_GRAPH_NODE_DEFINITION}},
    {"nvtx_ranges", {FL_T_NVTX_MARKER_EVENT}},
    {"pc_sampling", {FL_T_PROFILE_SAMPLE_BATCH}},
    {"pm_sampling", {FL_T_PM_SAMPLE_BATCH, FL_T_PM_SAMPLING_CONFIG}},
    {"sass_metrics", {FL_T_PROFILE_SAMPLE_BATCH, FL_T_SASS_CONFIG}},
};
#define N_FEATURE_TYPES (sizeof feature_types / sizeof feature_types[0])

void fl_caps_mark_removed(session *s, int ch)
{
    for (size_t f = 0; f < N_FEATURE_TYPES; f++) {
        bool here = false;
        for (size_t k = 0; k < 3 && feature_types[f].types[k] != FL_T_UNKNOWN; k++)
            here = here || fl_type_get(feature_types[f].types[k])->channel == ch;
        if (here && fl_caps_is_collected(s, feature_types[f].feature))
            fl_caps_mark_partial(
                s, feature_types[f].feature, "log_dir_removed",
                "%s/%s.log was removed while recording: its records up to then are "
                "gone, later ones were not written (shutdown's lines_lost, rows_lost)",
                s->dir, fl_channel_name(ch));
    }
}

/* What a cause of loss did to the rows, after "N rows in M lines ": buf
 * (cap bytes) or a constant. */
static const char *loss_why(const session *s, int cause, char *buf, size_t cap)
{
    switch (cause) {
    case FL_LOSS_WRITE:
        snprintf(buf, cap, "lost: writing %s/%s.log failed: %s", s->dir,
                 fl_channel_name(s->loss.first_channel), strerror(s->loss.first_errno));
        return buf;
    case FL_LOSS_REMOVED:
        return "not written: the session's files were removed while recording";
    default:
        snprintf(buf, cap,
                 "not written: the session's files reached max_disk (%llu bytes); telemetry "
                 "went on",
                 (unsigned long long)s->roll.max_disk_bytes);
        return buf;
    }
}

bool fl_caps_mark_losses(session *s)
{
    static const char *const reason[FL_LOSS_CAUSES] = {[FL_LOSS_WRITE] = "write_failed",
                                                       [FL_LOSS_REMOVED] = "log_dir_removed",
                                                       [FL_LOSS_MAX_DISK] = "max_disk"};
    char why[sizeof s->cap_msg[0]];
    bool any = false;
    for (size_t f = 0; f < N_FEATURE_TYPES; f++) {
        uint64_t lines[FL_LOSS_CAUSES] = {0}, rows[FL_LOSS_CAUSES] = {0};
        for (size_t k = 0; k < 3 && feature_types[f].types[k] != FL_T_UNKNOWN; k++)
            for (int c = 0; c < FL_LOSS_CAUSES; c++) {
                lines[c] += s->loss.lines[c][feature_types[f].types[k]];
                rows[c] += s->loss.rows[c][feature_types[f].types[k]];
            }
        for (int c = 0; c < FL_LOSS_CAUSES; c++) {
            if (lines[c] == 0)
                continue;
            fl_caps_mark_partial(s, feature_types[f].feature, reason[c],
                                 "%llu rows in %llu lines %s", (unsigned long long)rows[c],
                                 (unsigned long long)lines[c], loss_why(s, c, why, sizeof why));
            any = true;
        }
    }
    return any || s->loss.removed || s->loss.lines_total > 0;
}

void fl_caps_put(session *s, fl_buf *b, uint64_t ts)
{
    fl_rec_capabilities(b, s->id, ts, s->requested_engine, s->selected_engine, s->caps, s->n_caps);
}

void fl_caps_write(session *s, uint64_t ts)
{
    for (int ch = 0; ch < s->n_ch; ch++)
        fl_caps_put(s, &s->out[ch], ts);
}
