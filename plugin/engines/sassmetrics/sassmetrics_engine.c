/*
 * sassmetrics_engine.c - SASS metrics as a row of the engine table
 * (engine.h).
 *
 * Promises: the engine's own functions (sassmetrics.h), unchanged, behind
 * the common interface; under Deep it uses the aggregator an engine before
 * it offered (env->agg), or refuses with that engine's reason; it wants
 * outermost scopes only in its default mode (not sass_all_kernels).
 */
#include "sassmetrics.h"

#include "../engine.h"
#include "gpu_profile.h"
#include "../../../src/util/error.h"

#include <stdio.h>

static uint32_t start(const fl_trace_options *o, fl_engine_env *env)
{
    return fl_sass_engine_start(o, env->ctx0, env);
}

static bool wants_scopes(const fl_trace_options *o)
{
    return o->sass_metrics && !o->sass_all_kernels;
}

static void stats(fl_trace_stats *out)
{
    fl_sass_engine_stats(out);
    /* The cubin store's counts, when PC sampling (listed before, which
     * adds them itself) is off. */
    if (out->engines[FL_ENGINE_SASS].status != FL_PC_OFF &&
        out->engines[FL_ENGINE_PC].status == FL_PC_OFF)
        fl_cubin_stats(out);
}

static size_t defaults(const char **names, unsigned *slots, size_t cap)
{
    return fl_engine_flat_defaults(fl_sass_metric_names, fl_sass_n_metric_names, names, slots, cap);
}

static gp_status choose(const gp_metrics_plugin *table, void *hobj, const char *chip,
                        const char *list, bool one_pass, fl_engine_take take, void *user,
                        gp_error *err)
{
    (void)table, (void)hobj, (void)chip, (void)list, (void)one_pass, (void)take, (void)user;
    return gp_error_set(err, GP_ERR_NOT_SUPPORTED,
                        "SASS metrics have no host side: CUPTI checks them on the device when the "
                        "session starts (cuptiSassMetricsGetProperties), and they need no passes");
}

const fl_engine fl_sass_engine = {
    .name = "SassMetrics",
    .slot = FL_ENGINE_SASS,
    .start = start,
    .context_created = fl_sass_context_created,
    .context_destroying = fl_sass_context_destroying,
    .keeps_cubins = fl_sass_keeps_cubins,
    .fail = fl_sass_engine_fail,
    .contexts_what = "cuptiSubscribe (CUDA contexts and modules for SASS metrics)",
    .wants_scopes = wants_scopes,
    .scope_begin = fl_sass_scope_begin,
    .scope_end = fl_sass_scope_end,
    .drain = fl_sass_engine_drain,
    .stop = fl_sass_engine_stop,
    .stats = stats,
    .release = fl_sass_engine_release,
    .trace = fl_sass_trace,
    .trace_what = "SASS metrics",
    .metrics_id = 2,
    .defaults = defaults,
    .choose = choose,
};
