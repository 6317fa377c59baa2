/*
 * sampler/backends/nvml_xid.c - XID errors through NVML's event API: the
 * run's GPUs registered for nvmlEventTypeXidCriticalError, then one thread
 * per sampling run waiting in nvmlEventSetWait_v2 with a short timeout,
 * counting each GPU's events and keeping its newest XID.
 *
 * Promises: every call outside the thread is bounded like any NVML call
 * (the set made on the system runner, each GPU registered on its own); a
 * GPU whose registration is refused (not supported, no permission) has no
 * XID figures (absent, never 0), one registered has them from then on (0
 * events until one comes); no GPU registered, no thread.  Stop returns
 * within WAIT_MS plus scheduling: a thread still inside NVML past
 * STOP_GRACE_MS is detached and frees itself when that call returns (it
 * holds its own reference to the library, so NVML stays loaded under it).
 * Events NVML reports before the registration are not seen (NVML keeps
 * none for a set created later).
 */
#include "nvml_abi.h"
#include "nvml_dev.h"
#include "gpu_profile.h"

#include "../../util/thread.h"

#include <errno.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

/* How long one wait blocks: the bound on how late stop is noticed. */
#define WAIT_MS 100u
#define STOP_GRACE_MS 5000

typedef struct xid_dev {
    unsigned index;
    nvmlDevice_t dev;
    bool registered; /* under mu */
    uint64_t count;  /* under mu */
    uint32_t last;   /* under mu */
} xid_dev;

struct nvml_xid {
    pthread_mutex_t mu;
    pthread_cond_t cv;
    nvml_lib *lib;             /* a reference of the thread's */
    bool stop, done, detached; /* under mu */
    pthread_t th;
    nvmlEventSet_t set; /* the thread's: freed when it ends */
    size_t n;
    xid_dev devs[];
};

static void xid_free(nvml_xid *x)
{
    nvml_lib *l = x->lib;
    pthread_cond_destroy(&x->cv);
    pthread_mutex_destroy(&x->mu);
    free(x);
    gp_nvml_lib_unref(l);
}

static bool stopping(nvml_xid *x)
{
    pthread_mutex_lock(&x->mu);
    bool s = x->stop;
    pthread_mutex_unlock(&x->mu);
    return s;
}

/* After an error other than a timeout (a lost GPU answers at once): a
 * pause, cut short by stop, so the loop never spins. */
static void pause_or_stop(nvml_xid *x)
{
    struct timespec until;
    clock_gettime(CLOCK_REALTIME, &until);
    until.tv_nsec += (long)WAIT_MS * 1000000L;
    if (until.tv_nsec >= 1000000000L) {
        until.tv_sec++;
        until.tv_nsec -= 1000000000L;
    }
    pthread_mutex_lock(&x->mu);
    while (!x->stop && pthread_cond_timedwait(&x->cv, &x->mu, &until) != ETIMEDOUT)
        ;
    pthread_mutex_unlock(&x->mu);
}

static void take_event(nvml_xid *x, const nvmlEventData_t *e)
{
    if (!(e->eventType & nvmlEventTypeXidCriticalError))
        return;
    pthread_mutex_lock(&x->mu);
    for (size_t i = 0; i < x->n; i++)
        if (x->devs[i].registered && x->devs[i].dev == e->device) {
            x->devs[i].count++;
            x->devs[i].last = (uint32_t)e->eventData;
        }
    pthread_mutex_unlock(&x->mu);
}

static void watch(nvml_xid *x, nvmlEventSet_t set)
{
    const nvml_api *a = &x->lib->api;
    while (!stopping(x)) {
        nvmlEventData_t e;
        memset(&e, 0, sizeof e);
        nvmlReturn_t rc = a->event_wait(set, &e, WAIT_MS);
        if (rc == NVML_SUCCESS)
            take_event(x, &e);
        else if (rc != NVML_ERROR_TIMEOUT)
            pause_or_stop(x);
    }
}

static void *xid_main(void *arg)
{
    nvml_xid *x = arg;
    watch(x, x->set);
    x->lib->api.event_free(x->set);
    pthread_mutex_lock(&x->mu);
    x->done = true;
    bool detached = x->detached;
    pthread_cond_broadcast(&x->cv);
    pthread_mutex_unlock(&x->mu);
    if (detached)
        xid_free(x);
    return NULL;
}

void gp_nvml_job_event_set(gp_runner *r, void *job)
{
    nvml_sys *j = job;
    const nvml_api *a = &j->key.lib->api;
    j->status = GP_OK;
    if (j->event_free) {
        gp_runner_doing(r, "nvmlEventSetFree");
        a->event_free(j->event_set);
        j->event_set = NULL;
        return;
    }
    j->event_set = NULL;
    gp_runner_doing(r, "nvmlEventSetCreate");
    if (a->event_create(&j->event_set) != NVML_SUCCESS)
        j->event_set = NULL;
}

void gp_nvml_job_event_register(gp_runner *r, void *job)
{
    nvml_dev *d = job;
    gp_runner_doing(r, "nvmlDeviceRegisterEvents");
    d->event_ok = d->key.lib->api.event_register(d->dev, nvmlEventTypeXidCriticalError,
                                                 d->event_set) == NVML_SUCCESS;
    d->status = GP_OK;
}

nvml_xid *gp_nvml_xid_start(nvml_lib *lib, nvmlEventSet_t set, const unsigned *indices,
                            const nvmlDevice_t *handles, size_t n)
{
    if (!lib || !set || n == 0)
        return NULL;
    nvml_xid *x = calloc(1, sizeof *x + n * sizeof x->devs[0]);
    if (!x)
        return NULL;
    pthread_mutex_init(&x->mu, NULL);
    pthread_cond_init(&x->cv, NULL);
    x->n = n;
    x->set = set;
    for (size_t i = 0; i < n; i++) {
        x->devs[i].index = indices[i];
        x->devs[i].dev = handles[i];
        x->devs[i].registered = true;
    }
    gp_nvml_lib_ref(lib);
    x->lib = lib;
    if (gp_thread_start(&x->th, xid_main, x) != 0) {
        xid_free(x);
        return NULL;
    }
    return x;
}

void gp_nvml_xid_stop(nvml_xid *x)
{
    if (!x)
        return;
    struct timespec until;
    clock_gettime(CLOCK_REALTIME, &until);
    until.tv_sec += STOP_GRACE_MS / 1000;
    pthread_mutex_lock(&x->mu);
    x->stop = true;
    pthread_cond_broadcast(&x->cv);
    while (!x->done && pthread_cond_timedwait(&x->cv, &x->mu, &until) != ETIMEDOUT)
        ;
    bool done = x->done;
    x->detached = !done;
    pthread_mutex_unlock(&x->mu);
    if (done) {
        pthread_join(x->th, NULL);
        xid_free(x);
    } else {
        pthread_detach(x->th); /* it frees itself when NVML lets it go */
    }
}

void gp_nvml_xid_fill(nvml_xid *x, unsigned index, gp_device_sample *out)
{
    if (!x)
        return;
    pthread_mutex_lock(&x->mu);
    for (size_t i = 0; i < x->n; i++)
        if (x->devs[i].index == index && x->devs[i].registered) {
            out->xid_count = x->devs[i].count;
            out->xid_last = x->devs[i].last;
            out->health_valid |= GP_H_XID;
        }
    pthread_mutex_unlock(&x->mu);
}
