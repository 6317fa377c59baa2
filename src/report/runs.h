/*
 * report/runs.h - the runs a set of log directories holds (runs.c): every
 * session's job_start read (first lines only), the sessions grouped by
 * job_start's run_id (docs/concepts.md, "Runs"), one run picked to show
 * (the most recent, or --run ID / --session ID), and for each session of
 * that run its figures - GPU time, kernels, copies, synchronization wait,
 * the busiest kernel, NCCL's share - each session read on its own
 * (run.h), so that kernel ids never mix across processes.
 *
 * Memory grows with the number of sessions and their distinct kernels,
 * never with the events.  Nothing here prints: the report's run section
 * (runs_render.c) renders it.
 */
#ifndef FL_REPORT_RUNS_H
#define FL_REPORT_RUNS_H

#include "gpu_profile.h"

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* A rank whose GPU time is off the median of the run's ranks by more
 * than this many percent is a straggler (docs/report.md, "Runs"). */
#define FL_RUNS_STRAGGLER_PCT 20.0

/* One session of a log directory, as its job_start says, and once its run
 * is the one shown, what it recorded. */
typedef struct fl_runs_session {
    char *dir;                 /* the session directory */
    char *session_id, *run_id; /* NULL: job_start has none (run_id: a session of no run) */
    char *host, *app, *kind;   /* hostname, app, session_kind; NULL: not recorded */
    char *rank_source;         /* the launcher's variable, "RANK", ...; NULL: none */
    int64_t pid, rank, local_rank, world_size;
    bool have_pid, have_rank, have_local_rank, have_world_size;
    uint64_t start_ns; /* job_start's ts_ns (wall clock) */
    bool have_start;
    int64_t wall_minus_mono_ns; /* ts_ns - monotonic_ns: this host's wall clock's offset */
    bool have_mono;
    int64_t mtime; /* when last written (fl_read_session_mtime) */
    /* Figures (fl_runs_figures; only the shown run's sessions). */
    bool read; /* the session was read */
    uint64_t kernels, gpu_ns, copies, copy_bytes, copy_ns, syncs, sync_ns, nccl_ns;
    char *busiest; /* the kernel of most GPU time; NULL: none */
    uint64_t busiest_ns;
    char *busiest_op; /* the framework op of most GPU time; NULL: none carried one */
    uint64_t busiest_op_ns;
    /* The source line of most GPU time (the line `report --by line`
     * names); NULL: no launch carried a CPU stack. */
    char *busiest_line;
    uint64_t busiest_line_ns;
} fl_runs_session;

/* One device as the run's telemetry session recorded it
 * (device_metric_batch rows): NaN / 0 samples where a column was null. */
typedef struct fl_runs_device {
    int64_t id;
    uint64_t samples, util_n, used_n, power_n;
    double util_sum, util_max, used_max_mib, power_sum_mw;
} fl_runs_device;

/* A run: its sessions (indices into fl_runs.s), the latest start first. */
typedef struct fl_runs_group {
    char *run_id; /* NULL: one session of no run */
    size_t *idx;
    size_t n;
    uint64_t latest_ns; /* the latest job_start of its sessions */
    size_t newest;      /* its session last written (by mtime, then the greater path) */
} fl_runs_group;

typedef struct fl_runs {
    fl_runs_session *s;
    size_t n, cap;
    fl_runs_group *g;
    size_t ng;
    size_t shown;          /* the group shown (after fl_runs_pick) */
    const char *picked_by; /* "most_recent" | "run" | "session" */
    size_t paths;          /* log directories scanned */
    /* The shown run's device telemetry: gpu-profile's own Monitor session's
     * device rows (fl_runs_figures); telemetry NULL when the run has none. */
    const fl_runs_session *telemetry;
    fl_runs_device *dev;
    size_t n_dev;
    bool oom;
} fl_runs;

void fl_runs_init(fl_runs *rs);
void fl_runs_free(fl_runs *rs);
/* Every session of each path (a log directory or a session directory),
 * grouped by run_id.  GP_ERR_IO naming a path that cannot be read, or
 * when no path holds a session; GP_ERR_NO_MEMORY. */
gp_status fl_runs_scan(fl_runs *rs, const char *const *paths, size_t n, gp_error *err);
/* The run shown: the one of run_id, else the one holding session_id, else
 * the most recent: the one holding the session last written (the one a
 * report of one session has always picked).  GP_ERR_INVALID_ARG when run_id
 * or session_id names none, the message listing those that exist. */
gp_status fl_runs_pick(fl_runs *rs, const char *run_id, const char *session_id, gp_error *err);
/* Reads each session of the shown run for its figures, and the device
 * rows of its first Monitor session (gpu-profile's own: the devices as
 * the whole run used them). */
void fl_runs_figures(fl_runs *rs);
/* The session whose report the other sections give: session_id when
 * given, else the shown run's session of most GPU time (a tie: the lower
 * rank), else its first. */
const fl_runs_session *fl_runs_primary(const fl_runs *rs, const char *session_id);
/* The shown run's median GPU time over its sessions that ran kernels;
 * false when none did. */
bool fl_runs_median_gpu(const fl_runs *rs, uint64_t *median_ns);
/* The order a run's processes are reported and exported in: ranks in
 * order, then those of no rank (the launcher's own) by start; 0 when
 * both tie, the caller's own key breaking it. */
int fl_runs_rank_order(const fl_runs_session *a, const fl_runs_session *b);

/* The sessions a report of the shown run covers, in the order read, into
 * out (at most cap): session_id's alone when given; else the primary
 * session first (its job_start names the report's session), then the
 * run's Monitor session, then the others by rank.  Returns their count. */
struct fl_read_opts;
size_t fl_runs_read_order(const fl_runs *rs, const char *session_id, const fl_runs_session **out,
                          size_t cap);
/* Reads those sessions (runs_read.c) into cb as one session: each
 * session's dictionary ids mapped to run-wide ids by name, device and host
 * rows from the Monitor session only (else each device uuid and host from
 * the first session that has it); res sums the reads (its session_id and
 * session_dir: the first session's).  One session that cannot be read is
 * a warning (res.unreadable_files); none: GP_ERR_IO; GP_ERR_NO_MEMORY
 * when cb's stop or memory stopped a read. */
struct fl_read_cb;
struct fl_read_result;
gp_status fl_runs_read(const fl_runs *rs, const char *session_id, const struct fl_read_opts *opts,
                       const struct fl_read_cb *cb, struct fl_read_result *res, gp_error *err);

#endif /* FL_REPORT_RUNS_H */
