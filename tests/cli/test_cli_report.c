/*
 * test_cli_report.c - `gpu-profile report` and `gpu-profile export` end to
 * end: the fixture session's report equals the library's golden rendering
 * (text to stdout or -o FILE, JSON), a damaged session is still reported
 * with warnings naming file and line and exit status 2, a missing session
 * is status 1 with a message, bad options 125; the Chrome trace is JSON
 * Perfetto can load and the CSV has one line per kernel.  Every layout
 * GPUFlight 1.3 writes (tests/gpufl13_layouts.h) gives the report and the
 * trace of tests/golden/report/gpufl13_*, a bad sidecar and an unknown
 * record type are warnings (one per type) and status 2, a live session is
 * said to be one; the flat layout's window 0 is read, a channel file that
 * cannot be opened and a window lost in transport are status 2.
 */
#include "cli/harness.h"
#include "gpufl13_layouts.h"

#include <jansson.h>

static char fixture[1024], golden_txt[1024];

static void run(const char *const *argv, h_result *r)
{
    h_run(argv, NULL, NULL, 0, r);
}

static void test_report_text(void)
{
    h_result r;
    const char *argv[] = {h_cli, "report", fixture, NULL};
    run(argv, &r);
    CHECK_INT(r.code, 0);
    char *want = check_read_file(golden_txt, NULL);
    CHECK(want != NULL);
    if (want)
        CHECK_STR(r.out, want);
    CHECK_STR(r.err, "");
    h_result_free(&r);

    char out[512];
    h_path(out, sizeof out, "report.txt");
    const char *argv2[] = {h_cli, "report", "--top", "2", "-o", out, fixture, NULL};
    run(argv2, &r);
    CHECK_INT(r.code, 0);
    CHECK_STR(r.out, "");
    char *got = check_read_file(out, NULL);
    CHECK(got && strstr(got, "hotspots  top 2 of 3 kernels by GPU time"));
    free(got);
    free(want);
    h_result_free(&r);
}

static void test_report_json(void)
{
    h_result r;
    const char *argv[] = {h_cli, "report", "--format", "json", fixture, NULL};
    run(argv, &r);
    CHECK_INT(r.code, 0);
    json_error_t e;
    json_t *j = json_loads(r.out, 0, &e);
    CHECK(j != NULL);
    CHECK_STR(json_string_value(json_object_get(j, "schema")), "gpu-profile.report");
    json_t *sum = json_object_get(j, "summary");
    CHECK_INT(json_integer_value(json_object_get(sum, "kernel_launches")), 3);
    CHECK_INT(json_integer_value(json_object_get(sum, "kernel_time_ns")), 1000000);
    CHECK_INT(json_array_size(json_object_get(json_object_get(j, "hotspots"), "kernels")), 3);
    CHECK(json_is_false(json_object_get(json_object_get(j, "read"), "partial")));
    /* Both kernel_detail lines took the reader's direct path: the CLI's
     * wrapper of the callbacks (cli/logs.c) passes the report's detail
     * callback on (without it, they go through jansson and this is 0). */
    CHECK_INT(json_integer_value(json_object_get(json_object_get(j, "read"), "details_direct")), 2);
    json_decref(j);
    h_result_free(&r);
}

static void test_damaged(void)
{
    /* The fixture with a line that is not JSON, a batch whose row does not
     * match its columns, and a torn last line. */
    char dir[512], cmd[2048];
    h_path(dir, sizeof dir, "damaged");
    snprintf(cmd, sizeof cmd, "mkdir -p '%s' && cp '%s'/*.log '%s'/", dir, fixture, dir);
    CHECK_INT(system(cmd), 0);
    char dev[600];
    snprintf(dev, sizeof dev, "%s/device.log", dir);
    FILE *f = fopen(dev, "a");
    CHECK(f != NULL);
    if (!f)
        return;
    fputs("{\"broken\n"
          "{\"version\":1,\"type\":\"kernel_event_batch\",\"session_id\":"
          "\"3f2a9c1e-7b4d-4e21-9a0f-5c6d7e8f9a0b\",\"batch_id\":9,\"base_time_ns\":1,"
          "\"columns\":[\"dt_ns\"],\"rows\":[[1,2]]}\n"
          "{\"torn",
          f);
    fclose(f);
    h_result r;
    const char *argv[] = {h_cli, "report", dir, NULL};
    run(argv, &r);
    CHECK_INT(r.code, 2);
    CHECK_CONTAINS(r.err, "/device.log:9: not JSON");
    CHECK_CONTAINS(r.err, "/device.log:10: bad kernel_event_batch: row 1 has 2 values, expected 1");
    CHECK_CONTAINS(r.err, "/device.log:11: torn last line");
    CHECK_CONTAINS(r.err, "partial read of");
    CHECK_CONTAINS(r.out, "report  sample_app  session 3f2a9c1e-7b4d-4e21-9a0f-5c6d7e8f9a0b");
    CHECK_CONTAINS(r.out, "3 launches");
    h_result_free(&r);

    /* The export still writes what it could read, and says so too. */
    const char *argv2[] = {h_cli, "export", "--format", "csv", dir, NULL};
    run(argv2, &r);
    CHECK_INT(r.code, 2);
    CHECK_INT(h_count_lines(r.out), 4);
    h_result_free(&r);
}

static void test_errors(void)
{
    h_result r;
    const char *missing[] = {h_cli, "report", "/nonexistent/logs", NULL};
    run(missing, &r);
    CHECK_INT(r.code, 1);
    CHECK_CONTAINS(r.err, "gpu-profile: report: no session at /nonexistent/logs");
    CHECK_STR(r.out, "");
    h_result_free(&r);

    const char *top[] = {h_cli, "report", "--top", "0", fixture, NULL};
    run(top, &r);
    CHECK_INT(r.code, 125);
    CHECK_CONTAINS(r.err, "--top '0': use a whole number from 1 to 100000");
    h_result_free(&r);

    const char *fmt[] = {h_cli, "report", "--format", "xml", fixture, NULL};
    run(fmt, &r);
    CHECK_INT(r.code, 125);
    CHECK_CONTAINS(r.err, "--format 'xml': use text or json");
    h_result_free(&r);

    const char *nopath[] = {h_cli, "report", NULL};
    run(nopath, &r);
    CHECK_INT(r.code, 125);
    CHECK_CONTAINS(r.err, "PATH is missing");
    h_result_free(&r);

    const char *unknown[] = {h_cli, "export", "--format", "csv", "--bogus", fixture, NULL};
    run(unknown, &r);
    CHECK_INT(r.code, 125);
    CHECK_CONTAINS(r.err, "unknown option '--bogus'");
    h_result_free(&r);

    const char *nofmt[] = {h_cli, "export", fixture, NULL};
    run(nofmt, &r);
    CHECK_INT(r.code, 125);
    CHECK_CONTAINS(r.err, "--format is missing: use chrome-trace or csv");
    h_result_free(&r);

    /* A session id that is not there: a usage error listing those that are. */
    char logs[512];
    snprintf(logs, sizeof logs, "%s/fixtures/gpufl-session", check_env("GP_TEST_SOURCE_DIR"));
    const char *sess[] = {h_cli, "report", "--session", "nope", logs, NULL};
    run(sess, &r);
    CHECK_INT(r.code, 125);
    CHECK_CONTAINS(r.err, "report: --session 'nope': no such session; the sessions: ");
    h_result_free(&r);

    /* An output that cannot be written. */
    const char *out[] = {h_cli, "report", "-o", "/nonexistent/dir/r.txt", fixture, NULL};
    run(out, &r);
    CHECK_INT(r.code, 1);
    CHECK_CONTAINS(r.err, "cannot create '/nonexistent/dir/r.txt'");
    h_result_free(&r);
}

static void test_export(void)
{
    char out[512];
    h_path(out, sizeof out, "trace.json");
    h_result r;
    const char *argv[] = {h_cli, "export", "--format", "chrome-trace", "-o", out, fixture, NULL};
    run(argv, &r);
    CHECK_INT(r.code, 0);
    json_error_t e;
    json_t *j = json_load_file(out, 0, &e);
    CHECK(j != NULL);
    json_t *ev = json_object_get(j, "traceEvents");
    CHECK(json_array_size(ev) > 0);
    CHECK_STR(json_string_value(json_object_get(j, "displayTimeUnit")), "ns");
    size_t kernels = 0;
    for (size_t i = 0; i < json_array_size(ev); i++) {
        json_t *x = json_array_get(ev, i);
        const char *name = json_string_value(json_object_get(x, "name"));
        const char *ph = json_string_value(json_object_get(x, "ph"));
        if (ph && strcmp(ph, "X") == 0 && name &&
            (strstr(name, "vecAdd") || strstr(name, "gemm") || strstr(name, "reduce_sum")))
            kernels++;
    }
    CHECK_INT(kernels, 3);
    json_decref(j);
    h_result_free(&r);

    const char *csv[] = {h_cli, "export", "--format", "csv", fixture, NULL};
    run(csv, &r);
    CHECK_INT(r.code, 0);
    char line[512];
    CHECK_STR(h_line(r.out, 0, line, sizeof line),
              "start_ns,end_ns,duration_ns,device_id,stream_id,corr_id,kernel_id,name,grid,block,"
              "registers,dyn_shared_bytes,static_shared_bytes,occupancy,user_scope,external_kind,"
              "external_id,op");
    CHECK_INT(h_count_lines(r.out), 4);

    /* "-o -" is stdout, byte for byte what no -o writes; no file "-". */
    char cwd[1024];
    CHECK(getcwd(cwd, sizeof cwd) != NULL);
    CHECK_INT(chdir(h_dir), 0);
    static const char *const cmds[][2] = {{"export", "csv"}, {"report", "text"}};
    for (size_t k = 0; k < 2; k++) {
        const char *plain[] = {h_cli, cmds[k][0], "--format", cmds[k][1], fixture, NULL};
        const char *dash[] = {h_cli, cmds[k][0], "--format", cmds[k][1], "-o", "-", fixture, NULL};
        h_result a, b;
        run(plain, &a);
        run(dash, &b);
        CHECK_INT(b.code, 0);
        CHECK(a.out_len > 0);
        CHECK_U64(b.out_len, a.out_len);
        CHECK(a.out_len == b.out_len && memcmp(a.out, b.out, a.out_len) == 0);
        CHECK_STR(b.err, "");
        h_result_free(&a);
        h_result_free(&b);
    }
    CHECK(!h_exists("-"));
    CHECK_INT(chdir(cwd), 0);
    h_result_free(&r);
}

/* The report and the trace of each layout through the command. */
static void test_gpufl13_layouts(void)
{
    const char *src = check_env("GP_TEST_SOURCE_DIR");
    for (int l = 0; l < GL_COUNT; l++) {
        char dir[512], path[4096], want_txt[1024], want_trace[1024], trace[1024];
        h_path(dir, sizeof dir, gl_names[l]);
        gl_build(l, dir, path, sizeof path);
        bool gz = l == GL_GZ_WINDOWS || l == GL_BAD_CRC, live = l == GL_TMP_LIVE;
        bool bad = l == GL_BAD_SIZE || l == GL_BAD_CRC;
        snprintf(want_txt, sizeof want_txt, "%s/golden/report/gpufl13_%s.txt", src,
                 gz ? "gz" : "plain");
        snprintf(want_trace, sizeof want_trace, "%s/golden/report/gpufl13_%s.trace.json", src,
                 gz ? "gz" : "plain");
        h_result r;
        const char *argv[] = {h_cli, "report", path, NULL};
        run(argv, &r);
        CHECK_INT(r.code, bad ? 2 : 0);
        char *want = check_read_file(want_txt, NULL);
        CHECK(want != NULL);
        if (want && !live && !bad)
            CHECK_STR(r.out, want);
        if (want && bad) /* the report, then what was wrong */
            CHECK(strncmp(r.out, want, strlen(want)) == 0);
        free(want);
        if (live) {
            CHECK_CONTAINS(r.out, "  the session is live or crashed (its files are still in "
                                  ".tmp/, no shutdown): the report covers what reached the disk\n");
            CHECK_CONTAINS(r.out, "  kernels           6 launches  135.000 us GPU time  2 "
                                  "distinct\n");
        }
        if (bad) {
            char w[4300];
            snprintf(w, sizeof w,
                     "gpu-profile: report: %s/.gpufl-window.%s.1.json:1: window "
                     "sidecar does not match %s",
                     path, l == GL_BAD_SIZE ? "scope" : "device",
                     l == GL_BAD_SIZE ? "scope.1.log: payload_bytes 6156, the file has 6155"
                                      : "device.1.log.gz: payload_crc32 3608752562");
            CHECK_CONTAINS(r.err, w);
            CHECK_CONTAINS(r.err, "0 broken gzip streams skipped, 1 windows not matching their "
                                  "sidecar, 0 records of unknown types not read\n");
        } else {
            CHECK_STR(r.err, "");
        }
        h_result_free(&r);

        const char *json[] = {h_cli, "report", "--format", "json", path, NULL};
        run(json, &r);
        CHECK_INT(r.code, bad ? 2 : 0);
        json_error_t e;
        json_t *j = json_loads(r.out, 0, &e);
        CHECK(j != NULL);
        json_t *read = json_object_get(j, "read");
        CHECK_STR(json_string_value(json_object_get(read, "session_dir")), path);
        CHECK_INT(json_integer_value(json_object_get(read, "files")), 4);
        CHECK_INT(json_integer_value(json_object_get(read, "unpublished_files")), live ? 4 : 0);
        CHECK_INT(json_integer_value(json_object_get(read, "bad_windows")), bad);
        CHECK(json_integer_value(json_object_get(read, "details_direct")) > 0);
        CHECK_INT(json_is_true(json_object_get(json_object_get(j, "session"), "unpublished")),
                  live);
        CHECK_INT(json_array_size(json_object_get(j, "kernel_perf_metrics")), 1);
        json_decref(j);
        h_result_free(&r);

        h_path(trace, sizeof trace, "gpufl13.trace.json");
        const char *exp[] = {h_cli, "export", "--format", "chrome-trace", "-o", trace, path, NULL};
        run(exp, &r);
        CHECK_INT(r.code, bad ? 2 : 0);
        char *got = check_read_file(trace, NULL);
        want = check_read_file(want_trace, NULL);
        CHECK(got && want);
        if (got && want && !live)
            CHECK_STR(got, want);
        if (got && live) {
            CHECK_CONTAINS(got, "\"name\":\"nvtx_range\",\"cat\":\"nvtx\",\"ph\":\"X\","
                                "\"ts\":1.500,\"pid\":1,\"tid\":2,\"dur\":848.500");
            CHECK_CONTAINS(got, "\"crashed\":true");
        }
        free(got);
        free(want);
        h_result_free(&r);
    }
    /* One channel file of a session directory stands for its session:
     * plain and gzipped windows, and a live session's .tmp/ file. */
    static const struct {
        int layout;
        const char *file;
    } chans[] = {{GL_PLAIN_WINDOWS, "device.1.log"},
                 {GL_GZ_WINDOWS, "scope.1.log.gz"},
                 {GL_TMP_LIVE, ".tmp/device.log"}};
    for (size_t i = 0; i < sizeof chans / sizeof chans[0]; i++) {
        char sdir[512], path[4096], file[4200];
        h_path(sdir, sizeof sdir, gl_names[chans[i].layout]);
        gl_build(chans[i].layout, sdir, path, sizeof path);
        snprintf(file, sizeof file, "%s/%s", path, chans[i].file);
        h_result a, b;
        const char *by_dir[] = {h_cli, "report", "--format", "json", path, NULL};
        const char *by_file[] = {h_cli, "report", "--format", "json", file, NULL};
        run(by_dir, &a);
        run(by_file, &b);
        CHECK_INT(b.code, a.code);
        CHECK_STR(b.out, a.out); /* the same session, read the same: session_dir too */
        CHECK_STR(b.err, a.err);
        h_result_free(&a);
        h_result_free(&b);
        const char *exp[] = {h_cli, "export", "--format", "csv", file, NULL};
        run(exp, &b);
        CHECK_INT(b.code, 0);
        CHECK_PREFIX(b.out, "start_ns,end_ns,duration_ns,");
        h_result_free(&b);
    }

    /* The flat layout through --app (GPUFlight's log_prefix). */
    char dir[512];
    h_path(dir, sizeof dir, gl_names[GL_FLAT_WINDOWS]);
    h_result r;
    const char *app[] = {h_cli, "report", "--app", GL_APP, dir, NULL};
    run(app, &r);
    CHECK_INT(r.code, 0);
    CHECK_CONTAINS(r.out, "report  gfnative  session " GL_PLAIN_ID "\n");
    h_result_free(&r);
}

/* Unknown record types: one warning per type on stderr, status 2. */
static void test_unknown_types(void)
{
    char dir[512], path[4096], file[4200];
    h_path(dir, sizeof dir, "unknown");
    gl_build(GL_PLAIN_WINDOWS, dir, path, sizeof path);
    snprintf(file, sizeof file, "%s/scope.2.log", path);
    FILE *f = fopen(file, "w");
    CHECK(f != NULL);
    if (!f)
        return;
    for (int i = 0; i < 3; i++)
        fputs("{\"type\":\"mystery_event\",\"session_id\":\"" GL_PLAIN_ID "\"}\n", f);
    fclose(f);
    h_result r;
    const char *argv[] = {h_cli, "report", path, NULL};
    run(argv, &r);
    CHECK_INT(r.code, 2);
    char want[4400];
    snprintf(want, sizeof want,
             "gpu-profile: report: %s:1: record type \"mystery_event\" is not known to this "
             "reader: its records are counted, not read (one warning per type)\n"
             "gpu-profile: report: partial read of %s: 0 unreadable lines, 0 unusable records, 0 "
             "broken gzip streams skipped, 0 windows not matching their sidecar, 3 records of "
             "unknown types not read\n",
             file, path);
    CHECK_STR(r.err, want);
    CHECK_CONTAINS(r.out, "  unknown record types: mystery_event (3)\n");
    h_result_free(&r);
}

/* Issue 32: GPUFlight 1.3's flat window 0 is read like the other layouts
 * (status 0); a channel file that cannot be opened and a window GPUFlight
 * lost in transport are warnings naming them, and status 2. */
static void test_hostile_layouts(void)
{
    const char *src = check_env("GP_TEST_SOURCE_DIR");
    char dir[512], path[4096], golden[1024];
    h_path(dir, sizeof dir, "flat0");
    CHECK(fl_make_dirs(dir) == 0);
    gl_rewrite(dir, GL_APP ".%s.0.log", false, false);
    snprintf(path, sizeof path, "%s/" GL_APP, dir);
    snprintf(golden, sizeof golden, "%s/golden/report/gpufl13_plain.txt", src);
    h_result r;
    const char *flat[] = {h_cli, "report", path, NULL};
    run(flat, &r);
    CHECK_INT(r.code, 0);
    char *want = check_read_file(golden, NULL);
    CHECK(want != NULL);
    if (want)
        CHECK_STR(r.out, want);
    free(want);
    CHECK_STR(r.err, "");
    h_result_free(&r);

    char link[4200], marker[4200], w[9000];
    h_path(dir, sizeof dir, "dangling");
    gl_build(GL_PLAIN_WINDOWS, dir, path, sizeof path);
    snprintf(link, sizeof link, "%s/system.log", path);
    CHECK(symlink("gone.log", link) == 0);
    h_path(dir, sizeof dir, "lost");
    gl_build(GL_PLAIN_WINDOWS, dir, path, sizeof path);
    snprintf(marker, sizeof marker, "%s/.gpufl-transport-loss.scope.2.json", path);
    gl_put(marker, "{}", 2, false);
    for (int lost = 0; lost < 2; lost++) {
        h_path(dir, sizeof dir, lost ? "lost" : "dangling");
        const char *argv[] = {h_cli, "report", dir, NULL};
        run(argv, &r);
        CHECK_INT(r.code, 2);
        if (lost)
            snprintf(w, sizeof w,
                     "gpu-profile: report: %s:1: window 2 of channel scope was lost in transport "
                     "(GPUFlight's marker): its events are missing from this session\n"
                     "gpu-profile: report: partial read of %s: 0 unreadable lines, 0 unusable "
                     "records, 0 broken gzip streams skipped, 0 windows not matching their "
                     "sidecar, 0 records of unknown types not read, 0 files that could not be "
                     "opened, 1 windows lost in transport\n",
                     marker, dir);
        else
            snprintf(w, sizeof w,
                     "gpu-profile: report: %s:0: cannot open %s: No such file or directory (a "
                     "symbolic link to a file that is not there); its events are not read\n"
                     "gpu-profile: report: partial read of %s: 0 unreadable lines, 0 unusable "
                     "records, 0 broken gzip streams skipped, 0 windows not matching their "
                     "sidecar, 0 records of unknown types not read, 1 files that could not be "
                     "opened, 0 windows lost in transport\n",
                     link, link, dir);
        CHECK_STR(r.err, w);
        CHECK_CONTAINS(r.out, lost ? "partial read: 1 window lost in transport, 1 reader warning"
                                   : "partial read: 1 file that could not be opened, 1 reader "
                                     "warning");
        h_result_free(&r);
        const char *json[] = {h_cli, "report", "--format", "json", dir, NULL};
        run(json, &r);
        CHECK_INT(r.code, 2);
        json_t *j = json_loads(r.out, 0, NULL);
        json_t *read = json_object_get(j, "read");
        CHECK(json_is_true(json_object_get(read, "partial")));
        CHECK_INT(json_integer_value(json_object_get(read, "unreadable_files")), !lost);
        CHECK_INT(json_integer_value(json_object_get(read, "lost_windows")), lost);
        json_decref(j);
        h_result_free(&r);
        const char *exp[] = {h_cli, "export", "--format", "csv", dir, NULL};
        run(exp, &r);
        CHECK_INT(r.code, 2);
        h_result_free(&r);
    }
}

int main(void)
{
    h_init();
    const char *src = check_env("GP_TEST_SOURCE_DIR");
    snprintf(fixture, sizeof fixture,
             "%s/fixtures/gpufl-session/3f2a9c1e-7b4d-4e21-9a0f-5c6d7e8f9a0b", src);
    snprintf(golden_txt, sizeof golden_txt, "%s/golden/report/fixture.txt", src);
    test_report_text();
    test_report_json();
    test_damaged();
    test_errors();
    test_export();
    test_gpufl13_layouts();
    test_unknown_types();
    test_hostile_layouts();
    h_cleanup();
    return check_done("test_cli_report");
}
