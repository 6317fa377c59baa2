/*
 * test_report_html.c - the HTML report (report/html.h) without a browser
 * (tests/report/html_browser_test.py opens it in one): one page whose
 * gp-report blob is the JSON report of the same session, no byte of the
 * session able to end a <script> element, and a timeline bounded however
 * many events and tracks the session has.
 */
#include "check.h"
#include "fl_log.h"
#include "report_session.h"
#include "gpufl.h"
#include "report/html.h"

#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static char g_tmp[512];

static char *report(const char *dir, gpufl_report_format fmt)
{
    gpufl_report_options o;
    gpufl_report_options_init(&o);
    o.format = fmt;
    char *out = NULL;
    size_t len = 0;
    gpufl_error err;
    gpufl_status st = gpufl_report_logs(dir, &o, &out, &len, &err);
    CHECK_INT(st, GPUFL_OK);
    if (st != GPUFL_OK)
        fprintf(stderr, "report %s: %s\n", dir, err.message);
    return out;
}

static size_t count(const char *hay, const char *needle)
{
    size_t n = 0;
    for (const char *p = hay; (p = strstr(p, needle)); p++)
        n++;
    return n;
}

/* The JSON of the <script> element id in page; NULL when not there. */
static json_t *blob(const char *page, const char *id)
{
    char open[64];
    snprintf(open, sizeof open, "id=\"%s\">", id);
    const char *a = strstr(page, open);
    const char *b = a ? strstr(a, "</script>") : NULL;
    if (!b)
        return NULL;
    a += strlen(open);
    json_error_t je;
    return json_loadb(a, (size_t)(b - a), JSON_DECODE_ANY, &je);
}

static void test_rich_session(void)
{
    char sid[128];
    CHECK_INT(rs_write(g_tmp, false, sid, sizeof sid), 0);
    char dir[1024];
    snprintf(dir, sizeof dir, "%s/%s", g_tmp, RS_SID);
    char *page = report(dir, GPUFL_REPORT_HTML);
    char *js = report(dir, GPUFL_REPORT_JSON);
    if (!page || !js)
        return;
    CHECK(strncmp(page, "<!DOCTYPE html>", 15) == 0);
    CHECK_U64(count(page, "</script"), 4); /* the page's own four */
    /* Nothing fetched: no src, href or url() anywhere (the script's one
     * URI is the SVG namespace's name, never fetched). */
    CHECK(!strstr(page, " src=") && !strstr(page, " href=") && !strstr(page, "url("));
    json_error_t je;
    json_t *want = json_loads(js, 0, &je);
    json_t *got = blob(page, "gp-report");
    CHECK(want && got && json_equal(want, got));
    /* The timeline: the rich session's 8 kernels and 6 copies, its scopes
     * and NVTX range, every one counted. */
    json_t *tl = blob(page, "gp-timeline");
    CHECK(tl != NULL);
    json_int_t events = json_integer_value(json_object_get(tl, "events"));
    CHECK(events >= 14);
    json_int_t cells = 0;
    size_t i;
    json_t *tr;
    json_array_foreach(json_object_get(tl, "tracks"), i, tr)
    {
        size_t k;
        json_t *c;
        json_array_foreach(json_object_get(tr, "cells"), k, c) cells +=
            json_integer_value(json_array_get(c, 5));
    }
    CHECK_U64((uint64_t)cells, (uint64_t)events);
    /* Both devices' samples as series. */
    CHECK_U64(json_array_size(json_object_get(json_object_get(tl, "series"), "devices")), 2);
    json_t *text = blob(page, "gp-text");
    CHECK(json_is_string(text));
    json_decref(text);
    json_decref(tl);
    json_decref(want);
    json_decref(got);
    free(page);
    free(js);
}

#define HOSTILE "</script><script>alert(1)</script><!-- &amp; \xe2\x80\xa8 <b>"
#define SID "5e55a0e1-0000-4000-8000-00000000c0de"

/* A session of kernels only on n_streams streams, rows x batches launches,
 * kernel 1 named HOSTILE. */
static void write_kernels(const char *dir, int n_streams, int batches, int rows)
{
    char path[1024];
    mkdir(dir, 0755);
    snprintf(path, sizeof path, "%s/device.log", dir);
    FILE *f = fopen(path, "w");
    CHECK(f != NULL);
    if (!f)
        return;
    const char *job =
        "{\"version\":1,\"type\":\"job_start\",\"pid\":7,\"app\":\"h\",\"session_id\":"
        "\"" SID "\",\"ts_ns\":1000000000000,\"hostname\":\"h\"}\n";
    fputs(job, f);
    json_t *d = json_pack("{s:i,s:s,s:s,s:{s:s,s:s}}", "version", 1, "type", "dictionary_update",
                          "session_id", SID, "kernel_dict", "1", HOSTILE, "2", "plain");
    char *ds = json_dumps(d, JSON_COMPACT);
    fprintf(f, "%s\n", ds);
    free(ds);
    json_decref(d);
    uint64_t corr = 0;
    for (int b = 0; b < batches; b++) {
        fprintf(f,
                "{\"version\":1,\"type\":\"kernel_event_batch\",\"session_id\":\"" SID "\","
                "\"batch_id\":%d,\"base_time_ns\":%llu,\"columns\":[\"dt_ns\",\"kernel_id\","
                "\"stream_id\",\"duration_ns\",\"corr_id\",\"has_details\"],\"rows\":[",
                b + 1, 1000000000000ull + 1000ull * (uint64_t)b * (uint64_t)rows);
        for (int r = 0; r < rows; r++) {
            corr++;
            fprintf(f, "%s[%d,%d,%d,%d,%llu,0]", r ? "," : "", r * 1000, (int)(corr % 2) + 1,
                    (int)(corr % (uint64_t)n_streams), 500 + (int)(corr % 7) * 100,
                    (unsigned long long)corr);
        }
        fputs("]}\n", f);
    }
    fclose(f);
    snprintf(path, sizeof path, "%s/scope.log", dir);
    f = fopen(path, "w");
    if (f) {
        fputs(job, f);
        fclose(f);
    }
    snprintf(path, sizeof path, "%s/system.log", dir);
    f = fopen(path, "w");
    if (f) {
        fputs(job, f);
        fclose(f);
    }
}

/* 100 streams (past FL_HTML_TRACKS) and 200000 launches: the timeline
 * keeps at most FL_HTML_TRACKS x FL_HTML_BUCKETS cells, counts every
 * launch (shown or not), and the hostile name is never markup. */
static void test_bounded_and_escaped(void)
{
    char dir[1024];
    snprintf(dir, sizeof dir, "%s/%s", g_tmp, SID);
    write_kernels(dir, 100, 20, 10000);
    char *page = report(dir, GPUFL_REPORT_HTML);
    if (!page)
        return;
    CHECK_U64(count(page, "</script"), 4);
    CHECK(!strstr(page, "<script>alert"));
    CHECK(!strstr(page, "<!--"));
    CHECK(!strstr(page, "<b>"));
    CHECK(!strstr(page, "\xe2\x80\xa8"));
    CHECK_CONTAINS(page, "\\u003c/script\\u003e\\u003cscript\\u003ealert(1)");
    CHECK(strlen(page) < 8u * 1024 * 1024);
    json_t *tl = blob(page, "gp-timeline");
    CHECK(tl != NULL);
    json_t *tracks = json_object_get(tl, "tracks");
    CHECK_U64(json_array_size(tracks), FL_HTML_TRACKS);
    CHECK_U64(json_integer_value(json_object_get(tl, "events")), 200000);
    json_int_t cells = 0, shown = 0;
    size_t i;
    json_t *tr;
    json_array_foreach(tracks, i, tr)
    {
        size_t k;
        json_t *c;
        CHECK(json_array_size(json_object_get(tr, "cells")) <= FL_HTML_BUCKETS);
        json_array_foreach(json_object_get(tr, "cells"), k, c)
        {
            cells++;
            shown += json_integer_value(json_array_get(c, 5));
        }
    }
    CHECK(cells > 0);
    /* 64 of 100 streams shown: the other 36 streams' launches counted. */
    CHECK_U64((uint64_t)(shown + json_integer_value(json_object_get(tl, "events_not_shown"))),
              200000);
    CHECK_U64(json_integer_value(json_object_get(tl, "events_not_shown")), 200000 / 100 * 36);
    /* The report blob decodes to the hostile name itself. */
    json_t *rep = blob(page, "gp-report");
    json_t *k0 = json_array_get(json_object_get(json_object_get(rep, "hotspots"), "kernels"), 0);
    json_t *k1 = json_array_get(json_object_get(json_object_get(rep, "hotspots"), "kernels"), 1);
    const char *n0 = json_string_value(json_object_get(k0, "name"));
    const char *n1 = json_string_value(json_object_get(k1, "name"));
    CHECK((n0 && strcmp(n0, HOSTILE) == 0) || (n1 && strcmp(n1, HOSTILE) == 0));
    json_decref(rep);
    json_decref(tl);
    free(page);
}

/* A name past 200 bytes is cut on a character boundary in the timeline. */
static void test_put_str(void)
{
    char name[400];
    memset(name, 'a', 199);
    memcpy(name + 199, "\xc3\xa9\xc3\xa9", 4); /* "éé": byte 200 inside the first */
    name[203] = '\0';
    fl_buf b = {0};
    fl_html_put_str(&b, name, 200);
    CHECK(b.p != NULL);
    if (b.p) {
        CHECK_U64(b.len, 1 + 199 + 3 + 1); /* "a..a…" */
        CHECK(strstr(b.p, "\xe2\x80\xa6\"") != NULL);
    }
    fl_buf_free(&b);
}

int main(void)
{
    (void)rs_write_nodev;
    if (rs_tmpdir(g_tmp, sizeof g_tmp, "report_html") != 0) {
        perror("mkdtemp");
        return 2;
    }
    test_rich_session();
    test_bounded_and_escaped();
    test_put_str();
    fl_rmtree(g_tmp);
    return check_done("test_report_html");
}
