/*
 * rp_fake.h - CUPTI's range profiler API (cupti_range_profiler.h) and the
 * Profiler Host API's table, faked for plugin/engines/rangeprof/rangeprof.c (fl_rp_api): the
 * toolkit's real parameter structs, filled as CUPTI fills them.  Used by
 * the fake plugin's "rangeprofiler" scenarios (tests/fakes/
 * fake_cupti_plugin.c) to run the real engine in a session.
 *
 * The device: chip GH100, device 0.  The host table: every name valid but
 * "bad__*" (GP_ERR_INVALID_ARG naming it); a set needs as many passes as
 * its heaviest metric: sm__throughput.avg.pct_of_peak_sustained_elapsed 8,
 * lts__t_sector_hit_rate.pct 2, any other 1 - so scope ranges (one pass)
 * keep the default set's other six, kernel ranges all eight in 8 passes.
 * A decode holds rpf.kernels ranges (kernel ranges: named by
 * rpf_kernel_names in turn) or one (scope ranges).  Range r's value of a
 * metric (rpf_value): sm__warps_active 60 + r, dram__throughput 50,
 * dram__bytes_read 1048576 (r + 1), dram__bytes_write 524288, l1tex hit
 * 35, lts hit 80, tensor 12.5, sm__throughput 71.5, anything else 7.
 * rpf.init / rpf.config: the answers of cuptiProfilerInitialize and
 * SetConfig (a refusal test).
 */
#ifndef GP_TEST_RP_FAKE_H
#define GP_TEST_RP_FAKE_H

#include "engines/rangeprof/rangeprof.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static struct {
    CUptiResult init, config;
    size_t kernels; /* ranges a kernel-range decode holds */
    size_t decoded; /* ranges decoded so far (kernel names go round) */
    int range_mode; /* SetConfig's CUpti_ProfilerRange */
    int enabled, configured, started, pushed, decodes;
    char pushed_name[64];
} rpf;

static const char *const rpf_kernel_names[] = {"vecAdd(float*, float*, float*, int)",
                                               "gemm(float const*, float const*, float*)"};
static int rpf_object;

static CUptiResult rpf_init(CUpti_Profiler_Initialize_Params *p)
{
    (void)p;
    return rpf.init;
}
static CUptiResult rpf_deinit(CUpti_Profiler_DeInitialize_Params *p)
{
    (void)p;
    return CUPTI_SUCCESS;
}
static CUptiResult rpf_device_id(CUcontext c, uint32_t *d)
{
    (void)c;
    *d = 0;
    return CUPTI_SUCCESS;
}
static CUptiResult rpf_chip(CUpti_Device_GetChipName_Params *p)
{
    p->pChipName = "GH100";
    return CUPTI_SUCCESS;
}
static CUptiResult rpf_enable(CUpti_RangeProfiler_Enable_Params *p)
{
    p->pRangeProfilerObject = (CUpti_RangeProfiler_Object *)&rpf_object;
    rpf.enabled++;
    return CUPTI_SUCCESS;
}
static CUptiResult rpf_disable(CUpti_RangeProfiler_Disable_Params *p)
{
    (void)p;
    rpf.enabled--;
    return CUPTI_SUCCESS;
}
static CUptiResult rpf_size(CUpti_RangeProfiler_GetCounterDataSize_Params *p)
{
    p->counterDataSize = 256;
    return CUPTI_SUCCESS;
}
static CUptiResult rpf_data_init(CUpti_RangeProfiler_CounterDataImage_Initialize_Params *p)
{
    memset(p->pCounterData, 0, p->counterDataSize);
    return CUPTI_SUCCESS;
}
static CUptiResult rpf_config(CUpti_RangeProfiler_SetConfig_Params *p)
{
    rpf.range_mode = (int)p->range;
    rpf.configured++;
    return rpf.config;
}
static CUptiResult rpf_start(CUpti_RangeProfiler_Start_Params *p)
{
    (void)p;
    rpf.started++;
    return CUPTI_SUCCESS;
}
static CUptiResult rpf_stop(CUpti_RangeProfiler_Stop_Params *p)
{
    p->isAllPassSubmitted = 1;
    return CUPTI_SUCCESS;
}
static CUptiResult rpf_push(CUpti_RangeProfiler_PushRange_Params *p)
{
    snprintf(rpf.pushed_name, sizeof rpf.pushed_name, "%s", p->pRangeName);
    rpf.pushed++;
    return CUPTI_SUCCESS;
}
static CUptiResult rpf_pop(CUpti_RangeProfiler_PopRange_Params *p)
{
    (void)p;
    return CUPTI_SUCCESS;
}
static CUptiResult rpf_decode(CUpti_RangeProfiler_DecodeData_Params *p)
{
    p->numOfRangeDropped = 0;
    rpf.decodes++;
    return CUPTI_SUCCESS;
}
static CUptiResult rpf_info(CUpti_RangeProfiler_GetCounterDataInfo_Params *p)
{
    p->numTotalRanges = rpf.range_mode == CUPTI_AutoRange ? rpf.kernels : 1;
    return CUPTI_SUCCESS;
}
static CUptiResult rpf_range(CUpti_RangeProfiler_CounterData_GetRangeInfo_Params *p)
{
    p->rangeName = rpf_kernel_names[(rpf.decoded + p->rangeIndex) % 2];
    return CUPTI_SUCCESS;
}

/* Range r's value of metric m. */
static double rpf_value(const char *m, size_t r)
{
    if (strncmp(m, "sm__warps_active", 16) == 0)
        return 60.0 + (double)r;
    if (strncmp(m, "dram__throughput", 16) == 0)
        return 50.0;
    if (strncmp(m, "dram__bytes_read", 16) == 0)
        return 1048576.0 * (double)(r + 1);
    if (strncmp(m, "dram__bytes_write", 17) == 0)
        return 524288.0;
    if (strncmp(m, "l1tex__t_sector_hit_rate", 24) == 0)
        return 35.0;
    if (strncmp(m, "lts__t_sector_hit_rate", 22) == 0)
        return 80.0;
    if (strncmp(m, "sm__pipe_tensor", 15) == 0)
        return 12.5;
    if (strncmp(m, "sm__throughput", 14) == 0)
        return 71.5;
    return 7.0;
}

static gp_status rpf_eval(void *host, const uint8_t *data, size_t size, size_t index,
                          const char *const *metrics, size_t n, double *values, gp_error *err)
{
    (void)host, (void)data, (void)size, (void)err;
    for (size_t i = 0; i < n; i++)
        values[i] = rpf_value(metrics[i], index);
    return 0;
}

/* The host table. */
static gp_status rpf_acquire(const char *chip, int profiler, void **host, char *canon, size_t clen,
                             gp_error *err)
{
    (void)profiler, (void)err;
    snprintf(canon, clen, "%s", chip);
    *host = &rpf_object;
    return 0;
}
static void rpf_release(void *h)
{
    (void)h;
}
static gp_status rpf_image(void *h, const char *const *m, size_t n, uint8_t **img, size_t *size,
                           gp_error *err)
{
    (void)h;
    uint8_t passes = 1;
    for (size_t i = 0; i < n; i++) {
        if (strncmp(m[i], "bad__", 5) == 0) {
            snprintf(err->message, sizeof err->message, "metric '%s' is not valid for GH100", m[i]);
            return GP_ERR_INVALID_ARG;
        }
        uint8_t p = strncmp(m[i], "sm__throughput", 14) == 0           ? 8
                    : strncmp(m[i], "lts__t_sector_hit_rate", 22) == 0 ? 2
                                                                       : 1;
        passes = p > passes ? p : passes;
    }
    *img = malloc(8);
    if (!*img)
        return GP_ERR_NO_MEMORY;
    memset(*img, 0, 8);
    (*img)[0] = passes;
    *size = 8;
    return 0;
}
static gp_status rpf_passes(const uint8_t *img, size_t size, size_t *out, gp_error *err)
{
    (void)size, (void)err;
    *out = img[0];
    return 0;
}

static const gp_metrics_plugin rpf_host = {.abi = GP_METRICS_ABI,
                                           .acquire = rpf_acquire,
                                           .release = rpf_release,
                                           .config_image = rpf_image,
                                           .passes = rpf_passes,
                                           .evaluate = rpf_eval};

static const fl_rp_api rpf_api = {
    .profiler_init = rpf_init,
    .profiler_deinit = rpf_deinit,
    .device_id = rpf_device_id,
    .chip_name = rpf_chip,
    .enable = rpf_enable,
    .disable = rpf_disable,
    .data_size = rpf_size,
    .data_init = rpf_data_init,
    .set_config = rpf_config,
    .start = rpf_start,
    .stop = rpf_stop,
    .push = rpf_push,
    .pop = rpf_pop,
    .decode = rpf_decode,
    .data_info = rpf_info,
    .range_info = rpf_range,
    .evaluate = rpf_eval,
};

/* Every answer CUPTI_SUCCESS; kernel-range decodes hold `kernels` ranges. */
static void rpf_reset(size_t kernels)
{
    memset(&rpf, 0, sizeof rpf);
    rpf.kernels = kernels;
}

#endif /* GP_TEST_RP_FAKE_H */
