/*
 * report/run.h - a run's summary: the sessions one run wrote (one per CUDA
 * process, <log_path>/<session_id>/), each read by the session reader and
 * summed into one fl_run - kernel launches and GPU time, the kernels by
 * total GPU time (merged by name across sessions: kernel ids are per
 * session), memcpy per direction, memset, PC sampling's stall reasons,
 * the SASS metrics' sums, RangeProfiler's ranges, and what each session's
 * last capture_capabilities says was not fully collected.
 *
 * Never fails on a bad log: what it could not use is counted (bad_lines,
 * bad_rows, dropped), an allocation that failed sets oom.  Memory grows
 * with what is distinct (kernels, stall reasons, capabilities, engines),
 * never with the events.  Nothing here prints: the command renders it
 * (cli/trace.c).
 */
#ifndef FL_REPORT_RUN_H
#define FL_REPORT_RUN_H

#include "gpu_profile.h"

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* The memcpy directions the summary sums apart, by the wire's copy_kind
 * (1 HtoD, 2 DtoH, 8 DtoD, 10 PtoP, anything else other). */
enum fl_run_copy {
    FL_RUN_COPY_HTOD,
    FL_RUN_COPY_DTOH,
    FL_RUN_COPY_DTOD,
    FL_RUN_COPY_PTOP,
    FL_RUN_COPY_OTHER,
    FL_RUN_COPY_KINDS
};

typedef struct fl_run_kernel {
    char *name;
    uint64_t calls, total_ns;
} fl_run_kernel;

/* PC samples of one stall reason (its display name), all sessions'. */
typedef struct fl_run_stall {
    char *name;
    uint64_t samples;
} fl_run_stall;

typedef struct fl_run_ops {
    uint64_t count, bytes, time_ns;
} fl_run_ops;

/* A capability (feature) that was not fully collected, with the number of
 * sessions whose last capture_capabilities said so. */
typedef struct fl_run_cap {
    char *feature, *status, *message; /* status: fallback | partial */
    size_t processes;
} fl_run_cap;

/* A selected_engine, with the number of sessions that ran it. */
typedef struct fl_run_engine {
    char *engine;    /* wire name, "nvidia.trace" */
    char *requested; /* requested_engine of the first session counted */
    char *message;   /* first fallback message when engine != requested, else NULL */
    size_t processes;
} fl_run_engine;

/* One process's capture windows (capture_window records), for a session
 * that asked for windows (its capture_capabilities' capture_windows
 * requested) or wrote any. */
typedef struct fl_run_capture {
    long long pid, rank;  /* job_start's; rank -1 when the launcher gave none */
    char *trigger;        /* "cudaProfilerApi", "nvtx:NAME", "time"; "" with no window */
    uint32_t windows;     /* capture_window records */
    uint32_t open_at_end; /* of them, still open at shutdown */
    uint64_t captured_ns; /* their durations summed */
} fl_run_capture;

typedef struct fl_run {
    size_t processes; /* sessions read: one per CUDA process */
    uint64_t kernel_launches, kernel_ns;
    fl_run_kernel *kernels; /* merged by name, by total_ns descending (after finish) */
    size_t n_kernels, cap_kernels;
    /* The launches' framework ops (external correlation; op_dict names
     * ours, "<kind>#<id>" the others), as the kernels. */
    fl_run_kernel *ops;
    size_t n_ops, cap_ops;
    /* Set before the first session to read the launches by source line
     * (run_lines.c; the line `report --by line` names), as the kernels;
     * rows without a CPU stack count toward none. */
    bool want_lines;
    fl_run_kernel *lines;
    size_t n_lines, cap_lines;
    fl_run_ops copies[FL_RUN_COPY_KINDS], memsets;
    fl_run_ops syncs;     /* synchronization_event_batch rows: count, time_ns (bytes 0) */
    uint64_t pc_samples;  /* PcSampling's samples ("_not_issued" subsets left out) */
    fl_run_stall *stalls; /* by reason, by samples descending (after finish) */
    size_t n_stalls, cap_stalls;
    fl_run_cap *caps;
    size_t n_caps, cap_caps;
    fl_run_engine *engines;
    size_t n_engines, cap_engines;
    uint64_t bad_lines; /* lines that are not a JSON object with a string "type", or torn
                           (no '\n': a crash cuts the last); fl_read_result.bad_lines */
    uint64_t bad_rows;  /* records the reader could not use (bad_records: a batch whose rows
                           do not match its columns is one), and records or rows of a type
                           the summary reads with a missing or bad field */
    uint64_t dropped;   /* records of another session_id (fl_read_result.other_session) */
    int oom;            /* an allocation failed: the figures may be short */
    /* SassMetrics' rows (sample_kind 1) and the sums of the metrics the
     * summary uses (fl_sass_metric_kind 0..5), a bit each in sass_have
     * when a row carried it. */
    uint64_t sass_rows;
    uint64_t sass_v[6];
    unsigned sass_have;
    uint64_t perf_ranges;     /* RangeProfiler: perf_metric_event + kernel_perf_metric_event */
    fl_run_capture *captures; /* per process, in the order read */
    size_t n_captures, cap_captures;
} fl_run;

void fl_run_init(fl_run *r);
void fl_run_free(fl_run *r);
/* Reads one session directory into r with fl_read_session (reader/read.h):
 * every channel file in it, plain and gzipped, the records common to every
 * channel once; a pending signal does not stop it.  A directory that is
 * no session directory (no readable channel file directly in it: a
 * session below it or flat-layout files are not taken) adds nothing:
 * GP_ERR_INVALID_ARG, or the reader's status, with err naming it. */
gp_status fl_run_add_session(fl_run *r, const char *session_dir, gp_error *err);
/* Sorts what was read; call once, after the last session. */
void fl_run_finish(fl_run *r);
/* The sessions dirs[0..n) added, then finished: GP_OK, or the first
 * failure's status and message (the other directories still added). */
gp_status fl_run_read(fl_run *r, const char *const *dirs, size_t n, gp_error *err);

/* What the summary reads of its rows (stall_names.c, sass_metrics.c). A
 * PC-sampling row's stall reason as the summary names it: NVIDIA's
 * display name of metric_dict's name (stall_names.c's table; a name not
 * in it as given), or, with no name, of the activity API's reason number -
 * written to buf; *not_issued set for a "_not_issued" reason (a subset of
 * its samples, never added to a total). */
const char *fl_stall_label(const char *metric_name, uint64_t reason, char *buf, size_t len,
                           bool *not_issued);
/* The kind of a SASS metric's metric_dict name (sass_metrics.h's SM_*:
 * 0 instructions executed, 1 thread-instructions, 2 global loads, 3
 * global stores, 4 global sectors, 5 their ideal, ...); -1: a metric the
 * report does not read. */
int fl_sass_metric_kind(const char *name);

#endif /* FL_REPORT_RUN_H */
