/*
 * pmsamp_trace.c - GPUFL_CUPTI_TRACE for PM sampling: its CUPTI table (the one tests
 * inject) replaced by wrappers that call CUPTI's own functions and say
 * what came back (common/cupti_say.h).
 *
 * Promises: installed only when the plugin finds GPUFL_CUPTI_TRACE set
 * (cupti_trace.c); each result is CUPTI's, unchanged.
 */
#include "pmsamp.h"

#include "../../common/cupti_say.h"

#include <stdio.h>

/* -------------------------------------------------------------- PM sampling */

FL_SAY_PLAIN(t_pm_enable, cuptiPmSamplingEnable, CUpti_PmSampling_Enable_Params)
FL_SAY_PLAIN(t_pm_config, cuptiPmSamplingSetConfig, CUpti_PmSampling_SetConfig_Params)
FL_SAY_PLAIN(t_pm_size, cuptiPmSamplingGetCounterDataSize,
             CUpti_PmSampling_GetCounterDataSize_Params)
FL_SAY_PLAIN(t_pm_init, cuptiPmSamplingCounterDataImageInitialize,
             CUpti_PmSampling_CounterDataImage_Initialize_Params)
FL_SAY_PLAIN(t_pm_start, cuptiPmSamplingStart, CUpti_PmSampling_Start_Params)
FL_SAY_PLAIN(t_pm_stop, cuptiPmSamplingStop, CUpti_PmSampling_Stop_Params)
FL_SAY_FIELDS(t_pm_decode, cuptiPmSamplingDecodeData, CUpti_PmSampling_DecodeData_Params,
              "stop reason %d overflow %u", (int)p->decodeStopReason, (unsigned)p->overflow)
FL_SAY_FIELDS(t_pm_info, cuptiPmSamplingGetCounterDataInfo,
              CUpti_PmSampling_GetCounterDataInfo_Params, "samples %zu populated %zu completed %zu",
              p->numTotalSamples, p->numPopulatedSamples, p->numCompletedSamples)
FL_SAY_PLAIN(t_pm_sample, cuptiPmSamplingCounterDataGetSampleInfo,
             CUpti_PmSampling_CounterData_GetSampleInfo_Params)
FL_SAY_PLAIN(t_pm_disable, cuptiPmSamplingDisable, CUpti_PmSampling_Disable_Params)

void fl_pms_trace(const gp_metrics_plugin *host)
{
    static fl_pms_api pms = {FL_PMS_CALLS(FL_API_TRACED)};
    pms.host = host;
    fl_pms_set_api(&pms);
}
