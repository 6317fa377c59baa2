/*
 * test_cli_watch.c - the run form without a command, over the fake NVML:
 * `--duration S` samples at least S seconds and prints the run's summary
 * (text, --json, -o, --samples, --device); `--pid PID` ends after PID
 * exits; with both, whichever ends first; a PID that does not exist is a
 * usage error naming it; SIGINT ends early and the summary is still
 * printed (status 130).  Sample counts depend on scheduling: the checks
 * are on structure and bounds, not exact counts.
 */
#include "cli/harness.h"
#include "json_mini.h"

static double mono_s(void)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec + (double)t.tv_nsec / 1e9;
}

/* "watched X s" of the status line. */
static double watched_s(const char *err)
{
    const char *p = err ? strstr(err, "gpu-profile: watched ") : NULL;
    return p ? atof(p + strlen("gpu-profile: watched ")) : -1;
}

static void test_duration(void)
{
    const char *argv[] = {h_cli, "--duration", "0.5", "--interval", "0.05", "--device", "0", NULL};
    h_result r;
    double t0 = mono_s();
    h_run(argv, NULL, NULL, 0, &r);
    double took = mono_s() - t0;
    CHECK_INT(r.code, 0);
    CHECK(took >= 0.5);
    CHECK_PREFIX(r.err, "GPU 0  Fake NVIDIA GPU");
    CHECK_CONTAINS(r.err, "\n  samples ");
    CHECK_CONTAINS(r.err, "s (--duration)\n");
    CHECK(watched_s(r.err) >= 0.5);
    CHECK_STR(r.out, "");
    h_result_free(&r);

    /* --json -o FILE and --samples FILE. */
    char out[512], samples[512];
    h_path(out, sizeof out, "watch.json");
    h_path(samples, sizeof samples, "watch.csv");
    const char *json[] = {h_cli, "--duration=0.3", "--interval=0.05", "--json", "-o",
                          out,   "--samples",      samples,           NULL};
    h_run(json, NULL, NULL, 0, &r);
    CHECK_INT(r.code, 0);
    CHECK_STR(r.err, "");
    size_t n = 0;
    char *text = check_read_file(out, &n);
    const char *why = NULL;
    jn *doc = text ? jn_parse(text, n, &why) : NULL;
    CHECK(doc != NULL);
    if (doc) {
        CHECK_STR(jn_str(jn_get(doc, "schema")), "gpu-profile.run");
        CHECK(jn_get(doc, "command") && jn_get(doc, "command")->n == 0);
        CHECK(jn_is_null(jn_get(doc, "exit_status")));
        CHECK(jn_is_null(jn_get(doc, "interrupted_by")));
        CHECK(jn_num(jn_get(doc, "duration_s")) >= 0.3);
        CHECK_STR(jn_str(jn_get(doc, "backend")), "nvml");
        const jn *devs = jn_get(doc, "devices");
        CHECK(devs && devs->n == 1);
        CHECK(jn_int(jn_get(jn_at(devs, 0), "sample_count")) >= 2);
    }
    jn_free(doc);
    free(text);
    char *csv = check_read_file(samples, &n);
    CHECK(csv != NULL && h_count_lines(csv) >= 3); /* a header and samples */
    free(csv);
    h_result_free(&r);
}

static void test_pid(void)
{
    /* A process started elsewhere: sleeps 1 s. */
    const char *sleeper[] = {h_child, "sleep", "1000", NULL};
    pid_t child = h_spawn(sleeper, NULL, NULL, NULL, NULL);
    char pid[32], out[512], err[512];
    snprintf(pid, sizeof pid, "%ld", (long)child);
    h_path(out, sizeof out, "pid.out");
    h_path(err, sizeof err, "pid.err");
    const char *argv[] = {h_cli, "--pid", pid, "--interval", "0.05", NULL};
    double t0 = mono_s();
    pid_t gp = h_spawn(argv, NULL, NULL, out, err);
    CHECK_INT(h_code(h_wait(child)), 0); /* reaped here, as its parent would */
    double child_end = mono_s();
    int code = h_code(h_wait(gp));
    double gp_end = mono_s();
    CHECK_INT(code, 0);
    CHECK(gp_end >= child_end - 0.001);
    CHECK(gp_end - child_end < 5.0); /* noticed, not waited out */
    CHECK(gp_end - t0 >= 0.9);
    size_t n = 0;
    char *text = check_read_file(err, &n);
    char want[128];
    snprintf(want, sizeof want, ", until process %s exited\n", pid);
    CHECK_CONTAINS(text, want);
    CHECK_CONTAINS(text, "GPU 0  Fake NVIDIA GPU");
    CHECK(watched_s(text) >= 0.5);
    free(text);

    /* With --duration too: whichever ends first (here the duration). */
    const char *long_sleeper[] = {h_child, "sleep", "30000", NULL};
    child = h_spawn(long_sleeper, NULL, NULL, NULL, NULL);
    snprintf(pid, sizeof pid, "%ld", (long)child);
    const char *both[] = {h_cli, "--pid", pid, "--duration", "0.3", NULL};
    h_result r;
    t0 = mono_s();
    h_run(both, NULL, NULL, 0, &r);
    CHECK_INT(r.code, 0);
    CHECK(mono_s() - t0 < 20.0);
    CHECK_CONTAINS(r.err, "s (--duration)\n");
    CHECK(kill(child, 0) == 0); /* never signalled by gpu-profile */
    kill(child, SIGKILL);
    h_wait(child);
    h_result_free(&r);

    /* A PID that no longer exists: the one just reaped. */
    snprintf(pid, sizeof pid, "%ld", (long)child);
    const char *gone[] = {h_cli, "--pid", pid, NULL};
    h_run(gone, NULL, NULL, 0, &r);
    CHECK_INT(r.code, 125);
    char msg[160];
    snprintf(msg, sizeof msg,
             "gpu-profile: --pid %s: no such process (ps -p %s shows whether it runs)\n", pid, pid);
    CHECK_STR(r.err, msg);
    h_result_free(&r);
    const char *bad[] = {h_cli, "--pid", "12x", NULL};
    h_run(bad, NULL, NULL, 0, &r);
    CHECK_INT(r.code, 125);
    CHECK_STR(r.err, "gpu-profile: --pid: '12x' is not a process id (a whole number from 1)\n");
    h_result_free(&r);
    const char *with_cmd[] = {h_cli, "--pid", "1", "true", NULL};
    h_run(with_cmd, NULL, NULL, 0, &r);
    CHECK_INT(r.code, 125);
    CHECK_STR(r.err, "gpu-profile: --pid watches without a command: give either CMD or --pid\n");
    h_result_free(&r);
    /* --duration with CMD is the capture window's length (test_cli_capture.c):
     * CMD runs, its status is the run's. */
    const char *window[] = {h_cli, "--duration", "3600", "--backend", "none",
                            "--",  h_child,      "exit", "4",         NULL};
    h_run(window, NULL, NULL, 0, &r);
    CHECK_INT(r.code, 4);
    CHECK_CONTAINS(r.err, "gpu-profile: capture window: from 0.000 s after the command's start, "
                          "for 3600.000 s");
    h_result_free(&r);
}

static int has_recording(const void *path)
{
    size_t n = 0;
    char *t = check_read_file((const char *)path, &n);
    int yes = t && strstr(t, "recording session") != NULL;
    free(t);
    return yes;
}

static void test_interrupt(void)
{
    char err[512], logs[512];
    h_path(err, sizeof err, "int.err");
    h_path(logs, sizeof logs, "int-logs");
    const char *argv[] = {h_cli, "--duration", "60", "--interval", "0.05", "--log-dir", logs, NULL};
    pid_t gp = h_spawn(argv, NULL, NULL, NULL, err);
    /* "recording session" is said once sampling runs (signals blocked). */
    CHECK(h_wait_for(has_recording, err, 20));
    h_nap_ms(200);
    kill(gp, SIGINT);
    CHECK_INT(h_code(h_wait(gp)), 128 + SIGINT);
    size_t n = 0;
    char *text = check_read_file(err, &n);
    CHECK_CONTAINS(text, "GPU 0  Fake NVIDIA GPU");
    CHECK_CONTAINS(text, " (gpu-profile got SIGINT)\n");
    CHECK(watched_s(text) > 0 && watched_s(text) < 30);
    free(text);
}

int main(void)
{
    h_init();
    test_duration();
    test_pid();
    test_interrupt();
    h_cleanup();
    return check_done("test_cli_watch");
}
