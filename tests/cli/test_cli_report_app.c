/*
 * test_cli_report_app.c - `gpu-profile report --app NAME` and `gpu-profile
 * export --app NAME` (GPUFlight's log_prefix): the fixture session found
 * in a log directory by its job_start app, as flat files NAME.<channel>.log
 * and as a directory NAME, each giving the same report as the session
 * directory itself; an app with no session is status 1 with a message
 * naming it, an empty NAME status 125.
 */
#include "cli/harness.h"

#define FIX_SID "3f2a9c1e-7b4d-4e21-9a0f-5c6d7e8f9a0b"

static char fixture[1024];

static void run(const char *const *argv, h_result *r)
{
    h_run(argv, NULL, NULL, 0, r);
}

int main(void)
{
    h_init();
    snprintf(fixture, sizeof fixture, "%s/fixtures/gpufl-session/" FIX_SID,
             check_env("GP_TEST_SOURCE_DIR"));
    h_result want, r;
    const char *direct[] = {h_cli, "report", fixture, NULL};
    run(direct, &want);
    CHECK_INT(want.code, 0);
    CHECK_CONTAINS(want.out, "report  sample_app  session " FIX_SID);

    /* A log directory holding the fixture: picked by its app. */
    char logs[512];
    h_path(logs, sizeof logs, "logs");
    char cmd[4096];
    snprintf(cmd, sizeof cmd, "mkdir -p '%s/%s' && cp '%s'/*.log '%s/%s/'", logs, FIX_SID, fixture,
             logs, FIX_SID);
    CHECK_INT(system(cmd), 0);
    const char *by_app[] = {h_cli, "report", "--app", "sample_app", logs, NULL};
    run(by_app, &r);
    CHECK_INT(r.code, 0);
    CHECK_STR(r.out, want.out);
    CHECK_STR(r.err, "");
    h_result_free(&r);

    /* The directory named NAME under PATH (an app's default log_path). */
    const char *base = h_dir;
    const char *by_dir[] = {h_cli, "report", "--app", "logs", base, NULL};
    run(by_dir, &r);
    CHECK_INT(r.code, 0);
    CHECK_STR(r.out, want.out);
    h_result_free(&r);

    /* Flat files NAME.<channel>.log. */
    char flat[512];
    h_path(flat, sizeof flat, "flat");
    snprintf(cmd, sizeof cmd,
             "mkdir -p '%s' && for c in device scope system; do cp '%s'/$c.log '%s'/myrun.$c.log; "
             "done",
             flat, fixture, flat);
    CHECK_INT(system(cmd), 0);
    const char *by_flat[] = {h_cli, "report", "--app", "myrun", flat, NULL};
    run(by_flat, &r);
    CHECK_INT(r.code, 0);
    CHECK_STR(r.out, want.out);
    h_result_free(&r);

    /* export takes it too: a header and one line per kernel. */
    const char *csv[] = {h_cli, "export", "--format", "csv", "--app", "sample_app", logs, NULL};
    run(csv, &r);
    CHECK_INT(r.code, 0);
    CHECK_INT(h_count_lines(r.out), 4);
    h_result_free(&r);

    /* No such app. */
    const char *none[] = {h_cli, "report", "--app", "other_app", logs, NULL};
    run(none, &r);
    CHECK_INT(r.code, 1);
    CHECK_STR(r.out, "");
    CHECK_CONTAINS(r.err, "gpu-profile: report: no session for log_prefix \"other_app\" in ");
    CHECK_CONTAINS(r.err, "no session of app \"other_app\" in ");
    h_result_free(&r);
    const char *none_x[] = {h_cli, "export", "--format", "csv", "--app", "other_app", logs, NULL};
    run(none_x, &r);
    CHECK_INT(r.code, 1);
    CHECK_CONTAINS(r.err, "gpu-profile: export: no session for log_prefix \"other_app\"");
    h_result_free(&r);

    const char *empty[] = {h_cli, "report", "--app", "", logs, NULL};
    run(empty, &r);
    CHECK_INT(r.code, 125);
    CHECK_CONTAINS(r.err, "--app: the value is empty: give a non-empty NAME");
    h_result_free(&r);
    const char *noval[] = {h_cli, "report", logs, "--app", NULL};
    run(noval, &r);
    CHECK_INT(r.code, 125);
    CHECK_CONTAINS(r.err, "--app needs a value");
    h_result_free(&r);

    h_result_free(&want);
    h_cleanup();
    return check_done("test_cli_report_app");
}
