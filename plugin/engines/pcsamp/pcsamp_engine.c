/*
 * pcsamp_engine.c - PC sampling as a row of the engine table (engine.h).
 *
 * Promises: the engine's own functions (pcsamp.h), unchanged, behind the
 * common interface; under Deep (SASS metrics asked too) its aggregator is
 * offered to the engines after it through the environment, or the reason
 * it cannot be (the activity method reads it without the lock).
 */
#include "pcsamp.h"

#include "../engine.h"

static void (*activity_flush)(void); /* the plugin's, from start to the next start */

static uint32_t start(const fl_trace_options *o, fl_engine_env *env)
{
    activity_flush = env->activity_flush;
    uint32_t st = fl_pcs_engine_start(o, env->ctx0);
    if (o->pc_sampling && o->sass_metrics) {
        env->agg = fl_pcs_engine_shared();
        env->lock = fl_pcs_engine_lock;
        env->unlock = fl_pcs_engine_unlock;
        if (!env->agg && st == FL_PC_ACTIVE)
            env->refuse = "Deep's SASS metrics share PC sampling's dictionaries, which needs "
                          "CUPTI's PC Sampling API; this device samples PCs through the "
                          "activity API (a GPU older than Volta, which has no SASS metrics "
                          "either)";
    }
    return st;
}

static void drain(const fl_trace_sink *sink)
{
    /* Its collection point, if one is due, flushes the activity buffers
     * while sampling is stopped. */
    fl_pcs_engine_drain(sink, activity_flush);
}

const fl_engine fl_pcs_engine = {
    .name = "PcSampling",
    .slot = FL_ENGINE_PC,
    .start = start,
    .context_created = fl_pcs_context_created,
    .context_destroying = fl_pcs_context_destroying,
    .keeps_cubins = fl_pcs_keeps_cubins,
    .fail = fl_pcs_engine_fail,
    .contexts_what = "cuptiSubscribe (CUDA contexts and modules for PC sampling)",
    .activity_sink = fl_pcs_engine_activity_sink,
    .collect = fl_pcs_request_collect,
    .armed = fl_pcs_armed,
    .drain = drain,
    .stop = fl_pcs_engine_stop,
    .stats = fl_pcs_engine_stats,
    .release = fl_pcs_engine_release,
    .trace = fl_pcs_trace,
    .trace_what = "PC sampling",
    .metrics_id = -1,
};
