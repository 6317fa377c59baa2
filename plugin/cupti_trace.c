/*
 * cupti_trace.c - GPUFL_CUPTI_TRACE=1: every CUPTI call of the PC sampling,
 * SASS metrics, range profiler and PM sampling engines, with its result
 * and the counts it answered, one line each on stderr.
 *
 * Promises: nothing is installed (and nothing printed) unless the variable
 * is set to something other than "" or "0"; when it is, the engines' CUPTI
 * tables (their `api`, the one tests inject) are replaced by wrappers that
 * call CUPTI's own functions and say what came back.  It exists because
 * an engine that CUPTI answers with success and no data ("enabled_no_data")
 * leaves nothing else to read: the call order and the counts are the
 * evidence.  Debug output the user asked for, like GPUFL_ENABLE_DEBUG_OUTPUT.
 */
#include "cupti_trace.h"

#include "pcsamp.h"
#include "pmsamp.h"
#include "rangeprof.h"
#include "sassmetrics.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static void say(const char *fn, CUptiResult r, const char *fmt, ...)
{
    const char *m = NULL;
    if (cuptiGetResultString(r, &m) != CUPTI_SUCCESS || !m)
        m = "?";
    char extra[256] = "";
    if (fmt) {
        va_list ap;
        va_start(ap, fmt);
        vsnprintf(extra, sizeof extra, fmt, ap);
        va_end(ap);
    }
    fprintf(stderr, "[gpufl cupti] %s -> %d %s%s%s\n", fn, (int)r, m, extra[0] ? ": " : "", extra);
}

/* A wrapper that says only the result. */
#define PLAIN(name, fn, T)                                                                         \
    static CUptiResult name(T *p)                                                                  \
    {                                                                                              \
        CUptiResult r = fn(p);                                                                     \
        say(#fn, r, NULL);                                                                         \
        return r;                                                                                  \
    }
/* A wrapper that says the result and the fields fmt names. */
#define SAYS(name, fn, T, fmt, ...)                                                                \
    static CUptiResult name(T *p)                                                                  \
    {                                                                                              \
        CUptiResult r = fn(p);                                                                     \
        say(#fn, r, fmt, __VA_ARGS__);                                                             \
        return r;                                                                                  \
    }

static CUptiResult t_device_id(CUcontext ctx, uint32_t *dev)
{
    CUptiResult r = cuptiGetDeviceId(ctx, dev);
    say("cuptiGetDeviceId", r, "ctx %p device %u", (void *)ctx, r == CUPTI_SUCCESS ? *dev : 0u);
    return r;
}

PLAIN(t_prof_init, cuptiProfilerInitialize, CUpti_Profiler_Initialize_Params)
PLAIN(t_prof_deinit, cuptiProfilerDeInitialize, CUpti_Profiler_DeInitialize_Params)
SAYS(t_chip, cuptiDeviceGetChipName, CUpti_Device_GetChipName_Params, "device %zu chip %s",
     p->deviceIndex, p->pChipName ? p->pChipName : "(null)")

/* ------------------------------------------------------------ SASS metrics */

SAYS(t_sass_props, cuptiSassMetricsGetProperties, CUpti_SassMetrics_GetProperties_Params,
     "%s id %llu", p->pMetricName ? p->pMetricName : "(null)",
     (unsigned long long)p->metric.metricId)
SAYS(t_sass_set, cuptiSassMetricsSetConfig, CUpti_SassMetricsSetConfig_Params,
     "device %u, %zu metrics", p->deviceIndex, p->numOfMetricConfig)
SAYS(t_sass_unset, cuptiSassMetricsUnsetConfig, CUpti_SassMetricsUnsetConfig_Params, "device %u",
     p->deviceIndex)
SAYS(t_sass_enable, cuptiSassMetricsEnable, CUpti_SassMetricsEnable_Params, "ctx %p lazy %u",
     (void *)p->ctx, (unsigned)p->enableLazyPatching)
SAYS(t_sass_disable, cuptiSassMetricsDisable, CUpti_SassMetricsDisable_Params, "ctx %p dropped %zu",
     (void *)p->ctx, p->numOfDroppedRecords)
SAYS(t_sass_props_data, cuptiSassMetricsGetDataProperties,
     CUpti_SassMetricsGetDataProperties_Params, "ctx %p records %zu instances %zu", (void *)p->ctx,
     p->numOfPatchedInstructionRecords, p->numOfInstances)
/* FlushData: the counts, then the first records as CUPTI filled them (a
 * session with records and no rows is read here). */
static CUptiResult t_sass_flush(CUpti_SassMetricsFlushData_Params *p)
{
    CUptiResult r = cuptiSassMetricsFlushData(p);
    say("cuptiSassMetricsFlushData", r, "ctx %p records %zu instances %zu", (void *)p->ctx,
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

static const fl_sass_api sass_traced = {
    .profiler_init = t_prof_init,
    .profiler_deinit = t_prof_deinit,
    .chip_name = t_chip,
    .get_properties = t_sass_props,
    .set_config = t_sass_set,
    .unset_config = t_sass_unset,
    .enable = t_sass_enable,
    .disable = t_sass_disable,
    .data_properties = t_sass_props_data,
    .flush_data = t_sass_flush,
    .device_id = t_device_id,
};

/* --------------------------------------------------------- range profiler */

SAYS(t_rp_enable, cuptiRangeProfilerEnable, CUpti_RangeProfiler_Enable_Params, "ctx %p object %p",
     (void *)p->ctx, (void *)p->pRangeProfilerObject)
PLAIN(t_rp_disable, cuptiRangeProfilerDisable, CUpti_RangeProfiler_Disable_Params)
SAYS(t_rp_size, cuptiRangeProfilerGetCounterDataSize, CUpti_RangeProfiler_GetCounterDataSize_Params,
     "%zu metrics, %zu ranges: %zu bytes", p->numMetrics, p->maxNumOfRanges, p->counterDataSize)
SAYS(t_rp_init, cuptiRangeProfilerCounterDataImageInitialize,
     CUpti_RangeProfiler_CounterDataImage_Initialize_Params, "%zu bytes", p->counterDataSize)
SAYS(t_rp_config, cuptiRangeProfilerSetConfig, CUpti_RangeProfiler_SetConfig_Params,
     "range %d replay %d max ranges %zu config %zu bytes", (int)p->range, (int)p->replayMode,
     p->maxRangesPerPass, p->configSize)
PLAIN(t_rp_start, cuptiRangeProfilerStart, CUpti_RangeProfiler_Start_Params)
SAYS(t_rp_stop, cuptiRangeProfilerStop, CUpti_RangeProfiler_Stop_Params,
     "pass %zu all passes submitted %u", p->passIndex, (unsigned)p->isAllPassSubmitted)
SAYS(t_rp_push, cuptiRangeProfilerPushRange, CUpti_RangeProfiler_PushRange_Params, "%s",
     p->pRangeName ? p->pRangeName : "(null)")
PLAIN(t_rp_pop, cuptiRangeProfilerPopRange, CUpti_RangeProfiler_PopRange_Params)
SAYS(t_rp_decode, cuptiRangeProfilerDecodeData, CUpti_RangeProfiler_DecodeData_Params,
     "ranges dropped %zu", p->numOfRangeDropped)
SAYS(t_rp_info, cuptiRangeProfilerGetCounterDataInfo, CUpti_RangeProfiler_GetCounterDataInfo_Params,
     "ranges %zu", p->numTotalRanges)
SAYS(t_rp_range, cuptiRangeProfilerCounterDataGetRangeInfo,
     CUpti_RangeProfiler_CounterData_GetRangeInfo_Params, "range %zu %s", p->rangeIndex,
     p->rangeName ? p->rangeName : "(null)")

/* --------------------------------------------------------------- PC sampling */

PLAIN(t_pc_enable, cuptiPCSamplingEnable, CUpti_PCSamplingEnableParams)
PLAIN(t_pc_disable, cuptiPCSamplingDisable, CUpti_PCSamplingDisableParams)
SAYS(t_pc_config, cuptiPCSamplingSetConfigurationAttribute, CUpti_PCSamplingConfigurationInfoParams,
     "%zu attributes", p->numAttributes)
SAYS(t_pc_num, cuptiPCSamplingGetNumStallReasons, CUpti_PCSamplingGetNumStallReasonsParams,
     "%zu reasons", p->numStallReasons ? *p->numStallReasons : 0)
PLAIN(t_pc_reasons, cuptiPCSamplingGetStallReasons, CUpti_PCSamplingGetStallReasonsParams)
PLAIN(t_pc_start, cuptiPCSamplingStart, CUpti_PCSamplingStartParams)
PLAIN(t_pc_stop, cuptiPCSamplingStop, CUpti_PCSamplingStopParams)

static CUptiResult t_pc_get(CUpti_PCSamplingGetDataParams *p)
{
    CUptiResult r = cuptiPCSamplingGetData(p);
    const CUpti_PCSamplingData *d = p->pcSamplingData;
    say("cuptiPCSamplingGetData", r,
        "pcs %zu remaining %zu samples %llu dropped %llu non-user %llu hw full %u",
        d ? d->totalNumPcs : 0, d ? d->remainingNumPcs : 0,
        d ? (unsigned long long)d->totalSamples : 0ull,
        d ? (unsigned long long)d->droppedSamples : 0ull,
        d ? (unsigned long long)d->nonUsrKernelsTotalSamples : 0ull,
        d ? (unsigned)d->hardwareBufferFull : 0u);
    return r;
}

static CUptiResult t_act_enable(CUpti_ActivityKind k)
{
    CUptiResult r = cuptiActivityEnable(k);
    say("cuptiActivityEnable", r, "kind %d", (int)k);
    return r;
}

static CUptiResult t_act_pc(CUcontext ctx, CUpti_ActivityPCSamplingConfig *c)
{
    CUptiResult r = cuptiActivityConfigurePCSampling(ctx, c);
    say("cuptiActivityConfigurePCSampling", r, "ctx %p", (void *)ctx);
    return r;
}

/* -------------------------------------------------------------- PM sampling */

PLAIN(t_pm_enable, cuptiPmSamplingEnable, CUpti_PmSampling_Enable_Params)
PLAIN(t_pm_config, cuptiPmSamplingSetConfig, CUpti_PmSampling_SetConfig_Params)
PLAIN(t_pm_size, cuptiPmSamplingGetCounterDataSize, CUpti_PmSampling_GetCounterDataSize_Params)
PLAIN(t_pm_init, cuptiPmSamplingCounterDataImageInitialize,
      CUpti_PmSampling_CounterDataImage_Initialize_Params)
PLAIN(t_pm_start, cuptiPmSamplingStart, CUpti_PmSampling_Start_Params)
PLAIN(t_pm_stop, cuptiPmSamplingStop, CUpti_PmSampling_Stop_Params)
SAYS(t_pm_decode, cuptiPmSamplingDecodeData, CUpti_PmSampling_DecodeData_Params,
     "stop reason %d overflow %u", (int)p->decodeStopReason, (unsigned)p->overflow)
SAYS(t_pm_info, cuptiPmSamplingGetCounterDataInfo, CUpti_PmSampling_GetCounterDataInfo_Params,
     "samples %zu populated %zu completed %zu", p->numTotalSamples, p->numPopulatedSamples,
     p->numCompletedSamples)
PLAIN(t_pm_sample, cuptiPmSamplingCounterDataGetSampleInfo,
      CUpti_PmSampling_CounterData_GetSampleInfo_Params)
PLAIN(t_pm_disable, cuptiPmSamplingDisable, CUpti_PmSampling_Disable_Params)

bool fl_cupti_trace_install(const gp_metrics_plugin *host)
{
    const char *v = getenv("GPUFL_CUPTI_TRACE");
    if (!v || !*v || strcmp(v, "0") == 0)
        return false;
    static const fl_rp_api rp = {
        .profiler_init = t_prof_init,
        .profiler_deinit = t_prof_deinit,
        .device_id = t_device_id,
        .chip_name = t_chip,
        .enable = t_rp_enable,
        .disable = t_rp_disable,
        .data_size = t_rp_size,
        .data_init = t_rp_init,
        .set_config = t_rp_config,
        .start = t_rp_start,
        .stop = t_rp_stop,
        .push = t_rp_push,
        .pop = t_rp_pop,
        .decode = t_rp_decode,
        .data_info = t_rp_info,
        .range_info = t_rp_range,
        .evaluate = NULL,
    };
    static const fl_pcs_api pcs = {
        .enable = t_pc_enable,
        .disable = t_pc_disable,
        .configure = t_pc_config,
        .num_stall_reasons = t_pc_num,
        .stall_reasons = t_pc_reasons,
        .start = t_pc_start,
        .stop = t_pc_stop,
        .get_data = t_pc_get,
        .device_id = t_device_id,
        .activity_enable = t_act_enable,
        .activity_configure = t_act_pc,
    };
    static fl_pms_api pms = {
        .profiler_init = t_prof_init,
        .device_id = t_device_id,
        .chip_name = t_chip,
        .enable = t_pm_enable,
        .set_config = t_pm_config,
        .data_size = t_pm_size,
        .data_init = t_pm_init,
        .start = t_pm_start,
        .stop = t_pm_stop,
        .decode = t_pm_decode,
        .data_info = t_pm_info,
        .sample_info = t_pm_sample,
        .disable = t_pm_disable,
    };
    pms.host = host;
    fl_sass_set_api(&sass_traced);
    fl_rp_set_api(&rp);
    fl_pcs_set_api(&pcs);
    fl_pms_set_api(&pms);
    fprintf(stderr,
            "[gpufl cupti] GPUFL_CUPTI_TRACE=%s: every CUPTI call of the PC sampling, "
            "SASS metrics, range profiler and PM sampling engines follows\n",
            v);
    return true;
}
