/*
 * scope_hooks.c - outermost scopes' boundaries to the engines that want
 * them (scope_hooks.h).
 *
 * Promises: an engine not selected at start is never called (one relaxed
 * load); a begin walks the table backward and an end forward, so the
 * end closes in the reverse of the begin's order (SASS metrics inside the
 * range profiler's range).
 */
#include "scope_hooks.h"

#include "engines/engine.h"

#include <stdatomic.h>
#include <stdbool.h>

/* The selected engines' hooks, in call order: begins backward through the
 * table, ends forward.  Resolved at select, so a scope pays a load and a
 * call per engine that wants it, not a walk of the table (the walk cost
 * the SASS scope pair ~3 ns: docs/performance.md).  n_hooked is published
 * after the pointers. */
#define MAX_HOOKED 8
typedef void (*begin_fn)(const char *name);
typedef void (*end_fn)(void);
static _Atomic(begin_fn) begins[MAX_HOOKED];
static _Atomic(end_fn) ends[MAX_HOOKED];
static _Atomic unsigned n_hooked;

static bool wants(size_t i, const fl_trace_options *o)
{
    return fl_engines[i]->wants_scopes && fl_engines[i]->wants_scopes(o);
}

void fl_scope_hooks_select(const fl_trace_options *o)
{
    atomic_store(&n_hooked, 0);
    unsigned n = 0, m = 0;
    for (size_t i = fl_n_engines; o && i-- > 0;)
        if (n < MAX_HOOKED && wants(i, o))
            atomic_store_explicit(&begins[n++], fl_engines[i]->scope_begin, memory_order_relaxed);
    for (size_t i = 0; o && i < fl_n_engines; i++)
        if (m < MAX_HOOKED && wants(i, o))
            atomic_store_explicit(&ends[m++], fl_engines[i]->scope_end, memory_order_relaxed);
    atomic_store_explicit(&n_hooked, n, memory_order_release);
}

void fl_scope_hooks_begin(const char *name)
{
    unsigned n = atomic_load_explicit(&n_hooked, memory_order_acquire);
    for (unsigned k = 0; k < n; k++)
        atomic_load_explicit(&begins[k], memory_order_relaxed)(name);
}

void fl_scope_hooks_end(void)
{
    unsigned n = atomic_load_explicit(&n_hooked, memory_order_acquire);
    for (unsigned k = 0; k < n; k++)
        atomic_load_explicit(&ends[k], memory_order_relaxed)();
}
