/*
 * bench_sassscope.c - what SASS metrics' default mode (kernels inside
 * outermost scopes only) costs the application's thread per outermost
 * scope pair, CUPTI's calls and the device synchronise excluded (injected
 * as no-ops: a real Enable, cuCtxSynchronize, GetDataProperties/FlushData
 * and Disable add CUPTI's, the driver's and the GPU's time, which only a
 * GPU run shows - the synchronise waits for the scope's kernels).
 *
 *   A  gpufl_scope_begin/end pair, outermost, hooks NULL (every engine but
 *      RangeProfiler and SassMetrics/Deep without sass_all_kernels)
 *   B  the same pair through the plugin's scope hooks (scope_hooks.c) with
 *      SASS metrics selected: the engine's lock three times, the context
 *      lookups, Enable / sync / GetDataProperties / Disable as no-ops
 *
 * Usage: bench_sassscope [pairs]   (default 200000); median of 5 runs.
 */
#include "../plugin/scope_hooks.h"
#include "../plugin/engines/sassmetrics/sassmetrics.h"
#include "recorder/scope.h"
#include "util/clock.h"
#include "gpufl.h"

#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

static int tok;
static CUptiResult ok0(void *p)
{
    (void)p;
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
static CUptiResult props(CUpti_SassMetrics_GetProperties_Params *p)
{
    p->metric.metricId = 1;
    return CUPTI_SUCCESS;
}
#define OK(t) ((CUptiResult(*)(t *))ok0)
static const fl_sass_api api = {
    .profiler_init = OK(CUpti_Profiler_Initialize_Params),
    .profiler_deinit = OK(CUpti_Profiler_DeInitialize_Params),
    .chip_name = chip,
    .get_properties = props,
    .set_config = OK(CUpti_SassMetricsSetConfig_Params),
    .unset_config = OK(CUpti_SassMetricsUnsetConfig_Params),
    .enable = OK(CUpti_SassMetricsEnable_Params),
    .disable = OK(CUpti_SassMetricsDisable_Params),
    .data_properties = OK(CUpti_SassMetricsGetDataProperties_Params),
    .flush_data = OK(CUpti_SassMetricsFlushData_Params),
    .device_id = dev,
};
static void *ctx(void)
{
    return &tok;
}
static int sync0(void)
{
    return 0;
}

static int cmp(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return x < y ? -1 : x > y;
}

/* ns per outermost pair. */
static double pairs(int n)
{
    uint64_t t0 = gp_now_mono_ns();
    for (int i = 0; i < n; i++) {
        gpufl_scope s = gpufl_scope_begin("step");
        gpufl_scope_end(&s);
    }
    return (double)(gp_now_mono_ns() - t0) / n;
}

int main(int argc, char **argv)
{
    int n = argc > 1 ? atoi(argv[1]) : 200000;
    char dir[] = "/tmp/bench_sassscope.XXXXXX";
    if (!mkdtemp(dir))
        return 1;
    gpufl_init_options o;
    gpufl_init_options_init(&o);
    o.app_name = "bench";
    o.log_path = dir;
    o.backend = GPUFL_BACKEND_NONE;
    gpufl_error err;
    if (gpufl_init(&o, &err) != GPUFL_OK) {
        fprintf(stderr, "bench_sassscope: %s\n", err.message);
        return 1;
    }
    fl_sass_set_api(&api);
    fl_trace_options to = {.sass_metrics = true};
    fl_engine_env env = {.current_ctx = ctx, .ctx_synchronize = sync0};
    fl_sass_engine_start(&to, &tok, &env);
    fl_scope_hooks_select(&to);
    double a[5], b[5];
    for (int r = 0; r < 5; r++) {
        fl_scope_set_range_hooks(NULL, NULL);
        a[r] = pairs(n);
        fl_scope_set_range_hooks(fl_scope_hooks_begin, fl_scope_hooks_end);
        b[r] = pairs(n);
    }
    fl_scope_set_range_hooks(NULL, NULL);
    qsort(a, 5, sizeof *a, cmp);
    qsort(b, 5, sizeof *b, cmp);
    printf("outermost scope pair, hooks NULL:                 %.1f ns\n", a[2]);
    printf("outermost scope pair, SASS scope hooks (no-op CUPTI and sync): %.1f ns\n", b[2]);
    fl_sass_engine_stop();
    fl_sass_engine_drain(NULL);
    fl_sass_engine_release();
    fl_sass_set_api(NULL);
    gpufl_shutdown();
    return 0;
}
