/*
 * report/stalls.h - PC samples (profile_sample_batch rows of sample_kind
 * 0) as the report keeps them (stalls.c): the stall-reason distribution
 * overall, per kernel (a row's corr_id joined to the kernel row of that
 * corr_id), per scope (scope_name_id), per PC and per source line of each
 * kernel, each with its mix of reasons; and the names NVIDIA gives the
 * reasons, with a one-line meaning each (stall_names.c).  Memory follows
 * what is distinct (reasons, kernels, scopes, PCs, lines: keys of the
 * report's budget) plus, only in a session that says it samples PCs, the
 * kernels' correlation ids (8 bytes a launch, at most FL_STALL_JOIN_MAX).
 *
 * Private to report/: collect.c feeds it, text_stalls.c and json_stalls.c
 * render it.  Nothing here prints.
 */
#ifndef FL_REPORT_STALLS_H
#define FL_REPORT_STALLS_H

#include "report_int.h"

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* ------------------------------------------------------------- names */

/* A reason's display name (NVIDIA's, as Nsight Compute's "Warp Stall
 * Reasons" spell them) and what it means, in one line. */
typedef struct fl_stall_info {
    const char *short_name, *display, *meaning;
} fl_stall_info;
/* The reason of a metric_dict name: "smsp__pcsamp_warps_issue_stalled_X"
 * (or "smsp__pcsamp_X", or X itself), with "_not_issued" at its end
 * (*not_issued then set) - X written to buf. */
const char *fl_stall_short(const char *name, char *buf, size_t len, bool *not_issued);
/* The table's entry of a short name (or of an activity-API reason's name,
 * fields.c's fl_stall_reason_name); NULL when it is not in the table. */
const fl_stall_info *fl_stall_info_of(const char *short_name);

/* ------------------------------------------------------------ samples */

#define FL_STALL_JOIN_MAX ((size_t)1 << 23) /* kernel corr ids kept */
#define FL_STALL_MIX 3                      /* reasons shown per PC, line, kernel */

/* One reason, merged by name (both spellings of a metric_dict name). */
typedef struct psreason {
    const char *name;          /* interned: the short name, the activity API's, "stall reason N" */
    const fl_stall_info *info; /* NULL: unknown */
    bool not_issued;
    uint64_t samples;
} psreason;

enum { PS_KERNEL, PS_SCOPE, PS_PC, PS_LINE, PS_BY, PS_KINDS };

/* The samples of a kernel (a: kernel_id; 0: no kernel known), a scope (a:
 * scope_name_id, 0: none), a PC (a: kernel_id, b: function_id, c:
 * pc_offset) or a source line (a: kernel_id, b: source_file_id, c: line;
 * b 0: no line); with report --by op|line, the launch's op (a: id, b:
 * kind) or source line (a: the interned label), 0 0: none (PS_BY). */
typedef struct psgroup {
    uint64_t a, b, c;
    uint64_t samples, not_issued;
    uint64_t file, line; /* a PC's source line (its first row's), 0: none */
} psgroup;

typedef struct fl_stalls {
    bool join_on; /* the session samples PCs: kernel corr ids are kept */
    uint32_t (*corr)[2];
    size_t n_corr, cap_corr;
    bool sorted;
    uint64_t corr_dropped; /* kernel rows past FL_STALL_JOIN_MAX, or corr id > 32 bits */
    /* report --by op|line: corr id -> a, b of its PS_BY group; stack text
     * -> a: its line's interned label (by line). */
    fl_u64map corr_by, line_of;
    psreason *rs;
    size_t n_rs, cap_rs;
    fl_u64map rcache; /* metric_id * 2 + 1, or stall_reason * 2 -> a: index into rs */
    psgroup *g[PS_KINDS];
    size_t n_g[PS_KINDS], cap_g[PS_KINDS];
    fl_u64map by[PS_KINDS]; /* hash of the keys -> a: index into g */
    fl_u64map mix;          /* kind << 62 | group << 16 | reason -> a: samples */
    uint64_t samples, not_issued;
    uint64_t no_kernel; /* samples whose corr_id matched no kernel row */
    /* fl_stalls_finish: the order to list them in (by samples) */
    size_t *order[PS_KINDS];
    size_t *rorder;
} fl_stalls;

/* One PC-sampling row (sample_kind 0) as collect.c reads it. */
typedef struct psrow {
    uint64_t corr, function_id, pc, metric_id, reason, samples, scope, file, line;
    bool have_corr, have_pc, have_metric;
    bool not_issued; /* set by fl_stalls_row: the reason is a "_not_issued" one */
} psrow;

/* The report's stalls, made at the first use; NULL when out of memory. */
fl_stalls *fl_stalls_of(fl_report *r);
/* A record that may say the session samples PCs (job_start's
 * profiling_engine, capture_capabilities' engines and features). */
void fl_stalls_record(fl_report *r, fl_type t, const json_t *rec);
/* A kernel_event_batch: its corr_id -> kernel_id, when join_on. */
void fl_stalls_kernels(fl_report *r, const fl_batch *b);
/* One row; false when out of memory or past the budget (r->oom set). */
bool fl_stalls_row(fl_report *r, psrow *row);
/* The orders; false when out of memory. */
bool fl_stalls_finish(fl_report *r);
void fl_stalls_free(fl_report *r);
size_t fl_stalls_bytes(const fl_report *r);

/* A group's reasons, most samples first (all-sample reasons before the
 * not-issued ones): up to max indices into rs in idx, their samples in n;
 * returns how many. */
size_t fl_stalls_mix(const fl_stalls *ps, int kind, size_t group, size_t *idx, uint64_t *n,
                     size_t max);
/* Whether the kernel rows were kept for the join (false: the samples'
 * kernels are not known). */
static inline bool fl_stalls_joined(const fl_stalls *ps)
{
    return ps && ps->join_on;
}

/* What both renderings say (stalls.c). */
#define FL_STALL_KERNELS_HOT 5 /* kernels whose hot PCs and lines are listed */
/* A reason's display name ("Long Scoreboard", "... (not issued)"; an
 * unknown one as given), in buf. */
const char *fl_stalls_reason_label(const psreason *s, char *buf, size_t len);
/* A kernel_id's name; "(kernel id N, not in kernel_dict)", or for 0
 * "(no kernel: corr_id matched none)", in buf. */
const char *fl_stalls_kernel_label(const fl_report *r, uint64_t kid, char *buf, size_t len);
/* "file.cu:17", or "-" without a file or line (in buf). */
const char *fl_stalls_source_label(const fl_report *r, uint64_t file, uint64_t line, char *buf,
                                   size_t len);
/* The next group of dimension kind that has samples, in their order
 * from *k on (*k moves past it): its index in ps->g[kind], SIZE_MAX
 * after the last. */
size_t fl_stalls_next(const fl_stalls *ps, int kind, size_t *k);
/* Rows listed: top (< 1: 10), and the kernels with hot PCs. */
size_t fl_stalls_top(int top);
size_t fl_stalls_hot_kernels(int top);

/* Renderings: text_stalls.c, json_stalls.c. */
void fl_text_stall_detail(const fl_report *r, int top, fl_buf *b);

#endif /* FL_REPORT_STALLS_H */
