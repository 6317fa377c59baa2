/*
 * test_cupti_capture.c - capture windows end to end in a session: the fake
 * plugin's CUPTI callbacks (cuProfilerStart / Stop, NVTX push / pop, kernel
 * launches) through the real plugin/capture_cb.c into the core's gate
 * (src/recorder/capture.c) and its trace sink.  Kernels launched before,
 * inside and after the windows: only the inside ones are written, each
 * window is a capture_window record, stop / repeat / repeat:N keep the
 * windows they promise, a timed window (delay / duration from an origin)
 * keeps the rows it covers, and bad values fail init with the field and
 * the fix.  No assertion depends on timing: the timed windows lie wholly
 * in the past or far in the future.
 */
#include "fl_log.h"
#include "fakes/fake_cupti_driver.h"
#include "capture_cb.h"
#include "gpufl.h"
#include "recorder/launcher.h"
#include "recorder/writer.h"

#include <generated_nvtx_meta.h>

#include <dlfcn.h>
#include <inttypes.h>
#include <stdbool.h>
#include <time.h>
#include <unistd.h>

static char g_tmp[256];
static const char *g_fake;

static const char *env_or_die(const char *name)
{
    const char *v = getenv(name);
    if (!v || !*v) {
        fprintf(stderr, "%s is not set (run through ctest)\n", name);
        exit(2);
    }
    return v;
}

static bool g_ext_off; /* start() without enable_external_correlation */

static void start(const char *range, const char *end, int delay_ms, int duration_ms, char *base,
                  size_t cap)
{
    setenv("GPUFL_CUPTI_PLUGIN", g_fake, 1);
    setenv("FAKE_CUPTI_SCENARIO", "launches", 1);
    snprintf(base, cap, "%s/s%d", g_tmp, rand());
    gpufl_init_options o;
    gpufl_init_options_init(&o);
    o.app_name = "capture_test";
    o.log_path = base;
    o.backend = GPUFL_BACKEND_NONE;
    o.profiling_engine = GPUFL_ENGINE_TRACE;
    o.capture_range = range;
    o.capture_range_end = end;
    o.capture_delay_ms = delay_ms;
    o.capture_duration_ms = duration_ms;
    o.enable_external_correlation = !g_ext_off;
    gpufl_error err;
    CHECK_INT(gpufl_init(&o, &err), GPUFL_OK);
}

/* The kernels' correlation ids in the session, in order, as "1,2,3". */
static void kernels_of(const char *dir, char *out, size_t cap)
{
    fl_log dev;
    out[0] = '\0';
    CHECK_INT(fl_log_read(&dev, dir, "device"), 0);
    CHECK_INT(dev.bad, 0);
    size_t used = 0;
    for (size_t i = 0; i < dev.n; i++) {
        json_t *b = dev.lines[i];
        if (strcmp(log_type(b), "kernel_event_batch") != 0)
            continue;
        json_t *rows = json_object_get(b, "rows");
        for (size_t r = 0; r < json_array_size(rows); r++) {
            json_int_t c = json_integer_value(
                json_array_get(json_array_get(rows, r), (size_t)fl_col(b, "corr_id")));
            used +=
                (size_t)snprintf(out + used, cap - used, "%s%lld", used ? "," : "", (long long)c);
        }
    }
    fl_log_free(&dev);
}

/* The capture_window records, as "index:trigger:name:open;..." */
static void windows_of(const char *dir, char *out, size_t cap)
{
    fl_log sc;
    out[0] = '\0';
    CHECK_INT(fl_log_read(&sc, dir, "scope"), 0);
    size_t used = 0;
    for (size_t i = 0; i < sc.n; i++) {
        json_t *w = sc.lines[i];
        if (strcmp(log_type(w), "capture_window") != 0)
            continue;
        CHECK_INT(fl_int(w, "version"), 1);
        CHECK(fl_int(w, "end_ns") >= fl_int(w, "start_ns"));
        CHECK_INT(fl_int(w, "duration_ns"), fl_int(w, "end_ns") - fl_int(w, "start_ns"));
        used += (size_t)snprintf(
            out + used, cap - used, "%s%lld:%s:%s:%s", used ? ";" : "",
            (long long)fl_int(w, "index"), json_string_value(json_object_get(w, "trigger")),
            json_string_value(json_object_get(w, "name")),
            json_is_true(json_object_get(w, "open_at_shutdown")) ? "open" : "closed");
    }
    fl_log_free(&sc);
}

/* The last capture_capabilities' capture_windows entry, as
 * "status:reason:message" (what the session says it did not write). */
static char g_cap[1024];
static void capture_cap_of(const char *dir)
{
    fl_log sc;
    g_cap[0] = '\0';
    CHECK_INT(fl_log_read(&sc, dir, "scope"), 0);
    json_t *caps = NULL;
    for (size_t i = 0; i < sc.n; i++)
        if (strcmp(log_type(sc.lines[i]), "capture_capabilities") == 0)
            caps = sc.lines[i];
    json_t *list = json_object_get(caps, "capabilities");
    for (size_t i = 0; i < json_array_size(list); i++) {
        json_t *c = json_array_get(list, i);
        if (strcmp(json_string_value(json_object_get(c, "feature")), "capture_windows") == 0)
            snprintf(g_cap, sizeof g_cap, "%s:%s:%s",
                     json_string_value(json_object_get(c, "status")),
                     json_string_value(json_object_get(c, "reason_code")),
                     json_string_value(json_object_get(c, "message")));
    }
    fl_log_free(&sc);
}

static void finish(const char *base, char *kernels, char *windows, size_t cap)
{
    gpufl_shutdown();
    char dir[1024];
    CHECK_INT(fl_only_session(base, dir, sizeof dir), 0);
    kernels_of(dir, kernels, cap);
    windows_of(dir, windows, cap);
    capture_cap_of(dir);
}

/* Launches 1 | start 2, 3 4, stop 5 | 6 | start 7, 8, stop 9 | 10 | start
 * 11, 12 (never stopped). */
static void profiler_run(void)
{
    cupti_launch(1);
    cupti_profiler(1, 2);
    cupti_launch(3);
    cupti_launch(4);
    cupti_profiler(0, 5);
    cupti_launch(6);
    cupti_profiler(1, 7);
    cupti_launch(8);
    cupti_profiler(0, 9);
    cupti_launch(10);
    cupti_profiler(1, 11);
    cupti_launch(12);
}

static void test_profiler_api(void)
{
    char base[512], k[1024], w[1024];
    start("cudaProfilerApi", "", 0, 0, base, sizeof base); /* default end: stop */
    profiler_run();
    finish(base, k, w, sizeof k);
    CHECK_STR(k, "3,4");
    CHECK_STR(w, "0:cudaProfilerApi::closed");

    start("cudaProfilerApi", "repeat", 0, 0, base, sizeof base);
    profiler_run();
    finish(base, k, w, sizeof k);
    CHECK_STR(k, "3,4,8,12");
    CHECK_STR(w, "0:cudaProfilerApi::closed;1:cudaProfilerApi::closed;2:cudaProfilerApi::open");

    start("CUDAPROFILERAPI", "repeat:2", 0, 0, base, sizeof base);
    profiler_run();
    finish(base, k, w, sizeof k);
    CHECK_STR(k, "3,4,8");
    CHECK_STR(w, "0:cudaProfilerApi::closed;1:cudaProfilerApi::closed");
    /* Left out: kernels 1, 6, 10, 12 and launch 10's copy. */
    CHECK_STR(g_cap, "collected::2 windows captured (cudaProfilerApi); left out (outside every "
                     "window): 4 kernels, 1 memcpy, 0 memset, 0 sync, 0 graph launches (5 trace "
                     "rows)");

    /* No start ever: nothing traced, no window. */
    start("cudaProfilerApi", "stop", 0, 0, base, sizeof base);
    cupti_launch(1);
    cupti_launch(2);
    finish(base, k, w, sizeof k);
    CHECK_STR(k, "");
    CHECK_STR(w, "");
    CHECK_STR(g_cap, "collected::0 windows captured (cudaProfilerApi); left out (outside every "
                     "window): 2 kernels, 0 memcpy, 0 memset, 0 sync, 0 graph launches (2 trace "
                     "rows)");
}

/* Launches 1 in "epoch" | step: 2 3 (a nested "step" 4 inside) | 5 | step:
 * 6 | 7; the copies of every tenth launch follow their kernel. */
static void test_nvtx(void)
{
    char base[512], k[1024], w[1024];
    start("nvtx:step", "repeat", 0, 0, base, sizeof base);
    cupti_nvtx("epoch");
    cupti_launch(1);
    cupti_nvtx("step");
    cupti_launch(2);
    cupti_launch(3);
    cupti_nvtx("step"); /* nested: the window stays the outer one */
    cupti_launch(4);
    cupti_nvtx(NULL);
    cupti_nvtx(NULL);
    cupti_launch(5);
    cupti_nvtx("step");
    cupti_launch(6);
    cupti_nvtx(NULL);
    cupti_nvtx(NULL); /* epoch */
    cupti_launch(7);
    finish(base, k, w, sizeof k);
    CHECK_STR(k, "2,3,4,6");
    CHECK_STR(w, "0:nvtx:step:closed;1:nvtx:step:closed");
    CHECK_STR(g_cap, "collected::2 windows captured (nvtx:step); left out (outside every window): "
                     "3 kernels, 0 memcpy, 0 memset, 0 sync, 0 graph launches (3 trace rows)");

    /* stop: the first range only; another name never opens one. */
    start("nvtx:step", "", 0, 0, base, sizeof base);
    cupti_nvtx("warmup");
    cupti_launch(1);
    cupti_nvtx(NULL);
    cupti_nvtx("step");
    cupti_launch(2);
    cupti_nvtx(NULL);
    cupti_nvtx("step");
    cupti_launch(3);
    cupti_nvtx(NULL);
    finish(base, k, w, sizeof k);
    CHECK_STR(k, "2");
    CHECK_STR(w, "0:nvtx:step:closed");
}

static uint64_t wall_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

/* The timed window, with its origin set as gpu-profile sets it: one that
 * ended an hour ago keeps nothing and is recorded closed; one that began
 * an hour ago and lasts a day keeps everything and is open at shutdown;
 * one that begins in an hour never opens. */
static void test_timed(void)
{
    char base[512], k[1024], w[1024], origin[32];
    snprintf(origin, sizeof origin, "%" PRIu64, (uint64_t)(wall_ns() - 7200ull * 1000000000ull));
    setenv("GPUFL_CAPTURE_ORIGIN_NS", origin, 1);
    start("", "", 1000, 3600 * 1000, base, sizeof base); /* 2 h ago + 1 s, for 1 h */
    cupti_launch(1);
    cupti_launch(2);
    finish(base, k, w, sizeof k);
    CHECK_STR(k, "");
    CHECK_STR(w, "0:time::closed");
    CHECK_CONTAINS(g_cap, "collected::1 windows captured (time); left out (outside every window): "
                          "2 kernels,");

    start("", "", 3600 * 1000, 86400 * 1000, base, sizeof base); /* from 1 h ago, a day */
    cupti_launch(1);
    cupti_launch(2);
    finish(base, k, w, sizeof k);
    CHECK_STR(k, "1,2");
    CHECK_STR(w, "0:time::open");
    unsetenv("GPUFL_CAPTURE_ORIGIN_NS");

    start("", "", 3600 * 1000, 0, base, sizeof base); /* from now + 1 h */
    cupti_launch(1);
    finish(base, k, w, sizeof k);
    CHECK_STR(k, "");
    CHECK_STR(w, "");

    /* Without any window: every row, no record. */
    start("", "", 0, 0, base, sizeof base);
    cupti_launch(1);
    cupti_launch(2);
    finish(base, k, w, sizeof k);
    CHECK_STR(k, "1,2");
    CHECK_STR(w, "");
    CHECK_CONTAINS(g_cap, "not_requested::");
}

/* Each kernel row as "corr:kind:id" and the op_dict entries as
 * "id=name" (with whether the first came before the first kernel row),
 * from the session's device channel. */
static void ops_of(const char *base, char *rows, char *names, size_t cap)
{
    char dir[1024];
    rows[0] = names[0] = '\0';
    CHECK_INT(fl_only_session(base, dir, sizeof dir), 0);
    fl_log dev;
    CHECK_INT(fl_log_read(&dev, dir, "device"), 0);
    size_t ur = 0, un = 0;
    bool kernels_seen = false;
    for (size_t i = 0; i < dev.n; i++) {
        json_t *b = dev.lines[i];
        if (strcmp(log_type(b), "dictionary_update") == 0) {
            const char *key;
            json_t *v;
            json_object_foreach(json_object_get(b, "op_dict"), key, v)
            {
                un += (size_t)snprintf(names + un, cap - un, "%s%s%s=%s", un ? "," : "",
                                       kernels_seen ? "late:" : "", key, json_string_value(v));
            }
            continue;
        }
        if (strcmp(log_type(b), "kernel_event_batch") != 0)
            continue;
        kernels_seen = true;
        json_t *rs = json_object_get(b, "rows");
        for (size_t r = 0; r < json_array_size(rs); r++) {
            json_t *row = json_array_get(rs, r);
            ur += (size_t)snprintf(
                rows + ur, cap - ur, "%s%lld:%lld:%llu", ur ? "," : "",
                (long long)json_integer_value(json_array_get(row, (size_t)fl_col(b, "corr_id"))),
                (long long)json_integer_value(
                    json_array_get(row, (size_t)fl_col(b, "external_kind"))),
                (unsigned long long)json_integer_value(
                    json_array_get(row, (size_t)fl_col(b, "external_id"))));
        }
    }
    fl_log_free(&dev);
}

/* gpufl_push_external_op around launches (gpufl.torch's calls): each
 * launch carries the innermost op pushed on its thread (kind 4, the
 * name's FNV-1a 64 id), a name is written once per session, before the
 * rows; without external correlation nothing is pushed. */
static void test_external_ops(void)
{
    char base[512], rows[2048], names[2048], want[2048];
    /* Ids below 2^63, which the test's JSON reader (jansson) reads. */
    uint64_t relu = gpufl_op_id("aten::relu"), add = gpufl_op_id("aten::add");
    CHECK_U64(relu, 5638660427450741845ull);
    CHECK_U64(add, 3997514674557673982ull);
    start("", "", 0, 0, base, sizeof base);
    /* One writer cycle takes it all (no timing): names, then the rows. */
    fl_session_hold_writer(true);
    uint64_t id = 0;
    CHECK_INT(gpufl_push_external_op("aten::relu", &id), GPUFL_OK);
    CHECK_U64(id, relu);
    cupti_launch(1);
    CHECK_INT(gpufl_push_external_op("aten::add", NULL), GPUFL_OK);
    cupti_launch(2);
    gpufl_pop_external_op();
    cupti_launch(3);
    gpufl_pop_external_op();
    cupti_launch(4);
    CHECK_INT(gpufl_push_external_op("aten::relu", NULL), GPUFL_OK);
    cupti_launch(5);
    gpufl_pop_external_op();
    fl_session_hold_writer(false);
    gpufl_shutdown();
    ops_of(base, rows, names, sizeof rows);
    snprintf(want, sizeof want, "%llu=aten::relu,%llu=aten::add", (unsigned long long)relu,
             (unsigned long long)add);
    CHECK_STR(names, want);
    snprintf(want, sizeof want, "1:4:%llu,2:4:%llu,3:4:%llu,4:0:0,5:4:%llu",
             (unsigned long long)relu, (unsigned long long)add, (unsigned long long)relu,
             (unsigned long long)relu);
    CHECK_STR(rows, want);

    g_ext_off = true;
    start("", "", 0, 0, base, sizeof base);
    CHECK_INT(gpufl_push_external_op("aten::relu", NULL), GPUFL_ERR_STATE);
    cupti_launch(1);
    gpufl_pop_external_op();
    gpufl_shutdown();
    g_ext_off = false;
    ops_of(base, rows, names, sizeof rows);
    CHECK_STR(rows, "1:0:0");
    CHECK_STR(names, "");
}

static void bad(const char *range, const char *end, int delay_ms, gpufl_status want,
                const char *words)
{
    gpufl_init_options o;
    gpufl_init_options_init(&o);
    o.log_path = g_tmp;
    o.backend = GPUFL_BACKEND_NONE;
    o.capture_range = range;
    o.capture_range_end = end;
    o.capture_delay_ms = delay_ms;
    gpufl_error err;
    CHECK_INT(gpufl_init(&o, &err), want);
    CHECK_CONTAINS(err.message, words);
    CHECK(!gpufl_is_active());
}

static void test_bad_values(void)
{
    bad("foo", "", 0, GPUFL_ERR_INVALID_ARG,
        "capture_range \"foo\" is not a trigger: use cudaProfilerApi");
    bad("nvtx:", "", 0, GPUFL_ERR_INVALID_ARG, "capture_range \"nvtx:\" names no NVTX range");
    bad("cudaProfilerApi", "repeat:0", 0, GPUFL_ERR_INVALID_ARG,
        "capture_range_end \"repeat:0\" is not a choice: use stop");
    bad("cudaProfilerApi", "again", 0, GPUFL_ERR_INVALID_ARG, "(code)");
    bad("", "repeat", 0, GPUFL_ERR_INVALID_ARG, "needs capture_range");
    bad("", "", -1, GPUFL_ERR_INVALID_ARG, "capture_delay_ms = -1");
    setenv("GPUFL_CAPTURE_RANGE", "nvtx", 1);
    bad("", "", 0, GPUFL_ERR_INVALID_ARG, "(env GPUFL_CAPTURE_RANGE)");
    unsetenv("GPUFL_CAPTURE_RANGE");
    setenv("GPUFL_CAPTURE_DURATION_MS", "abc", 1);
    bad("", "", 0, GPUFL_ERR_ENV, "GPUFL_CAPTURE_DURATION_MS=\"abc\" is not a whole number");
    unsetenv("GPUFL_CAPTURE_DURATION_MS");
}

/* The command's check (cli/options.c) speaks gp_status + gp_error. */
static void test_check(void)
{
    gp_error err;
    CHECK_INT(fl_capture_check("cudaProfilerApi", "repeat:2", &err), GP_OK);
    CHECK_INT(err.status, GP_OK);
    CHECK_INT(fl_capture_check("foo", "", &err), GP_ERR_INVALID_ARG);
    CHECK_INT(err.status, GP_ERR_INVALID_ARG);
    CHECK_CONTAINS(err.message, "capture_range \"foo\" is not a trigger: use cudaProfilerApi");
    CHECK_INT(fl_capture_check("", "repeat", &err), GP_ERR_INVALID_ARG);
    CHECK_CONTAINS(err.message, "needs capture_range");
    CHECK_INT(fl_capture_check("nvtx:", "", NULL), GP_ERR_INVALID_ARG);
}

/* The environment the gpu-profile command passes. */
static void test_env(void)
{
    setenv("GPUFL_CAPTURE_RANGE", "nvtx:step", 1);
    setenv("GPUFL_CAPTURE_RANGE_END", "repeat:1", 1);
    char base[512], k[1024], w[1024];
    start("", "", 0, 0, base, sizeof base);
    cupti_launch(1);
    cupti_nvtx("step");
    cupti_launch(2);
    cupti_nvtx(NULL);
    cupti_nvtx("step");
    cupti_launch(3);
    cupti_nvtx(NULL);
    finish(base, k, w, sizeof k);
    CHECK_STR(k, "2");
    CHECK_STR(w, "0:nvtx:step:closed");
    unsetenv("GPUFL_CAPTURE_RANGE");
    unsetenv("GPUFL_CAPTURE_RANGE_END");
}

/* capture_cb.c alone: each NVTX form and the profiler API as the edges
 * the core gets (what the fake plugin's hooks do not reach). */
static char g_edges[1024];

static void record_edge(int edge, const char *name, uint64_t id, uint32_t corr)
{
    size_t n = strlen(g_edges);
    snprintf(g_edges + n, sizeof g_edges - n, "%s%d:%s:%llu:%u", n ? " " : "", edge,
             name ? name : "-", (unsigned long long)id, corr);
}

static void test_callbacks(void)
{
    fl_trace_options o = {.capture_nvtx = true, .capture_edge = record_edge};
    CHECK_INT(fl_capture_cb_start(&o, NULL), CUPTI_SUCCESS);
    CHECK(fl_capture_cb_nvtx_asked());
    CUpti_CallbackData launch = {.callbackSite = CUPTI_API_ENTER, .correlationId = 41};
    CHECK(!fl_capture_cb(CUPTI_CB_DOMAIN_RUNTIME_API,
                         CUPTI_RUNTIME_TRACE_CBID_cudaLaunchKernel_v7000, &launch));
    nvtxEventAttributes_t a = {.version = NVTX_VERSION,
                               .size = NVTX_EVENT_ATTRIB_STRUCT_SIZE,
                               .messageType = NVTX_MESSAGE_TYPE_ASCII,
                               .message.ascii = "step"};
    nvtxRangePushEx_params push_ex = {.eventAttrib = &a};
    nvtxDomainRangePushEx_params dom_push = {.core = {.eventAttrib = &a}};
    nvtxRangeStartA_params start_a = {.message = "epoch"};
    nvtxRangeId_t rid = 77;
    nvtxRangeEnd_params end = {.id = 77};
    CUpti_NvtxData d1 = {.functionParams = &push_ex}, d2 = {.functionParams = &dom_push},
                   d3 = {.functionParams = &start_a, .functionReturnValue = &rid},
                   d4 = {.functionParams = &end}, pop = {.functionParams = NULL};
    CHECK(fl_capture_cb(CUPTI_CB_DOMAIN_NVTX, CUPTI_CBID_NVTX_nvtxRangePushEx, &d1));
    CHECK(fl_capture_cb(CUPTI_CB_DOMAIN_NVTX, CUPTI_CBID_NVTX_nvtxDomainRangePushEx, &d2));
    CHECK(fl_capture_cb(CUPTI_CB_DOMAIN_NVTX, CUPTI_CBID_NVTX_nvtxRangePop, &pop));
    CHECK(fl_capture_cb(CUPTI_CB_DOMAIN_NVTX, CUPTI_CBID_NVTX_nvtxRangeStartA, &d3));
    CHECK(fl_capture_cb(CUPTI_CB_DOMAIN_NVTX, CUPTI_CBID_NVTX_nvtxRangeEnd, &d4));
    /* A registered (not ASCII) message matches no name. */
    a.messageType = NVTX_MESSAGE_TYPE_REGISTERED;
    CHECK(fl_capture_cb(CUPTI_CB_DOMAIN_NVTX, CUPTI_CBID_NVTX_nvtxRangePushEx, &d1));
    CHECK_STR(g_edges, "3:step:0:41 3:step:0:41 4:-:0:41 5:epoch:77:41 6:-:77:41 3:-:0:41");
    /* Without capture_profiler_api the profiler calls are no edge. */
    g_edges[0] = '\0';
    CUpti_CallbackData pstart = {.callbackSite = CUPTI_API_EXIT, .correlationId = 50};
    CHECK(fl_capture_cb(CUPTI_CB_DOMAIN_DRIVER_API, CUPTI_DRIVER_TRACE_CBID_cuProfilerStart,
                        &pstart));
    CHECK_STR(g_edges, "");
    fl_capture_cb_stop();
    CHECK(!fl_capture_cb(CUPTI_CB_DOMAIN_NVTX, CUPTI_CBID_NVTX_nvtxRangePop, &pop));
    /* The ask before any session: the command's environment. */
    o = (fl_trace_options){0};
    fl_capture_cb_start(&o, NULL);
    unsetenv("GPUFL_CAPTURE_RANGE");
    CHECK(!fl_capture_cb_nvtx_asked());
    setenv("GPUFL_CAPTURE_RANGE", "NVTX:step", 1);
    CHECK(fl_capture_cb_nvtx_asked());
    setenv("GPUFL_CAPTURE_RANGE", "cudaProfilerApi", 1);
    CHECK(!fl_capture_cb_nvtx_asked());
    unsetenv("GPUFL_CAPTURE_RANGE");
}

int main(void)
{
    snprintf(g_tmp, sizeof g_tmp, "/tmp/gp_cupti_capture_%d", (int)getpid());
    srand((unsigned)getpid());
    g_fake = env_or_die("GP_TEST_FAKE_PLUGIN");
    fake_cupti_path = g_fake;
    unsetenv("GPUFL_CAPTURE_ORIGIN_NS");
    test_profiler_api();
    test_nvtx();
    test_timed();
    test_bad_values();
    test_check();
    test_env();
    test_callbacks();
    test_external_ops();
    fl_rmtree(g_tmp);
    return check_done("test_cupti_capture");
}
