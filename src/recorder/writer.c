/*
 * recorder/writer.c - the session's files and the writer thread.
 *
 * Promises: each cycle's lines go to each channel file (files.c) in one
 * write() of whole lines, so a process killed at any moment leaves every
 * line written before its last flush readable; the writer thread formats and writes everything
 * (scope rows from the per-thread rings, device and host rows from the sampler's thread, system
 * phases, the Trace engine's records) every FLUSH_PERIOD_NS or sooner when a buffer fills, so the
 * files are at most about a second behind; dictionary entries are written before the first batch
 * that uses them; a writer stuck on a slow disk costs rows (counted), never the application's time
 * or the process's memory.  What GPUFlight's analyzer needs of the metric rows (docs/gpufl.md): a
 * host row only when every value in it is known, and a device_metric_batch column only once some
 * row of the session had a value for it, then in every later batch.
 */
#include "writer.h"
#include "../sampler/hook.h"
#include "../util/clock.h"
#include "../util/error.h"
#include "../util/thread.h"
#include "capture.h"
#include "files.h"
#include "say.h"
#include "scope.h"
#include "trace_engine.h"

#include <errno.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define FLUSH_PERIOD_NS 250000000ull /* the files lag at most ~0.25 s + a cycle */
#define BATCH_ROWS 1024              /* rows per batch line */
#define QUEUE_KICK_ROWS 4096         /* sampler rows that wake the writer early */
#define QUEUE_MAX_ROWS                                                                             \
    65536 /* per queue: a writer stuck on a slow disk                                              \
             costs rows, not the process's memory */
#define FIRST_ROUND_WAIT_NS 2000000000ull
#define FLUSH_WAIT_NS 2000000000ull

/* The writer's wake-up, and everything the API shares with the writer and
 * the sampler: static, so a late kick from a producer never touches freed
 * memory. */
static pthread_mutex_t g_mu = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t g_cv;      /* wakes the writer */
static pthread_cond_t g_done_cv; /* flush done, first round done */
static pthread_once_t g_cv_once = PTHREAD_ONCE_INIT;
static _Atomic int g_kicked;
static _Atomic int g_phases; /* open system phases */
static _Atomic int g_hold;   /* tests: the writer skips its cycles */

static void init_cvs(void)
{
    gp_cond_init_mono(&g_cv);
    gp_cond_init_mono(&g_done_cv);
}

static struct timespec deadline_in(uint64_t ns)
{
    uint64_t t = gp_now_mono_ns() + ns;
    struct timespec ts = {(time_t)(t / 1000000000ull), (long)(t % 1000000000ull)};
    return ts;
}

/* ---------------------------------------------------------------- files */

void fl_writer_init(session *s)
{
    fl_files_init(s);
    pthread_once(&g_cv_once, init_cvs);
}

void fl_writer_spill(void *user, fl_buf *b)
{
    session *s = user;
    for (int ch = 0; ch < s->n_ch; ch++)
        if (b == &s->out[ch])
            fl_files_write(s, ch, b);
}

void fl_writer_write_all(session *s)
{
    for (int ch = 0; ch < s->n_ch; ch++)
        fl_files_write(s, ch, &s->out[ch]);
}

void fl_writer_free(session *s)
{
    fl_files_close(s);
    for (int ch = 0; ch < FL_CH_COUNT; ch++)
        fl_buf_free(&s->out[ch]);
    fl_buf_free(&s->sys_q);
    fl_buf_free(&s->op_q);
    free(s->dev_q.p);
    free(s->dev_w.p);
    free(s->host_q.p);
    free(s->host_w.p);
    free(s->scope_rows);
    free(s->names);
}

/* ---------------------------------------------------------------- sampler */

static bool gate_open(void)
{
    return fl_scope_any_open() || atomic_load_explicit(&g_phases, memory_order_relaxed) > 0;
}

static bool hook_gate(void *user)
{
    session *s = user;
    return s->cfg.continuous_system_sampling || gate_open();
}

static bool rowq_push(rowq *q, const void *row, size_t size)
{
    if (q->n >= QUEUE_MAX_ROWS)
        return false;
    if (q->n == q->cap) {
        size_t c = q->cap ? q->cap * 2 : 256;
        void *p = realloc(q->p, c * size);
        if (!p)
            return false; /* the row is lost, the run goes on */
        q->p = p;
        q->cap = c;
    }
    memcpy((char *)q->p + q->n * size, row, size);
    q->n++;
    return true;
}

/* Takes the live queue's rows into *taken; the live one restarts empty
 * with taken's old memory. */
static void rowq_swap(rowq *live, rowq *taken)
{
    rowq old = *taken;
    *taken = *live;
    *live = old;
    live->n = 0;
}

/* A slot the monitor reports failed this round (and will not read again):
 * not GP_OK, not "not read", not a self-paced backend's quiet tick. */
static bool slot_failed(gp_status st)
{
    return st != GP_OK && st != GP_ERR_STATE && st != GP_ERR_TIMEOUT;
}

/* Device i failed at t_wall (mu held): remembered, its live values gone,
 * and its device_lost_event record queued for the system channel. */
static void note_failure(session *s, size_t i, uint64_t t_wall, gp_status st, const gp_error *e)
{
    fl_device_failure *f = &s->failures[i];
    f->failed = true;
    f->status = st;
    f->t_ns = t_wall;
    snprintf(f->message, sizeof f->message, "%s",
             e && e->message[0] ? e->message : gp_strerror(st));
    s->live[i].have_sample = false;
    fl_device_lost rec = {.ts_ns = t_wall,
                          .device_id = s->live[i].id,
                          .name = s->live[i].name,
                          .uuid = s->live[i].uuid,
                          .status = gp_status_id(st),
                          .message = f->message};
    fl_rec_device_lost_event(&s->sys_q, &s->ident, &rec);
}

/* XIDs device i reported since its previous round (mu held): a
 * device_error_event queued for the system channel. */
static void note_xids(session *s, size_t i, uint64_t t_wall, const gp_device_sample *now)
{
    const gp_device_sample *prev = &s->live[i].s;
    uint64_t before =
        s->live[i].have_sample && (prev->health_valid & GP_H_XID) ? prev->xid_count : 0;
    if (!(now->health_valid & GP_H_XID) || now->xid_count <= before)
        return;
    fl_device_error rec = {.ts_ns = t_wall,
                           .device_id = s->live[i].id,
                           .name = s->live[i].name,
                           .uuid = s->live[i].uuid,
                           .xid = now->xid_last,
                           .count = now->xid_count - before,
                           .total = now->xid_count};
    fl_rec_device_error_event(&s->sys_q, &s->ident, &rec);
}

/* The sampler thread's round: keep the newest values for system_start and
 * job_start, record a device that failed, queue rows while the gate is
 * open. */
static void hook_round(void *user, uint64_t t_mono, uint64_t t_wall,
                       const gp_device_sample *samples, const gp_status *status,
                       const gp_error *errors, size_t n)
{
    (void)t_mono;
    session *s = user;
    fl_host_sample h;
    fl_host_read(&s->host, &h);
    bool emit = s->cfg.continuous_system_sampling || gate_open();
    bool kick = false;
    size_t failed = 0;
    pthread_mutex_lock(&g_mu);
    bool first = !s->first_round;
    s->host_latest = h;
    for (size_t i = 0; i < n && i < s->n_dev; i++) {
        if (status[i] == GP_OK) {
            note_xids(s, i, t_wall, &samples[i]);
            s->live[i].s = samples[i];
            s->live[i].have_sample = true;
        } else if (slot_failed(status[i]) && !s->failures[i].failed) {
            note_failure(s, i, t_wall, status[i], errors ? &errors[i] : NULL);
            failed++;
        }
    }
    if (emit) {
        /* A host row only with every value known: the first round's CPU %
         * (a difference of two readings) is not, so no row until then. */
        fl_host_row hr = {.t_ns = t_wall, .h = h};
        if (fl_host_sample_complete(&h))
            s->metric_rows_dropped += !rowq_push(&s->host_q, &hr, sizeof hr);
        for (size_t i = 0; i < n && i < s->n_dev; i++) {
            if (status[i] != GP_OK)
                continue;
            fl_device_row dr = {.t_ns = t_wall, .device_id = s->live[i].id, .s = samples[i]};
            s->metric_rows_dropped += !rowq_push(&s->dev_q, &dr, sizeof dr);
        }
        kick = s->dev_q.n + s->host_q.n >= QUEUE_KICK_ROWS;
    }
    if (first) {
        s->first_round = true;
        pthread_cond_broadcast(&g_done_cv);
    }
    pthread_mutex_unlock(&g_mu);
    for (size_t i = 0; failed && i < n && i < s->n_dev; i++)
        if (slot_failed(status[i]))
            FL_DEBUG(s, "device %u stopped reporting (%s): %s; recorded as %s", s->live[i].id,
                     gp_status_id(status[i]),
                     errors && errors[i].message[0] ? errors[i].message : gp_strerror(status[i]),
                     fl_type_name(FL_T_DEVICE_LOST_EVENT));
    if (kick || failed)
        fl_session_kick();
}

void fl_writer_failures(session *s, fl_device_failure *out)
{
    pthread_mutex_lock(&g_mu);
    memcpy(out, s->failures, s->n_dev * sizeof *out);
    pthread_mutex_unlock(&g_mu);
}

gpufl_status fl_writer_start_sampler(session *s, gpufl_error *err)
{
    if (!s->mon || s->cfg.system_sample_rate_ms <= 0)
        return GPUFL_OK;
    gp_round_hook hook = {.gate = hook_gate, .on_round = hook_round, .user = s};
    gp_error ge;
    if (gp_monitor_set_hook(s->mon, &hook, &ge) != GP_OK || gp_monitor_start(s->mon, &ge) != GP_OK)
        return fl_error_from_gp(err, &ge, "cannot start the sampler");
    s->sampling = true;
    /* job_start shows the devices' live values: wait for the first round
     * (a few ms with NVML), but never long. */
    struct timespec ts = deadline_in(FIRST_ROUND_WAIT_NS);
    pthread_mutex_lock(&g_mu);
    while (!s->first_round)
        if (pthread_cond_timedwait(&g_done_cv, &g_mu, &ts) == ETIMEDOUT)
            break;
    pthread_mutex_unlock(&g_mu);
    return GPUFL_OK;
}

fl_host_sample fl_writer_host_latest(session *s)
{
    pthread_mutex_lock(&g_mu);
    fl_host_sample host = s->host_latest;
    pthread_mutex_unlock(&g_mu);
    return host;
}

void fl_writer_put_job_start(session *s, const fl_job_start *js)
{
    pthread_mutex_lock(&g_mu);
    fl_buf_reset(&s->job_start_line);
    fl_rec_job_start(&s->job_start_line, &s->ident, js);
    pthread_mutex_unlock(&g_mu);
    for (int ch = 0; ch < s->n_ch; ch++)
        fl_buf_put(&s->out[ch], s->job_start_line.p, s->job_start_line.len);
}

void fl_writer_queue_phase(session *s, const char *name, bool start)
{
    if (start) {
        atomic_fetch_add_explicit(&g_phases, 1, memory_order_relaxed);
    } else {
        int v = atomic_load_explicit(&g_phases, memory_order_relaxed);
        while (v > 0 && !atomic_compare_exchange_weak_explicit(
                            &g_phases, &v, v - 1, memory_order_relaxed, memory_order_relaxed))
            ;
    }
    pthread_mutex_lock(&g_mu);
    fl_host_sample host = s->host_latest;
    fl_rec_system(&s->sys_q, &s->ident, start, name, gp_now_wall_ns(), &host, s->live, s->n_dev);
    pthread_mutex_unlock(&g_mu);
    fl_session_kick();
}

void fl_writer_queue_dict(session *s, fl_dict dict, uint64_t id, const char *name)
{
    fl_dict_entry e = {id, name};
    pthread_mutex_lock(&g_mu);
    fl_rec_dictionary(&s->op_q, s->ident.session_id, dict, &e, 1);
    pthread_mutex_unlock(&g_mu);
    fl_session_kick();
}

/* ---------------------------------------------------------------- writer */

void fl_session_kick(void)
{
    if (!atomic_exchange_explicit(&g_kicked, 1, memory_order_acq_rel)) {
        pthread_once(&g_cv_once, init_cvs);
        pthread_cond_signal(&g_cv);
    }
}

void fl_session_hold_writer(bool hold)
{
    atomic_store_explicit(&g_hold, hold ? 1 : 0, memory_order_release);
    if (!hold)
        fl_session_kick();
}

static int cmp_scope_row(const void *a, const void *b)
{
    const fl_scope_row *x = &((const fl_scope_event *)a)->row,
                       *y = &((const fl_scope_event *)b)->row;
    if (x->t_ns != y->t_ns)
        return x->t_ns < y->t_ns ? -1 : 1;
    /* A begin and an end at the same ns: the begin first. */
    return (int)x->event_type - (int)y->event_type;
}

/* Each thread's rows come in time order; one thread (the common case)
 * needs no sort at all. */
static void sort_scope_rows(fl_scope_event *rows, size_t n)
{
    bool sorted = true;
    for (size_t i = 1; i < n && sorted; i++)
        sorted = cmp_scope_row(&rows[i - 1], &rows[i]) <= 0;
    if (!sorted)
        qsort(rows, n, sizeof *rows, cmp_scope_row);
}

/* Takes the sampler's queued rows and the queued phase lines. */
static void take_queues(session *s)
{
    pthread_mutex_lock(&g_mu);
    rowq_swap(&s->dev_q, &s->dev_w);
    rowq_swap(&s->host_q, &s->host_w);
    /* Phase lines are few and short: copied out under the lock. */
    fl_buf_put(&s->out[FL_CH_SYSTEM], s->sys_q.p, s->sys_q.len);
    fl_buf_reset(&s->sys_q);
    pthread_mutex_unlock(&g_mu);
}

static size_t batch_len(size_t n, size_t i)
{
    return n - i < BATCH_ROWS ? n - i : BATCH_ROWS;
}

/* The rows taken this cycle as batch lines, BATCH_ROWS rows at most each. */
static void put_batches(session *s, size_t n_scope)
{
    const fl_device_row *dev = s->dev_w.p;
    const fl_host_row *host = s->host_w.p;
    size_t dn = s->dev_w.n, hn = s->host_w.n;
    for (size_t i = 0; i < n_scope; i += BATCH_ROWS)
        fl_rec_scope_events(&s->out[FL_CH_SCOPE], s->id, ++s->batch_scope, s->scope_rows + i,
                            batch_len(n_scope, i));
    for (size_t i = 0; i < dn; i += BATCH_ROWS)
        fl_rec_device_batch_cols(&s->out[FL_CH_SYSTEM], s->id, ++s->batch_dev, dev + i,
                                 batch_len(dn, i), &s->dev_cols_seen);
    for (size_t i = 0; i < hn; i += BATCH_ROWS)
        fl_rec_host_batch(&s->out[FL_CH_SYSTEM], s->id, s->hostname, s->ip, ++s->batch_host,
                          host + i, batch_len(hn, i));
    s->rows_scope += n_scope;
    s->rows_dev += dn;
    s->rows_host += hn;
}

void fl_writer_cycle(session *s)
{
    if (atomic_load_explicit(&g_hold, memory_order_acquire))
        return;
    /* Rows first, then names: a name is interned before any row that uses
     * it is published, so every row drained here has its name taken. */
    size_t n_scope = fl_scope_drain(s->gen, &s->scope_rows, 0, &s->scope_cap);
    /* Op names before the kernel rows the drain brings: a name is queued
     * at its first push, before the launches it tags. */
    pthread_mutex_lock(&g_mu);
    fl_buf_put(&s->out[FL_CH_DEVICE], s->op_q.p, s->op_q.len);
    fl_buf_reset(&s->op_q);
    pthread_mutex_unlock(&g_mu);
    fl_trace_engine_drain(s, s->scope_rows, n_scope);
    fl_capture_write(&s->out[FL_CH_SCOPE], &s->ident, false, 0);
    size_t n_names = fl_scope_take_names(&s->names, &s->names_cap);
    take_queues(s);
    if (n_names > 0)
        for (int ch = 0; ch < s->n_ch; ch++)
            fl_rec_dictionary(&s->out[ch], s->id, FL_DICT_SCOPE_NAME, s->names, n_names);
    sort_scope_rows(s->scope_rows, n_scope);
    put_batches(s, n_scope);
    fl_writer_write_all(s);
    fl_files_tick(s);
}

static void *writer_main(void *arg)
{
    session *s = arg;
    pthread_mutex_lock(&g_mu);
    for (;;) {
        if (!atomic_load_explicit(&g_kicked, memory_order_acquire) && !s->stop &&
            s->flush_done == s->flush_req) {
            struct timespec ts = deadline_in(FLUSH_PERIOD_NS);
            pthread_cond_timedwait(&g_cv, &g_mu, &ts);
        }
        atomic_store_explicit(&g_kicked, 0, memory_order_release);
        bool stop = s->stop;
        uint64_t target = s->flush_req;
        pthread_mutex_unlock(&g_mu);
        fl_writer_cycle(s);
        pthread_mutex_lock(&g_mu);
        s->flush_done = target;
        pthread_cond_broadcast(&g_done_cv);
        if (stop)
            break;
    }
    pthread_mutex_unlock(&g_mu);
    return NULL;
}

gpufl_status fl_writer_start(session *s, gpufl_error *err)
{
    atomic_store_explicit(&g_phases, 0, memory_order_relaxed);
    fl_scope_session_begin(s->gen, !s->cfg.continuous_system_sampling, s->cfg.no_tsc,
                           fl_session_kick);
    int rc = gp_thread_start(&s->writer, writer_main, s);
    if (rc != 0) {
        gpufl_status st =
            fl_error_set(err, GPUFL_ERR_THREAD, "cannot start the writer thread: %s", strerror(rc));
        fl_scope_session_end();
        return st;
    }
    s->writer_started = true;
    return GPUFL_OK;
}

void fl_writer_stop(session *s)
{
    pthread_mutex_lock(&g_mu);
    s->stop = true;
    pthread_cond_broadcast(&g_cv);
    pthread_mutex_unlock(&g_mu);
    pthread_join(s->writer, NULL);
    fl_scope_session_end();
}

void fl_writer_flush(session *s)
{
    pthread_mutex_lock(&g_mu);
    uint64_t want = ++s->flush_req;
    pthread_cond_broadcast(&g_cv);
    struct timespec ts = deadline_in(FLUSH_WAIT_NS);
    while (s->flush_done < want)
        if (pthread_cond_timedwait(&g_done_cv, &g_mu, &ts) == ETIMEDOUT)
            break;
    pthread_mutex_unlock(&g_mu);
}

void fl_writer_after_fork_child(void)
{
    pthread_mutex_init(&g_mu, NULL);
    atomic_store_explicit(&g_phases, 0, memory_order_relaxed);
}
