/*
 * test_metrics_api.c - gp_metrics_* (include/gpu_metrics.h) without the
 * CUPTI plugin: every call answers GP_ERR_NOT_SUPPORTED with the loader's
 * message, never crashes; and the name functions.  The calls with the real
 * plugin are tests/cupti/test_metrics.c.
 */
#include "check.h"
#include "gpu_metrics.h"
#include "gpu_profile.h"

#include <stdlib.h>

int main(void)
{
    setenv("GPUFL_CUPTI_PLUGIN", "/nonexistent/libgpuprofile_cupti.so", 1);
    CHECK_STR(gp_metric_type_name(GP_METRIC_COUNTER), "counter");
    CHECK_STR(gp_metric_type_name(GP_METRIC_RATIO), "ratio");
    CHECK_STR(gp_metric_type_name(GP_METRIC_THROUGHPUT), "throughput");
    CHECK(gp_metric_type_name((gp_metric_type)7) == NULL);
    CHECK_STR(gp_metrics_profiler_name(GP_METRICS_RANGE), "range");
    CHECK_STR(gp_metrics_profiler_name(GP_METRICS_PM_SAMPLING), "pm");
    CHECK_STR(gp_metric_scope_name(GP_METRIC_SCOPE_UNKNOWN), "unknown");
    CHECK_STR(gp_strerror(GP_ERR_CUPTI), "CUPTI error");

    char **list = (char **)&list;
    size_t n = 9;
    gp_error err = {0};
    CHECK_INT(gp_metrics_chips(&list, &n, &err), GP_ERR_NOT_SUPPORTED);
    CHECK(list == NULL && n == 0);
    CHECK_INT(err.status, GP_ERR_NOT_SUPPORTED);
    CHECK_CONTAINS(err.message, "/nonexistent/libgpuprofile_cupti.so");
    CHECK_CONTAINS(err.message, "build gpu-profile with a CUDA toolkit");
    gp_metrics_host *h = (gp_metrics_host *)&h;
    CHECK_INT(gp_metrics_host_create("GH100", GP_METRICS_RANGE, &h, &err), GP_ERR_NOT_SUPPORTED);
    CHECK(h == NULL);
    CHECK_INT(gp_metrics_host_create(NULL, GP_METRICS_RANGE, &h, &err), GP_ERR_INVALID_ARG);
    size_t max = 1;
    CHECK_INT(gp_metrics_max_per_pass("GH100", GP_METRICS_RANGE, &max, &err), GP_ERR_NOT_SUPPORTED);
    CHECK_INT(gp_metrics_single_pass_sets("GH100", &list, &n, &err), GP_ERR_NOT_SUPPORTED);
    uint8_t img[4] = {1, 2, 3, 4};
    size_t passes = 1;
    CHECK_INT(gp_metrics_passes(img, sizeof img, &passes, &err), GP_ERR_NOT_SUPPORTED);
    CHECK_INT(gp_metrics_passes(NULL, 0, &passes, &err), GP_ERR_INVALID_ARG);
    /* the engines' sets: names, profilers, no plugin */
    CHECK_STR(gp_metrics_engine_name(GP_METRICS_ENGINE_RANGE_PROFILER), "RangeProfiler");
    CHECK_STR(gp_metrics_engine_name(GP_METRICS_ENGINE_PM_SAMPLING), "PmSampling");
    CHECK_STR(gp_metrics_engine_name(GP_METRICS_ENGINE_SASS_METRICS), "SassMetrics");
    CHECK(gp_metrics_engine_name((gp_metrics_engine)9) == NULL);
    gp_metrics_profiler prof = GP_METRICS_RANGE;
    CHECK_INT(gp_metrics_engine_profiler(GP_METRICS_ENGINE_PM_SAMPLING, &prof, &err), GP_OK);
    CHECK_INT(prof, GP_METRICS_PM_SAMPLING);
    CHECK_INT(gp_metrics_engine_profiler(GP_METRICS_ENGINE_RANGE_PROFILER, &prof, &err), GP_OK);
    CHECK_INT(prof, GP_METRICS_RANGE);
    CHECK_INT(gp_metrics_engine_profiler(GP_METRICS_ENGINE_SASS_METRICS, &prof, &err),
              GP_ERR_NOT_SUPPORTED);
    CHECK_CONTAINS(err.message, "checked on the device at run time");
    CHECK_INT(gp_metrics_engine_profiler((gp_metrics_engine)9, &prof, &err), GP_ERR_INVALID_ARG);
    unsigned slots[64];
    CHECK_INT(gp_metrics_engine_defaults(GP_METRICS_ENGINE_PM_SAMPLING, &list, &n, slots, 64, &err),
              GP_ERR_NOT_SUPPORTED);
    CHECK(list == NULL && n == 0);
    CHECK_INT(gp_metrics_engine_choose(NULL, GP_METRICS_ENGINE_PM_SAMPLING, NULL, 0, &list, &n,
                                       &passes, &err),
              GP_ERR_INVALID_ARG);
    CHECK_CONTAINS(err.message, "the host is NULL");
    CHECK_U64(gp_metrics_cupti_version(), 0);
    CHECK_U64(gp_metrics_release_cache(), 0);
    gp_metrics_host_destroy(NULL);
    gp_metrics_free_list(NULL);
    gp_metrics_free_image(NULL);
    return check_done("test_metrics_api");
}
