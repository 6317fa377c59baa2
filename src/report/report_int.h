/*
 * report/report_int.h - the report's statistics as the files that build
 * and render them share them: what collect.c and kernels.c sum up while
 * the session streams by (struct fl_report and its per-kernel, per-scope
 * and per-device counters), and what figures.c derives from them once per
 * rendering for text.c and json.c, so that the text and the JSON say the
 * same figures.
 *
 * Private to report/: collect.c, kernels.c, figures.c, text.c, json.c.
 */
#ifndef FL_REPORT_INT_H
#define FL_REPORT_INT_H

#include "gpu_profile.h"
#include "report.h"
#include "../util/buf.h"

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define MAX_WARNINGS_KEPT 5      /* reader warnings quoted in the report */
#define DEVICE_UNKNOWN INT64_MIN /* device key of rows that do not say */
#define FL_DEV_SLOTS 64          /* device ids with a direct slot (fl_report.dev_slot) */

/* ========================================================== statistics */

#define KSCOPE_IN 4 /* scope indices a kstat keeps in its second cache line */

typedef struct kstat {
    /* Touched by every row: the first cache line (kstats are 64-byte
     * aligned, kernels.c).  min_ns starts at UINT64_MAX, regs_min /
     * regs_max at INT64_MAX / INT64_MIN (a kstat is made for a row, so
     * count >= 1 once it is seen; regs_min <= regs_max once a row gave
     * its registers). */
    _Alignas(64) uint64_t count;
    uint64_t total_ns, min_ns, max_ns;
    fl_hist h;
    int64_t regs_min, regs_max;
    /* Rows whose GPU time is still to be attributed (by attr, which they
     * share) are those of count and total_ns beyond these: a row that
     * keeps its kernel's attribution adds nothing else, the others (a
     * detail to take, a row held for its detail) add themselves here and
     * are attributed on their own; kernels.c's attr_fold attributes the
     * rest before attr changes and when the report is finished. */
    uint64_t attr_base_n, attr_base_ns;
    bool have_regs; /* set when the report is finished (regs_min <= regs_max) */
    /* GPU time attribution of the current detail: 0 none known, 1 global,
     * 2 the scopes in scope_idx (indices into the scope table). */
    int attr;
    uint32_t *scope_idx;
    size_t n_scope_idx;
    uint32_t scope_in[KSCOPE_IN]; /* the first of scope_idx, in this line */
    uint64_t attr_seq;            /* the seq of the detail attr is of */
    /* The user_scope (interned) attr was resolved from, when attr_valid:
     * a detail of the same scope leaves attr as it is. */
    const char *attr_scope;
    bool attr_valid;
    uint32_t kernel_id;
    /* The most recent detail, and which fields took several values. */
    uint64_t seq;
    fl_kdetail last;
    bool have_detail, grid_varies, block_varies, occ_varies, lim_varies, smem_varies;
    const char *stack; /* the last CPU stack seen (interned), NULL: none */
    bool stack_varies; /* launches with a stack had several */
} kstat;

typedef struct sstat {
    const char *name; /* interned */
    bool nvtx;
    uint64_t count, total_ns, min_ns, max_ns;
    uint64_t gpu_ns;      /* kernels whose user_scope holds this name */
    uint64_t kernels;     /* their launches */
    uint64_t open_at_end; /* begun, never ended */
    fl_hist h;
} sstat;

typedef struct acc {
    uint64_t n;
    double sum, max;
} acc;

#define FL_GPM_N (FL_COL_DEVMETRIC_NVLINK_RX - FL_COL_DEVMETRIC_SM_ACTIVE + 1)
#define FL_GPM_FIRST_RATE (FL_COL_DEVMETRIC_GPM_PCIE_TX - FL_COL_DEVMETRIC_SM_ACTIVE)

#define FL_STUCK_KEPT 8

/* One stretch of "busy but stuck" samples: the first and the last
 * matching sample's time, and how many matched in a row. */
typedef struct fl_stuck_stretch {
    uint64_t start_ns, end_ns, samples;
} fl_stuck_stretch;

typedef struct dstat {
    int64_t id; /* DEVICE_UNKNOWN: rows that do not say their device */
    /* kernels */
    uint64_t kernels, kernel_ns;
    uint64_t busy_ns, cur_start, cur_end;
    bool have_cur;
    /* device_metric_batch */
    uint64_t samples;
    acc util_gpu, util_mem, temp, power, used, clock_sm, clock_mem;
    double total_mib;
    bool have_total;
    bool have_energy;
    uint64_t energy_first, energy_last, energy_readings;
    bool have_prev_power;
    uint64_t prev_t;
    double prev_power_mw, power_integral_j;
    uint64_t power_pairs;
    /* GPM extension columns, in their order (percent; bytes/s from
     * FL_GPM_FIRST_RATE on). */
    acc gpm[FL_GPM_N];
    /* device_error_event: XIDs the driver reported, the newest code. */
    uint64_t xid_events;
    uint32_t xid_last;
    /* "Busy but stuck": every row through the sampler's own detector
     * (gp_stuck_feed, its default rule), so the report and the run
     * summary cannot disagree; the first FL_STUCK_KEPT stretches kept,
     * the others counted in stuck.episodes. */
    gp_stuck_state stuck;
    uint64_t stuck_run_start_ns;
    fl_stuck_stretch stuck_kept[FL_STUCK_KEPT];
} dstat;

typedef struct opstat {
    uint64_t count, bytes, time_ns;
} opstat;

typedef struct pmstat {
    uint64_t metric_id, n;
    double sum, min, max;
} pmstat;

/* PC samples of one stall reason: a PC Sampling API row names its reason
 * in metric_dict (metric_id != 0; reason is then the device's index), an
 * activity-API row by CUPTI's enum alone (metric_id 0). */
typedef struct stallstat {
    uint64_t reason, samples, metric_id;
} stallstat;

/* sample_kind 1 rows (SASS metrics) of one metric. */
typedef struct sassstat {
    uint64_t metric_id, rows;
    double total;
} sassstat;

/* The range profiler's results (kernel_perf_metric_event per kernel name,
 * perf_metric_event per scope name): per metric (fields.h's FL_PERF_*),
 * the ranges that collected it (GPUFlight writes -1 for one it did not)
 * and their sum. */
typedef struct perfstat {
    const char *name;         /* interned: kernel_name, or the scope's name */
    const char *user_scope;   /* scopes: the first range's user_scope */
    uint64_t ranges, time_ns; /* time_ns: scopes' ranges summed */
    uint64_t n[FL_PERF_COUNT];
    double sum[FL_PERF_COUNT];
    uint64_t invalid; /* hit rates outside 0-100 %: not values, left out */
    uint64_t ordinal; /* kp_ord: the launch_ordinal naming the range */
} perfstat;

/* A launch of a range profiler's session, in the order read (seq), for
 * kernel_perf_metric_event rows named by launch_ordinal. */
typedef struct launchrec {
    uint64_t start_ns;
    uint32_t kernel_id, seq;
} launchrec;
#define MAX_LAUNCH_LOG (1u << 18) /* launches kept for launch_ordinal (4 MiB) */

/* Launches of one CUDA graph: by graph_exec_key (graph_launch_event,
 * graph_node_definition), else by graph_id (our graph_event_batch, or a
 * launch without a key). */
typedef struct graphstat {
    const char *exec_key; /* interned; NULL: keyed by graph_id */
    uint64_t graph_id;
    bool have_graph_id;
    uint64_t launches, time_ns, nodes;
} graphstat;

/* capture_window, per trigger and NVTX name (a session has one; a few
 * kept, the rest counted in capwin_other). */
#define FL_CAPWIN_MAX 8
typedef struct capwin {
    const char *trigger, *name;    /* interned */
    uint64_t count, time_ns, open; /* open: still open when the session ended */
    uint64_t first_start_ns;
} capwin;

/* deep_window_event, per window name. */
typedef struct deepstat {
    const char *name, *engines, *close_reason; /* interned; close_reason: the last */
    uint64_t count, time_ns, launches;
    /* windows a rule opened ("trigger"), and the last one's rule */
    uint64_t triggered;
    const char *rule_id, *metric, *op; /* interned */
    bool have_threshold, have_observed, have_fired;
    double threshold, observed;
    uint64_t fired_ns;
} deepstat;

/* execution_signature, per scope and signature. */
typedef struct sigstat {
    const char *scope, *signature;                    /* interned */
    uint64_t records, launch_count, distinct_kernels; /* the last record's */
} sigstat;

/* An unknown record type's records. */
typedef struct unkstat {
    const char *type; /* interned */
    uint64_t records;
} unkstat;

#define MAX_CONFIGS 16 /* pm_sampling_config / sass_config records kept */
#define MAX_UNKNOWN 64 /* unknown record types listed */

/* A queued histogram count: the bucket's low byte and 64-bit counter
 * (fl_hist_count). */
typedef struct hqslot {
    uint8_t *low;
    uint64_t *c;
} hqslot;

typedef struct kdefer {
    uint64_t dur;
    uint32_t k; /* index into fl_report.k, | DQ_HD */
    uint32_t corr;
} kdefer;

/* Kernel launches grouped by something other than their kernel (by.c):
 * a framework op (kind, id: external correlation) or the CPU stack of
 * the launch (stack, interned; NULL: none); per group and per (group,
 * kernel). */
typedef struct grpstat {
    int64_t kind;
    uint64_t id;
    const char *stack;
    uint64_t launches, gpu_ns;
} grpstat;
typedef struct grpkern {
    uint32_t grp, kernel_id;
    uint64_t launches, gpu_ns;
} grpkern;
typedef struct fl_groups {
    grpstat *g;
    size_t n, cap;
    fl_u64map by; /* key -> a: index into g */
    grpkern *gk;
    size_t n_gk, cap_gk;
    fl_u64map gk_by; /* group index << 32 | kernel_id -> a: index into gk */
    uint64_t launches, gpu_ns;
} fl_groups;

typedef struct fnstat {
    uint64_t function_id, samples;
} fnstat;

struct fl_report {
    fl_model *m;
    bool live; /* the session is still recording (fl_report_set_live) */
    /* The run the session belongs to (fl_report_set_runs; borrowed), and
     * the session the other sections give; NULL: no run section. */
    const struct fl_runs *runs;
    const char *runs_session;
    /* kernels */
    kstat *k;
    size_t n_k, cap_k;
    fl_u64map k_by_id; /* kernel_id -> a: index */
    /* The same for the small ids (dictionary ids are): k_dense[id] = index
     * + 1 (0: none yet), for id < n_dense. */
    uint32_t *k_dense;
    size_t n_dense;
    size_t last_dev; /* the index of the device of the last kernel row */
    /* dev_slot[id] = index into d + 1 (0: not yet) for the small device
     * ids, so rows that alternate between devices find theirs without
     * fl_report_device's search. */
    uint8_t dev_slot[FL_DEV_SLOTS];
    /* Kernel rows waiting for their details (fl_report_kernel_batch). */
    kdefer *dq;
    size_t n_dq, cap_dq;
    uint64_t dq_ns, dq_hd; /* their durations, has_details = 1 rows */
    bool dq_reset;         /* one's kernel has an attribution (attr_seq) */
    /* With many kernels (their histograms far larger than the caches),
     * the histogram counters a kernel batch's rows count, counted a few
     * hundred at a time (fl_report_kernel_batch): the misses overlap. */
    hqslot hq[256];
    size_t n_hq;
    uint64_t kernel_launches, kernel_ns, kernel_global_ns, kernel_unattributed_ns;
    uint64_t kernel_scoped_ns;
    /* Framework ops (by.c: launches with an external id) and, for hotspots
     * by line only (by_line), the launches by CPU stack. */
    fl_groups ops, lines;
    int by;       /* FL_BY_* (report.h) */
    bool by_line; /* collect lines (by == FL_BY_LINE) */
    /* scopes */
    sstat *s;
    size_t n_s, cap_s;
    fl_u64map s_by_name; /* (uintptr_t) name * 2 + nvtx -> a: index */
    fl_u64map open;      /* scope_instance_id -> a: start ns, b: name_id */
    uint64_t scope_unmatched_ends;
    uint64_t scope_rows; /* scope_event_batch rows read */
    /* devices */
    dstat *d;
    size_t n_d, cap_d;
    /* memcpy by copy_kind (0..255; 256: out of range), memset */
    opstat copies[257];
    opstat memsets;
    uint64_t graphs, graph_ns, syncs, sync_ns, allocs, frees;
    /* synchronizations by the CPU stack that waited (syncs.c): interned
     * stack_dict text -> a: count, b: summed duration_ns */
    fl_u64map sync_by_stack;
    /* host */
    uint64_t host_samples;
    acc cpu, ram_used;
    double ram_total_mib;
    bool have_ram_total;
    const char *host_name; /* interned in the report's pool */
    /* stalls, perf metrics */
    stallstat *st;
    size_t n_st, cap_st;
    fnstat *fn;
    size_t n_fn, cap_fn;
    uint64_t pc_samples, sass_rows, other_profile_rows;
    struct fl_stalls *ps; /* PC samples by reason, kernel, scope, PC, line (stalls.h) */
    sassstat *sm;
    size_t n_sm, cap_sm;
    struct fl_sassm *sx; /* SASS metrics per function and source line (sass_metrics.h) */
    pmstat *pm;
    size_t n_pm, cap_pm;
    /* GPUFlight 1.3's records (collect_records.c); the maps: interned
     * name -> a: index (graphs: a graph_id without a key, | 1 << 63). */
    perfstat *kp, *sp; /* per kernel, per scope */
    size_t n_kp, cap_kp, n_sp, cap_sp;
    fl_u64map kp_by_name, sp_by_name;
    graphstat *gr;
    size_t n_gr, cap_gr;
    fl_u64map gr_by_key;
    capwin cw[FL_CAPWIN_MAX];
    size_t n_cw;
    uint64_t capwin_other;
    deepstat *dw;
    size_t n_dw, cap_dw;
    fl_u64map dw_by_name;
    sigstat *sg;
    size_t n_sg, cap_sg;
    fl_u64map sg_by_key;
    json_t *pm_configs, *sass_configs; /* arrays of the records (MAX_CONFIGS) */
    uint64_t pm_configs_more, sass_configs_more;
    /* The sass channel: records, and the distinct functions and source
     * files they hold (interned names in first-seen order). */
    uint64_t cubins, ptxs, sources;
    const char **sass_fn, **sass_src;
    size_t n_sass_fn, cap_sass_fn, n_sass_src, cap_sass_src;
    fl_u64map sass_seen;
    unkstat unknown[MAX_UNKNOWN];
    size_t n_unknown;
    /* GPUFlight's run lifecycle (lifecycle.c): job_start's identity keys,
     * then arrays of the records (MAX_CONFIGS each, repeats dropped). */
    json_t *lc_ident, *lc_seg_start, *lc_seg_end, *lc_run_end, *lc_rules, *lc_quality;
    uint64_t lc_more;
    /* GPUFlight's pre-batch records (legacy.c): interned name * 8 + dict
     * -> a: its id; interned path * 64 + depth -> a: instance * 2 + 1
     * while open. */
    fl_u64map legacy_ids, legacy_open;
    fl_read_cb self; /* fl_report_callbacks' own: where legacy.c's batches go */
    /* kernel_perf_metric_event rows named "0", "1"... (CUPTI's range
     * names) with a launch_ordinal: per ordinal until fl_report_finish
     * names them by the launch log (ll_state 1: kept; -1: not a range
     * profiler's session; 0: not known yet). */
    perfstat *kp_ord;
    size_t n_kp_ord, cap_kp_ord;
    fl_u64map kp_ord_by;
    launchrec *ll;
    size_t n_ll, cap_ll;
    int ll_state;
    uint64_t ll_more; /* launches past MAX_LAUNCH_LOG */
    uint64_t legacy_next, legacy_scopes;
    fl_strpool pool;
    /* the reader */
    bool have_res;
    fl_read_result res;
    uint64_t warnings;
    char *warning_text[MAX_WARNINGS_KEPT];
    bool oom;
    char stop_why[400]; /* fl_report_stop's answer */
};

/* Entries (entries.c). */

/* The report's maps and pool on its model's budget of keys. */
void fl_report_budget_init(fl_report *r);
/* fl_read_cb.stop: why the read must stop (past the budget of keys or of
 * bytes, out of memory), NULL to go on. */
const char *fl_report_stop(void *user);

/* fl_grow, the growth charged to the report's bytes (maps.h's fl_keys):
 * -1 when out of memory or past the cap. */
int fl_report_grow(fl_report *r, void **arr, size_t *cap, size_t need, size_t size);
/* The scope of that name (interned; NULL: none), made at its first use;
 * *index (if not NULL) its index into r->s.  NULL when out of memory. */
sstat *fl_report_scope(fl_report *r, const char *name, bool nvtx, uint32_t *index);
/* One instance of scope s that lasted dur. */
void fl_report_scope_add(fl_report *r, sstat *s, uint64_t dur);
/* The device of that id, made at its first use; NULL when out of memory. */
dstat *fl_report_device(fl_report *r, int64_t id);
/* A new zeroed element at the end of the array *arr (n, cap; elements
 * of size bytes) that its caller searches itself, one key of the budget;
 * NULL when out of memory or past the budget (r->oom set). */
void *fl_report_append(fl_report *r, void **arr, size_t *n, size_t *cap, size_t size);
/* The entry of key in the array *arr (n, cap; elements of size bytes)
 * indexed by map, made zeroed at its first use (*fresh); NULL when out of
 * memory (r->oom set). */
void *fl_report_entry(fl_report *r, fl_u64map *map, void **arr, size_t *n, size_t *cap, size_t size,
                      uint64_t key, bool *fresh);

/* GPUFlight 1.3's records (collect_records.c), called by collect.c. */

/* A record that is not a batch, after the model has seen it. */
void fl_report_gpufl_record(fl_report *r, int channel, fl_type t, const char *type,
                            const json_t *rec);
/* A graph launch (graph_event_batch's rows, graph_launch_event). */
void fl_report_graph_launch(fl_report *r, const char *exec_key, bool have_graph_id,
                            uint64_t graph_id, uint64_t dur);
struct jw;
/* lifecycle.c: job_start's run identity and GPUFlight's lifecycle
 * records; their JSON ("lifecycle") and text (section "capture"): parts of
 * FL_REPORT_SECTIONS' capture row. */
void fl_report_lifecycle(fl_report *r, fl_type t, const json_t *rec);
void fl_report_lifecycle_free(fl_report *r);

/* legacy.c: GPUFlight's pre-batch records, each as a one-row batch
 * through the report's own callbacks (r->self). */
void fl_report_legacy(fl_report *r, fl_type t, const json_t *rec);
void fl_report_legacy_free(fl_report *r);

/* collect_records.c: a launch into the log (kernels.c, every launch while
 * ll_state >= 0), and the rows named by launch_ordinal resolved. */
void fl_report_launch_log(fl_report *r, uint32_t kernel_id, uint64_t start_ns);
void fl_report_perf_ordinals(fl_report *r);

/* An unknown batch type's batch. */
void fl_report_unknown_type(fl_report *r, const char *type);
/* Frees what collect_records.c holds. */
void fl_report_gpufl_free(fl_report *r);

/* Kernel rows (kernels.c), called by collect.c. */

/* The model's kernel rows (fl_model_kernel_fn): batches that
 * fl_report_kernel_batch does not take. */
void fl_report_on_kernel(void *user, const fl_krow *row);
/* A kernel_event_batch of integer cells with dt_ns, kernel_id and
 * duration_ns (the other columns may be missing), read straight from its
 * cells; false: not such a batch, the model takes it. */
bool fl_report_kernel_batch(fl_report *r, const fl_batch *b);
/* The kernel rows waiting for their details, before any record that is
 * not a kernel_detail: their details are known by now. */
void fl_report_dq_flush(fl_report *r);
/* The kernels' time still to be attributed, attributed (kstat.attr_base_n),
 * and have_regs set: once the rows are read, before the figures. */
void fl_report_kernels_done(fl_report *r);

/* ============================================================= figures */

/* What the text and the JSON both say, computed once per rendering
 * (figures.c). */
typedef struct figures {
    uint64_t start_ns, end_ns, duration_ns;
    bool have_start, have_end;
    const char *end_source; /* "shutdown", "last_record", NULL */
    bool crashed;
    /* memcpy totals */
    uint64_t copies, copy_bytes, copy_ns;
    /* device aggregates */
    bool have_util;
    double util_mean;
    /* Over several devices a figure is the sum of theirs (docs/json-schema.md,
     * "Vocabulary"), given only when every device with metric rows has it;
     * a MIG instance whose parent has rows is left out (the parent covers it). */
    size_t metric_devices;
    bool have_used, used_partial; /* partial: some devices have it, not all */
    double used_max_mib;          /* the sum of the devices' maxima */
    bool have_power, power_partial;
    double power_mean_mw, power_max_mw; /* sums of the devices' means, maxima */
    bool have_energy, energy_partial;
    double energy_j;
    const char *energy_source; /* "counter", "power_integral", "mixed" */
    /* What the recorder dropped or its files could not take, from its
     * closing records (figures.c): known only when the session says. */
    bool have_scope_drops, have_metric_drops, have_lost;
    uint64_t scope_events_dropped, metric_rows_dropped, lines_lost, rows_lost;
    /* Scopes begun with no end in the logs lost their ends to the drops
     * (the recorder shut down), rather than being open at the end. */
    bool scope_ends_dropped;
    /* sorted views (indices) */
    size_t *korder, *sorder, *dorder;
    size_t top;
} figures;

/* f from r; false when out of memory (free f even then). */
bool fl_report_figures(const fl_report *r, int top_n, figures *f);
void fl_figures_free(figures *f);
/* Energy of one device: the counter's difference when read twice, else
 * the integral of its power readings; false when neither. */
bool fl_device_energy(const dstat *d, double *j, const char **source);
/* Kernel time on a device over duration_ns (> 0), capped at 100. */
double fl_busy_pct(const dstat *d, uint64_t duration_ns);
/* The union of a device's kernel intervals so far. */
static inline uint64_t fl_busy_of(const dstat *d)
{
    return d->busy_ns + (d->have_cur ? d->cur_end - d->cur_start : 0);
}
/* Whether the read or the report lost anything ("partial read"). */
bool fl_report_partial(const fl_report *r);
/* The order of the report's lists, heaviest first, for a qsort
 * comparator: the most of a first figure (x1 against y1), then of a
 * second (x2, y2), then by name (a stable order). */
int fl_heaviest_first(uint64_t x1, uint64_t y1, uint64_t x2, uint64_t y2, const char *x,
                      const char *y);
/* A kernel's name, or what says it is not in kernel_dict (in buf). */
const char *fl_kernel_label(const fl_report *r, const kstat *k, char *buf, size_t len);
/* A memcpy kind's name, "other" (256: out of range) or "kind N" (in buf). */
const char *fl_copy_label(uint64_t kind, char *buf, size_t len);
/* A stall reason's name: metric_dict's for a PC Sampling API row, CUPTI's
 * activity enum's otherwise; NULL when neither knows it. */
const char *fl_stall_name(const fl_report *r, const stallstat *s);

/* ======================================================= renderings */

/* ========================================================= sections */

/* The report's sections, one row each, in the order both renderings
 * write them: X(bit, (text parts), (json parts)) - bit its GPUFL_SECTION_*
 * (gpufl.h), then the functions that render it, called in order, each
 * appending its part from the figures of fl_report_figures (text: the
 * section's first part brings its leading blank line, so a section asked
 * alone is byte for byte its part of the whole; JSON: its keys).
 * Promises: a row added here is rendered by both and selectable by its
 * bit; nothing else in report/ names a section's bit. */
#define FL_REPORT_SECTIONS(X)                                                                      \
    X(GPUFL_SECTION_RUN, (fl_text_sec_run), (fl_json_sec_run))                                     \
    X(GPUFL_SECTION_SUMMARY, (fl_text_sec_summary), (fl_json_session, fl_json_sec_summary))        \
    X(GPUFL_SECTION_SCOPES, (fl_text_sec_scopes, fl_text_signatures), (fl_json_sec_scopes))        \
    X(GPUFL_SECTION_HOTSPOTS, (fl_text_sec_hotspots, fl_text_graphs),                              \
      (fl_json_sec_hotspots, fl_json_graphs))                                                      \
    X(GPUFL_SECTION_OPS, (fl_text_sec_ops), (fl_json_sec_ops))                                     \
    X(GPUFL_SECTION_MEMORY, (fl_text_sec_memory), (fl_json_sec_memory))                            \
    X(GPUFL_SECTION_DEVICES, (fl_text_sec_devices), (fl_json_sec_devices))                         \
    X(GPUFL_SECTION_HOST, (fl_text_sec_host), (fl_json_sec_host))                                  \
    X(GPUFL_SECTION_STALLS, (fl_text_stalls), (fl_json_stalls, fl_json_sass))                      \
    X(GPUFL_SECTION_PERF, (fl_text_perf), (fl_json_perf))                                          \
    X(GPUFL_SECTION_CAPTURE,                                                                       \
      (fl_text_sec_capture, fl_text_capture_windows, fl_text_deep_windows, fl_text_lifecycle),     \
      (fl_json_sec_capture, fl_json_capture_windows, fl_json_deep_windows, fl_json_lifecycle))     \
    X(GPUFL_SECTION_READ, (fl_text_sec_read), (fl_json_sec_read))

/* The most parts a row's rendering has (sections.c's rows are arrays). */
#define FL_SECTION_PARTS 4

struct jw;
/* One argument for every part, so that a row can name its functions
 * as they are. */
typedef struct fl_section_in {
    const fl_report *r;
    const figures *f;
    int top_n;
} fl_section_in;
typedef void fl_section_text_fn(const fl_section_in *in, fl_buf *b);
typedef void fl_section_json_fn(const fl_section_in *in, struct jw *w);

/* The parts the rows name.  text.c / json.c: each section's own part;
 * runs_render.c: the run; text_launch.c: graph launches, execution
 * signatures, capture and deep windows; text_profile.c /
 * json_profile.c: stall reasons, SASS metrics, the sass channel, PM
 * sampling and the range profiler; lifecycle.c: GPUFlight's lifecycle
 * records. */
fl_section_text_fn fl_text_sec_run, fl_text_sec_summary, fl_text_sec_scopes, fl_text_signatures,
    fl_text_sec_hotspots, fl_text_graphs, fl_text_sec_ops, fl_text_sec_memory, fl_text_sec_devices,
    fl_text_sec_host, fl_text_stalls, fl_text_perf, fl_text_sec_capture, fl_text_capture_windows,
    fl_text_deep_windows, fl_text_lifecycle, fl_text_sec_read;
fl_section_json_fn fl_json_sec_run, fl_json_session, fl_json_sec_summary, fl_json_sec_scopes,
    fl_json_sec_hotspots, fl_json_graphs, fl_json_sec_ops, fl_json_sec_memory, fl_json_sec_devices,
    fl_json_sec_host, fl_json_stalls, fl_json_sass, fl_json_perf, fl_json_sec_capture,
    fl_json_capture_windows, fl_json_deep_windows, fl_json_lifecycle, fl_json_sec_read;

/* A row as the renderings see it (sections.c: FL_REPORT_SECTIONS in
 * order, parts NULL past the row's last): text.c renders the rows whose
 * bit is asked for, json.c all. */
typedef struct fl_report_section {
    unsigned bit; /* GPUFL_SECTION_* */
    fl_section_text_fn *text[FL_SECTION_PARTS];
    fl_section_json_fn *json[FL_SECTION_PARTS];
} fl_report_section;
extern const fl_report_section fl_report_sections[];
extern const size_t fl_report_n_sections;

/* by.c: a launch's framework op (kind > 0) and CPU stack (by_line), as
 * kernels.c reads its rows; the ops section and hotspots --by op|line. */
void fl_report_op_row(fl_report *r, int64_t kind, uint64_t id, uint32_t kernel_id, uint64_t dur);
void fl_report_line_row(fl_report *r, const char *stack, uint32_t kernel_id, uint64_t dur);
void fl_report_by_free(fl_report *r);
/* The line a CPU stack ("outer|...|inner"; NULL: none) was launched from:
 * a Python frame, else the innermost frame that is the program's
 * (docs/report.md, "Hotspots by op or line"), into buf. */
void fl_by_line_label(const char *stack, char *buf, size_t cap);
/* The framework op of most GPU time among kernel_id's launches, into buf;
 * false when none of them carried one. */
bool fl_by_kernel_op(const fl_report *r, uint32_t kernel_id, char *buf, size_t cap);
/* Hotspots grouped by op or line (r->by), instead of the kernels'. */
void fl_text_hotspots_by(const fl_report *r, int top, fl_buf *b);
void fl_json_hotspots_by(const fl_report *r, int top, struct jw *w);

/* Synchronizations (syncs.c): a batch's rows counted, and by CPU stack
 * (our stack_id column into stack_dict); the top stacks by wait as text
 * lines under the summary's "other" line. */
#define FL_SYNC_STACKS_TOP 5
void fl_report_sync_batch(fl_report *r, const fl_batch *b);
void fl_text_sync_stacks(const fl_report *r, fl_buf *b);
void fl_report_syncs_free(fl_report *r);

#endif /* FL_REPORT_INT_H */
