/*
 * sass_fake.h - a fake of CUPTI's SASS Metrics API (fl_sass_api) for the
 * tests of plugin/engines/sassmetrics/sassmetrics.c and for the fake plugin's "sassmetrics"
 * scenarios: answers set per call, the calls recorded one letter each
 * (I init, N chip name, P get properties, S set config, E enable, G get
 * data properties, F flush data, D disable, U unset config, X deinit,
 * Y the driver's cuCtxSynchronize of fl_engine_env: sf_sync, with
 * sf_current_ctx the context current on every thread, sf.current),
 * and FlushData's records made from sf.rec (names allocated as CUPTI
 * allocates them: the engine frees them).
 */
#ifndef GP_TEST_SASS_FAKE_H
#define GP_TEST_SASS_FAKE_H

#include "engines/sassmetrics/sassmetrics.h"

#include <stdlib.h>
#include <string.h>

#define SF_MAX_REC 64
#define SF_MAX_INST 16

typedef struct sf_rec {
    uint32_t crc, fn_index, pc;
    const char *fn;
    size_t n; /* values */
    uint64_t metric[SF_MAX_INST], value[SF_MAX_INST];
} sf_rec;

static struct {
    CUptiResult init, chip, set_config, enable, data_props, flush;
    CUptiResult props_all; /* every GetProperties, when not success */
    const char *refuse;    /* a metric name GetProperties refuses (INVALID_METRIC_NAME) */
    char calls[512];
    sf_rec rec[SF_MAX_REC];
    size_t n_rec, n_inst; /* what the next GetDataProperties says */
    int reads_left;       /* how many reads give records (then 0) */
    uint32_t device;      /* cuptiGetDeviceId's answer */
    size_t set_n;         /* SetConfig's numOfMetricConfig */
    uint8_t lazy;         /* Enable's enableLazyPatching */
    size_t dropped;       /* Disable's numOfDroppedRecords */
    int flush_bad_size;   /* FlushData called with other counts than GetDataProperties' */
    void *current;        /* sf_current_ctx's answer */
    int sync;             /* sf_sync's answer (a CUresult) */
} sf;

static void sf_call(char c)
{
    size_t n = strlen(sf.calls);
    if (n + 1 < sizeof sf.calls) {
        sf.calls[n] = c;
        sf.calls[n + 1] = '\0';
    }
}

static void sf_reset(void)
{
    memset(&sf, 0, sizeof sf);
}

/* A metric's CUPTI id: 1000 + its index in fl_sass_metric_names. */
static uint64_t sf_metric_id(const char *name)
{
    for (size_t i = 0; i < fl_sass_n_metric_names; i++)
        if (strcmp(fl_sass_metric_names[i], name) == 0)
            return 1000 + i;
    return 0;
}

static CUptiResult sf_init(CUpti_Profiler_Initialize_Params *p)
{
    (void)p;
    sf_call('I');
    return sf.init;
}
static CUptiResult sf_deinit(CUpti_Profiler_DeInitialize_Params *p)
{
    (void)p;
    sf_call('X');
    return CUPTI_SUCCESS;
}
static CUptiResult sf_chip(CUpti_Device_GetChipName_Params *p)
{
    sf_call('N');
    p->pChipName = "GH100";
    return sf.chip;
}
static CUptiResult sf_props(CUpti_SassMetrics_GetProperties_Params *p)
{
    sf_call('P');
    if (sf.props_all != CUPTI_SUCCESS)
        return sf.props_all;
    if (sf.refuse && strcmp(sf.refuse, p->pMetricName) == 0)
        return CUPTI_ERROR_INVALID_METRIC_NAME;
    p->metric.metricId = sf_metric_id(p->pMetricName);
    p->metric.pMetricName = p->pMetricName;
    return CUPTI_SUCCESS;
}
static CUptiResult sf_set(CUpti_SassMetricsSetConfig_Params *p)
{
    sf_call('S');
    sf.set_n = p->numOfMetricConfig;
    return sf.set_config;
}
static CUptiResult sf_unset(CUpti_SassMetricsUnsetConfig_Params *p)
{
    (void)p;
    sf_call('U');
    return CUPTI_SUCCESS;
}
static CUptiResult sf_enable(CUpti_SassMetricsEnable_Params *p)
{
    sf_call('E');
    sf.lazy = p->enableLazyPatching;
    return sf.enable;
}
static CUptiResult sf_disable(CUpti_SassMetricsDisable_Params *p)
{
    sf_call('D');
    p->numOfDroppedRecords = sf.dropped;
    return CUPTI_SUCCESS;
}
static CUptiResult sf_data_props(CUpti_SassMetricsGetDataProperties_Params *p)
{
    sf_call('G');
    bool give = sf.reads_left > 0;
    p->numOfPatchedInstructionRecords = give ? sf.n_rec : 0;
    p->numOfInstances = give ? sf.n_inst : 0;
    return sf.data_props;
}
static CUptiResult sf_flush(CUpti_SassMetricsFlushData_Params *p)
{
    sf_call('F');
    if (sf.flush != CUPTI_SUCCESS)
        return sf.flush;
    if (p->numOfPatchedInstructionRecords != sf.n_rec || p->numOfInstances != sf.n_inst)
        sf.flush_bad_size++;
    sf.reads_left--;
    for (size_t i = 0; i < sf.n_rec && i < p->numOfPatchedInstructionRecords; i++) {
        CUpti_SassMetrics_Data *d = &p->pMetricsData[i];
        const sf_rec *r = &sf.rec[i];
        d->cubinCrc = r->crc;
        d->functionIndex = r->fn_index;
        d->functionName = r->fn ? strdup(r->fn) : NULL;
        d->pcOffset = r->pc;
        for (size_t j = 0; j < p->numOfInstances; j++) {
            d->pInstanceValues[j].metricId = j < r->n ? r->metric[j] : 0;
            d->pInstanceValues[j].value = j < r->n ? r->value[j] : 0;
        }
    }
    return CUPTI_SUCCESS;
}
static CUptiResult sf_device_id(CUcontext ctx, uint32_t *dev)
{
    (void)ctx;
    *dev = sf.device;
    return CUPTI_SUCCESS;
}

static const fl_sass_api sf_api = {
    .profiler_init = sf_init,
    .profiler_deinit = sf_deinit,
    .chip_name = sf_chip,
    .get_properties = sf_props,
    .set_config = sf_set,
    .unset_config = sf_unset,
    .enable = sf_enable,
    .disable = sf_disable,
    .data_properties = sf_data_props,
    .flush_data = sf_flush,
    .device_id = sf_device_id,
};

/* fl_engine_env's driver calls. */
static void *sf_current_ctx(void)
{
    return sf.current;
}
static int sf_sync(void)
{
    sf_call('Y');
    return sf.sync;
}

/* Record i: pc of function fn (index, cubin crc) with n (metric, value). */
static void sf_add(uint32_t crc, const char *fn, uint32_t fn_index, uint32_t pc, size_t n,
                   const uint64_t *metric, const uint64_t *value)
{
    if (sf.n_rec == SF_MAX_REC)
        return;
    sf_rec *r = &sf.rec[sf.n_rec++];
    *r = (sf_rec){.crc = crc, .fn_index = fn_index, .pc = pc, .fn = fn, .n = n};
    for (size_t j = 0; j < n && j < SF_MAX_INST; j++) {
        r->metric[j] = metric[j];
        r->value[j] = value[j];
    }
    if (n > sf.n_inst)
        sf.n_inst = n;
}

#endif /* GP_TEST_SASS_FAKE_H */
