/*
 * pool.h - CUPTI's activity buffers: a pool bounded by max_buffers x
 * buffer_bytes, and the buffers CUPTI completed, waiting for the writer.
 */
#ifndef GP_PLUGIN_POOL_H
#define GP_PLUGIN_POOL_H

#include "../src/abi/trace_abi.h"

#include <cupti.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define FL_POOL_MAX 256u

typedef struct fl_done_buf {
    uint8_t *p;
    size_t valid;
    uint32_t stream;
    bool global; /* of no context: CUPTI's dropped count is asked in drain */
} fl_done_buf;

/* CUPTI's buffer callbacks registered (cuptiActivityRegisterCallbacks). */
CUptiResult fl_pool_register(void);
/* The bounds and the writer's kick for a session; buffers made before
 * (under injection) keep their size; keep_counts: the counts so far are
 * this session's (injection's launches before the start). */
void fl_pool_configure(size_t max_buffers, size_t buffer_bytes, void (*kick)(void),
                       bool keep_counts);
/* The completed buffers, moved into out (FL_POOL_MAX); their number. */
size_t fl_pool_take(fl_done_buf *out);
/* Buffers read, back to the pool, with CUPTI's dropped count for them. */
void fl_pool_give_back(const fl_done_buf *bufs, size_t n, uint64_t dropped);
/* The completed buffers nobody will read (no session came): recycled. */
void fl_pool_forget_done(void);
/* The pool's counts into out. */
void fl_pool_stats(fl_trace_stats *out);
/* The free buffers freed, the kick forgotten (buffers CUPTI still holds
 * stay counted and are never freed here). */
void fl_pool_release(void);

#endif /* GP_PLUGIN_POOL_H */
