/*
 * sampler/monitor_thread.c - the monitor's sampling thread: polled rounds
 * on absolute CLOCK_MONOTONIC ticks (a round posted ahead to a backend
 * that paces it, read_round_at), or a self-paced producer's rounds.
 *
 * Promises: no drift accumulates (an overrunning round skips the ticks it
 * missed and counts them); records, hooks and user callbacks run on this
 * thread only, a round's values stamped with the time just before its
 * reads; a device that fails stops alone and keeps its error; a stop is
 * seen at the next tick, or at once while a round posted ahead waits.
 */
#include "../util/clock.h"
#include "../util/error.h"
#include "../util/proc.h"
#include "../util/thread.h"
#include "backends/backend.h"
#include "hook.h"
#include "monitor_int.h"
#include "options.h"
#include "stats.h"
#include "gpu_profile.h"

#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

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

/* A round's flags at t_mono (the tick it reads at): every slot "not
 * read" until read, failed ones skipped. */
static void round_flags(gp_monitor *m, uint64_t t_mono, bool last)
{
    for (size_t i = 0; i < m->n_slots; i++) {
        m->round_status[i] = GP_ERR_STATE; /* "not read" */
        m->round_flags[i] = GP_READ_SKIP;
        if (m->slots[i].failed || (!m->be->read && !m->be->read_round))
            continue; /* only the sampler thread sets failed, so no lock is needed */
        m->round_err[i].message[0] = '\0';
        m->round_flags[i] = read_flags(m, &m->slots[i], t_mono, last);
    }
}

/* Reads the slots round_flags chose, now. */
static void round_read(gp_monitor *m)
{
    if (m->be->read_round) { /* one sleep of this thread per round, not one per device */
        m->be->read_round(m->ctx, m->n_slots, m->round_flags, m->round, m->round_status,
                          m->round_err);
        return;
    }
    for (size_t i = 0; i < m->n_slots; i++)
        if (m->round_flags[i] != GP_READ_SKIP)
            m->round_status[i] =
                m->be->read(m->ctx, i, m->round_flags[i], &m->round[i], &m->round_err[i]);
}

/* Records a round read at t_mono under one lock, then tells the hooks. */
static void round_record(gp_monitor *m, uint64_t t_mono, uint64_t t_wall)
{
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

/* One polled round: read every live device, then record under one lock. */
static void polled_round(gp_monitor *m, bool last)
{
    if (!round_wanted(m))
        return;
    round_pids(m);
    uint64_t t_mono = gp_now_mono_ns();
    uint64_t t_wall = gp_now_wall_ns();
    round_flags(m, t_mono, last);
    round_read(m);
    round_record(m, t_mono, t_wall);
}

/* Sleeps of the sampling thread until a tick (a count, for tests). */
static atomic_uint_fast64_t g_tick_sleeps;

uint64_t gp_monitor_tick_sleeps(void)
{
    return (uint64_t)atomic_load_explicit(&g_tick_sleeps, memory_order_relaxed);
}

/* Sleeps until the tick next; true when stop was asked. */
static bool wait_tick(gp_monitor *m, uint64_t next)
{
    struct timespec ts = {(time_t)(next / 1000000000ull), (long)(next % 1000000000ull)};
    pthread_mutex_lock(&m->mu);
    while (!m->stop_requested && gp_now_mono_ns() < next) {
        atomic_fetch_add_explicit(&g_tick_sleeps, 1, memory_order_relaxed);
        pthread_cond_timedwait(&m->cv, &m->mu, &ts);
    }
    bool stop = m->stop_requested;
    pthread_mutex_unlock(&m->mu);
    return stop;
}

/* The round of tick next posted ahead (read_round_at): the backend's
 * thread waits for the tick and this one sleeps once, until it is read.
 * Its processes, flags and gate are settled when it is posted, up to an
 * interval before the tick.  A round the backend does not pace is read
 * as polled_round's, at the tick, with those flags.  True when stop was
 * asked (a round cancelled by it is not recorded). */
static bool paced_round(gp_monitor *m, uint64_t next)
{
    pthread_mutex_lock(&m->mu);
    bool stop = m->stop_requested;
    pthread_mutex_unlock(&m->mu);
    if (stop)
        return true;
    if (!round_wanted(m))
        return wait_tick(m, next);
    round_pids(m);
    round_flags(m, next, false);
    uint64_t t_mono = 0, t_wall = 0;
    gp_status st = m->be->read_round_at(m->ctx, next, m->n_slots, m->round_flags, m->round,
                                        m->round_status, m->round_err, &t_mono, &t_wall);
    if (st == GP_ERR_STATE)
        return true;
    if (st != GP_OK) {
        if (wait_tick(m, next))
            return true;
        t_mono = gp_now_mono_ns();
        t_wall = gp_now_wall_ns();
        round_read(m);
    }
    round_record(m, t_mono, t_wall);
    return false;
}

static void run_polled(gp_monitor *m)
{
    uint64_t next = m->t0_ns;
    polled_round(m, false); /* the first round, at once */
    for (bool stop = false; !stop;) {
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
        if (m->be->read_round_at)
            stop = paced_round(m, next);
        else if (!(stop = wait_tick(m, next)))
            polled_round(m, false);
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

void *gp_monitor_sampler_main(void *arg)
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
