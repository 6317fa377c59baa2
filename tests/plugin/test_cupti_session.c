/*
 * test_cupti_session.c - the Trace engine end to end in a session.
 *
 *  - the real plugin and the real libcupti on a machine without a driver:
 *    every activity call fails (CUPTI_ERROR_UNKNOWN), so init says why,
 *    records the fallback with CUPTI's message and runs Monitor;
 *  - the fake plugin (tests/fakes/fake_cupti_plugin.c: synthetic CUPTI
 *    buffers through the real decoder) drives the core's real writer: the
 *    kernel dictionary before the batches, batches and details with
 *    occupancy, memcpy / memset / sync records, NVTX ranges and graph
 *    launches as GPUFlight's nvtx_marker_event and graph_launch_event (a
 *    range still open at shutdown written then),
 *    records delivered by the flush at shutdown, CUPTI's refusals and
 *    dropped records in capture_capabilities, engines above Trace;
 *  - CUDA and NVML numbering the devices differently: job_start's lists
 *    joined by uuid, in the writer and the report.
 */
#include "fl_log.h"
#include "fakes/fake_cupti_driver.h"
#include "abi/trace_abi.h"
#include "gpufl.h"

#include <stdbool.h>

#include <dlfcn.h>
#include <unistd.h>

static char g_tmp[256];

static const char *env_or_die(const char *name)
{
    const char *v = getenv(name);
    if (!v || !*v) {
        fprintf(stderr, "%s is not set (run through ctest)\n", name);
        exit(2);
    }
    return v;
}

/* Runs one session with engine and the plugin at plugin_env: launch 13
 * outside any scope, launches 11 and 12 inside train > step, a flush
 * there; leaves the session directory in dir. */
static void run_session(const char *plugin, gpufl_engine engine, bool graphs, char *dir, size_t cap)
{
    setenv("GPUFL_CUPTI_PLUGIN", plugin, 1);
    char base[512];
    snprintf(base, sizeof base, "%s/s%d", g_tmp, rand());
    gpufl_init_options o;
    gpufl_init_options_init(&o);
    o.app_name = "trace_test";
    o.log_path = base;
    o.backend = GPUFL_BACKEND_NONE;
    o.profiling_engine = engine;
    o.enable_cuda_graphs_tracking = graphs;
    gpufl_error err;
    CHECK_INT(gpufl_init(&o, &err), GPUFL_OK);
    fake_cupti_drive_launch(plugin, 13, false);
    gpufl_scope outer = gpufl_scope_begin("train");
    gpufl_scope sc = gpufl_scope_begin("step");
    fake_cupti_drive_launch(plugin, 11, false);
    fake_cupti_drive_launch(plugin, 12, false);
    gpufl_flush();
    gpufl_scope_end(&sc);
    gpufl_scope_end(&outer);
    gpufl_shutdown();
    CHECK_INT(fl_only_session(base, dir, cap), 0);
}

static json_t *last_caps(const fl_log *log)
{
    json_t *c = NULL;
    for (size_t i = 0; i < log->n; i++)
        if (strcmp(log_type(log->lines[i]), "capture_capabilities") == 0)
            c = log->lines[i];
    return c;
}

static json_t *cap_of(json_t *caps, const char *feature)
{
    json_t *list = json_object_get(caps, "capabilities");
    for (size_t i = 0; i < json_array_size(list); i++) {
        json_t *c = json_array_get(list, i);
        if (strcmp(json_string_value(json_object_get(c, "feature")), feature) == 0)
            return c;
    }
    return NULL;
}

static const char *str(json_t *o, const char *key)
{
    const char *s = json_string_value(json_object_get(o, key));
    return s ? s : "(none)";
}

/* ------------------------------------------------------------ real CUPTI */

static void test_real_cupti_without_driver(void)
{
    if (access("/dev/nvidiactl", F_OK) == 0) {
        printf("note: a GPU driver is present; the no-driver fallback is not checked here\n");
        return;
    }
    char dir[1024];
    run_session(env_or_die("GP_TEST_PLUGIN"), GPUFL_ENGINE_TRACE, false, dir, sizeof dir);
    fl_log dev;
    CHECK_INT(fl_log_read(&dev, dir, "device"), 0);
    json_t *js = fl_first(&dev, "job_start");
    CHECK_STR(str(js, "session_kind"), "monitor");
    json_t *caps = last_caps(&dev);
    CHECK_STR(str(caps, "requested_engine"), "nvidia.trace");
    CHECK_STR(str(caps, "selected_engine"), "nvidia.monitor");
    json_t *k = cap_of(caps, "kernel_events");
    CHECK_STR(str(k, "status"), "fallback");
    CHECK_STR(str(k, "reason_code"), "cupti_unavailable");
    CHECK_CONTAINS(str(k, "message"),
                   "cuptiActivityEnable(CONCURRENT_KERNEL) failed: CUPTI_ERROR_UNKNOWN (999)");
    /* No libcuda.so.1 to load (this machine): the cause is named before
     * CUPTI's code (issue 32); with one (a driver whose GPU is absent or
     * broken) it is not. */
    void *cuda = dlopen("libcuda.so.1", RTLD_LAZY | RTLD_LOCAL);
    if (cuda) {
        CHECK(strstr(str(k, "message"), "no NVIDIA driver") == NULL);
        dlclose(cuda);
    } else {
        CHECK_CONTAINS(str(k, "message"),
                       "no NVIDIA driver (libcuda.so.1 not found): cuptiActivityEnable("
                       "CONCURRENT_KERNEL) failed: CUPTI_ERROR_UNKNOWN (999)");
    }
    CHECK_INT(fl_count(&dev, "kernel_event_batch"), 0);
    CHECK_INT(fl_count(&dev, "shutdown"), 1);
    fl_log_free(&dev);

    /* The engine can be asked for again in the same process. */
    run_session(env_or_die("GP_TEST_PLUGIN"), GPUFL_ENGINE_TRACE, false, dir, sizeof dir);
    CHECK_INT(fl_log_read(&dev, dir, "device"), 0);
    CHECK_STR(str(last_caps(&dev), "selected_engine"), "nvidia.monitor");
    fl_log_free(&dev);
}

/* A plugin built from other headers (one row struct larger, the ABI
 * number the same) is refused at load, naming the struct and both sizes;
 * the session runs Monitor and says why. */
static void test_stale_plugin_refused(void)
{
    char dir[1024];
    run_session(env_or_die("GP_TEST_FAKE_PLUGIN_STALE"), GPUFL_ENGINE_TRACE, false, dir,
                sizeof dir);
    fl_log dev;
    CHECK_INT(fl_log_read(&dev, dir, "device"), 0);
    CHECK_STR(str(fl_first(&dev, "job_start"), "session_kind"), "monitor");
    json_t *caps = last_caps(&dev);
    CHECK_STR(str(caps, "selected_engine"), "nvidia.monitor");
    json_t *k = cap_of(caps, "kernel_events");
    CHECK_STR(str(k, "status"), "fallback");
    CHECK_STR(str(k, "reason_code"), "cupti_unavailable");
    char want[256];
    snprintf(want, sizeof want,
             "was built with fl_kernel_row of %zu bytes, this library with %zu: install the "
             "plugin built with this library",
             sizeof(fl_kernel_row) + 8, sizeof(fl_kernel_row));
    CHECK_CONTAINS(str(k, "message"), want);
    CHECK_INT(fl_count(&dev, "kernel_event_batch"), 0);
    fl_log_free(&dev);
}

/* ------------------------------------------------------------ fake plugin */

static json_t *dict_entry(const fl_log *log, const char *dict, const char *id, size_t *line)
{
    for (size_t i = 0; i < log->n; i++) {
        json_t *d = json_object_get(log->lines[i], dict);
        if (d && json_object_get(d, id)) {
            if (line)
                *line = i;
            return json_object_get(d, id);
        }
    }
    return NULL;
}

static json_t *detail_of(const fl_log *log, json_int_t corr)
{
    for (size_t i = 0; i < log->n; i++)
        if (strcmp(log_type(log->lines[i]), "kernel_detail") == 0 &&
            fl_int(log->lines[i], "corr_id") == corr)
            return log->lines[i];
    return NULL;
}

static void test_fake_trace(void)
{
    setenv("FAKE_CUPTI_SCENARIO", "ok", 1);
    char flushed[512];
    snprintf(flushed, sizeof flushed, "%s.flushed", g_tmp);
    unlink(flushed);
    setenv("FAKE_CUPTI_FLUSH_FILE", flushed, 1);
    char dir[1024];
    run_session(env_or_die("GP_TEST_FAKE_PLUGIN"), GPUFL_ENGINE_TRACE, false, dir, sizeof dir);
    /* The writer asked the plugin for CUPTI's partly filled buffers. */
    CHECK(access(flushed, F_OK) == 0);
    unlink(flushed);
    unsetenv("FAKE_CUPTI_FLUSH_FILE");
    fl_log dev, scope;
    CHECK_INT(fl_log_read(&dev, dir, "device"), 0);
    CHECK_INT(fl_log_read(&scope, dir, "scope"), 0);
    CHECK_INT(dev.bad, 0);
    CHECK_INT(scope.bad, 0);

    json_t *js = fl_first(&dev, "job_start");
    CHECK_STR(str(js, "session_kind"), "trace");
    CHECK_STR(str(js, "profiling_engine"), "nvidia.trace");
    json_t *cs = json_array_get(json_object_get(js, "cuda_static_devices"), 0);
    CHECK_STR(str(cs, "name"), "Fake H100");
    CHECK_STR(str(cs, "architecture"), "Hopper");
    CHECK_INT(fl_int(cs, "compute_major"), 9);
    CHECK_INT(fl_int(cs, "multi_processor_count"), 132);
    CHECK_INT(fl_int(cs, "l2_cache_size_bytes"), 52428800);

    /* Names in kernel_dict (demangled) before the first batch. */
    size_t dict_line = 0, batch_line = 0;
    json_t *n1 = dict_entry(&dev, "kernel_dict", "1", &dict_line);
    CHECK_STR(json_string_value(n1), "vecAdd(float*, float*, float*, int)");
    CHECK_STR(json_string_value(dict_entry(&dev, "kernel_dict", "2", NULL)),
              "gemm(float const*, float const*, float*)");
    for (size_t i = 0; i < dev.n; i++)
        if (strcmp(log_type(dev.lines[i]), "kernel_event_batch") == 0) {
            batch_line = i;
            break;
        }
    CHECK(dict_line < batch_line);

    /* Kernel rows: three from the first buffer, one from the flush at
     * shutdown.  One kernel_detail per launch: has_details everywhere. */
    json_int_t corr[8], has[8], ext[8], kid[8];
    size_t nk = 0;
    for (size_t i = 0; i < dev.n; i++) {
        json_t *b = dev.lines[i];
        if (strcmp(log_type(b), "kernel_event_batch") != 0)
            continue;
        json_t *rows = json_object_get(b, "rows");
        for (size_t r = 0; r < json_array_size(rows) && nk < 8; r++, nk++) {
            json_t *row = json_array_get(rows, r);
            corr[nk] = json_integer_value(json_array_get(row, (size_t)fl_col(b, "corr_id")));
            has[nk] = json_integer_value(json_array_get(row, (size_t)fl_col(b, "has_details")));
            ext[nk] = json_integer_value(json_array_get(row, (size_t)fl_col(b, "external_id")));
            kid[nk] = json_integer_value(json_array_get(row, (size_t)fl_col(b, "kernel_id")));
        }
    }
    CHECK_INT(nk, 4);
    CHECK_INT(corr[0], 11);
    CHECK_INT(corr[3], 16);
    for (size_t i = 0; i < 4; i++)
        CHECK_INT(has[i], 1);
    CHECK_INT(ext[0], 4242);
    CHECK_INT(ext[1], 0);
    CHECK_INT(kid[0], 1);
    CHECK_INT(kid[2], 2);
    CHECK_INT(fl_count(&dev, "kernel_detail"), 4);
    /* 12 repeats 11's configuration: the same detail, its own corr_id. */
    CHECK_STR(str(detail_of(&dev, 12), "grid"), "(4096,1,1)");
    CHECK_STR(str(detail_of(&dev, 12), "user_scope"), "train|step");
    /* No stack collected: "" (GPUFlight groups hotspots by it); CUPTI
     * gives no constant-memory size: null. */
    CHECK_STR(str(detail_of(&dev, 12), "stack_trace"), "");
    CHECK(json_is_null(json_object_get(detail_of(&dev, 12), "const_bytes")));

    /* 256 threads, 16 registers on an H100: 8 blocks, warp-limited. */
    json_t *d11 = detail_of(&dev, 11);
    CHECK_STR(str(d11, "grid"), "(4096,1,1)");
    CHECK_STR(str(d11, "block"), "(256,1,1)");
    CHECK_NEAR(json_number_value(json_object_get(d11, "occupancy")), 1.0, 1e-9);
    CHECK_STR(str(d11, "limiting_resource"), "warps");
    CHECK_INT(fl_int(d11, "max_active_blocks"), 8);
    CHECK_STR(str(d11, "user_scope"), "train|step");
    /* 256 threads x 64 registers: 2048 per warp, 8 warps per sub-partition,
     * 32 warps = 4 blocks: 50 %, register-limited. */
    json_t *d13 = detail_of(&dev, 13);
    CHECK_NEAR(json_number_value(json_object_get(d13, "occupancy")), 0.5, 1e-9);
    CHECK_STR(str(d13, "limiting_resource"), "registers");
    CHECK_INT(fl_int(d13, "max_active_blocks"), 4);
    CHECK_INT(fl_int(d13, "static_shared"), 8192);
    CHECK_STR(str(d13, "user_scope"), "global");
    /* No launch callback saw 16: not attributed. */
    CHECK(json_is_null(json_object_get(detail_of(&dev, 16), "user_scope")));
    CHECK(detail_of(&dev, 16) != NULL);
    CHECK_STR(str(detail_of(&dev, 16), "grid"), "(8192,1,1)");

    /* memcpy: one before, one from the final flush; memset as an event. */
    size_t n_memcpy_rows = 0;
    for (size_t i = 0; i < dev.n; i++)
        if (strcmp(log_type(dev.lines[i]), "memcpy_event_batch") == 0)
            n_memcpy_rows += json_array_size(json_object_get(dev.lines[i], "rows"));
    CHECK_INT(n_memcpy_rows, 2);
    json_t *ms = fl_first(&dev, "memset_event");
    CHECK_INT(fl_int(ms, "bytes"), 1024);
    CHECK_INT(fl_int(ms, "corr_id"), 14);

    /* Sync in the scope channel; the NVTX range as GPUFlight's
     * nvtx_marker_event, written at its end; no scope rows for it. */
    json_t *sy = fl_first(&scope, "synchronization_event_batch");
    CHECK(sy != NULL);
    json_t *row = json_array_get(json_object_get(sy, "rows"), 0);
    CHECK_INT(json_integer_value(json_array_get(row, (size_t)fl_col(sy, "sync_type"))), 3);
    CHECK_INT(json_integer_value(json_array_get(row, (size_t)fl_col(sy, "duration_ns"))), 2000);
    CHECK_INT(fl_count(&scope, "nvtx_marker_event"), 1);
    json_t *nv = fl_first(&scope, "nvtx_marker_event");
    CHECK_STR(str(nv, "name"), "nvtx_outer");
    CHECK_STR(str(nv, "domain"), "");
    CHECK_INT(fl_int(nv, "marker_id"), 1);
    CHECK_INT(fl_int(nv, "duration_ns"), 61000);
    CHECK_INT(fl_int(nv, "end_ns") - fl_int(nv, "start_ns"), 61000);
    CHECK(json_object_get(nv, "open_at_shutdown") == NULL);
    for (size_t i = 0; i < scope.n; i++) {
        json_t *b = scope.lines[i];
        if (strcmp(log_type(b), "scope_event_batch") != 0)
            continue;
        json_t *rows = json_object_get(b, "rows");
        for (size_t r = 0; r < json_array_size(rows); r++) {
            json_int_t inst = json_integer_value(json_array_get(json_array_get(rows, r), 1));
            CHECK(!(inst & (json_int_t)(1ull << 62)));
        }
    }

    json_t *caps = last_caps(&dev);
    CHECK_STR(str(caps, "selected_engine"), "nvidia.trace");
    json_t *k = cap_of(caps, "kernel_events");
    CHECK_STR(str(k, "status"), "collected");
    CHECK_CONTAINS(str(k, "message"), "4 kernels (4 details), 2 memcpy, 1 memset, 1 sync");
    CHECK_CONTAINS(str(k, "message"), "0 graph launches, 1 NVTX ranges (0 open at shutdown)");
    CHECK_CONTAINS(str(k, "message"), "CUPTI overhead 0.001 ms in 1 records");
    CHECK(strstr(str(k, "message"), "one at a time") == NULL); /* SASS sessions' only */
    CHECK_STR(str(cap_of(caps, "cuda_graphs"), "status"), "not_requested");
    CHECK_STR(str(cap_of(caps, "stack_trace"), "status"), "not_requested");
    CHECK_STR(str(cap_of(caps, "synchronization"), "status"), "collected");
    CHECK_STR(str(cap_of(caps, "user_scope"), "status"), "collected");
    fl_log_free(&dev);
    fl_log_free(&scope);
}

/* compact_kernel_details (here from GPUFL_COMPACT_KERNEL_DETAILS): a
 * kernel_detail for a new configuration of a kernel only. */
static void test_fake_compact(void)
{
    setenv("FAKE_CUPTI_SCENARIO", "ok", 1);
    setenv("GPUFL_COMPACT_KERNEL_DETAILS", "1", 1);
    char dir[1024];
    run_session(env_or_die("GP_TEST_FAKE_PLUGIN"), GPUFL_ENGINE_TRACE, false, dir, sizeof dir);
    unsetenv("GPUFL_COMPACT_KERNEL_DETAILS");
    fl_log dev;
    CHECK_INT(fl_log_read(&dev, dir, "device"), 0);
    json_int_t has[8];
    size_t nk = 0;
    for (size_t i = 0; i < dev.n; i++) {
        json_t *b = dev.lines[i];
        if (strcmp(log_type(b), "kernel_event_batch") != 0)
            continue;
        json_t *rows = json_object_get(b, "rows");
        for (size_t r = 0; r < json_array_size(rows) && nk < 8; r++, nk++)
            has[nk] = json_integer_value(
                json_array_get(json_array_get(rows, r), (size_t)fl_col(b, "has_details")));
    }
    CHECK_INT(nk, 4);
    CHECK_INT(has[0], 1);
    CHECK_INT(has[1], 0); /* 12: 11's configuration */
    CHECK_INT(has[2], 1);
    CHECK_INT(has[3], 1); /* vecAdd again, other grid */
    CHECK_INT(fl_count(&dev, "kernel_detail"), 3);
    CHECK(detail_of(&dev, 12) == NULL);
    CHECK_CONTAINS(str(cap_of(last_caps(&dev), "kernel_events"), "message"),
                   "4 kernels (3 details)");
    fl_log_free(&dev);
}

/* A graph launch and an NVTX range that never ends: graph_launch_event,
 * and the range written at shutdown with open_at_shutdown, its domain. */
static void test_fake_nvtx_graphs(void)
{
    setenv("FAKE_CUPTI_SCENARIO", "nvtx_graphs", 1);
    char dir[1024];
    run_session(env_or_die("GP_TEST_FAKE_PLUGIN"), GPUFL_ENGINE_TRACE, true, dir, sizeof dir);
    unsetenv("FAKE_CUPTI_SCENARIO");
    fl_log dev, scope;
    CHECK_INT(fl_log_read(&dev, dir, "device"), 0);
    CHECK_INT(fl_log_read(&scope, dir, "scope"), 0);
    CHECK_INT(fl_count(&dev, "graph_event_batch"), 0);
    CHECK_INT(fl_count(&scope, "graph_launch_event"), 1);
    json_t *g = fl_first(&scope, "graph_launch_event");
    CHECK_INT(fl_int(g, "graph_id"), 3);
    CHECK_INT(fl_int(g, "corr_id"), 18);
    CHECK_INT(fl_int(g, "stream_id"), 7);
    CHECK_INT(fl_int(g, "duration_ns"), 8000);
    CHECK_INT(fl_int(g, "end_ns") - fl_int(g, "start_ns"), 8000);
    CHECK(json_object_get(g, "graph_exec_key") == NULL);
    CHECK_INT(fl_count(&scope, "nvtx_marker_event"), 2);
    json_t *open = NULL;
    for (size_t i = 0; i < scope.n; i++)
        if (strcmp(log_type(scope.lines[i]), "nvtx_marker_event") == 0)
            open = scope.lines[i]; /* the last one: written at shutdown */
    CHECK_STR(str(open, "name"), "open_range");
    CHECK_STR(str(open, "domain"), "trainer");
    CHECK(json_is_true(json_object_get(open, "open_at_shutdown")));
    json_t *sd = fl_first(&scope, "shutdown");
    CHECK(fl_int(open, "end_ns") == fl_int(sd, "ts_ns"));
    CHECK_INT(fl_int(open, "duration_ns"), fl_int(open, "end_ns") - fl_int(open, "start_ns"));
    /* Before shutdown in the file. */
    size_t at_open = 0, at_shutdown = 0;
    for (size_t i = 0; i < scope.n; i++) {
        if (scope.lines[i] == open)
            at_open = i;
        if (scope.lines[i] == sd)
            at_shutdown = i;
    }
    CHECK(at_open < at_shutdown);
    json_t *k = cap_of(last_caps(&dev), "kernel_events");
    CHECK_CONTAINS(str(k, "message"), "1 graph launches, 2 NVTX ranges (1 open at shutdown)");
    CHECK_STR(str(cap_of(last_caps(&dev), "cuda_graphs"), "status"), "collected");
    fl_log_free(&dev);
    fl_log_free(&scope);
}

static void test_fake_scenarios(void)
{
    char dir[1024];
    fl_log dev;
    const char *fake = env_or_die("GP_TEST_FAKE_PLUGIN");

    setenv("FAKE_CUPTI_SCENARIO", "graphs_refused", 1);
    run_session(fake, GPUFL_ENGINE_TRACE, true, dir, sizeof dir);
    CHECK_INT(fl_log_read(&dev, dir, "device"), 0);
    json_t *g = cap_of(last_caps(&dev), "cuda_graphs");
    CHECK_STR(str(g, "status"), "fallback");
    CHECK_STR(str(g, "reason_code"), "cupti_refused");
    CHECK_CONTAINS(str(g, "message"), "CUPTI_ERROR_NOT_COMPATIBLE");
    CHECK_STR(str(cap_of(last_caps(&dev), "kernel_events"), "status"), "collected");
    fl_log_free(&dev);

    setenv("FAKE_CUPTI_SCENARIO", "drops", 1);
    run_session(fake, GPUFL_ENGINE_TRACE, false, dir, sizeof dir);
    CHECK_INT(fl_log_read(&dev, dir, "device"), 0);
    json_t *k = cap_of(last_caps(&dev), "kernel_events");
    CHECK_STR(str(k, "status"), "partial");
    CHECK_STR(str(k, "reason_code"), "records_dropped");
    CHECK_CONTAINS(str(k, "message"),
                   "5 activity records dropped by CUPTI, 2 buffer requests refused");
    CHECK_STR(str(cap_of(last_caps(&dev), "memcpy_events"), "status"), "partial");
    /* The opening record still said collected: the last one is the verdict. */
    CHECK_STR(str(cap_of(fl_first(&dev, "capture_capabilities"), "kernel_events"), "status"),
              "collected");
    fl_log_free(&dev);

    setenv("FAKE_CUPTI_SCENARIO", "fail", 1);
    run_session(fake, GPUFL_ENGINE_TRACE, false, dir, sizeof dir);
    CHECK_INT(fl_log_read(&dev, dir, "device"), 0);
    CHECK_STR(str(last_caps(&dev), "selected_engine"), "nvidia.monitor");
    CHECK_STR(str(fl_first(&dev, "job_start"), "session_kind"), "monitor");
    CHECK_CONTAINS(str(cap_of(last_caps(&dev), "kernel_events"), "message"),
                   "CUPTI_ERROR_UNKNOWN (999)");
    fl_log_free(&dev);

    /* A rung above PcSampling: PcSampling runs (its samples in
     * test_cupti_pcsampling.c), the rung says it is not there yet. */
    setenv("FAKE_CUPTI_SCENARIO", "ok", 1);
    run_session(fake, GPUFL_ENGINE_SASS_METRICS, false, dir, sizeof dir);
    CHECK_INT(fl_log_read(&dev, dir, "device"), 0);
    json_t *caps = last_caps(&dev);
    CHECK_STR(str(caps, "requested_engine"), "nvidia.sass_metrics");
    CHECK_STR(str(caps, "selected_engine"), "nvidia.trace");
    CHECK_STR(str(cap_of(caps, "sass_metrics"), "status"), "fallback");
    CHECK_STR(str(cap_of(caps, "sass_metrics"), "reason_code"), "not_implemented");
    CHECK_STR(str(cap_of(caps, "pc_sampling"), "status"), "not_requested");
    CHECK_STR(str(cap_of(caps, "kernel_events"), "status"), "collected");
    fl_log_free(&dev);
    unsetenv("FAKE_CUPTI_SCENARIO");
}

static void test_buffer_options(void)
{
    setenv("GPUFL_CUPTI_MAX_BUFFERS", "300", 1);
    gpufl_init_options o;
    gpufl_init_options_init(&o);
    o.log_path = g_tmp;
    gpufl_error err;
    CHECK_INT(gpufl_init(&o, &err), GPUFL_ERR_INVALID_ARG);
    CHECK_CONTAINS(err.message, "cupti_max_buffers = 300 (env GPUFL_CUPTI_MAX_BUFFERS)");
    CHECK_CONTAINS(err.message, "up to 256");
    unsetenv("GPUFL_CUPTI_MAX_BUFFERS");
    setenv("GPUFL_CUPTI_BUFFER_KIB", "8M", 1);
    CHECK_INT(gpufl_init(&o, &err), GPUFL_ERR_ENV);
    CHECK_CONTAINS(err.message, "GPUFL_CUPTI_BUFFER_KIB=\"8M\" is not a whole number");
    unsetenv("GPUFL_CUPTI_BUFFER_KIB");
    o.cupti_buffer_kib = -1;
    CHECK_INT(gpufl_init(&o, &err), GPUFL_ERR_INVALID_ARG);
    CHECK_CONTAINS(err.message, "cupti_buffer_kib = -1");
}

/* Waits (10 s at most) until the session in dir has written
 * device_metric_batch rows of every one of n devices. */
static void wait_device_rows(const char *dir, int n)
{
    for (int tries = 0; tries < 1000; tries++) {
        gpufl_flush();
        fl_log log;
        int seen = 0;
        if (fl_log_read(&log, dir, "system") == 0) {
            for (size_t i = 0; i < log.n; i++) {
                json_t *b = log.lines[i];
                int c = fl_col(b, "device_id");
                if (strcmp(log_type(b), "device_metric_batch") != 0 || c < 0)
                    continue;
                size_t r;
                json_t *row;
                json_array_foreach(json_object_get(b, "rows"), r, row)
                {
                    json_int_t d = json_integer_value(json_array_get(row, (size_t)c));
                    if (d >= 0 && d < 31)
                        seen |= 1 << d;
                }
            }
            fl_log_free(&log);
        }
        if (seen == (1 << n) - 1)
            return;
        usleep(10000);
    }
    CHECK(!"device rows of every device");
}

/* Issue 32: CUDA and NVML number the devices differently (here CUDA sees
 * only NVML's GPU 1, as under CUDA_VISIBLE_DEVICES=1; then only a MIG
 * instance of it).  job_start's cuda_static_devices carries the uuid as
 * NVML spells it, and the report joins the lists by uuid: NVML's GPU 0
 * keeps its own name, the kernels run on GPU 1. */
static void test_device_identity(void)
{
    char scen[600], base[512], dir[1024];
    snprintf(scen, sizeof scen, "%s.devices.txt", g_tmp);
    FILE *f = fopen(scen, "w");
    CHECK(f != NULL);
    if (!f)
        return;
    fputs("device 0 name \"NVIDIA A100-SXM4-40GB\" uuid GPU-aaaaaaaa-0000-0000-0000-000000000000\n"
          "device 1 name \"NVIDIA H100 80GB HBM3\" uuid GPU-bbbbbbbb-0000-0000-0000-000000000001\n"
          "device 2 name \"NVIDIA H100 80GB HBM3 MIG 1g.10gb\" uuid "
          "MIG-cccccccc-0000-0000-0000-000000000002 mig_of 1 slot 0 gi 9 ci 0\n",
          f);
    fclose(f);
    setenv("FAKE_NVML_SCENARIO", scen, 1);
    setenv("FAKE_CUPTI_SCENARIO", "ok", 1);
    const char *plugin = env_or_die("GP_TEST_FAKE_PLUGIN");
    setenv("GPUFL_CUPTI_PLUGIN", plugin, 1);
    static const char *const cuda_uuid[] = {"GPU-BBBBBBBB-0000-0000-0000-000000000001",
                                            "GPU-cccccccc-0000-0000-0000-000000000002"};
    static const char *const nvml_uuid[] = {"GPU-bbbbbbbb-0000-0000-0000-000000000001",
                                            "MIG-cccccccc-0000-0000-0000-000000000002"};
    for (int mig = 0; mig < 2; mig++) {
        setenv("FAKE_CUPTI_DEVICE_UUID", cuda_uuid[mig], 1);
        snprintf(base, sizeof base, "%s/ids%d", g_tmp, mig);
        gpufl_init_options o;
        gpufl_init_options_init(&o);
        o.app_name = "ids";
        o.log_path = base;
        o.backend = GPUFL_BACKEND_NVIDIA;
        o.profiling_engine = GPUFL_ENGINE_TRACE;
        o.system_sample_rate_ms = 5;
        o.continuous_system_sampling = true;
        gpufl_error err;
        CHECK_INT(gpufl_init(&o, &err), GPUFL_OK);
        gpufl_session_dir(dir, sizeof dir);
        fake_cupti_drive_launch(plugin, 11, false);
        wait_device_rows(dir, 3);
        gpufl_shutdown();

        fl_log log;
        CHECK_INT(fl_log_read(&log, dir, "device"), 0);
        json_t *js = fl_first(&log, "job_start");
        json_t *cuda = json_array_get(json_object_get(js, "cuda_static_devices"), 0);
        CHECK_INT((int)fl_int(cuda, "id"), 0);
        CHECK_STR(str(cuda, "uuid"), nvml_uuid[mig]);
        json_t *gpu = json_array_get(json_object_get(js, "gpu_static_devices"), 1 + mig);
        CHECK_STR(str(gpu, "uuid"), nvml_uuid[mig]);
        fl_log_free(&log);

        gpufl_report_options ro;
        gpufl_report_options_init(&ro);
        char *out = NULL;
        CHECK_INT(gpufl_report_logs(dir, &ro, &out, NULL, &err), GPUFL_OK);
        const char *t = out ? out : "";
        CHECK_CONTAINS(t, "  GPU 0  NVIDIA A100-SXM4-40GB  ");
        CHECK_CONTAINS(t, mig ? "  GPU 2  MIG 1g.10gb (GI 9 CI 0) of GPU 1 NVIDIA H100 80GB HBM3  "
                              : "  GPU 1  NVIDIA H100 80GB HBM3  ");
        CHECK(!strstr(t, "Fake H100"));
        CHECK_CONTAINS(t, mig ? "GPU 2 (union of its kernels' intervals over the duration)"
                              : "GPU 1 (union of its kernels' intervals over the duration)");
        gpufl_free(out);
        ro.format = GPUFL_REPORT_JSON;
        CHECK_INT(gpufl_report_logs(dir, &ro, &out, NULL, &err), GPUFL_OK);
        json_t *j = json_loads(out ? out : "", 0, NULL);
        json_t *devs = json_object_get(json_object_get(j, "session"), "devices");
        CHECK_INT((int)json_array_size(devs), 3);
        for (size_t i = 0; i < json_array_size(devs); i++) {
            json_t *d = json_array_get(devs, i);
            CHECK_INT((int)fl_int(d, "id"), (int)i);
            json_t *cid = json_object_get(d, "cuda_id");
            if (i == (size_t)(1 + mig))
                CHECK_INT((int)json_integer_value(cid), 0);
            else
                CHECK(json_is_null(cid));
        }
        json_decref(j);
        gpufl_free(out);
    }
    unsetenv("FAKE_CUPTI_DEVICE_UUID");
    unsetenv("FAKE_NVML_SCENARIO");
    unsetenv("FAKE_CUPTI_SCENARIO");
    unlink(scen);
}

int main(void)
{
    snprintf(g_tmp, sizeof g_tmp, "/tmp/gp_cupti_session_%d", (int)getpid());
    srand((unsigned)getpid());
    test_real_cupti_without_driver();
    test_stale_plugin_refused();
    test_fake_trace();
    test_fake_compact();
    test_fake_nvtx_graphs();
    test_fake_scenarios();
    test_buffer_options();
    test_device_identity();
    fl_rmtree(g_tmp);
    return check_done("test_cupti_session");
}
