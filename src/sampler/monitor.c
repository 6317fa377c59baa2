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
#include "monitor_int.h"
#include "options.h"
#include "stats.h"
#include "gpu_profile.h"

#include <math.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

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
        int rc = gp_thread_start(&m->thread, gp_monitor_sampler_main, m);
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
