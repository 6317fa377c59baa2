/*
 * scope_hooks.c - outermost scopes' boundaries to the engines that want
 * them (scope_hooks.h).
 *
 * Promises: an engine not selected at start is never called (one relaxed
 * load each); at the end SASS metrics close before the range profiler's
 * range, the reverse of the begin's order.
 */
#include "scope_hooks.h"

#include "rangeprof.h"
#include "sassmetrics.h"

#include <stdatomic.h>

static _Atomic bool want_rp, want_sass;

void fl_scope_hooks_select(const fl_trace_options *o)
{
    atomic_store(&want_rp, o && o->range_profiler);
    atomic_store(&want_sass, o && o->sass_metrics && !o->sass_all_kernels);
}

void fl_scope_hooks_begin(const char *name)
{
    if (atomic_load_explicit(&want_rp, memory_order_relaxed))
        fl_rp_range_begin(name);
    if (atomic_load_explicit(&want_sass, memory_order_relaxed))
        fl_sass_scope_begin(name);
}

void fl_scope_hooks_end(void)
{
    if (atomic_load_explicit(&want_sass, memory_order_relaxed))
        fl_sass_scope_end();
    if (atomic_load_explicit(&want_rp, memory_order_relaxed))
        fl_rp_range_end();
}
