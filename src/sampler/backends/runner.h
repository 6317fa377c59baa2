/*
 * sampler/backends/runner.h - calls bounded in time (runner.c).
 *
 * A runner is one worker thread that runs one job at a time for its owner,
 * who waits for it with a deadline.  A job that misses its deadline is
 * abandoned, never cancelled: the owner returns at once, the thread
 * finishes the job on its own whenever the call it is blocked in returns,
 * and the runner (the thread's state and the job area) lives until both
 * have let go, so nothing is ever freed under a stuck call.  The NVML
 * backend makes every NVML call through runners (nvml.c).
 */
#ifndef GP_SAMPLER_RUNNER_H
#define GP_SAMPLER_RUNNER_H

#include "gpu_profile.h"

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

typedef struct gp_runner gp_runner;

/* A job: runs on the runner's thread with the job area (see gp_runner_job). */
typedef void (*gp_runner_fn)(gp_runner *r, void *job);

/* Called with the runner's lock held, so each sees the other's effects in
 * order; they must not call back into the runner. */
typedef struct gp_runner_hooks {
    void (*on_abandon)(void *job, const char *what, uint64_t since_ns); /* owner's thread */
    void (*on_late_done)(void *job);         /* the runner's thread: an abandoned job returned */
    void (*on_free)(void *job);              /* whoever lets go last: release what the area holds */
    void (*on_step)(void *job, size_t step); /* the runner's thread: the job begins step */
} gp_runner_hooks;

/* Why a call did not complete: the blocking call a job named last
 * (gp_runner_doing), since when its job (or its current step) runs, which
 * step (0 for a job without steps), and whether it was already stuck
 * before this call (then the job was not run at all). */
typedef struct gp_runner_stuck {
    const char *what;
    uint64_t since_ns;
    size_t step;
    bool before;
} gp_runner_stuck;

/* A runner with a zeroed job area of job_size bytes; its thread starts at
 * the first call.  NULL when out of memory. */
gp_runner *gp_runner_create(size_t job_size, const gp_runner_hooks *hooks);
/* The job area.  The owner may read and write it only while the runner is
 * not stuck (gp_runner_stuck_now false): its thread is then waiting. */
void *gp_runner_job(gp_runner *r);
/* Whether an abandoned job still runs; fills why when so. */
bool gp_runner_stuck_now(gp_runner *r, gp_runner_stuck *why);
/* Runs fn(job) on the runner's thread and waits until it returns or
 * deadline_mono_ns passes.  GP_OK: it returned.  GP_ERR_TIMEOUT: it did
 * not, or an earlier job still runs (why says which).  GP_ERR_THREAD: the
 * thread could not be started.  what names the job until it names its
 * own blocking calls. */
gp_status gp_runner_call(gp_runner *r, gp_runner_fn fn, const char *what, uint64_t deadline_mono_ns,
                         gp_runner_stuck *why);
/* Starts the thread now rather than at the first job (a backend's threads
 * all there once it started).  GP_OK, or GP_ERR_THREAD. */
gp_status gp_runner_start(gp_runner *r);
/* gp_runner_call in two halves, so that one owner can start jobs on several
 * runners before it waits for any (a round of reads: the devices answer in
 * parallel and the owner sleeps once, not once per device).  post: GP_OK
 * when the job is handed over; GP_ERR_TIMEOUT when an earlier job still
 * runs (why says which); GP_ERR_THREAD.  wait: as gp_runner_call, for the
 * job posted last; GP_ERR_STATE when none was posted since the last wait.
 * The owner must not touch the job area between the two. */
gp_status gp_runner_post(gp_runner *r, gp_runner_fn fn, const char *what, gp_runner_stuck *why);
gp_status gp_runner_wait(gp_runner *r, uint64_t deadline_mono_ns, gp_runner_stuck *why);

/* A batch: jobs posted on several runners that the owner waits for with
 * one sleep (gp_runner_batch_wait), woken once when the last returns, not
 * once per runner; then gp_runner_wait on each, which returns at once for a
 * job done and gives up the others at their own deadlines.  A job given up
 * leaves its batch, so the owner may free the batch when every job of it
 * was waited for. */
typedef struct gp_runner_batch gp_runner_batch;
gp_runner_batch *gp_runner_batch_create(void); /* NULL when out of memory */
void gp_runner_batch_free(gp_runner_batch *b);
/* gp_runner_post, the job counted in batch (NULL: none). */
gp_status gp_runner_post_batch(gp_runner *r, gp_runner_fn fn, const char *what,
                               gp_runner_batch *batch, gp_runner_stuck *why);
/* Sleeps until every job of the batch returned, or deadline_mono_ns. */
void gp_runner_batch_wait(gp_runner_batch *b, uint64_t deadline_mono_ns);
/* A job in steps: one wake-up of one thread runs several calls in turn (a
 * round of reads, device after device), each bounded on its own.  Inside
 * the job, gp_runner_step before each step: it names the step's call, starts
 * the step's clock and tells on_step, under the runner's lock; false when
 * the owner gave the job up (then the job returns without another step).
 * The owner waits with gp_runner_wait_steps: GP_OK when the job returned,
 * GP_ERR_TIMEOUT when one step ran step_ns (why->step says which; the job
 * is abandoned there, and the steps after it are the owner's to redo
 * elsewhere), GP_ERR_STATE when nothing was posted since the last wait (or a paced job
 * was cancelled before it began). */
bool gp_runner_step(gp_runner *r, const char *what, size_t step);
gp_status gp_runner_wait_steps(gp_runner *r, uint64_t step_ns, gp_runner_stuck *why);
/* A paced job (a round posted ahead of its tick): as gp_runner_post, but
 * the thread begins it at start_mono_ns, waiting on its own clock, so that
 * the owner posts and sleeps once while the thread wakes once, at the
 * start.  next_mono_ns (0: none) is when the owner expects to post the
 * next one: the thread naps until then after this job, and a job posted
 * for that time or later does not wake it early.  The owner's deadline
 * (gp_runner_wait_steps) counts from start_mono_ns until the first step.
 * Until the job begins, gp_runner_cancel (any thread) withdraws it: true
 * when it did; the owner's wait then returns GP_ERR_STATE and the job never
 * runs.  A job already begun is not cancelled (false). */
gp_status gp_runner_post_at(gp_runner *r, gp_runner_fn fn, const char *what, uint64_t start_mono_ns,
                            uint64_t next_mono_ns, gp_runner_stuck *why);
bool gp_runner_cancel(gp_runner *r);
/* Jobs handed to runners' threads in this process so far: each is one
 * wake-up of a runner (a count, for tests and the bench). */
uint64_t gp_runner_posts(void);
/* Sleeps of owners waiting for their jobs (gp_runner_wait*), a count. */
uint64_t gp_runner_owner_sleeps(void);
/* Inside a job: the blocking call about to be made (a static string). */
void gp_runner_doing(gp_runner *r, const char *what);
/* other is released when r is freed, not before: r's job (a stuck one
 * too) may be using other's job area.  The owner must not use other
 * after this. */
void gp_runner_tie(gp_runner *r, gp_runner *other);
/* The owner lets go: an idle thread is joined and everything freed now; a
 * stuck one is detached and frees everything when its job returns. */
void gp_runner_release(gp_runner *r);

#endif /* GP_SAMPLER_RUNNER_H */
