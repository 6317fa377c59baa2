/*
 * sampler/backends/runner.c - calls bounded in time: one worker thread per
 * runner, one job at a time, the owner waiting with a deadline.
 *
 * Promises: the owner never waits past its deadline; a job is never
 * cancelled or freed under its thread (an abandoned job runs to its end,
 * then the hooks say so); the runner's thread has every signal blocked;
 * whoever lets go last (the owner, or the thread of a job that was stuck
 * when the owner let go) frees the runner and calls on_free once.  A job
 * in steps (gp_runner_step) is bounded per step: each step gets the whole
 * bound from its own start, and a job abandoned in one step begins no
 * other.
 */
#include "../../util/clock.h"
#include "../../util/thread.h"
#include "runner.h"
#include "gpu_profile.h"

#include <errno.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

struct gp_runner {
    pthread_mutex_t mu;
    pthread_cond_t cv; /* CLOCK_MONOTONIC: a job posted, a job done */
    pthread_t thread;
    bool thread_started;
    gp_runner_fn pending; /* posted, not yet taken by the thread */
    bool running;         /* the thread is inside a job */
    bool abandoned;       /* the owner gave up on the job posted last */
    bool quit;            /* the owner let go */
    bool orphaned;        /* ... while a job was stuck: the thread frees */
    uint64_t posted, done;
    bool waited; /* the owner waited for the job posted last (or none was) */
    /* A paced job (gp_runner_post_at): when the pending job may start (0:
     * now), withdrawn by gp_runner_cancel before then; when the owner
     * expects to post its next one (the thread naps until then on its own
     * rather than waiting to be told); and the end of the thread's current
     * timed sleep (0: none), which a job posted for then or later need not
     * cut short. */
    uint64_t start_ns;
    bool cancel;
    uint64_t nap_ns;
    uint64_t sleep_ns;
    const char *what;
    uint64_t since_ns; /* the job's start, or its current step's */
    size_t step;       /* the current step (gp_runner_step); 0 before any */
    gp_runner_hooks hooks;
    void *job;
    gp_runner_batch *batch; /* told when the job posted last returns */
    gp_runner *tied;        /* released when this runner is freed (gp_runner_tie) */
};

/* Jobs handed to a runner's thread in this process: what a round costs in
 * wake-ups, told to tests and the bench without a clock. */
static atomic_uint_fast64_t g_posts;

uint64_t gp_runner_posts(void)
{
    return (uint64_t)atomic_load_explicit(&g_posts, memory_order_relaxed);
}

/* Sleeps of owners waiting for their jobs (gp_runner_wait*). */
static atomic_uint_fast64_t g_owner_sleeps;

uint64_t gp_runner_owner_sleeps(void)
{
    return (uint64_t)atomic_load_explicit(&g_owner_sleeps, memory_order_relaxed);
}

struct gp_runner_batch {
    pthread_mutex_t mu; /* taken after a runner's mu, never before */
    pthread_cond_t cv;  /* CLOCK_MONOTONIC: pending reached 0 */
    size_t pending;     /* jobs posted with the batch, not returned nor abandoned */
};

gp_runner_batch *gp_runner_batch_create(void)
{
    gp_runner_batch *b = calloc(1, sizeof *b);
    if (!b)
        return NULL;
    pthread_mutex_init(&b->mu, NULL);
    gp_cond_init_mono(&b->cv);
    return b;
}

void gp_runner_batch_free(gp_runner_batch *b)
{
    if (!b)
        return;
    pthread_mutex_destroy(&b->mu);
    pthread_cond_destroy(&b->cv);
    free(b);
}

/* A job of the batch returned or was given up: called with r->mu held. */
static void batch_leave_locked(gp_runner *r)
{
    gp_runner_batch *b = r->batch;
    if (!b)
        return;
    r->batch = NULL;
    pthread_mutex_lock(&b->mu);
    if (b->pending && --b->pending == 0)
        pthread_cond_signal(&b->cv);
    pthread_mutex_unlock(&b->mu);
}

void gp_runner_batch_wait(gp_runner_batch *b, uint64_t deadline_mono_ns)
{
    struct timespec ts = {(time_t)(deadline_mono_ns / 1000000000ull),
                          (long)(deadline_mono_ns % 1000000000ull)};
    pthread_mutex_lock(&b->mu);
    while (b->pending && gp_now_mono_ns() < deadline_mono_ns)
        pthread_cond_timedwait(&b->cv, &b->mu, &ts);
    pthread_mutex_unlock(&b->mu);
}

static void destroy(gp_runner *r)
{
    if (r->hooks.on_free)
        r->hooks.on_free(r->job);
    gp_runner_release(r->tied);
    pthread_mutex_destroy(&r->mu);
    pthread_cond_destroy(&r->cv);
    free(r->job);
    free(r);
}

gp_runner *gp_runner_create(size_t job_size, const gp_runner_hooks *hooks)
{
    gp_runner *r = calloc(1, sizeof *r);
    if (!r)
        return NULL;
    r->job = calloc(1, job_size ? job_size : 1);
    if (!r->job) {
        free(r);
        return NULL;
    }
    r->waited = true;
    if (hooks)
        r->hooks = *hooks;
    gp_cond_init_mono(&r->cv);
    pthread_mutex_init(&r->mu, NULL);
    return r;
}

void *gp_runner_job(gp_runner *r)
{
    return r->job;
}

static bool busy_locked(const gp_runner *r)
{
    return r->running || r->pending;
}

static void fill_why(const gp_runner *r, gp_runner_stuck *why, bool before)
{
    if (!why)
        return;
    why->what = r->what ? r->what : "";
    why->since_ns = r->since_ns;
    why->step = r->step;
    why->before = before;
}

bool gp_runner_stuck_now(gp_runner *r, gp_runner_stuck *why)
{
    pthread_mutex_lock(&r->mu);
    bool stuck = busy_locked(r);
    if (stuck)
        fill_why(r, why, true);
    pthread_mutex_unlock(&r->mu);
    return stuck;
}

void gp_runner_doing(gp_runner *r, const char *what)
{
    pthread_mutex_lock(&r->mu);
    r->what = what;
    pthread_mutex_unlock(&r->mu);
}

bool gp_runner_step(gp_runner *r, const char *what, size_t step)
{
    pthread_mutex_lock(&r->mu);
    bool go = !r->abandoned;
    if (go) {
        r->what = what;
        r->since_ns = gp_now_mono_ns();
        r->step = step;
        if (r->hooks.on_step)
            r->hooks.on_step(r->job, step);
    }
    pthread_mutex_unlock(&r->mu);
    return go;
}

static void timed_wait(gp_runner *r, uint64_t deadline_ns)
{
    struct timespec ts = {(time_t)(deadline_ns / 1000000000ull),
                          (long)(deadline_ns % 1000000000ull)};
    pthread_cond_timedwait(&r->cv, &r->mu, &ts);
}

/* The thread's wait for a job it may begin: true with one pending whose
 * start came (once told to quit: any pending one not withdrawn, as before
 * paced jobs); false when told to quit.  A paced job's start and the
 * owner's next post (nap_ns) are slept to on the thread's own clock, so
 * that a round posted ahead costs this thread one wake-up, at its start.
 * Called and returns with the lock held. */
static bool await_job(gp_runner *r)
{
    for (;;) {
        bool have = r->pending && !r->cancel;
        if (r->quit)
            return have;
        uint64_t wake_ns = 0;
        if (have || (!r->pending && r->nap_ns)) {
            uint64_t now = gp_now_mono_ns();
            wake_ns = have ? r->start_ns : r->nap_ns;
            if (have && now >= wake_ns)
                return true;
            if (now >= wake_ns) /* the owner is late: told when it posts */
                wake_ns = r->nap_ns = 0;
        }
        r->sleep_ns = wake_ns;
        if (wake_ns)
            timed_wait(r, wake_ns);
        else
            pthread_cond_wait(&r->cv, &r->mu);
        r->sleep_ns = 0;
    }
}

static void *runner_main(void *arg)
{
    gp_runner *r = arg;
    pthread_mutex_lock(&r->mu);
    for (;;) {
        if (!await_job(r))
            break; /* quit, idle */
        gp_runner_fn fn = r->pending;
        r->pending = NULL;
        r->start_ns = 0;
        r->running = true;
        pthread_mutex_unlock(&r->mu);
        fn(r, r->job);
        pthread_mutex_lock(&r->mu);
        r->running = false;
        r->done = r->posted;
        batch_leave_locked(r);
        if (r->abandoned) {
            r->abandoned = false;
            if (r->hooks.on_late_done)
                r->hooks.on_late_done(r->job);
        }
        if (r->quit) {
            pthread_cond_broadcast(&r->cv);
            break;
        }
        /* Told after the unlock, so the owner it wakes finds the lock free
         * rather than sleeping on it again: one context switch a job less.
         * The owner holds the runner until this thread is joined. */
        pthread_mutex_unlock(&r->mu);
        pthread_cond_broadcast(&r->cv);
        pthread_mutex_lock(&r->mu);
    }
    bool free_it = r->orphaned;
    pthread_mutex_unlock(&r->mu);
    if (free_it)
        destroy(r);
    return NULL;
}

/* Starts the thread with every signal blocked: signals belong to the
 * program's threads.  Called with the lock held. */
static int start_thread(gp_runner *r)
{
    int rc = gp_thread_start(&r->thread, runner_main, r);
    if (rc == 0)
        r->thread_started = true;
    return rc;
}

gp_status gp_runner_start(gp_runner *r)
{
    pthread_mutex_lock(&r->mu);
    int rc = r->thread_started ? 0 : start_thread(r);
    pthread_mutex_unlock(&r->mu);
    return rc == 0 ? GP_OK : GP_ERR_THREAD;
}

gp_status gp_runner_post(gp_runner *r, gp_runner_fn fn, const char *what, gp_runner_stuck *why)
{
    return gp_runner_post_batch(r, fn, what, NULL, why);
}

static gp_status post_job(gp_runner *r, gp_runner_fn fn, const char *what, gp_runner_batch *batch,
                          uint64_t start_ns, uint64_t next_ns, gp_runner_stuck *why);

gp_status gp_runner_post_batch(gp_runner *r, gp_runner_fn fn, const char *what,
                               gp_runner_batch *batch, gp_runner_stuck *why)
{
    return post_job(r, fn, what, batch, 0, 0, why);
}

gp_status gp_runner_post_at(gp_runner *r, gp_runner_fn fn, const char *what, uint64_t start_mono_ns,
                            uint64_t next_mono_ns, gp_runner_stuck *why)
{
    return post_job(r, fn, what, NULL, start_mono_ns ? start_mono_ns : 1, next_mono_ns, why);
}

bool gp_runner_cancel(gp_runner *r)
{
    pthread_mutex_lock(&r->mu);
    bool cancel = r->pending && r->start_ns && !r->cancel;
    if (cancel)
        r->cancel = true;
    pthread_mutex_unlock(&r->mu);
    if (cancel)
        pthread_cond_broadcast(&r->cv); /* the owner withdraws it (wait_job) */
    return cancel;
}

static gp_status post_job(gp_runner *r, gp_runner_fn fn, const char *what, gp_runner_batch *batch,
                          uint64_t start_ns, uint64_t next_ns, gp_runner_stuck *why)
{
    pthread_mutex_lock(&r->mu);
    if (busy_locked(r)) {
        fill_why(r, why, true);
        pthread_mutex_unlock(&r->mu);
        return GP_ERR_TIMEOUT;
    }
    if (!r->thread_started && start_thread(r) != 0) {
        pthread_mutex_unlock(&r->mu);
        return GP_ERR_THREAD;
    }
    r->pending = fn;
    r->what = what;
    r->since_ns = gp_now_mono_ns();
    /* Until a paced job begins, its owner's deadline counts from its start. */
    if (start_ns > r->since_ns)
        r->since_ns = start_ns;
    r->start_ns = start_ns;
    r->nap_ns = next_ns;
    /* A thread asleep until this job's start or earlier wakes on its own. */
    bool wake = !(start_ns && r->sleep_ns && r->sleep_ns <= start_ns);
    r->step = 0;
    ++r->posted;
    atomic_fetch_add_explicit(&g_posts, 1, memory_order_relaxed);
    r->waited = false;
    if (batch) {
        r->batch = batch;
        pthread_mutex_lock(&batch->mu);
        batch->pending++;
        pthread_mutex_unlock(&batch->mu);
    }
    pthread_mutex_unlock(&r->mu);
    if (wake)
        pthread_cond_broadcast(&r->cv); /* after the unlock: the thread finds the lock free */
    return GP_OK;
}

/* Waits for the job posted last until deadline_mono_ns, or (step_ns not 0)
 * until its current step has run step_ns; the deadline of a job in steps
 * moves with each step, and is read again whenever the sleep ends. */
static gp_status wait_job(gp_runner *r, uint64_t deadline_mono_ns, uint64_t step_ns,
                          gp_runner_stuck *why)
{
    pthread_mutex_lock(&r->mu);
    if (r->waited) { /* nothing posted since the last wait */
        pthread_mutex_unlock(&r->mu);
        return GP_ERR_STATE;
    }
    r->waited = true;
    uint64_t seq = r->posted;
    /* The job may be done already (posted earlier, others waited for
     * meanwhile): then no clock read and no sleep. */
    while (r->done < seq) {
        if (r->cancel) { /* a paced job not begun, withdrawn: never runs */
            r->cancel = false;
            r->pending = NULL;
            r->start_ns = r->nap_ns = 0;
            r->done = seq;
            pthread_mutex_unlock(&r->mu);
            return GP_ERR_STATE;
        }
        uint64_t deadline = step_ns ? r->since_ns + step_ns : deadline_mono_ns;
        if (gp_now_mono_ns() >= deadline)
            break;
        atomic_fetch_add_explicit(&g_owner_sleeps, 1, memory_order_relaxed);
        timed_wait(r, deadline);
    }
    gp_status st = GP_OK;
    if (r->done < seq) {
        r->abandoned = true;
        batch_leave_locked(r); /* the batch may be freed before the job returns */
        fill_why(r, why, false);
        if (r->hooks.on_abandon)
            r->hooks.on_abandon(r->job, r->what ? r->what : "", r->since_ns);
        st = GP_ERR_TIMEOUT;
    }
    pthread_mutex_unlock(&r->mu);
    return st;
}

gp_status gp_runner_wait(gp_runner *r, uint64_t deadline_mono_ns, gp_runner_stuck *why)
{
    return wait_job(r, deadline_mono_ns, 0, why);
}

gp_status gp_runner_wait_steps(gp_runner *r, uint64_t step_ns, gp_runner_stuck *why)
{
    return wait_job(r, 0, step_ns ? step_ns : 1, why);
}

gp_status gp_runner_call(gp_runner *r, gp_runner_fn fn, const char *what, uint64_t deadline_mono_ns,
                         gp_runner_stuck *why)
{
    gp_status st = gp_runner_post(r, fn, what, why);
    return st == GP_OK ? gp_runner_wait(r, deadline_mono_ns, why) : st;
}

void gp_runner_tie(gp_runner *r, gp_runner *other)
{
    pthread_mutex_lock(&r->mu);
    gp_runner *was = r->tied;
    r->tied = other;
    pthread_mutex_unlock(&r->mu);
    gp_runner_release(was);
}

void gp_runner_release(gp_runner *r)
{
    if (!r)
        return;
    pthread_mutex_lock(&r->mu);
    r->quit = true;
    bool stuck = busy_locked(r);
    if (stuck && r->thread_started) {
        r->orphaned = true;
        pthread_detach(r->thread);
        /* A paced job not begun: begin, or drop it.  Told under the lock:
         * once it is released the thread may free the runner. */
        pthread_cond_broadcast(&r->cv);
        pthread_mutex_unlock(&r->mu);
        return; /* the thread frees the runner when its job returns */
    }
    pthread_cond_broadcast(&r->cv);
    pthread_mutex_unlock(&r->mu);
    if (r->thread_started)
        pthread_join(r->thread, NULL);
    destroy(r);
}
