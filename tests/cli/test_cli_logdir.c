/*
 * test_cli_logdir.c - `gpu-profile --log-dir DIR [--app NAME] -- CMD`: the
 * run recorded as a Monitor session in the GPUFlight format, fed by the
 * run's own sampler; the shutdown record carries CMD's end (exit code,
 * signal, crash); CMD's status is unchanged; bad uses are clear errors
 * (exit 125, CMD not run); GPUFL_DISABLED switches the log off only;
 * --rotate-size / --rotate-interval / --max-disk reach the session (bad
 * values: 125).
 */
#include "harness.h"

#include "fl_log.h"
#include "gpufl.h"

#include <signal.h>

static void session_of(const char *base, char *dir, size_t cap)
{
    CHECK_INT(fl_only_session(base, dir, cap), 0);
}

static void test_recorded_run(void)
{
    h_scenario("device 0\ndevice 1\n");
    char base[512], dir[1024];
    h_path(base, sizeof base, "logs");
    const char *argv[] = {h_cli,   "--interval", "0.01",  "--log-dir", base, "--app",
                          "myapp", "--",         h_child, "exit",      "3",  NULL};
    h_result r;
    h_run(argv, NULL, NULL, 0, &r);
    CHECK_INT(r.code, 3); /* CMD's own status */
    CHECK_CONTAINS(r.err, "gpu-profile: recording session ");
    CHECK_CONTAINS(r.err, base);
    CHECK_CONTAINS(r.err, "GPU 1  Fake NVIDIA GPU"); /* the usual report too */
    session_of(base, dir, sizeof dir);
    fl_log sys;
    CHECK_INT(fl_log_read(&sys, dir, "system"), 0);
    CHECK_INT(sys.bad, 0);
    CHECK(sys.n >= 4);
    if (sys.n >= 4) {
        json_t *js = sys.lines[0];
        CHECK_STR(log_type(js), "job_start");
        CHECK_STR(json_string_value(json_object_get(js, "app")), "myapp");
        CHECK_INT(json_array_size(json_object_get(js, "devices")), 2);
        CHECK(fl_count(&sys, "device_metric_batch") >= 1);
        json_t *b = fl_first(&sys, "device_metric_batch");
        /* Rows for both devices, from the one sampler. */
        int seen[2] = {0, 0};
        size_t i;
        json_t *row;
        json_array_foreach(json_object_get(b, "rows"), i, row)
        {
            json_int_t d = json_integer_value(json_array_get(row, 1));
            if (d >= 0 && d < 2)
                seen[d]++;
        }
        CHECK(seen[0] >= 1 && seen[1] >= 1);
        json_t *sd = sys.lines[sys.n - 1];
        CHECK_STR(log_type(sd), "shutdown");
        CHECK_INT(fl_int(sd, "exit_code"), 3);
        CHECK(json_is_null(json_object_get(sd, "signal")));
        CHECK(json_is_false(json_object_get(sd, "crashed")));
    }
    fl_log_free(&sys);
    h_result_free(&r);
    fl_rmtree(base);

    /* Default app name: CMD's file name; a crash is recorded as one. */
    char sig[8];
    snprintf(sig, sizeof sig, "%d", SIGSEGV);
    const char *argv2[] = {h_cli, "-q", "--log-dir", base, "--", h_child, "raise", sig, NULL};
    h_run(argv2, NULL, NULL, 0, &r);
    CHECK_INT(r.code, 128 + SIGSEGV);
    CHECK_INT(r.err_len, 0); /* -q: not even the session line */
    session_of(base, dir, sizeof dir);
    CHECK_INT(fl_log_read(&sys, dir, "device"), 0);
    if (sys.n >= 1) {
        CHECK_STR(json_string_value(json_object_get(sys.lines[0], "app")), "gp_cli_child");
        json_t *sd = sys.lines[sys.n - 1];
        CHECK_STR(log_type(sd), "shutdown");
        CHECK(json_is_null(json_object_get(sd, "exit_code")));
        CHECK_INT(fl_int(sd, "signal"), SIGSEGV);
        CHECK(json_is_true(json_object_get(sd, "crashed")));
    }
    fl_log_free(&sys);
    h_result_free(&r);
    fl_rmtree(base);
}

static void test_errors_and_switch(void)
{
    h_scenario("device 0\n");
    char base[512], marker[512];
    h_path(base, sizeof base, "logs2");
    h_path(marker, sizeof marker, "ran");

    /* --app alone. */
    const char *a1[] = {h_cli, "--app", "x", "--", h_child, "touch", marker, NULL};
    h_result r;
    h_run(a1, NULL, NULL, 0, &r);
    CHECK_INT(r.code, 125);
    CHECK_STR(r.err, "gpu-profile: --app names a session log: give --log-dir DIR too\n");
    CHECK(!h_exists(marker));
    h_result_free(&r);

    /* A log directory that cannot be created: CMD not run. */
    char file[512];
    h_path(file, sizeof file, "plainfile");
    h_write_file(file, "x", 1);
    const char *a2[] = {h_cli, "--log-dir", file, "--", h_child, "touch", marker, NULL};
    h_run(a2, NULL, NULL, 0, &r);
    CHECK_INT(r.code, 125);
    CHECK_CONTAINS(r.err, "gpu-profile: --log-dir: cannot create the log directory");
    CHECK_CONTAINS(r.err, file);
    CHECK(!h_exists(marker));
    h_result_free(&r);

    /* GPUFL_DISABLED: the run and its report, no log. */
    const char *a3[] = {h_cli, "--log-dir", base, "--", h_child, "touch", marker, "4", NULL};
    const char *env[] = {"GPUFL_DISABLED=yes", NULL};
    h_run(a3, env, NULL, 0, &r);
    CHECK_INT(r.code, 4);
    CHECK_CONTAINS(r.err, "gpu-profile: GPUFL_DISABLED is set: no session log is written\n");
    CHECK_CONTAINS(r.err, "GPU 0  Fake NVIDIA GPU");
    CHECK(h_exists(marker));
    CHECK(!h_exists(base));
    h_result_free(&r);

    /* No GPU backend: the session still records the run (host metrics; a
     * host row needs a CPU %, two /proc/stat readings a tick apart: CMD
     * runs 0.1 s). */
    const char *a4[] = {h_cli, "--backend", "none",  "--interval", "0.01", "--log-dir",
                        base,  "--",        "sleep", "0.1",        NULL};
    h_run(a4, NULL, NULL, 0, &r);
    CHECK_INT(r.code, 0);
    char dir[1024];
    session_of(base, dir, sizeof dir);
    fl_log sys;
    CHECK_INT(fl_log_read(&sys, dir, "system"), 0);
    if (sys.n >= 1)
        CHECK_INT(json_array_size(json_object_get(sys.lines[0], "devices")), 0);
    CHECK_INT(fl_count(&sys, "device_metric_batch"), 0);
    CHECK(fl_count(&sys, "host_metric_batch") >= 1);
    fl_log_free(&sys);
    h_result_free(&r);
}

/* The run id: the CLI's own session and CMD share one (a fresh UUID v4,
 * or GPUFL_RUN_ID as given); a bad one is a usage error, CMD not run. */
static void test_run_id(void)
{
    h_scenario("device 0\n");
    char base[512], dir[1024], marker[512];
    h_path(base, sizeof base, "logs3");
    h_path(marker, sizeof marker, "ran3");
    const char *argv[] = {h_cli,   "-q",       "--log-dir",    base, "--",
                          h_child, "printenv", "GPUFL_RUN_ID", NULL};
    h_result r;
    h_run(argv, NULL, NULL, 0, &r);
    CHECK_INT(r.code, 0);
    session_of(base, dir, sizeof dir);
    fl_log sys;
    CHECK_INT(fl_log_read(&sys, dir, "system"), 0);
    const char *id = sys.n ? json_string_value(json_object_get(sys.lines[0], "run_id")) : NULL;
    CHECK(id && strlen(id) == 36 && id[14] == '4');
    char want[128];
    snprintf(want, sizeof want, "GPUFL_RUN_ID=%s\n", id ? id : "?");
    CHECK_STR(r.out, want);
    fl_log_free(&sys);
    h_result_free(&r);
    fl_rmtree(base);

    const char *given[] = {"GPUFL_RUN_ID=slurm-4711", NULL};
    h_run(argv, given, NULL, 0, &r);
    CHECK_INT(r.code, 0);
    CHECK_STR(r.out, "GPUFL_RUN_ID=slurm-4711\n");
    session_of(base, dir, sizeof dir);
    CHECK_INT(fl_log_read(&sys, dir, "system"), 0);
    if (sys.n)
        CHECK_STR(json_string_value(json_object_get(sys.lines[0], "run_id")), "slurm-4711");
    fl_log_free(&sys);
    h_result_free(&r);
    fl_rmtree(base);

    const char *bad[] = {"GPUFL_RUN_ID=two words", NULL};
    const char *a2[] = {h_cli, "--log-dir", base, "--", h_child, "touch", marker, NULL};
    h_run(a2, bad, NULL, 0, &r);
    CHECK_INT(r.code, 125);
    CHECK_CONTAINS(r.err, "gpu-profile: GPUFL_RUN_ID=\"two words\" is not a run id: use 1 to 64");
    CHECK(!h_exists(marker));
    CHECK(!h_exists(base));
    h_result_free(&r);
}

/* --rotate-size / --rotate-interval / --max-disk: bad values are usage
 * errors (CMD not run); a good one reaches the session, which leaves
 * published windows with their sidecars instead of <channel>.log. */
static void test_rollover(void)
{
    h_scenario("device 0\n");
    char base[512], dir[1024], marker[512];
    h_path(base, sizeof base, "logs4");
    h_path(marker, sizeof marker, "ran4");
    static const struct {
        const char *opt, *value, *want;
    } bad[] = {
        {"--rotate-size", "12Q",
         "gpu-profile: --rotate-size: \"12Q\" is not a size: use a whole number of bytes, or one "
         "with K, M, G or T (binary: 64M = 64 MiB); 0 or \"\" = off\n"},
        {"--max-disk", "-1", "gpu-profile: --max-disk: \"-1\" is not a size"},
        {"--rotate-interval", "soon", "gpu-profile: --rotate-interval"},
    };
    h_result r;
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        const char *a[] = {h_cli, "--log-dir", base,    bad[i].opt, bad[i].value,
                           "--",  h_child,     "touch", marker,     NULL};
        h_run(a, NULL, NULL, 0, &r);
        CHECK_INT(r.code, 125);
        CHECK_CONTAINS(r.err, bad[i].want);
        CHECK(!h_exists(marker));
        CHECK(!h_exists(base));
        h_result_free(&r);
    }
    const char *nolog[] = {h_cli, "--max-disk", "1G", "--", h_child, "touch", marker, NULL};
    h_run(nolog, NULL, NULL, 0, &r);
    CHECK_INT(r.code, 125);
    CHECK_STR(r.err, "gpu-profile: --max-disk bounds the session's files: give --log-dir DIR (or "
                     "--engine trace or above)\n");
    CHECK(!h_exists(marker));
    h_result_free(&r);

    const char *argv[] = {h_cli,           "-q", "--interval", "0.01", "--log-dir", base,
                          "--rotate-size", "4K", "--max-disk", "1G",   "--",        h_child,
                          "exit",          "0",  NULL};
    h_run(argv, NULL, NULL, 0, &r);
    CHECK_INT(r.code, 0);
    session_of(base, dir, sizeof dir);
    char p[1200];
    static const char *const names[] = {"system.1.log.gz", ".gpufl-window.system.1.json",
                                        "scope.1.log.gz", ".gpufl-window.scope.1.json"};
    for (size_t i = 0; i < sizeof names / sizeof names[0]; i++) {
        snprintf(p, sizeof p, "%s/%s", dir, names[i]);
        CHECK(h_exists(p));
    }
    snprintf(p, sizeof p, "%s/system.log", dir);
    CHECK(!h_exists(p));
    h_result_free(&r);
    /* The report reads the windows. */
    const char *rep[] = {h_cli, "report", dir, NULL};
    h_run(rep, NULL, NULL, 0, &r);
    CHECK_INT(r.code, 0);
    h_result_free(&r);
}

int main(void)
{
    h_init();
    test_recorded_run();
    test_errors_and_switch();
    test_run_id();
    test_rollover();
    h_cleanup();
    return check_done("test_cli_logdir");
}
