/*
 * test_cupti_rangeprof.c - the range profiler (plugin/engines/rangeprof/rangeprof.c) without
 * a GPU:
 *  - the default metric set and its pass count on GH100, GA100, AD102 and
 *    GB202 with the real CUPTI host library (the plugin's
 *    gpufl_cupti_metrics_v1, $GP_TEST_PLUGIN): scope ranges keep what one
 *    pass holds, kernel ranges the whole set; pinned for CUPTI 13.0
 *    (130001); skipped in sanitizer builds (CUPTI's host library needs
 *    RTLD_DEEPBIND);
 *  - the engine with CUPTI's answers injected (fl_rp_set_api) and a fake
 *    host table: CUPTI's call order, the image decoded on the application's
 *    thread and evaluated on the writer's, the values mapped to GPUFlight's
 *    fields, kernel ranges named by CUPTI's range names;
 *  - every fall-back with its reason and fix: no permission, MIG, vGPU, no
 *    driver, another profiler, initialised after CUDA work, no metric on
 *    the chip, no context; and with the real libcupti (no driver here).
 */
#include "check.h"
#include "engines/rangeprof/rangeprof.h"

#include <dlfcn.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#if defined(__SANITIZE_ADDRESS__) || defined(__SANITIZE_THREAD__)
#define SANITIZED 1
#else
#define SANITIZED 0
#endif

/* ------------------------------------------------ the real host library */

static void chip_sets(const gp_metrics_plugin *host)
{
    static const struct {
        const char *chip;
        size_t one_n, one_passes, all_n, all_passes;
    } want[] = {
        {"GH100", 6, 1, 8, 8},
        {"GA100", 6, 1, 8, 5},
        {"AD102", 6, 1, 8, 6},
        {"GB202", 6, 1, 8, 8},
    };
    bool pin = host->cupti_version() == 130001;
    for (size_t i = 0; i < sizeof want / sizeof want[0]; i++) {
        void *h = NULL;
        char canon[64];
        gp_error ge = {0};
        int st = host->acquire(want[i].chip, 0, &h, canon, sizeof canon, &ge);
        CHECK_INT(st, 0);
        if (st != 0) {
            fprintf(stderr, "%s: %s\n", want[i].chip, ge.message);
            continue;
        }
        for (int one = 1; one >= 0; one--) {
            fl_rp_choice c;
            st = fl_rp_choose(host, h, NULL, one, &c, &ge);
            CHECK_INT(st, 0);
            printf("%s %s: %zu metrics, %zu passes, image %zu bytes; left out: %s\n", want[i].chip,
                   one ? "scope" : "kernel", c.n, c.passes, c.image_size,
                   c.left_out[0] ? c.left_out : "none");
            for (size_t k = 0; k < c.n; k++)
                printf("    %s\n", c.names[k]);
            CHECK(c.n > 0 && c.image && c.image_size > 0);
            if (one)
                CHECK_INT(c.passes, 1);
            if (pin) {
                CHECK_INT(c.n, one ? want[i].one_n : want[i].all_n);
                CHECK_INT(c.passes, one ? want[i].one_passes : want[i].all_passes);
            }
            /* Occupancy, the first slot, is always there. */
            CHECK_STR(c.names[0], "sm__warps_active.avg.pct_of_peak_sustained_active");
            if (one) {
                CHECK_CONTAINS(c.left_out, "sm__throughput.avg.pct_of_peak_sustained_elapsed (the "
                                           "set would need");
            }
            fl_rp_choice_free(&c);
        }
        /* GB202 names DRAM bytes dram__bytes_op_read/_write. */
        if (strcmp(want[i].chip, "GB202") == 0) {
            fl_rp_choice c;
            CHECK_INT(fl_rp_choose(host, h, NULL, false, &c, &ge), 0);
            CHECK_STR(c.names[2], "dram__bytes_op_read.sum");
            fl_rp_choice_free(&c);
        }
        /* A user list: an unknown name is left out and named; all unknown
         * is an error naming them. */
        fl_rp_choice c;
        CHECK_INT(
            fl_rp_choose(host, h, "gpu__time_duration.sum, no__such_metric.sum", true, &c, &ge), 0);
        CHECK_INT(c.n, 1);
        CHECK_CONTAINS(c.left_out, "no__such_metric.sum (not on this chip)");
        fl_rp_choice_free(&c);
        CHECK_INT(fl_rp_choose(host, h, "no__such_metric.sum", true, &c, &ge), GP_ERR_INVALID_ARG);
        CHECK_CONTAINS(ge.message, "no__such_metric.sum");
        host->release(h);
    }
}

/* ------------------------------------------------------- injected CUPTI */

static char calls[4096];
static CUptiResult fail_at_init, fail_at_enable, fail_at_config;
static size_t n_ranges = 1;
static int ctx_token;
static void *cur_ctx = &ctx_token;
static int obj_token;

static void log_call(const char *what)
{
    size_t at = strlen(calls);
    snprintf(calls + at, sizeof calls - at, "%s%s", at ? "," : "", what);
}

static CUptiResult f_init(CUpti_Profiler_Initialize_Params *p)
{
    (void)p;
    log_call("init");
    return fail_at_init;
}
static CUptiResult f_deinit(CUpti_Profiler_DeInitialize_Params *p)
{
    (void)p;
    log_call("deinit");
    return CUPTI_SUCCESS;
}
static CUptiResult f_device_id(CUcontext c, uint32_t *d)
{
    CHECK(c == cur_ctx);
    *d = 3;
    log_call("device_id");
    return CUPTI_SUCCESS;
}
static CUptiResult f_chip(CUpti_Device_GetChipName_Params *p)
{
    CHECK_INT(p->deviceIndex, 3);
    p->pChipName = "GH100";
    log_call("chip");
    return CUPTI_SUCCESS;
}
static CUptiResult f_enable(CUpti_RangeProfiler_Enable_Params *p)
{
    log_call("enable");
    p->pRangeProfilerObject = (CUpti_RangeProfiler_Object *)&obj_token;
    return fail_at_enable;
}
static CUptiResult f_disable(CUpti_RangeProfiler_Disable_Params *p)
{
    CHECK(p->pRangeProfilerObject == (void *)&obj_token);
    log_call("disable");
    return CUPTI_SUCCESS;
}
/* 64 bytes, or with per_range_bytes CUPTI's shape: a base and so much a
 * range (on an H200, GH100 with 8 metrics: ~680 KB a range). */
static size_t per_range_bytes, last_max_ranges;
static CUptiResult f_size(CUpti_RangeProfiler_GetCounterDataSize_Params *p)
{
    CHECK(p->numMetrics > 0);
    CHECK_INT(p->maxNumRangeTreeNodes, p->maxNumOfRanges);
    p->counterDataSize = per_range_bytes ? 4096 + per_range_bytes * p->maxNumOfRanges : 64;
    last_max_ranges = p->maxNumOfRanges;
    log_call("size");
    return CUPTI_SUCCESS;
}
static CUptiResult f_data_init(CUpti_RangeProfiler_CounterDataImage_Initialize_Params *p)
{
    memset(p->pCounterData, 0, p->counterDataSize);
    log_call("data_init");
    return CUPTI_SUCCESS;
}
static uint16_t last_range_mode;
static CUptiResult f_config(CUpti_RangeProfiler_SetConfig_Params *p)
{
    last_range_mode = (uint16_t)p->range;
    CHECK_INT(p->replayMode, p->range == CUPTI_AutoRange ? CUPTI_KernelReplay : CUPTI_UserReplay);
    log_call("config");
    return fail_at_config;
}
static uint8_t *live_image;
static CUptiResult f_start(CUpti_RangeProfiler_Start_Params *p)
{
    (void)p;
    log_call("start");
    return CUPTI_SUCCESS;
}
static int incomplete_next; /* the next Stop says not every pass was submitted */
static CUptiResult f_stop(CUpti_RangeProfiler_Stop_Params *p)
{
    p->isAllPassSubmitted = incomplete_next ? 0 : 1;
    incomplete_next = 0;
    log_call("stop");
    return CUPTI_SUCCESS;
}
static CUptiResult f_push(CUpti_RangeProfiler_PushRange_Params *p)
{
    CHECK_STR(p->pRangeName, "step");
    log_call("push");
    return CUPTI_SUCCESS;
}
static CUptiResult f_pop(CUpti_RangeProfiler_PopRange_Params *p)
{
    (void)p;
    log_call("pop");
    return CUPTI_SUCCESS;
}
static CUptiResult f_decode(CUpti_RangeProfiler_DecodeData_Params *p)
{
    p->numOfRangeDropped = 0;
    log_call("decode");
    return CUPTI_SUCCESS;
}
static CUptiResult f_info(CUpti_RangeProfiler_GetCounterDataInfo_Params *p)
{
    p->numTotalRanges = n_ranges;
    log_call("info");
    return CUPTI_SUCCESS;
}
static CUptiResult f_range(CUpti_RangeProfiler_CounterData_GetRangeInfo_Params *p)
{
    static char name[32];
    snprintf(name, sizeof name, "kernel_%zu", p->rangeIndex);
    p->rangeName = name;
    return CUPTI_SUCCESS;
}
static gp_status f_eval(void *host, const uint8_t *data, size_t size, size_t index,
                        const char *const *metrics, size_t n, double *values, gp_error *err)
{
    (void)host, (void)data, (void)size, (void)err;
    (void)live_image;
    for (size_t i = 0; i < n; i++) {
        if (strstr(metrics[i], "hit_rate"))
            values[i] = 150.0; /* out of 0..100: not collected */
        else
            values[i] = 10.0 * (double)(i + 1) + (double)index;
    }
    log_call("eval");
    return 0;
}

static const fl_rp_api fake = {
    .profiler_init = f_init,
    .profiler_deinit = f_deinit,
    .device_id = f_device_id,
    .chip_name = f_chip,
    .enable = f_enable,
    .disable = f_disable,
    .data_size = f_size,
    .data_init = f_data_init,
    .set_config = f_config,
    .start = f_start,
    .stop = f_stop,
    .push = f_push,
    .pop = f_pop,
    .decode = f_decode,
    .data_info = f_info,
    .range_info = f_range,
    .evaluate = f_eval,
};

/* A host table: every name but "bad__*" valid, one pass each up to three,
 * then two. */
static gp_status h_acquire(const char *chip, int profiler, void **host, char *canon, size_t clen,
                           gp_error *err)
{
    (void)profiler, (void)err;
    snprintf(canon, clen, "%s", chip);
    *host = (void *)&ctx_token;
    return 0;
}
static void h_release(void *h)
{
    (void)h;
}
static gp_status h_image(void *h, const char *const *m, size_t n, uint8_t **img, size_t *size,
                         gp_error *err)
{
    (void)h;
    for (size_t i = 0; i < n; i++)
        if (strncmp(m[i], "bad__", 5) == 0) {
            snprintf(err->message, sizeof err->message, "metric '%s' is not valid", m[i]);
            return GP_ERR_INVALID_ARG;
        }
    *img = malloc(8);
    (*img)[0] = (uint8_t)n;
    *size = 8;
    return 0;
}
static gp_status h_passes(const uint8_t *img, size_t size, size_t *out, gp_error *err)
{
    (void)size, (void)err;
    *out = img[0] <= 3 ? 1 : 2;
    return 0;
}
static const gp_metrics_plugin fake_host = {
    .acquire = h_acquire, .release = h_release, .config_image = h_image, .passes = h_passes};

static void *get_ctx(void)
{
    return cur_ctx;
}

typedef struct {
    fl_perf_row rows[128];
    char names[128][64];
    char kernels[128][64]; /* kernel_name, "" for NULL */
    size_t n;
} got_t;
static got_t got;

static void on_ranges(void *user, const fl_perf_row *rows, size_t n)
{
    (void)user;
    for (size_t i = 0; i < n && got.n < 128; i++) {
        got.rows[got.n] = rows[i];
        snprintf(got.names[got.n], sizeof got.names[0], "%s", rows[i].name);
        snprintf(got.kernels[got.n], sizeof got.kernels[0], "%s",
                 rows[i].kernel_name ? rows[i].kernel_name : "");
        got.n++;
    }
}

static const fl_trace_sink sink = {.perf_ranges = on_ranges};

static void reset(void)
{
    calls[0] = '\0';
    fail_at_init = fail_at_enable = fail_at_config = CUPTI_SUCCESS;
    n_ranges = 1;
    per_range_bytes = 0;
    cur_ctx = &ctx_token;
    memset(&got, 0, sizeof got);
}

static uint32_t start(bool per_kernel, const char *metrics, bool late)
{
    fl_trace_options o = {
        .range_profiler = true, .perf_per_kernel = per_kernel, .perf_metrics = metrics};
    fl_engine_env env = {.host = &fake_host, .current_ctx = get_ctx, .late = late};
    return fl_rp_engine_start(&o, &env);
}

static void scope_ranges(void)
{
    reset();
    CHECK_INT(
        start(false, "a__x.sum,b__y.pct,bad__z.sum,lts__t_sector_hit_rate.pct,c__w.sum", false),
        FL_PC_ACTIVE);
    fl_rp_range_begin("step");
    fl_rp_range_begin("other"); /* a second outermost range while one is open */
    fl_rp_range_end();
    CHECK_STR(calls, "init,device_id,chip,enable,size,data_init,config,data_init,start,push,pop,"
                     "stop,decode");
    calls[0] = '\0';
    fl_rp_engine_drain(&sink);
    CHECK_STR(calls, "info,eval");
    CHECK_INT(got.n, 1);
    fl_perf_row *r = &got.rows[0];
    CHECK_INT(r->kind, FL_PERF_RANGE_SCOPE);
    CHECK_INT(r->device_id, 3);
    CHECK_STR(got.names[0], "step");
    CHECK(r->end_ns >= r->start_ns && r->start_ns > 0);
    CHECK(isnan(r->known[FL_PV_L2_HIT])); /* 150 %: not collected */
    CHECK(isnan(r->known[FL_PV_SM_THROUGHPUT]));
    fl_trace_stats st;
    memset(&st, 0, sizeof st);
    fl_rp_engine_stats(&st);
    CHECK_INT(st.engines[FL_ENGINE_RP].status, FL_PC_ACTIVE);
    CHECK_INT(st.engines[FL_ENGINE_RP].counters.rp.metrics, 3);
    CHECK_INT(st.engines[FL_ENGINE_RP].counters.rp.passes, 1);
    CHECK_STR(st.engines[FL_ENGINE_RP].counters.rp.scheduled,
              "a__x.sum,b__y.pct,lts__t_sector_hit_rate.pct");
    CHECK_STR(st.engines[FL_ENGINE_RP].counters.rp.left_out,
              "bad__z.sum (not on this chip); c__w.sum (the set would need 2 passes)");
    CHECK_STR(st.engines[FL_ENGINE_RP].counters.rp.chip, "GH100");
    CHECK_INT(st.engines[FL_ENGINE_RP].counters.rp.skipped, 1);
    CHECK_INT(st.engines[FL_ENGINE_RP].counters.rp.ranges, 1);
    calls[0] = '\0';
    fl_rp_engine_stop();
    fl_rp_range_begin("late"); /* after stop: nothing */
    fl_rp_engine_release();
    CHECK_STR(calls, "disable,deinit");
}

static void kernel_ranges(void)
{
    reset();
    n_ranges = 3;
    CHECK_INT(start(true, "", false), FL_PC_ACTIVE);
    fl_rp_kernel_launch(&ctx_token, "_Z6beforev"); /* no window open: not named */
    fl_rp_range_begin("train");
    /* CUPTI names kernel ranges "0", "1", ...: the launches name them, in
     * order, on the window's context only; a third range without a
     * launch seen keeps no kernel name. */
    fl_rp_kernel_launch(&ctx_token, "_Z4gemmPKfS0_Pf");
    fl_rp_kernel_launch((void *)0x5150, "_Z5otherv");
    fl_rp_kernel_launch(&ctx_token, NULL);
    fl_rp_kernel_launch(&ctx_token, "_Z6vecAddPfS_S_i");
    fl_rp_range_end();
    fl_rp_kernel_launch(&ctx_token, "_Z5afterv"); /* closed: not named */
    CHECK_INT(last_range_mode, CUPTI_AutoRange);
    CHECK(strstr(calls, "push") == NULL);
    fl_rp_engine_drain(&sink);
    CHECK_INT(got.n, 3);
    CHECK_STR(got.names[2], "kernel_2");
    CHECK_STR(got.kernels[0], "gemm(float const*, float const*, float*)");
    CHECK_STR(got.kernels[1], "vecAdd(float*, float*, float*, int)");
    CHECK_STR(got.kernels[2], "");
    /* launch_ordinal: the place among the session's launches, every
     * context, window or not (_Z6beforev 1, gemm 2, other 3, vecAdd 4);
     * a range whose launch was not seen has none (0) */
    CHECK_INT(got.rows[0].launch_ordinal, 2);
    CHECK_INT(got.rows[1].launch_ordinal, 4);
    CHECK_INT(got.rows[2].launch_ordinal, 0);
    CHECK_INT(got.rows[2].range_index, 2);
    CHECK_INT(got.rows[0].kind, FL_PERF_RANGE_KERNEL);
    /* The default set's first slot (occupancy) is value 10 + index. */
    CHECK_NEAR(got.rows[1].known[FL_PV_OCCUPANCY], 11.0, 1e-9);
    /* A window that ends without its data (not every pass submitted)
     * leaves no names behind for the next one. */
    memset(&got, 0, sizeof got);
    incomplete_next = 1;
    fl_rp_range_begin("lost");
    fl_rp_kernel_launch(&ctx_token, "_Z5lostAv");
    fl_rp_kernel_launch(&ctx_token, "_Z5lostBv");
    fl_rp_range_end();
    fl_rp_range_begin("train");
    fl_rp_kernel_launch(&ctx_token, "_Z4gemmPKfS0_Pf");
    fl_rp_range_end();
    fl_rp_engine_drain(&sink);
    CHECK_INT(got.n, 3);
    CHECK_STR(got.kernels[0], "gemm(float const*, float const*, float*)");
    CHECK_STR(got.kernels[1], "");
    fl_trace_stats st;
    memset(&st, 0, sizeof st);
    fl_rp_engine_stats(&st);
    CHECK_INT(st.engines[FL_ENGINE_RP].counters.rp.metrics, FL_RP_DEFAULT_SLOTS);
    CHECK_INT(st.engines[FL_ENGINE_RP].counters.rp.passes, 2);
    fl_rp_engine_stop();
    fl_rp_engine_release();
}

/* A window of 100 kernel ranges (the image holds up to 1024 here): every
 * range named by its launch, past any fixed count. */
static void kernel_ranges_many(void)
{
    reset();
    n_ranges = 100;
    CHECK_INT(start(true, "", false), FL_PC_ACTIVE);
    fl_rp_range_begin("train");
    for (int i = 0; i < 100; i++) {
        char sym[32];
        snprintf(sym, sizeof sym, "_Z%dk%dv", i < 10 ? 2 : 3, i);
        fl_rp_kernel_launch(&ctx_token, sym);
    }
    fl_rp_range_end();
    fl_rp_engine_drain(&sink);
    CHECK_INT(got.n, 100);
    CHECK_STR(got.kernels[0], "k0()");
    CHECK_STR(got.kernels[70], "k70()");
    CHECK_STR(got.kernels[99], "k99()");
    fl_rp_engine_stop();
    fl_rp_engine_release();
}

/* CUPTI's image grows by the range (~680 KB each on GH100, 695 MB for 1024
 * ranges): a kernel window holds what fits FL_RP_IMAGE_BYTES, so that its
 * image fits the queue and the ranges reach the writer (with 1024 ranges
 * every window was dropped on an H200). */
static void kernel_ranges_sized(void)
{
    reset();
    per_range_bytes = 680000;
    n_ranges = 2;
    CHECK_INT(start(true, "", false), FL_PC_ACTIVE);
    fl_rp_range_begin("train");
    fl_rp_range_end();
    size_t want = (FL_RP_IMAGE_BYTES - 4096) / 680000;
    CHECK_INT(last_max_ranges, want);
    CHECK_STR(calls, "init,device_id,chip,enable,size,size,size,data_init,config,data_init,start,"
                     "stop,decode");
    fl_rp_engine_drain(&sink);
    CHECK_INT(got.n, 2);
    fl_trace_stats st;
    memset(&st, 0, sizeof st);
    fl_rp_engine_stats(&st);
    CHECK_INT(st.engines[FL_ENGINE_RP].counters.rp.dropped, 0);
    CHECK_INT(st.engines[FL_ENGINE_RP].counters.rp.max_ranges, want);
    fl_rp_engine_stop();
    fl_rp_engine_release();
    /* Scope ranges keep one range a window. */
    reset();
    per_range_bytes = 680000;
    CHECK_INT(start(false, "", false), FL_PC_ACTIVE);
    fl_rp_range_begin("step");
    fl_rp_range_end();
    CHECK_INT(last_max_ranges, 1);
    fl_rp_engine_stop();
    fl_rp_engine_release();
}

/* A fall-back: status and words in the message. */
static void fallback(CUptiResult *at, CUptiResult r, bool late, uint32_t want, const char *words)
{
    reset();
    *at = r;
    uint32_t s = start(false, "", late);
    fl_rp_range_begin("step");
    fl_rp_range_end();
    fl_rp_engine_drain(&sink);
    fl_rp_engine_stop();
    fl_trace_stats st;
    memset(&st, 0, sizeof st);
    fl_rp_engine_stats(&st);
    (void)s;
    CHECK_INT(st.engines[FL_ENGINE_RP].status, want);
    CHECK_CONTAINS(st.engines[FL_ENGINE_RP].message, words);
    CHECK_CONTAINS(st.engines[FL_ENGINE_RP].message, "the session runs Trace");
    CHECK_INT(got.n, 0);
    fl_rp_engine_release();
}

static void fallbacks(void)
{
    fallback(&fail_at_init, CUPTI_ERROR_INSUFFICIENT_PRIVILEGES, false, FL_PC_NO_PERMISSION,
             "NVreg_RestrictProfilingToAdminUsers=0");
    fallback(&fail_at_enable, CUPTI_ERROR_MIG_DEVICE_NOT_SUPPORTED, false, FL_PC_NOT_SUPPORTED,
             "cuptiRangeProfilerEnable failed");
    fallback(&fail_at_enable, CUPTI_ERROR_VIRTUALIZED_DEVICE_NOT_SUPPORTED, false,
             FL_PC_VIRTUALIZED, "vGPU");
    fallback(&fail_at_init, CUPTI_ERROR_UNKNOWN, false, FL_PC_NO_DRIVER,
             "no working NVIDIA driver");
    fallback(&fail_at_config, CUPTI_ERROR_HARDWARE_BUSY, false, FL_PC_CONFLICT, "another profiler");
    fallback(&fail_at_config, CUPTI_ERROR_INVALID_OPERATION, true, FL_RP_LATE_INIT,
             "call gpufl_init before the first kernel (in PyTorch right after `import torch`)");
    /* The disable after a refused configuration. */
    CHECK_CONTAINS(calls, "config,disable");
    /* No metric of the set on the chip. */
    reset();
    start(false, "bad__one.sum,bad__two.sum", false);
    fl_rp_range_begin("step");
    fl_trace_stats st;
    memset(&st, 0, sizeof st);
    fl_rp_engine_stats(&st);
    CHECK_INT(st.engines[FL_ENGINE_RP].status, FL_RP_NO_METRICS);
    CHECK_CONTAINS(st.engines[FL_ENGINE_RP].message, "bad__two.sum (not on this chip)");
    CHECK_CONTAINS(st.engines[FL_ENGINE_RP].message, "gpu-profile metrics list --chip GH100");
    fl_rp_engine_stop();
    fl_rp_engine_release();
    /* No context at any scope. */
    reset();
    cur_ctx = NULL;
    start(false, "", false);
    fl_rp_range_begin("step");
    fl_rp_range_end();
    fl_rp_engine_stop();
    memset(&st, 0, sizeof st);
    fl_rp_engine_stats(&st);
    CHECK_INT(st.engines[FL_ENGINE_RP].status, FL_RP_NO_CONTEXT);
    CHECK_INT(st.engines[FL_ENGINE_RP].counters.rp.skipped, 1);
    fl_rp_engine_release();
    /* Not requested: off. */
    fl_trace_options off = {0};
    fl_engine_env env = {.host = &fake_host, .current_ctx = get_ctx};
    CHECK_INT(fl_rp_engine_start(&off, &env), FL_PC_OFF);
    fl_rp_engine_release();
}

/* The real libcupti, no driver here: cuptiProfilerInitialize refuses. */
static void real_cupti(void)
{
    fl_rp_set_api(NULL);
    fl_trace_options o = {.range_profiler = true};
    fl_engine_env env = {.host = &fake_host, .current_ctx = get_ctx};
    uint32_t st = fl_rp_engine_start(&o, &env);
    fl_trace_stats s;
    memset(&s, 0, sizeof s);
    fl_rp_engine_stats(&s);
    printf("real libcupti: status %u: %s\n", st, s.engines[FL_ENGINE_RP].message);
    if (st != FL_PC_ACTIVE) {
        CHECK_CONTAINS(s.engines[FL_ENGINE_RP].message, "cuptiProfilerInitialize failed");
        CHECK_CONTAINS(s.engines[FL_ENGINE_RP].message, "the session runs Trace");
    }
    fl_rp_range_begin("step"); /* no crash whatever CUPTI said */
    fl_rp_range_end();
    fl_rp_engine_stop();
    fl_rp_engine_release();
}

int main(void)
{
    fl_rp_set_api(&fake);
    scope_ranges();
    kernel_ranges();
    kernel_ranges_many();
    kernel_ranges_sized();
    fallbacks();
    real_cupti();
    const char *plugin = getenv("GP_TEST_PLUGIN");
    if (SANITIZED || !plugin) {
        printf("the real host library: skipped (%s)\n",
               SANITIZED ? "sanitizer build" : "no GP_TEST_PLUGIN");
    } else {
        void *lib = dlopen(plugin, RTLD_NOW | RTLD_LOCAL);
        CHECK(lib != NULL);
        const gp_metrics_plugin *host = lib ? dlsym(lib, GP_METRICS_PLUGIN_SYMBOL) : NULL;
        CHECK(host != NULL);
        if (host)
            chip_sets(host);
    }
    return check_done("test_cupti_rangeprof");
}
