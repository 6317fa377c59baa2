/*
 * pmsamp.c - PM sampling's life per device (pmsamp.h): CUPTI's call order
 * (cuptiProfilerInitialize, the chip, a Profiler Host object and a config
 * image through metrics_host.cpp, cuptiPmSamplingEnable, SetConfig with the
 * interval on the GPU's clock and an 8 MiB hardware buffer that keeps the
 * latest samples, a counter-data image of pm_max_samples, Start; on the
 * writer thread DecodeData / GetCounterDataInfo / CounterDataGetSampleInfo
 * and the host's evaluation; at the end a read while it runs, Stop, a
 * last read, Disable - a failed read after good ones is a loss of samples,
 * said as such, not the session's end).
 *
 * Promises: every CUPTI call goes through the fl_pms_api table; the first
 * refusal is the session's reason with its fix (fl_pms_explain) and the
 * session keeps tracing; a device set up once, whatever the contexts on
 * it; memory bounded per device (pmsamp.h); nothing here blocks the
 * application's threads but the set-up at a context's creation.
 */
#include "pmsamp.h"
#include "../../../src/util/clock.h"

#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static const fl_pms_api real_api = {FL_PMS_CALLS(FL_API_CUPTI)};

static fl_pms_api api_now;
static bool api_set;
static const gp_metrics_plugin *host_table;

/* The table in use: CUPTI's own until a test sets one. */
static void api_init(void)
{
    if (!api_set) {
        api_now = real_api;
        api_now.host = host_table;
        api_set = true;
    }
}

void fl_pms_set_host(const gp_metrics_plugin *host)
{
    api_init();
    host_table = host;
    api_now.host = host;
}

void fl_pms_set_api(const fl_pms_api *api)
{
    api_now = api ? *api : real_api;
    if (!api)
        api_now.host = host_table;
    api_set = true;
}

const fl_pms_api *fl_pms_api_get(void)
{
    api_init();
    return &api_now;
}

typedef struct pm_dev {
    bool used, running, config_sent;
    uint32_t device_id;
    char chip[64];
    void *host;
    CUpti_PmSampling_Object *pm;
    uint8_t *config;
    size_t config_size;
    uint8_t *image;
    size_t image_size;
    uint32_t next_index;
} pm_dev;

static pthread_mutex_t mu = PTHREAD_MUTEX_INITIALIZER;
static struct {
    bool on, stopping, profiler;
    uint32_t status;
    char msg[512];
    char list[1024]; /* the caller's metrics ("" : default) */
    uint32_t interval_us, max_samples;
    int64_t offset_ns;
    uint64_t not_before_ns;
    char **metrics;
    size_t n_metrics;
    uint32_t metric_ids[FL_PM_MAX_METRICS];
    bool names_sent;
    pm_dev dev[FL_PMS_MAX_DEVICES];
    fl_trace_stats st; /* the pm_* counts */
} E;

/* The first failure is the session's reason (mu held). */
static void fail(CUptiResult r, const char *what)
{
    if (E.status != FL_PC_ACTIVE)
        return;
    E.status = fl_pms_status_of(r);
    if (E.status == FL_PC_ACTIVE)
        E.status = FL_PC_FAILED;
    fl_pms_explain(r, what, E.msg, sizeof E.msg);
}

/* A failure that is not CUPTI's (a metric refused, memory). */
static void fail_msg(const char *msg)
{
    if (E.status != FL_PC_ACTIVE)
        return;
    E.status = FL_PC_FAILED;
    snprintf(E.msg, sizeof E.msg, "%s; the session runs Trace", msg);
}

static void dev_free(pm_dev *d)
{
    if (d->pm) {
        CUpti_PmSampling_Disable_Params p = {
            .structSize = CUpti_PmSampling_Disable_Params_STRUCT_SIZE, .pPmSamplingObject = d->pm};
        api_now.disable(&p);
    }
    if (d->host && api_now.host)
        api_now.host->release(d->host);
    free(d->config);
    free(d->image);
    memset(d, 0, sizeof *d);
}

static bool reset_image(pm_dev *d)
{
    CUpti_PmSampling_CounterDataImage_Initialize_Params p = {
        .structSize = CUpti_PmSampling_CounterDataImage_Initialize_Params_STRUCT_SIZE,
        .pPmSamplingObject = d->pm,
        .counterDataSize = d->image_size,
        .pCounterData = d->image};
    CUptiResult r = api_now.data_init(&p);
    if (r != CUPTI_SUCCESS)
        fail(r, "cuptiPmSamplingCounterDataImageInitialize");
    return r == CUPTI_SUCCESS;
}

/* The chip, the host object and the metric set with its config image. */
static bool dev_metrics(pm_dev *d)
{
    CUpti_Device_GetChipName_Params cn = {.structSize = CUpti_Device_GetChipName_Params_STRUCT_SIZE,
                                          .deviceIndex = d->device_id};
    CUptiResult r = api_now.chip_name(&cn);
    if (r != CUPTI_SUCCESS || !cn.pChipName) {
        fail(r != CUPTI_SUCCESS ? r : CUPTI_ERROR_UNKNOWN, "cuptiDeviceGetChipName");
        return false;
    }
    char why[512] = "", canon[64];
    gp_error e = {0};
    if (!api_now.host || api_now.host->acquire(cn.pChipName, 1 /* PM sampling */, &d->host, canon,
                                               sizeof canon, &e) != GP_OK) {
        snprintf(why, sizeof why, "%s", e.message);
        char m[600];
        snprintf(m, sizeof m, "no Profiler Host object for chip %s: %s", cn.pChipName,
                 api_now.host ? why : "no host table");
        fail_msg(m);
        d->host = NULL;
        return false;
    }
    snprintf(d->chip, sizeof d->chip, "%s", canon);
    if (!E.metrics) {
        if (fl_pms_metric_set(&api_now, d->host, d->chip, E.list, &E.metrics, &E.n_metrics,
                              &d->config, &d->config_size, &e) != GP_OK) {
            snprintf(why, sizeof why, "%s", e.message);
            fail_msg(why);
            return false;
        }
        for (size_t i = 0; i < E.n_metrics; i++)
            E.metric_ids[i] = (uint32_t)i + 1;
        return true;
    }
    if (api_now.host->config_image(d->host, (const char *const *)E.metrics, E.n_metrics, &d->config,
                                   &d->config_size, &e) != GP_OK) {
        snprintf(why, sizeof why, "%s", e.message);
        char m[600];
        snprintf(m, sizeof m, "PM sampling metrics refused on %s: %s", d->chip, why);
        fail_msg(m);
        return false;
    }
    return true;
}

/* Enable, SetConfig, the counter-data image, Start (mu held). */
static bool dev_arm(pm_dev *d)
{
    CUpti_PmSampling_Enable_Params en = {.structSize = CUpti_PmSampling_Enable_Params_STRUCT_SIZE,
                                         .deviceIndex = d->device_id};
    CUptiResult r = api_now.enable(&en);
    if (r != CUPTI_SUCCESS) {
        fail(r, "cuptiPmSamplingEnable");
        return false;
    }
    d->pm = en.pPmSamplingObject;
    CUpti_PmSampling_SetConfig_Params sc = {
        .structSize = CUpti_PmSampling_SetConfig_Params_STRUCT_SIZE,
        .pPmSamplingObject = d->pm,
        .configSize = d->config_size,
        .pConfig = d->config,
        .hardwareBufferSize = FL_PMS_HW_BUFFER_BYTES,
        .samplingInterval = (uint64_t)E.interval_us * 1000u,
        .triggerMode = CUPTI_PM_SAMPLING_TRIGGER_MODE_GPU_TIME_INTERVAL,
        .hwBufferAppendMode = CUPTI_PM_SAMPLING_HARDWARE_BUFFER_APPEND_MODE_KEEP_LATEST};
    if ((r = api_now.set_config(&sc)) != CUPTI_SUCCESS) {
        fail(r, "cuptiPmSamplingSetConfig");
        return false;
    }
    CUpti_PmSampling_GetCounterDataSize_Params ds = {
        .structSize = CUpti_PmSampling_GetCounterDataSize_Params_STRUCT_SIZE,
        .pPmSamplingObject = d->pm,
        .pMetricNames = (const char **)E.metrics,
        .numMetrics = E.n_metrics,
        .maxSamples = E.max_samples};
    if ((r = api_now.data_size(&ds)) != CUPTI_SUCCESS || ds.counterDataSize == 0) {
        fail(r != CUPTI_SUCCESS ? r : CUPTI_ERROR_UNKNOWN, "cuptiPmSamplingGetCounterDataSize");
        return false;
    }
    d->image = malloc(ds.counterDataSize);
    if (!d->image) {
        fail_msg("out of memory for the PM sampling counter-data image");
        return false;
    }
    d->image_size = ds.counterDataSize;
    if (!reset_image(d))
        return false;
    CUpti_PmSampling_Start_Params s = {.structSize = CUpti_PmSampling_Start_Params_STRUCT_SIZE,
                                       .pPmSamplingObject = d->pm};
    if ((r = api_now.start(&s)) != CUPTI_SUCCESS) {
        fail(r, "cuptiPmSamplingStart");
        return false;
    }
    d->running = true;
    return true;
}

/* A context's device set up, once (mu held). */
static void dev_add(void *ctx)
{
    if (!E.on || E.status != FL_PC_ACTIVE || E.stopping || !ctx)
        return;
    if (!E.profiler) {
        CUpti_Profiler_Initialize_Params pi = {.structSize =
                                                   CUpti_Profiler_Initialize_Params_STRUCT_SIZE};
        CUptiResult r = api_now.profiler_init(&pi);
        if (r != CUPTI_SUCCESS && r != CUPTI_ERROR_INVALID_OPERATION) {
            fail(r, "cuptiProfilerInitialize");
            return;
        }
        E.profiler = true;
    }
    uint32_t id = 0;
    CUptiResult r = api_now.device_id((CUcontext)ctx, &id);
    if (r != CUPTI_SUCCESS) {
        fail(r, "cuptiGetDeviceId");
        return;
    }
    pm_dev *d = NULL;
    for (size_t i = 0; i < FL_PMS_MAX_DEVICES; i++) {
        if (E.dev[i].used && E.dev[i].device_id == id)
            return;
        if (!d && !E.dev[i].used)
            d = &E.dev[i];
    }
    if (!d)
        return; /* more devices than FL_PMS_MAX_DEVICES: the first ones sample */
    d->used = true;
    d->device_id = id;
    if (!dev_metrics(d) || !dev_arm(d)) {
        dev_free(d);
        return;
    }
    E.st.engines[FL_ENGINE_PM].counters.pm.devices++;
}

uint32_t fl_pms_engine_start(const fl_trace_options *o, void *ctx)
{
    pthread_mutex_lock(&mu);
    api_init();
    fl_pms_free_metrics(E.metrics, E.n_metrics);
    memset(&E, 0, sizeof E);
    if (!o->pm_sampling) {
        pthread_mutex_unlock(&mu);
        return FL_PC_OFF;
    }
    E.on = true;
    E.status = FL_PC_ACTIVE;
    snprintf(E.list, sizeof E.list, "%s", o->pm_metrics ? o->pm_metrics : "");
    E.interval_us =
        o->pm_interval_us >= FL_PM_INTERVAL_MIN_US && o->pm_interval_us <= FL_PM_INTERVAL_MAX_US
            ? o->pm_interval_us
            : FL_PM_INTERVAL_DEFAULT_US;
    E.max_samples = o->pm_max_samples ? o->pm_max_samples : FL_PM_MAX_SAMPLES_DEFAULT;
    E.offset_ns = o->clock_offset_ns;
    E.not_before_ns = gp_now_wall_ns();
    dev_add(ctx);
    uint32_t st = E.status;
    pthread_mutex_unlock(&mu);
    return st;
}

void fl_pms_context_created(void *ctx)
{
    pthread_mutex_lock(&mu);
    dev_add(ctx);
    pthread_mutex_unlock(&mu);
}

void fl_pms_context_destroying(void *ctx)
{
    pthread_mutex_lock(&mu);
    uint32_t id = 0;
    if (E.on && ctx && api_now.device_id((CUcontext)ctx, &id) == CUPTI_SUCCESS) {
        for (size_t i = 0; i < FL_PMS_MAX_DEVICES; i++) {
            pm_dev *d = &E.dev[i];
            if (!d->used || d->device_id != id || !d->pm)
                continue;
            /* Stopped and disabled while the context still exists; what
             * was sampled since the last drain is not read (no sink here). */
            if (d->running) {
                CUpti_PmSampling_Stop_Params sp = {.structSize =
                                                       CUpti_PmSampling_Stop_Params_STRUCT_SIZE,
                                                   .pPmSamplingObject = d->pm};
                api_now.stop(&sp);
            }
            dev_free(d);
            d->used = true; /* not set up again */
            d->device_id = id;
            if (!E.st.engines[FL_ENGINE_PM].message[0])
                snprintf(E.st.engines[FL_ENGINE_PM].message,
                         sizeof E.st.engines[FL_ENGINE_PM].message,
                         "a CUDA context of device %u was destroyed before the session ended: "
                         "its PM sampling stopped there, the samples since the writer's last "
                         "cycle (at most 250 ms) were not read",
                         id);
        }
    }
    pthread_mutex_unlock(&mu);
}

void fl_pms_engine_fail(CUptiResult r, const char *what)
{
    pthread_mutex_lock(&mu);
    if (E.on)
        fail(r, what);
    pthread_mutex_unlock(&mu);
}

/* The metric names and a device's configuration, before its rows. */
static void announce(pm_dev *d, const fl_trace_sink *sink)
{
    if (!E.names_sent && sink->sample_names) {
        sink->sample_names(sink->user, FL_SAMPLE_DICT_METRIC, E.metric_ids,
                           (const char *const *)E.metrics, E.n_metrics);
        E.names_sent = true;
    }
    if (!d->config_sent && sink->pm_config) {
        fl_pm_config c = {.t_ns = gp_now_wall_ns(),
                          .device_id = d->device_id,
                          .interval_us = E.interval_us,
                          .max_samples = E.max_samples,
                          .preset = E.list[0] ? "custom" : "default",
                          .metrics = (const char *const *)E.metrics,
                          .n_metrics = E.n_metrics};
        sink->pm_config(sink->user, &c);
        d->config_sent = true;
    }
}

/* What a failed DecodeData says (the session's first message): after
 * good reads it lost samples, it did not end the session. */
static void decode_failed(CUptiResult r, bool after_stop)
{
    if (E.st.engines[FL_ENGINE_PM].message[0])
        return;
    if (E.st.engines[FL_ENGINE_PM].counters.pm.decodes == 0) {
        fl_pms_explain(r, "cuptiPmSamplingDecodeData", E.st.engines[FL_ENGINE_PM].message,
                       sizeof E.st.engines[FL_ENGINE_PM].message);
        return;
    }
    const char *m = fl_cupti_name(r);
    if (after_stop)
        snprintf(E.st.engines[FL_ENGINE_PM].message, sizeof E.st.engines[FL_ENGINE_PM].message,
                 "the read after cuptiPmSamplingStop failed: %s (%d); the samples were read "
                 "up to just before Stop, so only those of the last moment can be missing (an "
                 "H200 with CUDA 13.0 answered so at the end of every session)",
                 m, (int)r);
    else
        snprintf(E.st.engines[FL_ENGINE_PM].message, sizeof E.st.engines[FL_ENGINE_PM].message,
                 "cuptiPmSamplingDecodeData failed after %llu good reads: %s (%d); CUPTI "
                 "answers 999 when the hardware buffer overflowed between two reads, so the "
                 "samples since the last good read are lost: raise pm_sampling_max_samples "
                 "or pm_sampling_interval_us",
                 (unsigned long long)E.st.engines[FL_ENGINE_PM].counters.pm.decodes, m, (int)r);
}

/* One device's hardware buffer decoded until CUPTI says it is empty (at
 * most 8 images a drain), each image's samples into rows (mu held). */
static void dev_drain(pm_dev *d, const fl_trace_sink *sink, bool after_stop)
{
    announce(d, sink);
    for (int round = 0; round < 8; round++) {
        CUpti_PmSampling_DecodeData_Params dd = {.structSize =
                                                     CUpti_PmSampling_DecodeData_Params_STRUCT_SIZE,
                                                 .pPmSamplingObject = d->pm,
                                                 .pCounterDataImage = d->image,
                                                 .counterDataImageSize = d->image_size};
        CUptiResult r = api_now.decode(&dd);
        if (r != CUPTI_SUCCESS && r != CUPTI_ERROR_OUT_OF_MEMORY) {
            decode_failed(r, after_stop);
            return;
        }
        E.st.engines[FL_ENGINE_PM].counters.pm.decodes++;
        if (dd.overflow || r == CUPTI_ERROR_OUT_OF_MEMORY)
            E.st.engines[FL_ENGINE_PM].counters.pm.overflows++;
        fl_pms_decode_in in = {.pm = d->pm,
                               .host = d->host,
                               .image = d->image,
                               .image_size = d->image_size,
                               .metrics = (const char *const *)E.metrics,
                               .metric_ids = E.metric_ids,
                               .n_metrics = E.n_metrics,
                               .device_id = d->device_id,
                               .first_index = d->next_index,
                               .clock_offset_ns = E.offset_ns,
                               .not_before_ns = E.not_before_ns};
        fl_pms_decode_out out = {0};
        bool ok = fl_pms_decode(&api_now, &in, sink, &out);
        d->next_index += (uint32_t)out.samples;
        E.st.engines[FL_ENGINE_PM].counters.pm.samples += out.samples - out.early;
        E.st.engines[FL_ENGINE_PM].counters.pm.rows += out.rows;
        E.st.engines[FL_ENGINE_PM].counters.pm.bad_values += out.bad_values;
        if (out.msg[0] && !E.st.engines[FL_ENGINE_PM].message[0])
            snprintf(E.st.engines[FL_ENGINE_PM].message, sizeof E.st.engines[FL_ENGINE_PM].message,
                     "%s", out.msg);
        if (!ok || !reset_image(d))
            return;
        if (r == CUPTI_SUCCESS &&
            dd.decodeStopReason != CUPTI_PM_SAMPLING_DECODE_STOP_REASON_COUNTER_DATA_FULL)
            return;
    }
}

void fl_pms_engine_drain(const fl_trace_sink *sink)
{
    pthread_mutex_lock(&mu);
    for (size_t i = 0; E.on && i < FL_PMS_MAX_DEVICES; i++) {
        pm_dev *d = &E.dev[i];
        if (!d->used || !d->pm)
            continue;
        bool after_stop = false;
        if (E.stopping && d->running) {
            /* Read while it runs first: the read after Stop failed (999) at
             * the end of every session on an H200. */
            if (sink)
                dev_drain(d, sink, false);
            CUpti_PmSampling_Stop_Params s = {
                .structSize = CUpti_PmSampling_Stop_Params_STRUCT_SIZE, .pPmSamplingObject = d->pm};
            api_now.stop(&s);
            d->running = false;
            after_stop = true;
        }
        if (sink)
            dev_drain(d, sink, after_stop);
        if (E.stopping) {
            pm_dev keep = *d;
            dev_free(d);
            d->used = true; /* counted, not set up again */
            d->device_id = keep.device_id;
        }
    }
    pthread_mutex_unlock(&mu);
}

void fl_pms_engine_stop(void)
{
    pthread_mutex_lock(&mu);
    E.stopping = true;
    pthread_mutex_unlock(&mu);
}

void fl_pms_engine_stats(fl_trace_stats *out)
{
    pthread_mutex_lock(&mu);
    out->engines[FL_ENGINE_PM].status = E.on ? E.status : FL_PC_OFF;
    out->engines[FL_ENGINE_PM].counters.pm.interval_us = E.interval_us;
    out->engines[FL_ENGINE_PM].counters.pm.metrics = (uint32_t)E.n_metrics;
    out->engines[FL_ENGINE_PM].counters.pm.devices = E.st.engines[FL_ENGINE_PM].counters.pm.devices;
    out->engines[FL_ENGINE_PM].counters.pm.samples = E.st.engines[FL_ENGINE_PM].counters.pm.samples;
    out->engines[FL_ENGINE_PM].counters.pm.rows = E.st.engines[FL_ENGINE_PM].counters.pm.rows;
    out->engines[FL_ENGINE_PM].counters.pm.decodes = E.st.engines[FL_ENGINE_PM].counters.pm.decodes;
    out->engines[FL_ENGINE_PM].counters.pm.overflows =
        E.st.engines[FL_ENGINE_PM].counters.pm.overflows;
    out->engines[FL_ENGINE_PM].counters.pm.bad_values =
        E.st.engines[FL_ENGINE_PM].counters.pm.bad_values;
    snprintf(out->engines[FL_ENGINE_PM].counters.pm.preset,
             sizeof out->engines[FL_ENGINE_PM].counters.pm.preset, "%s",
             E.on ? (E.list[0] ? "custom" : "default") : "");
    snprintf(out->engines[FL_ENGINE_PM].message, sizeof out->engines[FL_ENGINE_PM].message, "%s",
             E.status != FL_PC_ACTIVE ? E.msg : E.st.engines[FL_ENGINE_PM].message);
    pthread_mutex_unlock(&mu);
}

void fl_pms_engine_release(void)
{
    pthread_mutex_lock(&mu);
    for (size_t i = 0; i < FL_PMS_MAX_DEVICES; i++)
        if (E.dev[i].used)
            dev_free(&E.dev[i]);
    fl_pms_free_metrics(E.metrics, E.n_metrics);
    memset(&E, 0, sizeof E);
    pthread_mutex_unlock(&mu);
}
