/*
 * sampler/monitor_int.h - the monitor's state, shared by monitor.c (the
 * start / stop API, summaries) and monitor_thread.c (the sampling thread).
 * Private to those two files.
 */
#ifndef GP_SAMPLER_MONITOR_INT_H
#define GP_SAMPLER_MONITOR_INT_H

#include "../util/proc.h"
#include "backends/backend.h"
#include "hook.h"
#include "stats.h"
#include "gpu_profile.h"

#include <pthread.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

enum monitor_state { MON_CREATED, MON_RUNNING, MON_STOPPED };

typedef struct slot_state {
    unsigned index;
    gp_device_info info;
    gp_acc acc;
    bool failed;
    gp_status status;
    char error[GP_NOTE_MAX];
    double error_at_s;
    bool have_latest;
    gp_sample latest;
    /* The energy counter's newest reading: read only now and then (slow),
     * so gp_monitor_latest gives it with samples that did not read it. */
    bool have_energy;
    uint64_t energy_mj;
    /* Energy-read schedule (sampler thread only). */
    bool energy_read_once, energy_after_warmup;
    uint64_t energy_last_ns;
    gp_stuck_state stuck; /* "busy but stuck" over the region's samples */
} slot_state;

struct gp_monitor {
    gp_options opts;
    gp_stuck_rule stuck_rule;         /* the default, its stretch in samples */
    unsigned *devices_copy;           /* opts.devices points here */
    int pids_copy[GP_PROC_PIDS_MAX];  /* opts.pids points here */
    int round_pids[GP_PROC_PIDS_MAX]; /* the processes of a round (sampler thread) */
    gp_proc_cache proc_cache;         /* round_pids' tree between rounds (sampler thread) */
    const gp_backend *be;
    void *ctx;
    char note[GP_NOTE_MAX];
    uint64_t interval_ns;
    uint64_t warmup_ns;

    size_t n_slots;
    slot_state *slots;
    gp_summary *summaries;
    gp_device_sample *round; /* scratch for one round, sampler thread only */
    gp_status *round_status;
    gp_error *round_err;
    unsigned *round_flags; /* per slot: GP_READ_* or GP_READ_SKIP */

    pthread_mutex_t mu; /* guards everything the sampler and callers share */
    pthread_cond_t cv;
    bool stop_requested;
    enum monitor_state state;
    pthread_t thread;
    bool thread_started;
    bool thread_ran; /* this region had a sampling thread */

    uint64_t t0_ns, t_end_ns;
    gp_monitor_stats stats;

    gp_round_hook hook;    /* the flight recorder's; zeroed when unused */
    bool first_round_done; /* sampler thread only */

    gp_sample *samples;
    size_t n_samples, cap_samples;
    bool samples_truncated; /* an allocation failed: keeping stopped */

    /* A self-paced producer's health (sampler thread; read after join). */
    uint64_t paced_rounds;        /* rounds it delivered (kept or dropped) */
    uint64_t paced_last_ns;       /* when the last one came; 0: none yet */
    uint64_t paced_gap_ns;        /* the longest wait between two of them */
    uint64_t paced_gap_from_ns;   /* ... which began then */
    uint64_t paced_flood_dropped; /* rounds over the asked rate, dropped */
};

/* A producer that sends nothing for this long (and at least 4 intervals)
 * stalled; one that runs more than this many rounds ahead of the asked
 * rate floods, and its extra rounds are dropped. */
#define GP_STALL_MIN_NS 500000000ull
/* Before its first row, nvidia-smi is starting (that can take a second). */
#define GP_NO_ROW_NS 2000000000ull
#define GP_FLOOD_BURST 10

/* The sampling thread's body (monitor_thread.c): rounds until stop. */
void *gp_monitor_sampler_main(void *arg);

#endif /* GP_SAMPLER_MONITOR_INT_H */
