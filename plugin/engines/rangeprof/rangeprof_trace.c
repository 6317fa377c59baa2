/*
 * rangeprof_trace.c - GPUFL_CUPTI_TRACE for the range profiler: its CUPTI table (the one tests
 * inject) replaced by wrappers that call CUPTI's own functions and say
 * what came back (common/cupti_say.h).
 *
 * Promises: installed only when the plugin finds GPUFL_CUPTI_TRACE set
 * (cupti_trace.c); each result is CUPTI's, unchanged.
 */
#include "rangeprof.h"

#include "../../common/cupti_say.h"

#include <stdio.h>

/* --------------------------------------------------------- range profiler */

FL_SAY_FIELDS(t_rp_enable, cuptiRangeProfilerEnable, CUpti_RangeProfiler_Enable_Params,
              "ctx %p object %p", (void *)p->ctx, (void *)p->pRangeProfilerObject)
FL_SAY_PLAIN(t_rp_disable, cuptiRangeProfilerDisable, CUpti_RangeProfiler_Disable_Params)
FL_SAY_FIELDS(t_rp_size, cuptiRangeProfilerGetCounterDataSize,
              CUpti_RangeProfiler_GetCounterDataSize_Params, "%zu metrics, %zu ranges: %zu bytes",
              p->numMetrics, p->maxNumOfRanges, p->counterDataSize)
FL_SAY_FIELDS(t_rp_init, cuptiRangeProfilerCounterDataImageInitialize,
              CUpti_RangeProfiler_CounterDataImage_Initialize_Params, "%zu bytes",
              p->counterDataSize)
FL_SAY_FIELDS(t_rp_config, cuptiRangeProfilerSetConfig, CUpti_RangeProfiler_SetConfig_Params,
              "range %d replay %d max ranges %zu config %zu bytes", (int)p->range,
              (int)p->replayMode, p->maxRangesPerPass, p->configSize)
FL_SAY_PLAIN(t_rp_start, cuptiRangeProfilerStart, CUpti_RangeProfiler_Start_Params)
FL_SAY_FIELDS(t_rp_stop, cuptiRangeProfilerStop, CUpti_RangeProfiler_Stop_Params,
              "pass %zu all passes submitted %u", p->passIndex, (unsigned)p->isAllPassSubmitted)
FL_SAY_FIELDS(t_rp_push, cuptiRangeProfilerPushRange, CUpti_RangeProfiler_PushRange_Params, "%s",
              p->pRangeName ? p->pRangeName : "(null)")
FL_SAY_PLAIN(t_rp_pop, cuptiRangeProfilerPopRange, CUpti_RangeProfiler_PopRange_Params)
FL_SAY_FIELDS(t_rp_decode, cuptiRangeProfilerDecodeData, CUpti_RangeProfiler_DecodeData_Params,
              "ranges dropped %zu", p->numOfRangeDropped)
FL_SAY_FIELDS(t_rp_info, cuptiRangeProfilerGetCounterDataInfo,
              CUpti_RangeProfiler_GetCounterDataInfo_Params, "ranges %zu", p->numTotalRanges)
FL_SAY_FIELDS(t_rp_range, cuptiRangeProfilerCounterDataGetRangeInfo,
              CUpti_RangeProfiler_CounterData_GetRangeInfo_Params, "range %zu %s", p->rangeIndex,
              p->rangeName ? p->rangeName : "(null)")

void fl_rp_trace(const gp_metrics_plugin *host)
{
    (void)host;
    static const fl_rp_api rp = {FL_RP_CALLS(FL_API_TRACED)};
    fl_rp_set_api(&rp);
}
