/*
 * bench_rangeprof.c - what the range profiler costs the application's
 * thread at an outermost scope, CUPTI's own calls excluded (they are
 * injected as no-ops: a real Start/Push/Pop/Stop/DecodeData adds CUPTI's
 * and the GPU's time, which only a GPU run shows).
 *
 *   A  gpufl_scope_begin/end pair, outermost, hooks NULL (every engine but
 *      RangeProfiler): the hot path's one extra relaxed load
 *   B  the same pair with the engine's hooks (fl_rp_range_begin/end): the
 *      mutex, two clock reads, the 4 KiB image copied into the queue
 *   C  the writer's evaluation per range (fake evaluate, 6 metrics)
 *
 * Usage: bench_rangeprof [pairs]   (default 200000); median of 5 runs.
 */
#include "../plugin/engines/rangeprof/rangeprof.h"
#include "recorder/scope.h"
#include "util/clock.h"
#include "gpufl.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define IMAGE_BYTES 4096

static int tok;
static CUptiResult ok0(void *p)
{
    (void)p;
    return CUPTI_SUCCESS;
}
static CUptiResult ok_stop(CUpti_RangeProfiler_Stop_Params *p)
{
    p->isAllPassSubmitted = 1;
    return CUPTI_SUCCESS;
}
static CUptiResult dev(CUcontext c, uint32_t *d)
{
    (void)c;
    *d = 0;
    return CUPTI_SUCCESS;
}
static CUptiResult chip(CUpti_Device_GetChipName_Params *p)
{
    p->pChipName = "GH100";
    return CUPTI_SUCCESS;
}
static CUptiResult size(CUpti_RangeProfiler_GetCounterDataSize_Params *p)
{
    p->counterDataSize = IMAGE_BYTES;
    return CUPTI_SUCCESS;
}
static CUptiResult info(CUpti_RangeProfiler_GetCounterDataInfo_Params *p)
{
    p->numTotalRanges = 1;
    return CUPTI_SUCCESS;
}
static gp_status eval(void *h, const uint8_t *d, size_t s, size_t i, const char *const *m, size_t n,
                      double *v, gp_error *err)
{
    (void)h, (void)d, (void)s, (void)i, (void)m, (void)err;
    for (size_t k = 0; k < n; k++)
        v[k] = (double)k;
    return 0;
}
#define OK(t) ((CUptiResult(*)(t *))ok0)
static const fl_rp_api api = {
    .profiler_init = OK(CUpti_Profiler_Initialize_Params),
    .profiler_deinit = OK(CUpti_Profiler_DeInitialize_Params),
    .device_id = dev,
    .chip_name = chip,
    .enable = OK(CUpti_RangeProfiler_Enable_Params),
    .disable = OK(CUpti_RangeProfiler_Disable_Params),
    .data_size = size,
    .data_init = OK(CUpti_RangeProfiler_CounterDataImage_Initialize_Params),
    .set_config = OK(CUpti_RangeProfiler_SetConfig_Params),
    .start = OK(CUpti_RangeProfiler_Start_Params),
    .stop = ok_stop,
    .push = OK(CUpti_RangeProfiler_PushRange_Params),
    .pop = OK(CUpti_RangeProfiler_PopRange_Params),
    .decode = OK(CUpti_RangeProfiler_DecodeData_Params),
    .data_info = info,
    .range_info = OK(CUpti_RangeProfiler_CounterData_GetRangeInfo_Params),
    .evaluate = eval,
};

static gp_status h_acq(const char *c, int p, void **h, char *cn, size_t cl, gp_error *err)
{
    (void)p, (void)err;
    snprintf(cn, cl, "%s", c);
    *h = &tok;
    return 0;
}
static void h_rel(void *h)
{
    (void)h;
}
static gp_status h_img(void *h, const char *const *m, size_t n, uint8_t **img, size_t *sz,
                       gp_error *err)
{
    (void)h, (void)m, (void)err;
    *img = calloc(1, 8);
    *sz = 8;
    (void)n;
    return 0;
}
static gp_status h_passes(const uint8_t *i, size_t s, size_t *o, gp_error *err)
{
    (void)i, (void)s, (void)err;
    *o = 1;
    return 0;
}
static const gp_metrics_plugin host = {
    .acquire = h_acq, .release = h_rel, .config_image = h_img, .passes = h_passes};
static void *ctx(void)
{
    return &tok;
}
static void no_ranges(void *u, const fl_perf_row *r, size_t n)
{
    (void)u, (void)r, (void)n;
}
static const fl_trace_sink sink = {.perf_ranges = no_ranges};

static int cmp(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return x < y ? -1 : x > y;
}

/* ns per outermost pair; drains the queue every 32 ranges, untimed. */
static double pairs(int n, double *eval_ns)
{
    uint64_t timed = 0, drain = 0;
    for (int i = 0; i < n; i += 32) {
        uint64_t t0 = gp_now_mono_ns();
        for (int k = 0; k < 32; k++) {
            gpufl_scope s = gpufl_scope_begin("step");
            gpufl_scope_end(&s);
        }
        uint64_t t1 = gp_now_mono_ns();
        fl_rp_engine_drain(&sink);
        drain += gp_now_mono_ns() - t1;
        timed += t1 - t0;
    }
    if (eval_ns)
        *eval_ns = (double)drain / n;
    return (double)timed / n;
}

int main(int argc, char **argv)
{
    int n = argc > 1 ? atoi(argv[1]) : 200000;
    char dir[] = "/tmp/bench_rangeprof.XXXXXX";
    if (!mkdtemp(dir))
        return 1;
    gpufl_init_options o;
    gpufl_init_options_init(&o);
    o.app_name = "bench";
    o.log_path = dir;
    o.backend = GPUFL_BACKEND_NONE;
    gpufl_error err;
    if (gpufl_init(&o, &err) != GPUFL_OK) {
        fprintf(stderr, "bench_rangeprof: %s\n", err.message);
        return 1;
    }
    fl_rp_set_api(&api);
    fl_trace_options to = {.range_profiler = true};
    fl_engine_env env = {.host = &host, .current_ctx = ctx};
    fl_rp_engine_start(&to, &env);
    double a[5], b[5], c[5];
    for (int r = 0; r < 5; r++) {
        fl_scope_set_range_hooks(NULL, NULL);
        a[r] = pairs(n, NULL);
        fl_scope_set_range_hooks(fl_rp_range_begin, fl_rp_range_end);
        b[r] = pairs(n, &c[r]);
    }
    fl_scope_set_range_hooks(NULL, NULL);
    qsort(a, 5, sizeof *a, cmp);
    qsort(b, 5, sizeof *b, cmp);
    qsort(c, 5, sizeof *c, cmp);
    printf("outermost scope pair, hooks NULL:            %.1f ns\n", a[2]);
    printf("outermost scope pair, range profiler hooks:  %.1f ns (CUPTI no-op, %d-byte image)\n",
           b[2], IMAGE_BYTES);
    printf("writer: evaluation per range (fake, 6 metrics): %.1f ns\n", c[2]);
    fl_rp_engine_stop();
    fl_rp_engine_release();
    gpufl_shutdown();
    return 0;
}
