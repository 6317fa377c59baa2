/*
 * sampler/profile_call.c - gp_profile_call: one function run under a
 * monitor of its own, its summaries reported as the options ask and
 * handed back.
 *
 * Promises: fn is not run when the monitor cannot start; the result holds
 * a copy of every device's summary (freed by gp_profiled_result_free);
 * only the public monitor API is used.
 */
#include "../util/error.h"
#include "options.h"
#include "gpu_profile.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static gp_status report(const gp_options *o, const gp_summary *s, gp_error *err)
{
    switch (o->report) {
    case GP_REPORT_NONE:
        return GP_OK;
    case GP_REPORT_CALLBACK:
        o->report_fn(s, o->report_user);
        return GP_OK;
    case GP_REPORT_PRINT:
        return gp_summary_print(s, o->report_file ? o->report_file : stderr, o->report_flags, err);
    }
    return GP_OK;
}

gp_status gp_profile_call(const gp_options *opts, gp_call_fn fn, void *user,
                          gp_profiled_result *result, gp_error *err)
{
    gp_error_clear(err);
    if (result)
        memset(result, 0, sizeof *result);
    if (!fn)
        return gp_error_set(err, GP_ERR_INVALID_ARG, "gp_profile_call: fn is NULL");
    gp_options defaults;
    opts = gp_options_or_defaults(opts, &defaults);
    gp_monitor *m = NULL;
    gp_status st = gp_monitor_create(opts, &m, err);
    if (st == GP_OK)
        st = gp_monitor_start(m, err);
    if (st != GP_OK) {
        gp_monitor_destroy(m);
        return st; /* fn is not run when the profiler cannot start */
    }
    int value = fn(user);
    st = gp_monitor_stop(m, err);
    /* A summary exists once the monitor stopped (NULL otherwise). */
    size_t n = gp_monitor_device_count(m);
    for (size_t i = 0; st == GP_OK && i < n; i++)
        st = report(opts, gp_monitor_summary(m, i), err);
    if (result) {
        result->value = value;
        result->gpus = malloc((n ? n : 1) * sizeof *result->gpus);
        if (result->gpus) {
            for (size_t i = 0; i < n; i++) {
                const gp_summary *g = gp_monitor_summary(m, i);
                if (g)
                    result->gpus[result->n_gpus++] = *g;
            }
        } else if (st == GP_OK) {
            st = gp_error_set(err, GP_ERR_NO_MEMORY, "out of memory for the summaries");
        }
        if (result->n_gpus)
            result->gpu = result->gpus[0];
    }
    gp_monitor_destroy(m);
    return st;
}

void gp_profiled_result_free(gp_profiled_result *result)
{
    if (!result)
        return;
    free(result->gpus);
    result->gpus = NULL;
    result->n_gpus = 0;
}
