/*
 * test_cli_plugin.c - the plugin path the command is given: a relative
 * GPUFL_CUPTI_PLUGIN naming a world-writable library (the fake library,
 * tests/fakes/fake_lib.c, whose constructor leaves a marker) is refused by
 * `metrics` and by `--engine trace` before anything loads it, with the
 * reason, status 1 and 125, CMD not run; a relative one that passes the
 * checks reaches CMD absolute, in CUDA_INJECTION64_PATH and
 * GPUFL_CUPTI_PLUGIN alike (CMD may change directory).
 */
#include "harness.h"

#include <limits.h>

static char marker[512], env_marker[600];

static void copy_lib(const char *to, mode_t mode)
{
    size_t len = 0;
    char *bytes = check_read_file(check_env("GP_TEST_FAKE_LIB"), &len);
    FILE *f = fopen(to, "wb");
    if (!bytes || !f || fwrite(bytes, 1, len, f) != len) {
        perror(to);
        exit(2);
    }
    fclose(f);
    free(bytes);
    CHECK_INT(chmod(to, mode), 0);
}

static void test_rogue(void)
{
    const char *env[] = {"GPUFL_CUPTI_PLUGIN=rogue.so", env_marker, NULL};
    h_result r;
    const char *argv[] = {h_cli, "metrics", "list", "--chip", "ga100", NULL};
    h_run(argv, env, NULL, 0, &r);
    printf("metrics: %d %s", r.code, r.err);
    CHECK_INT(r.code, 1);
    CHECK_CONTAINS(r.err, "gpu-profile: metrics: GPUFL_CUPTI_PLUGIN=rogue.so: ");
    CHECK_CONTAINS(r.err, "/rogue.so is writable by every user: not loaded");
    CHECK(!h_exists(marker));
    h_result_free(&r);

    char touched[512];
    h_path(touched, sizeof touched, "cmd-ran");
    const char *argv2[] = {h_cli, "--backend", "none",  "--engine", "trace",
                           "--",  h_child,     "touch", touched,    NULL};
    h_run(argv2, env, NULL, 0, &r);
    printf("--engine trace: %d %s", r.code, r.err);
    CHECK_INT(r.code, 125);
    CHECK_CONTAINS(r.err, "gpu-profile: --engine Trace: GPUFL_CUPTI_PLUGIN=rogue.so: ");
    CHECK_CONTAINS(r.err, "is writable by every user: not loaded");
    CHECK(!h_exists(touched));
    CHECK(!h_exists(marker));
    h_result_free(&r);
}

static void test_relative_made_absolute(void)
{
    copy_lib("good.so", 0755);
    char real_dir[PATH_MAX], want[PATH_MAX + 64], got[PATH_MAX + 64];
    CHECK(realpath(h_dir, real_dir) != NULL);
    const char *env[] = {"GPUFL_CUPTI_PLUGIN=./good.so", env_marker, NULL};
    const char *argv[] = {h_cli,
                          "--backend",
                          "none",
                          "--engine",
                          "trace",
                          "--",
                          h_child,
                          "printenv",
                          "CUDA_INJECTION64_PATH",
                          "GPUFL_CUPTI_PLUGIN",
                          NULL};
    h_result r;
    h_run(argv, env, NULL, 0, &r);
    CHECK_INT(r.code, 0);
    snprintf(want, sizeof want, "CUDA_INJECTION64_PATH=%s/good.so", real_dir);
    CHECK_STR(h_line(r.out, 0, got, sizeof got), want);
    snprintf(want, sizeof want, "GPUFL_CUPTI_PLUGIN=%s/good.so", real_dir);
    CHECK_STR(h_line(r.out, 1, got, sizeof got), want);
    h_result_free(&r);
}

int main(void)
{
    h_init();
    h_path(marker, sizeof marker, "marker");
    snprintf(env_marker, sizeof env_marker, "FAKE_LIB_MARKER=%s", marker);
    if (chdir(h_dir) != 0) {
        perror(h_dir);
        return 2;
    }
    copy_lib("rogue.so", 0777);
    test_rogue();
    test_relative_made_absolute();
    CHECK_INT(chdir("/"), 0);
    h_cleanup();
    return check_done("test_cli_plugin");
}
