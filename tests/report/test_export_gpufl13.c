/*
 * test_export_gpufl13.c - the Chrome trace (src/report/export.c,
 * export_ranges.c) of what GPUFlight 1.3 writes: the two sessions its own
 * writer wrote (tests/fixtures/gpufl-1.3) against goldens, and parsed back
 * with jansson: each timed record (memset, graph launch, NVTX marker, perf
 * range, deep window) an event with its exact ts / dur / track / args; the
 * layouts of tests/gpufl13_layouts.h give the same events; fed through the
 * callbacks, our own memset_event and graph_event_batch, ids written as
 * strings, and a launch without a time (left out).
 *
 * After a deliberate change of the output: GP_UPDATE_GOLDEN=1 ctest -R
 * test_export_gpufl13, then read the diff.
 */
#include "check.h"
#include "fl_log.h"
#include "gpufl13_layouts.h"
#include "reader/read.h"
#include "report/export.h"

#include <math.h>

/* ------------------------------------------------------------ helpers */

static char *export_path(const char *path, fl_read_result *res)
{
    char *text = NULL;
    size_t len = 0;
    FILE *f = open_memstream(&text, &len);
    fl_export *e = fl_export_create(FL_EXPORT_CHROME_TRACE, f);
    fl_read_cb cb;
    fl_export_callbacks(e, &cb);
    gp_error err;
    int rc = fl_read_session(path, NULL, &cb, res, &err);
    if (rc != GP_OK)
        fprintf(stderr, "fl_read_session(%s): %s\n", path, err.message);
    CHECK_INT(rc, GP_OK);
    CHECK_INT(fl_export_finish(e, res), 0);
    fl_export_destroy(e);
    fclose(f);
    return text;
}

static json_t *events_of(const char *text, json_t **root)
{
    json_error_t e;
    *root = json_loads(text ? text : "", JSON_REJECT_DUPLICATES, &e);
    if (!*root)
        fprintf(stderr, "trace does not parse: %s (line %d)\n", e.text, e.line);
    CHECK(*root != NULL);
    return json_object_get(*root, "traceEvents");
}

static const char *sget(const json_t *o, const char *k)
{
    const char *s = json_string_value(json_object_get(o, k));
    return s ? s : "";
}

static double nget(const json_t *o, const char *k)
{
    const json_t *v = json_object_get(o, k);
    return json_is_number(v) ? json_number_value(v) : NAN;
}

static long long iget(const json_t *o, const char *k)
{
    return (long long)json_integer_value(json_object_get(o, k));
}

static json_t *args(json_t *ev)
{
    return json_object_get(ev, "args");
}

/* Ids, scopes and sizes: out of args (export_chrome.c's per_event). */
static json_t *pe(json_t *ev)
{
    return json_object_get(ev, "per_event");
}

/* The first "X" event of category cat. */
static json_t *find_cat(json_t *events, const char *cat)
{
    for (size_t i = 0; i < json_array_size(events); i++) {
        json_t *ev = json_array_get(events, i);
        if (strcmp(sget(ev, "ph"), "X") == 0 && strcmp(sget(ev, "cat"), cat) == 0)
            return ev;
    }
    fprintf(stderr, "no X event of category %s\n", cat);
    return NULL;
}

static size_t count_cat(json_t *events, const char *cat)
{
    size_t n = 0;
    for (size_t i = 0; i < json_array_size(events); i++) {
        json_t *ev = json_array_get(events, i);
        n += strcmp(sget(ev, "ph"), "X") == 0 && strcmp(sget(ev, "cat"), cat) == 0;
    }
    return n;
}

static const char *thread_name(json_t *events, long long pid, long long tid)
{
    for (size_t i = 0; i < json_array_size(events); i++) {
        json_t *ev = json_array_get(events, i);
        if (strcmp(sget(ev, "name"), "thread_name") == 0 && iget(ev, "pid") == pid &&
            iget(ev, "tid") == tid)
            return sget(args(ev), "name");
    }
    return "";
}

#define CHECK_X(ev, name, ts, dur, pid, tid)                                                       \
    do {                                                                                           \
        json_t *e_ = (ev);                                                                         \
        CHECK(e_ != NULL);                                                                         \
        if (e_) {                                                                                  \
            CHECK_STR(sget(e_, "name"), (name));                                                   \
            CHECK_NEAR(nget(e_, "ts"), (ts), 1e-9);                                                \
            CHECK_NEAR(nget(e_, "dur"), (dur), 1e-9);                                              \
            CHECK_INT(iget(e_, "pid"), (pid));                                                     \
            CHECK_INT(iget(e_, "tid"), (tid));                                                     \
        }                                                                                          \
    } while (0)

static char tmp_root[256];

/* ------------------------------------------------------------ fixtures */

/* The timed records of the fixture sessions (times in us after job_start). */
static void check_events(json_t *ev)
{
    json_t *m = find_cat(ev, "memset");
    CHECK_X(m, "memset", 700.0, 1.5, 100, 7);
    CHECK_INT(iget(pe(m), "bytes"), 4096);
    CHECK_INT(iget(pe(m), "corr_id"), 110);
    CHECK_STR(sget(pe(m), "user_scope"), "train|step");
    json_t *g = find_cat(ev, "graph");
    CHECK_X(g, "graph launch", 600.0, 60.0, 100, 7);
    CHECK_INT(iget(args(g), "graph_id"), 3);
    CHECK_INT(iget(pe(g), "corr_id"), 140);
    CHECK_STR(sget(args(g), "graph_exec_key"), "0xdeadbeef");
    json_t *n = find_cat(ev, "nvtx");
    CHECK_X(n, "nvtx_range", 1.5, 848.5, 1, 2);
    CHECK_INT(iget(pe(n), "marker_id"), 5);
    CHECK(json_object_get(args(n), "domain") == NULL); /* "": none */
    json_t *p = find_cat(ev, "perf");
    CHECK_X(p, "step", 2.0, 898.0, 1, 4);
    CHECK_INT(iget(args(p), "device_id"), 0);
    CHECK_STR(sget(pe(p), "user_scope"), "train|step");
    CHECK_NEAR(nget(args(p), "sm_throughput_pct"), 71.5, 1e-9);
    CHECK_NEAR(nget(args(p), "l1_hit_rate_pct"), 40, 1e-9);
    CHECK_NEAR(nget(args(p), "l2_hit_rate_pct"), 80, 1e-9);
    CHECK_NEAR(nget(args(p), "dram_read_bytes"), 16777216, 1e-9);
    CHECK_NEAR(nget(args(p), "dram_write_bytes"), 4194304, 1e-9);
    CHECK_NEAR(nget(args(p), "tensor_active_pct"), 12, 1e-9);
    json_t *d = find_cat(ev, "deep");
    CHECK_X(d, "deep1", 100.0, 200.0, 1, 5);
    CHECK_STR(sget(args(d), "close_reason"), "duration");
    CHECK_INT(iget(pe(d), "launches_covered"), 2);
    CHECK_STR(sget(args(d), "engines"), "pc_sampling");
    CHECK_STR(thread_name(ev, 1, 2), "NVTX");
    CHECK_STR(thread_name(ev, 1, 4), "perf ranges");
    CHECK_STR(thread_name(ev, 1, 5), "deep windows");
    CHECK_INT(count_cat(ev, "kernel"), 6);
    CHECK_INT(count_cat(ev, "memcpy"), 2);
    CHECK_INT(count_cat(ev, "scope"), 2);
    CHECK_INT(count_cat(ev, "sync"), 1);
}

static void test_fixtures(void)
{
    for (int gz = 0; gz < 2; gz++) {
        char path[4096], name[64];
        gl_fixture(gz, path, sizeof path);
        fl_read_result res;
        char *text = export_path(path, &res);
        snprintf(name, sizeof name, "report/gpufl13_%s.trace.json", gz ? "gz" : "plain");
        check_golden(name, text ? text : "", "test_export_gpufl13");
        json_t *root;
        json_t *ev = events_of(text, &root);
        check_events(ev);
        json_t *od = json_object_get(root, "otherData");
        CHECK_STR(sget(od, "session_id"), gz ? GL_GZ_ID : GL_PLAIN_ID);
        CHECK(json_is_false(json_object_get(od, "crashed")));
        json_decref(root);
        free(text);
    }
}

static void test_layouts(void)
{
    for (int l = 0; l < GL_COUNT; l++) {
        char dir[512], path[4096];
        snprintf(dir, sizeof dir, "%s/%s", tmp_root, gl_names[l]);
        gl_build(l, dir, path, sizeof path);
        fl_read_result res;
        char *text = export_path(path, &res);
        json_t *root;
        json_t *ev = events_of(text, &root);
        check_events(ev);
        CHECK_INT(json_is_true(json_object_get(json_object_get(root, "otherData"), "crashed")),
                  l == GL_TMP_LIVE);
        json_decref(root);
        free(text);
    }
}

/* ------------------------------------------------------------ fed directly */

static void feed(fl_read_cb *cb, const char *text)
{
    json_error_t e;
    json_t *j = json_loads(text, 0, &e);
    CHECK(j != NULL);
    if (!j)
        return;
    const char *type = json_string_value(json_object_get(j, "type"));
    cb->record(cb->user, FL_CH_DEVICE, fl_type_of(type, strlen(type)), type, j);
    json_decref(j);
}

static void test_direct(void)
{
    char *text = NULL;
    size_t len = 0;
    FILE *f = open_memstream(&text, &len);
    fl_export *e = fl_export_create(FL_EXPORT_CHROME_TRACE, f);
    fl_read_cb cb;
    fl_export_callbacks(e, &cb);
    feed(&cb, "{\"type\":\"job_start\",\"app\":\"a\",\"ts_ns\":1000000,\"devices\":[{\"id\":0},"
              "{\"id\":1}]}");
    /* Ours: ts_ns / duration_ns, numbers; GPUFlight's: strings. */
    feed(&cb, "{\"version\":1,\"type\":\"memset_event\",\"ts_ns\":2000000,\"duration_ns\":4000,"
              "\"device_id\":1,\"stream_id\":3,\"bytes\":100,\"value\":0}");
    feed(&cb, "{\"type\":\"memset_event\",\"device_id\":\"1\",\"stream_id\":\"3\","
              "\"start_ns\":3000000,\"end_ns\":3000500,\"bytes\":28}");
    /* No time from CUPTI: not drawn. */
    feed(&cb, "{\"type\":\"graph_launch_event\",\"start_ns\":0,\"end_ns\":0,\"duration_ns\":0,"
              "\"graph_id\":5,\"device_id\":0,\"stream_id\":3}");
    /* An NVTX marker with a domain. */
    feed(&cb, "{\"type\":\"nvtx_marker_event\",\"name\":\"load\",\"domain\":\"io\","
              "\"start_ns\":1500000,\"end_ns\":1600000,\"duration_ns\":100000,\"marker_id\":2}");
    /* Our graph_event_batch. */
    static const char *const gcols[] = {"dt_ns",       "graph_id", "stream_id",
                                        "duration_ns", "corr_id",  "device_id"};
    fl_cell cells[6];
    static const int64_t v[6] = {500, 9, 3, 7000, 1, 1};
    for (int i = 0; i < 6; i++)
        cells[i] = (fl_cell){.kind = FL_CELL_INT, .i = v[i]};
    fl_batch b;
    memset(&b, 0, sizeof b);
    b.type = "graph_event_batch";
    b.cols = gcols;
    b.ncols = 6;
    b.nrows = 1;
    b.cells = cells;
    b.base_time_ns = 1000000;
    fl_batch_map_columns(&b);
    cb.batch(cb.user, &b);
    CHECK_INT(fl_export_finish(e, NULL), 0);
    fl_export_destroy(e);
    fclose(f);
    json_t *root;
    json_t *ev = events_of(text, &root);
    CHECK_INT(count_cat(ev, "memset"), 2);
    json_t *m0 = NULL, *m1 = NULL;
    for (size_t i = 0; i < json_array_size(ev); i++) {
        json_t *x = json_array_get(ev, i);
        if (strcmp(sget(x, "cat"), "memset") == 0)
            *(m0 ? &m1 : &m0) = x;
    }
    CHECK_X(m0, "memset", 1000.0, 4.0, 101, 3);
    CHECK_INT(iget(args(m0), "value"), 0);
    CHECK_X(m1, "memset", 2000.0, 0.5, 101, 3);
    CHECK_INT(iget(pe(m1), "bytes"), 28);
    json_t *n = find_cat(ev, "nvtx");
    CHECK_X(n, "load", 500.0, 100.0, 1, 2);
    CHECK_STR(sget(args(n), "domain"), "io");
    CHECK_INT(count_cat(ev, "graph"), 1);
    json_t *g = find_cat(ev, "graph");
    CHECK_X(g, "graph launch", 0.5, 7.0, 101, 3);
    CHECK_INT(iget(args(g), "graph_id"), 9);
    json_decref(root);
    free(text);
}

int main(void)
{
    snprintf(tmp_root, sizeof tmp_root, "/tmp/gp_test_export13.XXXXXX");
    if (!mkdtemp(tmp_root)) {
        perror("mkdtemp");
        return 1;
    }
    test_fixtures();
    test_layouts();
    test_direct();
    fl_rmtree(tmp_root);
    return check_done("test_export_gpufl13");
}
