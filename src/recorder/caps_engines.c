/*
 * recorder/caps_engines.c - the capture_capabilities entries of the CUPTI
 * plugin's profiling engines (PcSampling, PmSampling, SassMetrics,
 * RangeProfiler): one row per engine, each reading its slot of
 * fl_trace_stats.engines.
 *
 * Promises: every engine the options can ask for has its entry (and
 * source_collection one), said from the plugin's start at init and from
 * its counts at the end; an engine that fell back names its cause
 * (reason_code) and the fix; the session's selected_engine is the engine
 * that actually ran.  Adding an engine: its row in cap_engines.
 */
#include "caps_int.h"
#include "say.h"
#include "trace_engine.h"

#include <stdio.h>
#include <string.h>

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
    /* A fall-back after init is one device's: the session's engine stays
     * (else it takes the rung below, fell_back). */
    bool late_per_device;
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

/* A feature that falls back with reason and msg when on, else is not
 * requested: an engine's own row and the source_collection it says. */
static void add_fallback_or_off(session *s, const char *feature, bool on, const char *reason,
                                const char *msg)
{
    fl_caps_add(s, feature, on, on ? FL_CAP_FALLBACK : FL_CAP_NOT_REQUESTED, on ? reason : "", "%s",
                on ? msg : "");
}

/* A feature taken down by an engine that fell back after init. */
static void set_fallback(session *s, const char *feature, const cap_engine *r,
                         const fl_engine_stats *e)
{
    fl_caps_set(s, feature, FL_CAP_FALLBACK, engine_reason(r, e->status), "%s", e->message);
}

/* range_profiler when the RangeProfiler engine was asked for and Trace
 * runs: what the plugin's start said. */
static void add_rp_cap(session *s, const cap_engine *r, const fl_engine_stats *e, bool say_source)
{
    (void)say_source;
    if (e->status != FL_PC_ACTIVE) {
        const char *msg = e->message[0] ? e->message : "the CUPTI plugin did not start it";
        add_fallback_or_off(s, "range_profiler", true, engine_reason(r, e->status), msg);
        return;
    }
    fl_caps_add(s, "range_profiler", true, FL_CAP_COLLECTED, "",
                "CUPTI range profiler: %s; the metric set is chosen for the chip at the first "
                "outermost scope with a CUDA context",
                e->counters.rp.per_kernel
                    ? "one range per kernel launch inside outermost scopes (kernel "
                      "replay, any pass count)"
                    : "one range per outermost scope (user replay, one pass)");
}

/* pc_sampling, source_collection and cubin_disassembly when PC sampling
 * was asked for and Trace runs (the first row that says sources: it
 * always does). */
static void add_pc_caps(session *s, const cap_engine *r, const fl_engine_stats *e, bool say_source)
{
    (void)say_source;
    bool src = s->cfg.enable_source_collection;
    if (e->status != FL_PC_ACTIVE) {
        const char *msg = e->message[0] ? e->message : "the CUPTI plugin did not start it";
        add_fallback_or_off(s, "pc_sampling", true, engine_reason(r, e->status), msg);
        add_fallback_or_off(s, "source_collection", src, engine_reason(r, e->status), msg);
    } else {
        fl_caps_add(s, "pc_sampling", true, FL_CAP_COLLECTED, "",
                    "CUPTI PC sampling every 2^%u cycles, all stall reasons, kernels serialised; "
                    "enabled on each CUDA context, read at each outermost scope's end and when "
                    "the session ends",
                    e->counters.pc.period_log2);
        if (src)
            fl_caps_add(
                s, "source_collection", true, FL_CAP_COLLECTED, "",
                "PC offsets mapped to file:line with cuptiGetSassToSourceCorrelation on the "
                "cubins loaded (kept up to 64 MiB)");
        else
            fl_caps_add(s, "source_collection", false, FL_CAP_NOT_REQUESTED, "", "%s", "");
    }
    if (s->n_ch > FL_CH_SASS)
        fl_caps_add(s, "cubin_disassembly", true, FL_CAP_COLLECTED, "",
                    "%s -c on the cubin of each function sampled, once per function: one "
                    "cubin_disassembly record each on the sass channel",
                    s->disasm_path);
    else
        fl_caps_add(s, "cubin_disassembly", false, FL_CAP_SKIPPED, "disassembler_absent",
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
        add_fallback_or_off(s, "pm_sampling", true, engine_reason(r, e->status),
                            e->message[0] ? e->message : "the CUPTI plugin did not start it");
    else
        fl_caps_add(s, "pm_sampling", true, FL_CAP_COLLECTED, "",
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
        add_fallback_or_off(s, "sass_metrics", true,
                            none ? "not_implemented" : engine_reason(r, e->status), msg);
        if (say_source)
            add_fallback_or_off(s, "source_collection", src, engine_reason(r, e->status), msg);
        return;
    }
    fl_caps_add(s, "sass_metrics", true, FL_CAP_COLLECTED, "",
                "CUPTI SASS metrics per instruction of every kernel run, enabled on each CUDA "
                "context, read at each outermost scope's end and when the session ends");
    if (say_source)
        fl_caps_add(
            s, "source_collection", src, src ? FL_CAP_COLLECTED : FL_CAP_NOT_REQUESTED, "", "%s",
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
     true,
     wants_pm,
     {"mig_device"},
     add_pm_caps,
     pm_final},
    {FL_ENGINE_PC,
     "pc_sampling",
     "PC sampling",
     GPUFL_ENGINE_PC_SAMPLING,
     true,
     false,
     fl_trace_engine_wants_pc,
     {NULL},
     add_pc_caps,
     pc_final},
    {FL_ENGINE_SASS, "sass_metrics", "SASS metrics", GPUFL_ENGINE_SASS_METRICS, true, false,
     fl_trace_engine_wants_sass, RP_REASONS, add_sass_caps, sass_final},
    {FL_ENGINE_RP, "range_profiler", "range profiler", GPUFL_ENGINE_RANGE_PROFILER, false, false,
     wants_rp, RP_REASONS, add_rp_cap, rp_final},
};
#define N_CAP_ENGINES (sizeof cap_engines / sizeof cap_engines[0])

/* The rungs above Trace: each engine the options ask for says what the
 * plugin's start achieved; without the plugin (above_why says why) they
 * fall back to Monitor. */
void fl_caps_engines_add(session *s, bool tracing, const char *above_why)
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
            add_fallback_or_off(s, r->feature, want, above, above_why);
    }
    if (source_said)
        return;
    src = src && s->cfg.enable_source_collection;
    add_fallback_or_off(s, "source_collection", src, above, above_why);
}

/* The engine a session runs: the one asked for while it is active; under
 * Deep the rungs left (Deep -> PcSampling -> Trace; SASS metrics alone say
 * so). */
gpufl_engine fl_caps_engines_selected(session *s, bool tracing)
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
void fl_caps_engines_say(session *s, bool tracing, const char *why, gpufl_engine sel,
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

/* source_collection's last word: the cubins kept and what they lacked. */
static void pc_source_final(session *s, const fl_trace_stats *st, uint64_t no_line,
                            const char *unit)
{
    if (!fl_caps_is_collected(s, "source_collection"))
        return;
    fl_caps_set(s, "source_collection", FL_CAP_COLLECTED, "",
                "%u cubins kept (%llu bytes); %llu %s without a source line", st->cubins,
                (unsigned long long)st->cubin_bytes, (unsigned long long)no_line, unit);
    if (st->cubins_no_lines > 0)
        fl_caps_mark_partial(s, "source_collection", "no_line_info",
                             "%u of %u cubins have no line information: build the CUDA code with "
                             "-lineinfo (nvcc) for file:line",
                             st->cubins_no_lines, st->cubins);
    if (st->cubins_over > 0)
        fl_caps_mark_partial(
            s, "source_collection", "cubin_bound",
            "%u cubins not kept: the 64 MiB bound on cubin copies was reached; their "
            "samples have no source line",
            st->cubins_over);
}

/* cubin_disassembly's last word: the functions written, and what the
 * disassembler's failures or the bounds left out. */
static void disasm_final(session *s, const fl_trace_stats *st, const fl_trace_counts *n)
{
    if (!fl_caps_is_collected(s, "cubin_disassembly"))
        return;
    if (n->disassembled == 0 && st->disasm_failed > 0) {
        fl_caps_set(s, "cubin_disassembly", FL_CAP_SKIPPED, "disassembler_failed", "%s",
                    st->disasm_msg);
        return;
    }
    char done[PATH_MAX + 96];
    snprintf(done, sizeof done, "%s: %llu functions disassembled in %u runs", s->disasm_path,
             (unsigned long long)n->disassembled, st->disasm_runs);
    if (st->disasm_failed > 0)
        fl_caps_mark_partial(s, "cubin_disassembly", "disassembler_failed",
                             "%s; %u runs failed, %u functions left without: %s", done,
                             st->disasm_failed, st->disasm_skipped, st->disasm_msg);
    else if (st->disasm_skipped > 0)
        fl_caps_mark_partial(
            s, "cubin_disassembly", "functions_skipped",
            "%s; %u functions left without disassembly (no cubin copy kept for them, or "
            "the bound of 4096 functions reached)",
            done, st->disasm_skipped);
    else
        fl_caps_set(s, "cubin_disassembly", FL_CAP_COLLECTED, "", "%s", done);
}

/* What the plugin read while no sink was there and its aggregation table
 * was full (PC samples, SASS values) makes the feature partial. */
static void lost_final(session *s, const char *feature, uint64_t lost, const char *what)
{
    if (lost > 0)
        fl_caps_mark_partial(s, feature, "samples_lost",
                             "%llu %s not kept: read while no sink was there and the aggregation "
                             "table was full",
                             (unsigned long long)lost, what);
}

/* A rung (PC sampling, SASS metrics) that fell back after init: its row,
 * source_collection's when it says it, and the engine the session runs
 * instead: Trace; under Deep the rung left (Deep -> PcSampling -> Trace). */
static void fell_back(session *s, const cap_engine *r, const fl_trace_stats *st, bool say_source)
{
    set_fallback(s, r->feature, r, &st->engines[r->slot]);
    if (say_source && fl_caps_is_collected(s, "source_collection"))
        set_fallback(s, "source_collection", r, &st->engines[r->slot]);
    gpufl_engine e = GPUFL_ENGINE_TRACE;
    if (s->cfg.profiling_engine == GPUFL_ENGINE_DEEP &&
        st->engines[FL_ENGINE_PC].status == FL_PC_ACTIVE)
        e = GPUFL_ENGINE_PC_SAMPLING;
    else if (s->cfg.profiling_engine == GPUFL_ENGINE_DEEP &&
             st->engines[FL_ENGINE_SASS].status == FL_PC_ACTIVE)
        e = GPUFL_ENGINE_SASS_METRICS;
    s->selected_engine = fl_engine_wire_name(e);
}

/* pc_sampling's last word while active: no sample at all, or the counts
 * and what was lost. */
static void pc_final(session *s, const cap_engine *r, const fl_trace_stats *st,
                     const fl_trace_counts *n)
{
    const fl_engine_stats *e = &st->engines[r->slot];
    const fl_pc_counters *c = &e->counters.pc;
    const char *how = c->method == FL_PC_METHOD_ACTIVITY ? "activity API (PC_SAMPLING records)"
                                                         : "PC Sampling API";
    if (n->samples == 0) {
        fl_caps_set(s, "pc_sampling", FL_CAP_ENABLED_NO_DATA, "enabled_but_no_samples",
                    "%s on %u contexts, every 2^%u cycles: no sample was collected (%llu reads; "
                    "CUPTI counted %llu samples, %llu in kernels it gives no PCs for)%s",
                    how, c->contexts, c->period_log2, (unsigned long long)c->collections,
                    (unsigned long long)c->total_samples, (unsigned long long)c->non_user_samples,
                    c->contexts ? "" : ": no CUDA context was created");
        return;
    }
    fl_caps_set(
        s, "pc_sampling", FL_CAP_COLLECTED, "",
        "%s, every 2^%u cycles, %u stall reasons: %llu samples in %llu rows from %llu reads "
        "on %u contexts",
        how, c->period_log2, c->stall_reasons, (unsigned long long)n->samples,
        (unsigned long long)n->sample_rows, (unsigned long long)c->collections, c->contexts);
    if (c->dropped_samples > 0 || c->hw_buffer_full > 0)
        fl_caps_mark_partial(s, "pc_sampling", "samples_dropped",
                             "%llu samples dropped by the hardware (buffer full %llu times): raise "
                             "pc_sampling_period",
                             (unsigned long long)c->dropped_samples,
                             (unsigned long long)c->hw_buffer_full);
    lost_final(s, "pc_sampling", c->lost_samples, "samples");
    pc_source_final(s, st, c->no_line_samples, "samples");
    disasm_final(s, st, n);
}

/* pm_sampling's last word while active: no samples, or the counts and
 * what was dropped. */
static void pm_final(session *s, const cap_engine *r, const fl_trace_stats *st,
                     const fl_trace_counts *n)
{
    const fl_engine_stats *e = &st->engines[r->slot];
    const fl_pm_counters *c = &e->counters.pm;
    if (n->pm_rows == 0) {
        fl_caps_set(s, "pm_sampling", FL_CAP_ENABLED_NO_DATA, "enabled_but_no_samples",
                    "PM sampling every %u us on %u devices, %llu decodes, no sample%s%s",
                    c->interval_us, c->devices, (unsigned long long)c->decodes,
                    c->devices ? "" : ": no CUDA context was created", e->message[0] ? "; " : "");
        if (e->message[0])
            fl_caps_mark_partial(s, "pm_sampling", "cupti_error", "%s", e->message);
        return;
    }
    fl_caps_set(s, "pm_sampling", FL_CAP_COLLECTED, "",
                "PM sampling every %u us, %u metrics (%s set): %llu samples, %llu rows, %llu "
                "decodes, %u devices",
                c->interval_us, c->metrics, c->preset, (unsigned long long)c->samples,
                (unsigned long long)n->pm_rows, (unsigned long long)c->decodes, c->devices);
    if (c->overflows > 0)
        fl_caps_mark_partial(
            s, "pm_sampling", "samples_dropped",
            "the hardware buffer overflowed in %llu decodes (the oldest samples were "
            "overwritten): raise pm_sampling_interval_us",
            (unsigned long long)c->overflows);
    if (c->bad_values == 0 && e->message[0])
        fl_caps_mark_partial(s, "pm_sampling", "incomplete", "%s", e->message);
    if (c->bad_values > 0)
        fl_caps_mark_partial(
            s, "pm_sampling", "values_dropped",
            "%llu values left out (not finite, or CUPTI could not evaluate them)%s%s",
            (unsigned long long)c->bad_values, e->message[0] ? ": " : "", e->message);
}

/* sass_metrics' last word while active: no row at all, or the counts and
 * what was lost. */
static void sass_final(session *s, const cap_engine *r, const fl_trace_stats *st,
                       const fl_trace_counts *n)
{
    const fl_engine_stats *e = &st->engines[r->slot];
    const fl_sass_counters *c = &e->counters.sass;
    if (n->sass_rows == 0) {
        fl_caps_set(s, "sass_metrics", FL_CAP_ENABLED_NO_DATA, "enabled_but_no_samples",
                    "%u metrics (%u skipped) on %u contexts: no instruction was counted (%llu "
                    "reads)%s",
                    c->metrics, c->metrics_skipped, c->contexts, (unsigned long long)c->collections,
                    c->contexts ? "" : ": no CUDA context was created");
        return;
    }
    /* What the counts cover: CUPTI counts a function until its first read
     * (plugin/sassmetrics.c). */
    fl_caps_set(s, "sass_metrics", FL_CAP_COLLECTED, "",
                "%u metrics (%u skipped): %llu patched-instruction records in %llu rows from %llu "
                "reads on %u contexts; %s",
                c->metrics, c->metrics_skipped, (unsigned long long)c->records,
                (unsigned long long)n->sass_rows, (unsigned long long)c->collections, c->contexts,
                s->cfg.sass_all_kernels
                    ? "every launch of the session counted"
                    : "each kernel counted in the first outermost scope it ran in (later scopes' "
                      "launches of it are not: CUPTI counts a function until its first read)");
    if (c->dropped_records > 0)
        fl_caps_mark_partial(s, "sass_metrics", "samples_dropped",
                             "%llu records dropped by CUPTI at disable (not read before it)",
                             (unsigned long long)c->dropped_records);
    lost_final(s, "sass_metrics", c->lost_values, "values");
    pc_source_final(s, st, c->no_line_values, "SASS values");
}

/* range_profiler's last word while active: no range at all, or the
 * counts. */
static void rp_final(session *s, const cap_engine *r, const fl_trace_stats *st,
                     const fl_trace_counts *n)
{
    const fl_engine_stats *e = &st->engines[r->slot];
    const fl_rp_counters *c = &e->counters.rp;
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
        fl_caps_set(s, "range_profiler", FL_CAP_ENABLED_NO_DATA, "enabled_but_no_ranges",
                    "%s: no range was collected (%llu outermost scopes skipped, %llu ranges "
                    "dropped, %llu windows without all passes submitted)",
                    what, (unsigned long long)c->skipped, (unsigned long long)c->dropped,
                    (unsigned long long)c->incomplete);
        return;
    }
    fl_caps_set(s, "range_profiler", FL_CAP_COLLECTED, "", "%s: %llu ranges written", what,
                (unsigned long long)n->perf_ranges);
    if (c->dropped > 0 || c->incomplete > 0)
        fl_caps_mark_partial(s, "range_profiler", "ranges_dropped",
                             "%llu ranges dropped (CUPTI's image or our queue full), %llu windows "
                             "without all passes submitted",
                             (unsigned long long)c->dropped, (unsigned long long)c->incomplete);
    if (c->skipped > 0)
        fl_caps_mark_partial(
            s, "range_profiler", "scopes_skipped",
            "%llu outermost scopes not profiled: another thread's range was open, or "
            "they ran on another CUDA context (one range at a time, one context)",
            (unsigned long long)c->skipped);
}

/* Whether row i says source_collection: the first row asked for that
 * does (under Deep, PC sampling rather than SASS metrics). */
static bool says_source(gpufl_engine req, size_t i)
{
    for (size_t j = 0; j < i; j++)
        if (cap_engines[j].sources && cap_engines[j].wants(req))
            return false;
    return cap_engines[i].sources;
}

/* Each engine's last word: a fall-back found after init (a context or a
 * device that refused, the chip's metrics), else what it collected. */
void fl_caps_engines_final(session *s, const fl_trace_stats *st, const fl_trace_counts *n)
{
    gpufl_engine req = s->cfg.profiling_engine;
    for (size_t i = N_CAP_ENGINES; i-- > 0;) {
        const cap_engine *r = &cap_engines[i];
        if (!r->wants(req) || !fl_caps_is_collected(s, r->feature))
            continue;
        if (st->engines[r->slot].status == FL_PC_ACTIVE)
            r->final(s, r, st, n);
        else if (r->late_per_device)
            set_fallback(s, r->feature, r, &st->engines[r->slot]);
        else
            fell_back(s, r, st, says_source(req, i));
    }
}
