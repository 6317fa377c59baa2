/*
 * sampler/monitor.c - the start/stop monitor (the seed's GpuMonitor) and its
 * sampling thread.
 *
 * Promises: options are validated before anything is opened; the sampling
 * thread schedules rounds on absolute CLOCK_MONOTONIC deadlines (no drift
 * accumulates; an overrunning round skips the deadlines it missed and counts
 * them); a device that fails stops alone and keeps its error for its
 * summary; stop() returns promptly whatever the backend does; signals are
 * never delivered to the sampling thread.
 */
#include "../util/clock.h"
#include "../util/error.h"
#include "../util/proc.h"
#include "../util/thread.h"
#include "backends/backend.h"
#include "hook.h"
#include "options.h"
#include "stats.h"
#include "gpu_profile.h"

#include <math.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

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

/* Decides the device indices to sample; *out is malloc'd. */
static gp_status resolve_devices(gp_monitor *m, gp_error *err)
{
    const gp_options *o = &m->opts;
    unsigned count = 0;
    bool none = m->be == &gp_backend_none;

    if (!none) {
        gp_status st = m->be->device_count(m->ctx, &count, err);
        if (st != GP_OK)
            return st;
    }
    size_t n = o->n_devices > 0 ? o->n_devices : (o->device == GP_ALL_DEVICES ? count : 1);
    if (none && n == 0)
        n = 1;                           /* a dry run still reports one (empty) device */
    if (n == 0 || (!none && count == 0)) /* count - 1 below needs a GPU */
        return gp_error_set(err, GP_ERR_DEVICE_NOT_FOUND,
                            "%s sees no GPU: check that the driver is loaded and the device is "
                            "visible (CUDA_VISIBLE_DEVICES, container --gpus)",
                            m->be->name);
    m->slots = calloc(n, sizeof *m->slots);
    m->summaries = calloc(n, sizeof *m->summaries);
    m->round = calloc(n, sizeof *m->round);
    m->round_status = calloc(n, sizeof *m->round_status);
    m->round_err = calloc(n, sizeof *m->round_err);
    m->round_flags = calloc(n, sizeof *m->round_flags);
    if (!m->slots || !m->summaries || !m->round || !m->round_status || !m->round_err ||
        !m->round_flags)
        return gp_error_set(err, GP_ERR_NO_MEMORY, "out of memory for %zu devices", n);
    m->n_slots = n;
    for (size_t i = 0; i < n; i++) {
        unsigned idx = o->n_devices > 0              ? o->devices[i]
                       : o->device == GP_ALL_DEVICES ? (unsigned)i
                                                     : (unsigned)o->device;
        if (!none && idx >= count) {
            if (count == 1)
                return gp_error_set(err, GP_ERR_DEVICE_NOT_FOUND,
                                    "device %u does not exist: %s sees 1 device (0)", idx,
                                    m->be->name);
            return gp_error_set(err, GP_ERR_DEVICE_NOT_FOUND,
                                "device %u does not exist: %s sees %u devices (0-%u)", idx,
                                m->be->name, count, count - 1);
        }
        slot_state *s = &m->slots[i];
        s->index = idx;
        s->info.index = idx;
        if (!none) {
            gp_error e;
            gp_error_clear(&e);
            gp_status st = m->be->device_info(m->ctx, idx, &s->info, &e);
            if (st == GP_ERR_TIMEOUT) {
                /* A device that does not answer is reported as failed from
                 * the start; the others are sampled. */
                s->info.index = idx;
                s->failed = true;
                s->status = st;
                snprintf(s->error, sizeof s->error, "%s", e.message);
                s->error_at_s = 0.0;
            } else if (st != GP_OK) {
                if (err)
                    *err = e;
                return st;
            }
        }
    }
    return GP_OK;
}

gp_status gp_monitor_create(const gp_options *opts, gp_monitor **out, gp_error *err)
{
    gp_error_clear(err);
    if (!out)
        return gp_error_set(err, GP_ERR_INVALID_ARG, "gp_monitor_create: out is NULL");
    *out = NULL;
    gp_options defaults;
    opts = gp_options_or_defaults(opts, &defaults);
    gp_status st = gp_options_validate(opts, err);
    if (st != GP_OK)
        return st;

    gp_monitor *m = calloc(1, sizeof *m);
    if (!m)
        return gp_error_set(err, GP_ERR_NO_MEMORY, "out of memory for a monitor");
    m->opts = *opts;
    if (opts->n_devices > 0) {
        m->devices_copy = malloc(opts->n_devices * sizeof *m->devices_copy);
        if (!m->devices_copy) {
            free(m);
            return gp_error_set(err, GP_ERR_NO_MEMORY, "out of memory for the device list");
        }
        memcpy(m->devices_copy, opts->devices, opts->n_devices * sizeof *m->devices_copy);
        m->opts.devices = m->devices_copy;
    }
    if (opts->n_pids > 0) {
        memcpy(m->pids_copy, opts->pids, opts->n_pids * sizeof m->pids_copy[0]);
        m->opts.pids = m->pids_copy;
    }
    m->interval_ns = (uint64_t)llround(opts->interval_s * 1e9);
    m->warmup_ns = (uint64_t)llround(opts->warmup_s * 1e9);
    gp_cond_init_mono(&m->cv);
    pthread_mutex_init(&m->mu, NULL);

    st = gp_options_open_backend(&m->opts, &m->be, &m->ctx, m->note, sizeof m->note, err);
    if (st == GP_OK)
        st = resolve_devices(m, err);
    if (st != GP_OK) {
        gp_monitor_destroy(m);
        return st;
    }
    *out = m;
    return GP_OK;
}

static void keep_sample(gp_monitor *m, const gp_sample *s)
{
    if (m->samples_truncated)
        return;
    if (m->n_samples == m->cap_samples) {
        size_t cap = m->cap_samples ? m->cap_samples * 2 : 1024;
        gp_sample *p = realloc(m->samples, cap * sizeof *p);
        if (!p) {
            m->samples_truncated = true;
            return;
        }
        m->samples = p;
        m->cap_samples = cap;
    }
    m->samples[m->n_samples++] = *s;
}

/* Records one device's reading; the caller holds m->mu. */
static void record_locked(gp_monitor *m, size_t slot, uint64_t t_mono, uint64_t t_wall,
                          const gp_device_sample *ds)
{
    slot_state *s = &m->slots[slot];
    gp_acc_add(&s->acc, t_mono, ds);
    (void)gp_stuck_feed(&s->stuck, &m->stuck_rule, ds);
    s->latest.t_mono_ns = t_mono;
    s->latest.t_wall_ns = t_wall;
    s->latest.slot = (uint32_t)slot;
    s->latest.device_index = s->index;
    s->latest.m = *ds;
    s->have_latest = true;
    if (ds->valid & GP_M_ENERGY) {
        s->have_energy = true;
        s->energy_mj = ds->energy_mj;
    }
    m->stats.device_samples++;
    if (m->opts.keep_samples)
        keep_sample(m, &s->latest);
}

static void fail_slot_locked(gp_monitor *m, size_t slot, uint64_t t_mono, gp_status st,
                             const char *msg)
{
    slot_state *s = &m->slots[slot];
    if (s->failed)
        return;
    s->failed = true;
    s->status = st;
    snprintf(s->error, sizeof s->error, "%s", msg && *msg ? msg : gp_strerror(st));
    s->error_at_s = t_mono > m->t0_ns ? (double)(t_mono - m->t0_ns) / 1e9 : 0.0;
}

/* Whether slot s reads the (slow) energy counter in the round at t_mono:
 * the first round, the first round after warmup and the last round bound
 * the statistics window, and a reading every GP_ENERGY_PERIOD_NS lets the
 * statistics notice a counter reset on a long run. */
static unsigned read_flags(gp_monitor *m, slot_state *s, uint64_t t_mono, bool last)
{
    bool after_warmup = t_mono - m->t0_ns >= m->warmup_ns;
    bool due = !s->energy_read_once || last || (after_warmup && !s->energy_after_warmup) ||
               t_mono - s->energy_last_ns >= GP_ENERGY_PERIOD_NS;
    if (!due)
        return 0;
    s->energy_read_once = true;
    s->energy_last_ns = t_mono;
    if (after_warmup)
        s->energy_after_warmup = true;
    return GP_READ_ENERGY;
}

/* The hook's gate: the first round is always read (the recorder's
 * job_start shows it), later ones only while the gate is open. */
static bool round_wanted(gp_monitor *m)
{
    bool first = !m->first_round_done;
    m->first_round_done = true;
    return first || !m->hook.gate || m->hook.gate(m->hook.user);
}

static void hook_round(gp_monitor *m, uint64_t t_mono, uint64_t t_wall)
{
    for (size_t i = 0; m->opts.on_sample && i < m->n_slots; i++) {
        if (m->round_status[i] != GP_OK)
            continue;
        gp_sample s = {.t_mono_ns = t_mono,
                       .t_wall_ns = t_wall,
                       .slot = (uint32_t)i,
                       .device_index = m->slots[i].index,
                       .m = m->round[i]};
        m->opts.on_sample(&s, m->opts.on_sample_user);
    }
    if (m->hook.on_round)
        m->hook.on_round(m->hook.user, t_mono, t_wall, m->round, m->round_status, m->round_err,
                         m->n_slots);
}

/* The processes this round attributes to (the profiled command starts
 * children as it runs: the tree is read again whenever a task was created
 * or reaped on the system since the last reading, asked at most every
 * 50 ms, and every second). */
static void round_pids(gp_monitor *m)
{
    const gp_options *o = &m->opts;
    if (o->n_pids == 0 || !m->be->set_pids)
        return;
    size_t n = o->n_pids;
    if (o->pid_tree)
        n = gp_proc_tree_cached(&m->proc_cache, gp_now_mono_ns(), o->pids, o->n_pids, m->round_pids,
                                GP_PROC_PIDS_MAX);
    else
        memcpy(m->round_pids, o->pids, n * sizeof m->round_pids[0]);
    m->be->set_pids(m->ctx, m->round_pids, n);
}

/* One polled round: read every live device, then record under one lock. */
static void polled_round(gp_monitor *m, bool last)
{
    if (!round_wanted(m))
        return;
    round_pids(m);
    uint64_t t_mono = gp_now_mono_ns();
    uint64_t t_wall = gp_now_wall_ns();
    for (size_t i = 0; i < m->n_slots; i++) {
        m->round_status[i] = GP_ERR_STATE; /* "not read" */
        m->round_flags[i] = GP_READ_SKIP;
        if (m->slots[i].failed || (!m->be->read && !m->be->read_round))
            continue; /* only the sampler thread sets failed, so no lock is needed */
        m->round_err[i].message[0] = '\0';
        m->round_flags[i] = read_flags(m, &m->slots[i], t_mono, last);
        if (!m->be->read_round)
            m->round_status[i] =
                m->be->read(m->ctx, i, m->round_flags[i], &m->round[i], &m->round_err[i]);
    }
    if (m->be->read_round) /* one sleep of this thread per round, not one per device */
        m->be->read_round(m->ctx, m->n_slots, m->round_flags, m->round, m->round_status,
                          m->round_err);
    pthread_mutex_lock(&m->mu);
    m->stats.ticks++;
    for (size_t i = 0; i < m->n_slots; i++) {
        if (m->round_status[i] == GP_OK)
            record_locked(m, i, t_mono, t_wall, &m->round[i]);
        else if (m->round_status[i] != GP_ERR_STATE)
            fail_slot_locked(m, i, t_mono, m->round_status[i], m->round_err[i].message);
    }
    pthread_mutex_unlock(&m->mu);
    hook_round(m, t_mono, t_wall);
}

static void run_polled(gp_monitor *m)
{
    uint64_t next = m->t0_ns;
    for (;;) {
        polled_round(m, false);
        next += m->interval_ns;
        uint64_t now = gp_now_mono_ns();
        if (now >= next) {
            /* Overran: skip the deadlines already past, keep the phase. */
            uint64_t missed = (now - next) / m->interval_ns + 1;
            next += missed * m->interval_ns;
            pthread_mutex_lock(&m->mu);
            m->stats.missed_ticks += missed;
            pthread_mutex_unlock(&m->mu);
        }
        struct timespec ts = {(time_t)(next / 1000000000ull), (long)(next % 1000000000ull)};
        pthread_mutex_lock(&m->mu);
        while (!m->stop_requested && gp_now_mono_ns() < next)
            pthread_cond_timedwait(&m->cv, &m->mu, &ts);
        bool stop = m->stop_requested;
        pthread_mutex_unlock(&m->mu);
        if (stop)
            break;
    }
    polled_round(m, true); /* the last sample, at stop */
}

/* Books a round the producer delivered at t_mono; true when it comes
 * faster than the asked rate allows (GP_FLOOD_BURST rounds of slack): it is
 * dropped, and counted. */
static bool paced_round_floods(gp_monitor *m, uint64_t t_mono)
{
    /* Gaps between rows only: nvidia-smi's start may take a while. */
    if (m->paced_last_ns && t_mono - m->paced_last_ns > m->paced_gap_ns) {
        m->paced_gap_ns = t_mono - m->paced_last_ns;
        m->paced_gap_from_ns = m->paced_last_ns;
    }
    m->paced_last_ns = t_mono;
    uint64_t allowed = (t_mono - m->t0_ns) / m->interval_ns + GP_FLOOD_BURST;
    if (m->paced_rounds >= allowed) {
        m->paced_flood_dropped++;
        return true;
    }
    m->paced_rounds++;
    return false;
}

static void run_self_paced(gp_monitor *m)
{
    /* nvidia-smi ticks by itself; a silent one must not hold us: the
     * deadline only bounds one wait, stop() interrupts it at once. */
    uint64_t patience = 4 * m->interval_ns;
    if (patience < 2000000000ull)
        patience = 2000000000ull;
    bool producer_dead = false;
    for (;;) {
        pthread_mutex_lock(&m->mu);
        bool stop = m->stop_requested;
        if (!stop && producer_dead)
            pthread_cond_wait(&m->cv, &m->mu);
        stop = m->stop_requested;
        pthread_mutex_unlock(&m->mu);
        if (stop)
            break;
        if (producer_dead)
            continue;
        gp_error err;
        gp_error_clear(&err);
        for (size_t i = 0; i < m->n_slots; i++) {
            m->round_status[i] = GP_ERR_TIMEOUT;
            m->round_err[i].message[0] = '\0';
        }
        gp_status st = m->be->wait_tick(m->ctx, m->round, m->round_status, m->round_err,
                                        gp_now_mono_ns() + patience, &err);
        uint64_t t_mono = gp_now_mono_ns();
        uint64_t t_wall = gp_now_wall_ns();
        if (st == GP_OK && paced_round_floods(m, t_mono))
            continue;
        /* nvidia-smi ticks whatever the gate says; a closed gate drops the
         * round, and the producer stays alive for the next one. */
        bool wanted = st == GP_OK && round_wanted(m);
        if (st == GP_OK && !wanted)
            continue;
        pthread_mutex_lock(&m->mu);
        if (st == GP_OK) {
            m->stats.ticks++;
            for (size_t i = 0; i < m->n_slots; i++) {
                if (m->slots[i].failed) {
                    m->round_status[i] = GP_ERR_STATE;
                    continue;
                }
                if (m->round_status[i] == GP_OK)
                    record_locked(m, i, t_mono, t_wall, &m->round[i]);
                else if (m->round_status[i] != GP_ERR_TIMEOUT)
                    fail_slot_locked(m, i, t_mono, m->round_status[i], m->round_err[i].message);
            }
        } else if (st == GP_ERR_TIMEOUT) {
            m->stats.missed_ticks++;
        } else if (st != GP_ERR_STATE) {
            for (size_t i = 0; i < m->n_slots; i++)
                fail_slot_locked(m, i, t_mono, st, err.message);
            producer_dead = true;
        }
        pthread_mutex_unlock(&m->mu);
        if (wanted)
            hook_round(m, t_mono, t_wall);
    }
}

static void *sampler_main(void *arg)
{
    gp_monitor *m = arg;
    if (m->be->self_paced)
        run_self_paced(m);
    else
        run_polled(m);
    uint64_t cpu = gp_thread_cpu_ns();
    pthread_mutex_lock(&m->mu);
    m->stats.sampler_cpu_ns = cpu;
    pthread_mutex_unlock(&m->mu);
    return NULL;
}

gp_status gp_monitor_start(gp_monitor *m, gp_error *err)
{
    gp_error_clear(err);
    if (!m)
        return gp_error_set(err, GP_ERR_INVALID_ARG, "gp_monitor_start: monitor is NULL");
    if (m->state != MON_CREATED)
        return gp_error_set(err, GP_ERR_STATE,
                            "the monitor was already started: a monitor runs one region at a "
                            "time (after gp_monitor_stop, gp_monitor_rearm makes it ready for "
                            "another)");
    if (m->opts.sync_fn)
        m->opts.sync_fn(m->opts.sync_user);
    m->t0_ns = gp_now_mono_ns();
    for (size_t i = 0; i < m->n_slots; i++) {
        gp_acc_init(&m->slots[i].acc, m->t0_ns, m->warmup_ns);
        memset(&m->slots[i].stuck, 0, sizeof m->slots[i].stuck);
    }
    gp_stuck_rule_init(&m->stuck_rule);
    double after_s =
        m->opts.stuck_after_s > 0 && isfinite(m->opts.stuck_after_s) ? m->opts.stuck_after_s : 60.0;
    double n = ceil(after_s / m->opts.interval_s - 1e-9);
    m->stuck_rule.after_samples = n < 1 ? 1 : n > 1e9 ? 1000000000u : (uint32_t)n;

    bool sample = m->be != &gp_backend_none || m->hook.on_round;
    if (sample) {
        unsigned *idx = malloc(m->n_slots * sizeof *idx);
        if (!idx)
            return gp_error_set(err, GP_ERR_NO_MEMORY, "out of memory");
        for (size_t i = 0; i < m->n_slots; i++)
            idx[i] = m->slots[i].index;
        gp_status st = m->be->start(m->ctx, idx, m->n_slots, m->interval_ns, err);
        free(idx);
        if (st != GP_OK)
            return st;

        /* Signals belong to the user's threads, never to ours. */
        int rc = gp_thread_start(&m->thread, sampler_main, m);
        if (rc != 0) {
            m->be->stop(m->ctx);
            return gp_error_set(err, GP_ERR_THREAD, "cannot start the sampling thread: %s",
                                strerror(rc));
        }
        m->thread_started = true;
        m->thread_ran = true;
    }
    pthread_mutex_lock(&m->mu);
    m->state = MON_RUNNING;
    pthread_mutex_unlock(&m->mu);
    return GP_OK;
}

gp_status gp_monitor_set_hook(gp_monitor *m, const gp_round_hook *hook, gp_error *err)
{
    if (!m)
        return gp_error_set(err, GP_ERR_INVALID_ARG, "gp_monitor_set_hook: monitor is NULL");
    if (m->state != MON_CREATED)
        return gp_error_set(err, GP_ERR_STATE, "the hook must be set before gp_monitor_start");
    if (hook)
        m->hook = *hook;
    else
        memset(&m->hook, 0, sizeof m->hook);
    return GP_OK;
}

const char *gp_monitor_note(const gp_monitor *m)
{
    return m ? m->note : "";
}

const gp_device_info *gp_monitor_device_info(const gp_monitor *m, size_t slot)
{
    return m && slot < m->n_slots ? &m->slots[slot].info : NULL;
}

/* What the self-paced producer did wrong, for the summaries' note: it
 * stalled (nothing for GP_STALL_MIN_NS and 4 intervals: at the end, or
 * mid-run) or flooded (rounds dropped).  "" when neither. */
static void paced_note(const gp_monitor *m, char *out, size_t cap)
{
    out[0] = '\0';
    if (!m->be || !m->be->self_paced || !m->thread_ran)
        return;
    uint64_t stall = 4 * m->interval_ns;
    if (stall < GP_STALL_MIN_NS)
        stall = GP_STALL_MIN_NS;
    size_t used = 0;
    uint64_t from = m->paced_last_ns;
    double at = (double)(from - m->t0_ns) / 1e9;
    if (!from && m->t_end_ns - m->t0_ns > GP_NO_ROW_NS) {
        used += (size_t)snprintf(out, cap, "%s: nvidia-smi sent no row in %.2f s", m->be->name,
                                 (double)(m->t_end_ns - m->t0_ns) / 1e9);
    } else if (from && m->t_end_ns > from && m->t_end_ns - from > stall) {
        used += (size_t)snprintf(out, cap,
                                 "%s: nvidia-smi stalled after %.2f s: no row in the last %.2f s "
                                 "of the run",
                                 m->be->name, at, (double)(m->t_end_ns - from) / 1e9);
    } else if (m->paced_gap_ns > stall && m->paced_last_ns) {
        used += (size_t)snprintf(out, cap, "%s: nvidia-smi stalled %.2f s at %.2f s", m->be->name,
                                 (double)m->paced_gap_ns / 1e9,
                                 (double)(m->paced_gap_from_ns - m->t0_ns) / 1e9);
    }
    if (m->paced_flood_dropped && used < cap)
        snprintf(out + used, cap - used,
                 "%s%s: nvidia-smi flooded: %llu rounds came faster than one every %.3f s and "
                 "were dropped",
                 used ? "; " : "", m->be->name, (unsigned long long)m->paced_flood_dropped,
                 (double)m->interval_ns / 1e9);
}

/* Why a device has no sample in its statistics, appended to its note: a
 * summary of n/a everywhere must say what to change. */
static void no_sample_note(const gp_monitor *m, const slot_state *s, gp_summary *out)
{
    if (out->sample_count > 0 || !m->be || strcmp(m->be->name, "none") == 0)
        return;
    const char *why =
        out->samples_warmup > 0
            ? "no sample after the warmup: every sample fell within it (shorten --warmup)"
        : s->failed ? "no sample: the device failed before its first reading"
        : strcmp(m->be->name, "smi") == 0
            ? "no sample: nvidia-smi gave no row during the region (its first row comes about "
              "a second after it starts, and a shorter region gets none): use the NVML backend "
              "(--backend nvml) or profile a longer region"
            : "no sample: the region ended before the first sampling round";
    size_t used = strlen(out->note);
    snprintf(out->note + used, sizeof out->note - used, "%s%s", used ? "; " : "", why);
}

static void summarize(gp_monitor *m)
{
    const char *backend = m->be ? m->be->name : "none";
    double duration_s = (double)(m->t_end_ns - m->t0_ns) / 1e9;
    char paced[GP_NOTE_MAX];
    paced_note(m, paced, sizeof paced);
    for (size_t i = 0; i < m->n_slots; i++) {
        slot_state *s = &m->slots[i];
        gp_summary *out = &m->summaries[i];
        memset(out, 0, sizeof *out);
        out->device_index = s->index;
        snprintf(out->name, sizeof out->name, "%s", s->info.name);
        snprintf(out->uuid, sizeof out->uuid, "%s", s->info.uuid);
        out->mig = s->info.mig;
        snprintf(out->backend, sizeof out->backend, "%s", backend);
        snprintf(out->note, sizeof out->note, "%s%s%s", m->note, m->note[0] && paced[0] ? "; " : "",
                 paced);
        out->interval_s = m->opts.interval_s;
        out->warmup_s = m->opts.warmup_s;
        out->duration_s = duration_s;
        gp_acc_summarize(&s->acc, out);
        out->stuck_known = s->stuck.known_samples > 0;
        out->stuck_episodes = (uint32_t)s->stuck.episodes;
        out->stuck_longest_s =
            s->stuck.episodes ? (double)s->stuck.longest_run * m->opts.interval_s : 0.0;
        out->proc_requested = m->opts.n_pids > 0 && m->be && m->be->set_pids;
        if (!(out->valid & GP_M_MEM_TOTAL) && (s->info.valid & GP_M_MEM_TOTAL)) {
            out->mem_total_bytes = s->info.mem_total_bytes;
            out->valid |= GP_M_MEM_TOTAL;
        }
        no_sample_note(m, s, out);
        out->device_status = s->failed ? s->status : GP_OK;
        if (s->failed) {
            snprintf(out->device_error, sizeof out->device_error, "%s", s->error);
            out->device_error_at_s = s->error_at_s;
            /* A device that failed was busy, at most, while it answered:
             * its mean util.gpu is over the samples before the failure. */
            if (s->error_at_s < duration_s)
                out->busy_time_est_s = s->error_at_s * out->util_gpu_mean / 100.0;
        }
    }
}

gp_status gp_monitor_stop(gp_monitor *m, gp_error *err)
{
    gp_error_clear(err);
    if (!m)
        return gp_error_set(err, GP_ERR_INVALID_ARG, "gp_monitor_stop: monitor is NULL");
    if (m->state != MON_RUNNING)
        return gp_error_set(err, GP_ERR_STATE,
                            m->state == MON_CREATED
                                ? "the monitor was not started: call gp_monitor_start first"
                                : "the monitor was already stopped");
    if (m->opts.sync_fn)
        m->opts.sync_fn(m->opts.sync_user);
    m->t_end_ns = gp_now_mono_ns();
    pthread_mutex_lock(&m->mu);
    m->stop_requested = true;
    pthread_cond_broadcast(&m->cv);
    pthread_mutex_unlock(&m->mu);
    if (m->thread_started) {
        if (m->be->interrupt)
            m->be->interrupt(m->ctx);
        pthread_join(m->thread, NULL);
        m->thread_started = false;
        m->be->stop(m->ctx);
    }
    summarize(m);
    pthread_mutex_lock(&m->mu);
    m->state = MON_STOPPED;
    pthread_mutex_unlock(&m->mu);
    return GP_OK;
}

gp_status gp_monitor_rearm(gp_monitor *m, gp_error *err)
{
    gp_error_clear(err);
    if (!m)
        return gp_error_set(err, GP_ERR_INVALID_ARG, "gp_monitor_rearm: monitor is NULL");
    if (m->state != MON_STOPPED)
        return gp_error_set(err, GP_ERR_STATE,
                            m->state == MON_CREATED
                                ? "the monitor has not run a region yet: start it"
                                : "the monitor is running: stop it first");
    /* The sampler thread is joined: nothing else touches the monitor. */
    for (size_t i = 0; i < m->n_slots; i++) {
        slot_state *s = &m->slots[i];
        unsigned index = s->index;
        gp_device_info info = s->info;
        memset(s, 0, sizeof *s);
        s->index = index;
        s->info = info;
    }
    memset(m->summaries, 0, m->n_slots * sizeof *m->summaries);
    m->n_samples = 0;
    m->samples_truncated = false;
    memset(&m->stats, 0, sizeof m->stats);
    m->stop_requested = false;
    m->first_round_done = false;
    m->thread_ran = false;
    m->paced_rounds = m->paced_last_ns = m->paced_gap_ns = m->paced_gap_from_ns = 0;
    m->paced_flood_dropped = 0;
    m->t0_ns = m->t_end_ns = 0;
    pthread_mutex_lock(&m->mu);
    m->state = MON_CREATED;
    pthread_mutex_unlock(&m->mu);
    return GP_OK;
}

void gp_monitor_destroy(gp_monitor *m)
{
    if (!m)
        return;
    if (m->state == MON_RUNNING)
        gp_monitor_stop(m, NULL);
    if (m->be && m->be->close)
        m->be->close(m->ctx);
    gp_proc_cache_close(&m->proc_cache);
    pthread_mutex_destroy(&m->mu);
    pthread_cond_destroy(&m->cv);
    free(m->devices_copy);
    free(m->slots);
    free(m->summaries);
    free(m->round);
    free(m->round_status);
    free(m->round_flags);
    free(m->round_err);
    free(m->samples);
    free(m);
}

size_t gp_monitor_device_count(const gp_monitor *m)
{
    return m ? m->n_slots : 0;
}

const char *gp_monitor_backend(const gp_monitor *m)
{
    return m && m->be ? m->be->name : NULL;
}

const gp_summary *gp_monitor_summary(const gp_monitor *m, size_t slot)
{
    if (!m || m->state != MON_STOPPED || slot >= m->n_slots)
        return NULL;
    return &m->summaries[slot];
}

const gp_sample *gp_monitor_samples(const gp_monitor *m, size_t *count)
{
    if (count)
        *count = 0;
    if (!m || m->state != MON_STOPPED)
        return NULL;
    if (count)
        *count = m->n_samples;
    return m->samples;
}

gp_status gp_monitor_device_status(gp_monitor *m, size_t slot, double *at_s)
{
    if (!m)
        return GP_ERR_INVALID_ARG;
    if (slot >= m->n_slots)
        return GP_ERR_DEVICE_NOT_FOUND;
    pthread_mutex_lock(&m->mu);
    const slot_state *s = &m->slots[slot];
    gp_status st = s->failed ? s->status : GP_OK;
    if (s->failed && at_s)
        *at_s = s->error_at_s;
    pthread_mutex_unlock(&m->mu);
    return st;
}

gp_status gp_monitor_latest(gp_monitor *m, size_t slot, gp_sample *out)
{
    if (!m || !out)
        return GP_ERR_INVALID_ARG;
    if (slot >= m->n_slots)
        return GP_ERR_DEVICE_NOT_FOUND;
    pthread_mutex_lock(&m->mu);
    gp_status st = GP_ERR_STATE;
    const slot_state *s = &m->slots[slot];
    if (s->have_latest) {
        *out = s->latest;
        if (!(out->m.valid & GP_M_ENERGY) && s->have_energy) {
            out->m.energy_mj = s->energy_mj;
            out->m.valid |= GP_M_ENERGY;
        }
        st = GP_OK;
    }
    pthread_mutex_unlock(&m->mu);
    return st;
}

gp_status gp_monitor_get_stats(const gp_monitor *m, gp_monitor_stats *out)
{
    if (!m || !out)
        return GP_ERR_INVALID_ARG;
    pthread_mutex_lock((pthread_mutex_t *)&m->mu);
    *out = m->stats;
    pthread_mutex_unlock((pthread_mutex_t *)&m->mu);
    return GP_OK;
}

gp_status gp_monitor_list_processes(gp_monitor *m, gp_error *err)
{
    if (!m || !m->be->list_processes)
        return gp_error_set(err, GP_ERR_NOT_SUPPORTED,
                            "the %s backend cannot list the processes on a GPU (NVML can)",
                            m ? m->be->name : "no");
    if (m->state == MON_RUNNING)
        return gp_error_set(err, GP_ERR_STATE, "gp_monitor_list_processes: call it before start");
    m->be->list_processes(m->ctx);
    return GP_OK;
}

gp_status gp_monitor_processes(gp_monitor *m, size_t slot, gp_process_use *out, size_t cap,
                               size_t *n)
{
    if (!m || !n || (cap && !out))
        return GP_ERR_INVALID_ARG;
    if ((*n = 0, slot >= m->n_slots))
        return GP_ERR_DEVICE_NOT_FOUND;
    if (!m->be->processes)
        return GP_ERR_NOT_SUPPORTED;
    return m->be->processes(m->ctx, m->slots[slot].index, out, cap, n);
}
