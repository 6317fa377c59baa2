/*
 * pcsamp_trace.c - GPUFL_CUPTI_TRACE for PC sampling: its CUPTI table (the one tests
 * inject) replaced by wrappers that call CUPTI's own functions and say
 * what came back (common/cupti_say.h).
 *
 * Promises: installed only when the plugin finds GPUFL_CUPTI_TRACE set
 * (cupti_trace.c); each result is CUPTI's, unchanged.
 */
#include "pcsamp.h"

#include "../../common/cupti_say.h"

#include <stdio.h>

/* --------------------------------------------------------------- PC sampling */

FL_SAY_PLAIN(t_pc_enable, cuptiPCSamplingEnable, CUpti_PCSamplingEnableParams)
FL_SAY_PLAIN(t_pc_disable, cuptiPCSamplingDisable, CUpti_PCSamplingDisableParams)
FL_SAY_FIELDS(t_pc_config, cuptiPCSamplingSetConfigurationAttribute,
              CUpti_PCSamplingConfigurationInfoParams, "%zu attributes", p->numAttributes)
FL_SAY_FIELDS(t_pc_num, cuptiPCSamplingGetNumStallReasons, CUpti_PCSamplingGetNumStallReasonsParams,
              "%zu reasons", p->numStallReasons ? *p->numStallReasons : 0)
FL_SAY_PLAIN(t_pc_reasons, cuptiPCSamplingGetStallReasons, CUpti_PCSamplingGetStallReasonsParams)
FL_SAY_PLAIN(t_pc_start, cuptiPCSamplingStart, CUpti_PCSamplingStartParams)
FL_SAY_PLAIN(t_pc_stop, cuptiPCSamplingStop, CUpti_PCSamplingStopParams)

static CUptiResult t_pc_get(CUpti_PCSamplingGetDataParams *p)
{
    CUptiResult r = cuptiPCSamplingGetData(p);
    const CUpti_PCSamplingData *d = p->pcSamplingData;
    fl_cupti_say("cuptiPCSamplingGetData", r,
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
    fl_cupti_say("cuptiActivityEnable", r, "kind %d", (int)k);
    return r;
}

static CUptiResult t_act_pc(CUcontext ctx, CUpti_ActivityPCSamplingConfig *c)
{
    CUptiResult r = cuptiActivityConfigurePCSampling(ctx, c);
    fl_cupti_say("cuptiActivityConfigurePCSampling", r, "ctx %p", (void *)ctx);
    return r;
}

void fl_pcs_trace(const gp_metrics_plugin *host)
{
    (void)host;
    static const fl_pcs_api pcs = {FL_PCS_CALLS(FL_API_TRACED)};
    fl_pcs_set_api(&pcs);
}
