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
#include "nvml_dev.h"
#include "runner.h"
#include "gpu_profile.h"

#include <pthread.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define NVML_CALL_TIMEOUT_NS 2000000000ull
#define NVML_MAX_INDEX 65536u /* device indices past this get no thread */
#define MAX_STUCK 64

typedef struct nvml_devref {
    gp_runner *r; /* NULL until the device is first asked */
    /* A round runner given up while it read this device (read_round): kept
     * until its read returns, as this device's stuck call. */
    gp_runner *held_by;
    char name[GP_NAME_MAX]; /* for messages, copied from the jobs' answers */
    /* A call of device_count's MIG listing that missed its deadline: the
     * device's next device_info reports it as its own call would have. */
    gp_status count_st;
    gp_error count_err;
    /* The newest list of its processes (list_procs), under plist_mu of
     * the context: NULL until one was read. */
    gp_process_use *plist;
    size_t n_plist;
    bool plist_ok;
} nvml_devref;

typedef struct nvml_ctx {
    nvml_lib *lib;
    bool sample_pcie;
    uint64_t call_ns; /* the bound of one call */
    gp_runner *sys;
    nvml_devref *devs; /* by device index */
    size_t n_devs;
    unsigned *slot_index; /* slot -> device index, while sampling */
    size_t n_slots;
    bool slots_repeat;          /* a device in two slots: read_round reads one by one */
    uint64_t gen;               /* sampling runs started */
    int pids[GP_PROC_PIDS_MAX]; /* set_pids: copied into each read job */
    size_t n_pids;
    /* MIG instances, listed by device_count: device index n_gpus + i is
     * MIG slot mig[i].slot of the GPU at NVML index mig[i].parent. */
    unsigned n_gpus;
    struct nvml_mig_ref {
        unsigned parent, slot;
    } * mig;
    size_t n_mig;
    nvml_xid *xid;                     /* the run's XID watcher (nvml_xid.c); NULL: none */
    bool list_procs;                   /* every read lists its device's processes too */
    pthread_mutex_t plist_mu;          /* the devices' plist (scrapes read them) */
    gp_runner *round_r;                /* read_round's runner: every device of a round in turn */
    size_t round_cap;                  /* devices its job area holds */
    struct nvml_round_dev *round_list; /* the round being read, round_cap of them */
    gp_runner_batch *batch;            /* parallel_read's: one sleep of ours for all */
} nvml_ctx;

/* ------------------------------------------------- calls stuck in NVML */

typedef struct stuck_call {
    const void *handle; /* the library (dlopen's handle: one per library) */
    unsigned index;     /* the device, or NVML_SYSTEM */
    const void *token;  /* the job area: removed when that job returns */
    const char *what;
    uint64_t since_ns;
} stuck_call;

static pthread_mutex_t g_stuck_mu = PTHREAD_MUTEX_INITIALIZER;
static stuck_call g_stuck[MAX_STUCK];
static size_t g_n_stuck;

static void on_abandon(void *job, const char *what, uint64_t since_ns)
{
    const nvml_key *k = job;
    pthread_mutex_lock(&g_stuck_mu);
    if (g_n_stuck < MAX_STUCK)
        g_stuck[g_n_stuck++] = (stuck_call){k->lib->handle, k->index, job, what, since_ns};
    pthread_mutex_unlock(&g_stuck_mu);
}

static void on_late_done(void *job)
{
    pthread_mutex_lock(&g_stuck_mu);
    for (size_t i = 0; i < g_n_stuck;) {
        if (g_stuck[i].token == job)
            g_stuck[i] = g_stuck[--g_n_stuck];
        else
            i++;
    }
    pthread_mutex_unlock(&g_stuck_mu);
}

static void on_free(void *job)
{
    nvml_key *k = job;
    gp_nvml_lib_unref(k->lib);
}

static const gp_runner_hooks hooks = {
    .on_abandon = on_abandon, .on_late_done = on_late_done, .on_free = on_free};

/* A call of this library still stuck on device index (or on a call that
 * names no device, which holds every device). */
static bool find_stuck(const nvml_ctx *c, unsigned index, stuck_call *out)
{
    bool found = false;
    pthread_mutex_lock(&g_stuck_mu);
    for (size_t i = 0; i < g_n_stuck && !found; i++) {
        const stuck_call *s = &g_stuck[i];
        if (s->handle == c->lib->handle && (s->index == index || s->index == NVML_SYSTEM)) {
            *out = *s;
            found = true;
        }
    }
    pthread_mutex_unlock(&g_stuck_mu);
    return found;
}

static gp_status timeout_error(const nvml_ctx *c, unsigned index, const char *what,
                               uint64_t since_ns, bool before, gp_error *err)
{
    char dev[GP_NAME_MAX + 48] = "";
    const char *who = "NVML";
    if (index != NVML_SYSTEM) {
        const char *name = index < c->n_devs ? c->devs[index].name : "";
        if (name[0])
            snprintf(dev, sizeof dev, "device %u (%s): ", index, name);
        else
            snprintf(dev, sizeof dev, "device %u: ", index);
        who = "the device";
    }
    if (!what || !what[0])
        what = "an NVML call";
    if (before) {
        uint64_t now = gp_now_mono_ns();
        double for_s = now > since_ns ? (double)(now - since_ns) / 1e9 : 0.0;
        return gp_error_set(err, GP_ERR_TIMEOUT,
                            "nvml: %s%s has not answered for %.1f s: %s is not asked again until "
                            "it does",
                            dev, what, for_s, who);
    }
    return gp_error_set(err, GP_ERR_TIMEOUT,
                        "nvml: %s%s did not answer within %.3g s: %s is not asked again until "
                        "that call returns",
                        dev, what, (double)c->call_ns / 1e9, who);
}

/* ------------------------------------------------------------- runners */

static gp_runner *new_runner_with(nvml_ctx *c, unsigned index, size_t job_size,
                                  const gp_runner_hooks *h)
{
    gp_runner *r = gp_runner_create(job_size, h);
    if (!r)
        return NULL;
    nvml_key *k = gp_runner_job(r);
    gp_nvml_lib_ref(c->lib);
    k->lib = c->lib;
    k->index = index;
    return r;
}

static gp_runner *new_runner(nvml_ctx *c, unsigned index, size_t job_size)
{
    return new_runner_with(c, index, job_size, &hooks);
}

/* What a runner said about a job that did not complete, as an error. */
static gp_status runner_error(nvml_ctx *c, unsigned index, gp_status st, const gp_runner_stuck *why,
                              gp_error *err)
{
    if (st == GP_ERR_TIMEOUT)
        return timeout_error(c, index, why->what, why->since_ns, why->before, err);
    if (st != GP_OK)
        return gp_error_set(err, st, "nvml: cannot start a thread for NVML's calls");
    return GP_OK;
}

/* Runs fn on r (whose job area is set up) and maps what did not complete. */
static gp_status run(nvml_ctx *c, gp_runner *r, unsigned index, gp_runner_fn fn, const char *what,
                     gp_error *err)
{
    gp_runner_stuck why;
    gp_status st = gp_runner_call(r, fn, what, gp_now_mono_ns() + c->call_ns, &why);
    return runner_error(c, index, st, &why, err);
}

/* A call that names no device; its answer stays in the system job area. */
static gp_status sys_call(nvml_ctx *c, enum nvml_sys_op op, gp_error *err)
{
    stuck_call sc;
    gp_runner_stuck why;
    if (find_stuck(c, NVML_SYSTEM, &sc))
        return timeout_error(c, NVML_SYSTEM, sc.what, sc.since_ns, true, err);
    if (gp_runner_stuck_now(c->sys, &why))
        return timeout_error(c, NVML_SYSTEM, why.what, why.since_ns, true, err);
    nvml_sys *j = gp_runner_job(c->sys);
    j->op = op;
    gp_status st = run(c, c->sys, NVML_SYSTEM, gp_nvml_job_system, "NVML", err);
    if (st != GP_OK)
        return st;
    if (j->status != GP_OK && err)
        *err = j->err;
    return j->status;
}

/* The idle job area of device index's runner (made on first use), or NULL
 * with *st and err set: a call on it still stuck, no memory. */
static nvml_dev *dev_ready(nvml_ctx *c, unsigned index, gp_status *st, gp_error *err)
{
    stuck_call sc;
    gp_runner_stuck why;
    if (index >= NVML_MAX_INDEX) {
        *st = gp_error_set(err, GP_ERR_DEVICE_NOT_FOUND, "nvml: device %u does not exist", index);
        return NULL;
    }
    if (c->n_mig && index >= c->n_gpus + c->n_mig) {
        unsigned n = c->n_gpus + (unsigned)c->n_mig;
        *st = gp_error_set(err, GP_ERR_DEVICE_NOT_FOUND,
                           "nvml: device %u does not exist: %u devices (0-%u; MIG instances from "
                           "%u)",
                           index, n, n - 1, c->n_gpus);
        return NULL;
    }
    if (find_stuck(c, index, &sc)) {
        *st = timeout_error(c, index, sc.what, sc.since_ns, true, err);
        return NULL;
    }
    if (index >= c->n_devs) {
        size_t n = (size_t)index + 1;
        nvml_devref *d = realloc(c->devs, n * sizeof *d);
        if (!d) {
            *st = gp_error_set(err, GP_ERR_NO_MEMORY, "nvml: out of memory");
            return NULL;
        }
        memset(d + c->n_devs, 0, (n - c->n_devs) * sizeof *d);
        c->devs = d;
        c->n_devs = n;
    }
    nvml_devref *ref = &c->devs[index];
    if (ref->held_by) {
        if (gp_runner_stuck_now(ref->held_by, &why)) {
            *st = timeout_error(c, index, why.what, why.since_ns, true, err);
            return NULL;
        }
        gp_runner_release(ref->held_by); /* its late read returned: joined at once */
        ref->held_by = NULL;
    }
    if (!ref->r && !(ref->r = new_runner(c, index, sizeof(nvml_dev)))) {
        *st = gp_error_set(err, GP_ERR_NO_MEMORY, "nvml: out of memory");
        return NULL;
    }
    if (gp_runner_stuck_now(ref->r, &why)) {
        *st = timeout_error(c, index, why.what, why.since_ns, true, err);
        return NULL;
    }
    nvml_dev *d = gp_runner_job(ref->r);
    d->sample_pcie = c->sample_pcie;
    d->gen = c->gen;
    d->is_mig = c->n_mig && index >= c->n_gpus && index - c->n_gpus < c->n_mig;
    d->parent = d->is_mig ? c->mig[index - c->n_gpus].parent : index;
    d->mig_slot = d->is_mig ? c->mig[index - c->n_gpus].slot : 0;
    return d;
}

/* Runs a device job on d (from dev_ready); its status, err copied. */
static gp_status dev_run(nvml_ctx *c, unsigned index, nvml_dev *d, gp_runner_fn fn,
                         const char *what, gp_error *err)
{
    gp_status st = run(c, c->devs[index].r, index, fn, what, err);
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
    c->call_ns = NVML_CALL_TIMEOUT_NS;
    if (cfg && cfg->timeout_ns && cfg->timeout_ns < c->call_ns)
        c->call_ns = cfg->timeout_ns;
    gp_status st = gp_nvml_lib_load(cfg ? cfg->nvml_library : NULL, &c->lib, err);
    if (st == GP_OK && !(c->sys = new_runner(c, NVML_SYSTEM, sizeof(nvml_sys))))
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
        nvml_dev *d = dev_ready(c, i, &st, NULL);
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
    nvml_dev *d = dev_ready(c, index, &st, err);
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
        nvml_dev *d = index < c->n_devs && c->devs[index].r ? dev_ready(c, index, &st, NULL) : NULL;
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
    stuck_call sc;
    gp_runner_stuck why;
    if (find_stuck(c, NVML_SYSTEM, &sc) || gp_runner_stuck_now(c->sys, &why))
        return NULL;
    nvml_sys *j = gp_runner_job(c->sys);
    j->event_free = to_free != NULL;
    j->event_set = to_free;
    if (run(c, c->sys, NVML_SYSTEM, gp_nvml_job_event_set, "nvmlEventSetCreate", NULL) != GP_OK)
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
        nvml_dev *d = dev_ready(c, indices[i], &st, NULL);
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

static gp_runner *round_runner(nvml_ctx *c, size_t n);

static gp_status nvml_start(void *ctx, const unsigned *indices, size_t n, uint64_t interval_ns,
                            gp_error *err)
{
    nvml_ctx *c = ctx;
    (void)interval_ns; /* polled: the sampler keeps the time */
    nvml_stop(c);
    unsigned *slots = calloc(n ? n : 1, sizeof *slots);
    if (!slots)
        return gp_error_set(err, GP_ERR_NO_MEMORY, "nvml: out of memory for %zu devices", n);
    c->gen++;
    gp_status st = GP_OK;
    for (size_t i = 0; i < n && st == GP_OK; i++) {
        slots[i] = indices[i];
        nvml_dev *d = dev_ready(c, indices[i], &st, err);
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
    gp_runner *rr = c->slots_repeat ? NULL : round_runner(c, n);
    if (rr)
        (void)gp_runner_start(rr);
    start_xid(c, indices, n);
    return GP_OK;
}

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
    nvml_dev *d = dev_ready(c, c->slot_index[slot], st, err);
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

static gp_status nvml_read(void *ctx, size_t slot, unsigned flags, gp_device_sample *out,
                           gp_error *err)
{
    nvml_ctx *c = ctx;
    gp_status st;
    nvml_dev *d = read_ready(c, slot, flags, out, &st, err);
    if (!d)
        return st;
    unsigned index = c->slot_index[slot];
    st = run(c, c->devs[index].r, index, gp_nvml_job_read, "nvmlDeviceGetUtilizationRates", err);
    return read_done(c, index, d, st, out, err);
}

/* ------------------------------------------------------------ rounds */

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
    size_t n;
    nvml_round_dev e[];
} nvml_round;

static void round_on_step(void *job, size_t step)
{
    nvml_round *j = job;
    j->key.index = j->e[step].index;
}

static const gp_runner_hooks round_hooks = {.on_abandon = on_abandon,
                                            .on_late_done = on_late_done,
                                            .on_free = on_free,
                                            .on_step = round_on_step};

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
static gp_runner *round_runner(nvml_ctx *c, size_t n)
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
        c->round_r = new_runner_with(c, NVML_SYSTEM,
                                     sizeof(nvml_round) + c->round_cap * sizeof(nvml_round_dev),
                                     &round_hooks);
    return c->round_r;
}

/* Reads list[0..n) on the round runner, one post: how many entries are
 * over (n; or k + 1 when entry k did not answer within the bound: its
 * status is the timeout, the runner is kept as its device's held_by, the
 * entries after it are left for a fresh runner).  Entries read keep status
 * GP_OK here; read_done takes their own. */
static size_t round_read(nvml_ctx *c, const nvml_round_dev *list, size_t n, gp_status *status,
                         gp_error *errs)
{
    gp_runner *r = round_runner(c, n);
    gp_runner_stuck why;
    gp_status st = GP_ERR_NO_MEMORY;
    if (r) {
        nvml_round *j = gp_runner_job(r);
        memcpy(j->e, list, n * sizeof *list);
        j->n = n;
        j->key.index = list[0].index; /* given up before its first step: the first device */
        st = gp_runner_post(r, round_job, READ_WHAT, &why);
        if (st == GP_OK) {
            st = gp_runner_wait_steps(r, c->call_ns, &why);
            if (st == GP_OK)
                return n;
            if (st == GP_ERR_TIMEOUT && why.step < n) {
                const nvml_round_dev *hung = &list[why.step];
                status[hung->slot] = runner_error(c, hung->index, st, &why, &errs[hung->slot]);
                c->devs[hung->index].held_by = r;
                c->round_r = NULL;
                return why.step + 1;
            }
        }
    }
    for (size_t k = 0; k < n; k++) /* no runner to read them: each device fails */
        status[list[k].slot] = st == GP_ERR_NO_MEMORY
                                   ? gp_error_set(&errs[list[k].slot], st, "nvml: out of memory")
                                   : runner_error(c, list[k].index, st, &why, &errs[list[k].slot]);
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
            status[e->slot] = runner_error(c, e->index, st, &why, &errs[e->slot]);
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
            status[e->slot] =
                runner_error(c, e->index, gp_runner_wait(c->devs[e->index].r, e->deadline_ns, &why),
                             &why, &errs[e->slot]);
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
static void nvml_read_round(void *ctx, size_t n, const unsigned *flags, gp_device_sample *out,
                            gp_status *status, gp_error *errs)
{
    nvml_ctx *c = ctx;
    bool one_by_one = c->slots_repeat || !round_runner(c, c->n_slots);
    size_t m = 0, energy = 0;
    for (size_t i = 0; i < n; i++) {
        if (flags[i] == GP_READ_SKIP)
            continue;
        if (one_by_one || i >= c->n_slots) {
            status[i] = nvml_read(c, i, flags[i], &out[i], &errs[i]);
            continue;
        }
        nvml_dev *d = read_ready(c, i, flags[i], &out[i], &status[i], &errs[i]);
        if (d) {
            c->round_list[m++] = (nvml_round_dev){c->slot_index[i], i, d, 0};
            status[i] = GP_OK;
            energy += (flags[i] & GP_READ_ENERGY) != 0;
        }
    }
    for (size_t from = 0; from < m;) {
        size_t over = m - from;
        if (energy > 1)
            parallel_read(c, c->round_list, m, status, errs);
        else
            over = round_read(c, c->round_list + from, m - from, status, errs);
        for (size_t k = from; k < from + over; k++) {
            const nvml_round_dev *e = &c->round_list[k];
            if (status[e->slot] == GP_OK)
                status[e->slot] =
                    read_done(c, e->index, e->d, GP_OK, &out[e->slot], &errs[e->slot]);
        }
        from += over;
    }
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
    .read = nvml_read,
    .read_round = nvml_read_round,
    .wait_tick = NULL,
    .interrupt = NULL,
    .stop = nvml_stop,
    .set_pids = nvml_set_pids,
    .list_processes = nvml_list_processes,
    .processes = nvml_processes,
};
