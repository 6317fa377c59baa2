/*
 * cupti_trace.h - GPUFL_CUPTI_TRACE: the engines' CUPTI calls said on
 * stderr (cupti_trace.c), for the sessions CUPTI answers with no data.
 */
#ifndef GP_PLUGIN_CUPTI_TRACE_H
#define GP_PLUGIN_CUPTI_TRACE_H

#include "../src/abi/metrics_abi.h"

#include <stdbool.h>

/* With GPUFL_CUPTI_TRACE set (not "" nor "0"): the PC sampling, SASS
 * metrics, range profiler and PM sampling tables replaced by wrappers that
 * say each call (host: the Profiler Host API's table PM sampling uses).
 * Returns whether it did. */
bool fl_cupti_trace_install(const gp_metrics_plugin *host);

#endif /* GP_PLUGIN_CUPTI_TRACE_H */
