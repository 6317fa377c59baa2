/*
 * pmsamp_engine.c - PM sampling as a row of the engine table (engine.h).
 *
 * Promises: the engine's own functions (pmsamp.h), unchanged, behind the
 * common interface: its clock is the activity records' (env), its config
 * images and evaluation the Profiler Host API's (env->host); its metric
 * set for `gpu-profile metrics` is the one a session would use.
 */
#include "pmsamp.h"

#include "../engine.h"
#include "gpu_profile.h"

#include <stdlib.h>

static uint32_t start(const fl_trace_options *o, fl_engine_env *env)
{
    fl_trace_options pmo = *o;
    pmo.clock_offset_ns = env->clock_offset_ns;
    if (env->host)
        fl_pms_set_host(env->host);
    return fl_pms_engine_start(&pmo, env->ctx0);
}

static size_t defaults(const char **names, unsigned *slots, size_t cap)
{
    return fl_engine_flat_defaults(fl_pms_default_metrics, fl_pms_n_default_metrics, names, slots,
                                   cap);
}

static gp_status choose(const gp_metrics_plugin *table, void *hobj, const char *chip,
                        const char *list, bool one_pass, fl_engine_take take, void *user,
                        gp_error *err)
{
    (void)one_pass; /* PM sampling has one pass always */
    fl_pms_api a = {.host = table};
    char **names = NULL;
    uint8_t *img = NULL;
    size_t k = 0, size = 0, passes = 0;
    /* `metrics fits` reads any refusal of the set as the list's */
    if (fl_pms_metric_set(&a, hobj, chip, list, &names, &k, &img, &size, err) != GP_OK)
        return err ? (err->status = GP_ERR_INVALID_ARG) : GP_ERR_INVALID_ARG;
    gp_status st = table->passes(img, size, &passes, err);
    free(img);
    if (st == 0)
        take(user, (const char *const *)names, k, passes);
    fl_pms_free_metrics(names, k);
    return st;
}

const fl_engine fl_pms_engine = {
    .name = "PmSampling",
    .slot = FL_ENGINE_PM,
    .start = start,
    .context_created = fl_pms_context_created,
    .context_destroying = fl_pms_context_destroying,
    .fail = fl_pms_engine_fail,
    .contexts_what = "cuptiSubscribe (CUDA contexts for PM sampling)",
    .drain = fl_pms_engine_drain,
    .stop = fl_pms_engine_stop,
    .stats = fl_pms_engine_stats,
    .release = fl_pms_engine_release,
    .trace = fl_pms_trace,
    .trace_what = "PM sampling",
    .metrics_id = 1,
    .defaults = defaults,
    .choose = choose,
};
