/*
 * test_cli_window.c - the scoped engines' window under `gpu-profile
 * --engine ...`: SassMetrics counts kernels inside gpufl scopes unless
 * --sass-all-kernels (GPUFL_SASS_ALL_KERNELS=1 for CMD); RangeProfiler's
 * ranges are scopes.  An unmodified program opens none, so when such a
 * session has kernels but no SASS rows / no range, the summary says why
 * and how to change it; not when the engine fell back (its own line says
 * why), not when there were rows, not when every kernel was asked for.
 * The fake injected child (tests/cli/cli_child.c) writes the sessions.
 */
#include "harness.h"

#include <limits.h>

#define SD "dddddddd-dddd-4ddd-8ddd-dddddddddddd"
#define JOB(s, eng)                                                                                \
    "{\"version\":1,\"type\":\"job_start\",\"pid\":10,\"app\":\"gp_cli_child\",\"session_id\":"    \
    "\"" s "\",\"log_path\":\"x\",\"ts_ns\":1760000000000000000,\"devices\":[],"                   \
    "\"session_kind\":\"trace\",\"profiling_engine\":\"" eng "\"}\n"
#define HEAD(type, s) "{\"version\":1,\"type\":\"" type "\",\"session_id\":\"" s "\""
#define CAPS(s, req, sel)                                                                          \
    HEAD("capture_capabilities", s)                                                                \
    ",\"requested_engine\":\"" req "\",\"selected_engine\":\"" sel "\",\"capabilities\":[]}\n"
#define KERNELS(s)                                                                                 \
    HEAD("dictionary_update", s)                                                                   \
    ",\"kernel_dict\":{\"1\":\"vecAdd\"}}\n" HEAD(                                                 \
        "kernel_event_batch", s) ",\"batch_id\":1,\"base_time_ns\":1760000000001000000,"           \
                                 "\"columns\":[\"dt_ns\",\"kernel_id\",\"duration_ns\"],"          \
                                 "\"rows\":[[0,1,20000],[50000,1,30000]]}\n"
#define END(s)                                                                                     \
    "{\"type\":\"shutdown\",\"pid\":10,\"app\":\"gp_cli_child\",\"session_id\":\"" s               \
    "\",\"ts_ns\":1760000000005000000}\n"

#define HINT_SASS                                                                                  \
    "gpu-profile: trace: SassMetrics counted no kernel: it counts kernels run inside gpufl "       \
    "scopes and none ran inside one (--sass-all-kernels counts every kernel)\n"
#define HINT_RANGE                                                                                 \
    "gpu-profile: trace: RangeProfiler profiled no range: its ranges are gpufl scopes "            \
    "(gpufl_scope_begin, GFL_SCOPE, gpufl.scope) and no kernel ran inside one\n"

static char plugin[PATH_MAX], record[512];

static void setup(void)
{
    char p[512];
    h_path(p, sizeof p, "fake-cupti.so");
    h_write_file(p, "not really a plugin\n", 20);
    CHECK(realpath(p, plugin) != NULL);
    h_path(record, sizeof record, "logpath.txt");
    h_scenario("device 0\n");
    h_clear_inject_env();
}

/* Runs `gpu-profile --backend none [flag] --engine ENGINE -- child inject`
 * writing session text; *r is the result. */
static void run(const char *engine, const char *flag, const char *session, const char *extra_env,
                h_result *r)
{
    char f[512], env_plugin[PATH_MAX + 32];
    h_path(f, sizeof f, "session.log");
    h_write_file(f, session, strlen(session));
    snprintf(env_plugin, sizeof env_plugin, "GPUFL_CUPTI_PLUGIN=%s", plugin);
    const char *env[] = {env_plugin, extra_env, NULL};
    const char *a[20];
    int n = 0;
    a[n++] = h_cli;
    a[n++] = "--backend";
    a[n++] = "none";
    if (flag)
        a[n++] = flag;
    a[n++] = "--engine";
    a[n++] = engine;
    a[n++] = "--";
    a[n++] = h_child;
    a[n++] = "inject";
    a[n++] = plugin;
    a[n++] = "gp_cli_child";
    a[n++] = engine;
    a[n++] = record;
    a[n++] = "0";
    a[n++] = SD;
    a[n++] = f;
    a[n] = NULL;
    h_run(a, env, NULL, 0, r);
    remove(record);
}

static const char sass_empty[] = JOB(SD, "nvidia.sass_metrics")
    CAPS(SD, "nvidia.sass_metrics", "nvidia.sass_metrics") KERNELS(SD) END(SD);
static const char sass_fell_back[] = JOB(SD, "nvidia.sass_metrics") HEAD(
    "capture_capabilities",
    SD) ",\"requested_engine\":\"nvidia.sass_metrics\",\"selected_engine\":\"nvidia.trace\","
        "\"capabilities\":[{\"feature\":\"sass_metrics\",\"requested\":true,\"status\":"
        "\"fallback\",\"mode\":\"\",\"reason_code\":\"unsupported_device\",\"message\":\"no SASS "
        "metrics here\"}]}\n" KERNELS(SD) END(SD);
static const char sass_rows[] = JOB(SD, "nvidia.sass_metrics") CAPS(
    SD, "nvidia.sass_metrics", "nvidia.sass_metrics") KERNELS(SD)
    HEAD("dictionary_update", SD) ",\"metric_dict\":{\"4\":\"smsp__sass_inst_executed\"}}\n" HEAD(
        "profile_sample_batch",
        SD) ",\"batch_id\":1,\"base_time_ns\":1760000000004500000,\"columns\":[\"dt_ns\",\"corr_"
            "id\","
            "\"device_id\",\"function_id\",\"pc_offset\",\"metric_id\",\"metric_value\",\"stall_"
            "reason\","
            "\"sample_kind\",\"scope_name_id\",\"source_file_id\",\"source_line\"],"
            "\"rows\":[[0,0,0,1,64,4,100,0,1,0,0,0]]}\n" END(SD);
static const char range_empty[] = JOB(SD, "nvidia.range_profiler")
    CAPS(SD, "nvidia.range_profiler", "nvidia.range_profiler") KERNELS(SD) END(SD);
static const char range_one[] =
    JOB(SD, "nvidia.range_profiler") CAPS(SD, "nvidia.range_profiler", "nvidia.range_profiler")
        KERNELS(SD) HEAD("perf_metric_event", SD) ",\"name\":\"step\",\"user_scope\":\"step\","
                                                  "\"scope_depth\":0,\"start_ns\":1,\"end_ns\":2,"
                                                  "\"metrics\":{}}\n" END(SD);
static const char no_kernels[] = JOB(SD, "nvidia.range_profiler")
    CAPS(SD, "nvidia.range_profiler", "nvidia.range_profiler") END(SD);

static void test_sass(void)
{
    h_result r;
    run("SassMetrics", NULL, sass_empty, NULL, &r);
    CHECK_INT(r.code, 0);
    CHECK_CONTAINS(r.err, "  kernels           2 launches");
    CHECK_CONTAINS(r.err, HINT_SASS);
    h_result_free(&r);
    /* Deep's SASS half has the same window. */
    run("Deep", NULL, sass_empty, NULL, &r);
    CHECK_INT(r.code, 0);
    CHECK_CONTAINS(r.err, HINT_SASS);
    h_result_free(&r);
    /* Every kernel was asked for: no hint (the child got the variable). */
    run("SassMetrics", "--sass-all-kernels", sass_empty, NULL, &r);
    CHECK_INT(r.code, 0);
    CHECK(!strstr(r.err, "SassMetrics counted no kernel"));
    h_result_free(&r);
    run("SassMetrics", NULL, sass_empty, "GPUFL_SASS_ALL_KERNELS=yes", &r);
    CHECK_INT(r.code, 0);
    CHECK(!strstr(r.err, "SassMetrics counted no kernel"));
    h_result_free(&r);
    /* Fell back: the fallback line says why, no hint. */
    run("SassMetrics", NULL, sass_fell_back, NULL, &r);
    CHECK_INT(r.code, 0);
    CHECK_CONTAINS(r.err, "gpu-profile: trace: fallback to Trace in 1 of 1 process");
    CHECK(!strstr(r.err, "SassMetrics counted no kernel"));
    h_result_free(&r);
    /* Rows: the sass line, no hint. */
    run("SassMetrics", NULL, sass_rows, NULL, &r);
    CHECK_INT(r.code, 0);
    CHECK_CONTAINS(r.err, "  sass metrics      1 row  100 instructions\n");
    CHECK(!strstr(r.err, "SassMetrics counted no kernel"));
    h_result_free(&r);
}

static void test_range(void)
{
    h_result r;
    run("RangeProfiler", NULL, range_empty, NULL, &r);
    CHECK_INT(r.code, 0);
    CHECK_CONTAINS(r.err, HINT_RANGE);
    CHECK(!strstr(r.err, "SassMetrics counted"));
    h_result_free(&r);
    run("RangeProfiler", NULL, range_one, NULL, &r);
    CHECK_INT(r.code, 0);
    CHECK(!strstr(r.err, "RangeProfiler profiled no range"));
    h_result_free(&r);
    /* No kernel at all: nothing to explain. */
    run("RangeProfiler", NULL, no_kernels, NULL, &r);
    CHECK_INT(r.code, 0);
    CHECK(!strstr(r.err, "RangeProfiler profiled no range"));
    h_result_free(&r);
}

/* The flag: the child gets GPUFL_SASS_ALL_KERNELS=1; only with the SASS
 * engines (125, CMD not run, otherwise). */
static void test_flag(void)
{
    char marker[512], env_plugin[PATH_MAX + 32];
    h_path(marker, sizeof marker, "ran");
    snprintf(env_plugin, sizeof env_plugin, "GPUFL_CUPTI_PLUGIN=%s", plugin);
    const char *env[] = {env_plugin, NULL};
    h_result r;
    const char *a1[] = {h_cli,
                        "-q",
                        "--engine",
                        "deep",
                        "--sass-all-kernels",
                        "--",
                        h_child,
                        "env",
                        "GPUFL_SASS_ALL_KERNELS",
                        "1",
                        NULL};
    h_run(a1, env, NULL, 0, &r);
    CHECK_INT(r.code, 0);
    h_result_free(&r);
    const char *a2[] = {h_cli,   "--engine", "pcsampling", "--sass-all-kernels", "--", h_child,
                        "touch", marker,     NULL};
    h_run(a2, env, NULL, 0, &r);
    CHECK_INT(r.code, 125);
    CHECK_STR(r.err, "gpu-profile: --sass-all-kernels needs --engine sassmetrics or --engine "
                     "deep: the kernels SassMetrics counts\n");
    CHECK(!h_exists(marker));
    h_result_free(&r);
}

int main(void)
{
    h_init();
    setup();
    test_sass();
    test_range();
    test_flag();
    h_cleanup();
    return check_done("test_cli_window");
}
