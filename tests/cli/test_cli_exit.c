/*
 * test_cli_exit.c - the one exit-status rule (docs/cli.md "Exit status"),
 * walked through every subcommand: a usage mistake (bad option, value or
 * name) is 125 everywhere, nothing done (no backend, no plugin, nothing
 * read) is 1, a partial read is 2, success 0; the run form passes CMD's
 * own status, 128+N for a signal, 126 / 127, and 125 when it could not
 * start (CMD not run).
 */
#include "cli/harness.h"

static int status_of(const char *const *argv, const char *const *env)
{
    h_result r;
    h_run(argv, env, NULL, 0, &r);
    int code = r.code;
    /* Every failure says why, on stderr; success says nothing there. */
    if (code == 125 || code == 1 || code == 2)
        CHECK(r.err_len > 0);
    h_result_free(&r);
    return code;
}

#define ST(want, env, ...)                                                                         \
    do {                                                                                           \
        const char *argv_[] = {h_cli, __VA_ARGS__, NULL};                                          \
        int got_ = status_of(argv_, env);                                                          \
        if (got_ != (want))                                                                        \
            fprintf(stderr, "gpu-profile %s ...: status %d, want %d\n", argv_[1], got_, (want));   \
        CHECK_INT(got_, (want));                                                                   \
    } while (0)

static const char *no_gpu[] = {"PATH=/nonexistent", NULL};
static const char *no_plugin[] = {"GPUFL_CUPTI_PLUGIN=/nonexistent/plugin.so", NULL};

static void test_usage(void)
{
    ST(125, NULL, "--bogus", "true");
    ST(125, NULL, "--interval", "0", "true");
    ST(125, NULL, "devices", "--bogus");
    ST(125, NULL, "devices", "--backend", "cuda");
    ST(125, NULL, "report", "--top", "0", "x");
    ST(125, NULL, "report", "--format", "yaml", "x");
    ST(125, NULL, "export", "--format", "pdf", "x");
    ST(125, NULL, "export", "x", "y");
    ST(125, NULL, "metrics", "list", "--type", "x", "--chip", "GH100");
    ST(125, NULL, "metrics", "frob");
    ST(125, NULL, "serve", "--listen", "nowhere");
    ST(125, NULL, "serve", "--interval", "-1");
    ST(125, NULL, "help", "nosuch");
    ST(125, NULL, "help", "--bogus");
    ST(125, NULL, "upload", "--bogus", "x");
    ST(125, NULL, "upload", "--retries", "1.5", "x");
}

static void test_nothing_done(const char *fixture)
{
    ST(1, no_gpu, "devices", "--backend", "smi");
    ST(1, no_gpu, "serve", "--backend", "smi", "--listen", "127.0.0.1:0");
    ST(1, NULL, "report", "/nonexistent/logs");
    ST(1, NULL, "export", "--format", "csv", "/nonexistent/logs");
    ST(1, no_plugin, "metrics", "chips");
    /* Nothing listens on port 1: the upload fails at once. */
    ST(1, NULL, "upload", "--backend-url", "http://127.0.0.1:1", "--api-key", "gp-test-key-123",
       "--retries", "0", "--timeout", "5", fixture);
}

static void test_partial_and_ok(const char *fixture)
{
    char dir[512], cmd[2048];
    h_path(dir, sizeof dir, "damaged");
    snprintf(cmd, sizeof cmd,
             "mkdir -p '%s' && cp '%s'/*.log '%s'/ && echo '{\"broken' >> '%s'/device.log", dir,
             fixture, dir, dir);
    CHECK_INT(system(cmd), 0);
    ST(2, NULL, "report", dir);
    ST(2, NULL, "export", "--format", "csv", dir);
    ST(0, NULL, "report", fixture);
    ST(0, NULL, "devices", "--backend", "none");
    ST(0, NULL, "help", "serve");
    ST(0, NULL, "report", "--help");
}

static void test_run_form(void)
{
    char noexec[512];
    h_path(noexec, sizeof noexec, "noexec.sh");
    h_write_file(noexec, "#!/bin/sh\n", 10);
    chmod(noexec, 0644);
    ST(7, NULL, "--backend", "none", "-q", h_child, "exit", "7");
    ST(128 + SIGTERM, NULL, "--backend", "none", "-q", h_child, "raise", "15");
    ST(127, NULL, "--backend", "none", "-q", "gp-no-such-command");
    ST(126, NULL, "--backend", "none", "-q", noexec);
    /* Could not start: nothing to sample with --strict; CMD not run. */
    ST(125, no_gpu, "--strict", "--backend", "smi", h_child, "exit", "0");
}

int main(void)
{
    h_init();
    char fixture[1024];
    snprintf(fixture, sizeof fixture,
             "%s/fixtures/gpufl-session/3f2a9c1e-7b4d-4e21-9a0f-5c6d7e8f9a0b",
             check_env("GP_TEST_SOURCE_DIR"));
    test_usage();
    test_nothing_done(fixture);
    test_partial_and_ok(fixture);
    test_run_form();
    h_cleanup();
    return check_done("test_cli_exit");
}
