/*
 * recorder/ops.c - framework ops (ops.h): what gpufl_push_external_op
 * costs an application thread is a hash, two atomic loads and the plugin's
 * CUPTI call; an op's name is written once per session (the first push
 * that sees its id), never under a lock on this path.
 */
#include "ops.h"

#include <stdatomic.h>
#include <stddef.h>

typedef gp_status push_fn(uint8_t kind, uint64_t id);
typedef gp_status pop_fn(uint8_t kind);

static push_fn *_Atomic g_push;
static pop_fn *_Atomic g_pop;

/* Ids named this session: open addressing, 0 empty.  16384 distinct ops
 * (PyTorch has about 2500 aten ops); past that an op keeps its id only. */
#define SEEN_SLOTS 16384u
#define SEEN_PROBES 64u
static _Atomic uint64_t g_seen[SEEN_SLOTS];

/* A thread's pushes: whether push i (depth < 64) reached CUPTI, so a pop
 * never pops what another session's push left, nor what was refused. */
#define DEPTH_BITS 64u
static _Thread_local uint64_t t_pushed __attribute__((tls_model("initial-exec")));
static _Thread_local uint32_t t_depth __attribute__((tls_model("initial-exec")));

uint64_t fl_op_id(const char *name)
{
    uint64_t h = 0xcbf29ce484222325ull;
    for (const unsigned char *p = (const unsigned char *)name; p && *p; p++) {
        h ^= *p;
        h *= 0x100000001b3ull;
    }
    return h ? h : 1;
}

void fl_ops_set_hooks(push_fn *push, pop_fn *pop)
{
    if (push)
        for (size_t i = 0; i < SEEN_SLOTS; i++)
            atomic_store_explicit(&g_seen[i], 0, memory_order_relaxed);
    atomic_store_explicit(&g_pop, pop, memory_order_release);
    atomic_store_explicit(&g_push, push, memory_order_release);
}

bool fl_ops_push(uint64_t id)
{
    uint32_t d = t_depth++;
    push_fn *push = atomic_load_explicit(&g_push, memory_order_acquire);
    if (d >= DEPTH_BITS || !push || push(FL_OP_EXTERNAL_KIND, id) != GP_OK)
        return false;
    t_pushed |= 1ull << d;
    return true;
}

void fl_ops_pop(void)
{
    if (!t_depth)
        return;
    uint32_t d = --t_depth;
    if (d >= DEPTH_BITS || !(t_pushed & (1ull << d)))
        return;
    t_pushed &= ~(1ull << d);
    pop_fn *pop = atomic_load_explicit(&g_pop, memory_order_acquire);
    if (pop)
        (void)pop(FL_OP_EXTERNAL_KIND);
}

bool fl_ops_first_sight(uint64_t id)
{
    size_t i = (size_t)(id ^ (id >> 29)) & (SEEN_SLOTS - 1);
    for (size_t n = 0; n < SEEN_PROBES; n++, i = (i + 1) & (SEEN_SLOTS - 1)) {
        uint64_t cur = atomic_load_explicit(&g_seen[i], memory_order_relaxed);
        if (cur == id)
            return false;
        if (cur == 0) {
            uint64_t want = 0;
            if (atomic_compare_exchange_strong_explicit(&g_seen[i], &want, id, memory_order_relaxed,
                                                        memory_order_relaxed))
                return true;
            if (want == id)
                return false;
        }
    }
    return false;
}
