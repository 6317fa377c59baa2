/*
 * pool.c - CUPTI's activity buffers (pool.h).
 *
 * Promises: memory never grows with the run - a request beyond
 * max_buffers is refused (CUPTI then drops records and counts them) and
 * counted here; the buffer callbacks only move pointers under a mutex and
 * call no CUPTI function (CUPTI may hold its own locks around them);
 * buffers completed before any writer exists (injection: launches before
 * the deferred start is ready) wait here, bounded by the same pool, for
 * the first drain.
 */
#include "pool.h"

#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#define DEFAULT_BUFFER_BYTES (8u << 20)
#define DEFAULT_MAX_BUFFERS 16u

/* Everything the callbacks share, under mu. */
static struct {
    pthread_mutex_t mu;
    uint8_t *free_list[FL_POOL_MAX];
    size_t n_free;
    fl_done_buf done[FL_POOL_MAX];
    size_t n_done;
    size_t allocated;
    size_t max_buffers;
    size_t buffer_bytes;
    uint64_t refused, dropped, buffers;
    void (*kick)(void);
} pool = {.mu = PTHREAD_MUTEX_INITIALIZER,
          .max_buffers = DEFAULT_MAX_BUFFERS,
          .buffer_bytes = DEFAULT_BUFFER_BYTES};

static void CUPTIAPI buffer_requested(uint8_t **buffer, size_t *size, size_t *max_records)
{
    uint8_t *b = NULL;
    pthread_mutex_lock(&pool.mu);
    if (pool.n_free > 0) {
        b = pool.free_list[--pool.n_free];
    } else if (pool.allocated < pool.max_buffers) {
        b = aligned_alloc(8, pool.buffer_bytes);
        if (b)
            pool.allocated++;
    }
    if (!b)
        pool.refused++;
    size_t bytes = pool.buffer_bytes;
    pthread_mutex_unlock(&pool.mu);
    *buffer = b;
    *size = b ? bytes : 0;
    *max_records = 0; /* as many as fit */
}

/* No CUPTI call here: the dropped count is asked in drain, on the writer
 * thread. */
static void CUPTIAPI buffer_completed(CUcontext ctx, uint32_t stream, uint8_t *buffer, size_t size,
                                      size_t valid)
{
    (void)size;
    if (!buffer)
        return;
    void (*kick_fn)(void) = NULL;
    pthread_mutex_lock(&pool.mu);
    pool.buffers++;
    if (valid == 0) {
        pool.free_list[pool.n_free++] = buffer;
    } else {
        pool.done[pool.n_done++] = (fl_done_buf){buffer, valid, stream, ctx == NULL};
        kick_fn = pool.kick; /* NULL before a session: kept for its first drain */
    }
    pthread_mutex_unlock(&pool.mu);
    if (kick_fn)
        kick_fn();
}

CUptiResult fl_pool_register(void)
{
    return cuptiActivityRegisterCallbacks(buffer_requested, buffer_completed);
}

void fl_pool_configure(size_t max_buffers, size_t buffer_bytes, void (*kick)(void),
                       bool keep_counts)
{
    pthread_mutex_lock(&pool.mu);
    pool.max_buffers = max_buffers > FL_POOL_MAX ? FL_POOL_MAX : max_buffers;
    /* A buffer handed back must fit the size the pool hands out. */
    if (pool.allocated == 0)
        pool.buffer_bytes = buffer_bytes;
    pool.kick = kick;
    if (!keep_counts)
        pool.refused = pool.dropped = pool.buffers = 0;
    pthread_mutex_unlock(&pool.mu);
}

size_t fl_pool_take(fl_done_buf *out)
{
    pthread_mutex_lock(&pool.mu);
    size_t n = pool.n_done;
    memcpy(out, pool.done, n * sizeof *out);
    pool.n_done = 0;
    pthread_mutex_unlock(&pool.mu);
    return n;
}

void fl_pool_give_back(const fl_done_buf *bufs, size_t n, uint64_t dropped)
{
    pthread_mutex_lock(&pool.mu);
    pool.dropped += dropped;
    for (size_t i = 0; i < n; i++)
        pool.free_list[pool.n_free++] = bufs[i].p;
    pthread_mutex_unlock(&pool.mu);
}

void fl_pool_forget_done(void)
{
    pthread_mutex_lock(&pool.mu);
    for (size_t i = 0; i < pool.n_done; i++)
        pool.free_list[pool.n_free++] = pool.done[i].p;
    pool.n_done = 0;
    pthread_mutex_unlock(&pool.mu);
}

void fl_pool_stats(fl_trace_stats *out)
{
    pthread_mutex_lock(&pool.mu);
    out->cupti_dropped = pool.dropped;
    out->buffers_refused = pool.refused;
    out->buffers = pool.buffers;
    out->pool_bytes = (uint64_t)pool.allocated * pool.buffer_bytes;
    pthread_mutex_unlock(&pool.mu);
}

void fl_pool_release(void)
{
    pthread_mutex_lock(&pool.mu);
    for (size_t i = 0; i < pool.n_free; i++)
        free(pool.free_list[i]);
    pool.allocated -= pool.n_free;
    pool.n_free = 0;
    pool.kick = NULL;
    pthread_mutex_unlock(&pool.mu);
}
