/*
 * test_cli_capture.c - capture windows through the command: `--delay`,
 * `--duration` with CMD, `--capture-range cudaProfilerApi|nvtx:NAME` and
 * `--capture-range-end stop|repeat[:N]`.
 *
 *  - every bad value is a usage error: exit 125, one exact line naming the
 *    flag and the fix, CMD not run;
 *  - end to end on the fakes (when the CUPTI plugin's tests are built): a
 *    program that records as an injected CUDA process would
 *    (tests/cli/capture_child.c, through the fake plugin's CUPTI
 *    callbacks) launches kernels before, inside and after its windows;
 *    its session holds only the inside ones and the windows, `gpu-profile
 *    report` shows them, and CMD's stdout and exit status are its own.
 *    The timed windows lie an hour away from the run: nothing here
 *    depends on how fast the machine is.
 */
#include "cli/harness.h"

#include "fl_log.h"

#include <dirent.h>

static void usage_error(const char *const *argv, const char *want)
{
    char touched[512];
    h_path(touched, sizeof touched, "ran");
    remove(touched);
    h_result r;
    h_run(argv, NULL, NULL, 0, &r);
    CHECK_INT(r.code, 125);
    CHECK_STR(r.err, want);
    CHECK(access(touched, F_OK) != 0);
    h_result_free(&r);
}

static void test_usage_errors(void)
{
    char t[512];
    h_path(t, sizeof t, "ran");
#define CMD "--", h_child, "touch", t, NULL
    usage_error((const char *[]){h_cli, "--engine", "trace", "--capture-range", "foo", CMD},
                "gpu-profile: --capture-range \"foo\" is not a trigger: use cudaProfilerApi "
                "(between cudaProfilerStart and cudaProfilerStop) or nvtx:NAME (inside the NVTX "
                "ranges named NAME)\n");
    usage_error((const char *[]){h_cli, "--engine", "trace", "--capture-range", "nvtx:", CMD},
                "gpu-profile: --capture-range \"nvtx:\" names no NVTX range: use nvtx:NAME, NAME "
                "the message of the range (e.g. nvtx:train_step)\n");
    usage_error((const char *[]){h_cli, "--engine", "trace", "--capture-range", "nvtx:step",
                                 "--capture-range-end", "repeat:0", CMD},
                "gpu-profile: --capture-range-end \"repeat:0\" is not a choice: use stop (the "
                "first window only), repeat (every window) or repeat:N (the first N windows, N "
                "from 1 to 65536)\n");
    usage_error((const char *[]){h_cli, "--capture-range-end=again", CMD},
                "gpu-profile: --capture-range-end \"again\" is not a choice: use stop (the first "
                "window only), repeat (every window) or repeat:N (the first N windows, N from 1 "
                "to 65536)\n");
    usage_error((const char *[]){h_cli, "--delay", "-1", CMD},
                "gpu-profile: --delay: -1 is out of range: use 0 to 1000000 seconds\n");
    usage_error((const char *[]){h_cli, "--duration", "abc", CMD},
                "gpu-profile: --duration: 'abc' is not a number of seconds (e.g. 0.2)\n");
    usage_error((const char *[]){h_cli, "--capture-range", "cudaProfilerApi", CMD},
                "gpu-profile: --capture-range selects traced kernels and copies: give --engine "
                "trace (or above) too\n");
    usage_error((const char *[]){h_cli, "--engine", "trace", "--capture-range-end", "repeat", CMD},
                "gpu-profile: --capture-range-end needs --capture-range: give --capture-range "
                "cudaProfilerApi or --capture-range nvtx:NAME too\n");
    usage_error((const char *[]){h_cli, "--delay", "2", "--repeats", "2", CMD},
                "gpu-profile: --repeats / --warmup-runs measure whole runs: leave out --delay, "
                "--duration and --capture-range (or run once)\n");
    usage_error((const char *[]){h_cli, "--delay", "5", NULL},
                "gpu-profile: --delay needs a command: the window counts from CMD's start "
                "(gpu-profile [OPTIONS] -- CMD)\n");
#undef CMD
}

/* The window's end stops the sampling from a thread while CMD runs on:
 * CMD's status is its own, and the JSON report is all gpu-profile writes
 * (no complaint from a second stop, whichever of the window's end and
 * CMD's end comes first on a loaded machine). */
static void test_window_ends_sampling(void)
{
    const char *argv[] = {h_cli,    "--duration", "0.05",  "--interval", "0.01", "--device", "0",
                          "--json", "--",         h_child, "sleep",      "300",  "5",        NULL};
    h_result r;
    h_run(argv, NULL, NULL, 0, &r);
    CHECK_INT(r.code, 5);
    CHECK_PREFIX(r.err, "{\"schema\":\"gpu-profile.run\"");
    CHECK_CONTAINS(r.err, "\"capture\":{\"delay_s\":0,\"duration_s\":0.05,\"capture_range\":null,"
                          "\"capture_range_end\":null}");
    CHECK_CONTAINS(r.err, "\"backend\":\"nvml\"");
    h_result_free(&r);
}

/* ------------------------------------------------------------ the fakes */

static const char *g_capture_child, *g_fake;

/* The CUDA process's session under logs (job_start session_kind trace):
 * its directory in out; 0 when there is exactly one. */
static int child_session(const char *logs, char *out, size_t cap)
{
    DIR *d = opendir(logs);
    int found = 0;
    struct dirent *e;
    while (d && (e = readdir(d)) != NULL) {
        if (e->d_name[0] == '.')
            continue;
        char dir[1024];
        snprintf(dir, sizeof dir, "%s/%s", logs, e->d_name);
        fl_log dev;
        if (fl_log_read(&dev, dir, "device") != 0)
            continue;
        json_t *js = fl_first(&dev, "job_start");
        const char *kind = js ? json_string_value(json_object_get(js, "session_kind")) : NULL;
        if (kind && strcmp(kind, "trace") == 0) {
            snprintf(out, cap, "%s", dir);
            found++;
        }
        fl_log_free(&dev);
    }
    if (d)
        closedir(d);
    return found == 1 ? 0 : -1;
}

/* The kernels' correlation ids in a session, as "1,2,3". */
static void kernels_of(const char *dir, char *out, size_t cap)
{
    fl_log dev;
    out[0] = '\0';
    if (fl_log_read(&dev, dir, "device") != 0)
        return;
    size_t used = 0;
    for (size_t i = 0; i < dev.n; i++) {
        json_t *b = dev.lines[i];
        if (strcmp(log_type(b), "kernel_event_batch") != 0)
            continue;
        json_t *rows = json_object_get(b, "rows");
        for (size_t r = 0; r < json_array_size(rows); r++)
            used += (size_t)snprintf(out + used, cap - used, "%s%lld", used ? "," : "",
                                     (long long)json_integer_value(json_array_get(
                                         json_array_get(rows, r), (size_t)fl_col(b, "corr_id"))));
    }
    fl_log_free(&dev);
}

/* The pid in a session's job_start (-1: none). */
static long long pid_of(const char *dir)
{
    fl_log dev;
    if (fl_log_read(&dev, dir, "device") != 0)
        return -1;
    json_t *js = fl_first(&dev, "job_start");
    long long pid = js ? (long long)json_integer_value(json_object_get(js, "pid")) : -1;
    fl_log_free(&dev);
    return pid;
}

/* Runs gpu-profile --engine trace ARGS -- capture_child MODE into a fresh
 * log directory: CMD's own stdout and status; the child's session dir. */
static void run_child(const char *const *args, const char *mode, char *session, size_t cap,
                      h_result *r)
{
    static int n;
    char logs[512], name[32];
    snprintf(name, sizeof name, "logs%d", n++);
    h_path(logs, sizeof logs, name);
    const char *argv[32];
    size_t k = 0;
    argv[k++] = h_cli;
    argv[k++] = "--engine";
    argv[k++] = "trace";
    argv[k++] = "--backend";
    argv[k++] = "none";
    argv[k++] = "--log-dir";
    argv[k++] = logs;
    for (size_t i = 0; args[i]; i++)
        argv[k++] = args[i];
    argv[k++] = "--";
    argv[k++] = g_capture_child;
    argv[k++] = mode;
    argv[k] = NULL;
    char plugin_env[1024];
    snprintf(plugin_env, sizeof plugin_env, "GPUFL_CUPTI_PLUGIN=%s", g_fake);
    const char *env[] = {plugin_env, "FAKE_CUPTI_SCENARIO=launches", NULL};
    h_run(argv, env, NULL, 0, r);
    CHECK_INT(r->code, 7);
    CHECK_STR(r->out, "child output\n");
    CHECK_INT(child_session(logs, session, cap), 0);
}

static void report_of(const char *session, const char *fmt, h_result *r)
{
    const char *argv[] = {h_cli, "report", fmt, session, NULL};
    const char *text[] = {h_cli, "report", session, NULL};
    h_run(fmt ? argv : text, NULL, NULL, 0, r);
    CHECK_INT(r->code, 0);
}

static void test_profiler_api(void)
{
    char s[1024], k[512];
    h_result r;
    run_child((const char *[]){"--capture-range", "cudaProfilerApi", "--capture-range-end",
                               "repeat", NULL},
              "profiler", s, sizeof s, &r);
    CHECK_CONTAINS(r.err, "gpu-profile: capture range: trace rows only inside cudaProfilerApi "
                          "(every window; gpu-profile report lists the windows)\n");
    /* The run summary: the process's windows. */
    char want[256];
    snprintf(want, sizeof want, "  capture windows   pid %lld  2 cudaProfilerApi windows  ",
             pid_of(s));
    CHECK_CONTAINS(r.err, want);
    CHECK_CONTAINS(r.err, " ms inside\n  sessions");
    h_result_free(&r);
    kernels_of(s, k, sizeof k);
    CHECK_STR(k, "3,4,8");
    report_of(s, NULL, &r);
    CHECK_CONTAINS(r.out, "  capture windows   cudaProfilerApi  2 windows  ");
    CHECK_CONTAINS(r.out, "trace rows outside them not recorded\n");
    h_result_free(&r);
    report_of(s, "--format=json", &r);
    CHECK_CONTAINS(r.out, "\"capture_windows\":[{\"trigger\":\"cudaProfilerApi\",\"name\":null,"
                          "\"windows\":2,");
    CHECK_CONTAINS(r.out, "\"open_at_shutdown\":0,");
    h_result_free(&r);

    /* The default end: stop after the first window. */
    run_child((const char *[]){"--capture-range", "cudaProfilerApi", "--json", NULL}, "profiler", s,
              sizeof s, &r);
    CHECK_CONTAINS(r.err, "\"capture\":{\"delay_s\":null,\"duration_s\":null,\"capture_range\":"
                          "\"cudaProfilerApi\",\"capture_range_end\":\"stop\"}");
    snprintf(want, sizeof want,
             "\"capture_windows\":[{\"pid\":%lld,\"rank\":null,\"trigger\":\"cudaProfilerApi\","
             "\"windows\":1,\"open_at_shutdown\":0,\"captured_ns\":",
             pid_of(s));
    CHECK_CONTAINS(r.err, want);
    h_result_free(&r);
    kernels_of(s, k, sizeof k);
    CHECK_STR(k, "3,4");
}

static void test_nvtx(void)
{
    char s[1024], k[512];
    h_result r;
    run_child((const char *[]){"--capture-range", "nvtx:step", NULL}, "nvtx", s, sizeof s, &r);
    char want[256];
    snprintf(want, sizeof want, "  capture windows   pid %lld  1 nvtx:step window  ", pid_of(s));
    CHECK_CONTAINS(r.err, want);
    h_result_free(&r);
    kernels_of(s, k, sizeof k);
    CHECK_STR(k, "2,3");
    report_of(s, NULL, &r);
    CHECK_CONTAINS(r.out, "  capture windows   nvtx step  1 window  ");
    h_result_free(&r);
}

/* --delay / --duration with CMD: the window from CMD's start. */
static void test_timed(void)
{
    char s[1024], k[512];
    h_result r;
    run_child((const char *[]){"--delay", "3600", NULL}, "plain", s, sizeof s, &r);
    CHECK_CONTAINS(r.err, "gpu-profile: capture window: from 3600.000 s after the command's "
                          "start, to its end (device statistics and trace rows inside it only; "
                          "the command ran on untouched)\n");
    char want[256];
    snprintf(want, sizeof want, "  capture windows   pid %lld  no window opened: nothing traced\n",
             pid_of(s));
    CHECK_CONTAINS(r.err, want);
    h_result_free(&r);
    kernels_of(s, k, sizeof k);
    CHECK_STR(k, "");
    report_of(s, "--format=json", &r);
    CHECK_CONTAINS(r.out, "\"capture_windows\":null");
    h_result_free(&r);

    run_child((const char *[]){"--duration", "3600", NULL}, "plain", s, sizeof s, &r);
    snprintf(want, sizeof want, "  capture windows   pid %lld  1 time window  ", pid_of(s));
    CHECK_CONTAINS(r.err, want);
    h_result_free(&r);
    kernels_of(s, k, sizeof k);
    CHECK_STR(k, "1,2,3");
    report_of(s, NULL, &r);
    CHECK_CONTAINS(r.out, "  capture windows   time  1 window  ");
    CHECK_CONTAINS(r.out, "(1 open at shutdown)");
    h_result_free(&r);
}

int main(void)
{
    h_init();
    test_usage_errors();
    test_window_ends_sampling();
    g_capture_child = getenv("GP_TEST_CAPTURE_CHILD");
    g_fake = getenv("GP_TEST_FAKE_PLUGIN");
    if (g_capture_child && g_fake) {
        test_profiler_api();
        test_nvtx();
        test_timed();
    } else {
        fprintf(stderr, "test_cli_capture: no CUPTI plugin built: the end-to-end part skipped\n");
    }
    h_cleanup();
    return check_done("test_cli_capture");
}
