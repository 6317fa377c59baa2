/*
 * sassmetrics_trace.c - GPUFL_CUPTI_TRACE for SASS metrics: its CUPTI table (the one tests
 * inject) replaced by wrappers that call CUPTI's own functions and say
 * what came back (common/cupti_say.h).
 *
 * Promises: installed only when the plugin finds GPUFL_CUPTI_TRACE set
 * (cupti_trace.c); each result is CUPTI's, unchanged.
 */
#include "sassmetrics.h"

#include "../../common/cupti_say.h"

#include <stdio.h>

/* ------------------------------------------------------------ SASS metrics */

FL_SAY_FIELDS(t_sass_props, cuptiSassMetricsGetProperties, CUpti_SassMetrics_GetProperties_Params,
              "%s id %llu", p->pMetricName ? p->pMetricName : "(null)",
              (unsigned long long)p->metric.metricId)
FL_SAY_FIELDS(t_sass_set, cuptiSassMetricsSetConfig, CUpti_SassMetricsSetConfig_Params,
              "device %u, %zu metrics", p->deviceIndex, p->numOfMetricConfig)
FL_SAY_FIELDS(t_sass_unset, cuptiSassMetricsUnsetConfig, CUpti_SassMetricsUnsetConfig_Params,
              "device %u", p->deviceIndex)
FL_SAY_FIELDS(t_sass_enable, cuptiSassMetricsEnable, CUpti_SassMetricsEnable_Params,
              "ctx %p lazy %u", (void *)p->ctx, (unsigned)p->enableLazyPatching)
FL_SAY_FIELDS(t_sass_disable, cuptiSassMetricsDisable, CUpti_SassMetricsDisable_Params,
              "ctx %p dropped %zu", (void *)p->ctx, p->numOfDroppedRecords)
FL_SAY_FIELDS(t_sass_props_data, cuptiSassMetricsGetDataProperties,
              CUpti_SassMetricsGetDataProperties_Params, "ctx %p records %zu instances %zu",
              (void *)p->ctx, p->numOfPatchedInstructionRecords, p->numOfInstances)
/* FlushData: the counts, then the first records as CUPTI filled them (a
 * session with records and no rows is read here). */
static CUptiResult t_sass_flush(CUpti_SassMetricsFlushData_Params *p)
{
    CUptiResult r = cuptiSassMetricsFlushData(p);
    fl_cupti_say("cuptiSassMetricsFlushData", r, "ctx %p records %zu instances %zu", (void *)p->ctx,
                 p->numOfPatchedInstructionRecords, p->numOfInstances);
    for (size_t i = 0;
         r == CUPTI_SUCCESS && p->pMetricsData && i < 4 && i < p->numOfPatchedInstructionRecords;
         i++) {
        const CUpti_SassMetrics_Data *d = &p->pMetricsData[i];
        fprintf(stderr, "[gpufl cupti]   record %zu: %s +0x%x crc %llx values %p:", i,
                d->functionName ? d->functionName : "(null)", d->pcOffset,
                (unsigned long long)d->cubinCrc, (void *)d->pInstanceValues);
        for (size_t j = 0; d->pInstanceValues && j < p->numOfInstances && j < 4; j++)
            fprintf(stderr, " metric %llu = %llu",
                    (unsigned long long)d->pInstanceValues[j].metricId,
                    (unsigned long long)d->pInstanceValues[j].value);
        fputc('\n', stderr);
    }
    return r;
}

static const fl_sass_api sass_traced = {FL_SASS_CALLS(FL_API_TRACED)};

void fl_sass_trace(const gp_metrics_plugin *host)
{
    (void)host;
    fl_sass_set_api(&sass_traced);
}
