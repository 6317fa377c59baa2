/*
 * recorder/capabilities.c - capture_capabilities: one entry per feature,
 * requested or not, with its status and a message that says why.
 *
 * Promises: every feature the options can ask for has an entry, so a
 * missing kind of row is always explained; an opt-in flag set under
 * Monitor is reported as skipped, so the user learns that the flag alone
 * does nothing; a feature that lost data ends as partial with the counts,
 * never as collected.
 */
#include "capabilities.h"
#include "say.h"
#include "scope.h"
#include "../util/error.h"
#include "trace_engine.h"

#include <stdarg.h>
#include <stdio.h>
#include <string.h>

static void add_cap(session *s, const char *feature, bool requested, fl_cap_status status,
                    const char *reason_code, const char *fmt, ...)
    __attribute__((format(printf, 6, 7)));
static void add_cap(session *s, const char *feature, bool requested, fl_cap_status status,
                    const char *reason_code, const char *fmt, ...)
{
    if (s->n_caps == MAX_CAPS)
        return;
    size_t i = s->n_caps++;
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(s->cap_msg[i], sizeof s->cap_msg[i], fmt, ap);
    va_end(ap);
    s->caps[i] = (fl_capability){.feature = feature,
                                 .requested = requested,
                                 .status = status,
                                 .mode = "",
                                 .reason_code = reason_code,
                                 .message = s->cap_msg[i]};
}

/* The capability of a Trace feature the plugin runs: collected, or
 * fallback with CUPTI's refusal. */
static void add_trace_cap(session *s, const char *feature, uint32_t feat_bit,
                          const fl_trace_stats *st, const char *what)
{
    if (st->unavailable & feat_bit)
        add_cap(s, feature, true, FL_CAP_FALLBACK, "cupti_refused", "%s", st->unavailable_msg);
    else
        add_cap(s, feature, true, FL_CAP_COLLECTED, "", "%s", what);
}

/* The Monitor rung: device and host metrics from the sampler, scopes. */
static void add_monitor_caps(session *s, const char *device_note)
{
    const fl_config *c = &s->cfg;
    bool sample = c->system_sample_rate_ms > 0;
    if (!sample)
        add_cap(s, "device_metrics", false, FL_CAP_NOT_REQUESTED, "", "system_sample_rate_ms is 0");
    else if (c->backend == GPUFL_BACKEND_NONE)
        add_cap(s, "device_metrics", true, FL_CAP_SKIPPED, "backend_none", "backend is None");
    else if (s->n_dev == 0)
        add_cap(s, "device_metrics", true, FL_CAP_FALLBACK, "no_backend", "%s",
                *device_note ? device_note : "no NVIDIA device was found");
    else
        add_cap(s, "device_metrics", true, FL_CAP_COLLECTED, "", "%s every %d ms (%s)",
                gp_monitor_backend(s->mon), c->system_sample_rate_ms,
                c->continuous_system_sampling ? "continuous" : "inside scopes and system phases");
    if (sample)
        add_cap(s, "host_metrics", true, FL_CAP_COLLECTED, "", "/proc every %d ms",
                c->system_sample_rate_ms);
    else
        add_cap(s, "host_metrics", false, FL_CAP_NOT_REQUESTED, "", "system_sample_rate_ms is 0");
    add_cap(s, "scope_events", true, FL_CAP_COLLECTED, "", "%s", "");
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
               "CUPTI graph trace (one graph_launch_event per graph launch)"},
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
            add_cap(s, tf[i].feature, true, FL_CAP_FALLBACK, "stacks_unavailable", "%s",
                    st.stacks_msg);
        else if (trace && tf[i].flag && tracing && stack)
            add_cap(s, tf[i].feature, true, FL_CAP_COLLECTED, "",
                    "CPU stack at each kernel launch (libunwind), symbolised once per distinct "
                    "stack (libdw), at most %u distinct stacks",
                    st.stacks_max);
        else if (trace && tf[i].flag && tracing)
            add_trace_cap(s, tf[i].feature, tf[i].bit, &st, tf[i].what);
        else if (trace && tf[i].flag)
            add_cap(s, tf[i].feature, true, FL_CAP_FALLBACK, "cupti_unavailable", "%s", why);
        else if (tf[i].flag && tf[i].opt_in)
            add_cap(s, tf[i].feature, true, FL_CAP_SKIPPED, "engine_monitor",
                    "needs profiling_engine Trace or above; this session runs Monitor");
        else
            add_cap(s, tf[i].feature, false, FL_CAP_NOT_REQUESTED, "", "%s", "");
    }
}

/* ------------------------------------------------ the profiling engines */

/* One row per engine of the CUPTI plugin (its slot of fl_trace_stats.engines):
 * its capture_capabilities entry, what asks for it, its reason codes, and
 * what it says at init and at the end.  Adding an engine: its row here. */
typedef struct cap_engine cap_engine;
typedef void (*cap_init_fn)(session *s, const cap_engine *r, const fl_engine_stats *e,
                            bool say_source);
typedef void (*cap_final_fn)(session *s, const cap_engine *r, const fl_trace_stats *st,
                             const fl_trace_counts *n);
struct cap_engine {
    uint32_t slot;       /* FL_ENGINE_* */
    const char *feature; /* its capture_capabilities entry */
    const char *what;    /* in the debug line: "PC sampling" */
    gpufl_engine engine; /* the session's engine while it is active */
    bool sources;        /* says source_collection (the first that runs does) */
    bool (*wants)(gpufl_engine req);
    /* The reason codes of the statuses from FL_PC_MIG on, which are each
     * engine's own (FL_PC_MIG, FL_RP_*); NULL: cupti_error. */
    const char *own_reasons[3];
    cap_init_fn init;
    cap_final_fn final;
};

/* An engine's reason code for a status (FL_PC_*): the causes every engine
 * shares, then its own. */
static const char *engine_reason(const cap_engine *r, uint32_t status)
{
    switch (status) {
    case FL_PC_NO_PERMISSION:
        return "insufficient_privilege";
    case FL_PC_NOT_SUPPORTED:
        return "not_supported";
    case FL_PC_VIRTUALIZED:
        return "virtualized_device";
    case FL_PC_NO_DRIVER:
        return "cupti_unavailable";
    case FL_PC_CONFLICT:
        return "profiler_conflict";
    default:
        break;
    }
    if (status >= FL_PC_MIG && status - FL_PC_MIG < 3 && r->own_reasons[status - FL_PC_MIG])
        return r->own_reasons[status - FL_PC_MIG];
    return "cupti_error";
}

static void add_rp_cap(session *s, const cap_engine *r, const fl_engine_stats *e, bool say_source)
{
    (void)say_source;
    if (e->status != FL_PC_ACTIVE) {
        const char *msg = e->message[0] ? e->message : "the CUPTI plugin did not start it";
        add_cap(s, "range_profiler", true, FL_CAP_FALLBACK, engine_reason(r, e->status), "%s", msg);
        return;
    }
    add_cap(s, "range_profiler", true, FL_CAP_COLLECTED, "",
            "CUPTI range profiler: %s; the metric set is chosen for the chip at the first "
            "outermost scope with a CUDA context",
            e->counters.rp.per_kernel
                ? "one range per kernel launch inside outermost scopes (kernel "
                  "replay, any pass count)"
                : "one range per outermost scope (user replay, one pass)");
}

static void add_pc_caps(session *s, const cap_engine *r, const fl_engine_stats *e, bool say_source)
{
    (void)say_source;
    bool src = s->cfg.enable_source_collection;
    if (e->status != FL_PC_ACTIVE) {
        const char *msg = e->message[0] ? e->message : "the CUPTI plugin did not start it";
        add_cap(s, "pc_sampling", true, FL_CAP_FALLBACK, engine_reason(r, e->status), "%s", msg);
        add_cap(s, "source_collection", src, src ? FL_CAP_FALLBACK : FL_CAP_NOT_REQUESTED,
                src ? engine_reason(r, e->status) : "", "%s", src ? msg : "");
    } else {
        add_cap(s, "pc_sampling", true, FL_CAP_COLLECTED, "",
                "CUPTI PC sampling every 2^%u cycles, all stall reasons, kernels serialised; "
                "enabled on each CUDA context, read at each outermost scope's end and when "
                "the session ends",
                e->counters.pc.period_log2);
        if (src)
            add_cap(s, "source_collection", true, FL_CAP_COLLECTED, "",
                    "PC offsets mapped to file:line with cuptiGetSassToSourceCorrelation on the "
                    "cubins loaded (kept up to 64 MiB)");
        else
            add_cap(s, "source_collection", false, FL_CAP_NOT_REQUESTED, "", "%s", "");
    }
    if (s->n_ch > FL_CH_SASS)
        add_cap(s, "cubin_disassembly", true, FL_CAP_COLLECTED, "",
                "%s -c on the cubin of each function sampled, once per function: one "
                "cubin_disassembly record each on the sass channel",
                s->disasm_path);
    else
        add_cap(s, "cubin_disassembly", false, FL_CAP_SKIPPED, "disassembler_absent",
                "disassembler absent (%s), so no cubin_disassembly records (the sass channel) "
                "are written; samples carry PC offsets and source lines",
                s->disasm_why[0] ? s->disasm_why : "PC sampling is not active");
}

/* pm_sampling when the PmSampling engine was asked for and Trace runs. */
static void add_pm_caps(session *s, const cap_engine *r, const fl_engine_stats *e, bool say_source)
{
    (void)say_source;
    const fl_pm_counters *c = &e->counters.pm;
    if (e->status != FL_PC_ACTIVE)
        add_cap(s, "pm_sampling", true, FL_CAP_FALLBACK, engine_reason(r, e->status), "%s",
                e->message[0] ? e->message : "the CUPTI plugin did not start it");
    else
        add_cap(s, "pm_sampling", true, FL_CAP_COLLECTED, "",
                "CUPTI PM sampling every %u us of GPU time, %u metrics (%s set) in one pass; "
                "set up on each device when its first CUDA context is created, decoded on the "
                "writer thread",
                c->interval_us, c->metrics, c->preset);
}

/* sass_metrics (and source_collection when PC sampling does not say it)
 * when SASS metrics were asked for and the Trace engine runs. */
static void add_sass_caps(session *s, const cap_engine *r, const fl_engine_stats *e,
                          bool say_source)
{
    bool src = s->cfg.enable_source_collection;
    if (e->status != FL_PC_ACTIVE) {
        /* Off although asked: a plugin without SASS metrics. */
        bool none = e->status == FL_PC_OFF;
        const char *msg = e->message[0] ? e->message
                          : none ? "not implemented by this CUPTI plugin; the session runs Trace"
                                 : "the CUPTI plugin did not start it";
        add_cap(s, "sass_metrics", true, FL_CAP_FALLBACK,
                none ? "not_implemented" : engine_reason(r, e->status), "%s", msg);
        if (say_source)
            add_cap(s, "source_collection", src, src ? FL_CAP_FALLBACK : FL_CAP_NOT_REQUESTED,
                    src ? engine_reason(r, e->status) : "", "%s", src ? msg : "");
        return;
    }
    add_cap(s, "sass_metrics", true, FL_CAP_COLLECTED, "",
            "CUPTI SASS metrics per instruction of every kernel run, enabled on each CUDA "
            "context, read at each outermost scope's end and when the session ends");
    if (say_source)
        add_cap(s, "source_collection", src, src ? FL_CAP_COLLECTED : FL_CAP_NOT_REQUESTED, "",
                "%s",
                src ? "PC offsets mapped to file:line with cuptiGetSassToSourceCorrelation on the "
                      "cubins loaded (kept up to 64 MiB)"
                    : "");
}

static bool wants_pm(gpufl_engine req)
{
    return req == GPUFL_ENGINE_PM_SAMPLING;
}

static bool wants_rp(gpufl_engine req)
{
    return req == GPUFL_ENGINE_RANGE_PROFILER;
}

static void pc_final(session *s, const cap_engine *r, const fl_trace_stats *st,
                     const fl_trace_counts *n);
static void pm_final(session *s, const cap_engine *r, const fl_trace_stats *st,
                     const fl_trace_counts *n);
static void sass_final(session *s, const cap_engine *r, const fl_trace_stats *st,
                       const fl_trace_counts *n);
static void rp_final(session *s, const cap_engine *r, const fl_trace_stats *st,
                     const fl_trace_counts *n);

#define RP_REASONS                                                                                 \
    {                                                                                              \
        "initialized_after_cuda_work", "metrics_unavailable", "no_cuda_context"                    \
    }

/* In the order of their entries; the last word on a feature two engines
 * share (source_collection under Deep) is the earlier one's: the ends walk
 * the table backward. */
static const cap_engine cap_engines[] = {
    {FL_ENGINE_PM,
     "pm_sampling",
     "PM sampling",
     GPUFL_ENGINE_PM_SAMPLING,
     false,
     wants_pm,
     {"mig_device"},
     add_pm_caps,
     pm_final},
    {FL_ENGINE_PC,
     "pc_sampling",
     "PC sampling",
     GPUFL_ENGINE_PC_SAMPLING,
     true,
     fl_trace_engine_wants_pc,
     {NULL},
     add_pc_caps,
     pc_final},
    {FL_ENGINE_SASS, "sass_metrics", "SASS metrics", GPUFL_ENGINE_SASS_METRICS, true,
     fl_trace_engine_wants_sass, RP_REASONS, add_sass_caps, sass_final},
    {FL_ENGINE_RP, "range_profiler", "range profiler", GPUFL_ENGINE_RANGE_PROFILER, false, wants_rp,
     RP_REASONS, add_rp_cap, rp_final},
};
#define N_CAP_ENGINES (sizeof cap_engines / sizeof cap_engines[0])

/* The rungs above Trace: each engine the options ask for says what the
 * plugin's start achieved; without the plugin (above_why says why) they
 * fall back to Monitor. */
static void add_above_trace_caps(session *s, bool tracing, const char *above_why)
{
    gpufl_engine req = s->cfg.profiling_engine;
    const char *above = tracing ? "not_implemented" : "cupti_unavailable";
    fl_trace_stats st;
    if (tracing)
        fl_trace_engine_stats(s, &st);
    bool source_said = false, src = false;
    for (size_t i = 0; i < N_CAP_ENGINES; i++) {
        const cap_engine *r = &cap_engines[i];
        bool want = r->wants(req);
        src = src || (want && r->sources);
        if (want && tracing) {
            r->init(s, r, &st.engines[r->slot], !source_said);
            source_said = source_said || r->sources;
        } else
            add_cap(s, r->feature, want, want ? FL_CAP_FALLBACK : FL_CAP_NOT_REQUESTED,
                    want ? above : "", "%s", want ? above_why : "");
    }
    if (source_said)
        return;
    src = src && s->cfg.enable_source_collection;
    add_cap(s, "source_collection", src, src ? FL_CAP_FALLBACK : FL_CAP_NOT_REQUESTED,
            src ? above : "", "%s", src ? above_why : "");
}

/* The engine a session runs: the one asked for while it is active; under
 * Deep the rungs left (Deep -> PcSampling -> Trace; SASS metrics alone say
 * so). */
static gpufl_engine selected_of(session *s, bool tracing)
{
    if (!tracing)
        return GPUFL_ENGINE_MONITOR;
    gpufl_engine req = s->cfg.profiling_engine;
    fl_trace_stats st;
    fl_trace_engine_stats(s, &st);
    if (req == GPUFL_ENGINE_DEEP) {
        bool pc = st.engines[FL_ENGINE_PC].status == FL_PC_ACTIVE,
             sass = st.engines[FL_ENGINE_SASS].status == FL_PC_ACTIVE;
        return pc && sass ? GPUFL_ENGINE_DEEP
               : pc       ? GPUFL_ENGINE_PC_SAMPLING
               : sass     ? GPUFL_ENGINE_SASS_METRICS
                          : GPUFL_ENGINE_TRACE;
    }
    for (size_t i = 0; i < N_CAP_ENGINES; i++)
        if (cap_engines[i].wants(req) && st.engines[cap_engines[i].slot].status == FL_PC_ACTIVE)
            return cap_engines[i].engine;
    return GPUFL_ENGINE_TRACE;
}

/* Why the session runs less than asked, in the debug log. */
static void say_fell_back(session *s, bool tracing, const char *why, gpufl_engine sel,
                          const char *above_why)
{
    gpufl_engine req = s->cfg.profiling_engine;
    if (req > GPUFL_ENGINE_MONITOR && !tracing) {
        FL_DEBUG(s, "profiling_engine %s requested, running Monitor: %s", gpufl_engine_name(req),
                 why);
        return;
    }
    if (!tracing)
        return;
    fl_trace_stats st;
    fl_trace_engine_stats(s, &st);
    const fl_engine_stats *pc = &st.engines[FL_ENGINE_PC], *sass = &st.engines[FL_ENGINE_SASS];
    if (req == GPUFL_ENGINE_DEEP && sel != req) {
        FL_DEBUG(s, "profiling_engine %s requested, running %s: PC sampling: %s; SASS metrics: %s",
                 gpufl_engine_name(req), gpufl_engine_name(sel),
                 pc->status == FL_PC_ACTIVE ? "active" : pc->message,
                 sass->status == FL_PC_ACTIVE ? "active" : sass->message);
        return;
    }
    for (size_t i = 0; i < N_CAP_ENGINES; i++) {
        const cap_engine *r = &cap_engines[i];
        if (r->wants(req) && sel != r->engine) {
            FL_DEBUG(s, "profiling_engine %s requested, running Trace: %s: %s",
                     gpufl_engine_name(req), r->what, st.engines[r->slot].message);
            return;
        }
    }
    if (req > sel)
        FL_DEBUG(s, "profiling_engine %s requested, running %s: %s", gpufl_engine_name(req),
                 gpufl_engine_name(sel), above_why);
}

void fl_caps_build(session *s, bool tracing, const char *why, const char *device_note)
{
    gpufl_engine req = s->cfg.profiling_engine;
    gpufl_engine sel = selected_of(s, tracing);
    s->requested_engine = fl_engine_wire_name(req);
    s->selected_engine = fl_engine_wire_name(sel);
    add_monitor_caps(s, device_note);
    add_trace_caps(s, tracing, why);
    char above_why[800];
    snprintf(above_why, sizeof above_why, "%s",
             tracing ? "not implemented by this version; the session runs Trace" : why);
    if (tracing && sel != GPUFL_ENGINE_TRACE)
        snprintf(above_why, sizeof above_why,
                 "not implemented by this version; the session runs %s", gpufl_engine_name(sel));
    add_above_trace_caps(s, tracing, above_why);
    say_fell_back(s, tracing, why, sel, above_why);
}

/* The final word on a feature that lost data: partial, with the reason;
 * a feature already partial keeps its first reason and gets this message
 * after its own. */
static void mark_partial(session *s, const char *feature, const char *reason, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));
static void mark_partial(session *s, const char *feature, const char *reason, const char *fmt, ...)
{
    for (size_t i = 0; i < s->n_caps; i++) {
        if (strcmp(s->caps[i].feature, feature) != 0)
            continue;
        char *msg = s->cap_msg[i];
        size_t at = 0;
        if (s->caps[i].status == FL_CAP_PARTIAL && msg[0]) {
            at = strlen(msg);
            at += (size_t)snprintf(msg + at, sizeof s->cap_msg[i] - at, "; ");
            if (at >= sizeof s->cap_msg[i])
                return;
        } else {
            s->caps[i].status = FL_CAP_PARTIAL;
            s->caps[i].reason_code = reason;
        }
        va_list ap;
        va_start(ap, fmt);
        vsnprintf(msg + at, sizeof s->cap_msg[i] - at, fmt, ap);
        va_end(ap);
    }
}

bool fl_caps_mark_lost_rows(session *s, uint64_t scope_dropped, uint64_t names_over,
                            uint64_t metric_dropped)
{
    if (scope_dropped > 0)
        mark_partial(s, "scope_events", "ring_full",
                     "%llu scope events dropped: a thread opened scopes faster than the writer "
                     "drained them",
                     (unsigned long long)scope_dropped);
    if (names_over > 0)
        mark_partial(s, "scope_events", "name_limit",
                     "%llu scopes recorded under the name \"%s\": the process had %u distinct "
                     "scope names or %u bytes of them already",
                     (unsigned long long)names_over, FL_SCOPE_OVERFLOW_NAME, FL_SCOPE_NAMES_MAX,
                     FL_SCOPE_NAME_BYTES_MAX);
    if (metric_dropped > 0)
        mark_partial(s, "device_metrics", "queue_full",
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
        mark_partial(s, "device_metrics",
                     f->status == GP_ERR_DEVICE_LOST ? "device_lost" : "device_failed",
                     "device %u (%s) stopped reporting at ts_ns %llu (%s: %s): no row after that",
                     s->live[i].id, s->live[i].uuid ? s->live[i].uuid : "no uuid",
                     (unsigned long long)f->t_ns, gp_status_id(f->status), f->message);
    }
    return any;
}

static bool is_collected(const session *s, const char *feature)
{
    for (size_t i = 0; i < s->n_caps; i++)
        if (strcmp(s->caps[i].feature, feature) == 0 && s->caps[i].status == FL_CAP_COLLECTED)
            return true;
    return false;
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
            if (!is_collected(s, feats[f]))
                continue;
            mark_partial(s, feats[f], "records_dropped",
                         "%llu activity records dropped by CUPTI, %llu buffer requests refused "
                         "(every buffer of the pool in use: raise cupti_max_buffers or "
                         "cupti_buffer_kib), %llu buffers cut short by an unreadable record",
                         (unsigned long long)st->cupti_dropped,
                         (unsigned long long)st->buffers_refused,
                         (unsigned long long)st->bad_buffers);
        }
    }
    if (n->markers_lost > 0)
        mark_partial(s, "nvtx_ranges", "ranges_lost",
                     "%llu NVTX ranges lost: their begin could not be kept (out of memory, more "
                     "than 65536 open at once, or an id begun twice)",
                     (unsigned long long)n->markers_lost);
}

/* stack_trace, collected: what was captured; launches left without a
 * stack because the table was full make it partial. */
static void put_stack_counts(session *s, const fl_trace_stats *st)
{
    for (size_t i = 0; i < s->n_caps; i++)
        if (strcmp(s->caps[i].feature, "stack_trace") == 0 && s->caps[i].status == FL_CAP_COLLECTED)
            snprintf(s->cap_msg[i], sizeof s->cap_msg[i],
                     "%llu launches and synchronizations with a CPU stack (libunwind), %llu "
                     "distinct stacks "
                     "symbolised (libdw), at most %u",
                     (unsigned long long)st->stack_captures, (unsigned long long)st->stacks,
                     st->stacks_max);
    if (st->stacks_overflow > 0 && is_collected(s, "stack_trace"))
        mark_partial(s, "stack_trace", "stacks_overflow",
                     "%llu launches have no stack: more than %u distinct stacks (their "
                     "stack_trace is \"\")",
                     (unsigned long long)st->stacks_overflow, st->stacks_max);
}

/* A feature's status and message set anew (its first word replaced). */
static void set_cap(session *s, const char *feature, fl_cap_status status, const char *reason,
                    const char *fmt, ...) __attribute__((format(printf, 5, 6)));
static void set_cap(session *s, const char *feature, fl_cap_status status, const char *reason,
                    const char *fmt, ...)
{
    for (size_t i = 0; i < s->n_caps; i++) {
        if (strcmp(s->caps[i].feature, feature) != 0)
            continue;
        s->caps[i].status = status;
        s->caps[i].reason_code = reason;
        va_list ap;
        va_start(ap, fmt);
        vsnprintf(s->cap_msg[i], sizeof s->cap_msg[i], fmt, ap);
        va_end(ap);
    }
}

/* source_collection's last word: the cubins kept and what they lacked. */
static void pc_source_final(session *s, const fl_trace_stats *st, uint64_t no_line,
                            const char *unit)
{
    if (!is_collected(s, "source_collection"))
        return;
    set_cap(s, "source_collection", FL_CAP_COLLECTED, "",
            "%u cubins kept (%llu bytes); %llu %s without a source line", st->cubins,
            (unsigned long long)st->cubin_bytes, (unsigned long long)no_line, unit);
    if (st->cubins_no_lines > 0)
        mark_partial(s, "source_collection", "no_line_info",
                     "%u of %u cubins have no line information: build the CUDA code with "
                     "-lineinfo (nvcc) for file:line",
                     st->cubins_no_lines, st->cubins);
    if (st->cubins_over > 0)
        mark_partial(s, "source_collection", "cubin_bound",
                     "%u cubins not kept: the 64 MiB bound on cubin copies was reached; their "
                     "samples have no source line",
                     st->cubins_over);
}

/* cubin_disassembly's last word: the functions written, and what the
 * disassembler's failures or the bounds left out. */
static void disasm_final(session *s, const fl_trace_stats *st, const fl_trace_counts *n)
{
    if (!is_collected(s, "cubin_disassembly"))
        return;
    if (n->disassembled == 0 && st->disasm_failed > 0) {
        set_cap(s, "cubin_disassembly", FL_CAP_SKIPPED, "disassembler_failed", "%s",
                st->disasm_msg);
        return;
    }
    char done[PATH_MAX + 96];
    snprintf(done, sizeof done, "%s: %llu functions disassembled in %u runs", s->disasm_path,
             (unsigned long long)n->disassembled, st->disasm_runs);
    if (st->disasm_failed > 0)
        mark_partial(s, "cubin_disassembly", "disassembler_failed",
                     "%s; %u runs failed, %u functions left without: %s", done, st->disasm_failed,
                     st->disasm_skipped, st->disasm_msg);
    else if (st->disasm_skipped > 0)
        mark_partial(s, "cubin_disassembly", "functions_skipped",
                     "%s; %u functions left without disassembly (no cubin copy kept for them, or "
                     "the bound of 4096 functions reached)",
                     done, st->disasm_skipped);
    else
        set_cap(s, "cubin_disassembly", FL_CAP_COLLECTED, "", "%s", done);
}

/* The engine a session runs once one of its rungs fell back after init:
 * Trace; under Deep the rung left (Deep -> PcSampling -> Trace). */
static void fell_back(session *s, const fl_trace_stats *st)
{
    gpufl_engine e = GPUFL_ENGINE_TRACE;
    if (s->cfg.profiling_engine == GPUFL_ENGINE_DEEP &&
        st->engines[FL_ENGINE_PC].status == FL_PC_ACTIVE)
        e = GPUFL_ENGINE_PC_SAMPLING;
    else if (s->cfg.profiling_engine == GPUFL_ENGINE_DEEP &&
             st->engines[FL_ENGINE_SASS].status == FL_PC_ACTIVE)
        e = GPUFL_ENGINE_SASS_METRICS;
    s->selected_engine = fl_engine_wire_name(e);
}

/* pc_sampling's last word: a fall-back found after init (a context that
 * refused), no sample at all, or the counts and what was lost. */
static void pc_final(session *s, const cap_engine *r, const fl_trace_stats *st,
                     const fl_trace_counts *n)
{
    const fl_engine_stats *e = &st->engines[r->slot];
    const fl_pc_counters *c = &e->counters.pc;
    if (e->status != FL_PC_ACTIVE) {
        set_cap(s, "pc_sampling", FL_CAP_FALLBACK, engine_reason(r, e->status), "%s", e->message);
        if (is_collected(s, "source_collection"))
            set_cap(s, "source_collection", FL_CAP_FALLBACK, engine_reason(r, e->status), "%s",
                    e->message);
        fell_back(s, st);
        return;
    }
    const char *how = c->method == FL_PC_METHOD_ACTIVITY ? "activity API (PC_SAMPLING records)"
                                                         : "PC Sampling API";
    if (n->samples == 0) {
        set_cap(s, "pc_sampling", FL_CAP_ENABLED_NO_DATA, "enabled_but_no_samples",
                "%s on %u contexts, every 2^%u cycles: no sample was collected (%llu reads; "
                "CUPTI counted %llu samples, %llu in kernels it gives no PCs for)%s",
                how, c->contexts, c->period_log2, (unsigned long long)c->collections,
                (unsigned long long)c->total_samples, (unsigned long long)c->non_user_samples,
                c->contexts ? "" : ": no CUDA context was created");
        return;
    }
    set_cap(s, "pc_sampling", FL_CAP_COLLECTED, "",
            "%s, every 2^%u cycles, %u stall reasons: %llu samples in %llu rows from %llu reads "
            "on %u contexts",
            how, c->period_log2, c->stall_reasons, (unsigned long long)n->samples,
            (unsigned long long)n->sample_rows, (unsigned long long)c->collections, c->contexts);
    if (c->dropped_samples > 0 || c->hw_buffer_full > 0)
        mark_partial(s, "pc_sampling", "samples_dropped",
                     "%llu samples dropped by the hardware (buffer full %llu times): raise "
                     "pc_sampling_period",
                     (unsigned long long)c->dropped_samples, (unsigned long long)c->hw_buffer_full);
    if (c->lost_samples > 0)
        mark_partial(s, "pc_sampling", "samples_lost",
                     "%llu samples not kept: read while no sink was there and the aggregation "
                     "table was full",
                     (unsigned long long)c->lost_samples);
    pc_source_final(s, st, c->no_line_samples, "samples");
    disasm_final(s, st, n);
}

/* pm_sampling's last word: a fall-back found after init (a device that
 * refused), no samples, or the counts and what was dropped. */
static void pm_final(session *s, const cap_engine *r, const fl_trace_stats *st,
                     const fl_trace_counts *n)
{
    const fl_engine_stats *e = &st->engines[r->slot];
    const fl_pm_counters *c = &e->counters.pm;
    if (e->status != FL_PC_ACTIVE) {
        set_cap(s, "pm_sampling", FL_CAP_FALLBACK, engine_reason(r, e->status), "%s", e->message);
        return;
    }
    if (n->pm_rows == 0) {
        set_cap(s, "pm_sampling", FL_CAP_ENABLED_NO_DATA, "enabled_but_no_samples",
                "PM sampling every %u us on %u devices, %llu decodes, no sample%s%s",
                c->interval_us, c->devices, (unsigned long long)c->decodes,
                c->devices ? "" : ": no CUDA context was created", e->message[0] ? "; " : "");
        if (e->message[0])
            mark_partial(s, "pm_sampling", "cupti_error", "%s", e->message);
        return;
    }
    set_cap(s, "pm_sampling", FL_CAP_COLLECTED, "",
            "PM sampling every %u us, %u metrics (%s set): %llu samples, %llu rows, %llu "
            "decodes, %u devices",
            c->interval_us, c->metrics, c->preset, (unsigned long long)c->samples,
            (unsigned long long)n->pm_rows, (unsigned long long)c->decodes, c->devices);
    if (c->overflows > 0)
        mark_partial(s, "pm_sampling", "samples_dropped",
                     "the hardware buffer overflowed in %llu decodes (the oldest samples were "
                     "overwritten): raise pm_sampling_interval_us",
                     (unsigned long long)c->overflows);
    if (c->bad_values == 0 && e->message[0])
        mark_partial(s, "pm_sampling", "incomplete", "%s", e->message);
    if (c->bad_values > 0)
        mark_partial(s, "pm_sampling", "values_dropped",
                     "%llu values left out (not finite, or CUPTI could not evaluate them)%s%s",
                     (unsigned long long)c->bad_values, e->message[0] ? ": " : "", e->message);
}

/* sass_metrics' last word: a fall-back found after init (a context that
 * refused), no row at all, or the counts and what was lost. */
static void sass_final(session *s, const cap_engine *r, const fl_trace_stats *st,
                       const fl_trace_counts *n)
{
    const fl_engine_stats *e = &st->engines[r->slot];
    const fl_sass_counters *c = &e->counters.sass;
    if (e->status != FL_PC_ACTIVE) {
        set_cap(s, "sass_metrics", FL_CAP_FALLBACK, engine_reason(r, e->status), "%s", e->message);
        /* Under Deep source_collection is PC sampling's to say. */
        if (s->cfg.profiling_engine != GPUFL_ENGINE_DEEP && is_collected(s, "source_collection"))
            set_cap(s, "source_collection", FL_CAP_FALLBACK, engine_reason(r, e->status), "%s",
                    e->message);
        fell_back(s, st);
        return;
    }
    if (n->sass_rows == 0) {
        set_cap(s, "sass_metrics", FL_CAP_ENABLED_NO_DATA, "enabled_but_no_samples",
                "%u metrics (%u skipped) on %u contexts: no instruction was counted (%llu "
                "reads)%s",
                c->metrics, c->metrics_skipped, c->contexts, (unsigned long long)c->collections,
                c->contexts ? "" : ": no CUDA context was created");
        return;
    }
    /* What the counts cover: CUPTI counts a function until its first read
     * (plugin/sassmetrics.c). */
    set_cap(s, "sass_metrics", FL_CAP_COLLECTED, "",
            "%u metrics (%u skipped): %llu patched-instruction records in %llu rows from %llu "
            "reads on %u contexts; %s",
            c->metrics, c->metrics_skipped, (unsigned long long)c->records,
            (unsigned long long)n->sass_rows, (unsigned long long)c->collections, c->contexts,
            s->cfg.sass_all_kernels
                ? "every launch of the session counted"
                : "each kernel counted in the first outermost scope it ran in (later scopes' "
                  "launches of it are not: CUPTI counts a function until its first read)");
    if (c->dropped_records > 0)
        mark_partial(s, "sass_metrics", "samples_dropped",
                     "%llu records dropped by CUPTI at disable (not read before it)",
                     (unsigned long long)c->dropped_records);
    if (c->lost_values > 0)
        mark_partial(s, "sass_metrics", "samples_lost",
                     "%llu values not kept: read while no sink was there and the aggregation "
                     "table was full",
                     (unsigned long long)c->lost_values);
    pc_source_final(s, st, c->no_line_values, "SASS values");
}

/* range_profiler's last word: a fall-back found at the first scope (the
 * chip's metrics, a refusal), no range at all, or the counts. */
static void rp_final(session *s, const cap_engine *r, const fl_trace_stats *st,
                     const fl_trace_counts *n)
{
    const fl_engine_stats *e = &st->engines[r->slot];
    const fl_rp_counters *c = &e->counters.rp;
    if (e->status != FL_PC_ACTIVE) {
        set_cap(s, "range_profiler", FL_CAP_FALLBACK, engine_reason(r, e->status), "%s",
                e->message);
        s->selected_engine = fl_engine_wire_name(GPUFL_ENGINE_TRACE);
        return;
    }
    char what[1400], mode[96];
    if (c->per_kernel)
        snprintf(mode, sizeof mode, "kernel ranges (kernel replay, up to %llu per scope)",
                 (unsigned long long)c->max_ranges);
    else
        snprintf(mode, sizeof mode, "scope ranges (user replay)");
    snprintf(what, sizeof what, "%s on %s, %u metrics in %u pass%s (%s)%s%s", mode, c->chip,
             c->metrics, c->passes, c->passes == 1 ? "" : "es", c->scheduled,
             c->left_out[0] ? "; left out: " : "", c->left_out);
    if (n->perf_ranges == 0) {
        set_cap(s, "range_profiler", FL_CAP_ENABLED_NO_DATA, "enabled_but_no_ranges",
                "%s: no range was collected (%llu outermost scopes skipped, %llu ranges "
                "dropped, %llu windows without all passes submitted)",
                what, (unsigned long long)c->skipped, (unsigned long long)c->dropped,
                (unsigned long long)c->incomplete);
        return;
    }
    set_cap(s, "range_profiler", FL_CAP_COLLECTED, "", "%s: %llu ranges written", what,
            (unsigned long long)n->perf_ranges);
    if (c->dropped > 0 || c->incomplete > 0)
        mark_partial(s, "range_profiler", "ranges_dropped",
                     "%llu ranges dropped (CUPTI's image or our queue full), %llu windows "
                     "without all passes submitted",
                     (unsigned long long)c->dropped, (unsigned long long)c->incomplete);
    if (c->skipped > 0)
        mark_partial(s, "range_profiler", "scopes_skipped",
                     "%llu outermost scopes not profiled: another thread's range was open, or "
                     "they ran on another CUDA context (one range at a time, one context)",
                     (unsigned long long)c->skipped);
}

void fl_caps_trace_final(session *s, const fl_trace_stats *st, const fl_trace_counts *n)
{
    put_trace_counts(s, st, n);
    put_stack_counts(s, st);
    mark_trace_losses(s, st, n);
    for (size_t i = N_CAP_ENGINES; i-- > 0;) {
        const cap_engine *r = &cap_engines[i];
        if (r->wants(s->cfg.profiling_engine) && is_collected(s, r->feature))
            r->final(s, r, st, n);
    }
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
    {"cuda_graphs", {FL_T_GRAPH_LAUNCH_EVENT}},
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
        if (here && is_collected(s, feature_types[f].feature))
            mark_partial(s, feature_types[f].feature, "log_dir_removed",
                         "%s/%s.log was removed while recording: its records up to then are "
                         "gone, later ones were not written (shutdown's lines_lost, rows_lost)",
                         s->dir, fl_channel_name(ch));
    }
}

bool fl_caps_mark_losses(session *s)
{
    bool any = false;
    for (size_t f = 0; f < N_FEATURE_TYPES; f++) {
        uint64_t lines[FL_LOSS_CAUSES] = {0}, rows[FL_LOSS_CAUSES] = {0};
        for (size_t k = 0; k < 3 && feature_types[f].types[k] != FL_T_UNKNOWN; k++)
            for (int c = 0; c < FL_LOSS_CAUSES; c++) {
                lines[c] += s->loss.lines[c][feature_types[f].types[k]];
                rows[c] += s->loss.rows[c][feature_types[f].types[k]];
            }
        if (lines[FL_LOSS_WRITE] > 0)
            mark_partial(s, feature_types[f].feature, "write_failed",
                         "%llu rows in %llu lines lost: writing %s/%s.log failed: %s",
                         (unsigned long long)rows[FL_LOSS_WRITE],
                         (unsigned long long)lines[FL_LOSS_WRITE], s->dir,
                         fl_channel_name(s->loss.first_channel), strerror(s->loss.first_errno));
        if (lines[FL_LOSS_REMOVED] > 0)
            mark_partial(s, feature_types[f].feature, "log_dir_removed",
                         "%llu rows in %llu lines not written: the session's files were removed "
                         "while recording",
                         (unsigned long long)rows[FL_LOSS_REMOVED],
                         (unsigned long long)lines[FL_LOSS_REMOVED]);
        any = any || lines[FL_LOSS_WRITE] > 0 || lines[FL_LOSS_REMOVED] > 0;
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
