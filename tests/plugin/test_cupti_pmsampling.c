/*
 * test_cupti_pmsampling.c - the PmSampling engine end to end in a session.
 *
 *  - the real plugin and the real libcupti without a driver: PmSampling
 *    falls back (to Monitor: CUPTI's activity calls fail with 999), with
 *    the reason in capture_capabilities and the debug output;
 *  - the fake plugin (the real engine, plugin/engines/pmsamp/pmsamp.c, over the fake CUPTI
 *    of tests/plugin/pm_fake.h, into the core's real writer): the metric
 *    names and pm_sampling_config before the pm_sample_batch rows, exact
 *    rows, the capability's counts, the report's PM section over the files
 *    (the Chrome trace's counter tracks: test_export_gpufl13's golden);
 *  - PM sampling refused (no permission, MIG, virtual GPU): Trace runs, the
 *    reason and its fix in capture_capabilities;
 *  - the options from the environment (metrics, interval), bad values refused.
 */
#include "engine_session.h"

static void test_real_cupti_without_driver(void)
{
    if (access("/dev/nvidiactl", F_OK) == 0) {
        printf("note: a GPU driver is present; the no-driver fallback is not checked here\n");
        return;
    }
    char dir[1024];
    run_session(env_or_die("GP_TEST_PLUGIN"), GPUFL_ENGINE_PM_SAMPLING, dir, sizeof dir);
    fl_log dev;
    CHECK_INT(fl_log_read(&dev, dir, "device"), 0);
    json_t *caps = last_caps(&dev);
    CHECK_STR(str(caps, "requested_engine"), "nvidia.pm_sampling");
    CHECK_STR(str(caps, "selected_engine"), "nvidia.monitor");
    json_t *pm = cap_of(caps, "pm_sampling");
    CHECK_STR(str(pm, "status"), "fallback");
    CHECK_STR(str(pm, "reason_code"), "cupti_unavailable");
    CHECK_CONTAINS(str(pm, "message"), "CUPTI_ERROR_UNKNOWN (999)");
    CHECK_STR(str(cap_of(caps, "pc_sampling"), "status"), "not_requested");
    fl_log_free(&dev);
    CHECK_CONTAINS(g_debug, "profiling_engine PmSampling requested, running Monitor");
}

static void check_report(const char *dir)
{
    char *out = NULL;
    gpufl_error err;
    CHECK_INT(gpufl_report_logs(dir, NULL, &out, NULL, &err), GPUFL_OK);
    if (out) {
        CHECK_CONTAINS(out, "  PM sampling       device 0: every 100 us, up to 4096 samples, "
                            "preset default: sm__cycles_active.avg.pct_of_peak_sustained_elapsed, "
                            "sm__pipe_tensor_cycles_active");
        /* metric m of samples 0..5 (three read at the first drain, three
         * at the read before Stop): 10 m + 0.25 .. 10 m + 5.25 */
        CHECK_CONTAINS(out, "         6          2.750          0.250          5.250  "
                            "sm__cycles_active.avg.pct_of_peak_sustained_elapsed\n");
        CHECK_CONTAINS(out, "         6         32.750         30.250         35.250  "
                            "gr__cycles_active.avg.pct_of_peak_sustained_elapsed\n");
        CHECK_CONTAINS(out, "  pm_sampling           collected: PM sampling every 100 us, 4 "
                            "metrics (default set): 6 samples, 24 rows");
        gpufl_free(out);
    }
}

static void test_fake_pmsampling(void)
{
    unsetenv("FAKE_CUPTI_SCENARIO");
    char dir[1024];
    run_session(env_or_die("GP_TEST_FAKE_PLUGIN"), GPUFL_ENGINE_PM_SAMPLING, dir, sizeof dir);
    fl_log dev, scope;
    CHECK_INT(fl_log_read(&dev, dir, "device"), 0);
    CHECK_INT(fl_log_read(&scope, dir, "scope"), 0);
    CHECK_INT(scope.bad, 0);
    CHECK_STR(str(fl_first(&dev, "job_start"), "profiling_engine"), "nvidia.pm_sampling");
    json_t *caps = last_caps(&dev);
    CHECK_STR(str(caps, "selected_engine"), "nvidia.pm_sampling");
    CHECK_STR(str(fl_first(&dev, "capture_capabilities"), "selected_engine"), "nvidia.pm_sampling");
    json_t *pm = cap_of(caps, "pm_sampling");
    CHECK_STR(str(pm, "status"), "collected");
    CHECK_STR(str(pm, "message"), "PM sampling every 100 us, 4 metrics (default set): 6 samples, "
                                  "24 rows, 3 decodes, 1 devices");
    json_t *cfg = fl_first(&scope, "pm_sampling_config");
    CHECK(cfg != NULL);
    CHECK_INT(json_integer_value(json_object_get(cfg, "interval_us")), 100);
    CHECK_INT(json_integer_value(json_object_get(cfg, "max_samples")), 4096);
    CHECK_STR(str(cfg, "preset"), "default");
    CHECK_INT(json_array_size(json_object_get(cfg, "metrics")), 4);
    size_t metric_line = 0, cfg_line = SIZE_MAX, batch_line = SIZE_MAX;
    CHECK_STR(dict_text(&scope, "metric_dict", "3", &metric_line),
              "dram__throughput.avg.pct_of_peak_sustained_elapsed");
    for (size_t i = 0; i < scope.n; i++) {
        if (cfg_line == SIZE_MAX && strcmp(log_type(scope.lines[i]), "pm_sampling_config") == 0)
            cfg_line = i;
        if (batch_line == SIZE_MAX && strcmp(log_type(scope.lines[i]), "pm_sample_batch") == 0)
            batch_line = i;
    }
    CHECK(metric_line < batch_line && cfg_line < batch_line);
    CHECK_INT(fl_count(&scope, "pm_sampling_config"), 1);
    CHECK_INT(fl_count(&dev, "pm_sample_batch"), 0);
    json_t *b = fl_first(&scope, "pm_sample_batch");
    json_t *row = json_array_get(json_object_get(b, "rows"), 1);
    /* sample 0, metric 2 (id 2): 10 + 0 + 0.25; midpoint at the base + 0 */
    CHECK_INT(json_integer_value(json_array_get(row, 0)), 0);
    CHECK_INT(json_integer_value(json_array_get(row, 1)), 0);
    CHECK_INT(json_integer_value(json_array_get(row, 3)), 2);
    CHECK_NEAR(json_number_value(json_array_get(row, 4)), 10.25, 1e-9);
    fl_log_free(&dev);
    fl_log_free(&scope);
    check_report(dir);
    CHECK_CONTAINS(g_debug, "pm sampling: 6 samples in 24 rows, 3 decodes, 0 overflows");
}

static void test_fake_refused(void)
{
    static const struct {
        const char *scenario, *reason, *fix;
    } cases[] = {
        {"pm_noperm", "insufficient_privilege", "NVreg_RestrictProfilingToAdminUsers=0"},
        {"pm_mig", "mig_device", "not a MIG instance"},
        {"pm_virtual", "virtualized_device", "vGPU"},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        setenv("FAKE_CUPTI_SCENARIO", cases[i].scenario, 1);
        char dir[1024];
        run_session(env_or_die("GP_TEST_FAKE_PLUGIN"), GPUFL_ENGINE_PM_SAMPLING, dir, sizeof dir);
        fl_log dev, scope;
        CHECK_INT(fl_log_read(&dev, dir, "device"), 0);
        CHECK_INT(fl_log_read(&scope, dir, "scope"), 0);
        json_t *caps = last_caps(&dev);
        CHECK_STR(str(caps, "selected_engine"), "nvidia.trace");
        json_t *pm = cap_of(caps, "pm_sampling");
        CHECK_STR(str(pm, "status"), "fallback");
        CHECK_STR(str(pm, "reason_code"), cases[i].reason);
        CHECK_CONTAINS(str(pm, "message"), "cuptiPmSamplingEnable failed");
        CHECK_CONTAINS(str(pm, "message"), cases[i].fix);
        CHECK_STR(str(cap_of(caps, "kernel_events"), "status"), "collected");
        CHECK_INT(fl_count(&scope, "pm_sample_batch"), 0);
        fl_log_free(&dev);
        fl_log_free(&scope);
        CHECK_CONTAINS(g_debug, "profiling_engine PmSampling requested, running Trace: PM "
                                "sampling: cuptiPmSamplingEnable failed");
    }
    unsetenv("FAKE_CUPTI_SCENARIO");
}

static void test_options(void)
{
    unsetenv("FAKE_CUPTI_SCENARIO");
    setenv("GPUFL_PROFILING_ENGINE", "pmsampling", 1);
    setenv("GPUFL_PM_SAMPLING_METRICS", "sm__a, dram__b", 1);
    setenv("GPUFL_PM_SAMPLING_INTERVAL_US", "250", 1);
    setenv("GPUFL_PM_SAMPLING_MAX_SAMPLES", "512", 1);
    char dir[1024];
    run_session(env_or_die("GP_TEST_FAKE_PLUGIN"), GPUFL_ENGINE_MONITOR, dir, sizeof dir);
    fl_log scope;
    CHECK_INT(fl_log_read(&scope, dir, "scope"), 0);
    json_t *cfg = fl_first(&scope, "pm_sampling_config");
    CHECK_INT(json_integer_value(json_object_get(cfg, "interval_us")), 250);
    CHECK_INT(json_integer_value(json_object_get(cfg, "max_samples")), 512);
    CHECK_STR(str(cfg, "preset"), "custom");
    CHECK_STR(json_string_value(json_array_get(json_object_get(cfg, "metrics"), 1)), "dram__b");
    fl_log_free(&scope);
    CHECK_CONTAINS(g_debug, "pm_sampling_interval_us = 250 (env GPUFL_PM_SAMPLING_INTERVAL_US)");
    /* Out of range: refused, naming the variable. */
    setenv("GPUFL_PM_SAMPLING_INTERVAL_US", "2000000", 1);
    gpufl_init_options o;
    gpufl_init_options_init(&o);
    o.log_path = g_tmp;
    o.backend = GPUFL_BACKEND_NONE;
    gpufl_error err;
    CHECK_INT(gpufl_init(&o, &err), GPUFL_ERR_INVALID_ARG);
    CHECK_CONTAINS(err.message, "pm_sampling_interval_us = 2000000 (env "
                                "GPUFL_PM_SAMPLING_INTERVAL_US) is out of range");
    unsetenv("GPUFL_PROFILING_ENGINE");
    unsetenv("GPUFL_PM_SAMPLING_METRICS");
    unsetenv("GPUFL_PM_SAMPLING_INTERVAL_US");
    unsetenv("GPUFL_PM_SAMPLING_MAX_SAMPLES");
}

int main(void)
{
    snprintf(g_tmp, sizeof g_tmp, "/tmp/gp_cupti_pms_%d", (int)getpid());
    srand((unsigned)getpid());
    test_real_cupti_without_driver();
    test_fake_pmsampling();
    test_fake_refused();
    test_options();
    fl_rmtree(g_tmp);
    return check_done("test_cupti_pmsampling");
}
