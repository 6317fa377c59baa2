/*
 * test_gpufl_session.c - the flight recorder end to end, against the fake
 * NVML: the kill switch (nothing loaded, started or created), the session
 * layout and lifecycle records, scopes from many threads with nesting and
 * every way out of GPUFL_SCOPE, continuous vs scoped sampling (zero
 * system-metric rows outside scopes and phases), engine fall-back recorded
 * in capture_capabilities, debug output without the API key,
 * flush_logs_always, and a SIGKILL in the middle of a run.
 */
#include "recorder/scope.h"
#include "recorder/writer.h"
#include "fl_log.h"
#include "gpufl.h"

#include <dlfcn.h>
#include <errno.h>
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <time.h>

/* Interposed: the library's fsync calls land here (flush_logs_always). */
static _Atomic int fsync_calls;
int fsync(int fd)
{
    atomic_fetch_add(&fsync_calls, 1);
    return (int)syscall(SYS_fsync, fd);
}

static char g_tmp[256];

static void make_tmp(void)
{
    snprintf(g_tmp, sizeof g_tmp, "/tmp/gpufl_test_XXXXXX");
    if (!mkdtemp(g_tmp)) {
        perror("mkdtemp");
        exit(1);
    }
}

static void sleep_ms(int ms)
{
    struct timespec ts = {ms / 1000, (long)(ms % 1000) * 1000000L};
    while (nanosleep(&ts, &ts) != 0 && errno == EINTR)
        ;
}

static int thread_count(void)
{
    /* Line by line: procfs files have no size for fseek/ftell. */
    FILE *f = fopen("/proc/self/status", "r");
    char line[256];
    int n = -1;
    while (f && fgets(line, sizeof line, f))
        if (strncmp(line, "Threads:", 8) == 0)
            n = atoi(line + 8);
    if (f)
        fclose(f);
    return n;
}

static void clear_env(void)
{
    const char *vars[] = {"GPUFL_DISABLED",      "GPUFL_BACKEND_URL", "GPUFL_API_KEY",
                          "GPUFL_API_PATH",      "GPUFL_CONFIG_FILE", "GPUFL_PROFILING_ENGINE",
                          "GPUFL_REMOTE_UPLOAD", "GPUFL_CUPTI_PLUGIN"};
    for (size_t i = 0; i < sizeof vars / sizeof vars[0]; i++)
        unsetenv(vars[i]);
}

static gpufl_init_options base_opts(const char *sub)
{
    static char path[512];
    snprintf(path, sizeof path, "%s/%s", g_tmp, sub);
    gpufl_init_options o;
    gpufl_init_options_init(&o);
    o.app_name = "testapp";
    o.log_path = path;
    return o;
}

/* ------------------------------------------------------------ kill switch */

/* In a child process that has never loaded NVML: init must return at once
 * with nothing loaded, started or created, and every call must be inert. */
static int kill_switch_child(int use_env)
{
    char dir[300];
    snprintf(dir, sizeof dir, "%s/never", g_tmp);
    gpufl_init_options o;
    gpufl_init_options_init(&o);
    o.log_path = dir;
    o.system_sample_rate_ms = 10;
    o.continuous_system_sampling = true;
    o.enable_debug_output = true;
    o.remote_upload = true; /* not even the deprecation line */
    if (use_env)
        setenv("GPUFL_DISABLED", use_env == 1 ? "1" : "On", 1);
    else
        o.enabled = false;
    int threads = thread_count();
    gpufl_error err;
    int bad = threads < 1 ? 128 : 0;
    if (gpufl_init(&o, &err) != GPUFL_DISABLED)
        bad |= 1;
    if (gpufl_is_active())
        bad |= 2;
    GPUFL_SCOPE("x")
    {
        gpufl_system_start("p");
        gpufl_system_stop("p");
    }
    gpufl_scope s = gpufl_scope_begin("y");
    if (s.instance_id != 0)
        bad |= 4;
    gpufl_scope_end(&s);
    gpufl_flush();
    gpufl_shutdown();
    if (dlopen("libnvidia-ml.so.1", RTLD_NOW | RTLD_NOLOAD) != NULL)
        bad |= 8;
    if (thread_count() != threads)
        bad |= 16;
    struct stat st;
    if (stat(dir, &st) == 0)
        bad |= 32;
    char buf[64];
    if (gpufl_session_id(buf, sizeof buf) != 0 || buf[0])
        bad |= 64;
    return bad;
}

static void test_kill_switch(void)
{
    for (int mode = 0; mode < 3; mode++) {
        fflush(NULL);
        pid_t pid = fork();
        if (pid == 0) {
            /* stderr is checked for silence: send it to a file. */
            char path[300];
            snprintf(path, sizeof path, "%s/kill_stderr_%d", g_tmp, mode);
            if (!freopen(path, "w", stderr))
                _exit(100);
            int r = kill_switch_child(mode);
            fflush(stderr); /* freopen may have made it buffered */
            _exit(r);
        }
        int status = 0;
        waitpid(pid, &status, 0);
        CHECK(WIFEXITED(status));
        CHECK_INT(WEXITSTATUS(status), 0);
        char path[300];
        snprintf(path, sizeof path, "%s/kill_stderr_%d", g_tmp, mode);
        size_t len = 99;
        char *text = check_read_file(path, &len);
        CHECK_INT(len, 0);
        free(text);
    }
}

/* ------------------------------------------------ debug output, stderr */

/* Without log_fn the lines go to stderr, each prefixed, the API key never. */
static void test_debug_stderr(void)
{
    char errpath[300], base[300];
    snprintf(errpath, sizeof errpath, "%s/debug_stderr", g_tmp);
    snprintf(base, sizeof base, "%s/debug", g_tmp);
    fflush(NULL);
    pid_t pid = fork();
    if (pid == 0) {
        if (!freopen(errpath, "w", stderr))
            _exit(100);
        gpufl_init_options o;
        gpufl_init_options_init(&o);
        o.log_path = base;
        o.enable_debug_output = true;
        o.api_key = "gpfl_STDERR_SECRET";
        setenv("GPUFL_PROFILING_ENGINE", "PcSampling", 1);
        setenv("GPUFL_CUPTI_PLUGIN", "/nonexistent/plugin.so", 1);
        if (gpufl_init(&o, NULL) != GPUFL_OK)
            _exit(3);
        gpufl_system_start("p");
        gpufl_system_stop("p");
        gpufl_shutdown();
        fflush(stderr); /* freopen may have made it buffered */
        _exit(0);
    }
    int status = 0;
    waitpid(pid, &status, 0);
    CHECK(WIFEXITED(status) && WEXITSTATUS(status) == 0);
    char *text = check_read_file(errpath, NULL);
    CHECK(text != NULL);
    if (!text)
        return;
    CHECK(strstr(text, "gpfl_STDERR_SECRET") == NULL);
    CHECK_CONTAINS(text, "[gpufl] session ");
    CHECK_CONTAINS(text, "[gpufl] profiling_engine PcSampling requested, running Monitor: ");
    CHECK_CONTAINS(text, "api_key = <set> (code)");
    CHECK_CONTAINS(text, "profiling_engine = PcSampling (env GPUFL_PROFILING_ENGINE)");
    CHECK_CONTAINS(text, "[gpufl] system_start p\n");
    CHECK_CONTAINS(text, "[gpufl] session ");
    /* Every line is a recorder line or a continuation of the options list. */
    int lines = 0, bad = 0;
    for (char *save = NULL, *l = strtok_r(text, "\n", &save); l; l = strtok_r(NULL, "\n", &save)) {
        lines++;
        bad += strncmp(l, "[gpufl] ", 8) != 0 && strncmp(l, "  ", 2) != 0;
    }
    CHECK(lines >= 5);
    CHECK_INT(bad, 0);
    free(text);
}

/* -------------------------------------------------------- basic session */

static char captured[64][1400];
static int n_captured;
static pthread_mutex_t cap_mu = PTHREAD_MUTEX_INITIALIZER;
static void capture_line(const char *line, void *user)
{
    (void)user;
    pthread_mutex_lock(&cap_mu);
    if (n_captured < 64)
        snprintf(captured[n_captured++], sizeof captured[0], "%s", line);
    pthread_mutex_unlock(&cap_mu);
}

static bool file_contains(const char *path, const char *needle)
{
    char *text = check_read_file(path, NULL);
    bool found = text && strstr(text, needle);
    free(text);
    return found;
}

static void test_session_layout(void)
{
    setenv("FAKE_NVML_SCENARIO", "", 1);
    gpufl_init_options o = base_opts("layout.log"); /* ".log" is dropped */
    o.system_sample_rate_ms = 20;
    o.continuous_system_sampling = true;
    o.api_key = "gpfl_SECRET_KEY_123";
    o.enable_debug_output = true;
    o.remote_upload = true;
    o.log_fn = capture_line;
    n_captured = 0;
    gpufl_error err;
    CHECK_INT(gpufl_init(&o, &err), GPUFL_OK);
    CHECK(gpufl_is_active());
    gpufl_error err2;
    CHECK_INT(gpufl_init(&o, &err2), GPUFL_ERR_STATE);
    CHECK_CONTAINS(err2.message, "gpufl_shutdown");

    char id[64], dir[600], expect_dir[600];
    CHECK_INT(gpufl_session_id(id, sizeof id), 36);
    CHECK(id[14] == '4'); /* UUID version 4 */
    CHECK(strchr("89ab", id[19]) != NULL);
    gpufl_session_dir(dir, sizeof dir);
    snprintf(expect_dir, sizeof expect_dir, "%s/layout/%s", g_tmp, id);
    CHECK_STR(dir, expect_dir);
    sleep_ms(120);
    gpufl_shutdown();
    gpufl_shutdown(); /* idempotent */
    CHECK(!gpufl_is_active());

    /* The deprecation line once, the debug lines prefixed, no API key. */
    int deprecations = 0;
    for (int i = 0; i < n_captured; i++) {
        CHECK(strncmp(captured[i], "[gpufl] ", 8) == 0);
        CHECK(strstr(captured[i], "gpfl_SECRET_KEY_123") == NULL);
        if (strstr(captured[i], "remote_upload is deprecated"))
            deprecations++;
    }
    CHECK_INT(deprecations, 1);
    CHECK(n_captured >= 3);

    const char *chans[] = {"device", "scope", "system"};
    for (int c = 0; c < 3; c++) {
        char path[700];
        snprintf(path, sizeof path, "%s/%s.log", dir, chans[c]);
        CHECK(!file_contains(path, "gpfl_SECRET_KEY_123"));
        fl_log log;
        CHECK_INT(fl_log_read(&log, dir, chans[c]), 0);
        CHECK_INT(log.bad, 0);
        CHECK_INT(log.last_partial, 0);
        CHECK(log.n >= 3);
        if (log.n < 3) {
            fl_log_free(&log);
            continue;
        }
        json_t *js = log.lines[0];
        CHECK_STR(log_type(js), "job_start");
        CHECK_INT(fl_int(js, "version"), 1);
        CHECK_INT(fl_int(js, "pid"), getpid());
        CHECK_STR(json_string_value(json_object_get(js, "app")), "testapp");
        CHECK_STR(json_string_value(json_object_get(js, "session_id")), id);
        CHECK_STR(json_string_value(json_object_get(js, "session_kind")), "monitor");
        CHECK(json_object_get(js, "profiling_engine") == NULL);
        json_t *devs = json_object_get(js, "devices");
        CHECK_INT(json_array_size(devs), 1); /* the fake's default device */
        json_t *d0 = json_array_get(devs, 0);
        CHECK_INT(fl_int(d0, "id"), 0);
        CHECK_STR(json_string_value(json_object_get(d0, "vendor")), "NVIDIA");
        /* Sampled before job_start was written: live values, not null. */
        CHECK(json_is_integer(json_object_get(d0, "util_gpu_pct")));
        CHECK(json_is_null(json_object_get(d0, "clk_gfx_mhz")));
        CHECK_INT(json_array_size(json_object_get(js, "gpu_static_devices")), 1);
        CHECK_INT(json_array_size(json_object_get(js, "rocm_static_devices")), 0);
        CHECK_STR(log_type(log.lines[1]), "capture_capabilities");
        CHECK_STR(log_type(log.lines[log.n - 1]), "shutdown");
        CHECK(json_object_get(log.lines[log.n - 1], "version") == NULL);
        CHECK(fl_int(log.lines[log.n - 1], "ts_ns") >= fl_int(js, "ts_ns"));
        for (size_t i = 0; i < log.n; i++)
            CHECK_STR(json_string_value(json_object_get(log.lines[i], "session_id")), id);
        if (c == 2) {
            CHECK(fl_count(&log, "device_metric_batch") >= 1);
            CHECK(fl_count(&log, "host_metric_batch") >= 1);
            json_t *b = fl_first(&log, "device_metric_batch");
            CHECK_INT(fl_int(b, "batch_id"), 1);
            CHECK_INT(fl_col(b, "dt_ns"), 0);
            CHECK_INT(fl_col(b, "clock_sm"), 8);
            json_t *h = fl_first(&log, "host_metric_batch");
            CHECK(json_is_string(json_object_get(h, "hostname")));
        }
        fl_log_free(&log);
    }
}

/* ------------------------------------------------------------ the run */

static const char *const rank_vars[] = {"RANK",
                                        "WORLD_SIZE",
                                        "LOCAL_RANK",
                                        "OMPI_COMM_WORLD_RANK",
                                        "OMPI_COMM_WORLD_SIZE",
                                        "OMPI_COMM_WORLD_LOCAL_RANK",
                                        "PMI_RANK",
                                        "PMI_SIZE",
                                        "MPI_LOCALRANKID",
                                        "SLURM_PROCID",
                                        "SLURM_NTASKS",
                                        "SLURM_LOCALID",
                                        "GPUFL_RUN_ID"};

/* One session with the environment as the caller set it; its job_start
 * (the system channel's first line), owned by the caller. */
static json_t *run_job_start(const char *sub)
{
    gpufl_init_options o = base_opts(sub);
    o.system_sample_rate_ms = 0;
    o.log_fn = capture_line;
    n_captured = 0;
    gpufl_error err;
    CHECK_INT(gpufl_init(&o, &err), GPUFL_OK);
    char dir[600];
    gpufl_session_dir(dir, sizeof dir);
    gpufl_shutdown();
    fl_log log;
    json_t *js = NULL;
    if (fl_log_read(&log, dir, "system") == 0 && log.n > 0) {
        js = json_incref(log.lines[0]);
        fl_log_free(&log);
    }
    CHECK(js != NULL);
    CHECK_STR(log_type(js), "job_start");
    return js;
}

static bool is_null(json_t *js, const char *key)
{
    json_t *v = json_object_get(js, key);
    return v && json_is_null(v); /* present, and null: never absent, never 0 */
}

static bool said(const char *needle)
{
    for (int i = 0; i < n_captured; i++)
        if (strstr(captured[i], needle))
            return true;
    return false;
}

/* job_start's run_id, rank, local_rank, world_size, rank_source,
 * monotonic_ns and hostname (docs/concepts.md, "Runs"). */
static void test_run_ident(void)
{
    setenv("FAKE_NVML_SCENARIO", "", 1);
    for (size_t i = 0; i < sizeof rank_vars / sizeof rank_vars[0]; i++)
        unsetenv(rank_vars[i]);

    /* No launcher: a fresh UUID v4, every rank key null, not 0. */
    json_t *js = run_job_start("run_none");
    const char *id = json_string_value(json_object_get(js, "run_id"));
    CHECK(id && strlen(id) == 36 && id[14] == '4' && strchr("89ab", id[19]));
    CHECK(is_null(js, "rank") && is_null(js, "local_rank") && is_null(js, "world_size"));
    CHECK(is_null(js, "rank_source"));
    CHECK(json_is_integer(json_object_get(js, "monotonic_ns")) && fl_int(js, "monotonic_ns") > 0);
    char host[256] = "";
    gethostname(host, sizeof host);
    CHECK_STR(json_string_value(json_object_get(js, "hostname")), host);
    json_t *again = run_job_start("run_none2"); /* each in-process init its own run */
    CHECK(strcmp(id, json_string_value(json_object_get(again, "run_id"))) != 0);
    json_decref(again);
    json_decref(js);

    /* torchrun's variables win over the outer launcher's (srun here);
     * rank 0 is a real rank. */
    setenv("GPUFL_RUN_ID", "job-42.a:b_c", 1);
    setenv("RANK", "0", 1);
    setenv("WORLD_SIZE", "2", 1);
    setenv("LOCAL_RANK", "0", 1);
    setenv("SLURM_PROCID", "5", 1);
    setenv("SLURM_NTASKS", "8", 1);
    js = run_job_start("run_torch");
    CHECK_STR(json_string_value(json_object_get(js, "run_id")), "job-42.a:b_c");
    CHECK(json_is_integer(json_object_get(js, "rank")));
    CHECK_INT(fl_int(js, "rank"), 0);
    CHECK_INT(fl_int(js, "world_size"), 2);
    CHECK_INT(fl_int(js, "local_rank"), 0);
    CHECK_STR(json_string_value(json_object_get(js, "rank_source")), "RANK");
    json_decref(js);

    /* Open MPI without a local rank: that key alone null; the SLURM
     * family below it not mixed in. */
    unsetenv("RANK");
    unsetenv("WORLD_SIZE");
    unsetenv("LOCAL_RANK");
    setenv("OMPI_COMM_WORLD_RANK", "3", 1);
    setenv("OMPI_COMM_WORLD_SIZE", "4", 1);
    js = run_job_start("run_ompi");
    CHECK_INT(fl_int(js, "rank"), 3);
    CHECK_INT(fl_int(js, "world_size"), 4);
    CHECK(is_null(js, "local_rank"));
    CHECK_STR(json_string_value(json_object_get(js, "rank_source")), "OMPI_COMM_WORLD_RANK");
    json_decref(js);
    unsetenv("OMPI_COMM_WORLD_RANK");
    unsetenv("OMPI_COMM_WORLD_SIZE");

    /* SLURM alone. */
    setenv("SLURM_LOCALID", "1", 1);
    js = run_job_start("run_slurm");
    CHECK_INT(fl_int(js, "rank"), 5);
    CHECK_INT(fl_int(js, "world_size"), 8);
    CHECK_INT(fl_int(js, "local_rank"), 1);
    CHECK_STR(json_string_value(json_object_get(js, "rank_source")), "SLURM_PROCID");
    json_decref(js);
    unsetenv("SLURM_PROCID");
    unsetenv("SLURM_NTASKS");
    unsetenv("SLURM_LOCALID");

    /* Bad values: said, named, left out (null); the session still runs. */
    setenv("GPUFL_RUN_ID", "bad id!", 1);
    setenv("PMI_RANK", "7", 1);
    setenv("PMI_SIZE", "4", 1); /* a rank past the world size */
    js = run_job_start("run_bad");
    id = json_string_value(json_object_get(js, "run_id"));
    CHECK(id && strlen(id) == 36 && id[14] == '4');
    CHECK(is_null(js, "rank") && is_null(js, "world_size") && is_null(js, "rank_source"));
    CHECK(said("GPUFL_RUN_ID=\"bad id!\" is not a run id"));
    CHECK(said("PMI_SIZE=\"4\""));
    json_decref(js);
    for (size_t i = 0; i < sizeof rank_vars / sizeof rank_vars[0]; i++)
        unsetenv(rank_vars[i]);
}

/* ------------------------------------------------------------ scopes */

#define N_THREADS 4
#define N_ITER 300

static void nested_work(void *user)
{
    int *calls = user;
    (*calls)++;
}

static int scope_with_return(int v)
{
    GPUFL_SCOPE("ret")
    {
        if (v > 0)
            return v; /* the scope still ends */
    }
    return 0;
}

static void *scope_thread(void *arg)
{
    long t = (long)arg;
    char dyn[32];
    snprintf(dyn, sizeof dyn, "thread-%ld", t);
    int calls = 0;
    for (int i = 0; i < N_ITER; i++) {
        GPUFL_SCOPE("outer")
        {
            gpufl_scope in = gpufl_scope_begin(dyn);
            gpufl_monitor("leaf", nested_work, &calls);
            gpufl_scope_end(&in);
            gpufl_scope_end(&in); /* a second end is inert */
        }
        for (int k = 0; k < 3; k++) {
            GPUFL_SCOPE("brk")
            {
                if (k == 1)
                    break; /* leaves the scope block only */
            }
        }
        scope_with_return(1);
    }
    return (void *)(long)calls;
}

typedef struct scope_info {
    json_int_t id, name, depth, begin_t, end_t, orig_b, orig_e;
    int begins, ends;
} scope_info;

static int cmp_id(const void *a, const void *b)
{
    const scope_info *x = a, *y = b;
    return x->id < y->id ? -1 : x->id > y->id;
}

static long long wall_now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    return (long long)ts.tv_sec * 1000000000ll + ts.tv_nsec;
}

/* no_tsc: the same with GPUFL_NO_TSC=1 (CLOCK_REALTIME on the hot path
 * instead of the TSC mapped onto it). */
static void test_scopes_threads(int no_tsc)
{
    if (no_tsc)
        setenv("GPUFL_NO_TSC", "1", 1);
    gpufl_init_options o = base_opts(no_tsc ? "scopes_notsc" : "scopes");
    gpufl_error err;
    CHECK_INT(gpufl_init(&o, &err), GPUFL_OK);
    char dir[600];
    gpufl_session_dir(dir, sizeof dir);
    long long t_before = wall_now();
    pthread_t th[N_THREADS];
    for (long t = 0; t < N_THREADS; t++)
        pthread_create(&th[t], NULL, scope_thread, (void *)t);
    long total_calls = 0;
    for (int t = 0; t < N_THREADS; t++) {
        void *r;
        pthread_join(th[t], &r);
        total_calls += (long)r;
    }
    CHECK_INT(total_calls, N_THREADS * N_ITER);
    long long t_after = wall_now();
    gpufl_shutdown();
    unsetenv("GPUFL_NO_TSC");
    /* After shutdown scopes are inert. */
    gpufl_scope late = gpufl_scope_begin("late");
    CHECK_U64(late.instance_id, 0);

    fl_log log;
    CHECK_INT(fl_log_read(&log, dir, "scope"), 0);
    CHECK_INT(log.bad, 0);
    /* Names: every id defined once, before the first batch that uses it. */
    const char *names[64] = {0};
    size_t n_rows = 0, cap = 8192, n_inst = 0;
    scope_info *inst = calloc(cap, sizeof *inst);
    bool dict_before_use = true;
    int out_of_range = 0;
    for (size_t i = 0; i < log.n; i++) {
        json_t *r = log.lines[i];
        if (strcmp(log_type(r), "dictionary_update") == 0) {
            const char *k;
            json_t *v;
            json_object_foreach(json_object_get(r, "scope_name_dict"), k, v)
            {
                int idn = atoi(k);
                CHECK(idn > 0 && idn < 64);
                if (idn > 0 && idn < 64) {
                    CHECK(names[idn] == NULL);
                    names[idn] = json_string_value(v);
                }
            }
        }
        if (strcmp(log_type(r), "scope_event_batch") != 0)
            continue;
        CHECK_INT(fl_int(r, "version"), 3);
        json_int_t base = fl_int(r, "base_time_ns");
        json_t *rows = json_object_get(r, "rows");
        CHECK_INT(json_integer_value(json_array_get(json_array_get(rows, 0), 0)), 0);
        size_t ri;
        json_t *row;
        json_array_foreach(rows, ri, row)
        {
            json_int_t dt = json_integer_value(json_array_get(row, 0));
            json_int_t id = json_integer_value(json_array_get(row, 1));
            json_int_t name = json_integer_value(json_array_get(row, 2));
            json_int_t type = json_integer_value(json_array_get(row, 3));
            json_int_t depth = json_integer_value(json_array_get(row, 4));
            json_int_t orig = json_integer_value(json_array_get(row, 7));
            CHECK(dt >= 0);
            /* On the wall clock: inside the threads' lifetime (10 us of
             * slack for the tick-to-ns mapping). */
            if (base + dt < t_before - 10000 || base + dt > t_after + 10000)
                out_of_range++;
            if (name <= 0 || name >= 64 || !names[name])
                dict_before_use = false;
            if (n_inst == cap) {
                cap *= 2;
                inst = realloc(inst, cap * sizeof *inst);
            }
            /* One entry per row; merged per id below. */
            scope_info e = {.id = id, .name = name, .depth = depth};
            if (type == 0) {
                e.begins = 1;
                e.begin_t = base + dt;
                e.orig_b = orig;
            } else {
                e.ends = 1;
                e.end_t = base + dt;
                e.orig_e = orig;
            }
            inst[n_inst++] = e;
            n_rows++;
        }
    }
    CHECK(dict_before_use);
    CHECK_INT(out_of_range, 0);
    /* 4 threads x 300 x (outer + thread-N + leaf + brk x3 + ret) x 2 rows */
    CHECK_U64(n_rows, (size_t)N_THREADS * N_ITER * 7 * 2);
    qsort(inst, n_inst, sizeof *inst, cmp_id);
    size_t pairs = 0, good = 0;
    for (size_t i = 0; i + 1 < n_inst; i += 2) {
        scope_info *a = &inst[i], *b = &inst[i + 1];
        scope_info *beg = a->begins ? a : b, *end = a->begins ? b : a;
        pairs++;
        bool ok = a->id == b->id && beg->begins == 1 && end->ends == 1 && beg->name == end->name &&
                  beg->depth == end->depth && end->end_t >= beg->begin_t &&
                  beg->orig_b == beg->begin_t && end->orig_e == beg->begin_t;
        const char *nm = names[beg->name];
        /* Depths: outer 0, thread-N 1, leaf 2, brk 0, ret 0. */
        if (nm && strcmp(nm, "leaf") == 0)
            ok = ok && beg->depth == 2;
        else if (nm && strncmp(nm, "thread-", 7) == 0)
            ok = ok && beg->depth == 1;
        else
            ok = ok && beg->depth == 0;
        good += ok;
    }
    CHECK_U64(pairs, n_rows / 2);
    CHECK_U64(good, pairs);
    int n_names = 0;
    for (int i = 1; i < 64; i++)
        n_names += names[i] != NULL;
    CHECK_INT(n_names, 4 + N_THREADS); /* outer leaf brk ret + thread-0..3 */
    free(inst);
    fl_log_free(&log);
}

/* ------------------------------------------------- continuous vs scoped */

typedef struct window {
    long long b, e;
} window;

static bool in_windows(long long t, const window *w, int n, long long slack)
{
    for (int i = 0; i < n; i++)
        if (t >= w[i].b - slack && t <= w[i].e + slack)
            return true;
    return false;
}

static void test_scoped_sampling(void)
{
    gpufl_init_options o = base_opts("scoped");
    o.system_sample_rate_ms = 5;
    o.continuous_system_sampling = false;
    gpufl_error err;
    CHECK_INT(gpufl_init(&o, &err), GPUFL_OK);
    char dir[600];
    gpufl_session_dir(dir, sizeof dir);
    sleep_ms(60);
    GPUFL_SCOPE("busy")
    {
        sleep_ms(60);
    }
    sleep_ms(60);
    gpufl_system_start("phase");
    sleep_ms(60);
    gpufl_system_stop("phase");
    sleep_ms(60);
    gpufl_shutdown();

    window w[2];
    int nw = 0;
    fl_log scope, sys;
    CHECK_INT(fl_log_read(&scope, dir, "scope"), 0);
    CHECK_INT(fl_log_read(&sys, dir, "system"), 0);
    json_t *b = fl_first(&scope, "scope_event_batch");
    CHECK(b != NULL);
    if (b) {
        json_int_t base = fl_int(b, "base_time_ns");
        json_t *rows = json_object_get(b, "rows");
        CHECK_INT(json_array_size(rows), 2);
        w[nw].b = base + json_integer_value(json_array_get(json_array_get(rows, 0), 0));
        w[nw].e = base + json_integer_value(json_array_get(json_array_get(rows, 1), 0));
        /* It slept 60 ms: the mapped duration says so. */
        CHECK(w[nw].e - w[nw].b >= 60000000);
        CHECK(w[nw].e - w[nw].b < 200000000);
        nw++;
    }
    json_t *ss = fl_first(&sys, "system_start"), *sp = fl_first(&sys, "system_stop");
    CHECK(ss && sp);
    if (ss && sp) {
        CHECK_STR(json_string_value(json_object_get(ss, "name")), "phase");
        CHECK_INT(json_array_size(json_object_get(ss, "devices")), 1);
        CHECK(json_is_object(json_object_get(ss, "host")));
        w[nw].b = fl_int(ss, "ts_ns");
        w[nw].e = fl_int(sp, "ts_ns");
        nw++;
    }
    /* Rows only inside the windows (a round that began as a window closed
     * may be stamped a hair after it: 1 ms of slack), some in each. */
    int per_window[2] = {0, 0}, outside = 0;
    const char *types[] = {"device_metric_batch", "host_metric_batch"};
    for (size_t i = 0; i < sys.n; i++) {
        for (int k = 0; k < 2; k++) {
            if (strcmp(log_type(sys.lines[i]), types[k]) != 0)
                continue;
            json_int_t base = fl_int(sys.lines[i], "base_time_ns");
            size_t ri;
            json_t *row;
            json_array_foreach(json_object_get(sys.lines[i], "rows"), ri, row)
            {
                long long t = base + json_integer_value(json_array_get(row, 0));
                if (!in_windows(t, w, nw, 1000000))
                    outside++;
                for (int x = 0; x < nw; x++)
                    if (t >= w[x].b - 1000000 && t <= w[x].e + 1000000)
                        per_window[x]++;
            }
        }
    }
    CHECK_INT(outside, 0);
    CHECK(per_window[0] >= 2);
    CHECK(per_window[1] >= 2);
    fl_log_free(&scope);
    fl_log_free(&sys);

    /* continuous = true: rows while nothing is open too. */
    o = base_opts("continuous");
    o.system_sample_rate_ms = 5;
    o.continuous_system_sampling = true;
    CHECK_INT(gpufl_init(&o, &err), GPUFL_OK);
    gpufl_session_dir(dir, sizeof dir);
    sleep_ms(80);
    gpufl_shutdown();
    CHECK_INT(fl_log_read(&sys, dir, "system"), 0);
    CHECK(fl_count(&sys, "device_metric_batch") >= 1);
    json_t *db = fl_first(&sys, "device_metric_batch");
    CHECK(db && json_array_size(json_object_get(db, "rows")) >= 5);
    fl_log_free(&sys);

    /* system_sample_rate_ms = 0: no metric batches at all. */
    o = base_opts("off");
    o.continuous_system_sampling = true;
    CHECK_INT(gpufl_init(&o, &err), GPUFL_OK);
    gpufl_session_dir(dir, sizeof dir);
    sleep_ms(30);
    gpufl_shutdown();
    CHECK_INT(fl_log_read(&sys, dir, "system"), 0);
    CHECK_INT(fl_count(&sys, "device_metric_batch"), 0);
    CHECK_INT(fl_count(&sys, "host_metric_batch"), 0);
    fl_log_free(&sys);
}

/* ------------------------------------------------- engines, backends */

static json_t *find_cap(json_t *caps, const char *feature)
{
    size_t i;
    json_t *c;
    json_array_foreach(json_object_get(caps, "capabilities"), i, c)
    {
        if (strcmp(json_string_value(json_object_get(c, "feature")), feature) == 0)
            return c;
    }
    return NULL;
}

/* Amd over the fake ROCm SMI (two GPUs, the second without power or
 * temperature): job_start lists them as GPUFlight does, vendor AMD, in
 * gpu_static_devices and rocm_static_devices (cuda_static_devices empty),
 * and their rows reach device_metric_batch. */
static void test_amd_session(void)
{
    const char *fake = getenv("GP_TEST_FAKE_ROCM_SMI");
    if (!fake || !*fake)
        return;
    setenv("GPU_PROFILE_ROCM_SMI_LIBRARY", fake, 1);
    setenv("FAKE_ROCM_SMI_SCENARIO", "two", 1);
    gpufl_init_options o = base_opts("amd-fake");
    o.backend = GPUFL_BACKEND_AMD;
    o.system_sample_rate_ms = 5;
    o.continuous_system_sampling = true;
    gpufl_error err;
    CHECK_INT(gpufl_init(&o, &err), GPUFL_OK);
    char dir[600];
    gpufl_session_dir(dir, sizeof dir);
    sleep_ms(40);
    gpufl_shutdown();
    unsetenv("GPU_PROFILE_ROCM_SMI_LIBRARY");
    fl_log log;
    CHECK_INT(fl_log_read(&log, dir, "system"), 0);
    json_t *js = log.n > 0 ? log.lines[0] : NULL;
    json_t *rocm = js ? json_object_get(js, "rocm_static_devices") : NULL;
    CHECK_INT(json_array_size(rocm), 2);
    CHECK_INT(json_array_size(json_object_get(js, "gpu_static_devices")), 2);
    CHECK_INT(json_array_size(json_object_get(js, "cuda_static_devices")), 0);
    json_t *d0 = json_array_get(rocm, 0), *d1 = json_array_get(rocm, 1);
    CHECK_STR(json_string_value(json_object_get(d0, "name")), "AMD Instinct MI210");
    CHECK_STR(json_string_value(json_object_get(d0, "uuid")), "1234abcd5678ef90");
    CHECK_STR(json_string_value(json_object_get(d0, "vendor")), "AMD");
    CHECK_STR(json_string_value(json_object_get(d1, "name")), "AMD Radeon PRO W6800");
    CHECK(json_is_null(json_object_get(d1, "uuid")));
    json_t *live = json_array_get(json_object_get(js, "devices"), 0);
    CHECK_STR(json_string_value(json_object_get(live, "vendor")), "AMD");
    CHECK_STR(json_string_value(json_object_get(live, "pci_bus")), "0000:03:00.0");
    CHECK(fl_count(&log, "device_metric_batch") >= 1);
    fl_log_free(&log);
}

static void test_engine_fallback(void)
{
    setenv("GPUFL_CUPTI_PLUGIN", "/nonexistent/libgpuprofile_cupti.so", 1);
    for (int via_env = 0; via_env < 2; via_env++) {
        gpufl_init_options o = base_opts(via_env ? "trace_env" : "trace");
        if (via_env)
            setenv("GPUFL_PROFILING_ENGINE", "trace", 1);
        else
            o.profiling_engine = GPUFL_ENGINE_TRACE;
        o.enable_debug_output = true;
        o.enable_memory_tracking = true;
        o.log_fn = capture_line;
        n_captured = 0;
        gpufl_error err;
        CHECK_INT(gpufl_init(&o, &err), GPUFL_OK);
        char dir[600];
        gpufl_session_dir(dir, sizeof dir);
        gpufl_shutdown();
        unsetenv("GPUFL_PROFILING_ENGINE");
        bool said = false;
        for (int i = 0; i < n_captured; i++)
            said = said || (strstr(captured[i], "Trace requested, running Monitor") &&
                            strstr(captured[i], "/nonexistent/libgpuprofile_cupti.so"));
        CHECK(said);
        fl_log log;
        CHECK_INT(fl_log_read(&log, dir, "device"), 0);
        json_t *caps = fl_first(&log, "capture_capabilities");
        CHECK(caps != NULL);
        if (caps) {
            CHECK_STR(json_string_value(json_object_get(caps, "requested_engine")), "nvidia.trace");
            CHECK_STR(json_string_value(json_object_get(caps, "selected_engine")),
                      "nvidia.monitor");
            json_t *k = find_cap(caps, "kernel_events");
            CHECK(k && json_is_true(json_object_get(k, "requested")));
            CHECK_STR(json_string_value(json_object_get(k, "status")), "fallback");
            CHECK_CONTAINS(json_string_value(json_object_get(k, "message")),
                           "CUPTI plugin could not be loaded");
            json_t *m = find_cap(caps, "memory_tracking");
            CHECK_STR(json_string_value(json_object_get(m, "status")), "fallback");
            json_t *pc = find_cap(caps, "pc_sampling");
            CHECK_STR(json_string_value(json_object_get(pc, "status")), "not_requested");
            json_t *sc = find_cap(caps, "scope_events");
            CHECK_STR(json_string_value(json_object_get(sc, "status")), "collected");
        }
        fl_log_free(&log);
    }
    unsetenv("GPUFL_CUPTI_PLUGIN");

    /* Monitor with an opt-in Trace flag: skipped, and why. */
    gpufl_init_options o = base_opts("monitor_flags");
    o.enable_cuda_graphs_tracking = true;
    gpufl_error err;
    CHECK_INT(gpufl_init(&o, &err), GPUFL_OK);
    char dir[600];
    gpufl_session_dir(dir, sizeof dir);
    gpufl_shutdown();
    fl_log log;
    CHECK_INT(fl_log_read(&log, dir, "system"), 0);
    json_t *caps = fl_first(&log, "capture_capabilities");
    json_t *g = caps ? find_cap(caps, "cuda_graphs") : NULL;
    CHECK(g != NULL);
    if (g) {
        CHECK_STR(json_string_value(json_object_get(g, "status")), "skipped");
        CHECK_CONTAINS(json_string_value(json_object_get(g, "message")), "Trace or above");
    }
    CHECK_STR(json_string_value(json_object_get(caps, "requested_engine")), "nvidia.monitor");
    fl_log_free(&log);

    /* Amd without an AMD GPU (this machine's ROCm SMI, if any, finds
     * none): strict, like Nvidia, said plainly; nothing created. */
    o = base_opts("amd");
    o.backend = GPUFL_BACKEND_AMD;
    unsetenv("GPU_PROFILE_ROCM_SMI_LIBRARY");
    CHECK_INT(gpufl_init(&o, &err), GPUFL_ERR_BACKEND);
    CHECK_CONTAINS(err.message, "backend Amd");
    CHECK_CONTAINS(err.message, "amd: no AMD GPU");
    CHECK(!gpufl_is_active());
    test_amd_session();

    /* None: no device list, no device metrics; host metrics still. */
    o = base_opts("none");
    o.backend = GPUFL_BACKEND_NONE;
    o.system_sample_rate_ms = 5;
    o.continuous_system_sampling = true;
    CHECK_INT(gpufl_init(&o, &err), GPUFL_OK);
    gpufl_session_dir(dir, sizeof dir);
    sleep_ms(40);
    gpufl_shutdown();
    CHECK_INT(fl_log_read(&log, dir, "system"), 0);
    CHECK_INT(json_array_size(json_object_get(log.lines[0], "devices")), 0);
    CHECK_INT(fl_count(&log, "device_metric_batch"), 0);
    CHECK(fl_count(&log, "host_metric_batch") >= 1);
    caps = fl_first(&log, "capture_capabilities");
    g = caps ? find_cap(caps, "device_metrics") : NULL;
    CHECK(g && strcmp(json_string_value(json_object_get(g, "status")), "skipped") == 0);
    fl_log_free(&log);

    /* An unusable log_path: the path and the fix in the message. */
    char file[400];
    snprintf(file, sizeof file, "%s/a_file", g_tmp);
    FILE *f = fopen(file, "w");
    if (f)
        fclose(f);
    gpufl_init_options_init(&o);
    o.log_path = file;
    CHECK_INT(gpufl_init(&o, &err), GPUFL_ERR_IO);
    CHECK_CONTAINS(err.message, file);
    CHECK_CONTAINS(err.message, "log_path");
    CHECK(!gpufl_is_active());
}

/* ---------------------------------------------------- flush_logs_always */

static void test_flush_always(void)
{
    for (int always = 0; always < 2; always++) {
        gpufl_init_options o = base_opts(always ? "fsync_on" : "fsync_off");
        o.flush_logs_always = always;
        gpufl_error err;
        atomic_store(&fsync_calls, 0);
        CHECK_INT(gpufl_init(&o, &err), GPUFL_OK);
        char dir[600];
        gpufl_session_dir(dir, sizeof dir);
        GPUFL_SCOPE("s") {}
        gpufl_flush();
        /* Flushed: the rows are on disk while the session still runs. */
        fl_log log;
        CHECK_INT(fl_log_read(&log, dir, "scope"), 0);
        CHECK_INT(fl_count(&log, "scope_event_batch"), 1);
        fl_log_free(&log);
        gpufl_shutdown();
        if (always)
            CHECK(atomic_load(&fsync_calls) >= 6); /* job_start x3 ... shutdown x3 */
        else
            CHECK_INT(atomic_load(&fsync_calls), 0);
    }
}

/* ------------------------------------------------------------ ring full */

/* A thread that opens scopes faster than the writer drains them: its ring
 * (16384 rows) fills, the rest are dropped and counted - never waited
 * for - and the final capture_capabilities says how many. */
static void test_ring_full(void)
{
    gpufl_init_options o = base_opts("ringfull");
    gpufl_error err;
    CHECK_INT(gpufl_init(&o, &err), GPUFL_OK);
    char dir[600];
    gpufl_session_dir(dir, sizeof dir);
    fl_session_hold_writer(true);
    for (int i = 0; i < 20000; i++) {
        gpufl_scope s = gpufl_scope_begin("hot");
        gpufl_scope_end(&s);
    }
    CHECK_U64(fl_scope_dropped(), 40000 - 16384);
    fl_session_hold_writer(false);
    gpufl_shutdown();
    fl_log log;
    CHECK_INT(fl_log_read(&log, dir, "scope"), 0);
    size_t rows = 0;
    json_t *last_caps = NULL;
    for (size_t i = 0; i < log.n; i++) {
        if (strcmp(log_type(log.lines[i]), "scope_event_batch") == 0)
            rows += json_array_size(json_object_get(log.lines[i], "rows"));
        if (strcmp(log_type(log.lines[i]), "capture_capabilities") == 0)
            last_caps = log.lines[i];
    }
    CHECK_U64(rows, 16384);
    CHECK_INT(fl_count(&log, "capture_capabilities"), 2); /* init, and the final word */
    json_t *c = last_caps ? find_cap(last_caps, "scope_events") : NULL;
    CHECK(c != NULL);
    if (c) {
        CHECK_STR(json_string_value(json_object_get(c, "status")), "partial");
        CHECK_STR(json_string_value(json_object_get(c, "reason_code")), "ring_full");
        CHECK_CONTAINS(json_string_value(json_object_get(c, "message")),
                       "23616 scope events dropped");
    }
    fl_log_free(&log);
}

/* ---------------------------------------------------------------- fork */

/* A child of fork() records nothing and exits without waiting for the
 * parent's writer; the parent's session goes on. */
static void test_fork(void)
{
    gpufl_init_options o = base_opts("fork");
    gpufl_error err;
    CHECK_INT(gpufl_init(&o, &err), GPUFL_OK);
    char dir[600];
    gpufl_session_dir(dir, sizeof dir);
    GPUFL_SCOPE("parent_before") {}
    fflush(NULL);
    pid_t pid = fork();
    if (pid == 0) {
        int bad = gpufl_is_active() ? 1 : 0;
        gpufl_scope s = gpufl_scope_begin("child");
        bad |= s.instance_id != 0 ? 2 : 0;
        gpufl_scope_end(&s);
        gpufl_system_start("child_phase");
#ifdef __SANITIZE_ADDRESS__
        /* Under ASan, LeakSanitizer's check at exit locks its allocator,
         * and in a child forked while a parent's thread (writer, sampler)
         * held that lock it waits forever (seen at load: a sanitizer limit
         * - no leak check after fork in a threaded process - not ours).
         * The plain and TSan builds run the atexit shutdown below. */
        _exit(bad);
#else
        exit(bad); /* runs the atexit shutdown: must not hang */
#endif
    }
    int status = 0;
    waitpid(pid, &status, 0);
    CHECK(WIFEXITED(status));
    CHECK_INT(WEXITSTATUS(status), 0);
    GPUFL_SCOPE("parent_after") {}
    gpufl_shutdown();
    fl_log log;
    CHECK_INT(fl_log_read(&log, dir, "scope"), 0);
    CHECK_INT(fl_count(&log, "shutdown"), 1);
    size_t rows = 0;
    for (size_t i = 0; i < log.n; i++)
        if (strcmp(log_type(log.lines[i]), "scope_event_batch") == 0)
            rows += json_array_size(json_object_get(log.lines[i], "rows"));
    CHECK_U64(rows, 4); /* parent_before and parent_after, begin and end */
    fl_log_free(&log);
    CHECK_INT(fl_log_read(&log, dir, "system"), 0);
    CHECK_INT(fl_count(&log, "system_start"), 0);
    fl_log_free(&log);
}

/* ------------------------------------------------------------- SIGKILL */

static void test_sigkill(void)
{
    char base[400];
    snprintf(base, sizeof base, "%s/killed", g_tmp);
    fflush(NULL);
    pid_t pid = fork();
    if (pid == 0) {
        gpufl_init_options o;
        gpufl_init_options_init(&o);
        o.log_path = base;
        o.system_sample_rate_ms = 5;
        o.continuous_system_sampling = true;
        if (gpufl_init(&o, NULL) != GPUFL_OK)
            _exit(3);
        for (unsigned long i = 0;; i++) {
            GPUFL_SCOPE("work")
            {
                if (i % 64 == 0)
                    sleep_ms(1);
            }
        }
    }
    /* Wait until some batches are on disk, then kill mid-run. */
    char dir[600] = "";
    int batches = 0;
    for (int i = 0; i < 400 && batches < 3; i++) {
        sleep_ms(10);
        if (!dir[0] && fl_only_session(base, dir, sizeof dir) != 0)
            dir[0] = '\0';
        if (dir[0]) {
            fl_log log;
            if (fl_log_read(&log, dir, "scope") == 0)
                batches = (int)fl_count(&log, "scope_event_batch");
            fl_log_free(&log);
        }
    }
    kill(pid, SIGKILL);
    int status;
    waitpid(pid, &status, 0);
    CHECK(WIFSIGNALED(status) && WTERMSIG(status) == SIGKILL);
    CHECK(batches >= 3);
    const char *chans[] = {"device", "scope", "system"};
    for (int c = 0; c < 3; c++) {
        fl_log log;
        CHECK_INT(fl_log_read(&log, dir, chans[c]), 0);
        /* Every complete line parses.  The last line may be cut: Linux
         * ends a write() to a regular file early when SIGKILL arrives in
         * the middle of it (the copy loop stops at a fatal signal), so a
         * killed writer can leave half of its last line - only that one. */
        CHECK_INT(log.bad, log.last_partial);
        CHECK(log.n >= 2);
        CHECK_INT(fl_count(&log, "shutdown"), 0); /* it died */
        if (log.n)
            CHECK_STR(log_type(log.lines[0]), "job_start");
        fl_log_free(&log);
    }
}

int main(void)
{
    clear_env();
    make_tmp();
    test_kill_switch(); /* first: this process has not loaded NVML yet */
    test_session_layout();
    test_run_ident();
    test_debug_stderr();
    test_scopes_threads(0);
    test_scopes_threads(1);
    test_scoped_sampling();
    test_engine_fallback();
    test_flush_always();
    test_fork();
    test_ring_full();
    test_sigkill();
    fl_rmtree(g_tmp);
    return check_done("test_gpufl_session");
}
