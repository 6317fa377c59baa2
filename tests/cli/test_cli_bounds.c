/*
 * test_cli_bounds.c - gpu-profile report / export within bounds (issue 16,
 * points 6 and 7), end to end:
 *   - a session of more distinct kernel ids than --max-distinct N (or
 *     GPU_PROFILE_MAX_DISTINCT) stops the read: exit 1, nothing on stdout,
 *     stderr naming the file, the line, the limit and how to raise it;
 *     within the limit the report is written;
 *   - under `ulimit -v` (a plain build: the sanitizers' shadow memory does
 *     not fit one), running out of memory is an error: exit 1, nothing on
 *     stdout, "out of memory" on stderr (before, the text report printed
 *     "report: out of memory" to stdout and exited 0);
 *   - a FIFO as device.log is refused naming it (exit 1, no wait), and a
 *     file past GPU_PROFILE_MAX_FILE_LINES is a warning and exit 2;
 *   - GPU_PROFILE_MAX_DISTINCT, _MEMORY, _FILE_LINES and _FILE_BYTES set to
 *     anything but a whole number from 1 ("abc", "-1", "0", "4M", "100 ",
 *     " 100") are refused naming the variable (125), as the options are
 *     (before, the default was taken silently; " 100" was read as 100).
 */
#include "harness.h"

#include <zlib.h>

#define SID "aaaaaaaa-0000-4000-8000-00000000b0b0"

/* A session directory whose device.log has n distinct kernel ids. */
static void write_session(const char *dir, unsigned n)
{
    mkdir(dir, 0700);
    char path[512];
    snprintf(path, sizeof path, "%s/device.log", dir);
    FILE *f = fopen(path, "w");
    CHECK(f != NULL);
    if (!f)
        return;
    fprintf(f, "{\"version\":1,\"type\":\"job_start\",\"pid\":1,\"app\":\"a\",\"session_id\":\"" SID
               "\",\"ts_ns\":1760000000000000000}\n");
    /* Their names: the export keeps the dictionary, not the kernels. */
    fputs("{\"version\":1,\"type\":\"dictionary_update\",\"session_id\":\"" SID
          "\",\"kernel_dict\":{",
          f);
    for (unsigned i = 0; i < n && i < 5000; i++)
        fprintf(f, "%s\"%u\":\"k%u\"", i ? "," : "", i + 1, i + 1);
    fputs("}}\n", f);
    const unsigned per = 10000;
    for (unsigned b = 0; b < n; b += per) {
        fprintf(f,
                "{\"version\":1,\"type\":\"kernel_event_batch\",\"session_id\":\"" SID
                "\",\"batch_id\":%u,\"base_time_ns\":1760000000000001000,\"columns\":[\"dt_ns\","
                "\"kernel_id\",\"duration_ns\"],\"rows\":[",
                b / per + 1);
        for (unsigned i = b; i < n && i < b + per; i++)
            fprintf(f, "%s[%u,%u,100]", i > b ? "," : "", i - b, i + 1);
        fputs("]}\n", f);
    }
    fprintf(f, "{\"type\":\"shutdown\",\"pid\":1,\"app\":\"a\",\"session_id\":\"" SID
               "\",\"ts_ns\":1760000000009000000}\n");
    fclose(f);
}

static void run(const char *const *argv, const char *const *env, h_result *r)
{
    h_run(argv, env, NULL, 0, r);
}

static void test_max_distinct(void)
{
    char dir[512];
    h_path(dir, sizeof dir, "many");
    write_session(dir, 5000);
    h_result r;

    const char *report[] = {h_cli, "report", "--max-distinct", "1000", dir, NULL};
    run(report, NULL, &r);
    CHECK_INT(r.code, 1);
    CHECK_INT((long long)r.out_len, 0);
    CHECK_CONTAINS(r.err, "gpu-profile: report: ");
    CHECK_CONTAINS(r.err, "/many/device.log:2: the read was stopped: more than 1000 distinct keys");
    CHECK_CONTAINS(r.err, "(kernel ids, names, scopes, correlation ids, devices: the report's "
                          "limit)");
    CHECK_CONTAINS(r.err, "raise it with GPU_PROFILE_MAX_DISTINCT=N (gpu-profile report "
                          "--max-distinct N)");
    h_result_free(&r);

    /* The same limit from the environment; the JSON report too. */
    const char *env[] = {"GPU_PROFILE_MAX_DISTINCT=1000", NULL};
    const char *json[] = {h_cli, "report", "--format", "json", dir, NULL};
    run(json, env, &r);
    CHECK_INT(r.code, 1);
    CHECK_INT((long long)r.out_len, 0);
    CHECK_CONTAINS(r.err, "more than 1000 distinct keys");
    h_result_free(&r);

    const char *export[] = {h_cli,  "export", "--format", "csv", "--max-distinct",
                            "1000", dir,      NULL};
    run(export, NULL, &r);
    CHECK_INT(r.code, 1);
    CHECK_CONTAINS(r.err, "gpu-profile: export: ");
    CHECK_CONTAINS(r.err, "the read was stopped: more than 1000 distinct keys");
    h_result_free(&r);

    /* Within the limit (the option over the environment). */
    const char *ok[] = {h_cli, "report", "--max-distinct", "100000", dir, NULL};
    run(ok, env, &r);
    CHECK_INT(r.code, 0);
    CHECK_CONTAINS(r.out, "kernels           5000 launches");
    CHECK_INT((long long)r.err_len, 0);
    h_result_free(&r);

    const char *bad[] = {h_cli, "report", "--max-distinct", "0", dir, NULL};
    run(bad, NULL, &r);
    CHECK_INT(r.code, 125);
    CHECK_CONTAINS(r.err, "--max-distinct '0': use a whole number from 1");
    h_result_free(&r);
}

/* The GPU_PROFILE_MAX_* variables as strictly as the options (issue 32,
 * point 5): 125 naming the variable, nothing read or written. */
static void test_env_strict(void)
{
    char dir[512];
    h_path(dir, sizeof dir, "env");
    write_session(dir, 10);
    static const char *const vars[] = {
        "GPU_PROFILE_MAX_DISTINCT",      "GPU_PROFILE_MAX_MEMORY",
        "GPU_PROFILE_MAX_FILE_LINES",    "GPU_PROFILE_MAX_FILE_BYTES",
        "GPU_PROFILE_MAX_SESSION_BYTES", "GPU_PROFILE_MAX_GZIP_RATIO"};
    static const char *const bad[] = {
        "abc", "-1", "0", "4M", "100 ", " 100", "+5", "0x10", "18446744073709551616"};
    h_result r;
    for (size_t v = 0; v < sizeof vars / sizeof vars[0]; v++) {
        char set[128], want[300];
        for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
            snprintf(set, sizeof set, "%s=%s", vars[v], bad[i]);
            const char *env[] = {set, NULL};
            for (int exp = 0; exp < 2; exp++) {
                const char *report[] = {h_cli, "report", dir, NULL};
                const char *export[] = {h_cli, "export", "--format", "csv", dir, NULL};
                run(exp ? export : report, env, &r);
                snprintf(want, sizeof want,
                         "gpu-profile: %s: %s='%s': use a whole number from 1 (decimal digits "
                         "only), or unset it for the default\n",
                         exp ? "export" : "report", vars[v], bad[i]);
                CHECK_INT(r.code, 125);
                CHECK_INT((long long)r.out_len, 0);
                CHECK_STR(r.err, want);
                h_result_free(&r);
            }
        }
        /* A whole number is taken; set but empty is the default. */
        const char *values[] = {"100000000", ""};
        for (int k = 0; k < 2; k++) {
            snprintf(set, sizeof set, "%s=%s", vars[v], values[k]);
            const char *env[] = {set, NULL};
            const char *report[] = {h_cli, "report", dir, NULL};
            run(report, env, &r);
            CHECK_INT(r.code, 0);
            CHECK_CONTAINS(r.out, "kernels           10 launches");
            CHECK_INT((long long)r.err_len, 0);
            h_result_free(&r);
        }
    }
}

static void test_ulimit(void)
{
#if defined(__SANITIZE_ADDRESS__) || defined(__SANITIZE_THREAD__)
    printf("test_cli_bounds: the ulimit -v case is for the plain build (sanitizers reserve "
           "terabytes of address space)\n");
#else
    char dir[512];
    h_path(dir, sizeof dir, "huge");
    write_session(dir, 1200000); /* about 0.8 GiB of report without a limit */
    h_result r;
    char script[1200];
    for (int json = 0; json < 2; json++) {
        snprintf(script, sizeof script, "ulimit -v 200000 && exec '%s' report --format %s '%s'",
                 h_cli, json ? "json" : "text", dir);
        const char *argv[] = {"/bin/sh", "-c", script, NULL};
        const char *env[] = {"GPU_PROFILE_MAX_DISTINCT=100000000", NULL};
        run(argv, env, &r);
        CHECK_INT(r.code, 1);
        CHECK_INT((long long)r.out_len, 0);
        CHECK_CONTAINS(r.err, "out of memory");
        CHECK_CONTAINS(r.err, "/huge/device.log:");
        h_result_free(&r);
    }
    /* The default limits stop it before memory runs out under 1 GiB: the
     * bytes kept first (about 670,000 kernels; issue 32, point 1). */
    snprintf(script, sizeof script, "ulimit -v 1048576 && exec '%s' report '%s'", h_cli, dir);
    const char *argv[] = {"/bin/sh", "-c", script, NULL};
    const char *env[] = {"GPU_PROFILE_MAX_DISTINCT", "GPU_PROFILE_MAX_MEMORY", NULL};
    run(argv, env, &r);
    CHECK_INT(r.code, 1);
    CHECK_INT((long long)r.out_len, 0);
    CHECK_CONTAINS(r.err, "more than 402653184 bytes kept");
    h_result_free(&r);
#endif
}

static void test_files(void)
{
    char dir[512], path[600];
    h_path(dir, sizeof dir, "fifo");
    mkdir(dir, 0700);
    snprintf(path, sizeof path, "%s/device.log", dir);
    CHECK_INT(mkfifo(path, 0600), 0);
    h_result r;
    const char *report[] = {h_cli, "report", dir, NULL};
    run(report, NULL, &r);
    CHECK_INT(r.code, 1);
    CHECK_INT((long long)r.out_len, 0);
    CHECK_CONTAINS(r.err, path);
    CHECK_CONTAINS(r.err, "it is a FIFO, not a regular file");
    h_result_free(&r);

    /* A window of a thousand kernel batches past a cap of 100 lines. */
    h_path(dir, sizeof dir, "lines");
    write_session(dir, 10);
    snprintf(path, sizeof path, "%s/device.1.log.gz", dir);
    gzFile z = gzopen(path, "wb");
    CHECK(z != NULL);
    for (int i = 0; z && i < 1000; i++)
        gzprintf(z,
                 "{\"version\":1,\"type\":\"kernel_event_batch\",\"session_id\":\"" SID
                 "\",\"batch_id\":%d,\"base_time_ns\":1760000000000001000,\"columns\":[\"dt_ns\","
                 "\"kernel_id\",\"duration_ns\"],\"rows\":[[0,1,100]]}\n",
                 i + 100);
    if (z)
        gzclose(z);
    const char *env[] = {"GPU_PROFILE_MAX_FILE_LINES=100", NULL};
    const char *lines[] = {h_cli, "report", dir, NULL};
    run(lines, env, &r);
    CHECK_INT(r.code, 2);
    /* 100 launches from the window's first 100 lines, 10 from device.log */
    CHECK_CONTAINS(r.out, "kernels           110 launches");
    CHECK_CONTAINS(r.err, "device.1.log.gz:101: more than 100 lines: the rest of the file is not "
                          "read");
    CHECK_CONTAINS(r.err, "1 files past a cap not read to their end");
    h_result_free(&r);
}

int main(void)
{
    h_init();
    test_max_distinct();
    test_env_strict();
    test_files();
    test_ulimit();
    h_cleanup();
    return check_done("test_cli_bounds");
}
