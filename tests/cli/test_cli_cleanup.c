/*
 * test_cli_cleanup.c - what a run leaves behind and says on the way out:
 *
 *   - --engine without --log-dir works in a private $TMPDIR directory; a
 *     run killed with SIGKILL cannot remove it, so the next run does
 *     (its pid is in the name and no longer runs); a directory whose run
 *     is alive, or that is not ours by name, stays;
 *   - a full disk (/dev/full) for -o and --samples is said once each (the
 *     write that failed, not again at the close), for the run, report and
 *     export; CMD's status is still the run's.
 */
#include "harness.h"

#include <dirent.h>
#include <limits.h>

static char tmpdir[512], env_tmp[600], env_plugin[PATH_MAX + 32];

static int count_prefixed(const char *dir, const char *prefix)
{
    DIR *d = opendir(dir);
    if (!d)
        return -1;
    int n = 0;
    struct dirent *e;
    while ((e = readdir(d)))
        n += strncmp(e->d_name, prefix, strlen(prefix)) == 0;
    closedir(d);
    return n;
}

static int cond_trace_dir(const void *arg)
{
    (void)arg;
    return count_prefixed(tmpdir, "gpu-profile-trace-") > 0;
}

static void test_killed_run_cleaned(void)
{
    h_path(tmpdir, sizeof tmpdir, "tmp");
    CHECK_INT(mkdir(tmpdir, 0700), 0);
    snprintf(env_tmp, sizeof env_tmp, "TMPDIR=%s", tmpdir);
    /* The fake library stands in for the plugin: found and checked by the
     * command, loaded by nothing (CMD makes no CUDA call). */
    snprintf(env_plugin, sizeof env_plugin, "GPUFL_CUPTI_PLUGIN=%s", check_env("GP_TEST_FAKE_LIB"));
    const char *env[] = {env_tmp, env_plugin, NULL};

    /* A run killed while CMD runs leaves its directory. */
    const char *argv[] = {h_cli, "--backend", "none",  "--engine", "trace",
                          "--",  h_child,     "sleep", "300",      NULL};
    char err[512];
    h_path(err, sizeof err, "killed.err");
    pid_t pid = h_spawn(argv, env, NULL, NULL, err);
    CHECK(h_wait_for(cond_trace_dir, NULL, 10.0));
    kill(pid, SIGKILL);
    h_wait(pid);
    h_nap_ms(500); /* CMD, now an orphan, ends */
    CHECK_INT(count_prefixed(tmpdir, "gpu-profile-trace-"), 1);

    /* Beside it: one of a run that is alive (ours), one not named by us. */
    char live[700], other[700];
    snprintf(live, sizeof live, "%s/gpu-profile-trace-%ld-keepme", tmpdir, (long)getpid());
    snprintf(other, sizeof other, "%s/gpu-profile-trace-notapid", tmpdir);
    CHECK_INT(mkdir(live, 0700), 0);
    CHECK_INT(mkdir(other, 0700), 0);

    /* The next run removes the killed one's, and its own. */
    const char *argv2[] = {h_cli, "--backend", "none", "--engine", "trace",
                           "--",  h_child,     "exit", "0",        NULL};
    h_result r;
    h_run(argv2, env, NULL, 0, &r);
    CHECK_INT(r.code, 0);
    CHECK_INT(count_prefixed(tmpdir, "gpu-profile-trace-"), 2);
    CHECK(h_exists(live));
    CHECK(h_exists(other));
    h_result_free(&r);
}

static int count(const char *hay, const char *needle)
{
    int n = 0;
    for (const char *p = hay; (p = strstr(p, needle)); p += strlen(needle))
        n++;
    return n;
}

static void test_full_disk(void)
{
    if (access("/dev/full", W_OK) != 0) {
        printf("no /dev/full: skipped\n");
        return;
    }
    char csv[512], nd[512];
    h_path(csv, sizeof csv, "full.csv");
    h_path(nd, sizeof nd, "full.ndjson");
    CHECK_INT(symlink("/dev/full", csv), 0);
    CHECK_INT(symlink("/dev/full", nd), 0);
    h_scenario("device 0\n");
    h_result r;
    const char *argv[] = {h_cli, "-o",    "/dev/full", "--samples", csv, "--interval", "0.02",
                          "--",  h_child, "sleep",     "100",       "3", NULL};
    h_run(argv, NULL, NULL, 0, &r);
    printf("%s", r.err);
    CHECK_INT(r.code, 3);
    CHECK_INT(count(r.err, "cannot write the report to '/dev/full': No space left on device"), 1);
    CHECK_INT(count(r.err, "No space left on device"), 2);
    CHECK_INT(count(r.err, "cannot write the samples to"), 1);
    h_result_free(&r);

    const char *argv2[] = {h_cli,  "--json", "-o",    "/dev/full", "--samples", nd,  "--interval",
                           "0.02", "--",     h_child, "exit",      "0",         NULL};
    h_run(argv2, NULL, NULL, 0, &r);
    CHECK_INT(r.code, 0);
    CHECK_INT(count(r.err, "No space left on device"), 2);
    h_result_free(&r);

    char fixture[1024];
    snprintf(fixture, sizeof fixture,
             "%s/fixtures/gpufl-session/3f2a9c1e-7b4d-4e21-9a0f-5c6d7e8f9a0b",
             check_env("GP_TEST_SOURCE_DIR"));
    const char *argv3[] = {h_cli, "report", "-o", "/dev/full", fixture, NULL};
    h_run(argv3, NULL, NULL, 0, &r);
    CHECK_INT(r.code, 1);
    CHECK_STR(r.err, "gpu-profile: report: cannot write '/dev/full': No space left on device\n");
    h_result_free(&r);
    const char *argv4[] = {h_cli, "export", "--format", "csv", "-o", "/dev/full", fixture, NULL};
    h_run(argv4, NULL, NULL, 0, &r);
    CHECK_INT(r.code, 1);
    CHECK_INT(count(r.err, "No space left on device"), 1);
    h_result_free(&r);
}

int main(void)
{
    h_init();
    test_killed_run_cleaned();
    test_full_disk();
    h_cleanup();
    return check_done("test_cli_cleanup");
}
