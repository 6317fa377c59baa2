/*
 * launch.c - the scopes open at each kernel launch, keyed by the launch's
 * correlation id (launch.h): written on the launching
 * threads by CUPTI's launch callback, read on the writer thread by the
 * activity decoder (kernel_detail's user_scope and the launch's CPU stack
 * id; a synchronising call's stack id, fl_sync_put) and the PC-sampling
 * aggregator (profile_sample_batch's scope_name_id).
 *
 * Promises: a fixed, direct-mapped table (2.5 MiB, untouched until the
 * first launch is recorded); a launch whose entry was overwritten is
 * reported as not known, never with another launch's scopes; lock-free but
 * for a per-slot flag.
 */
#include "launch.h"

#include <stdatomic.h>
#include <string.h>

#define LAUNCH_SLOTS 65536u /* correlation id -> scopes at launch, direct-mapped */

typedef struct launch_slot {
    atomic_flag busy;
    uint32_t corr_id; /* 0: empty */
    uint8_t n;
    uint32_t ids[FL_SCOPE_PATH_MAX];
    uint32_t stack_id; /* the launch's CPU stack (0: none) */
} launch_slot;

static launch_slot launches[LAUNCH_SLOTS];
static _Atomic int launches_used;

static void slot_lock(launch_slot *s)
{
    while (atomic_flag_test_and_set_explicit(&s->busy, memory_order_acquire))
        ;
}

static void slot_unlock(launch_slot *s)
{
    atomic_flag_clear_explicit(&s->busy, memory_order_release);
}

void fl_launch_scope_put(uint32_t corr_id, const uint32_t *ids, size_t n)
{
    fl_launch_put(corr_id, ids, n, 0);
}

void fl_launch_put(uint32_t corr_id, const uint32_t *ids, size_t n, uint32_t stack_id)
{
    if (!corr_id)
        return;
    if (n > FL_SCOPE_PATH_MAX)
        n = FL_SCOPE_PATH_MAX;
    if (!atomic_load_explicit(&launches_used, memory_order_relaxed))
        atomic_store_explicit(&launches_used, 1, memory_order_relaxed);
    launch_slot *s = &launches[corr_id & (LAUNCH_SLOTS - 1)];
    slot_lock(s);
    s->corr_id = corr_id;
    s->n = (uint8_t)n;
    s->stack_id = stack_id;
    if (n)
        memcpy(s->ids, ids, n * sizeof *ids);
    slot_unlock(s);
}

void fl_sync_put(uint32_t corr_id, uint32_t stack_id)
{
    if (stack_id)
        fl_launch_put(corr_id, NULL, 0, stack_id);
}

void fl_launch_scope_reset(void)
{
    /* 2.5 MiB the first session never touched: leave it untouched. */
    if (!atomic_load_explicit(&launches_used, memory_order_relaxed))
        return;
    for (size_t i = 0; i < LAUNCH_SLOTS; i++) {
        launch_slot *s = &launches[i];
        slot_lock(s);
        s->corr_id = 0;
        slot_unlock(s);
    }
}

bool fl_launch_scope_find(uint32_t corr_id, uint32_t *ids, size_t cap, uint8_t *n)
{
    uint32_t stack_id;
    return fl_launch_find(corr_id, ids, cap, n, &stack_id);
}

bool fl_launch_find(uint32_t corr_id, uint32_t *ids, size_t cap, uint8_t *n, uint32_t *stack_id)
{
    *n = 0;
    *stack_id = 0;
    if (!corr_id)
        return false;
    launch_slot *s = &launches[corr_id & (LAUNCH_SLOTS - 1)];
    bool found = false;
    slot_lock(s);
    /* Left in place: the nodes of one graph launch share its correlation
     * id (and its scopes); ids are unique, so a stale entry matches none. */
    if (s->corr_id == corr_id) {
        found = true;
        *n = (uint8_t)(s->n < cap ? s->n : cap);
        *stack_id = s->stack_id;
        memcpy(ids, s->ids, *n * sizeof *ids);
    }
    slot_unlock(s);
    return found;
}

size_t fl_launch_scope_get(uint32_t corr_id, uint32_t *ids, size_t cap)
{
    uint8_t n = 0;
    fl_launch_scope_find(corr_id, ids, cap, &n);
    return n;
}
