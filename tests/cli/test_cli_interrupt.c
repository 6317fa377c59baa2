/*
 * test_cli_interrupt.c - every subcommand (report, export, devices,
 * metrics) ends on SIGINT, SIGTERM and SIGHUP, and under timeout(1), with
 * the conventional status (128 + the signal: it dies of it), while it is
 * blocked in the middle of its work: report and export opening `-o FIFO`
 * that nobody reads, devices in an NVML call that hangs (the fake NVML's
 * hang rule), metrics loading a plugin whose constructor sleeps.  Each of
 * those lasts 30 s; the process must be gone within BOUND_S of the signal
 * (a bound that tells "ended" from "carried on", not a timing).
 */
#include "harness.h"

#include <sys/stat.h>

#define BOUND_S 8.0

static char fixture[1024];

/* Waits for pid at most limit_s; 1 with its status, else 0 after killing
 * it (SIGKILL) and reaping it. */
static int wait_bounded(pid_t pid, double limit_s, int *st)
{
    for (long waited = 0; waited <= (long)(limit_s * 1000); waited += 10) {
        pid_t p = waitpid(pid, st, WNOHANG);
        if (p == pid)
            return 1;
        h_nap_ms(10);
    }
    kill(pid, SIGKILL);
    *st = h_wait(pid);
    return 0;
}

/* Starts argv (env as h_spawn's), sends sig after 300 ms, and checks that
 * it ends of that signal. */
static void interrupt(const char *what, const char *const *argv, const char *const *env, int sig)
{
    char err[512];
    h_path(err, sizeof err, "interrupt.err");
    pid_t pid = h_spawn(argv, env, NULL, NULL, err);
    h_nap_ms(300);
    kill(pid, sig);
    int st = 0;
    int ended = wait_bounded(pid, BOUND_S, &st);
    printf("%s, signal %d: %s, status %d\n", what, sig, ended ? "ended" : "did NOT end",
           h_code(st));
    CHECK(ended);
    CHECK(WIFSIGNALED(st));
    CHECK_INT(h_code(st), 128 + sig);
}

static void make_fifo(char *path, size_t len)
{
    h_path(path, len, "out.fifo");
    unlink(path);
    CHECK_INT(mkfifo(path, 0600), 0);
}

/* report and export writing to a FIFO nobody opens: blocked in open(). */
static void test_report_export(void)
{
    char fifo[512];
    make_fifo(fifo, sizeof fifo);
    const char *report[] = {h_cli, "report", "-o", fifo, fixture, NULL};
    interrupt("report -o FIFO", report, NULL, SIGINT);
    interrupt("report -o FIFO", report, NULL, SIGTERM);
    interrupt("report -o FIFO", report, NULL, SIGHUP);
    const char *export[] = {h_cli, "export", "--format", "chrome-trace", "-o", fifo, fixture, NULL};
    interrupt("export -o FIFO", export, NULL, SIGTERM);
    interrupt("export -o FIFO", export, NULL, SIGINT);
}

/* devices in a discovery call that hangs 30 s (bounded at 2 s, then the
 * list is printed: the signal must not wait for that). */
static void test_devices(void)
{
    h_scenario("device 0\nhang 0 handle 30000\n");
    const char *argv[] = {h_cli, "devices", "--backend", "nvml", NULL};
    interrupt("devices (hung NVML call)", argv, NULL, SIGTERM);
    interrupt("devices (hung NVML call)", argv, NULL, SIGHUP);
    interrupt("devices (hung NVML call)", argv, NULL, SIGINT);

    /* timeout(1) sends SIGTERM; with --preserve-status it passes on how
     * the command ended. */
    const char *timeout = access("/usr/bin/timeout", X_OK) == 0 ? "/usr/bin/timeout"
                          : access("/bin/timeout", X_OK) == 0   ? "/bin/timeout"
                                                                : NULL;
    if (!timeout) {
        printf("no timeout(1): that case is skipped\n");
        return;
    }
    const char *targv[] = {timeout,   "--preserve-status", "0.3",  h_cli,
                           "devices", "--backend",         "nvml", NULL};
    char err[512];
    h_path(err, sizeof err, "timeout.err");
    pid_t pid = h_spawn(targv, NULL, NULL, NULL, err);
    int st = 0;
    int ended = wait_bounded(pid, BOUND_S, &st);
    printf("timeout 0.3 gpu-profile devices: status %d\n", h_code(st));
    CHECK(ended);
    CHECK_INT(h_code(st), 128 + SIGTERM);
}

/* metrics loading a "plugin" whose constructor sleeps 30 s. */
static void test_metrics(void)
{
    char plugin[1100], marker[512], env_marker[600];
    snprintf(plugin, sizeof plugin, "GPUFL_CUPTI_PLUGIN=%s", check_env("GP_TEST_FAKE_LIB"));
    h_path(marker, sizeof marker, "metrics.marker");
    snprintf(env_marker, sizeof env_marker, "FAKE_LIB_MARKER=%s", marker);
    const char *env[] = {plugin, env_marker, "FAKE_LIB_SLEEP_MS=30000", NULL};
    const char *argv[] = {h_cli, "metrics", "list", "--chip", "ga100", NULL};
    interrupt("metrics (slow plugin load)", argv, env, SIGHUP);
    interrupt("metrics (slow plugin load)", argv, env, SIGTERM);
    CHECK(h_exists(marker)); /* it was loading the plugin when interrupted */
}

int main(void)
{
    h_init();
    snprintf(fixture, sizeof fixture,
             "%s/fixtures/gpufl-session/3f2a9c1e-7b4d-4e21-9a0f-5c6d7e8f9a0b",
             check_env("GP_TEST_SOURCE_DIR"));
    test_report_export();
    test_devices();
    test_metrics();
    h_cleanup();
    return check_done("test_cli_interrupt");
}
