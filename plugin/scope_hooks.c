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

/* Bit i: fl_engines[i] gets the boundaries. */
static _Atomic unsigned wanted;

void fl_scope_hooks_select(const fl_trace_options *o)
{
    unsigned w = 0;
    for (size_t i = 0; o && i < fl_n_engines; i++)
        if (fl_engines[i]->wants_scopes && fl_engines[i]->wants_scopes(o))
            w |= 1u << i;
    atomic_store(&wanted, w);
}

void fl_scope_hooks_begin(const char *name)
{
    unsigned w = atomic_load_explicit(&wanted, memory_order_relaxed);
    for (size_t i = fl_n_engines; w && i-- > 0;)
        if (w & (1u << i))
            fl_engines[i]->scope_begin(name);
}

void fl_scope_hooks_end(void)
{
    unsigned w = atomic_load_explicit(&wanted, memory_order_relaxed);
    for (size_t i = 0; w && i < fl_n_engines; i++)
        if (w & (1u << i))
            fl_engines[i]->scope_end();
}
