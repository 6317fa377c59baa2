/*
 * test_cupti_pmsamp.c - PM sampling in the plugin (plugin/engines/pmsamp/):
 *
 *  - the decoder on synthetic counter-data images (CUPTI's real parameter
 *    structs, tests/plugin/pm_fake.h): one row per (completed sample,
 *    metric), midpoint times on the wall clock, sample indices, values
 *    that are not finite left out, the priming sample left out, rows in
 *    arrays of at most FL_TRACE_BATCH;
 *  - the engine against injected CUPTI answers: the call order, what
 *    SetConfig is given, the configuration and names before the rows, the
 *    buffer read until CUPTI says it is empty, stop then a last read and
 *    Disable, the counts;
 *  - the metric set: a caller's list split, refused when a metric is bad
 *    or it needs two passes, the default set cut to one pass;
 *  - every fall-back with its reason and fix: no permission, MIG, a
 *    virtual GPU, no driver, a metric refused;
 *  - the real libcupti without a driver: cuptiProfilerInitialize answers
 *    999, PM sampling falls back with its reason, nothing crashes;
 *  - the real Profiler Host API (the built plugin's table): the default
 *    set and its config image in one pass for GH100, GA100 and AD102,
 *    a two-pass list refused with the count.
 */
#include "check.h"
#include "pm_fake.h"

#include <dlfcn.h>
#include <stdlib.h>
#include <time.h>

/* ---- a sink that keeps what it is given ---- */

#define KEEP_MAX 20000
static struct {
    fl_pm_row rows[KEEP_MAX];
    size_t n, calls, biggest;
    char order[64]; /* 'c' config, 'n' names, 'r' rows */
    fl_pm_config cfg;
    char cfg_metrics[8][96];
    uint32_t name_ids[8];
    char names[8][96];
    size_t n_names;
} got;

static void note(char c)
{
    size_t n = strlen(got.order);
    if (n + 1 < sizeof got.order && (n == 0 || got.order[n - 1] != c)) {
        got.order[n] = c;
        got.order[n + 1] = '\0';
    }
}

static void on_names(void *u, int dict, const uint32_t *ids, const char *const *names, size_t n)
{
    (void)u;
    CHECK_INT(dict, FL_SAMPLE_DICT_METRIC);
    note('n');
    for (size_t i = 0; i < n && got.n_names < 8; i++, got.n_names++) {
        got.name_ids[got.n_names] = ids[i];
        snprintf(got.names[got.n_names], sizeof got.names[0], "%s", names[i]);
    }
}

static void on_config(void *u, const fl_pm_config *c)
{
    (void)u;
    note('c');
    got.cfg = *c;
    for (size_t i = 0; i < c->n_metrics && i < 8; i++)
        snprintf(got.cfg_metrics[i], sizeof got.cfg_metrics[0], "%s", c->metrics[i]);
    got.cfg.metrics = NULL;
    got.cfg.preset = strcmp(c->preset, "custom") == 0 ? "custom" : "default";
}

static void on_rows(void *u, fl_pm_row *rows, size_t n)
{
    (void)u;
    note('r');
    got.calls++;
    if (n > got.biggest)
        got.biggest = n;
    for (size_t i = 0; i < n && got.n < KEEP_MAX; i++)
        got.rows[got.n++] = rows[i];
}

static const fl_trace_sink sink = {
    .sample_names = on_names, .pm_config = on_config, .pm_samples = on_rows};

static uint64_t wall_now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

/* ------------------------------------------------------------ decoder */

static void test_decoder(void)
{
    memset(&got, 0, sizeof got);
    pmf_reset(5000000, 3);
    pmf.interval_ns = 100000;
    uint8_t image[sizeof(pmf_hdr) + 8 * 16];
    CUpti_PmSampling_CounterDataImage_Initialize_Params ip = {.counterDataSize = sizeof image,
                                                              .pCounterData = image};
    pmf_data_init(&ip);
    pmf.running = true;
    CUpti_PmSampling_DecodeData_Params dd = {.pCounterDataImage = image,
                                             .counterDataImageSize = sizeof image};
    CHECK_INT(pmf_decode(&dd), CUPTI_SUCCESS);
    const char *const metrics[] = {"sm__a", "nan_metric", "dram__b"};
    const uint32_t ids[] = {7, 8, 9};
    fl_pms_decode_in in = {.image = image,
                           .image_size = sizeof image,
                           .metrics = metrics,
                           .metric_ids = ids,
                           .n_metrics = 3,
                           .device_id = 2,
                           .first_index = 40,
                           .clock_offset_ns = 1000,
                           .not_before_ns = 0};
    fl_pms_decode_out out = {0};
    CHECK(fl_pms_decode(&pmf_api, &in, &sink, &out));
    CHECK_U64(out.samples, 3);
    CHECK_U64(out.rows, 6);
    CHECK_U64(out.bad_values, 3); /* nan_metric, each sample */
    CHECK_INT(got.n, 6);
    CHECK_INT(got.calls, 1);
    /* sample 0: [5000000, 5100000) -> midpoint 5050000 + offset 1000 */
    CHECK_U64(got.rows[0].t_ns, 5051000);
    CHECK_INT(got.rows[0].sample_index, 40);
    CHECK_INT(got.rows[0].device_id, 2);
    CHECK_INT(got.rows[0].metric_id, 7);
    CHECK_NEAR(got.rows[0].value, 0.25, 1e-12);
    CHECK_INT(got.rows[1].metric_id, 9);
    CHECK_NEAR(got.rows[1].value, 20.25, 1e-12);
    CHECK_U64(got.rows[5].t_ns, 5251000);
    CHECK_INT(got.rows[5].sample_index, 42);
    CHECK_NEAR(got.rows[5].value, 22.25, 1e-12);
    CHECK_INT(got.rows[5].scope_name_id, 0);

    /* The priming sample (before the session) is left out. */
    memset(&got, 0, sizeof got);
    pmf_reset(5000000, 2);
    pmf.early_first = true;
    pmf.running = true;
    pmf_data_init(&ip);
    CHECK_INT(pmf_decode(&dd), CUPTI_SUCCESS);
    in.not_before_ns = 4000000;
    memset(&out, 0, sizeof out);
    CHECK(fl_pms_decode(&pmf_api, &in, &sink, &out));
    CHECK_U64(out.early, 1);
    CHECK_INT(got.n, 2);
    CHECK_INT(got.rows[0].sample_index, 41);

    /* Many samples: arrays of at most FL_TRACE_BATCH. */
    size_t cap = 2000;
    uint8_t *big = malloc(sizeof(pmf_hdr) + cap * 16);
    CHECK(big != NULL);
    memset(&got, 0, sizeof got);
    pmf_reset(1000000, (uint32_t)cap);
    pmf.running = true;
    CUpti_PmSampling_CounterDataImage_Initialize_Params bp = {
        .counterDataSize = sizeof(pmf_hdr) + cap * 16, .pCounterData = big};
    pmf_data_init(&bp);
    CUpti_PmSampling_DecodeData_Params bd = {.pCounterDataImage = big,
                                             .counterDataImageSize = bp.counterDataSize};
    CHECK_INT(pmf_decode(&bd), CUPTI_SUCCESS);
    const char *const two[] = {"a", "b"};
    fl_pms_decode_in bin = {.image = big,
                            .image_size = bp.counterDataSize,
                            .metrics = two,
                            .metric_ids = ids,
                            .n_metrics = 2};
    memset(&out, 0, sizeof out);
    CHECK(fl_pms_decode(&pmf_api, &bin, &sink, &out));
    CHECK_U64(out.rows, 4000);
    CHECK_INT(got.biggest, FL_TRACE_BATCH);
    CHECK_INT(got.calls, 4);
    CHECK_INT(got.rows[3999].sample_index, 1999);
    free(big);

    /* An image CUPTI cannot read: false, with the reason. */
    uint8_t junk[64] = {0};
    fl_pms_decode_in jin = {.image = junk,
                            .image_size = sizeof junk,
                            .metrics = two,
                            .metric_ids = ids,
                            .n_metrics = 2};
    memset(&out, 0, sizeof out);
    CHECK(!fl_pms_decode(&pmf_api, &jin, &sink, &out));
    CHECK_CONTAINS(out.msg,
                   "cuptiPmSamplingGetCounterDataInfo failed: CUPTI_ERROR_INVALID_PARAMETER");
}

/* ------------------------------------------------------------- engine */

static fl_trace_options pm_opts(const char *metrics, uint32_t interval_us, uint32_t max_samples)
{
    return (fl_trace_options){.pm_sampling = true,
                              .pm_metrics = metrics,
                              .pm_interval_us = interval_us,
                              .pm_max_samples = max_samples,
                              .clock_offset_ns = 0};
}

static int ctx_dummy;

static void test_engine(void)
{
    memset(&got, 0, sizeof got);
    uint64_t t0 = wall_now() + 1000000000ull; /* after the session's start */
    pmf_reset(t0, 5);
    pmf.device_id = 1;
    fl_pms_set_api(&pmf_api);
    fl_trace_options o = pm_opts("sm__a, dram__b,", 250, 4);
    CHECK_INT(fl_pms_engine_start(&o, &ctx_dummy), FL_PC_ACTIVE);
    CHECK_STR(pmf.calls, "IGNECZRS");
    CHECK_U64(pmf.interval_ns, 250000);
    CHECK_INT(pmf.hw_bytes, FL_PMS_HW_BUFFER_BYTES);
    CHECK_INT(pmf.trigger, CUPTI_PM_SAMPLING_TRIGGER_MODE_GPU_TIME_INTERVAL);
    CHECK_INT(pmf.append, CUPTI_PM_SAMPLING_HARDWARE_BUFFER_APPEND_MODE_KEEP_LATEST);
    CHECK_INT(pmf.max_samples, 4);
    CHECK_INT(pmf.n_metrics_sized, 2);
    CHECK_INT(pmf.config_size, 16);
    /* A second context on the same device: nothing again. */
    fl_pms_context_created(&ctx_dummy);
    CHECK_STR(pmf.calls, "IGNECZRSG");
    pmf.calls[0] = '\0';

    /* A drain: 5 samples, an image of 4 -> two decodes. */
    fl_pms_engine_drain(&sink);
    CHECK_STR(pmf.calls, "DFRDFR");
    CHECK_STR(got.order, "ncr");
    CHECK_INT(got.n_names, 2);
    CHECK_INT(got.name_ids[0], 1);
    CHECK_STR(got.names[0], "sm__a");
    CHECK_STR(got.names[1], "dram__b");
    CHECK_INT(got.cfg.device_id, 1);
    CHECK_INT(got.cfg.interval_us, 250);
    CHECK_INT(got.cfg.max_samples, 4);
    CHECK_STR(got.cfg.preset, "custom");
    CHECK_INT(got.cfg.n_metrics, 2);
    CHECK_STR(got.cfg_metrics[1], "dram__b");
    CHECK_INT(got.n, 10);
    CHECK_INT(got.rows[9].sample_index, 4);
    CHECK_INT(got.rows[9].metric_id, 2);
    CHECK_NEAR(got.rows[9].value, 14.25, 1e-12);
    CHECK_U64(got.rows[9].t_ns, t0 + 4 * 250000 + 125000);

    /* Stop: a read while it runs (5 more samples), Stop, the rest read,
     * Disable; no second configuration. */
    pmf.calls[0] = '\0';
    fl_pms_engine_stop();
    fl_pms_engine_drain(&sink);
    CHECK_STR(pmf.calls, "DFRDFRTDFRX");
    CHECK_STR(got.order, "ncr");
    fl_pms_engine_drain(&sink); /* nothing more */
    CHECK_STR(pmf.calls, "DFRDFRTDFRX");
    fl_trace_stats st;
    memset(&st, 0, sizeof st);
    fl_pms_engine_stats(&st);
    CHECK_INT(st.engines[FL_ENGINE_PM].status, FL_PC_ACTIVE);
    CHECK_INT(st.engines[FL_ENGINE_PM].counters.pm.interval_us, 250);
    CHECK_INT(st.engines[FL_ENGINE_PM].counters.pm.metrics, 2);
    CHECK_INT(st.engines[FL_ENGINE_PM].counters.pm.devices, 1);
    CHECK_U64(st.engines[FL_ENGINE_PM].counters.pm.samples, 10);
    CHECK_U64(st.engines[FL_ENGINE_PM].counters.pm.rows, 20);
    CHECK_U64(st.engines[FL_ENGINE_PM].counters.pm.decodes, 5);
    CHECK_U64(st.engines[FL_ENGINE_PM].counters.pm.overflows, 0);
    CHECK_STR(st.engines[FL_ENGINE_PM].counters.pm.preset, "custom");
    CHECK_STR(st.engines[FL_ENGINE_PM].message, "");
    fl_pms_engine_release();
    CHECK_INT(pmf.acquired, pmf.released);

    /* The read after Stop refused (999, as on an H200 at every session's
     * end): the samples read before Stop are kept, and the message says
     * what was lost - not that the driver is missing or that the session
     * runs Trace. */
    memset(&got, 0, sizeof got);
    pmf_reset(t0, 2);
    pmf.decode_stopped = CUPTI_ERROR_UNKNOWN;
    o = pm_opts(NULL, 0, 0);
    CHECK_INT(fl_pms_engine_start(&o, &ctx_dummy), FL_PC_ACTIVE);
    fl_pms_engine_drain(&sink);
    fl_pms_engine_stop();
    fl_pms_engine_drain(&sink);
    memset(&st, 0, sizeof st);
    fl_pms_engine_stats(&st);
    CHECK_INT(st.engines[FL_ENGINE_PM].status, FL_PC_ACTIVE);
    CHECK_U64(st.engines[FL_ENGINE_PM].counters.pm.samples, 4);
    CHECK_CONTAINS(st.engines[FL_ENGINE_PM].message,
                   "the read after cuptiPmSamplingStop failed: CUPTI_ERROR_UNKNOWN "
                   "(999); the samples were read up to just before Stop");
    CHECK(strstr(st.engines[FL_ENGINE_PM].message, "runs Trace") == NULL);
    fl_pms_engine_release();

    /* A read refused after good ones while it runs: samples lost, said so. */
    memset(&got, 0, sizeof got);
    pmf_reset(t0, 2);
    CHECK_INT(fl_pms_engine_start(&o, &ctx_dummy), FL_PC_ACTIVE);
    fl_pms_engine_drain(&sink);
    pmf.decode = CUPTI_ERROR_UNKNOWN;
    fl_pms_engine_drain(&sink);
    memset(&st, 0, sizeof st);
    fl_pms_engine_stats(&st);
    CHECK_INT(st.engines[FL_ENGINE_PM].status, FL_PC_ACTIVE);
    CHECK_CONTAINS(st.engines[FL_ENGINE_PM].message,
                   "cuptiPmSamplingDecodeData failed after 1 good reads: "
                   "CUPTI_ERROR_UNKNOWN (999); CUPTI answers 999 when the hardware "
                   "buffer overflowed between two reads");
    fl_pms_engine_release();

    /* Defaults: interval 100 us, 4096 samples, the default set (all four
     * in one pass here), an overflow counted. */
    memset(&got, 0, sizeof got);
    pmf_reset(t0, 2);
    pmf.overflow = 1;
    o = pm_opts(NULL, 0, 0);
    CHECK_INT(fl_pms_engine_start(&o, &ctx_dummy), FL_PC_ACTIVE);
    CHECK_U64(pmf.interval_ns, 100000);
    CHECK_INT(pmf.max_samples, FL_PM_MAX_SAMPLES_DEFAULT);
    CHECK_INT(pmf.n_metrics_sized, 4);
    fl_pms_engine_drain(&sink);
    CHECK_STR(got.cfg.preset, "default");
    CHECK_STR(got.cfg_metrics[0], "sm__cycles_active.avg.pct_of_peak_sustained_elapsed");
    CHECK_INT(got.n, 8);
    memset(&st, 0, sizeof st);
    fl_pms_engine_stats(&st);
    CHECK_U64(st.engines[FL_ENGINE_PM].counters.pm.overflows, 1);
    CHECK_STR(st.engines[FL_ENGINE_PM].counters.pm.preset, "default");
    fl_pms_engine_release();

    /* The default set cut to what one pass holds (here: two). */
    pmf_reset(t0, 1);
    pmf.max_one_pass = 2;
    CHECK_INT(fl_pms_engine_start(&o, &ctx_dummy), FL_PC_ACTIVE);
    CHECK_INT(pmf.n_metrics_sized, 2);
    fl_pms_engine_release();

    /* Off: nothing called. */
    pmf_reset(t0, 1);
    fl_trace_options off = {0};
    CHECK_INT(fl_pms_engine_start(&off, &ctx_dummy), FL_PC_OFF);
    CHECK_STR(pmf.calls, "");
    fl_pms_engine_release();

    /* A context destroyed while sampling: Stop and Disable there, noted;
     * the device is not set up again, nothing is read later. */
    pmf_reset(t0, 3);
    CHECK_INT(fl_pms_engine_start(&o, &ctx_dummy), FL_PC_ACTIVE);
    pmf.calls[0] = '\0';
    fl_pms_context_destroying(&ctx_dummy);
    CHECK_STR(pmf.calls, "GTX");
    fl_pms_context_created(&ctx_dummy);
    memset(&got, 0, sizeof got);
    fl_pms_engine_drain(&sink);
    CHECK_STR(pmf.calls, "GTXG");
    CHECK_INT(got.n, 0);
    memset(&st, 0, sizeof st);
    fl_pms_engine_stats(&st);
    CHECK_INT(st.engines[FL_ENGINE_PM].status, FL_PC_ACTIVE);
    CHECK_CONTAINS(st.engines[FL_ENGINE_PM].message,
                   "a CUDA context of device 0 was destroyed before the session ended");
    fl_pms_engine_release();
    CHECK_STR(pmf.calls, "GTXG");

    /* No context yet: active, waiting; a later context sets it up. */
    pmf_reset(t0, 1);
    CHECK_INT(fl_pms_engine_start(&o, NULL), FL_PC_ACTIVE);
    CHECK_STR(pmf.calls, "");
    fl_pms_context_created(&ctx_dummy);
    CHECK_STR(pmf.calls, "IGNECZRS");
    fl_pms_engine_release();
    CHECK_CONTAINS(pmf.calls, "X");
}

/* One refusal: the status, and the message with the call and the fix. */
static void refused(CUptiResult *which, CUptiResult r, uint32_t status, const char *call,
                    const char *fix)
{
    pmf_reset(wall_now(), 1);
    *which = r;
    fl_trace_options o = pm_opts(NULL, 0, 0);
    CHECK_INT(fl_pms_engine_start(&o, &ctx_dummy), status);
    fl_trace_stats st;
    memset(&st, 0, sizeof st);
    fl_pms_engine_stats(&st);
    CHECK_INT(st.engines[FL_ENGINE_PM].status, status);
    CHECK_CONTAINS(st.engines[FL_ENGINE_PM].message, call);
    CHECK_CONTAINS(st.engines[FL_ENGINE_PM].message, fix);
    CHECK_CONTAINS(st.engines[FL_ENGINE_PM].message, "the session runs Trace");
    CHECK_INT(st.engines[FL_ENGINE_PM].counters.pm.devices, 0);
    fl_pms_engine_release();
    CHECK_INT(pmf.acquired, pmf.released);
}

static void test_fallbacks(void)
{
    fl_pms_set_api(&pmf_api);
    refused(&pmf.init, CUPTI_ERROR_INSUFFICIENT_PRIVILEGES, FL_PC_NO_PERMISSION,
            "cuptiProfilerInitialize failed: CUPTI_ERROR_INSUFFICIENT_PRIVILEGES",
            "NVreg_RestrictProfilingToAdminUsers=0");
    refused(&pmf.enable, CUPTI_ERROR_INSUFFICIENT_PRIVILEGES, FL_PC_NO_PERMISSION,
            "cuptiPmSamplingEnable failed", "run as root");
    refused(&pmf.enable, CUPTI_ERROR_MIG_DEVICE_NOT_SUPPORTED, FL_PC_MIG,
            "cuptiPmSamplingEnable failed: CUPTI_ERROR_MIG_DEVICE_NOT_SUPPORTED",
            "not a MIG instance");
    refused(&pmf.enable, CUPTI_ERROR_VIRTUALIZED_DEVICE_NOT_SUPPORTED, FL_PC_VIRTUALIZED,
            "cuptiPmSamplingEnable failed", "vGPU");
    refused(&pmf.set_config, CUPTI_ERROR_NOT_SUPPORTED, FL_PC_NOT_SUPPORTED,
            "cuptiPmSamplingSetConfig failed: CUPTI_ERROR_NOT_SUPPORTED",
            "compute capability 7.5 or newer");
    refused(&pmf.init, CUPTI_ERROR_UNKNOWN, FL_PC_NO_DRIVER, "cuptiProfilerInitialize failed",
            "no working NVIDIA driver");
    refused(&pmf.start, CUPTI_ERROR_HARDWARE_BUSY, FL_PC_CONFLICT, "cuptiPmSamplingStart failed",
            "another profiler holds the device");
    CHECK_CONTAINS(pmf.calls, "X"); /* Start refused: disabled again */

    /* Metrics: a bad one named, two passes counted. */
    pmf_reset(wall_now(), 1);
    fl_trace_options o = pm_opts("sm__a,bad__metric", 0, 0);
    CHECK_INT(fl_pms_engine_start(&o, &ctx_dummy), FL_PC_FAILED);
    fl_trace_stats st;
    memset(&st, 0, sizeof st);
    fl_pms_engine_stats(&st);
    CHECK_CONTAINS(st.engines[FL_ENGINE_PM].message,
                   "PM sampling metrics refused: metric 'bad__metric' is not available");
    CHECK_STR(pmf.calls, "IGN"); /* never enabled */
    fl_pms_engine_release();
    pmf_reset(wall_now(), 1);
    pmf.max_one_pass = 1;
    o = pm_opts("a,b,c", 0, 0);
    CHECK_INT(fl_pms_engine_start(&o, &ctx_dummy), FL_PC_FAILED);
    memset(&st, 0, sizeof st);
    fl_pms_engine_stats(&st);
    CHECK_CONTAINS(st.engines[FL_ENGINE_PM].message,
                   "the 3 PM sampling metrics need 2 passes on GH100; PM sampling "
                   "collects one: name fewer metrics");
    fl_pms_engine_release();
    o = pm_opts(" , ,", 0, 0);
    CHECK_INT(fl_pms_engine_start(&o, &ctx_dummy), FL_PC_FAILED);
    memset(&st, 0, sizeof st);
    fl_pms_engine_stats(&st);
    CHECK_CONTAINS(st.engines[FL_ENGINE_PM].message, "pm_sampling_metrics ' , ,' names no metric");
    fl_pms_engine_release();

    /* A decode that fails: kept as the session's note, sampling goes on. */
    pmf_reset(wall_now(), 1);
    o = pm_opts(NULL, 0, 0);
    CHECK_INT(fl_pms_engine_start(&o, &ctx_dummy), FL_PC_ACTIVE);
    pmf.decode = CUPTI_ERROR_UNKNOWN;
    memset(&got, 0, sizeof got);
    fl_pms_engine_drain(&sink);
    memset(&st, 0, sizeof st);
    fl_pms_engine_stats(&st);
    CHECK_INT(st.engines[FL_ENGINE_PM].status, FL_PC_ACTIVE);
    CHECK_CONTAINS(st.engines[FL_ENGINE_PM].message,
                   "cuptiPmSamplingDecodeData failed: CUPTI_ERROR_UNKNOWN (999)");
    CHECK_INT(got.n, 0);
    fl_pms_engine_release();
}

/* ------------------------------------------------- the real libcupti */

static void test_real_cupti(void)
{
    fl_pms_set_api(NULL); /* CUPTI's own functions, no driver here */
    fl_trace_options o = pm_opts(NULL, 0, 0);
    /* A context pointer that is never dereferenced: the first call fails. */
    uint32_t st = fl_pms_engine_start(&o, &ctx_dummy);
    if (st == FL_PC_ACTIVE) {
        printf("skipped real-libcupti fall-back: a driver answered\n");
        fl_pms_engine_release();
        return;
    }
    CHECK_INT(st, FL_PC_NO_DRIVER);
    fl_trace_stats s;
    memset(&s, 0, sizeof s);
    fl_pms_engine_stats(&s);
    CHECK_STR(s.engines[FL_ENGINE_PM].message,
              "cuptiProfilerInitialize failed: CUPTI_ERROR_UNKNOWN (999): CUPTI found "
              "no working NVIDIA driver (no GPU, or the driver is not loaded); the "
              "session runs Trace");
    fl_pms_engine_drain(&sink); /* nothing to read, nothing crashes */
    fl_pms_engine_stop();
    fl_pms_engine_drain(&sink);
    fl_pms_engine_release();
}

/* ------------------------------------------ the real Profiler Host API */

/* CUPTI's host API dlopens libnvperf_host.so with RTLD_DEEPBIND, which the
 * ASan and TSan runtimes refuse (they end the process): sanitizer builds
 * skip it. */
#if defined(__SANITIZE_ADDRESS__) || defined(__SANITIZE_THREAD__)
#define GP_SANITIZED_SKIP 1
#else
#define GP_SANITIZED_SKIP 0
#endif

static void test_real_host(void)
{
    if (GP_SANITIZED_SKIP) {
        printf("skipped real host: CUPTI loads libnvperf_host.so with RTLD_DEEPBIND, which this "
               "sanitizer build's runtime refuses\n");
        return;
    }
    const char *plugin = getenv("GP_TEST_PLUGIN");
    void *lib = plugin && *plugin ? dlopen(plugin, RTLD_NOW | RTLD_LOCAL) : NULL;
    const gp_metrics_plugin *h = lib ? dlsym(lib, "gpufl_cupti_metrics_v1") : NULL;
    if (!h) {
        printf("skipped real host: no plugin (%s)\n", plugin ? dlerror() : "GP_TEST_PLUGIN unset");
        return;
    }
    fl_pms_api api = pmf_api;
    api.host = h;
    const char *chips[] = {"GH100", "GA100", "AD102"};
    for (size_t c = 0; c < 3; c++) {
        void *ho = NULL;
        char canon[64];
        gp_error ge = {0};
        CHECK_INT(h->acquire(chips[c], 1, &ho, canon, sizeof canon, &ge), 0);
        char **m = NULL;
        size_t n = 0, size = 0, passes = 0;
        uint8_t *img = NULL;
        CHECK_INT(fl_pms_metric_set(&api, ho, canon, NULL, &m, &n, &img, &size, &ge), 0);
        CHECK_INT(n, 4);
        CHECK(size > 0);
        CHECK_INT(h->passes(img, size, &passes, &ge), 0);
        CHECK_INT(passes, 1);
        CHECK_STR(m[2], "dram__throughput.avg.pct_of_peak_sustained_elapsed");
        free(img);
        fl_pms_free_metrics(m, n);
        /* A name CUPTI does not know, named. */
        CHECK_INT(fl_pms_metric_set(&api, ho, canon, "sm__cycles_active.avg,no__such.sum", &m, &n,
                                    &img, &size, &ge),
                  GP_ERR_INVALID_ARG);
        CHECK_CONTAINS(ge.message, "no__such.sum");
        h->release(ho);
    }
    /* TU102: the four need two passes; the default set is cut to one. */
    void *ho = NULL;
    char canon[64];
    gp_error ge = {0};
    CHECK_INT(h->acquire("TU102", 1, &ho, canon, sizeof canon, &ge), 0);
    char **m = NULL;
    size_t n = 0, size = 0, passes = 0;
    uint8_t *img = NULL;
    CHECK_INT(fl_pms_metric_set(&api, ho, canon, NULL, &m, &n, &img, &size, &ge), 0);
    CHECK(n >= 1 && n < 4);
    CHECK_INT(h->passes(img, size, &passes, &ge), 0);
    CHECK_INT(passes, 1);
    free(img);
    fl_pms_free_metrics(m, n);
    CHECK_INT(fl_pms_metric_set(&api, ho, canon,
                                "sm__cycles_active.avg.pct_of_peak_sustained_elapsed,"
                                "sm__pipe_tensor_cycles_active.avg.pct_of_peak_sustained_elapsed,"
                                "dram__throughput.avg.pct_of_peak_sustained_elapsed,"
                                "gr__cycles_active.avg.pct_of_peak_sustained_elapsed",
                                &m, &n, &img, &size, &ge),
              GP_ERR_INVALID_ARG);
    CHECK_CONTAINS(ge.message, "the 4 PM sampling metrics need 2 passes on TU102");
    h->release(ho);
}

int main(void)
{
    test_decoder();
    test_engine();
    test_fallbacks();
    test_real_cupti();
    test_real_host();
    fl_pms_set_api(NULL);
    return check_done("test_cupti_pmsamp");
}
