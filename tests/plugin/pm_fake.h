/*
 * pm_fake.h - CUPTI's PM sampling API and the Profiler Host API's table,
 * faked for plugin/engines/pmsamp/pmsamp.c (fl_pms_api): the toolkit's real parameter
 * structs, filled as CUPTI fills them, over a synthetic counter-data image.
 * Shared by tests/plugin/test_cupti_pmsamp.c and the fake plugin's
 * "pmsampling" scenarios (tests/fakes/fake_cupti_plugin.c).
 *
 * The image (the engine allocates it, of the size data_size answers):
 * a header (magic, capacity, completed samples), then per sample its start
 * and end on the fake GPU clock.  Each DecodeData completes pmf.per_decode
 * samples - new ones arrive only once a decode emptied the buffer - (at
 * most the capacity a decode; more left: COUNTER_DATA_FULL); sample k
 * (counted over the run) spans [t0 + k * interval, t0 + (k + 1) * interval).
 * Metric m of run sample k evaluates to 10 * m + k + 0.25; a metric named
 * "nan_metric" evaluates to NaN.
 */
#ifndef GP_TEST_PM_FAKE_H
#define GP_TEST_PM_FAKE_H

#include "engines/pmsamp/pmsamp.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define PMF_MAGIC 0x504d4631u

typedef struct pmf_hdr {
    uint32_t magic, capacity, completed, pad;
    uint64_t first; /* run sample number of the image's sample 0 */
} pmf_hdr;

static struct {
    CUptiResult init, device, chip, enable, set_config, data_size, start, decode;
    CUptiResult decode_stopped; /* DecodeData's answer once stopped (an H200: 999) */
    const char *chip_name;
    uint32_t device_id;
    char calls[256]; /* one letter per call */
    /* SetConfig as CUPTI saw it */
    uint64_t interval_ns;
    size_t hw_bytes, config_size;
    int trigger, append;
    size_t max_samples, n_metrics_sized;
    uint64_t t0;         /* fake GPU clock of run sample 0 */
    uint32_t per_decode; /* samples a decode completes */
    uint64_t pending;    /* samples the hardware holds, not yet decoded */
    uint64_t next;       /* run sample number of the next one decoded */
    bool early_first;    /* run sample 0 before the session (the priming sample) */
    uint8_t overflow;    /* DecodeData's overflow flag */
    size_t max_one_pass; /* more metrics than this need 2 passes (0: no limit) */
    int evaluations, images, acquired, released;
    bool running, reading;
} pmf;

static void pmf_call(char c)
{
    size_t n = strlen(pmf.calls);
    if (n + 1 < sizeof pmf.calls) {
        pmf.calls[n] = c;
        pmf.calls[n + 1] = '\0';
    }
}

static CUptiResult pmf_init(CUpti_Profiler_Initialize_Params *p)
{
    (void)p;
    pmf_call('I');
    return pmf.init;
}
static CUptiResult pmf_device(CUcontext c, uint32_t *id)
{
    (void)c;
    pmf_call('G');
    *id = pmf.device_id;
    return pmf.device;
}
static CUptiResult pmf_chip(CUpti_Device_GetChipName_Params *p)
{
    pmf_call('N');
    p->pChipName = pmf.chip_name ? pmf.chip_name : "GH100";
    return pmf.chip;
}
static CUpti_PmSampling_Object *pmf_object(void)
{
    static int obj;
    return (CUpti_PmSampling_Object *)&obj;
}
static CUptiResult pmf_enable(CUpti_PmSampling_Enable_Params *p)
{
    pmf_call('E');
    if (pmf.enable == CUPTI_SUCCESS)
        p->pPmSamplingObject = pmf_object();
    return pmf.enable;
}
static CUptiResult pmf_set_config(CUpti_PmSampling_SetConfig_Params *p)
{
    pmf_call('C');
    pmf.interval_ns = p->samplingInterval;
    pmf.hw_bytes = p->hardwareBufferSize;
    pmf.config_size = p->configSize;
    pmf.trigger = (int)p->triggerMode;
    pmf.append = (int)p->hwBufferAppendMode;
    return pmf.set_config;
}
static CUptiResult pmf_data_size(CUpti_PmSampling_GetCounterDataSize_Params *p)
{
    pmf_call('Z');
    pmf.max_samples = p->maxSamples;
    pmf.n_metrics_sized = p->numMetrics;
    p->counterDataSize = sizeof(pmf_hdr) + p->maxSamples * 2 * sizeof(uint64_t);
    return pmf.data_size;
}
static CUptiResult pmf_data_init(CUpti_PmSampling_CounterDataImage_Initialize_Params *p)
{
    pmf_call('R');
    pmf_hdr h = {.magic = PMF_MAGIC,
                 .capacity =
                     (uint32_t)((p->counterDataSize - sizeof(pmf_hdr)) / (2 * sizeof(uint64_t)))};
    memcpy(p->pCounterData, &h, sizeof h);
    return CUPTI_SUCCESS;
}
static CUptiResult pmf_start(CUpti_PmSampling_Start_Params *p)
{
    (void)p;
    pmf_call('S');
    if (pmf.start == CUPTI_SUCCESS)
        pmf.running = true;
    return pmf.start;
}
static CUptiResult pmf_stop(CUpti_PmSampling_Stop_Params *p)
{
    (void)p;
    pmf_call('T');
    pmf.running = false;
    return CUPTI_SUCCESS;
}
static CUptiResult pmf_decode(CUpti_PmSampling_DecodeData_Params *p)
{
    pmf_call('D');
    if (pmf.decode != CUPTI_SUCCESS)
        return pmf.decode;
    if (!pmf.running && pmf.decode_stopped != CUPTI_SUCCESS)
        return pmf.decode_stopped;
    pmf_hdr h;
    memcpy(&h, p->pCounterDataImage, sizeof h);
    if (h.magic != PMF_MAGIC)
        return CUPTI_ERROR_INVALID_PARAMETER;
    /* New samples arrive between reads that emptied the buffer. */
    if (pmf.running && !pmf.reading)
        pmf.pending += pmf.per_decode;
    uint64_t n = pmf.pending < h.capacity ? pmf.pending : h.capacity;
    h.completed = (uint32_t)n;
    h.first = pmf.next;
    uint64_t *ts = (uint64_t *)(p->pCounterDataImage + sizeof h);
    for (uint64_t i = 0; i < n; i++) {
        uint64_t k = pmf.next + i;
        uint64_t iv = pmf.interval_ns ? pmf.interval_ns : 100000;
        ts[2 * i] = k == 0 && pmf.early_first ? 1000 : pmf.t0 + k * iv;
        ts[2 * i + 1] = ts[2 * i] + iv;
    }
    memcpy(p->pCounterDataImage, &h, sizeof h);
    pmf.next += n;
    pmf.pending -= n;
    pmf.reading = pmf.pending > 0;
    p->overflow = pmf.overflow;
    p->decodeStopReason = pmf.pending ? CUPTI_PM_SAMPLING_DECODE_STOP_REASON_COUNTER_DATA_FULL
                                      : CUPTI_PM_SAMPLING_DECODE_STOP_REASON_END_OF_RECORDS;
    return CUPTI_SUCCESS;
}
static CUptiResult pmf_data_info(CUpti_PmSampling_GetCounterDataInfo_Params *p)
{
    pmf_call('F');
    pmf_hdr h;
    memcpy(&h, p->pCounterDataImage, sizeof h);
    if (h.magic != PMF_MAGIC)
        return CUPTI_ERROR_INVALID_PARAMETER;
    p->numTotalSamples = h.capacity;
    p->numPopulatedSamples = h.completed;
    p->numCompletedSamples = h.completed;
    return CUPTI_SUCCESS;
}
static CUptiResult pmf_sample_info(CUpti_PmSampling_CounterData_GetSampleInfo_Params *p)
{
    pmf_hdr h;
    memcpy(&h, p->pCounterDataImage, sizeof h);
    if (p->sampleIndex >= h.completed)
        return CUPTI_ERROR_INVALID_PARAMETER;
    const uint64_t *ts = (const uint64_t *)(p->pCounterDataImage + sizeof h);
    p->startTimestamp = ts[2 * p->sampleIndex];
    p->endTimestamp = ts[2 * p->sampleIndex + 1];
    return CUPTI_SUCCESS;
}
static CUptiResult pmf_disable(CUpti_PmSampling_Disable_Params *p)
{
    (void)p;
    pmf_call('X');
    return CUPTI_SUCCESS;
}

/* ---- the Profiler Host API's table (metrics_host.cpp's, faked) ---- */

static gp_status pmf_acquire(const char *chip, int profiler, void **host, char *canon,
                             size_t canon_len, gp_error *err)
{
    (void)err;
    (void)profiler;
    pmf.acquired++;
    *host = &pmf;
    snprintf(canon, canon_len, "%s", chip);
    return 0;
}
static void pmf_release(void *host)
{
    (void)host;
    pmf.released++;
}
static gp_status pmf_config_image(void *host, const char *const *metrics, size_t n, uint8_t **image,
                                  size_t *size, gp_error *err)
{
    (void)host;
    for (size_t i = 0; i < n; i++)
        if (strncmp(metrics[i], "bad", 3) == 0) {
            snprintf(err->message, sizeof err->message,
                     "metric '%s' is not available for PM sampling on GH100", metrics[i]);
            return 2; /* GP_ERR_INVALID_ARG */
        }
    pmf.images++;
    *image = malloc(16);
    if (!*image)
        return 1;
    memset(*image, 0, 16);
    (*image)[0] = (uint8_t)n;
    *size = 16;
    return 0;
}
static gp_status pmf_passes(const uint8_t *image, size_t size, size_t *out, gp_error *err)
{
    (void)size;
    (void)err;
    *out = pmf.max_one_pass && image[0] > pmf.max_one_pass ? 2 : 1;
    return 0;
}
static gp_status pmf_evaluate(void *host, const uint8_t *data, size_t size, size_t index,
                              const char *const *metrics, size_t n, double *values, gp_error *err)
{
    (void)host;
    (void)size;
    (void)err;
    pmf.evaluations++;
    pmf_hdr h;
    memcpy(&h, data, sizeof h);
    for (size_t m = 0; m < n; m++)
        values[m] = strcmp(metrics[m], "nan_metric") == 0
                        ? NAN
                        : 10.0 * (double)m + (double)(h.first + index) + 0.25;
    return 0;
}

static const gp_metrics_plugin pmf_host = {
    .abi = GP_METRICS_ABI,
    .acquire = pmf_acquire,
    .release = pmf_release,
    .config_image = pmf_config_image,
    .passes = pmf_passes,
    .evaluate = pmf_evaluate,
};

static const fl_pms_api pmf_api = {
    .profiler_init = pmf_init,
    .device_id = pmf_device,
    .chip_name = pmf_chip,
    .enable = pmf_enable,
    .set_config = pmf_set_config,
    .data_size = pmf_data_size,
    .data_init = pmf_data_init,
    .start = pmf_start,
    .stop = pmf_stop,
    .decode = pmf_decode,
    .data_info = pmf_data_info,
    .sample_info = pmf_sample_info,
    .disable = pmf_disable,
    .host = &pmf_host,
};

/* Every answer CUPTI_SUCCESS, nothing seen; t0 on the fake GPU clock. */
static void pmf_reset(uint64_t t0, uint32_t per_decode)
{
    memset(&pmf, 0, sizeof pmf);
    pmf.t0 = t0;
    pmf.per_decode = per_decode;
}

#endif /* GP_TEST_PM_FAKE_H */
