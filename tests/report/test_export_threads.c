/*
 * test_export_threads.c - the Chrome trace puts each thread's gpufl scopes
 * on a track of its own (src/report/export.c, scope_event_batch's tid
 * column, issue 15): two threads whose scopes overlap in time nest per
 * track ("scopes: thread T", tid 16 + T), a scope that ends on another
 * thread stays on its begin's track, one still open at the end too; a
 * session without the column keeps the single "scopes" track.  Also a
 * session recorded by the real recorder from two threads.
 */
#include "check.h"
#include "reader/read.h"
#include "report/export.h"
#include "util/buf.h"
#include "wire/records.h"
#include "fl_log.h"
#include "gpufl.h"

#include <pthread.h>
#include <sys/stat.h>

#define SID "5a5a5a5a-1111-4222-8333-444444444444"
#define T0 1760000000000000000ull
#define US 1000ull

static char g_tmp[256];

/* A scope session on disk: job_start, the names, the batch, shutdown. */
static void write_session(const char *dir, const fl_scope_event *ev, size_t n, bool with_tid,
                          bool shutdown)
{
    mkdir(dir, 0755);
    fl_buf b = {0};
    fl_ident id = {4242, "threads", SID};
    fl_job_start js;
    memset(&js, 0, sizeof js);
    js.ts_ns = T0;
    js.session_kind = "monitor";
    fl_rec_job_start(&b, &id, &js);
    fl_dict_entry names[] = {{1, "A"}, {2, "a1"}, {3, "B"}, {4, "b1"}, {5, "handoff"}};
    fl_rec_dictionary(&b, SID, FL_DICT_SCOPE_NAME, names, 5);
    if (with_tid) {
        fl_rec_scope_events(&b, SID, 1, ev, n);
    } else {
        fl_scope_row rows[32];
        for (size_t i = 0; i < n; i++)
            rows[i] = ev[i].row;
        fl_rec_scope_batch(&b, SID, 1, rows, n);
    }
    if (shutdown)
        fl_rec_shutdown(&b, &id, T0 + 500 * US);
    char path[600];
    snprintf(path, sizeof path, "%s/scope.log", dir);
    FILE *f = fopen(path, "w");
    CHECK(f != NULL);
    if (f) {
        fputs(b.p, f);
        fclose(f);
    }
    fl_buf_free(&b);
}

static json_t *export_trace(const char *dir)
{
    char *text = NULL;
    size_t len = 0;
    FILE *f = open_memstream(&text, &len);
    fl_export *e = fl_export_create(FL_EXPORT_CHROME_TRACE, f);
    fl_read_cb cb;
    fl_export_callbacks(e, &cb);
    fl_read_opts opts;
    fl_read_opts_init(&opts);
    fl_read_result res;
    gp_error err;
    CHECK_INT(fl_read_session(dir, &opts, &cb, &res, &err), GP_OK);
    CHECK_INT(fl_export_finish(e, &res), 0);
    fl_export_destroy(e);
    fclose(f);
    json_error_t je;
    json_t *j = json_loads(text ? text : "", JSON_REJECT_DUPLICATES, &je);
    CHECK(j != NULL);
    free(text);
    return json_object_get(j, "traceEvents") ? j : NULL;
}

static const char *sget(const json_t *o, const char *k)
{
    const char *s = json_string_value(json_object_get(o, k));
    return s ? s : "";
}

/* The scope X event named name: its tid, ts and dur (us). */
static bool scope_of(json_t *events, const char *name, long long *tid, double *ts, double *dur)
{
    for (size_t i = 0; i < json_array_size(events); i++) {
        json_t *ev = json_array_get(events, i);
        if (strcmp(sget(ev, "ph"), "X") == 0 && strcmp(sget(ev, "cat"), "scope") == 0 &&
            strcmp(sget(ev, "name"), name) == 0) {
            *tid = (long long)json_integer_value(json_object_get(ev, "tid"));
            *ts = json_number_value(json_object_get(ev, "ts"));
            *dur = json_number_value(json_object_get(ev, "dur"));
            return true;
        }
    }
    fprintf(stderr, "no scope %s\n", name);
    return false;
}

static const char *thread_name(json_t *events, long long tid)
{
    for (size_t i = 0; i < json_array_size(events); i++) {
        json_t *ev = json_array_get(events, i);
        if (strcmp(sget(ev, "ph"), "M") == 0 && strcmp(sget(ev, "name"), "thread_name") == 0 &&
            json_integer_value(json_object_get(ev, "pid")) == 1 &&
            json_integer_value(json_object_get(ev, "tid")) == tid)
            return sget(json_object_get(ev, "args"), "name");
    }
    return "(none)";
}

/* Every two scope events of one track are disjoint or one holds the
 * other: what a trace viewer needs to draw them nested. */
static int misnested(json_t *events)
{
    int bad = 0;
    size_t n = json_array_size(events);
    for (size_t i = 0; i < n; i++) {
        json_t *x = json_array_get(events, i);
        if (strcmp(sget(x, "cat"), "scope") != 0)
            continue;
        for (size_t k = i + 1; k < n; k++) {
            json_t *y = json_array_get(events, k);
            if (strcmp(sget(y, "cat"), "scope") != 0 ||
                json_integer_value(json_object_get(x, "tid")) !=
                    json_integer_value(json_object_get(y, "tid")))
                continue;
            double a0 = json_number_value(json_object_get(x, "ts")),
                   a1 = a0 + json_number_value(json_object_get(x, "dur"));
            double b0 = json_number_value(json_object_get(y, "ts")),
                   b1 = b0 + json_number_value(json_object_get(y, "dur"));
            bool disjoint = a1 <= b0 || b1 <= a0;
            bool nested = (a0 <= b0 && b1 <= a1) || (b0 <= a0 && a1 <= b1);
            if (!disjoint && !nested)
                bad++;
        }
    }
    return bad;
}

/* Thread 100: A [0, 100] > a1 [10, 40]; thread 200: B [20, 120] > b1
 * [50, 110]; "handoff" begins on 100 at 130 and ends on 200 at 150 (us). */
static size_t overlapping(fl_scope_event *ev)
{
    struct {
        uint64_t t, id, start;
        uint32_t name;
        uint16_t depth;
        uint8_t type;
        uint32_t tid;
    } r[] = {{0, 1, 0, 1, 0, 0, 100},    {10, 2, 10, 2, 1, 0, 100},  {20, 3, 20, 3, 0, 0, 200},
             {40, 2, 10, 2, 1, 1, 100},  {50, 4, 50, 4, 1, 0, 200},  {100, 1, 0, 1, 0, 1, 100},
             {110, 4, 50, 4, 1, 1, 200}, {120, 3, 20, 3, 0, 1, 200}, {130, 5, 130, 5, 0, 0, 100},
             {150, 5, 130, 5, 0, 1, 200}};
    size_t n = sizeof r / sizeof r[0];
    for (size_t i = 0; i < n; i++)
        ev[i] = (fl_scope_event){.row = {.t_ns = T0 + r[i].t * US,
                                         .instance_id = r[i].id,
                                         .original_start_ns = T0 + r[i].start * US,
                                         .name_id = r[i].name,
                                         .depth = r[i].depth,
                                         .event_type = r[i].type},
                                 .tid = r[i].tid};
    return n;
}

static void test_tracks_per_thread(void)
{
    fl_scope_event ev[16];
    size_t n = overlapping(ev);
    char dir[512];
    snprintf(dir, sizeof dir, "%s/with_tid", g_tmp);
    write_session(dir, ev, n, true, true);
    json_t *j = export_trace(dir);
    json_t *events = json_object_get(j, "traceEvents");
    long long tid;
    double ts, dur;
    CHECK(scope_of(events, "A", &tid, &ts, &dur));
    CHECK_INT(tid, 116);
    CHECK_NEAR(ts, 0.0, 1e-9);
    CHECK_NEAR(dur, 100.0, 1e-9);
    CHECK(scope_of(events, "a1", &tid, &ts, &dur));
    CHECK_INT(tid, 116);
    CHECK(scope_of(events, "B", &tid, &ts, &dur));
    CHECK_INT(tid, 216);
    CHECK_NEAR(ts, 20.0, 1e-9);
    CHECK_NEAR(dur, 100.0, 1e-9);
    CHECK(scope_of(events, "b1", &tid, &ts, &dur));
    CHECK_INT(tid, 216);
    /* Ended on thread 200: drawn where it began. */
    CHECK(scope_of(events, "handoff", &tid, &ts, &dur));
    CHECK_INT(tid, 116);
    CHECK_NEAR(dur, 20.0, 1e-9);
    CHECK_STR(thread_name(events, 116), "scopes: thread 100");
    CHECK_STR(thread_name(events, 216), "scopes: thread 200");
    CHECK_STR(thread_name(events, 1), "(none)");
    CHECK_INT(misnested(events), 0);
    json_decref(j);

    /* The same rows without the tid column: one track, as before - and
     * there A and B overlap without nesting. */
    snprintf(dir, sizeof dir, "%s/without_tid", g_tmp);
    write_session(dir, ev, n, false, true);
    j = export_trace(dir);
    events = json_object_get(j, "traceEvents");
    CHECK(scope_of(events, "A", &tid, &ts, &dur));
    CHECK_INT(tid, 1);
    CHECK(scope_of(events, "B", &tid, &ts, &dur));
    CHECK_INT(tid, 1);
    CHECK_STR(thread_name(events, 1), "scopes");
    CHECK(misnested(events) > 0);
    json_decref(j);

    /* B never ends (a crashed run): written at the end, on its thread. */
    snprintf(dir, sizeof dir, "%s/open", g_tmp);
    write_session(dir, ev, 7, true, false);
    j = export_trace(dir);
    events = json_object_get(j, "traceEvents");
    CHECK(scope_of(events, "B", &tid, &ts, &dur));
    CHECK_INT(tid, 216);
    json_decref(j);
}

/* ---------------------------------------- recorded by the real recorder */

static pthread_barrier_t g_bar;

static void *worker(void *arg)
{
    const char *name = arg;
    gpufl_scope s = gpufl_scope_begin(name);
    pthread_barrier_wait(&g_bar); /* both open: they overlap */
    gpufl_scope in = gpufl_scope_begin("inner");
    pthread_barrier_wait(&g_bar);
    gpufl_scope_end(&in);
    pthread_barrier_wait(&g_bar);
    gpufl_scope_end(&s);
    return NULL;
}

static void test_recorded(void)
{
    char base[512];
    snprintf(base, sizeof base, "%s/recorded", g_tmp);
    gpufl_init_options o;
    gpufl_init_options_init(&o);
    o.app_name = "threads";
    o.log_path = base;
    o.backend = GPUFL_BACKEND_NONE;
    gpufl_error err;
    CHECK_INT(gpufl_init(&o, &err), GPUFL_OK);
    char dir[600];
    gpufl_session_dir(dir, sizeof dir);
    pthread_barrier_init(&g_bar, NULL, 2);
    pthread_t a, b;
    pthread_create(&a, NULL, worker, "first");
    pthread_create(&b, NULL, worker, "second");
    pthread_join(a, NULL);
    pthread_join(b, NULL);
    pthread_barrier_destroy(&g_bar);
    gpufl_shutdown();
    json_t *j = export_trace(dir);
    json_t *events = json_object_get(j, "traceEvents");
    long long t1, t2;
    double ts, dur;
    CHECK(scope_of(events, "first", &t1, &ts, &dur));
    CHECK(scope_of(events, "second", &t2, &ts, &dur));
    CHECK(t1 != t2);
    CHECK(t1 > 16 && t2 > 16);
    CHECK_INT(misnested(events), 0);
    json_decref(j);
}

int main(void)
{
    snprintf(g_tmp, sizeof g_tmp, "/tmp/gp_export_threads_%d", (int)getpid());
    mkdir(g_tmp, 0755);
    test_tracks_per_thread();
    test_recorded();
    fl_rmtree(g_tmp);
    return check_done("test_export_threads");
}
