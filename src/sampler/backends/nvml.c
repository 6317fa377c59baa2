/*
 * sampler/backends/nvml.c - the NVML backend (polled), libnvidia-ml loaded
 * with dlopen, every NVML call bounded in time.
 *
 * Promises: no call of this backend waits for NVML longer than its bound:
 * NVML_CALL_TIMEOUT_NS (2 s), or the configured timeout when smaller.  The
 * calls themselves (nvml_calls.c) run on worker threads (runner.h): one for
 * the calls that name no device (nvmlInit, nvmlDeviceGetCount,
 * nvmlSystemGetDriverVersion, nvmlShutdown), one per device, waited for
 * with that deadline, and one that reads every device of a sampling round
 * in turn (read_round: one wake-up a round; each device's read bounded
 * from its own start, so a round waits at most the bound per device; a
 * device given up keeps that runner while the rest of the round goes to a
 * fresh one).  A call that misses it - a GPU that fell off the bus hangs
 * NVML's calls on it - fails with GP_ERR_TIMEOUT, "did not answer
 * within 2 s", naming the device and the NVML function; its thread is
 * abandoned, never cancelled, and keeps the library loaded (and NVML
 * initialised) until the call returns.  Until then that device (or, for a
 * call that names none, NVML as a whole) is not asked again by any
 * context of this process: every later call on it fails at once with how
 * long the call has been stuck.  That registry of stuck calls is the only
 * state outside a context, because the threads are the process's.  A
 * device whose start() does not answer is left to its first read (which
 * fails at once while it is stuck): start() itself fails only for other
 * errors.  Every message starts with "nvml: ".
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
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* A call that names no device; its answer stays in the system job area. */
static gp_status sys_call(nvml_ctx *c, enum nvml_sys_op op, gp_error *err)
{
    gp_status st = gp_nvml_sys_stuck(c, err);
    if (st != GP_OK)
        return st;
    nvml_sys *j = gp_runner_job(c->sys);
    j->op = op;
    st = gp_nvml_run(c, c->sys, NVML_SYSTEM, gp_nvml_job_system, "NVML", err);
    if (st != GP_OK)
        return st;
    if (j->status != GP_OK && err)
        *err = j->err;
    return j->status;
}

/* Runs a device job on d (from dev_ready); its status, err copied. */
static gp_status dev_run(nvml_ctx *c, unsigned index, nvml_dev *d, gp_runner_fn fn,
                         const char *what, gp_error *err)
{
    gp_status st = gp_nvml_run(c, c->devs[index].r, index, fn, what, err);
    if (st != GP_OK)
        return st;
    if (d->status != GP_OK && err)
        *err = d->err;
    return d->status;
}

static void keep_name(nvml_ctx *c, unsigned index, const char *name)
{
    if (name[0])
        snprintf(c->devs[index].name, sizeof c->devs[index].name, "%s", name);
}

/* ------------------------------------------------------------- backend */

static bool any_stuck(nvml_ctx *c)
{
    if (c->sys && gp_runner_stuck_now(c->sys, NULL))
        return true;
    for (size_t i = 0; i < c->n_devs; i++)
        if ((c->devs[i].r && gp_runner_stuck_now(c->devs[i].r, NULL)) ||
            (c->devs[i].held_by && gp_runner_stuck_now(c->devs[i].held_by, NULL)))
            return true;
    return false;
}

static void nvml_stop(void *ctx);

static void nvml_close(void *ctx)
{
    nvml_ctx *c = ctx;
    if (!c)
        return;
    nvml_stop(c); /* hands back the GPM samples of a run not stopped */
    /* NVML is shut down (bounded) unless a call of ours is still inside it;
     * then the thread of that call holds the last reference to the library
     * and shuts NVML down when the call returns.  A shutdown refused because
     * another context's call is stuck in NVML is not made at all: the last
     * reference may be this thread's, which never waits for NVML unbounded. */
    if (c->sys && c->lib) {
        pthread_mutex_lock(&c->lib->mu);
        bool initialized = c->lib->initialized;
        pthread_mutex_unlock(&c->lib->mu);
        if (initialized && !any_stuck(c) && sys_call(c, NVML_OP_SHUTDOWN, NULL) != GP_OK &&
            !gp_runner_stuck_now(c->sys, NULL)) {
            pthread_mutex_lock(&c->lib->mu);
            c->lib->shut_down = true;
            pthread_mutex_unlock(&c->lib->mu);
        }
    }
    for (size_t i = 0; i < c->n_devs; i++) {
        /* A round's read still stuck in this device's area keeps it. */
        if (c->devs[i].held_by) {
            gp_runner_tie(c->devs[i].held_by, c->devs[i].r);
            gp_runner_release(c->devs[i].held_by);
        } else {
            gp_runner_release(c->devs[i].r);
        }
        free(c->devs[i].plist);
    }
    pthread_mutex_destroy(&c->plist_mu);
    pthread_mutex_destroy(&c->pace_mu);
    gp_runner_release(c->sys);
    gp_runner_release(c->round_r);
    free(c->round_list);
    gp_runner_batch_free(c->batch); /* its jobs all returned or were given up */
    gp_nvml_lib_unref(c->lib);
    free(c->devs);
    free(c->mig);
    free(c->slot_index);
    free(c);
}

static gp_status nvml_open(const gp_backend_config *cfg, void **ctx, gp_error *err)
{
    *ctx = NULL;
    nvml_ctx *c = calloc(1, sizeof *c);
    if (!c)
        return gp_error_set(err, GP_ERR_NO_MEMORY, "nvml: out of memory");
    c->sample_pcie = cfg && cfg->sample_pcie;
    pthread_mutex_init(&c->plist_mu, NULL);
    pthread_mutex_init(&c->pace_mu, NULL);
    c->call_ns = NVML_CALL_TIMEOUT_NS;
    if (cfg && cfg->timeout_ns && cfg->timeout_ns < c->call_ns)
        c->call_ns = cfg->timeout_ns;
    gp_status st = gp_nvml_lib_load(cfg ? cfg->nvml_library : NULL, &c->lib, err);
    if (st == GP_OK && !(c->sys = gp_nvml_new_runner(c, NVML_SYSTEM, sizeof(nvml_sys))))
        st = gp_error_set(err, GP_ERR_NO_MEMORY, "nvml: out of memory");
    if (st == GP_OK)
        st = sys_call(c, NVML_OP_INIT, err);
    if (st != GP_OK) {
        nvml_close(c);
        return st;
    }
    *ctx = c;
    return GP_OK;
}

/* The MIG instances of the n GPUs, listed anew (GPU by GPU, slot by
 * slot): a GPU that does not answer, or fails, lists none (it fails again
 * where it is sampled as itself). */
static gp_status list_mig(nvml_ctx *c, unsigned n, gp_error *err)
{
    c->n_gpus = n;
    c->n_mig = 0;
    for (unsigned i = 0; i < n && c->lib->api.mig_mode; i++) {
        gp_status st;
        gp_error e;
        nvml_dev *d = gp_nvml_dev_ready(c, i, &st, NULL);
        if (!d)
            continue;
        c->devs[i].count_st = st =
            dev_run(c, i, d, gp_nvml_job_mig_list, "nvmlDeviceGetMigMode", &e);
        if (st == GP_ERR_TIMEOUT)
            c->devs[i].count_err = e;
        else
            c->devs[i].count_st = GP_OK;
        if (st != GP_OK)
            continue;
        if (d->n_mig == 0)
            continue;
        struct nvml_mig_ref *m = realloc(c->mig, (c->n_mig + d->n_mig) * sizeof *m);
        if (!m)
            return gp_error_set(err, GP_ERR_NO_MEMORY, "nvml: out of memory");
        c->mig = m;
        for (unsigned k = 0; k < d->n_mig; k++)
            c->mig[c->n_mig++] = (struct nvml_mig_ref){i, d->mig_slots[k]};
    }
    return GP_OK;
}

static gp_status nvml_device_count(void *ctx, unsigned *count, gp_error *err)
{
    nvml_ctx *c = ctx;
    gp_status st = sys_call(c, NVML_OP_COUNT, err);
    if (st != GP_OK)
        return st;
    unsigned n = ((nvml_sys *)gp_runner_job(c->sys))->count;
    if (n > NVML_MAX_INDEX / 2)
        n = NVML_MAX_INDEX / 2; /* room for the instances' indices */
    st = list_mig(c, n, err);
    if (st == GP_OK)
        *count = n + (unsigned)c->n_mig;
    return st;
}

static gp_status nvml_device_info(void *ctx, unsigned index, gp_device_info *out, gp_error *err)
{
    nvml_ctx *c = ctx;
    memset(out, 0, sizeof *out);
    out->index = index;
    gp_status st;
    if (index < c->n_devs && c->devs[index].count_st != GP_OK) {
        st = c->devs[index].count_st;
        c->devs[index].count_st = GP_OK;
        if (err)
            *err = c->devs[index].count_err;
        return st;
    }
    nvml_dev *d = gp_nvml_dev_ready(c, index, &st, err);
    if (!d)
        return st;
    st = dev_run(c, index, d, gp_nvml_job_info, "nvmlDeviceGetHandleByIndex", err);
    if (st == GP_OK) {
        *out = d->info;
        keep_name(c, index, d->info.name);
    }
    return st;
}

static gp_status nvml_driver_version(void *ctx, char *buf, size_t len, gp_error *err)
{
    nvml_ctx *c = ctx;
    if (len)
        buf[0] = '\0';
    gp_status st = sys_call(c, NVML_OP_DRIVER, err);
    if (st == GP_OK && len)
        snprintf(buf, len, "%s", ((nvml_sys *)gp_runner_job(c->sys))->driver);
    return st;
}

/* --------------------------------------------------------------- sampling */

static void nvml_stop(void *ctx)
{
    nvml_ctx *c = ctx;
    if (!c)
        return;
    /* The run's GPM samples go back to NVML (bounded like any call; a
     * device stuck in a call keeps them until its next start). */
    for (size_t i = 0; i < c->n_slots; i++) {
        unsigned index = c->slot_index[i];
        gp_status st;
        nvml_dev *d =
            index < c->n_devs && c->devs[index].r ? gp_nvml_dev_ready(c, index, &st, NULL) : NULL;
        if (d && (d->gpm_prev || d->gpm_cur))
            (void)dev_run(c, index, d, gp_nvml_job_stop, "nvmlGpmSampleFree", NULL);
    }
    gp_nvml_xid_stop(c->xid);
    c->xid = NULL;
    free(c->slot_index);
    c->slot_index = NULL;
    c->n_slots = 0;
}

/* The event set job on the system runner: made (NULL: none), or freed. */
static nvmlEventSet_t event_set_job(nvml_ctx *c, nvmlEventSet_t to_free)
{
    if (gp_nvml_sys_stuck(c, NULL) != GP_OK)
        return NULL;
    nvml_sys *j = gp_runner_job(c->sys);
    j->event_free = to_free != NULL;
    j->event_set = to_free;
    if (gp_nvml_run(c, c->sys, NVML_SYSTEM, gp_nvml_job_event_set, "nvmlEventSetCreate", NULL) !=
        GP_OK)
        return NULL;
    return to_free ? NULL : j->event_set;
}

/* XID events of the started whole GPUs (a MIG instance's are its
 * parent's) that take the registration; no thread when none does. */
static void start_xid(nvml_ctx *c, const unsigned *indices, size_t n)
{
    if (!c->lib->api.event_create || !c->sys)
        return;
    unsigned *gpus = calloc(n ? n : 1, sizeof *gpus);
    nvmlDevice_t *handles = calloc(n ? n : 1, sizeof *handles);
    nvmlEventSet_t set = gpus && handles ? event_set_job(c, NULL) : NULL;
    size_t n_gpus = 0;
    for (size_t i = 0; set && i < n; i++) {
        gp_status st;
        nvml_dev *d = gp_nvml_dev_ready(c, indices[i], &st, NULL);
        if (!d || d->is_mig || d->started_gen != c->gen || !d->dev)
            continue;
        d->event_set = set;
        d->event_ok = false;
        if (dev_run(c, indices[i], d, gp_nvml_job_event_register, "nvmlDeviceRegisterEvents",
                    NULL) == GP_OK &&
            d->event_ok) {
            gpus[n_gpus] = indices[i];
            handles[n_gpus++] = d->dev;
        }
    }
    c->xid = set ? gp_nvml_xid_start(c->lib, set, gpus, handles, n_gpus) : NULL;
    if (set && !c->xid)
        (void)event_set_job(c, set);
    free(gpus);
    free(handles);
}

static gp_status nvml_start(void *ctx, const unsigned *indices, size_t n, uint64_t interval_ns,
                            gp_error *err)
{
    nvml_ctx *c = ctx;
    nvml_stop(c);
    c->interval_ns = interval_ns; /* a paced round's runner naps until the next */
    pthread_mutex_lock(&c->pace_mu);
    c->interrupted = false;
    pthread_mutex_unlock(&c->pace_mu);
    unsigned *slots = calloc(n ? n : 1, sizeof *slots);
    if (!slots)
        return gp_error_set(err, GP_ERR_NO_MEMORY, "nvml: out of memory for %zu devices", n);
    c->gen++;
    gp_status st = GP_OK;
    for (size_t i = 0; i < n && st == GP_OK; i++) {
        slots[i] = indices[i];
        nvml_dev *d = gp_nvml_dev_ready(c, indices[i], &st, err);
        if (d) {
            st = dev_run(c, indices[i], d, gp_nvml_job_start, "nvmlDeviceGetHandleByIndex", err);
            if (st == GP_OK)
                keep_name(c, indices[i], d->name);
        }
        /* A device that does not answer fails at its first read instead:
         * the others are sampled. */
        if (st == GP_ERR_TIMEOUT)
            st = GP_OK;
    }
    if (st != GP_OK) {
        free(slots);
        return st;
    }
    c->slot_index = slots;
    c->n_slots = n;
    c->slots_repeat = false;
    for (size_t i = 0; i < n; i++)
        for (size_t j = 0; j < i; j++)
            c->slots_repeat |= slots[i] == slots[j];
    /* The round's reader is there from the start, not from the first round
     * without the energy counter: the process's threads do not change
     * while sampling.  Without it, rounds are read one by one. */
    gp_runner *rr = c->slots_repeat ? NULL : gp_nvml_round_runner(c, n);
    if (rr)
        (void)gp_runner_start(rr);
    start_xid(c, indices, n);
    return GP_OK;
}

static void nvml_set_pids(void *ctx, const int *pids, size_t n)
{
    nvml_ctx *c = ctx;
    c->n_pids = n < GP_PROC_PIDS_MAX ? n : GP_PROC_PIDS_MAX;
    if (c->n_pids)
        memcpy(c->pids, pids, c->n_pids * sizeof c->pids[0]);
}

static void nvml_list_processes(void *ctx)
{
    ((nvml_ctx *)ctx)->list_procs = true;
}

static gp_status nvml_processes(void *ctx, unsigned index, gp_process_use *out, size_t cap,
                                size_t *n)
{
    nvml_ctx *c = ctx;
    pthread_mutex_lock(&c->plist_mu);
    const nvml_devref *ref = index < c->n_devs ? &c->devs[index] : NULL;
    gp_status st = ref && ref->plist_ok ? GP_OK : GP_ERR_STATE;
    *n = st == GP_OK ? (ref->n_plist < cap ? ref->n_plist : cap) : 0;
    if (*n)
        memcpy(out, ref->plist, *n * sizeof *out);
    pthread_mutex_unlock(&c->plist_mu);
    return st;
}

const gp_backend gp_backend_nvml = {
    .name = "nvml",
    .self_paced = 0,
    .open = nvml_open,
    .close = nvml_close,
    .device_count = nvml_device_count,
    .device_info = nvml_device_info,
    .driver_version = nvml_driver_version,
    .start = nvml_start,
    .read = gp_nvml_read,
    .read_round = gp_nvml_read_round,
    .read_round_at = gp_nvml_read_round_at,
    .wait_tick = NULL,
    .interrupt = gp_nvml_interrupt,
    .stop = nvml_stop,
    .set_pids = nvml_set_pids,
    .list_processes = nvml_list_processes,
    .processes = nvml_processes,
};
