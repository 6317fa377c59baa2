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

#include "report.h"

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define MAX_WARNINGS_KEPT 5      /* reader warnings quoted in the report */
#define DEVICE_UNKNOWN INT64_MIN /* device key of rows that do not say */

/* ========================================================== statistics */

#define KSCOPE_IN 4 /* scope indices a kstat keeps in its second cache line */

typedef struct kstat {
    /* Touched by every row: the first two cache lines (kstats are 64-byte
     * aligned, kernels.c).  min_ns starts at UINT64_MAX, regs_min /
     * regs_max at INT64_MAX / INT64_MIN (a kstat is made for a row, so
     * count >= 1 once it is seen). */
    _Alignas(64) uint64_t count;
    uint64_t total_ns, min_ns, max_ns;
    fl_hist h;
    int64_t regs_min, regs_max;
    /* Rows of the current kernel batch whose GPU time is still to be
     * attributed (by attr, which they share): their time and count. */
    uint64_t pend_ns;
    uint32_t pend_n;
    bool have_regs;
    /* GPU time attribution of the current detail: 0 none known, 1 global,
     * 2 the scopes in scope_idx (indices into the scope table); next to
     * the fields above, which attributing pend_ns reads with them. */
    int attr;
    uint32_t *scope_idx;
    size_t n_scope_idx;
    uint32_t scope_in[KSCOPE_IN]; /* the first of scope_idx, in this line */
    uint64_t attr_seq;            /* the seq of the detail attr is of */
    uint32_t kernel_id;
    /* The most recent detail, and which fields took several values. */
    uint64_t seq;
    fl_kdetail last;
    bool have_detail, grid_varies, block_varies, occ_varies, lim_varies, smem_varies;
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
} dstat;

typedef struct opstat {
    uint64_t count, bytes, time_ns;
} opstat;

typedef struct pmstat {
    uint64_t metric_id, n;
    double sum, min, max;
} pmstat;

typedef struct stallstat {
    uint64_t reason, samples, metric_id;
} stallstat;

typedef struct kdefer {
    uint64_t dur;
    uint32_t k; /* index into fl_report.k, | DQ_HD */
    uint32_t corr;
} kdefer;

typedef struct fnstat {
    uint64_t function_id, samples;
} fnstat;

struct fl_report {
    fl_model *m;
    bool live; /* the session is still recording (fl_report_set_live) */
    /* kernels */
    kstat *k;
    size_t n_k, cap_k;
    fl_u64map k_by_id; /* kernel_id -> a: index */
    /* The same for the small ids (dictionary ids are): k_dense[id] = index
     * + 1 (0: none yet), for id < n_dense. */
    uint32_t *k_dense;
    size_t n_dense;
    size_t last_dev; /* the index of the device of the last kernel row */
    /* Kernel rows waiting for their details (fl_report_kernel_batch); the
     * top of the array, during a kernel batch, lists the kernels with
     * pending time (kstat.pend_n; kdefer.k, from cap_dq - 1 down). */
    kdefer *dq;
    size_t n_dq, cap_dq;
    uint64_t dq_ns, dq_hd; /* their durations, has_details = 1 rows */
    bool dq_reset;         /* one's kernel has an attribution (attr_seq) */
    /* With many kernels (their histograms far larger than the caches),
     * the histogram counters a kernel batch's rows count, counted a few
     * hundred at a time (fl_report_kernel_batch): the misses overlap. */
    uint64_t *hq[256];
    size_t n_hq;
    uint64_t kernel_launches, kernel_ns, kernel_global_ns, kernel_unattributed_ns;
    uint64_t kernel_scoped_ns;
    /* scopes */
    sstat *s;
    size_t n_s, cap_s;
    fl_u64map s_by_name; /* (uintptr_t) name * 2 + nvtx -> a: index */
    fl_u64map open;      /* scope_instance_id -> a: start ns, b: name_id */
    uint64_t scope_unmatched_ends;
    /* devices */
    dstat *d;
    size_t n_d, cap_d;
    /* memcpy by copy_kind (0..255; 256: out of range), memset */
    opstat copies[257];
    opstat memsets;
    uint64_t graphs, graph_ns, syncs, sync_ns, allocs, frees;
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
    pmstat *pm;
    size_t n_pm, cap_pm;
    fl_strpool pool;
    /* the reader */
    bool have_res;
    fl_read_result res;
    uint64_t warnings;
    char *warning_text[MAX_WARNINGS_KEPT];
    bool oom;
};

/* Entries (entries.c). */

/* The scope of that name (interned; NULL: none), made at its first use;
 * *index (if not NULL) its index into r->s.  NULL when out of memory. */
sstat *fl_report_scope(fl_report *r, const char *name, bool nvtx, uint32_t *index);
/* The device of that id, made at its first use; NULL when out of memory. */
dstat *fl_report_device(fl_report *r, int64_t id);

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
    bool have_used;
    double used_peak_mib;
    int64_t used_peak_dev;
    bool have_power;
    double power_mean_sum_w, power_peak_w;
    bool have_energy, energy_partial;
    double energy_j;
    const char *energy_source; /* "counter", "power_integral", "mixed" */
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
/* A kernel's name, or what says it is not in kernel_dict (in buf). */
const char *fl_kernel_label(const fl_report *r, const kstat *k, char *buf, size_t len);
/* A memcpy kind's name, "other" (256: out of range) or "kind N" (in buf). */
const char *fl_copy_label(uint64_t kind, char *buf, size_t len);

#endif /* FL_REPORT_INT_H */
