/*
 * test_cupti_sass_session.c - the SassMetrics engine end to end in a
 * session.
 *
 *  - the real plugin and the real libcupti without a driver: SassMetrics
 *    falls back (to Monitor: CUPTI's activity calls fail with 999), with
 *    the reason in capture_capabilities and in the debug output;
 *  - the fake plugin's "sassmetrics" scenario (the real engine,
 *    plugin/engines/sassmetrics/sassmetrics.c, over the fake SASS Metrics API of sass_fake.h,
 *    into the core's real writer): sass_config on the device channel, the
 *    function and metric dictionaries before the rows, profile_sample_batch
 *    rows of sample_kind 1 with exact values (stall_reason 0 as GPUFlight
 *    writes it, corr_id 0), the counts in capture_capabilities, the report's SASS section;
 *  - SASS metrics refused (no permission, not supported, MIG, vGPU): Trace
 *    runs, the reason and its fix in capture_capabilities and the debug
 *    output;
 *  - kernels outside scopes: no SASS rows by default, every kernel's with
 *    GPUFL_SASS_ALL_KERNELS=1;
 *  - the engine from GPUFL_PROFILING_ENGINE.
 */
#include "engine_session.h"

static void test_real_cupti_without_driver(void)
{
    if (access("/dev/nvidiactl", F_OK) == 0) {
        printf("note: a GPU driver is present; the no-driver fallback is not checked here\n");
        return;
    }
    char dir[1024];
    run_session(env_or_die("GP_TEST_PLUGIN"), GPUFL_ENGINE_SASS_METRICS, dir, sizeof dir);
    fl_log dev;
    CHECK_INT(fl_log_read(&dev, dir, "device"), 0);
    json_t *caps = last_caps(&dev);
    CHECK_STR(str(caps, "requested_engine"), "nvidia.sass_metrics");
    CHECK_STR(str(caps, "selected_engine"), "nvidia.monitor");
    json_t *sm = cap_of(caps, "sass_metrics");
    CHECK_STR(str(sm, "status"), "fallback");
    CHECK_STR(str(sm, "reason_code"), "cupti_unavailable");
    CHECK_CONTAINS(str(sm, "message"), "CUPTI_ERROR_UNKNOWN (999)");
    CHECK_INT(fl_count(&dev, "sass_config"), 0);
    fl_log_free(&dev);
    CHECK_CONTAINS(g_debug, "profiling_engine SassMetrics requested, running Monitor");
    CHECK_CONTAINS(g_debug, "CUPTI_ERROR_UNKNOWN (999)");
}

/* Rows in file order: function, pc, metric, value. */
static void check_rows(const fl_log *scope)
{
    static const json_int_t want[17][4] = {
        {1, 0x40, 1, 100},  {1, 0x40, 2, 3200}, {1, 0x40, 3, 100},  {1, 0x40, 5, 400},
        {1, 0x40, 6, 400},  {1, 0x50, 1, 100},  {1, 0x50, 2, 3200}, {2, 0x30, 1, 50},
        {2, 0x30, 2, 1600}, {2, 0x30, 3, 50},   {2, 0x30, 5, 1600}, {2, 0x30, 6, 200},
        {3, 0x60, 1, 80},   {3, 0x60, 2, 1280}, {3, 0x70, 1, 10},   {3, 0x70, 2, 320},
        {3, 0x70, 10, 8},
    };
    for (size_t r = 0; r < 17; r++) {
        json_t *b = NULL, *row = sample_row(scope, r, &b);
        CHECK(row != NULL);
        if (!row)
            return;
        CHECK_INT(json_array_size(row), 12);
        CHECK_INT(cell(b, row, "corr_id"), 0);
        CHECK_INT(cell(b, row, "device_id"), 0);
        CHECK_INT(cell(b, row, "function_id"), want[r][0]);
        CHECK_INT(cell(b, row, "pc_offset"), want[r][1]);
        CHECK_INT(cell(b, row, "metric_id"), want[r][2]);
        CHECK_INT(cell(b, row, "metric_value"), want[r][3]);
        CHECK_INT(cell(b, row, "stall_reason"), 0); /* as GPUFlight writes it */
        CHECK_INT(cell(b, row, "sample_kind"), 1);
        CHECK_INT(cell(b, row, "scope_name_id"), 0);
        CHECK_INT(cell(b, row, "source_file_id"), 0);
        CHECK_INT(cell(b, row, "source_line"), 0);
    }
    json_t *b = NULL;
    CHECK(sample_row(scope, 17, &b) == NULL);
}

static void test_fake_sassmetrics(void)
{
    setenv("FAKE_CUPTI_SCENARIO", "sassmetrics", 1);
    char dir[1024];
    run_session(env_or_die("GP_TEST_FAKE_PLUGIN"), GPUFL_ENGINE_SASS_METRICS, dir, sizeof dir);
    fl_log dev, scope;
    CHECK_INT(fl_log_read(&dev, dir, "device"), 0);
    CHECK_INT(fl_log_read(&scope, dir, "scope"), 0);
    CHECK_INT(scope.bad, 0);
    CHECK_INT(dev.bad, 0);
    json_t *caps = last_caps(&dev);
    CHECK_STR(str(caps, "selected_engine"), "nvidia.sass_metrics");
    CHECK_STR(str(fl_first(&dev, "capture_capabilities"), "selected_engine"),
              "nvidia.sass_metrics");
    json_t *sm = cap_of(caps, "sass_metrics");
    CHECK_STR(str(sm, "status"), "collected");
    CHECK_STR(str(sm, "message"),
              "10 metrics (1 skipped): 5 patched-instruction records in 17 rows from 1 reads on 1 "
              "contexts; each kernel counted in the first outermost scope it ran in (later "
              "scopes' launches of it are not: CUPTI counts a function until its first read)");
    json_t *src = cap_of(caps, "source_collection");
    CHECK_STR(str(src, "status"), "collected");
    CHECK_STR(str(src, "message"), "0 cubins kept (0 bytes); 17 SASS values without a source line");
    CHECK_STR(str(cap_of(caps, "pc_sampling"), "status"), "not_requested");
    CHECK_STR(str(cap_of(caps, "kernel_events"), "status"), "collected");
    CHECK_CONTAINS(str(cap_of(caps, "kernel_events"), "message"),
                   "; kernels run one at a time (CUPTI's KERNEL activity: beside "
                   "CONCURRENT_KERNEL the SASS metrics count 0)");
    /* sass_config: the ten names CUPTI took, the one it refused. */
    CHECK_INT(fl_count(&dev, "sass_config"), 1);
    json_t *cfg = fl_first(&dev, "sass_config");
    CHECK_INT(json_integer_value(json_object_get(cfg, "device_id")), 0);
    json_t *ok = json_object_get(cfg, "configured_metrics");
    CHECK_INT(json_array_size(ok), 10);
    CHECK_STR(json_string_value(json_array_get(ok, 0)), "smsp__sass_inst_executed");
    CHECK_STR(json_string_value(json_array_get(ok, 9)),
              "smsp__sass_branch_targets_threads_divergent");
    json_t *skipped = json_object_get(cfg, "skipped_metrics");
    CHECK_INT(json_array_size(skipped), 1);
    CHECK_STR(json_string_value(json_array_get(skipped, 0)),
              "smsp__sass_l1tex_data_pipe_lsu_wavefronts_mem_shared");
    CHECK(json_integer_value(json_object_get(cfg, "ts_ns")) > 0);

    size_t fn_line = 0, metric_line = 0, batch_line = SIZE_MAX;
    CHECK_STR(dict_text(&scope, "function_dict", "1", &fn_line), "_Z6vecAddPfS_S_i@");
    CHECK_STR(dict_text(&scope, "function_dict", "2", NULL), "_Z7stridedPfi@");
    CHECK_STR(dict_text(&scope, "function_dict", "3", NULL), "_Z9divergentPi@");
    CHECK_STR(dict_text(&scope, "metric_dict", "1", &metric_line), "smsp__sass_inst_executed");
    CHECK_STR(dict_text(&scope, "metric_dict", "6", NULL), "smsp__sass_sectors_mem_global_ideal");
    CHECK_STR(dict_text(&scope, "metric_dict", "10", NULL),
              "smsp__sass_branch_targets_threads_divergent");
    for (size_t i = 0; i < scope.n && batch_line == SIZE_MAX; i++)
        if (strcmp(log_type(scope.lines[i]), "profile_sample_batch") == 0)
            batch_line = i;
    CHECK(fn_line < batch_line && metric_line < batch_line);
    check_rows(&scope);
    fl_log_free(&dev);
    fl_log_free(&scope);
    CHECK_CONTAINS(g_debug, "sass metrics: 10 metrics (1 skipped) on 1 contexts, 5 records in 17 "
                            "rows from 1 reads");
    unsetenv("FAKE_CUPTI_SCENARIO");
}

static void test_fake_refused(void)
{
    static const struct {
        const char *scenario, *reason, *call, *fix;
    } cases[] = {
        {"sass_noperm", "insufficient_privilege", "cuptiProfilerInitialize failed",
         "NVreg_RestrictProfilingToAdminUsers=0"},
        {"sass_unsupported", "not_supported", "cuptiSassMetricsSetConfig failed",
         "compute capability 7.5 or newer"},
        {"sass_mig", "not_supported", "cuptiSassMetricsGetProperties failed",
         "rather than a MIG instance"},
        {"sass_virtual", "virtualized_device", "cuptiSassMetricsGetProperties failed",
         "virtual GPU (vGPU)"},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        setenv("FAKE_CUPTI_SCENARIO", cases[i].scenario, 1);
        char dir[1024];
        run_session(env_or_die("GP_TEST_FAKE_PLUGIN"), GPUFL_ENGINE_SASS_METRICS, dir, sizeof dir);
        fl_log dev, scope;
        CHECK_INT(fl_log_read(&dev, dir, "device"), 0);
        CHECK_INT(fl_log_read(&scope, dir, "scope"), 0);
        json_t *caps = last_caps(&dev);
        CHECK_STR(str(caps, "selected_engine"), "nvidia.trace");
        json_t *sm = cap_of(caps, "sass_metrics");
        CHECK_STR(str(sm, "status"), "fallback");
        CHECK_STR(str(sm, "reason_code"), cases[i].reason);
        CHECK_CONTAINS(str(sm, "message"), cases[i].call);
        CHECK_CONTAINS(str(sm, "message"), cases[i].fix);
        CHECK_CONTAINS(str(sm, "message"), "the session runs Trace");
        CHECK_STR(str(cap_of(caps, "kernel_events"), "status"), "collected");
        CHECK_INT(fl_count(&scope, "profile_sample_batch"), 0);
        CHECK_CONTAINS(g_debug, "profiling_engine SassMetrics requested, running Trace");
        CHECK_CONTAINS(g_debug, cases[i].fix);
        fl_log_free(&dev);
        fl_log_free(&scope);
    }
    unsetenv("FAKE_CUPTI_SCENARIO");
}

/* A session whose kernels all run outside scopes: by default no SASS
 * read and no rows; with GPUFL_SASS_ALL_KERNELS=1 (the option) the rows of
 * every kernel, read at the flush. */
static void no_scope_session(char *dir, size_t cap)
{
    const char *plugin = env_or_die("GP_TEST_FAKE_PLUGIN");
    setenv("GPUFL_CUPTI_PLUGIN", plugin, 1);
    char base[512];
    snprintf(base, sizeof base, "%s/s%d", g_tmp, rand());
    gpufl_init_options o;
    gpufl_init_options_init(&o);
    o.app_name = "sass_test";
    o.log_path = base;
    o.backend = GPUFL_BACKEND_NONE;
    o.profiling_engine = GPUFL_ENGINE_SASS_METRICS;
    gpufl_error err;
    CHECK_INT(gpufl_init(&o, &err), GPUFL_OK);
    fake_cupti_drive_launch(plugin, 11, false);
    gpufl_flush();
    gpufl_shutdown();
    CHECK_INT(fl_only_session(base, dir, cap), 0);
}

static void test_outside_scopes(void)
{
    setenv("FAKE_CUPTI_SCENARIO", "sassmetrics", 1);
    for (int all = 0; all < 2; all++) {
        if (all)
            setenv("GPUFL_SASS_ALL_KERNELS", "1", 1);
        char dir[1024];
        no_scope_session(dir, sizeof dir);
        unsetenv("GPUFL_SASS_ALL_KERNELS");
        fl_log dev, scope;
        CHECK_INT(fl_log_read(&dev, dir, "device"), 0);
        CHECK_INT(fl_log_read(&scope, dir, "scope"), 0);
        json_t *sm = cap_of(last_caps(&dev), "sass_metrics");
        CHECK_STR(str(last_caps(&dev), "selected_engine"), "nvidia.sass_metrics");
        if (all) {
            CHECK_STR(str(sm, "message"), "10 metrics (1 skipped): 5 patched-instruction records "
                                          "in 17 rows from 1 reads on 1 contexts; every launch of "
                                          "the session counted");
            check_rows(&scope);
        } else {
            CHECK_STR(str(sm, "message"),
                      "10 metrics (1 skipped) on 1 contexts: no instruction was counted (0 reads)");
            CHECK_INT(fl_count(&scope, "profile_sample_batch"), 0);
        }
        fl_log_free(&dev);
        fl_log_free(&scope);
    }
    unsetenv("FAKE_CUPTI_SCENARIO");
}

/* GPUFL_PROFILING_ENGINE=SassMetrics; a plugin without SASS data. */
static void test_options(void)
{
    setenv("FAKE_CUPTI_SCENARIO", "sassmetrics", 1);
    setenv("GPUFL_PROFILING_ENGINE", "SassMetrics", 1);
    char dir[1024];
    run_session(env_or_die("GP_TEST_FAKE_PLUGIN"), GPUFL_ENGINE_MONITOR, dir, sizeof dir);
    unsetenv("GPUFL_PROFILING_ENGINE");
    fl_log dev;
    CHECK_INT(fl_log_read(&dev, dir, "device"), 0);
    CHECK_STR(str(last_caps(&dev), "selected_engine"), "nvidia.sass_metrics");
    fl_log_free(&dev);
    unsetenv("FAKE_CUPTI_SCENARIO");
}

int main(void)
{
    snprintf(g_tmp, sizeof g_tmp, "/tmp/gp_cupti_sass_%d", (int)getpid());
    srand((unsigned)getpid());
    test_real_cupti_without_driver();
    test_fake_sassmetrics();
    test_fake_refused();
    test_outside_scopes();
    test_options();
    fl_rmtree(g_tmp);
    return check_done("test_cupti_sass_session");
}
