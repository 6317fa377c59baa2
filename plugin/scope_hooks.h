/*
 * scope_hooks.h - the plugin's one entry for outermost gpufl scopes (the
 * table's range_begin / range_end, which the core installs only when an
 * engine wants them): dispatched to each engine that asked at start - the
 * range profiler (its range or kernel window) and SASS metrics in their
 * default mode (enable at the begin; synchronise, read, disable at the
 * end).  Used by the CUPTI plugin and the fake plugin alike.
 */
#ifndef GP_PLUGIN_SCOPE_HOOKS_H
#define GP_PLUGIN_SCOPE_HOOKS_H

#include "../src/abi/trace_abi.h"

/* At start: which engines get the boundaries (o->range_profiler;
 * o->sass_metrics without o->sass_all_kernels).  NULL: none. */
void fl_scope_hooks_select(const fl_trace_options *o);

/* The application's thread, at an outermost scope's begin and end. */
void fl_scope_hooks_begin(const char *name);
void fl_scope_hooks_end(void);

#endif /* GP_PLUGIN_SCOPE_HOOKS_H */
