/*
 * test_export.c - the exports (src/report/export.c): the Chrome trace and the
 * kernels CSV of the fixture session and of the rich session of
 * report_session.h (and its crashed variant), read through
 * fl_read_session().  The trace is parsed back with jansson and checked
 * event by event (names, ts / dur, pid / tid, args, counters, metadata);
 * the CSV line by line; and report_session.h's hand-written session whose
 * kernel rows and copy do not say their device ("GPU ?", pid 99).  Also:
 * a write error is reported, and memory stays bounded while 1 M kernel
 * rows stream through.
 */
#include "check.h"
#include "reader/read.h"
#include "report/export.h"
#include "fl_log.h"
#include "report_session.h"

#include <malloc.h>
#include <math.h>

#define FIX_ID "3f2a9c1e-7b4d-4e21-9a0f-5c6d7e8f9a0b"

/* ------------------------------------------------------------ helpers */

typedef struct out {
    char *text;
    size_t len;
    int finish_rc;
    fl_read_result res;
} out;

static bool absolute_time; /* run_export's exports: fl_export_set_absolute_time */

static int run_export(const char *path, fl_export_format fmt, out *o)
{
    memset(o, 0, sizeof *o);
    FILE *f = open_memstream(&o->text, &o->len);
    CHECK(f != NULL);
    if (!f)
        return -1;
    fl_export *e = fl_export_create(fmt, f);
    CHECK(e != NULL);
    fl_export_set_absolute_time(e, absolute_time);
    fl_read_cb cb;
    fl_export_callbacks(e, &cb);
    fl_read_opts opts;
    fl_read_opts_init(&opts);
    gp_error err;
    int rc = fl_read_session(path, &opts, &cb, &o->res, &err);
    if (rc != GP_OK)
        fprintf(stderr, "fl_read_session(%s): %s\n", path, err.message);
    CHECK_INT(rc, GP_OK);
    o->finish_rc = fl_export_finish(e, &o->res);
    CHECK_INT(o->finish_rc, 0);
    fl_export_destroy(e);
    fclose(f);
    return rc;
}

static json_t *parse(const char *text)
{
    json_error_t e;
    json_t *j = json_loads(text ? text : "", JSON_REJECT_DUPLICATES, &e);
    if (!j)
        fprintf(stderr, "trace does not parse: %s (line %d)\n", e.text, e.line);
    CHECK(j != NULL);
    return j;
}

static const char *sget(const json_t *o, const char *k)
{
    const char *s = json_string_value(json_object_get(o, k));
    return s ? s : "";
}

static long long iget(const json_t *o, const char *k)
{
    return (long long)json_integer_value(json_object_get(o, k));
}

static double nget(const json_t *o, const char *k)
{
    const json_t *v = json_object_get(o, k);
    return json_is_number(v) ? json_number_value(v) : NAN;
}

/* The n-th (from 0) event with this ph and name; NULL if none. */
static json_t *find(json_t *events, const char *ph, const char *name, size_t n)
{
    for (size_t i = 0; i < json_array_size(events); i++) {
        json_t *ev = json_array_get(events, i);
        if (strcmp(sget(ev, "ph"), ph) == 0 && strcmp(sget(ev, "name"), name) == 0 && n-- == 0)
            return ev;
    }
    fprintf(stderr, "no event ph=%s name=%s\n", ph, name);
    return NULL;
}

static size_t count(json_t *events, const char *ph, const char *cat_or_name)
{
    size_t k = 0;
    for (size_t i = 0; i < json_array_size(events); i++) {
        json_t *ev = json_array_get(events, i);
        if (strcmp(sget(ev, "ph"), ph) == 0 &&
            (!cat_or_name || strcmp(sget(ev, "cat"), cat_or_name) == 0 ||
             strcmp(sget(ev, "name"), cat_or_name) == 0))
            k++;
    }
    return k;
}

/* The metadata value (args.name / args.sort_index) of a track. */
static json_t *meta(json_t *events, const char *name, long long pid, long long tid)
{
    for (size_t i = 0; i < json_array_size(events); i++) {
        json_t *ev = json_array_get(events, i);
        if (strcmp(sget(ev, "ph"), "M") == 0 && strcmp(sget(ev, "name"), name) == 0 &&
            iget(ev, "pid") == pid && (tid < 0 || iget(ev, "tid") == tid)) {
            json_t *args = json_object_get(ev, "args");
            return json_object_get(args, strstr(name, "sort") ? "sort_index" : "name");
        }
    }
    fprintf(stderr, "no metadata %s for pid %lld tid %lld\n", name, pid, tid);
    return NULL;
}

#define CHECK_X(ev, ts, dur, pid, tid)                                                             \
    do {                                                                                           \
        json_t *e_ = (ev);                                                                         \
        CHECK(e_ != NULL);                                                                         \
        if (e_) {                                                                                  \
            CHECK_NEAR(nget(e_, "ts"), (ts), 1e-9);                                                \
            CHECK_NEAR(nget(e_, "dur"), (dur), 1e-9);                                              \
            CHECK_INT(iget(e_, "pid"), (pid));                                                     \
            CHECK_INT(iget(e_, "tid"), (tid));                                                     \
        }                                                                                          \
    } while (0)

static json_t *args(json_t *ev)
{
    return json_object_get(ev, "args");
}

/* The values that differ event to event (ids, scope, sizes), kept out of
 * args so that viewers keying frames by name + args aggregate them. */
static json_t *pe(json_t *ev)
{
    return json_object_get(ev, "per_event");
}

/* Every event has the fields its phase needs. */
static void check_shapes(json_t *events)
{
    size_t bad = 0;
    for (size_t i = 0; i < json_array_size(events); i++) {
        json_t *ev = json_array_get(events, i);
        const char *ph = sget(ev, "ph");
        bool ok = json_is_string(json_object_get(ev, "name")) &&
                  json_is_integer(json_object_get(ev, "pid")) &&
                  json_is_integer(json_object_get(ev, "tid"));
        if (strcmp(ph, "X") == 0)
            ok &= json_is_number(json_object_get(ev, "ts")) &&
                  json_is_number(json_object_get(ev, "dur")) && nget(ev, "dur") >= 0 &&
                  json_is_object(args(ev));
        else if (strcmp(ph, "C") == 0)
            ok &= json_is_number(json_object_get(ev, "ts")) && json_object_size(args(ev)) > 0;
        else if (strcmp(ph, "M") == 0)
            ok &= json_is_object(args(ev));
        else
            ok = false;
        if (!ok) {
            char *s = json_dumps(ev, 0);
            fprintf(stderr, "bad event: %s\n", s ? s : "?");
            free(s);
            bad++;
        }
    }
    CHECK_INT(bad, 0);
}

static const char *const kcols_direct[] = {
    "dt_ns",      "kernel_id", "stream_id",   "duration_ns",   "corr_id",
    "dyn_shared", "num_regs",  "has_details", "external_kind", "external_id"};

/* ------------------------------------------------------------ fixture */

static void test_fixture_trace(void)
{
    char path[4096];
    snprintf(path, sizeof path, "%s/fixtures/gpufl-session/%s", check_env("GP_TEST_SOURCE_DIR"),
             FIX_ID);
    out o;
    if (run_export(path, FL_EXPORT_CHROME_TRACE, &o) != 0) {
        free(o.text);
        return;
    }
    json_t *j = parse(o.text);
    json_t *ev = json_object_get(j, "traceEvents");
    CHECK(json_is_array(ev));
    CHECK_STR(sget(j, "displayTimeUnit"), "ns");
    json_t *od = json_object_get(j, "otherData");
    CHECK_STR(sget(od, "app"), "sample_app");
    CHECK_STR(sget(od, "session_id"), FIX_ID);
    CHECK_U64(iget(od, "origin_ns"), 1760000000000000000ull);
    CHECK_STR(sget(od, "origin"), "job_start");
    CHECK(json_is_false(json_object_get(od, "crashed")));
    check_shapes(ev);
    /* One device: kernels and copies on "GPU 0" (pid 100), stream 7. */
    CHECK_X(find(ev, "X", "vecAdd(float*, float*, float*, int)", 0), 1000.0, 20.0, 100, 7);
    CHECK_X(find(ev, "X", "void gemm<128>(float const*, float const*, float*)", 0), 1050.0, 900.0,
            100, 7);
    json_t *red = find(ev, "X", "reduce_sum(float*, int)", 0);
    CHECK_X(red, 2000.0, 80.0, 100, 7);
    /* The details came after their batch, and still reached the events. */
    json_t *gemm = find(ev, "X", "void gemm<128>(float const*, float const*, float*)", 0);
    CHECK_STR(sget(args(gemm), "grid"), "(64,64,1)");
    CHECK_STR(sget(args(gemm), "block"), "(16,16,1)");
    CHECK_INT(iget(args(gemm), "registers"), 64);
    CHECK_INT(iget(pe(gemm), "corr_id"), 12);
    CHECK_STR(sget(pe(gemm), "user_scope"), "train_step");
    CHECK(json_object_get(args(red), "grid") == NULL);
    CHECK_X(find(ev, "X", "memcpy HtoD", 0), 500.0, 100.0, 100, 7);
    CHECK_X(find(ev, "X", "memcpy DtoH", 0), 2200.0, 100.0, 100, 7);
    CHECK_INT(iget(pe(find(ev, "X", "memcpy HtoD", 0)), "bytes"), 4194304);
    CHECK_X(find(ev, "X", "train_step", 0), 900.0, 1300.0, 1, 1);
    CHECK_STR(sget(find(ev, "X", "train_step", 0), "cat"), "scope");
    /* ... and the session, from job_start to shutdown, on the host's
     * "session" track. */
    CHECK_X(find(ev, "X", "session", 0), 0.0, 3000.0, 1, 0);
    CHECK_INT(count(ev, "X", NULL), 7);
    /* Counters: util, memory, power, temperature per device row; cpu, ram
     * per host row. */
    CHECK_INT(count(ev, "C", "util"), 3);
    CHECK_INT(count(ev, "C", "power"), 3);
    CHECK_INT(count(ev, "C", "cpu"), 2);
    json_t *p1 = find(ev, "C", "power", 1);
    CHECK_NEAR(nget(p1, "ts"), 1200.0, 1e-9);
    CHECK_NEAR(nget(args(p1), "power_w"), 310, 1e-9);
    CHECK_INT(iget(p1, "pid"), 100);
    json_t *u1 = find(ev, "C", "util", 1);
    CHECK_NEAR(nget(args(u1), "gpu_pct"), 95, 1e-9);
    CHECK_NEAR(nget(args(u1), "mem_pct"), 60, 1e-9);
    CHECK_NEAR(nget(args(find(ev, "C", "cpu", 1)), "cpu_pct"), 88, 1e-9);
    CHECK_INT(iget(find(ev, "C", "cpu", 1), "pid"), 1);
    /* Track labels. */
    CHECK_STR(json_string_value(meta(ev, "process_name", 100, -1)), "GPU 0: Fake GPU");
    CHECK_STR(json_string_value(meta(ev, "process_name", 1, -1)), "host: sample_app (pid 4242)");
    CHECK_STR(json_string_value(meta(ev, "thread_name", 100, 7)), "stream 7");
    CHECK_STR(json_string_value(meta(ev, "thread_name", 1, 1)), "scopes");
    CHECK_INT(json_integer_value(meta(ev, "process_sort_index", 100, -1)), 100);
    /* 7 X + 3x4 + 2x2 counters + metadata: 2 processes x 2, 3 threads x 2. */
    CHECK_INT(json_array_size(ev), 7 + 12 + 4 + 4 + 6);
    json_decref(j);
    free(o.text);
}

/* Absolute time: every ts from the Unix epoch (the session's origin
 * added back), the origin said to be the epoch; durations unchanged. */
static void test_fixture_absolute(void)
{
    char path[4096];
    snprintf(path, sizeof path, "%s/fixtures/gpufl-session/%s", check_env("GP_TEST_SOURCE_DIR"),
             FIX_ID);
    out o;
    absolute_time = true;
    int rc = run_export(path, FL_EXPORT_CHROME_TRACE, &o);
    absolute_time = false;
    if (rc != 0) {
        free(o.text);
        return;
    }
    /* exact in the text (the double a JSON parser makes of it is not) */
    CHECK_CONTAINS(o.text, "\"name\":\"vecAdd(float*, float*, float*, int)\",\"cat\":\"kernel\","
                           "\"ph\":\"X\",\"ts\":1760000000001000.000,");
    CHECK_CONTAINS(o.text, "\"name\":\"train_step\",\"cat\":\"scope\",\"ph\":\"X\",\"ts\":"
                           "1760000000000900.000,\"pid\":1,\"tid\":1,\"dur\":1300.000");
    json_t *j = parse(o.text);
    json_t *od = json_object_get(j, "otherData");
    CHECK_U64(iget(od, "origin_ns"), 0);
    CHECK_STR(sget(od, "origin"), "unix_epoch");
    check_shapes(json_object_get(j, "traceEvents"));
    json_decref(j);
    free(o.text);
}

static void test_fixture_csv(void)
{
    char path[4096];
    snprintf(path, sizeof path, "%s/fixtures/gpufl-session/%s", check_env("GP_TEST_SOURCE_DIR"),
             FIX_ID);
    out o;
    if (run_export(path, FL_EXPORT_CSV_KERNELS, &o) != 0) {
        free(o.text);
        return;
    }
    CHECK_STR(o.text,
              "start_ns,end_ns,duration_ns,device_id,stream_id,corr_id,kernel_id,name,grid,block,"
              "registers,dyn_shared_bytes,static_shared_bytes,occupancy,user_scope,external_kind,"
              "external_id,op\n"
              "1760000000001000000,1760000000001020000,20000,0,7,11,1,"
              "\"vecAdd(float*, float*, float*, int)\",\"(4096,1,1)\",\"(256,1,1)\",16,0,0,1,"
              "train_step,,,\n"
              "1760000000001050000,1760000000001950000,900000,0,7,12,2,"
              "\"void gemm<128>(float const*, float const*, float*)\",\"(64,64,1)\","
              "\"(16,16,1)\",64,4096,8192,0.5,train_step,,,\n"
              "1760000000002000000,1760000000002080000,80000,0,7,13,3,"
              "\"reduce_sum(float*, int)\",,,32,0,,,,,,\n");
    free(o.text);
}

/* ------------------------------------------------------- rich session */

static void test_rich_trace(bool crashed)
{
    char tmp[1024], dir[4096];
    CHECK(rs_tmpdir(tmp, sizeof tmp, "export-rich") == 0);
    CHECK(rs_write(tmp, crashed, dir, sizeof dir) == 0);
    out o;
    if (run_export(dir, FL_EXPORT_CHROME_TRACE, &o) != 0) {
        free(o.text);
        fl_rmtree(tmp);
        return;
    }
    json_t *j = parse(o.text);
    json_t *ev = json_object_get(j, "traceEvents");
    check_shapes(ev);
    json_t *od = json_object_get(j, "otherData");
    CHECK(json_is_boolean(json_object_get(od, "crashed")) &&
          json_is_true(json_object_get(od, "crashed")) == crashed);
    CHECK_INT(iget(od, "bad_lines"), crashed ? 1 : 0);

    /* Kernels: all on device 0 (the writers' device_id column) -> pid
     * 100 ("GPU 0"), one thread per stream. */
    CHECK_INT(count(ev, "X", "kernel"), 8);
    const char *gemm = "gemm_kernel(float const*, float*)";
    CHECK_X(find(ev, "X", gemm, 0), 1000.0, 100.0, 100, 7);
    CHECK_X(find(ev, "X", gemm, 1), 1200.0, 110.0, 100, 7);
    CHECK_X(find(ev, "X", gemm, 2), 1400.0, 120.0, 100, 7);
    CHECK_X(find(ev, "X", gemm, 3), 2000.0, 300.0, 100, 7);
    CHECK_STR(sget(args(find(ev, "X", gemm, 1)), "grid"), "(64,64,1)"); /* has_details 0 */
    CHECK_STR(sget(args(find(ev, "X", gemm, 3)), "grid"), "(128,64,1)");
    CHECK_NEAR(nget(args(find(ev, "X", gemm, 0)), "occupancy"), 0.5, 1e-12);
    CHECK_STR(sget(args(find(ev, "X", gemm, 0)), "limiting_resource"), "registers");
    CHECK_STR(sget(pe(find(ev, "X", gemm, 0)), "user_scope"), "train|step");
    CHECK_INT(iget(args(find(ev, "X", gemm, 0)), "dyn_shared_bytes"), 1024);
    CHECK_INT(iget(args(find(ev, "X", gemm, 0)), "static_shared_bytes"), 8192);
    CHECK_X(find(ev, "X", "copy_kernel", 0), 1150.0, 50.0, 100, 13);
    CHECK(json_object_get(args(find(ev, "X", "copy_kernel", 0)), "occupancy") == NULL);
    CHECK(json_object_get(args(find(ev, "X", "copy_kernel", 0)), "user_scope") == NULL);
    json_t *odd = find(ev, "X", "odd, \"quoted\" name", 0);
    CHECK_X(odd, 2400.0, 10.0, 100, 14);
    CHECK_INT(iget(pe(odd), "external_kind"), 2);
    CHECK_INT(iget(pe(odd), "external_id"), 77);
    CHECK_X(find(ev, "X", "relu(float*, int)", 1), 2500.0, 25.0, 100, 7);
    CHECK(json_object_get(args(find(ev, "X", "relu(float*, int)", 0)), "external_id") == NULL);

    /* Copies: each row on its device (device_id; the batch also has
     * src/dst columns, a peer copy, and the source device agrees). */
    CHECK_INT(count(ev, "X", "memcpy"), 5);
    CHECK_X(find(ev, "X", "memcpy HtoD", 0), 500.0, 100.0, 100, 7);
    CHECK_X(find(ev, "X", "memcpy DtoH", 0), 3000.0, 50.0, 100, 7);
    CHECK_X(find(ev, "X", "memcpy DtoD", 0), 3100.0, 10.0, 101, 7);
    CHECK_X(find(ev, "X", "memcpy kind 3", 0), 3150.0, 5.0, 100, 7);
    json_t *p2p = find(ev, "X", "memcpy PtoP", 0);
    CHECK_X(p2p, 3200.0, 20.0, 100, 7);
    CHECK_INT(iget(args(p2p), "src_device_id"), 0);
    CHECK_INT(iget(args(p2p), "dst_device_id"), 1);
    CHECK_NEAR(nget(pe(p2p), "gb_per_s"), 2.0 * RS_MIB / 20000.0, 1e-6);
    CHECK_X(find(ev, "X", "memset", 0), 3300.0, 4.0, 101, 21);
    CHECK_X(find(ev, "X", "memset", 1), 3400.0, 6.0, 100, 7);
    CHECK_INT(iget(args(find(ev, "X", "memset", 1)), "value"), 255);

    /* Scopes at their end, NVTX on its own track. */
    CHECK_X(find(ev, "X", "step", 0), 950.0, 750.0, 1, 1);
    CHECK_X(find(ev, "X", "load data", 0), 960.0, 840.0, 1, 2);
    CHECK_STR(sget(find(ev, "X", "load data", 0), "cat"), "nvtx");
    CHECK_INT(iget(pe(find(ev, "X", "load data", 0)), "instance_id"), 5);
    CHECK_X(find(ev, "X", "step", 1), 1900.0, 900.0, 1, 1);
    CHECK_X(find(ev, "X", "train", 0), 900.0, 2000.0, 1, 1);
    if (crashed) {
        /* Begun at 4000, never ended: up to the last time read (4200). */
        json_t *open = find(ev, "X", "train", 1);
        CHECK_X(open, 4000.0, 200.0, 1, 1);
        CHECK(json_is_true(json_object_get(args(open), "open_at_end")));
        CHECK_INT(count(ev, "X", "scope"), 4);
    } else {
        CHECK_INT(count(ev, "X", "scope"), 3);
    }
    CHECK_INT(count(ev, "X", "nvtx"), 1);

    /* Counters: device 1's null util.gpu left out of "util", its null
     * power reading gives no "power" event; the host's null CPU none. */
    CHECK_INT(count(ev, "C", "util"), 6);
    CHECK_INT(count(ev, "C", "memory"), 6);
    CHECK_INT(count(ev, "C", "power"), 5);
    CHECK_INT(count(ev, "C", "temperature"), 6);
    CHECK_INT(count(ev, "C", "cpu"), 2);
    CHECK_INT(count(ev, "C", "ram"), 3);
    json_t *u = find(ev, "C", "util", 1); /* device 1 at 200 us */
    CHECK_INT(iget(u, "pid"), 101);
    CHECK_NEAR(nget(u, "ts"), 200.0, 1e-9);
    CHECK(json_object_get(args(u), "gpu_pct") == NULL);
    CHECK_NEAR(nget(args(u), "mem_pct"), 3, 1e-9);
    json_t *m = find(ev, "C", "memory", 2); /* device 0 at 2200 us */
    CHECK_NEAR(nget(args(m), "used_mib"), 4096, 1e-9);
    CHECK_INT(iget(m, "pid"), 100);
    CHECK_NEAR(nget(args(find(ev, "C", "power", 3)), "power_w"), 200, 1e-9); /* dev 0, 4200 */
    CHECK_NEAR(nget(args(find(ev, "C", "cpu", 1)), "cpu_pct"), 50, 1e-9);
    CHECK_NEAR(nget(find(ev, "C", "cpu", 1), "ts"), 4200.0, 1e-9);

    /* Labels: processes 1, 100, 101 (no pid 99: every row says its
     * device); threads (100: 7 13 14), (101: 7 21), (1: 1 2). */
    CHECK_STR(json_string_value(meta(ev, "process_name", 100, -1)), "GPU 0: Fake GPU A");
    CHECK_STR(json_string_value(meta(ev, "process_name", 101, -1)), "GPU 1: Fake GPU B");
    CHECK_STR(json_string_value(meta(ev, "process_name", 1, -1)), "host: rich_app (pid 777)");
    CHECK_STR(json_string_value(meta(ev, "thread_name", 100, 13)), "stream 13");
    CHECK_STR(json_string_value(meta(ev, "thread_name", 100, 14)), "stream 14");
    CHECK_STR(json_string_value(meta(ev, "thread_name", 101, 21)), "stream 21");
    CHECK_STR(json_string_value(meta(ev, "thread_name", 1, 2)), "NVTX");
    CHECK_INT(count(ev, "M", "process_name"), 3);
    CHECK_INT(count(ev, "M", "thread_name"), 8);
    /* Each track labelled before its first event. */
    for (size_t i = 0; i < json_array_size(ev); i++) {
        json_t *e = json_array_get(ev, i);
        if (strcmp(sget(e, "ph"), "X") != 0)
            continue;
        bool labelled = false;
        for (size_t k = 0; k < i && !labelled; k++) {
            json_t *mm = json_array_get(ev, k);
            labelled = strcmp(sget(mm, "ph"), "M") == 0 &&
                       strcmp(sget(mm, "name"), "thread_name") == 0 &&
                       iget(mm, "pid") == iget(e, "pid") && iget(mm, "tid") == iget(e, "tid");
        }
        CHECK(labelled);
    }
    /* X events, 28 counters, 2 metadata per process and per thread. */
    size_t x = 8 + 5 + 2 + 4 + (crashed ? 1 : 0) + 1; /* + the session */
    CHECK_INT(json_array_size(ev), x + 28 + 3 * 2 + 8 * 2);
    json_decref(j);
    free(o.text);
    fl_rmtree(tmp);
}

static void test_rich_csv(void)
{
    char tmp[1024], dir[4096];
    CHECK(rs_tmpdir(tmp, sizeof tmp, "export-csv") == 0);
    CHECK(rs_write(tmp, false, dir, sizeof dir) == 0);
    out o;
    if (run_export(dir, FL_EXPORT_CSV_KERNELS, &o) != 0) {
        free(o.text);
        fl_rmtree(tmp);
        return;
    }
    static const char *const want[] = {
        "start_ns,end_ns,duration_ns,device_id,stream_id,corr_id,kernel_id,name,grid,block,"
        "registers,dyn_shared_bytes,static_shared_bytes,occupancy,user_scope,external_kind,"
        "external_id,op",
        "1760000000001000000,1760000000001100000,100000,0,7,101,1,"
        "\"gemm_kernel(float const*, float*)\",\"(64,64,1)\",\"(16,16,1)\",64,1024,8192,0.5,"
        "train|step,,,",
        "1760000000001150000,1760000000001170000,20000,0,7,102,2,\"relu(float*, int)\","
        "\"(256,64,1)\",\"(16,16,1)\",16,1024,8192,1,global,,,",
        "1760000000001150000,1760000000001200000,50000,0,13,104,3,copy_kernel,\"(32,64,1)\","
        "\"(16,16,1)\",32,1024,8192,,,,,",
        "1760000000001200000,1760000000001310000,110000,0,7,103,1,"
        "\"gemm_kernel(float const*, float*)\",\"(64,64,1)\",\"(16,16,1)\",64,1024,8192,0.5,"
        "train|step,,,",
        "1760000000001400000,1760000000001520000,120000,0,7,105,1,"
        "\"gemm_kernel(float const*, float*)\",\"(64,64,1)\",\"(16,16,1)\",64,1024,8192,0.5,"
        "train|step,,,",
        "1760000000002000000,1760000000002300000,300000,0,7,201,1,"
        "\"gemm_kernel(float const*, float*)\",\"(128,64,1)\",\"(16,16,1)\",64,1024,8192,0.5,"
        "train|step,,,",
        "1760000000002400000,1760000000002410000,10000,0,14,202,4,\"odd, \"\"quoted\"\" name\","
        "\"(8,64,1)\",\"(16,16,1)\",40,1024,8192,0.25,train,2,77,",
        "1760000000002500000,1760000000002525000,25000,0,7,203,2,\"relu(float*, int)\","
        "\"(256,64,1)\",\"(16,16,1)\",16,1024,8192,1,global,,,",
    };
    size_t n = sizeof want / sizeof want[0], i = 0;
    char *save = NULL;
    for (char *line = strtok_r(o.text, "\n", &save); line; line = strtok_r(NULL, "\n", &save)) {
        if (i < n)
            CHECK_STR(line, want[i]);
        i++;
    }
    CHECK_INT(i, n);
    free(o.text);
    fl_rmtree(tmp);
}

/* report_session.h's hand-written session: two devices, kernel rows and
 * a copy without a device_id column -> pid 99 "GPU ?"; the row of a batch
 * with the column on its device (pid 101). */
static void test_nodev_trace(void)
{
    char tmp[1024], dir[4096];
    CHECK(rs_tmpdir(tmp, sizeof tmp, "export-nodev") == 0);
    CHECK(rs_write_nodev(tmp, dir, sizeof dir) == 0);
    out o;
    if (run_export(dir, FL_EXPORT_CHROME_TRACE, &o) != 0) {
        free(o.text);
        fl_rmtree(tmp);
        return;
    }
    json_t *j = parse(o.text);
    json_t *ev = json_object_get(j, "traceEvents");
    check_shapes(ev);
    json_t *od = json_object_get(j, "otherData");
    CHECK_STR(sget(od, "origin"), "job_start");
    CHECK(json_is_false(json_object_get(od, "crashed")));
    const char *gemm = "gemm_kernel(float const*, float*)";
    CHECK_INT(count(ev, "X", "kernel"), 3);
    CHECK_X(find(ev, "X", gemm, 0), 1000.0, 100.0, 99, 7);
    CHECK_X(find(ev, "X", "relu(float*, int)", 0), 1050.0, 100.0, 99, 9);
    CHECK_X(find(ev, "X", gemm, 1), 2000.0, 40.0, 101, 7);
    CHECK_INT(count(ev, "X", "memcpy"), 1);
    json_t *cp = find(ev, "X", "memcpy HtoD", 0);
    CHECK_X(cp, 3000.0, 20.0, 99, 7);
    CHECK_INT(iget(pe(cp), "bytes"), RS_MIB);
    CHECK(json_object_get(args(cp), "src_device_id") == NULL);
    /* Labels: processes 99 and 101 (nothing on GPU 0) and the host (the session's span alone);
     * threads (99: 7 9), (101: 7). */
    CHECK_STR(json_string_value(meta(ev, "process_name", 99, -1)), "GPU ? (device not recorded)");
    CHECK_INT(json_integer_value(meta(ev, "process_sort_index", 99, -1)), 99);
    CHECK_STR(json_string_value(meta(ev, "process_name", 101, -1)), "GPU 1: Fake GPU B");
    CHECK_STR(json_string_value(meta(ev, "thread_name", 99, 9)), "stream 9");
    CHECK_INT(count(ev, "M", "process_name"), 3);
    CHECK_INT(count(ev, "M", "thread_name"), 4);
    /* + the session's event, its host process and its thread. */
    CHECK_INT(json_array_size(ev), 4 + 1 + 3 * 2 + 4 * 2);
    json_decref(j);
    free(o.text);
    fl_rmtree(tmp);
}

static void test_nodev_csv(void)
{
    char tmp[1024], dir[4096];
    CHECK(rs_tmpdir(tmp, sizeof tmp, "export-nodev-csv") == 0);
    CHECK(rs_write_nodev(tmp, dir, sizeof dir) == 0);
    out o;
    if (run_export(dir, FL_EXPORT_CSV_KERNELS, &o) != 0) {
        free(o.text);
        fl_rmtree(tmp);
        return;
    }
    /* device_id empty where the row does not say it (two devices). */
    CHECK_STR(o.text,
              "start_ns,end_ns,duration_ns,device_id,stream_id,corr_id,kernel_id,name,grid,block,"
              "registers,dyn_shared_bytes,static_shared_bytes,occupancy,user_scope,external_kind,"
              "external_id,op\n"
              "1760000000001000000,1760000000001100000,100000,,7,501,1,"
              "\"gemm_kernel(float const*, float*)\",,,64,0,,,,,,\n"
              "1760000000001050000,1760000000001150000,100000,,9,502,2,"
              "\"relu(float*, int)\",,,16,0,,,,,,\n"
              "1760000000002000000,1760000000002040000,40000,1,7,503,1,"
              "\"gemm_kernel(float const*, float*)\",,,64,1024,,,,,,\n");
    free(o.text);
    fl_rmtree(tmp);
}

/* Graph launches, synchronizations and a kernel missing from kernel_dict,
 * fed through the callbacks; no job_start: the origin is the first time
 * read. */
static void test_direct(void)
{
    char *text = NULL;
    size_t len = 0;
    FILE *f = open_memstream(&text, &len);
    fl_export *e = fl_export_create(FL_EXPORT_CHROME_TRACE, f);
    fl_read_cb cb;
    fl_export_callbacks(e, &cb);
    static const char *const gcols[] = {"dt_ns",       "graph_id", "stream_id",
                                        "duration_ns", "corr_id",  "device_id"};
    static const char *const scols[] = {"dt_ns",    "duration_ns", "sync_type", "stream_id",
                                        "event_id", "context_id",  "corr_id",   "function_id"};
    fl_cell cells[16];
    memset(cells, 0, sizeof cells);
    int64_t g[6] = {0, 3, 9, 7000, 55, 1};
    for (int i = 0; i < 6; i++) {
        cells[i].kind = FL_CELL_INT;
        cells[i].i = g[i];
    }
    fl_batch b;
    memset(&b, 0, sizeof b);
    b.type = "graph_event_batch";
    b.base_time_ns = 5000000;
    b.ncols = 6;
    b.cols = gcols;
    b.nrows = 1;
    b.cells = cells;
    fl_batch_map_columns(&b);
    cb.batch(cb.user, &b);
    int64_t sy[8] = {1500, 2500, 3, 9, 0, 1, 56, 0};
    for (int i = 0; i < 8; i++) {
        cells[i].kind = FL_CELL_INT;
        cells[i].i = sy[i];
    }
    b.type = "synchronization_event_batch";
    b.ncols = 8;
    b.cols = scols;
    fl_batch_map_columns(&b);
    cb.batch(cb.user, &b);
    int64_t k[10] = {500, 42, 9, 1000, 57, 0, 8, 0, 0, 0};
    for (int i = 0; i < 10; i++) {
        cells[i].kind = FL_CELL_INT;
        cells[i].i = k[i];
    }
    b.type = "kernel_event_batch";
    b.ncols = 10;
    b.cols = kcols_direct;
    fl_batch_map_columns(&b);
    cb.batch(cb.user, &b);
    CHECK_INT(fl_export_finish(e, NULL), 0);
    fl_export_destroy(e);
    fclose(f);
    json_t *j = parse(text);
    json_t *ev = json_object_get(j, "traceEvents");
    check_shapes(ev);
    CHECK_X(find(ev, "X", "graph launch", 0), 0.0, 7.0, 101, 9);
    CHECK_INT(iget(args(find(ev, "X", "graph launch", 0)), "graph_id"), 3);
    CHECK_X(find(ev, "X", "sync stream", 0), 1.5, 2.5, 1, 3);
    CHECK_STR(json_string_value(meta(ev, "thread_name", 1, 3)), "synchronization");
    /* No device for the kernel and no job_start listing one: "GPU ?". */
    CHECK_X(find(ev, "X", "kernel 42", 0), 0.5, 1.0, 99, 9);
    json_t *od = json_object_get(j, "otherData");
    CHECK_STR(sget(od, "origin"), "first_record");
    CHECK_U64(iget(od, "origin_ns"), 5000000);
    CHECK(json_is_true(json_object_get(od, "crashed")));
    json_decref(j);
    free(text);
}

/* ---------------------------------------------- what viewers need */

/* One batch of nrows x ncols integer cells through cb. */
static void feed(fl_read_cb *cb, const char *type, uint64_t base, const char *const *cols,
                 size_t ncols, const int64_t *vals, size_t nrows)
{
    fl_cell cells[64];
    memset(cells, 0, sizeof cells);
    for (size_t i = 0; i < ncols * nrows && i < 64; i++) {
        cells[i].kind = FL_CELL_INT;
        cells[i].i = vals[i];
    }
    fl_batch b;
    memset(&b, 0, sizeof b);
    b.type = type;
    b.base_time_ns = base;
    b.ncols = ncols;
    b.cols = cols;
    b.nrows = nrows;
    b.cells = cells;
    fl_batch_map_columns(&b);
    cb->batch(cb->user, &b);
}

/* A trace of a session that began at 5 ms (job_start): with kernels,
 * three launches of kernel 42, the first timed 0.5 us before job_start;
 * else the device counters alone (a Monitor session). */
static char *viewer_trace(bool kernels)
{
    char *text = NULL;
    size_t len = 0;
    FILE *f = open_memstream(&text, &len);
    fl_export *e = fl_export_create(FL_EXPORT_CHROME_TRACE, f);
    fl_read_cb cb;
    fl_export_callbacks(e, &cb);
    json_t *js = json_pack("{s:s, s:s, s:I}", "type", "job_start", "app", "viewer_app", "ts_ns",
                           (json_int_t)5000000);
    cb.record(cb.user, 0, FL_T_JOB_START, "job_start", js);
    json_decref(js);
    if (kernels) {
        int64_t k[3 * 10] = {999500,  42, 9, 1000, 57, 0, 8, 0, 0, 0, /* before job_start */
                             1001000, 42, 9, 2000, 58, 0, 8, 0, 0, 0,
                             1004000, 42, 9, 3000, 59, 0, 8, 0, 2, 7};
        feed(&cb, "kernel_event_batch", 4000000, kcols_direct, 10, k, 3);
    }
    static const char *const dcols[] = {"dt_ns", "device_id", "gpu_util", "mem_util"};
    int64_t d[2 * 4] = {0, 0, 40, 10, 100000, 0, 90, 20};
    feed(&cb, "device_metric_batch", 5000000, dcols, 4, d, 2);
    CHECK_INT(fl_export_finish(e, NULL), 0);
    fl_export_destroy(e);
    fclose(f);
    return text;
}

/* Every event has a category and no negative time. */
static void check_viewable(json_t *ev)
{
    size_t bad = 0;
    for (size_t i = 0; i < json_array_size(ev); i++) {
        json_t *x = json_array_get(ev, i);
        const char *cat = sget(x, "cat");
        json_t *ts = json_object_get(x, "ts");
        if (!*cat || (ts && !(json_number_value(ts) >= 0))) {
            char *t = json_dumps(x, 0);
            fprintf(stderr, "not viewable: %s\n", t ? t : "?");
            free(t);
            bad++;
        }
    }
    CHECK_INT(bad, 0);
}

/* Issue 37: a Monitor session's trace has a span (speedscope shows a
 * profile only for a thread with one); launches of one kernel share
 * their args (speedscope keys a frame by name and args), their ids under
 * per_event; every event has a cat; nothing before the origin. */
static void test_viewers(void)
{
    char *text = viewer_trace(false);
    json_t *j = parse(text);
    json_t *ev = json_object_get(j, "traceEvents");
    check_shapes(ev);
    check_viewable(ev);
    CHECK_INT(count(ev, "C", "util"), 2);
    CHECK_INT(count(ev, "X", NULL), 1);
    json_t *s = find(ev, "X", "session", 0);
    CHECK_X(s, 0.0, 100.0, 1, 0);
    CHECK_STR(sget(s, "cat"), "session");
    CHECK_STR(sget(args(s), "app"), "viewer_app");
    CHECK_STR(json_string_value(meta(ev, "thread_name", 1, 0)), "session");
    CHECK_STR(sget(find(ev, "C", "util", 0), "cat"), "gpu_metrics");
    CHECK_STR(sget(find(ev, "M", "thread_name", 0), "cat"), "__metadata");
    json_decref(j);
    free(text);

    text = viewer_trace(true);
    j = parse(text);
    ev = json_object_get(j, "traceEvents");
    check_shapes(ev);
    check_viewable(ev);
    CHECK_INT(count(ev, "X", "kernel 42"), 3);
    /* The first, 0.5 us before job_start: from the origin, its part
     * before cut. */
    CHECK_X(find(ev, "X", "kernel 42", 0), 0.0, 0.5, 99, 9);
    CHECK_X(find(ev, "X", "kernel 42", 1), 1.0, 2.0, 99, 9);
    CHECK_INT(iget(json_object_get(j, "otherData"), "clipped_before_origin"), 1);
    json_t *a0 = args(find(ev, "X", "kernel 42", 0));
    for (size_t i = 0; i < 3; i++) {
        json_t *k = find(ev, "X", "kernel 42", i);
        CHECK(json_equal(args(k), a0));
        CHECK_INT(iget(pe(k), "corr_id"), 57 + (long long)i);
        CHECK(json_object_get(args(k), "corr_id") == NULL);
    }
    CHECK_INT(iget(args(find(ev, "X", "kernel 42", 2)), "kernel_id"), 42);
    CHECK_INT(iget(pe(find(ev, "X", "kernel 42", 2)), "external_id"), 7);
    CHECK(json_object_get(args(find(ev, "X", "kernel 42", 2)), "external_id") == NULL);
    json_decref(j);
    free(text);
}

/* --------------------------------------------------- errors, memory */

static void test_write_error(void)
{
    FILE *f = fopen("/dev/full", "w");
    if (!f) {
        printf("no /dev/full: write-error check skipped\n");
        return;
    }
    setvbuf(f, NULL, _IONBF, 0);
    fl_export *e = fl_export_create(FL_EXPORT_CHROME_TRACE, f);
    fl_read_cb cb;
    fl_export_callbacks(e, &cb);
    json_t *js =
        json_pack("{s:s, s:I, s:s}", "type", "job_start", "ts_ns", (json_int_t)1000, "app", "x");
    cb.record(cb.user, FL_CH_DEVICE, FL_T_JOB_START, "job_start", js);
    json_decref(js);
    CHECK_INT(fl_export_finish(e, NULL), -1);
    fl_export_destroy(e);
    fclose(f);
    CHECK(fl_export_create(FL_EXPORT_CSV_KERNELS, NULL) == NULL);
    fl_export_destroy(NULL);
}

static const char *const kcols[] = {"dt_ns",         "kernel_id",  "stream_id", "duration_ns",
                                    "corr_id",       "dyn_shared", "num_regs",  "has_details",
                                    "external_kind", "external_id"};

/* 1 M kernel rows of 10 kernels on 4 streams through the Chrome export
 * into /dev/null: the heap does not grow after the first 100 k. */
static void test_memory(void)
{
    FILE *f = fopen("/dev/null", "w");
    CHECK(f != NULL);
    if (!f)
        return;
    fl_export *e = fl_export_create(FL_EXPORT_CHROME_TRACE, f);
    fl_read_cb cb;
    fl_export_callbacks(e, &cb);
    enum { PER = 512 };
    fl_cell *cells = calloc(PER * 10, sizeof *cells);
    fl_batch b;
    memset(&b, 0, sizeof b);
    b.type = "kernel_event_batch";
    b.ncols = 10;
    b.cols = kcols;
    b.cells = cells;
    size_t heap_early = 0;
    uint64_t corr = 0;
    for (size_t done = 0; done < 1000000;) {
        b.base_time_ns = 1000000000ull + done * 1000;
        b.nrows = 0;
        for (size_t i = 0; i < PER && done < 1000000; i++, done++) {
            int64_t v[10] = {(int64_t)i * 1000,
                             (int64_t)(done % 10) + 1,
                             (int64_t)(done % 4),
                             500,
                             (int64_t)++corr,
                             0,
                             32,
                             0,
                             0,
                             0};
            for (int c = 0; c < 10; c++) {
                cells[b.nrows * 10 + (size_t)c].kind = FL_CELL_INT;
                cells[b.nrows * 10 + (size_t)c].i = v[c];
            }
            b.nrows++;
        }
        fl_batch_map_columns(&b);
        cb.batch(cb.user, &b);
        if (done == 100352)
            heap_early = mallinfo2().uordblks;
    }
    size_t heap_late = mallinfo2().uordblks;
    printf("export heap: %zu after 100 k rows, %zu after 1 M\n", heap_early, heap_late);
#if !defined(__SANITIZE_ADDRESS__)
    CHECK(heap_late <= heap_early + 4096);
#endif
    CHECK_INT(fl_export_finish(e, NULL), 0);
    fl_export_destroy(e);
    free(cells);
    fclose(f);
}

/* The formats are one table (export.h's FL_EXPORTERS, issue 34): each
 * row's --format word finds its own id, the names join as the command
 * prints them, only the Chrome trace takes absolute time, and a word or an
 * id that is no row is refused. */
static void test_exporter_rows(void)
{
    CHECK_INT(FL_EXPORT_N, 3);
    for (int i = 0; i < FL_EXPORT_N; i++) {
        CHECK(fl_exporters[i].name && fl_exporters[i].help && fl_exporters[i].hooks);
        CHECK_INT(fl_export_format_of(fl_exporters[i].name), i);
    }
    CHECK_STR(fl_exporters[FL_EXPORT_CHROME_TRACE].name, "chrome-trace");
    CHECK_STR(fl_exporters[FL_EXPORT_CSV_KERNELS].name, "csv");
    CHECK(fl_exporters[FL_EXPORT_CHROME_TRACE].absolute_time);
    CHECK(!fl_exporters[FL_EXPORT_CSV_KERNELS].absolute_time);
    CHECK_STR(fl_exporters[FL_EXPORT_SQLITE].name, "sqlite");
    CHECK(!fl_exporters[FL_EXPORT_SQLITE].absolute_time);
    /* only SQLite writes a file by its path */
    CHECK(fl_export_writes_file(FL_EXPORT_SQLITE));
    CHECK(!fl_export_writes_file(FL_EXPORT_CSV_KERNELS));
    CHECK(!fl_export_writes_file(FL_EXPORT_CHROME_TRACE));
    CHECK(!fl_export_writes_file(FL_EXPORT_N));
    CHECK_STR(FL_EXPORT_NAMES_OR, "chrome-trace or csv or sqlite");
    CHECK_STR(FL_EXPORT_NAMES_BAR, "chrome-trace|csv|sqlite");
    CHECK_STR(FL_EXPORT_NAMES_SP, "chrome-trace csv sqlite");
    CHECK_INT(fl_export_format_of("chrome"), -1);
    CHECK_INT(fl_export_format_of(""), -1);
    CHECK_INT(fl_export_format_of(NULL), -1);
    CHECK(fl_export_create(FL_EXPORT_N, stdout) == NULL);
    CHECK(fl_export_create((fl_export_format)-1, stdout) == NULL);
    /* A run: chrome-trace and CSV take every process, SQLite one session. */
    CHECK(fl_export_takes_run(FL_EXPORT_CHROME_TRACE));
    CHECK(fl_export_takes_run(FL_EXPORT_CSV_KERNELS));
    CHECK(!fl_export_takes_run(FL_EXPORT_SQLITE));
    CHECK(!fl_export_takes_run(FL_EXPORT_N));
    FILE *f = tmpfile();
    fl_export *e = fl_export_create(FL_EXPORT_SQLITE, f);
    fl_export_process p = {.index = 0, .pid = 7, .have_pid = true};
    CHECK_INT(fl_export_begin_process(e, &p), -1);
    fl_export_destroy(e);
    /* An empty CSV export of two processes: the run's header, once. */
    e = fl_export_create(FL_EXPORT_CSV_KERNELS, f);
    CHECK_INT(fl_export_begin_process(e, &p), 0);
    p.index = 1;
    CHECK_INT(fl_export_begin_process(e, &p), 0);
    CHECK_INT(fl_export_finish(e, NULL), 0);
    CHECK_INT(fl_export_begin_process(e, &p), -1); /* after finish */
    fl_export_destroy(e);
    rewind(f);
    char text[512] = "";
    size_t n = fread(text, 1, sizeof text - 1, f);
    text[n] = 0;
    CHECK_STR(text, "start_ns,end_ns,duration_ns,device_id,stream_id,corr_id,kernel_id,name,grid,"
                    "block,registers,dyn_shared_bytes,static_shared_bytes,occupancy,user_scope,"
                    "external_kind,external_id,op,pid,rank\n");
    fclose(f);
}

int main(void)
{
    test_fixture_trace();
    test_fixture_absolute();
    test_fixture_csv();
    test_rich_trace(false);
    test_rich_trace(true);
    test_rich_csv();
    test_nodev_trace();
    test_nodev_csv();
    test_direct();
    test_viewers();
    test_write_error();
    test_memory();
    test_exporter_rows();
    return check_done("test_export");
}
