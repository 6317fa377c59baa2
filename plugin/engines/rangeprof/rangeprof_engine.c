/*
 * rangeprof_engine.c - the range profiler as a row of the engine table
 * (engine.h).
 *
 * Promises: the engine's own functions (rangeprof.h), unchanged, behind
 * the common interface; it follows no context (its own is the first
 * current at an outermost scope) and names its kernel ranges from the
 * launches; its metric set for `gpu-profile metrics` is chosen by the
 * code a session uses (fl_rp_choose).
 */
#include "rangeprof.h"

#include "../engine.h"

static uint32_t start(const fl_trace_options *o, fl_engine_env *env)
{
    return fl_rp_engine_start(o, env);
}

static bool wants_scopes(const fl_trace_options *o)
{
    return o->range_profiler;
}

static size_t defaults(const char **names, unsigned *slots, size_t cap)
{
    size_t k = 0;
    for (unsigned s = 0; s < FL_RP_DEFAULT_SLOTS; s++)
        for (int c = 0; c < 3 && fl_rp_default_set[s][c] && k < cap; c++) {
            slots[k] = s;
            names[k++] = fl_rp_default_set[s][c];
        }
    return k;
}

static gp_status choose(const gp_metrics_plugin *table, void *hobj, const char *chip,
                        const char *list, bool one_pass, fl_engine_take take, void *user,
                        gp_error *err)
{
    (void)chip; /* the host object is the chip's */
    fl_rp_choice c;
    gp_status st = fl_rp_choose(table, hobj, list, one_pass, &c, err);
    if (st != GP_OK)
        return st;
    take(user, (const char *const *)c.names, c.n, c.passes);
    fl_rp_choice_free(&c);
    return GP_OK;
}

const fl_engine fl_rp_engine = {
    .name = "RangeProfiler",
    .slot = FL_ENGINE_RP,
    .start = start,
    .wants_scopes = wants_scopes,
    .scope_begin = fl_rp_range_begin,
    .scope_end = fl_rp_range_end,
    .kernel_launch = fl_rp_kernel_launch,
    .drain = fl_rp_engine_drain,
    .stop = fl_rp_engine_stop,
    .stats = fl_rp_engine_stats,
    .release = fl_rp_engine_release,
    .trace = fl_rp_trace,
    .trace_what = "range profiler",
    .metrics_id = 0,
    .defaults = defaults,
    .choose = choose,
};
