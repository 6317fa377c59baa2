/*
 * test_gpufl_compat.c - what GPUFlight 1.3's analyzer needs of the sessions
 * the recorder writes (issue 15, docs/gpufl.md "What GPUFlight's analyzer
 * needs"), end to end against the fake NVML:
 *
 *  - host_metric_batch rows only with every value known (the analyzer
 *    divides cpu_pct_x100 and takes int() of the RAM): no null cell, and
 *    no row from the first round, whose CPU % is not known yet;
 *  - device_metric_batch columns only once a row of the session had a
 *    value (a device that never reports power or memory has no such
 *    column; the analyzer's int(used_mib.max()) fails on an all-null one),
 *    and from then on in every batch;
 *  - scope_event_batch rows carry the thread they ran on (tid);
 *  - gpufl_scope_begin_bench's repeat and warmup on the begin row only,
 *    GPUFlight's benchmark metadata (issue 36), and its original_start_ns
 *    the begin's own time;
 *  - compact_kernel_details (one kernel_detail per configuration instead
 *    of per launch) from code, GPUFL_COMPACT_KERNEL_DETAILS and the config
 *    file, false by default, with its provenance.
 */
#include "recorder/config.h"
#include "fl_log.h"
#include "gpufl.h"

#include <errno.h>
#include <pthread.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

static char g_tmp[256];

static void sleep_ms(int ms)
{
    struct timespec ts = {ms / 1000, (long)(ms % 1000) * 1000000L};
    while (nanosleep(&ts, &ts) != 0 && errno == EINTR)
        ;
}

static gpufl_init_options base_opts(const char *sub)
{
    static char path[512];
    snprintf(path, sizeof path, "%s/%s", g_tmp, sub);
    gpufl_init_options o;
    gpufl_init_options_init(&o);
    o.app_name = "compat";
    o.log_path = path;
    return o;
}

/* A fake NVML scenario file in the test's directory. */
static const char *scenario(const char *name, const char *text)
{
    static char path[600];
    snprintf(path, sizeof path, "%s/%s", g_tmp, name);
    FILE *f = fopen(path, "w");
    CHECK(f != NULL);
    if (f) {
        fputs(text, f);
        fclose(f);
    }
    return path;
}

static bool has_column(json_t *batch, const char *name)
{
    return fl_col(batch, name) >= 0;
}

/* ------------------------------------------------------------ metrics */

static void test_metric_rows(void)
{
    /* One device that reports neither power nor memory. */
    setenv("FAKE_NVML_SCENARIO",
           scenario("no_power_mem.txt", "device 0 name \"Fake A\"\n"
                                        "unsupported 0 power\n"
                                        "unsupported 0 mem\n"),
           1);
    gpufl_init_options o = base_opts("metrics");
    o.system_sample_rate_ms = 5;
    o.continuous_system_sampling = true;
    gpufl_error err;
    CHECK_INT(gpufl_init(&o, &err), GPUFL_OK);
    char dir[600];
    gpufl_session_dir(dir, sizeof dir);
    /* Several batches of each (a loaded machine may run the sampler late). */
    for (int i = 0; i < 300; i++) {
        sleep_ms(10);
        gpufl_flush();
        fl_log now;
        if (fl_log_read(&now, dir, "system") != 0)
            continue;
        bool enough =
            fl_count(&now, "device_metric_batch") >= 3 && fl_count(&now, "host_metric_batch") >= 3;
        fl_log_free(&now);
        if (enough)
            break;
    }
    gpufl_shutdown();
    unsetenv("FAKE_NVML_SCENARIO");

    fl_log sys;
    CHECK_INT(fl_log_read(&sys, dir, "system"), 0);

    /* Host rows: every cell a number (the first round's CPU % is usually
     * unknown - /proc/stat had not ticked since init's reading - and that
     * round then writes no host row). */
    size_t host_rows = 0, host_batches = 0;
    for (size_t i = 0; i < sys.n; i++) {
        json_t *b = sys.lines[i];
        if (strcmp(log_type(b), "host_metric_batch") != 0)
            continue;
        host_batches++;
        size_t r;
        json_t *row;
        json_array_foreach(json_object_get(b, "rows"), r, row)
        {
            CHECK_INT(json_array_size(row), 4);
            for (size_t c = 0; c < json_array_size(row); c++)
                CHECK(json_is_integer(json_array_get(row, c)));
            host_rows++;
        }
    }
    CHECK(host_batches >= 3);
    CHECK(host_rows >= 3);

    /* Device columns: no power, no memory; the others in every batch, in
     * the vocabulary's order; each column has a value in some row. */
    size_t dev_batches = 0;
    for (size_t i = 0; i < sys.n; i++) {
        json_t *b = sys.lines[i];
        if (strcmp(log_type(b), "device_metric_batch") != 0)
            continue;
        dev_batches++;
        CHECK(!has_column(b, "power_mw"));
        CHECK(!has_column(b, "used_mib"));
        CHECK(!has_column(b, "total_mib"));
        CHECK_INT(fl_col(b, "dt_ns"), 0);
        CHECK_INT(fl_col(b, "device_id"), 1);
        CHECK_INT(fl_col(b, "gpu_util"), 2);
        CHECK_INT(fl_col(b, "mem_util"), 3);
        CHECK_INT(fl_col(b, "temp_c"), 4);
        CHECK_INT(fl_col(b, "clock_sm"), 5);
        /* The energy counter is read in the first round and at the end:
         * its column, once there, stays (null between the readings). */
        if (dev_batches > 1)
            CHECK_INT(fl_col(b, "energy_uj"), 6);
        json_t *cols = json_object_get(b, "columns");
        for (size_t c = 0; c < json_array_size(cols); c++) {
            if (strcmp(json_string_value(json_array_get(cols, c)), "energy_uj") == 0)
                continue;
            size_t r;
            json_t *row;
            json_array_foreach(json_object_get(b, "rows"), r, row)
                CHECK(!json_is_null(json_array_get(row, c)));
        }
    }
    CHECK(dev_batches >= 3);
    fl_log_free(&sys);
}

/* ------------------------------------------------------------ threads */

typedef struct worker {
    const char *name;
    pthread_barrier_t *both_open;
    pid_t tid;
} worker;

/* Opens "name > inner" while the other worker has its scopes open too. */
static void *scope_worker(void *arg)
{
    worker *w = arg;
    w->tid = gettid();
    gpufl_scope outer = gpufl_scope_begin(w->name);
    gpufl_scope inner = gpufl_scope_begin("inner");
    pthread_barrier_wait(w->both_open);
    sleep_ms(2);
    gpufl_scope_end(&inner);
    gpufl_scope_end(&outer);
    return NULL;
}

static void test_scope_threads(void)
{
    gpufl_init_options o = base_opts("threads");
    o.backend = GPUFL_BACKEND_NONE;
    gpufl_error err;
    CHECK_INT(gpufl_init(&o, &err), GPUFL_OK);
    char dir[600];
    gpufl_session_dir(dir, sizeof dir);
    pthread_barrier_t bar;
    pthread_barrier_init(&bar, NULL, 2);
    worker w[2] = {{"alpha", &bar, 0}, {"beta", &bar, 0}};
    pthread_t th[2];
    for (int i = 0; i < 2; i++)
        pthread_create(&th[i], NULL, scope_worker, &w[i]);
    for (int i = 0; i < 2; i++)
        pthread_join(th[i], NULL);
    pthread_barrier_destroy(&bar);
    gpufl_shutdown();
    CHECK(w[0].tid != w[1].tid);

    fl_log scope;
    CHECK_INT(fl_log_read(&scope, dir, "scope"), 0);
    json_t *names = NULL;
    for (size_t i = 0; i < scope.n && !names; i++)
        names = json_object_get(scope.lines[i], "scope_name_dict");
    /* Each row's tid: the thread that ran it; alpha's and beta's rows,
     * their inner scopes included, on their own threads. */
    int rows = 0, per[2] = {0, 0};
    for (size_t i = 0; i < scope.n; i++) {
        json_t *b = scope.lines[i];
        if (strcmp(log_type(b), "scope_event_batch") != 0)
            continue;
        int c_tid = fl_col(b, "tid");
        CHECK_INT(c_tid, 8); /* after original_start_ns */
        size_t r;
        json_t *row;
        json_array_foreach(json_object_get(b, "rows"), r, row)
        {
            json_int_t tid = json_integer_value(json_array_get(row, (size_t)c_tid));
            CHECK(tid == w[0].tid || tid == w[1].tid);
            per[tid == w[1].tid]++;
            rows++;
        }
    }
    CHECK_INT(rows, 8);
    CHECK_INT(per[0], 4);
    CHECK_INT(per[1], 4);
    /* The outer scopes by name: alpha's begin is on alpha's thread. */
    for (size_t i = 0; i < scope.n; i++) {
        json_t *b = scope.lines[i];
        if (strcmp(log_type(b), "scope_event_batch") != 0)
            continue;
        size_t r;
        json_t *row;
        json_array_foreach(json_object_get(b, "rows"), r, row)
        {
            char id[24];
            snprintf(
                id, sizeof id, "%lld",
                (long long)json_integer_value(json_array_get(row, (size_t)fl_col(b, "name_id"))));
            const char *name = json_string_value(json_object_get(names, id));
            json_int_t tid = json_integer_value(json_array_get(row, (size_t)fl_col(b, "tid")));
            if (name && strcmp(name, "alpha") == 0)
                CHECK_INT(tid, w[0].tid);
            if (name && strcmp(name, "beta") == 0)
                CHECK_INT(tid, w[1].tid);
        }
    }
    fl_log_free(&scope);
}

/* The scope rows as "name event_type repeat warmup", sorted (rows at the
 * same ns may be written in either order). */
static int cmp_str(const void *a, const void *b)
{
    return strcmp(*(char *const *)a, *(char *const *)b);
}

static void test_bench_scopes(void)
{
    gpufl_init_options o = base_opts("bench");
    o.backend = GPUFL_BACKEND_NONE;
    gpufl_error err;
    CHECK_INT(gpufl_init(&o, &err), GPUFL_OK);
    char dir[600];
    gpufl_session_dir(dir, sizeof dir);
    gpufl_scope w = gpufl_scope_begin_bench("mm_warmup", 3, 0);
    gpufl_scope_end(&w);
    gpufl_scope m = gpufl_scope_begin_bench("mm", 4294967295u, 3);
    gpufl_scope plain = gpufl_scope_begin("inner");
    gpufl_scope_end(&plain);
    gpufl_scope_end(&m);
    gpufl_scope none = gpufl_scope_begin_bench("zero", 0, 0); /* gpufl_scope_begin */
    gpufl_scope_end(&none);
    gpufl_shutdown();

    fl_log scope;
    CHECK_INT(fl_log_read(&scope, dir, "scope"), 0);
    json_t *names = NULL;
    for (size_t i = 0; i < scope.n && !names; i++)
        names = json_object_get(scope.lines[i], "scope_name_dict");
    char rows[16][64];
    char *sorted[16];
    size_t n = 0;
    for (size_t i = 0; i < scope.n; i++) {
        json_t *b = scope.lines[i];
        if (strcmp(log_type(b), "scope_event_batch") != 0)
            continue;
        json_int_t base = json_integer_value(json_object_get(b, "base_time_ns"));
        size_t r;
        json_t *row;
        json_array_foreach(json_object_get(b, "rows"), r, row)
        {
#define CELL(c) json_integer_value(json_array_get(row, (size_t)fl_col(b, c)))
            char id[24];
            snprintf(id, sizeof id, "%lld", (long long)CELL("name_id"));
            const char *name = json_string_value(json_object_get(names, id));
            if (n == 16)
                break;
            snprintf(rows[n], sizeof rows[n], "%s %lld %lld %lld%s", name ? name : "?",
                     (long long)CELL("event_type"), (long long)CELL("repeat"),
                     (long long)CELL("warmup"),
                     CELL("event_type") == 0 && CELL("original_start_ns") != base + CELL("dt_ns")
                         ? " (original_start_ns is not the begin's time)"
                         : "");
            sorted[n] = rows[n];
            n++;
#undef CELL
        }
    }
    qsort(sorted, n, sizeof sorted[0], cmp_str);
    char got[512] = "";
    for (size_t i = 0; i < n; i++) {
        size_t len = strlen(got);
        snprintf(got + len, sizeof got - len, "%s%s", i ? ", " : "", sorted[i]);
    }
    CHECK_STR(got, "inner 0 0 0, inner 1 0 0, mm 0 4294967295 3, mm 1 0 0, mm_warmup 0 3 0, "
                   "mm_warmup 1 0 0, zero 0 0 0, zero 1 0 0");
    fl_log_free(&scope);
}

/* ------------------------------------------------------------ option */

static void test_compact_option(void)
{
    unsetenv("GPUFL_COMPACT_KERNEL_DETAILS");
    gpufl_init_options o;
    gpufl_init_options_init(&o);
    CHECK_INT(o.compact_kernel_details, false);
    fl_config c;
    gpufl_error e;
    CHECK_INT(fl_config_resolve(&o, &c, &e), GPUFL_OK);
    CHECK_INT(c.compact_kernel_details, false);
    CHECK(strstr(c.provenance, "compact_kernel_details") == NULL);
    fl_config_free(&c);

    o.compact_kernel_details = true; /* code */
    CHECK_INT(fl_config_resolve(&o, &c, &e), GPUFL_OK);
    CHECK_INT(c.compact_kernel_details, true);
    CHECK_CONTAINS(c.provenance, "  compact_kernel_details = true (code)\n");
    fl_config_free(&c);

    o.compact_kernel_details = false;
    setenv("GPUFL_COMPACT_KERNEL_DETAILS", "yes", 1);
    CHECK_INT(fl_config_resolve(&o, &c, &e), GPUFL_OK);
    CHECK_INT(c.compact_kernel_details, true);
    CHECK_CONTAINS(c.provenance,
                   "  compact_kernel_details = true (env GPUFL_COMPACT_KERNEL_DETAILS)\n");
    fl_config_free(&c);
    setenv("GPUFL_COMPACT_KERNEL_DETAILS", "maybe", 1);
    CHECK_INT(fl_config_resolve(&o, &c, &e), GPUFL_ERR_ENV);
    CHECK_CONTAINS(e.message, "GPUFL_COMPACT_KERNEL_DETAILS");
    unsetenv("GPUFL_COMPACT_KERNEL_DETAILS");

    const char *path = scenario("compact.json", "{\"compact_kernel_details\": true}\n");
    o.config_file = path;
    CHECK_INT(fl_config_resolve(&o, &c, &e), GPUFL_OK);
    CHECK_INT(c.compact_kernel_details, true);
    CHECK_CONTAINS(c.provenance, "  compact_kernel_details = true (config ");
    fl_config_free(&c);
    path = scenario("compact_bad.json", "{\"compact_kernel_details\": 1}\n");
    o.config_file = path;
    CHECK_INT(fl_config_resolve(&o, &c, &e), GPUFL_ERR_CONFIG);
    CHECK_CONTAINS(e.message, "key \"compact_kernel_details\" has the wrong type");
}

int main(void)
{
    snprintf(g_tmp, sizeof g_tmp, "/tmp/gpufl_compat_XXXXXX");
    if (!mkdtemp(g_tmp)) {
        perror("mkdtemp");
        return 1;
    }
    test_metric_rows();
    test_scope_threads();
    test_bench_scopes();
    test_compact_option();
    fl_rmtree(g_tmp);
    return check_done("test_gpufl_compat");
}
