/*
 * test_gpufl_report_logs.c - gpufl_report_logs(): the report of any
 * session's logs, in memory.  Sessions recorded here (backend None) are
 * found by log directory, session directory and session id, and give the
 * bytes gpufl_generate_report() writes; log_prefix picks flat files first,
 * then a directory of that name, then the latest session of that app (two
 * apps in one log directory, the newer of two same-app sessions), and says
 * what it looked for when nothing matches.  On the rich session of
 * report_session.h: the section mask gives each section's part of the
 * whole text, JSON is the whole object with top_n honoured, a partial read
 * is still GPUFL_OK.  Bad arguments are GPUFL_ERR_INVALID_ARG with *out
 * NULL; a session still recording is reported as such.
 */
#include "fl_log.h"
#include "gpufl.h"
#include "recorder/writer.h"
#include "report_session.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

static char g_tmp[512];

/* Records one short session of app into log_path; its id into sid. */
static void record(const char *app, const char *log_path, char *sid, size_t cap)
{
    gpufl_init_options o;
    gpufl_init_options_init(&o);
    o.app_name = app;
    o.log_path = log_path;
    o.backend = GPUFL_BACKEND_NONE;
    gpufl_error err;
    CHECK_INT(gpufl_init(&o, &err), GPUFL_OK);
    for (int i = 0; i < 2; i++) {
        gpufl_scope s = gpufl_scope_begin(app);
        gpufl_scope_end(&s);
    }
    gpufl_session_id(sid, cap);
    gpufl_shutdown();
}

/* Sets the modification time of dir and of every file in it to sec: the
 * log-directory picker compares these, and a coarse clock could tie. */
static void set_mtime(const char *dir, time_t sec)
{
    struct timespec ts[2] = {{sec, 0}, {sec, 0}};
    DIR *d = opendir(dir);
    CHECK(d != NULL);
    if (!d)
        return;
    struct dirent *e;
    while ((e = readdir(d)))
        if (e->d_name[0] != '.')
            CHECK_INT(utimensat(dirfd(d), e->d_name, ts, 0), 0);
    closedir(d);
    CHECK_INT(utimensat(AT_FDCWD, dir, ts, 0), 0);
}

/* gpufl_report_logs with the options given; the report (caller frees) or
 * NULL with *st set. */
static char *report(const char *dir, const char *prefix, const char *sid, int top_n,
                    gpufl_report_format fmt, unsigned sections, gpufl_status *st, gpufl_error *err)
{
    gpufl_report_options o;
    gpufl_report_options_init(&o);
    o.log_prefix = prefix;
    o.session_id = sid;
    o.top_n = top_n;
    o.format = fmt;
    o.sections = sections;
    char *out = (char *)1;
    size_t len = 12345;
    *st = gpufl_report_logs(dir, &o, &out, &len, err);
    if (*st != GPUFL_OK) {
        CHECK(out == NULL);
        CHECK_U64(len, 0);
        return NULL;
    }
    CHECK(out != NULL);
    if (out)
        CHECK_U64(len, strlen(out));
    return out;
}

static char *text_of(const char *dir, const char *prefix, const char *sid)
{
    gpufl_status st;
    gpufl_error err;
    char *t = report(dir, prefix, sid, 10, GPUFL_REPORT_TEXT, 0, &st, &err);
    if (st != GPUFL_OK)
        fprintf(stderr, "report of %s (prefix %s): %s\n", dir, prefix ? prefix : "-", err.message);
    CHECK_INT(st, GPUFL_OK);
    return t;
}

/* The text report's first line names app and session. */
static void check_head(const char *text, const char *app, const char *sid)
{
    char want[400];
    snprintf(want, sizeof want, "report  %s  session %s", app, sid);
    CHECK(text && strncmp(text, want, strlen(want)) == 0);
}

static void copy_file(const char *from, const char *to)
{
    size_t len = 0;
    char *t = check_read_file(from, &len);
    CHECK(t != NULL);
    FILE *f = fopen(to, "wb");
    CHECK(f != NULL);
    if (t && f)
        CHECK_U64(fwrite(t, 1, len, f), len);
    if (f)
        fclose(f);
    free(t);
}

static void test_options_init(void)
{
    gpufl_report_options o;
    memset(&o, 0x5a, sizeof o);
    gpufl_report_options_init(&o);
    CHECK(o.session_id == NULL);
    CHECK(o.log_prefix == NULL);
    CHECK_INT(o.top_n, 10);
    CHECK_INT(o.format, GPUFL_REPORT_TEXT);
    CHECK_U64(o.sections, GPUFL_SECTION_ALL);
    gpufl_report_options_init(NULL);
    CHECK_U64(GPUFL_SECTION_ALL, 0xfff);
    CHECK_U64(GPUFL_SECTION_RUN, 1024);
    CHECK_U64(GPUFL_SECTION_PERF, 512);
    CHECK_U64(GPUFL_SECTION_READ, 256);
    gpufl_free(NULL);
}

static void test_recorded(void)
{
    char logs[600], sid_a1[64], sid_b[64], sid_a3[64], gen[700], sdir[800];
    snprintf(logs, sizeof logs, "%s/logs", g_tmp);
    snprintf(gen, sizeof gen, "%s/gen.txt", g_tmp);

    /* One session: all ways to name it give gpufl_generate_report's bytes. */
    record("alpha", logs, sid_a1, sizeof sid_a1);
    gpufl_error err;
    CHECK_INT(gpufl_generate_report(gen, &err), GPUFL_OK);
    char *want = check_read_file(gen, NULL);
    CHECK(want != NULL);
    check_head(want, "alpha", sid_a1);
    char *got = text_of(logs, NULL, NULL);
    CHECK_STR(got, want);
    free(got);
    snprintf(sdir, sizeof sdir, "%s/%s", logs, sid_a1);
    got = text_of(sdir, NULL, NULL);
    CHECK_STR(got, want);
    free(got);
    got = text_of(logs, NULL, sid_a1);
    CHECK_STR(got, want);
    free(got);
    /* opts NULL and out_len NULL: the defaults. */
    char *out = NULL;
    CHECK_INT(gpufl_report_logs(logs, NULL, &out, NULL, &err), GPUFL_OK);
    CHECK_STR(out, want);
    gpufl_free(out);
    /* A log_prefix that names an app: the same session. */
    got = text_of(logs, "alpha", NULL);
    CHECK_STR(got, want);
    free(got);

    /* Two apps in one log directory, alpha twice: by mtime, a1 < a3 < b. */
    record("beta", logs, sid_b, sizeof sid_b);
    record("alpha", logs, sid_a3, sizeof sid_a3);
    char d[800];
    snprintf(d, sizeof d, "%s/%s", logs, sid_a1);
    set_mtime(d, 1700000100);
    snprintf(d, sizeof d, "%s/%s", logs, sid_a3);
    set_mtime(d, 1700000300);
    snprintf(d, sizeof d, "%s/%s", logs, sid_b);
    set_mtime(d, 1700000400);
    got = text_of(logs, NULL, NULL);
    check_head(got, "beta", sid_b);
    free(got);
    got = text_of(logs, "beta", NULL);
    check_head(got, "beta", sid_b);
    free(got);
    got = text_of(logs, "alpha", NULL);
    check_head(got, "alpha", sid_a3);
    free(got);
    /* The app's older session by id; another app's id is no match. */
    got = text_of(logs, "alpha", sid_a1);
    CHECK_STR(got, want);
    free(got);
    gpufl_status st;
    got = report(logs, "alpha", sid_b, 10, GPUFL_REPORT_TEXT, 0, &st, &err);
    CHECK_INT(st, GPUFL_ERR_IO);
    CHECK_CONTAINS(err.message, "log_prefix \"alpha\"");
    char m[1200];
    snprintf(m, sizeof m, "is of app \"beta\" (its job_start), not \"alpha\"");
    CHECK_CONTAINS(err.message, m);

    /* Nothing of that name: the message says where it looked. */
    got = report(logs, "gamma", NULL, 10, GPUFL_REPORT_TEXT, 0, &st, &err);
    CHECK_INT(st, GPUFL_ERR_IO);
    CHECK_INT(err.status, GPUFL_ERR_IO);
    snprintf(m, sizeof m,
             "cannot read the session: no session for log_prefix \"gamma\" in %s: no "
             "%s/gamma.<channel>.log files (the flat layout), no directory %s/gamma, and no "
             "session of app \"gamma\" read from %s: no session of app \"gamma\" in %s: the "
             "job_start of none of its 3 sessions names that app",
             logs, logs, logs, logs, logs);
    CHECK_STR(err.message, m);

    /* (b) <log_dir>/<log_prefix> is a directory: an app's own log_path. */
    char gdir[700], sid_g[64];
    snprintf(gdir, sizeof gdir, "%s/gamma", g_tmp);
    record("gamma", gdir, sid_g, sizeof sid_g);
    got = text_of(g_tmp, "gamma", NULL);
    check_head(got, "gamma", sid_g);
    char *direct = text_of(gdir, NULL, NULL);
    CHECK_STR(got, direct);
    free(direct);
    free(got);
    /* A directory named by the prefix is read whatever app it holds. */
    got = text_of(g_tmp, "logs", NULL);
    check_head(got, "beta", sid_b);
    free(got);

    /* (a) flat files <log_dir>/<prefix>.<channel>.log, chosen before a
     * directory of the same name. */
    char flat[700], from[1000], to[1000];
    snprintf(flat, sizeof flat, "%s/flat", g_tmp);
    CHECK_INT(mkdir(flat, 0755), 0);
    const char *chans[] = {"device", "scope", "system"};
    for (int c = 0; c < 3; c++) {
        snprintf(from, sizeof from, "%s/%s/%s.log", logs, sid_a1, chans[c]);
        snprintf(to, sizeof to, "%s/myapp.%s.log", flat, chans[c]);
        copy_file(from, to);
    }
    snprintf(d, sizeof d, "%s/myapp", flat);
    CHECK_INT(mkdir(d, 0755), 0);
    got = text_of(flat, "myapp", NULL);
    check_head(got, "alpha", sid_a1);
    /* One of its files names the flat prefix (the prefix itself would
     * name the directory). */
    snprintf(d, sizeof d, "%s/myapp.scope.log", flat);
    direct = text_of(d, NULL, NULL);
    CHECK_STR(got, direct);
    free(direct);
    free(got);
    /* With an app filter the flat layout keeps that app's job_start. */
    got = text_of(flat, "alpha", NULL);
    check_head(got, "alpha", sid_a1);
    free(got);
    free(want);
}

static void test_sections_json(void)
{
    char base[700];
    snprintf(base, sizeof base, "%s/rich", g_tmp);
    CHECK_INT(rs_write(base, false, NULL, 0), 0);
    char *full = text_of(base, NULL, NULL);
    CHECK(full != NULL);
    gpufl_status st;
    gpufl_error err;
    char *all = report(base, NULL, NULL, 10, GPUFL_REPORT_TEXT, GPUFL_SECTION_ALL, &st, &err);
    CHECK_STR(all, full);
    free(all);

    /* The whole is the concatenation of the sections, in print order
     * (perf metrics follow the stalls). */
    fl_buf cat = {0};
    char *part[12] = {NULL};
    static const int order[11] = {0, 1, 2, 11, 3, 4, 5, 6, 9, 7, 8};
    for (int k = 0; k < 11; k++) {
        int i = order[k];
        part[i] = report(base, NULL, NULL, 10, GPUFL_REPORT_TEXT, 1u << i, &st, &err);
        CHECK_INT(st, GPUFL_OK);
        fl_buf_puts(&cat, part[i] ? part[i] : "");
    }
    CHECK_STR(cat.p, full);
    fl_buf_free(&cat);
    /* Only scopes: the part after the summary. */
    size_t sum_len = strlen(part[0]);
    CHECK(full && strncmp(full, part[0], sum_len) == 0);
    CHECK(full && strncmp(full + sum_len, part[1], strlen(part[1])) == 0);
    CHECK(strncmp(part[1], "\nscopes  3 names", 16) == 0);
    CHECK(strncmp(part[2], "\nhotspots", 9) == 0);
    CHECK(strstr(part[2], "scopes") == NULL);
    CHECK_STR(part[8], ""); /* a clean read: nothing to say */
    CHECK_STR(part[9], ""); /* no perf metrics recorded */
    char *two = report(base, NULL, NULL, 10, GPUFL_REPORT_TEXT,
                       GPUFL_SECTION_SUMMARY | GPUFL_SECTION_HOTSPOTS, &st, &err);
    size_t l0 = strlen(part[0]), l2 = strlen(part[2]);
    CHECK(two && strlen(two) == l0 + l2 && memcmp(two, part[0], l0) == 0 &&
          memcmp(two + l0, part[2], l2) == 0);
    free(two);
    for (int i = 0; i < 12; i++)
        free(part[i]);

    /* JSON: the whole object whatever the mask; top_n honoured. */
    char *js = report(base, NULL, NULL, 2, GPUFL_REPORT_JSON, GPUFL_SECTION_SCOPES, &st, &err);
    CHECK_INT(st, GPUFL_OK);
    json_error_t je;
    json_t *j = js ? json_loads(js, 0, &je) : NULL;
    CHECK(j != NULL);
    CHECK_STR(json_string_value(json_object_get(j, "schema")), "gpu-profile.report");
    CHECK_INT(json_integer_value(json_object_get(j, "schema_version")), 2);
    CHECK_STR(json_string_value(json_object_get(json_object_get(j, "session"), "app")), "rich_app");
    json_t *hot = json_object_get(j, "hotspots");
    CHECK_INT(json_integer_value(json_object_get(hot, "top_n")), 2);
    CHECK_INT(json_integer_value(json_object_get(hot, "distinct_kernels")), 4);
    CHECK_INT(json_array_size(json_object_get(hot, "kernels")), 2);
    CHECK(json_object_get(j, "summary") != NULL);
    CHECK_INT(json_integer_value(json_object_get(json_object_get(j, "summary"), "kernel_launches")),
              8);
    json_decref(j);
    free(js);
    /* top_n < 1: 10, i.e. every one of the 4. */
    js = report(base, NULL, NULL, 0, GPUFL_REPORT_JSON, 0, &st, &err);
    j = js ? json_loads(js, 0, &je) : NULL;
    CHECK_INT(json_integer_value(json_object_get(json_object_get(j, "hotspots"), "top_n")), 4);
    json_decref(j);
    free(js);
    /* Text top_n too. */
    char *t1 = report(base, NULL, NULL, 1, GPUFL_REPORT_TEXT, GPUFL_SECTION_HOTSPOTS, &st, &err);
    CHECK_CONTAINS(t1, "hotspots  top 1 of 4 kernels by GPU time");
    free(t1);
    free(full);

    /* The crashed variant (a torn last line): partial, still GPUFL_OK. */
    char crashed[700];
    snprintf(crashed, sizeof crashed, "%s/crashed", g_tmp);
    CHECK_INT(rs_write(crashed, true, NULL, 0), 0);
    char *t = report(crashed, NULL, NULL, 10, GPUFL_REPORT_TEXT, GPUFL_SECTION_READ, &st, &err);
    CHECK_INT(st, GPUFL_OK);
    CHECK_STR(err.message, "");
    CHECK(t && strncmp(t, "\npartial read: 1 unreadable line (not JSON or cut)", 50) == 0);
    free(t);
    js = report(crashed, NULL, NULL, 10, GPUFL_REPORT_JSON, 0, &st, &err);
    j = js ? json_loads(js, 0, &je) : NULL;
    CHECK(json_is_true(json_object_get(json_object_get(j, "read"), "partial")));
    CHECK(json_is_true(json_object_get(json_object_get(j, "session"), "crashed")));
    json_decref(j);
    free(js);
}

static void test_errors(void)
{
    gpufl_error err;
    char *out = (char *)1;
    size_t len = 7;
    CHECK_INT(gpufl_report_logs(NULL, NULL, &out, &len, &err), GPUFL_ERR_INVALID_ARG);
    CHECK(out == NULL);
    CHECK_U64(len, 0);
    CHECK_INT(err.status, GPUFL_ERR_INVALID_ARG);
    CHECK_CONTAINS(err.message, "log_dir is NULL");
    CHECK_INT(gpufl_report_logs("", NULL, &out, NULL, NULL), GPUFL_ERR_INVALID_ARG);
    CHECK_INT(gpufl_report_logs(g_tmp, NULL, NULL, &len, &err), GPUFL_ERR_INVALID_ARG);
    CHECK_CONTAINS(err.message, "out is NULL");

    gpufl_report_options o;
    gpufl_report_options_init(&o);
    o.format = (gpufl_report_format)3;
    out = (char *)1;
    CHECK_INT(gpufl_report_logs(g_tmp, &o, &out, NULL, &err), GPUFL_ERR_INVALID_ARG);
    CHECK(out == NULL);
    CHECK_STR(err.message, "gpufl_report_logs: format 3: use GPUFL_REPORT_TEXT (0), "
                           "GPUFL_REPORT_JSON (1) or GPUFL_REPORT_HTML (2)");
    gpufl_report_options_init(&o);
    o.sections = 0x1000;
    CHECK_INT(gpufl_report_logs(g_tmp, &o, &out, NULL, &err), GPUFL_ERR_INVALID_ARG);
    CHECK_CONTAINS(err.message, "sections 0x1000 has bits outside GPUFL_SECTION_ALL (0xfff)");

    out = (char *)1;
    CHECK_INT(gpufl_report_logs("/nonexistent/gp/logs", NULL, &out, &len, &err), GPUFL_ERR_IO);
    CHECK(out == NULL);
    CHECK_STR(err.message, "cannot read the session: no session at /nonexistent/gp/logs: no such "
                           "directory, and no /nonexistent/gp/logs.device.log, "
                           "/nonexistent/gp/logs.scope.log or /nonexistent/gp/logs.system.log "
                           "(the flat layout)");
    CHECK_INT(gpufl_report_logs("/nonexistent/gp/logs", NULL, &out, NULL, NULL), GPUFL_ERR_IO);
    o.sections = 0;
    o.session_id = "no-such-session";
    char logs[600];
    snprintf(logs, sizeof logs, "%s/logs", g_tmp);
    CHECK_INT(gpufl_report_logs(logs, &o, &out, NULL, &err), GPUFL_ERR_IO);
    CHECK_CONTAINS(err.message, "no session no-such-session in the log directory");

    /* A bound from the environment that is not a whole number from 1 is
     * refused naming it, never taken for the default (issue 32, point 5). */
    static const char *const vars[] = {"GPU_PROFILE_MAX_DISTINCT", "GPU_PROFILE_MAX_MEMORY",
                                       "GPU_PROFILE_MAX_FILE_LINES"};
    for (size_t v = 0; v < sizeof vars / sizeof vars[0]; v++) {
        setenv(vars[v], "4M", 1);
        out = (char *)1;
        CHECK_INT(gpufl_report_logs(logs, NULL, &out, NULL, &err), GPUFL_ERR_INVALID_ARG);
        CHECK(out == NULL);
        char want[200];
        snprintf(want, sizeof want,
                 "cannot read the session: %s='4M': use a whole number from 1 (decimal digits "
                 "only), or unset it for the default",
                 vars[v]);
        CHECK_STR(err.message, want);
        unsetenv(vars[v]);
    }
}

static void test_live(void)
{
    char live[600], sid[64];
    snprintf(live, sizeof live, "%s/live", g_tmp);
    gpufl_init_options o;
    gpufl_init_options_init(&o);
    o.app_name = "live_app";
    o.log_path = live;
    o.backend = GPUFL_BACKEND_NONE;
    gpufl_error err;
    CHECK_INT(gpufl_init(&o, &err), GPUFL_OK);
    gpufl_scope s = gpufl_scope_begin("running");
    gpufl_scope_end(&s);
    gpufl_session_id(sid, sizeof sid);
    /* Flushed first, and said to be recording rather than crashed. */
    char *t = text_of(live, "live_app", NULL);
    check_head(t, "live_app", sid);
    CHECK_CONTAINS(t, "running");
    CHECK_CONTAINS(t, "the session is still recording");
    CHECK(t && !strstr(t, "did not shut down"));
    free(t);
    gpufl_shutdown();
}

/* Scope rows the recorder dropped (a ring of 16384 rows filled while its
 * writer was held) are said in the report's header, with the share of
 * the scope events, and a scope whose end was dropped is "1 end dropped",
 * not "still open at the end" (issue 32, point 21).  Rows: outer's begin,
 * 8191 hot pairs and the 8192nd hot begin fill the ring; the 8192nd hot
 * end, 1808 more pairs and outer's end are dropped: 3618 of 20002. */
static void test_dropped_scopes(void)
{
    char logs[600], sid[64];
    snprintf(logs, sizeof logs, "%s/drops", g_tmp);
    gpufl_init_options o;
    gpufl_init_options_init(&o);
    o.app_name = "drops";
    o.log_path = logs;
    o.backend = GPUFL_BACKEND_NONE;
    gpufl_error err;
    CHECK_INT(gpufl_init(&o, &err), GPUFL_OK);
    fl_session_hold_writer(true);
    gpufl_scope outer = gpufl_scope_begin("outer");
    for (int i = 0; i < 10000; i++) {
        gpufl_scope s = gpufl_scope_begin("hot");
        gpufl_scope_end(&s);
    }
    gpufl_scope_end(&outer);
    fl_session_hold_writer(false);
    gpufl_session_id(sid, sizeof sid);
    gpufl_shutdown();

    char *t = text_of(logs, "drops", NULL);
    check_head(t, "drops", sid);
    CHECK_CONTAINS(t, "\n  dropped           3618 of 20002 scope events (18.1%: the recorder's "
                      "ring was full)\n");
    /* The dropped line is in the header, before the kernels line. */
    const char *d = t ? strstr(t, "\n  dropped ") : NULL, *k = t ? strstr(t, "\n  kernels ") : NULL;
    CHECK(d && k && d < k);
    CHECK_CONTAINS(t, "  hot  (1 end dropped)\n");
    CHECK_CONTAINS(t, "  outer  (1 end dropped)\n");
    CHECK(t && !strstr(t, "still open"));
    free(t);

    gpufl_status st;
    char *js = report(logs, "drops", NULL, 10, GPUFL_REPORT_JSON, 0, &st, &err);
    json_error_t je;
    json_t *j = js ? json_loads(js, 0, &je) : NULL;
    CHECK(j != NULL);
    json_t *sum = json_object_get(j, "summary");
    CHECK_INT(json_integer_value(json_object_get(sum, "scope_events")), 16384);
    CHECK_INT(json_integer_value(json_object_get(sum, "scope_events_dropped")), 3618);
    CHECK_INT(json_integer_value(json_object_get(sum, "metric_rows_dropped")), 0);
    CHECK_INT(json_integer_value(json_object_get(sum, "lines_lost")), 0);
    json_t *items = json_object_get(json_object_get(j, "scopes"), "items");
    CHECK_INT(json_array_size(items), 2);
    for (size_t i = 0; i < json_array_size(items); i++) {
        json_t *it = json_array_get(items, i);
        CHECK_INT(json_integer_value(json_object_get(it, "open_at_end")), 0);
        CHECK_INT(json_integer_value(json_object_get(it, "ends_dropped")), 1);
    }
    json_decref(j);
    free(js);
}

/* Every occurrence of from in the file at path replaced by to. */
static void edit_file(const char *path, const char *from, const char *to)
{
    size_t len = 0;
    char *t = check_read_file(path, &len);
    CHECK(t != NULL);
    if (!t)
        return;
    FILE *f = fopen(path, "wb");
    CHECK(f != NULL);
    for (const char *p = t, *hit; f; p = hit + strlen(from)) {
        hit = strstr(p, from);
        fwrite(p, 1, hit ? (size_t)(hit - p) : strlen(p), f);
        if (!hit)
            break;
        fputs(to, f);
    }
    if (f)
        fclose(f);
    free(t);
}

/* The other losses a recorder says in its closing records - metric rows
 * of a full queue (capture_capabilities), lines its files could not take
 * (shutdown) - are in the header too; a session of ours without a loss
 * says 0, one that does not say (no shutdown) null. */
static void test_other_losses(void)
{
    char logs[600], sid[64], dir[800], path[900];
    snprintf(logs, sizeof logs, "%s/losses", g_tmp);
    record("losses", logs, sid, sizeof sid);
    char *t = text_of(logs, "losses", NULL);
    CHECK(t && !strstr(t, "dropped"));
    free(t);
    static const char *const ch[] = {"device", "scope", "system"};
    for (size_t i = 0; i < 3; i++) {
        snprintf(path, sizeof path, "%s/%s/%s.log", logs, sid, ch[i]);
        edit_file(path, "\"lines_lost\":0,\"rows_lost\":0", "\"lines_lost\":3,\"rows_lost\":40");
        edit_file(path,
                  "{\"feature\":\"device_metrics\",\"requested\":false,\"status\":\"not_"
                  "requested\",\"mode\":\"\",\"reason_code\":\"\",\"message\":\"system_sample_"
                  "rate_ms is 0\"}",
                  "{\"feature\":\"device_metrics\",\"requested\":true,\"status\":\"partial\","
                  "\"mode\":\"\",\"reason_code\":\"queue_full\",\"message\":\"12 metric rows "
                  "dropped: the writer fell behind (a slow disk?)\"}");
    }
    t = text_of(logs, "losses", NULL);
    CHECK_CONTAINS(t, "\n  dropped           12 metric rows (the recorder's queue was full); 3 "
                      "lines (40 rows) the files could not take\n");
    free(t);
    gpufl_status st;
    gpufl_error err;
    char *js = report(logs, "losses", NULL, 10, GPUFL_REPORT_JSON, 0, &st, &err);
    json_error_t je;
    json_t *j = js ? json_loads(js, 0, &je) : NULL;
    json_t *sum = json_object_get(j, "summary");
    CHECK_INT(json_integer_value(json_object_get(sum, "scope_events_dropped")), 0);
    CHECK(json_is_integer(json_object_get(sum, "scope_events_dropped")));
    CHECK_INT(json_integer_value(json_object_get(sum, "metric_rows_dropped")), 12);
    CHECK_INT(json_integer_value(json_object_get(sum, "lines_lost")), 3);
    CHECK_INT(json_integer_value(json_object_get(sum, "rows_lost")), 40);
    json_decref(j);
    free(js);
    /* Without the shutdown records the session does not say: null. */
    for (size_t i = 0; i < 3; i++) {
        snprintf(path, sizeof path, "%s/%s/%s.log", logs, sid, ch[i]);
        edit_file(path, "\"type\":\"shutdown\"", "\"type\":\"shutdown_not_ours\"");
    }
    snprintf(dir, sizeof dir, "%s/%s", logs, sid);
    js = report(dir, NULL, NULL, 10, GPUFL_REPORT_JSON, 0, &st, &err);
    j = js ? json_loads(js, 0, &je) : NULL;
    sum = json_object_get(j, "summary");
    CHECK(json_is_null(json_object_get(sum, "lines_lost")));
    CHECK(json_is_null(json_object_get(sum, "scope_events_dropped")));
    /* The capability still says its count. */
    CHECK_INT(json_integer_value(json_object_get(sum, "metric_rows_dropped")), 12);
    json_decref(j);
    free(js);
}

/* One process of run "job-7" as the recorder writes it: job_start with
 * its rank, gemm k0 ns and an NCCL kernel 500 ns, a shutdown. */
static void run_session(const char *base, const char *sid, int rank, int pid, long k0)
{
    char dir[1024], path[1100], text[4096];
    snprintf(dir, sizeof dir, "%s/%s", base, sid);
    mkdir(base, 0755);
    CHECK_INT(mkdir(dir, 0755), 0);
    snprintf(text, sizeof text,
             "{\"version\":1,\"type\":\"job_start\",\"pid\":%d,\"app\":\"train\",\"session_id\":"
             "\"%s\",\"log_path\":\"x\",\"ts_ns\":1760000000000000000,\"hostname\":\"h\","
             "\"devices\":[],\"session_kind\":\"trace\",\"profiling_engine\":\"nvidia.trace\","
             "\"run_id\":\"job-7\",\"rank\":%d,\"local_rank\":null,\"world_size\":2,"
             "\"rank_source\":\"RANK\"}\n"
             "{\"version\":1,\"type\":\"dictionary_update\",\"session_id\":\"%s\","
             "\"kernel_dict\":{\"1\":\"gemm\",\"2\":\"ncclKernel_AllReduce\"}}\n"
             "{\"version\":1,\"type\":\"kernel_event_batch\",\"session_id\":\"%s\",\"batch_id\":1,"
             "\"base_time_ns\":1760000000001000000,\"columns\":[\"dt_ns\",\"kernel_id\","
             "\"duration_ns\"],\"rows\":[[0,1,%ld],[10,2,500]]}\n"
             "{\"type\":\"shutdown\",\"pid\":%d,\"app\":\"train\",\"session_id\":\"%s\","
             "\"ts_ns\":1760000000009000000}\n",
             pid, sid, rank, sid, sid, k0, pid, sid);
    snprintf(path, sizeof path, "%s/device.log", dir);
    int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC, 0644);
    CHECK(fd >= 0);
    CHECK(write(fd, text, strlen(text)) == (ssize_t)strlen(text));
    close(fd);
}

/* A log directory holding a run of two processes: the run object filled
 * as `gpu-profile report DIR` fills it, the other sections the whole run
 * (the session block the session of most GPU time); session_id still
 * picks one process. */
static void test_run(void)
{
    char base[600];
    snprintf(base, sizeof base, "%s/run", g_tmp);
    run_session(base, "r0", 0, 4100, 1000);
    run_session(base, "r1", 1, 4101, 3000);
    gpufl_status st;
    gpufl_error err;
    char *js = report(base, NULL, NULL, 10, GPUFL_REPORT_JSON, 0, &st, &err);
    CHECK_INT(st, GPUFL_OK);
    json_error_t je;
    json_t *j = js ? json_loads(js, 0, &je) : NULL;
    CHECK(j != NULL);
    json_t *run = json_object_get(j, "run");
    CHECK(json_is_object(run));
    CHECK_STR(json_string_value(json_object_get(run, "run_id")), "job-7");
    json_t *procs = json_object_get(run, "processes");
    CHECK_INT(json_array_size(procs), 2);
    CHECK_INT(json_integer_value(json_object_get(json_array_get(procs, 0), "rank")), 0);
    CHECK_INT(json_integer_value(json_object_get(json_array_get(procs, 0), "pid")), 4100);
    CHECK_INT(json_integer_value(json_object_get(json_array_get(procs, 0), "gpu_time_ns")), 1500);
    CHECK_INT(json_integer_value(json_object_get(json_array_get(procs, 1), "pid")), 4101);
    CHECK_INT(json_integer_value(json_object_get(json_array_get(procs, 1), "gpu_time_ns")), 3500);
    CHECK_STR(json_string_value(json_object_get(run, "report_session_id")), "r1");
    CHECK_STR(json_string_value(json_object_get(json_object_get(j, "session"), "session_id")),
              "r1");
    /* The other sections sum both processes, kernels merged by name. */
    json_t *sum = json_object_get(j, "summary");
    CHECK_INT(json_integer_value(json_object_get(sum, "kernel_launches")), 4);
    CHECK_INT(json_integer_value(json_object_get(sum, "kernel_distinct")), 2);
    CHECK_INT(json_integer_value(json_object_get(sum, "kernel_time_ns")), 5000);
    json_t *top = json_array_get(json_object_get(json_object_get(j, "hotspots"), "kernels"), 0);
    CHECK_STR(json_string_value(json_object_get(top, "name")), "gemm");
    CHECK_INT(json_integer_value(json_object_get(top, "count")), 2);
    CHECK_INT(json_integer_value(json_object_get(top, "total_ns")), 4000);
    CHECK_INT(json_array_size(json_object_get(run, "report_session_ids")), 2);
    json_decref(j);
    gpufl_free(js);
    /* session_id: that process's report, the run still shown. */
    js = report(base, NULL, "r0", 10, GPUFL_REPORT_JSON, 0, &st, &err);
    CHECK_INT(st, GPUFL_OK);
    j = js ? json_loads(js, 0, &je) : NULL;
    CHECK(j != NULL);
    CHECK_STR(json_string_value(json_object_get(json_object_get(j, "session"), "session_id")),
              "r0");
    CHECK_STR(json_string_value(json_object_get(json_object_get(j, "run"), "report_session_id")),
              "r0");
    CHECK_INT(json_integer_value(json_object_get(json_object_get(j, "summary"), "kernel_time_ns")),
              1500);
    json_decref(j);
    gpufl_free(js);
    /* A session directory of the run: that session alone, no run. */
    char one[700];
    snprintf(one, sizeof one, "%s/r0", base);
    js = report(one, NULL, NULL, 10, GPUFL_REPORT_JSON, 0, &st, &err);
    CHECK_INT(st, GPUFL_OK);
    j = js ? json_loads(js, 0, &je) : NULL;
    CHECK(j != NULL);
    CHECK(json_is_null(json_object_get(j, "run")));
    json_decref(j);
    gpufl_free(js);
}

int main(void)
{
    (void)rs_write_nodev;
    if (rs_tmpdir(g_tmp, sizeof g_tmp, "gpufl_report_logs") != 0) {
        perror("mkdtemp");
        return 2;
    }
    test_options_init();
    test_recorded();
    test_sections_json();
    test_errors();
    test_live();
    test_dropped_scopes();
    test_other_losses();
    test_run();
    fl_rmtree(g_tmp);
    return check_done("test_gpufl_report_logs");
}
