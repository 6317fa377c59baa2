/*
 * sampler/backends/nvml_runners.c - the NVML backend's runners: the
 * registry of calls stuck in NVML (the process's, shared by every
 * context), the runners' hooks, a bounded call and its error, and a
 * device's job area made ready.
 *
 * Promises: a call that misses its bound is registered with its device
 * (or NVML as a whole) until it returns, and every later call on that
 * device fails at once with how long it has been stuck; messages start
 * with "nvml: ".
 */
#include "../../util/clock.h"
#include "../../util/error.h"
#include "nvml_ctx.h"
#include "nvml_dev.h"
#include "runner.h"
#include "gpu_profile.h"

#include <pthread.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define MAX_STUCK 64

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

void gp_nvml_on_abandon(void *job, const char *what, uint64_t since_ns)
{
    const nvml_key *k = job;
    pthread_mutex_lock(&g_stuck_mu);
    if (g_n_stuck < MAX_STUCK)
        g_stuck[g_n_stuck++] = (stuck_call){k->lib->handle, k->index, job, what, since_ns};
    pthread_mutex_unlock(&g_stuck_mu);
}

void gp_nvml_on_late_done(void *job)
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

void gp_nvml_on_free(void *job)
{
    nvml_key *k = job;
    gp_nvml_lib_unref(k->lib);
}

static const gp_runner_hooks hooks = {.on_abandon = gp_nvml_on_abandon,
                                      .on_late_done = gp_nvml_on_late_done,
                                      .on_free = gp_nvml_on_free};

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

gp_runner *gp_nvml_new_runner_with(nvml_ctx *c, unsigned index, size_t job_size,
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

gp_runner *gp_nvml_new_runner(nvml_ctx *c, unsigned index, size_t job_size)
{
    return gp_nvml_new_runner_with(c, index, job_size, &hooks);
}

/* What a runner said about a job that did not complete, as an error. */
gp_status gp_nvml_runner_error(nvml_ctx *c, unsigned index, gp_status st,
                               const gp_runner_stuck *why, gp_error *err)
{
    if (st == GP_ERR_TIMEOUT)
        return timeout_error(c, index, why->what, why->since_ns, why->before, err);
    if (st != GP_OK)
        return gp_error_set(err, st, "nvml: cannot start a thread for NVML's calls");
    return GP_OK;
}

/* Runs fn on r (whose job area is set up) and maps what did not complete. */
gp_status gp_nvml_run(nvml_ctx *c, gp_runner *r, unsigned index, gp_runner_fn fn, const char *what,
                      gp_error *err)
{
    gp_runner_stuck why;
    gp_status st = gp_runner_call(r, fn, what, gp_now_mono_ns() + c->call_ns, &why);
    return gp_nvml_runner_error(c, index, st, &why, err);
}

/* The idle job area of device index's runner (made on first use), or NULL
 * with *st and err set: a call on it still stuck, no memory. */
nvml_dev *gp_nvml_dev_ready(nvml_ctx *c, unsigned index, gp_status *st, gp_error *err)
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
    if (!ref->r && !(ref->r = gp_nvml_new_runner(c, index, sizeof(nvml_dev)))) {
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

gp_status gp_nvml_sys_stuck(nvml_ctx *c, gp_error *err)
{
    stuck_call sc;
    gp_runner_stuck why;
    if (find_stuck(c, NVML_SYSTEM, &sc))
        return timeout_error(c, NVML_SYSTEM, sc.what, sc.since_ns, true, err);
    if (gp_runner_stuck_now(c->sys, &why))
        return timeout_error(c, NVML_SYSTEM, why.what, why.since_ns, true, err);
    return GP_OK;
}
