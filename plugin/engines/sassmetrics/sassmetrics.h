/*
 * sassmetrics.h - SASS metrics in the CUPTI plugin (profiling_engine
 * SassMetrics): what its two files promise each other and the plugin.
 *
 *   sassmetrics_decode.c  CUPTI's patched-instruction records
 *                         (CUpti_SassMetrics_Data, cupti_sass_metrics.h)
 *                         summed per (device, function, PC offset, metric)
 *                         into fl_sample_row of sample_kind 1, through PC
 *                         sampling's aggregator (common/aggregator.c: one
 *                         table, the same dictionaries, the same source
 *                         lines through the cubins kept by common/cubins.c)
 *   sassmetrics.c         the SASS Metrics API's life: the Profiler API
 *                         initialised once, each device configured once
 *                         (its chip's metric ids, SetConfig), each CUDA
 *                         context enabled (lazy patching unless asked) -
 *                         by default only inside outermost scopes
 *                         (enabled at the begin; synchronised, read and
 *                         disabled at the end), with sass_all_kernels from
 *                         its creation - read (GetDataProperties,
 *                         FlushData) on the writer thread at the collection
 *                         points, disabled; every
 *                         CUPTI call behind fl_sass_api so tests inject
 *                         CUPTI's answers
 *
 * A refusal is a status (FL_PC_*, the same meanings as PC sampling's) and
 * a message with the fix; the session then runs Trace (PcSampling under
 * Deep), never crashes.
 */
#ifndef GP_PLUGIN_SASSMETRICS_H
#define GP_PLUGIN_SASSMETRICS_H

#include "../../common/aggregator.h"
#include "../engine.h"
#include "../../common/cubins.h"
#include "../../common/cupti_error.h"

#include <cupti_profiler_target.h>
#include <cupti_target.h>
#include <cupti_sass_metrics.h>

/* ------------------------------------------------------- the decoder */

typedef struct fl_sass fl_sass;

/* cfg as PC sampling's (source lines, table size); NULL when out of memory. */
fl_sass *fl_sass_create(const fl_agg_config *cfg);

/* Deep: a decoder over PC sampling's aggregator agg (not owned: it must
 * outlive the decoder), so both kinds of rows share one table and one set
 * of dictionaries; each entry point holds lock/unlock (NULL: none) while
 * it uses agg.  NULL when out of memory. */
fl_sass *fl_sass_create_shared(fl_agg *agg, void (*lock)(void), void (*unlock)(void));
void fl_sass_destroy(fl_sass *x); /* NULL-safe */

/* CUPTI's metric id on device device_id is name (metric_dict).  An id
 * never named is written "metric_<id>". */
void fl_sass_metric_name(fl_sass *x, uint32_t device_id, uint64_t metric_id, const char *name);

/* One FlushData's records (n of them, n_instances values each) of device
 * device_id, read at wall time t_ns.  A value of 0 makes no row (a row
 * absent is 0).  sink NULL: a full table counts the rest lost. */
void fl_sass_feed(fl_sass *x, const fl_trace_sink *sink, const CUpti_SassMetrics_Data *d, size_t n,
                  size_t n_instances, uint32_t device_id, uint64_t t_ns);

/* Every row held (after the dictionary entries it uses) to sink. */
void fl_sass_flush(fl_sass *x, const fl_trace_sink *sink);

/* Adds the decoder's counts into out's sass_* fields. */
void fl_sass_stats(const fl_sass *x, fl_trace_stats *out);

/* ------------------------------------------------- the SASS Metrics API */

/* The metrics asked of each device, in this order (a name CUPTI's
 * cuptiSassMetricsGetProperties refuses on a chip is skipped and listed
 * in sass_config's skipped_metrics). */
extern const char *const fl_sass_metric_names[];
extern const size_t fl_sass_n_metric_names;

/* Every CUPTI call sassmetrics.c makes, one X row each (engine.h: FL_API_*); tests replace them. */
/* clang-format off: one X row a line (clang-format would join them) */
#define FL_SASS_CALLS(X)                                                                           \
    FL_API_DEVICE(X)                                                                               \
    FL_API_DEINIT(X)                                                                               \
    X(get_properties, (CUpti_SassMetrics_GetProperties_Params *), cuptiSassMetricsGetProperties,   \
      t_sass_props)                                                                                \
    X(set_config, (CUpti_SassMetricsSetConfig_Params *), cuptiSassMetricsSetConfig, t_sass_set)    \
    X(unset_config, (CUpti_SassMetricsUnsetConfig_Params *), cuptiSassMetricsUnsetConfig,          \
      t_sass_unset)                                                                                \
    X(enable, (CUpti_SassMetricsEnable_Params *), cuptiSassMetricsEnable, t_sass_enable)           \
    X(disable, (CUpti_SassMetricsDisable_Params *), cuptiSassMetricsDisable, t_sass_disable)       \
    X(data_properties, (CUpti_SassMetricsGetDataProperties_Params *),                              \
      cuptiSassMetricsGetDataProperties, t_sass_props_data)                                        \
    X(flush_data, (CUpti_SassMetricsFlushData_Params *), cuptiSassMetricsFlushData, t_sass_flush)
/* clang-format on */

typedef struct fl_sass_api {
    FL_SASS_CALLS(FL_API_FIELD)
} fl_sass_api;

/* NULL: CUPTI's own functions again. */
void fl_sass_set_api(const fl_sass_api *api);

/* Starts SASS metrics for a session (o->sass_metrics; else FL_PC_OFF):
 * the context current on the calling thread (ctx; NULL: none) enabled now,
 * the Profiler API initialised before the first context is.  Returns the
 * FL_PC_* status (FL_RP_LATE_INIT: refused after a late start); the
 * reason, with the fix, is kept for fl_sass_engine_stats and ends with
 * the engine the session runs instead (Trace; PcSampling under Deep).
 * It reads of env (NULL: all zero): late, the driver calls of the default mode
 * (current_ctx: NULL enables nothing at a scope; ctx_synchronize: NULL
 * synchronises nothing), under Deep PC sampling's aggregator (agg, lock,
 * unlock) or why it cannot be shared (refuse). */
uint32_t fl_sass_engine_start(const fl_trace_options *o, void *ctx, const fl_engine_env *env);

/* Resource callbacks (application threads, through the plugin's one
 * resource dispatcher): a context created (enabled), about to be destroyed
 * (read into the table, disabled).  fl_sass_keeps_cubins: whether a loaded
 * module's cubin is to be kept (source lines) for this engine. */
bool fl_sass_keeps_cubins(void);
void fl_sass_context_created(void *ctx);
void fl_sass_context_destroying(void *ctx);

/* The application's thread, at an outermost gpufl scope's begin and end
 * (the plugin's range_begin/range_end; default mode only, else no-ops):
 * begin enables the calling thread's current context (registered first if
 * new) unless an overlapping scope has; end, by the last open scope of
 * that context, synchronises it (ctx_synchronize), reads it into the table
 * (GetDataProperties, FlushData) and disables it. */
void fl_sass_scope_begin(const char *name);
void fl_sass_scope_end(void);

/* A refusal the plugin found (its subscription): the session's reason. */
void fl_sass_engine_fail(CUptiResult r, const char *what);

/* Writer thread: after stop every context is read (never before: see
 * sassmetrics.c), disabled, each device's configuration unset
 * and the Profiler API de-initialised; then the rows go to sink (the
 * sass_config of a newly configured device first). */
void fl_sass_engine_drain(const fl_trace_sink *sink);

/* FL_ENGINE_DECLARE: after stop the next drain reads what is left and
 * disables; stats gives status, reason and counts; release frees
 * everything (contexts still enabled are disabled unread). */
FL_ENGINE_DECLARE(fl_sass);

#endif /* GP_PLUGIN_SASSMETRICS_H */
