/*
 * cupti_trace.c - GPUFL_CUPTI_TRACE=1: every CUPTI call of the profiling
 * engines, with its result and the counts it answered, one line each on
 * stderr.
 *
 * Promises: nothing is installed (and nothing printed) unless the variable
 * is set to something other than "" or "0"; when it is, each engine of
 * the table that has a traced table installs it (its `trace`: wrappers
 * that call CUPTI's own functions and say what came back).  It exists
 * because an engine that CUPTI answers with success and no data
 * ("enabled_no_data") leaves nothing else to read: the call order and the
 * counts are the evidence.  Debug output the user asked for, like
 * GPUFL_ENABLE_DEBUG_OUTPUT.
 */
#include "cupti_trace.h"

#include "engines/engine.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

bool fl_cupti_trace_install(const gp_metrics_plugin *host)
{
    const char *v = getenv("GPUFL_CUPTI_TRACE");
    if (!v || !*v || strcmp(v, "0") == 0)
        return false;
    char what[256] = "";
    size_t n = 0, len = 0;
    for (size_t i = 0; i < fl_n_engines; i++)
        n += fl_engines[i]->trace != NULL;
    for (size_t i = 0, k = 0; i < fl_n_engines && len < sizeof what; i++) {
        const fl_engine *e = fl_engines[i];
        if (!e->trace)
            continue;
        e->trace(host);
        const char *sep = k == 0 ? "" : k + 1 == n ? " and " : ", ";
        int w = snprintf(what + len, sizeof what - len, "%s%s", sep, e->trace_what);
        len += w > 0 ? (size_t)w : 0;
        k++;
    }
    fprintf(stderr,
            "[gpufl cupti] GPUFL_CUPTI_TRACE=%s: every CUPTI call of the %s engines follows\n", v,
            what);
    return true;
}
