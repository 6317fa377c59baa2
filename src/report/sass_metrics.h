/*
 * report/sass_metrics.h - SASS-metric rows (profile_sample_batch rows of
 * sample_kind 1) as the report keeps them (sass_metrics.c): per function
 * (kernel) and per source line of a function, the sums of the metrics the
 * report reads - instructions and thread-instructions executed, global
 * loads and stores (requests) and their sectors and ideal sectors, shared
 * loads and stores and wavefronts, branches and divergent branch targets -
 * and what they give: the instruction mix, global-memory coalescing
 * (sectors per request against the ideal) and branch divergence
 * (thread-instructions per warp-instruction against 32).  A quantity whose
 * metric no row carried is unknown (n/a, null), never 0.  Memory follows
 * the distinct functions and lines (keys of the report's budget).
 *
 * Private to report/: collect.c feeds it, sass_render.c renders it.
 */
#ifndef FL_REPORT_SASS_METRICS_H
#define FL_REPORT_SASS_METRICS_H

#include "json_write.h"
#include "report_int.h"

#include <stdbool.h>
#include <stdint.h>

/* The metrics read, by their metric_dict names (sass_metrics.c). */
enum {
    SM_INST,       /* smsp__sass_inst_executed */
    SM_THREAD,     /* smsp__sass_thread_inst_executed */
    SM_GLD,        /* smsp__sass_inst_executed_op_global_ld */
    SM_GST,        /* smsp__sass_inst_executed_op_global_st */
    SM_SECT,       /* smsp__sass_sectors_mem_global */
    SM_SECT_IDEAL, /* smsp__sass_sectors_mem_global_ideal (or the _op_ld/_op_st ideals) */
    SM_SLD,        /* smsp__sass_inst_executed_op_shared_ld */
    SM_SST,        /* smsp__sass_inst_executed_op_shared_st */
    SM_SWAVE,      /* smsp__sass_l1tex_data_pipe_lsu_wavefronts_mem_shared */
    SM_BRANCH,     /* smsp__sass_inst_executed_op_branch */
    SM_DIVERGENT,  /* smsp__sass_branch_targets_threads_divergent */
    SM_N
};

enum { SMG_FUNCTION, SMG_LINE, SMG_KINDS };

/* A function's (fn) or a source line's (fn, file, line) sums; have: a bit
 * per SM_* some row carried. */
typedef struct smgroup {
    uint64_t fn, file, line;
    uint64_t v[SM_N];
    uint32_t have;
} smgroup;

typedef struct fl_sassm {
    fl_u64map kind_of; /* metric_id -> a: SM_* + 1 (0: not read) */
    smgroup *g[SMG_KINDS];
    size_t n_g[SMG_KINDS], cap_g[SMG_KINDS];
    fl_u64map by[SMG_KINDS];
    uint64_t no_line_rows;    /* rows without a source line */
    size_t *order[SMG_KINDS]; /* fl_sassm_finish: by instructions, most first */
} fl_sassm;

/* One row (function_id, metric_id, value, source file and line; file 0:
 * none); false when out of memory or past the budget (r->oom set). */
bool fl_sassm_row(fl_report *r, uint64_t fn, uint64_t metric, uint64_t value, uint64_t file,
                  uint64_t line);
bool fl_sassm_finish(fl_report *r);
void fl_sassm_free(fl_report *r);
size_t fl_sassm_bytes(const fl_report *r);

/* What a group's sums give; false when a metric it needs was not
 * collected. */
typedef struct smderived {
    bool have_mix, have_div, have_req, have_coal, have_ideal_req;
    double pct[SM_N];        /* share of SM_INST: GLD, GST, SLD, SST, BRANCH */
    double other_pct;        /* the rest */
    double threads_per_inst; /* of 32 */
    double warp_eff_pct;     /* threads_per_inst / 32 */
    double sect_per_req;     /* SECT / (GLD + GST) */
    double ideal_per_req;    /* SECT_IDEAL / (GLD + GST) */
    double coalescing_pct;   /* SECT_IDEAL / SECT */
} smderived;
void fl_sassm_derive(const smgroup *g, smderived *d);

/* Renderings (sass_render.c). */
void fl_text_sass_detail(const fl_report *r, int top, fl_buf *b);
void fl_json_sass_detail(const fl_report *r, int top, jw *w);

#endif /* FL_REPORT_SASS_METRICS_H */
