/*
 * sampler/backends/nvml_round.c - a sampling round's reads for the NVML
 * backend (read_round, read_round_at, interrupt).
 *
 * Promises: one runner reads every device of a round in turn (one wake-up
 * of it and one sleep of the sampling thread a round), each read bounded
 * from its own start; a device given up keeps that runner as its stuck
 * call and the rest of the round goes to a fresh one.  A round posted
 * ahead (read_round_at) begins at its tick on the runner's own clock, is
 * stamped just before its first read, and is left unread when interrupt()
 * comes before it begins.  A round with the energy counter on several
 * devices is read in parallel on the devices' own runners.
 */
#include "../../util/clock.h"
#include "../../util/error.h"
#include "backend.h"
#include "nvml_ctx.h"
#include "nvml_dev.h"
#include "runner.h"
#include "gpu_profile.h"

#include <pthread.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

/* The read's process list, for scrapes (nvml_processes). */
static void keep_plist(nvml_ctx *c, unsigned index, const nvml_dev *d)
{
    nvml_devref *ref = &c->devs[index];
    pthread_mutex_lock(&c->plist_mu);
    if (!ref->plist)
        ref->plist = malloc(NVML_PROC_MAX * sizeof *ref->plist);
    ref->plist_ok = ref->plist && d->plist_ok;
    ref->n_plist = ref->plist_ok ? d->n_plist : 0;
    if (ref->n_plist)
        memcpy(ref->plist, d->plist, ref->n_plist * sizeof *ref->plist);
    pthread_mutex_unlock(&c->plist_mu);
}

/* The job area of slot's device set up for a read, or NULL with *st. */
static nvml_dev *read_ready(nvml_ctx *c, size_t slot, unsigned flags, gp_device_sample *out,
                            gp_status *st, gp_error *err)
{
    memset(out, 0, sizeof *out);
    if (slot >= c->n_slots) {
        *st = gp_error_set(err, GP_ERR_STATE, "nvml: slot %zu was not started (%zu slots)", slot,
                           c->n_slots);
        return NULL;
    }
    nvml_dev *d = gp_nvml_dev_ready(c, c->slot_index[slot], st, err);
    if (!d)
        return NULL;
    d->flags = flags;
    memcpy(d->pids, c->pids, c->n_pids * sizeof c->pids[0]);
    d->n_pids = c->n_pids;
    d->list_procs = c->list_procs;
    return d;
}

/* A read whose job returned (st: the runner's word on it, mapped). */
static gp_status read_done(nvml_ctx *c, unsigned index, nvml_dev *d, gp_status st,
                           gp_device_sample *out, gp_error *err)
{
    if (st == GP_OK) {
        st = d->status;
        if (st != GP_OK && err)
            *err = d->err;
    }
    if (st != GP_ERR_TIMEOUT)
        *out = d->sample;
    if (st == GP_OK && c->list_procs)
        keep_plist(c, index, d);
    if (st == GP_OK)
        gp_nvml_xid_fill(c->xid, index, out);
    return st;
}

gp_status gp_nvml_read(void *ctx, size_t slot, unsigned flags, gp_device_sample *out, gp_error *err)
{
    nvml_ctx *c = ctx;
    gp_status st;
    nvml_dev *d = read_ready(c, slot, flags, out, &st, err);
    if (!d)
        return st;
    unsigned index = c->slot_index[slot];
    st = gp_nvml_run(c, c->devs[index].r, index, gp_nvml_job_read, "nvmlDeviceGetUtilizationRates",
                     err);
    return read_done(c, index, d, st, out, err);
}

#define READ_WHAT "nvmlDeviceGetUtilizationRates"

/* One device of a round: its slot and its runner's job area, which the
 * round runner reads while that runner idles (dev_ready said so). */
typedef struct nvml_round_dev {
    unsigned index;
    size_t slot;
    nvml_dev *d;
    uint64_t deadline_ns; /* parallel_read: its read's bound */
} nvml_round_dev;

/* The round runner's job area: the devices to read, in turn.  key.index
 * follows the device being read (on_step), so a read given up is
 * registered as that device's stuck call. */
typedef struct nvml_round {
    nvml_key key;
    uint64_t t_mono_ns, t_wall_ns; /* the round's time: its first read's start */
    size_t n;
    nvml_round_dev e[];
} nvml_round;

/* Under the runner's lock: the stamp of step 0 is the owner's to read once
 * that step began (gp_runner_wait_steps said so). */
static void round_on_step(void *job, size_t step)
{
    nvml_round *j = job;
    j->key.index = j->e[step].index;
    if (step == 0) {
        j->t_mono_ns = gp_now_mono_ns();
        j->t_wall_ns = gp_now_wall_ns();
    }
}

static const gp_runner_hooks round_hooks = {.on_abandon = gp_nvml_on_abandon,
                                            .on_late_done = gp_nvml_on_late_done,
                                            .on_free = gp_nvml_on_free,
                                            .on_step = round_on_step};

/* A round posted ahead of its tick (read_round_at): when it starts; what
 * came back: its time, or that interrupt() cancelled it before it began. */
typedef struct paced_round {
    uint64_t start_ns;
    uint64_t t_mono_ns, t_wall_ns;
    bool cancelled;
} paced_round;

/* Runs on the round runner: one wake-up reads every device.  A step given
 * up ends the job when its call returns: the devices after it are read by
 * another runner, and nothing of theirs is touched here. */
static void round_job(gp_runner *r, void *job)
{
    nvml_round *j = job;
    for (size_t k = 0; k < j->n; k++) {
        if (!gp_runner_step(r, READ_WHAT, k))
            return;
        gp_nvml_job_read(r, j->e[k].d);
    }
}

/* The round runner, with room for n devices in its job area and in
 * round_list (made anew when a round outgrew it, or after it was given
 * up); NULL when out of memory. */
gp_runner *gp_nvml_round_runner(nvml_ctx *c, size_t n)
{
    if (n > c->round_cap) {
        nvml_round_dev *list = realloc(c->round_list, n * sizeof *list);
        if (!list)
            return NULL;
        c->round_list = list;
        c->round_cap = n;
        gp_runner_release(c->round_r); /* idle, too small */
        c->round_r = NULL;
    }
    if (!c->round_r)
        c->round_r = gp_nvml_new_runner_with(
            c, NVML_SYSTEM, sizeof(nvml_round) + c->round_cap * sizeof(nvml_round_dev),
            &round_hooks);
    return c->round_r;
}

/* The paced round's post: not made once interrupt() came (the stop that
 * cancels it may come before it).  The runner naps until the tick after. */
static gp_status post_paced(nvml_ctx *c, gp_runner *r, uint64_t start_ns, gp_runner_stuck *why)
{
    pthread_mutex_lock(&c->pace_mu);
    gp_status st = GP_ERR_STATE;
    if (!c->interrupted) {
        st = gp_runner_post_at(r, round_job, READ_WHAT, start_ns, start_ns + c->interval_ns, why);
        if (st == GP_OK)
            c->pacing = r;
    }
    pthread_mutex_unlock(&c->pace_mu);
    return st;
}

static void unpace(nvml_ctx *c)
{
    pthread_mutex_lock(&c->pace_mu);
    c->pacing = NULL;
    pthread_mutex_unlock(&c->pace_mu);
}

/* Reads list[0..n) on the round runner, one post (paced: at pr->start_ns,
 * its time told back): how many entries are over (n; or k + 1 when entry
 * k did not answer within the bound: its status is the timeout, the runner
 * is kept as its device's held_by, the entries after it are left for a
 * fresh runner).  Entries read keep status GP_OK here; read_done takes
 * their own.  A paced round cancelled: every entry GP_ERR_STATE, unread. */
static size_t round_read(nvml_ctx *c, const nvml_round_dev *list, size_t n, paced_round *pr,
                         gp_status *status, gp_error *errs)
{
    gp_runner *r = gp_nvml_round_runner(c, n);
    gp_runner_stuck why;
    gp_status st = GP_ERR_NO_MEMORY;
    if (r) {
        nvml_round *j = gp_runner_job(r);
        memcpy(j->e, list, n * sizeof *list);
        j->n = n;
        j->key.index = list[0].index; /* given up before its first step: the first device */
        st = pr ? post_paced(c, r, pr->start_ns, &why)
                : gp_runner_post(r, round_job, READ_WHAT, &why);
        if (st == GP_OK) {
            st = gp_runner_wait_steps(r, c->call_ns, &why);
            if (pr)
                unpace(c);
            /* Step 0 began (its stamp written under the runner's lock) unless
             * the round was given up at its first device: then the tick. */
            if (pr && (st == GP_OK || (st == GP_ERR_TIMEOUT && why.step > 0))) {
                pr->t_mono_ns = j->t_mono_ns;
                pr->t_wall_ns = j->t_wall_ns;
            }
            if (st == GP_OK)
                return n;
            if (st == GP_ERR_TIMEOUT && why.step < n) {
                const nvml_round_dev *hung = &list[why.step];
                status[hung->slot] =
                    gp_nvml_runner_error(c, hung->index, st, &why, &errs[hung->slot]);
                c->devs[hung->index].held_by = r;
                c->round_r = NULL;
                return why.step + 1;
            }
        }
        if (st == GP_ERR_STATE && pr) { /* cancelled, or interrupted before the post */
            pr->cancelled = true;
            for (size_t k = 0; k < n; k++)
                status[list[k].slot] = GP_ERR_STATE;
            return n;
        }
    }
    for (size_t k = 0; k < n; k++) /* no runner to read them: each device fails */
        status[list[k].slot] =
            st == GP_ERR_NO_MEMORY
                ? gp_error_set(&errs[list[k].slot], st, "nvml: out of memory")
                : gp_nvml_runner_error(c, list[k].index, st, &why, &errs[list[k].slot]);
    return n;
}

/* The energy counter costs the driver ~3.7 ms of CPU a device (on an H200,
 * docs/performance.md), read at a run's ends and every 30 s: a round that
 * reads it on several devices goes out on the devices' own runners, which
 * read in parallel, and this thread sleeps once on their batch; each read
 * bounded from its hand-off.  Entries whose read answered keep GP_OK. */
static void parallel_read(nvml_ctx *c, nvml_round_dev *list, size_t n, gp_status *status,
                          gp_error *errs)
{
    uint64_t first_deadline_ns = 0;
    if (!c->batch)
        c->batch = gp_runner_batch_create(); /* NULL: one wake-up per device */
    for (size_t k = 0; k < n; k++) {
        nvml_round_dev *e = &list[k];
        gp_runner_stuck why;
        e->deadline_ns = gp_now_mono_ns() + c->call_ns;
        gp_status st =
            gp_runner_post_batch(c->devs[e->index].r, gp_nvml_job_read, READ_WHAT, c->batch, &why);
        if (st != GP_OK)
            status[e->slot] = gp_nvml_runner_error(c, e->index, st, &why, &errs[e->slot]);
        else if (!first_deadline_ns)
            first_deadline_ns = e->deadline_ns;
    }
    /* Bounded by the earliest deadline: a device still out then is given
     * up below at its own. */
    if (first_deadline_ns && c->batch)
        gp_runner_batch_wait(c->batch, first_deadline_ns);
    for (size_t k = 0; k < n; k++) {
        const nvml_round_dev *e = &list[k];
        gp_runner_stuck why;
        if (status[e->slot] == GP_OK)
            status[e->slot] = gp_nvml_runner_error(
                c, e->index, gp_runner_wait(c->devs[e->index].r, e->deadline_ns, &why), &why,
                &errs[e->slot]);
    }
}

/* The round's entries in round_list (slots to read, set up), their
 * count; *energy: how many read the energy counter.  A slot that cannot be
 * read (its device stuck) has its status now. */
static size_t round_prepare(nvml_ctx *c, size_t n, const unsigned *flags, gp_device_sample *out,
                            gp_status *status, gp_error *errs, size_t *energy)
{
    bool one_by_one = c->slots_repeat || !gp_nvml_round_runner(c, c->n_slots);
    size_t m = 0;
    *energy = 0;
    for (size_t i = 0; i < n; i++) {
        if (flags[i] == GP_READ_SKIP)
            continue;
        if (one_by_one || i >= c->n_slots) {
            status[i] = gp_nvml_read(c, i, flags[i], &out[i], &errs[i]);
            continue;
        }
        nvml_dev *d = read_ready(c, i, flags[i], &out[i], &status[i], &errs[i]);
        if (d) {
            c->round_list[m++] = (nvml_round_dev){c->slot_index[i], i, d, 0};
            status[i] = GP_OK;
            *energy += (flags[i] & GP_READ_ENERGY) != 0;
        }
    }
    return m;
}

/* Reads round_list[0..m): in parallel with the energy counter on several
 * devices, else on the round runner (pr: the first post paced). */
static void round_run(nvml_ctx *c, size_t m, size_t energy, paced_round *pr, gp_device_sample *out,
                      gp_status *status, gp_error *errs)
{
    for (size_t from = 0; from < m;) {
        size_t over = m - from;
        if (energy > 1)
            parallel_read(c, c->round_list, m, status, errs);
        else
            over = round_read(c, c->round_list + from, m - from, from ? NULL : pr, status, errs);
        for (size_t k = from; k < from + over; k++) {
            const nvml_round_dev *e = &c->round_list[k];
            if (status[e->slot] == GP_OK)
                status[e->slot] =
                    read_done(c, e->index, e->d, GP_OK, &out[e->slot], &errs[e->slot]);
        }
        from += over;
    }
}

/* Every device of the round read by one runner, device after device: one
 * wake-up of that runner and one of this thread a round, whatever the
 * number of devices.  Each read is bounded on its own (c->call_ns from its
 * start); a device that does not answer is given up and the devices after
 * it go to a fresh runner.  A round with the energy counter on several
 * devices is read in parallel instead (parallel_read).  With a device in
 * two slots (one job area) the slots are read one by one on their devices'
 * runners. */
void gp_nvml_read_round(void *ctx, size_t n, const unsigned *flags, gp_device_sample *out,
                        gp_status *status, gp_error *errs)
{
    nvml_ctx *c = ctx;
    size_t energy;
    size_t m = round_prepare(c, n, flags, out, status, errs, &energy);
    round_run(c, m, energy, NULL, out, status, errs);
}

/* read_round posted ahead: the round runner waits for the tick on its own
 * and the caller sleeps once, until the round is read (one wake-up of each
 * thread a round).  Only what the round runner reads alone is paced: a
 * round read in parallel or one by one, or with nothing to read, is the
 * caller's (GP_ERR_NOT_SUPPORTED, nothing touched but status and out). */
gp_status gp_nvml_read_round_at(void *ctx, uint64_t start_mono_ns, size_t n, const unsigned *flags,
                                gp_device_sample *out, gp_status *status, gp_error *errs,
                                uint64_t *t_mono_ns, uint64_t *t_wall_ns)
{
    nvml_ctx *c = ctx;
    size_t asked = 0, energy = 0;
    for (size_t i = 0; i < n; i++)
        if (flags[i] != GP_READ_SKIP) {
            asked++;
            energy += (flags[i] & GP_READ_ENERGY) != 0;
        }
    if (!asked || energy > 1 || n > c->n_slots || c->slots_repeat ||
        !gp_nvml_round_runner(c, c->n_slots))
        return GP_ERR_NOT_SUPPORTED;
    size_t m = round_prepare(c, n, flags, out, status, errs, &energy);
    if (m == 0) /* every device failed at once: the caller fails them at the tick */
        return GP_ERR_NOT_SUPPORTED;
    /* Given up at its first device before any stamp: the tick's time. */
    uint64_t now_mono = gp_now_mono_ns(), now_wall = gp_now_wall_ns();
    paced_round pr = {start_mono_ns, start_mono_ns,
                      start_mono_ns > now_mono ? now_wall + (start_mono_ns - now_mono) : now_wall,
                      false};
    round_run(c, m, energy, &pr, out, status, errs);
    *t_mono_ns = pr.t_mono_ns;
    *t_wall_ns = pr.t_wall_ns;
    return pr.cancelled ? GP_ERR_STATE : GP_OK;
}

/* Cancels the round posted ahead (not begun: it is left unread), and any
 * posted later until the next start: stop() is not kept waiting a tick. */
void gp_nvml_interrupt(void *ctx)
{
    nvml_ctx *c = ctx;
    pthread_mutex_lock(&c->pace_mu);
    c->interrupted = true;
    if (c->pacing)
        (void)gp_runner_cancel(c->pacing);
    pthread_mutex_unlock(&c->pace_mu);
}
