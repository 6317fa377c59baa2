/*
 * test_upload.c - gpufl_upload_logs against tests/upload/server.py (a
 * GPUFlight backend on 127.0.0.1 that records what it received): every
 * line of every channel arrives exactly once with the protocol's headers;
 * a failed upload (5xx, a dropped connection) resumes from the cursor
 * without a duplicate; the cursor is per backend (another backend gets
 * every file); 401, 404, 413 give their messages and statuses;
 * the kill switch makes no connection; unfinished sessions wait for force;
 * libcurl absent says how to install it; the key is in no file or message;
 * a session of ours rotated into many windows sends each window, every line
 * once.
 */
#include "check.h"
#include "gpufl.h"

#include <dirent.h>
#include <errno.h>
#include <jansson.h>
#include <signal.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>
#include <zlib.h>

#define KEY "gpfl_testkey_9f3a"
#define SID "5e1c0a2b-0000-4000-8000-00000000abcd"

static char root[256];
static char srvdir[300]; /* the server's files (its log holds the key it was sent) */

typedef struct srv {
    pid_t pid;
    int port;
    char log[512];
    char url[64];
} srv;

static void srv_stop(srv *s)
{
    if (s->pid > 0) {
        kill(s->pid, SIGTERM);
        waitpid(s->pid, NULL, 0);
        s->pid = 0;
    }
}

/* Starts server.py with up to 4 extra arguments (NULL-terminated). */
static int srv_start(srv *s, const char *name, const char *a1, const char *a2, const char *a3)
{
    static int seq;
    memset(s, 0, sizeof *s);
    char pf[512], script[512];
    snprintf(pf, sizeof pf, "%s/port.%d", srvdir, ++seq);
    snprintf(s->log, sizeof s->log, "%s/%s.%d.log", srvdir, name, seq);
    const char *src = getenv("GP_TEST_SOURCE_DIR");
    snprintf(script, sizeof script, "%s/upload/server.py", src ? src : "tests");
    s->pid = fork();
    if (s->pid == 0) {
        execlp("python3", "python3", script, pf, s->log, a1, a2, a3, (char *)NULL);
        _exit(127);
    }
    for (int i = 0; i < 200; i++) {
        FILE *f = fopen(pf, "r");
        if (f) {
            int ok = fscanf(f, "%d", &s->port);
            fclose(f);
            if (ok == 1) {
                snprintf(s->url, sizeof s->url, "http://127.0.0.1:%d", s->port);
                return 0;
            }
        }
        struct timespec ts = {0, 50000000};
        nanosleep(&ts, NULL);
    }
    srv_stop(s);
    return -1;
}

/* The requests the server recorded (an array; empty when none). */
static json_t *srv_requests(const srv *s)
{
    json_t *a = json_array();
    FILE *f = fopen(s->log, "r");
    if (!f)
        return a;
    char line[1 << 16];
    while (fgets(line, sizeof line, f)) {
        json_t *j = json_loads(line, 0, NULL);
        if (j)
            json_array_append_new(a, j);
    }
    fclose(f);
    return a;
}

static const char *hdr(json_t *req, const char *name)
{
    return json_string_value(json_object_get(json_object_get(req, "headers"), name));
}

static void write_file(const char *path, const char *text)
{
    FILE *f = fopen(path, "w");
    fputs(text, f);
    fclose(f);
}

/* A session of 3 channels, each job_start + n lines (+ shutdown). */
static void make_session(const char *dir, int n, bool finished)
{
    mkdir(dir, 0755);
    const char *chans[] = {"device", "scope", "system"};
    for (int c = 0; c < 3; c++) {
        char path[512], buf[1 << 14];
        size_t len = 0;
        snprintf(path, sizeof path, "%s/%s.log", dir, chans[c]);
        len += (size_t)snprintf(buf + len, sizeof buf - len,
                                "{\"version\":1,\"type\":\"job_start\",\"session_id\":\"" SID
                                "\",\"hostname\":\"host0\",\"channel\":\"%s\"}\n",
                                chans[c]);
        for (int i = 0; i < n; i++)
            len += (size_t)snprintf(buf + len, sizeof buf - len,
                                    "{\"type\":\"test_event\",\"session_id\":\"" SID
                                    "\",\"channel\":\"%s\",\"i\":%d}\n",
                                    chans[c], i);
        if (finished)
            snprintf(buf + len, sizeof buf - len,
                     "{\"type\":\"shutdown\",\"session_id\":\"" SID "\",\"channel\":\"%s\"}\n",
                     chans[c]);
        write_file(path, buf);
    }
}

static size_t count_lines(const char *dir)
{
    size_t n = 0;
    const char *chans[] = {"device", "scope", "system"};
    for (int c = 0; c < 3; c++) {
        char path[512];
        snprintf(path, sizeof path, "%s/%s.log", dir, chans[c]);
        FILE *f = fopen(path, "r");
        int ch;
        while (f && (ch = fgetc(f)) != EOF)
            n += ch == '\n';
        if (f)
            fclose(f);
    }
    return n;
}

static bool file_has(const char *path, const char *needle)
{
    FILE *f = fopen(path, "r");
    if (!f)
        return false;
    static char buf[1 << 20];
    size_t n = fread(buf, 1, sizeof buf - 1, f);
    fclose(f);
    buf[n] = '\0';
    return strstr(buf, needle) != NULL;
}

static void opts(gpufl_upload_options *o, const char *path, const srv *s)
{
    gpufl_upload_options_init(o);
    o->log_path = path;
    o->backend_url = s->url;
    o->api_key = KEY;
    o->retry_delay_ms = 0;
    o->timeout_s = 10;
}

/* One case's server (started with srv_start's name and arguments), a
 * session of n records a channel in root/<dir_name>, and the options
 * pointing at both. */
static void one_case(srv *s, const char *name, const char *a1, const char *a2, const char *dir_name,
                     int n, bool finished, char *dir, size_t len, gpufl_upload_options *o)
{
    CHECK_INT(srv_start(s, name, a1, a2, NULL), 0);
    snprintf(dir, len, "%s/%s", root, dir_name);
    make_session(dir, n, finished);
    opts(o, dir, s);
}

/* Each line of the 200-answered stream requests, counted: every line of
 * the session exactly once (total lines == distinct lines == expected). */
static void check_exactly_once(json_t *reqs, size_t expected)
{
    json_t *seen = json_object();
    size_t total = 0, i;
    json_t *r;
    json_array_foreach(reqs, i, r)
    {
        if (json_integer_value(json_object_get(r, "status")) != 200)
            continue;
        size_t j;
        json_t *l;
        json_array_foreach(json_object_get(r, "lines"), j, l)
        {
            json_object_set_new(seen, json_string_value(l), json_true());
            total++;
        }
    }
    CHECK_U64(total, expected);
    CHECK_U64(json_object_size(seen), expected);
    json_decref(seen);
}

static void test_full_upload(void)
{
    srv s;
    CHECK_INT(srv_start(&s, "full", NULL, NULL, NULL), 0);
    char logs[512], dir[600];
    snprintf(logs, sizeof logs, "%s/full", root);
    mkdir(logs, 0755);
    snprintf(dir, sizeof dir, "%s/" SID, logs);
    make_session(dir, 5, true);
    gpufl_upload_options o;
    opts(&o, logs, &s);
    gpufl_upload_result r;
    gpufl_error err;
    CHECK_INT(gpufl_upload_logs(&o, &r, &err), GPUFL_OK);
    CHECK(r.success);
    CHECK_U64(r.events_uploaded, 21);
    CHECK_U64(r.files_processed, 3);
    CHECK_U64(r.files_skipped_by_cursor, 0);
    CHECK_U64(r.sessions_uploaded, 1);
    CHECK_INT(r.http_status, -1);
    struct stat st;
    uint64_t bytes = 0;
    const char *chans[] = {"device", "scope", "system"};
    for (int c = 0; c < 3; c++) {
        char p[700];
        snprintf(p, sizeof p, "%s/%s.log", dir, chans[c]);
        stat(p, &st);
        bytes += (uint64_t)st.st_size;
    }
    CHECK_U64(r.bytes_uploaded, bytes);
    CHECK_CONTAINS(r.message, "uploaded 21 events");
    json_t *reqs = srv_requests(&s);
    CHECK_U64(json_array_size(reqs), 4);
    for (size_t i = 0; i < json_array_size(reqs); i++) {
        json_t *q = json_array_get(reqs, i);
        bool last = i == 3;
        CHECK_STR(json_string_value(json_object_get(q, "path")),
                  last ? "/api/v1/events/session-complete" : "/api/v1/events/stream");
        CHECK_STR(hdr(q, "authorization"), "Bearer " KEY);
        CHECK_STR(hdr(q, "x-gpuflight-session-id"), SID);
        CHECK_STR(hdr(q, "x-gpuflight-hostname"), "host0");
        CHECK_STR(hdr(q, "x-gpuflight-wire-version"), "1");
        CHECK_STR(hdr(q, "x-gpuflight-client-version"), GPUFL_VERSION_STRING);
        if (!last) {
            CHECK_STR(hdr(q, "content-encoding"), "gzip");
            CHECK_STR(hdr(q, "content-type"), "application/x-ndjson");
            CHECK_U64(json_array_size(json_object_get(q, "lines")), 7);
        } else {
            CHECK_STR(hdr(q, "content-length"), "0");
        }
    }
    /* Channel order: device, scope, system. */
    CHECK_CONTAINS(
        json_string_value(json_array_get(json_object_get(json_array_get(reqs, 0), "lines"), 0)),
        "\"device\"");
    check_exactly_once(reqs, count_lines(dir));
    json_decref(reqs);
    /* The cursor: every file, complete, no key. */
    char cur[700];
    snprintf(cur, sizeof cur, "%s/.gpufl-upload-cursor.json", dir);
    CHECK(file_has(cur, "\"session_complete\": true") ||
          file_has(cur, "\"session_complete\":true"));
    CHECK(!file_has(cur, KEY));
    /* Again: nothing sent, everything skipped. */
    CHECK_INT(gpufl_upload_logs(&o, &r, &err), GPUFL_OK);
    CHECK(r.success);
    CHECK_U64(r.events_uploaded, 0);
    CHECK_U64(r.files_skipped_by_cursor, 3);
    CHECK_U64(r.sessions_skipped, 1);
    reqs = srv_requests(&s);
    CHECK_U64(json_array_size(reqs), 4);
    json_decref(reqs);
    /* The session directory given itself, and an api_path of one's own. */
    remove(cur);
    o.log_path = dir;
    o.api_path = "custom/v9/";
    CHECK_INT(gpufl_upload_logs(&o, &r, &err), GPUFL_OK);
    reqs = srv_requests(&s);
    CHECK_U64(json_array_size(reqs), 8);
    CHECK_STR(json_string_value(json_object_get(json_array_get(reqs, 4), "path")),
              "/custom/v9/events/stream");
    json_decref(reqs);
    srv_stop(&s);
}

/* 200 for the first request, then fail (5xx or dropped); a re-run
 * against a sound backend sends the rest: every line exactly once. */
static void test_resume(const char *name, const char *fault, int want_http)
{
    srv bad;
    CHECK_INT(srv_start(&bad, name, fault, "1", NULL), 0);
    char dir[512];
    snprintf(dir, sizeof dir, "%s/%s-" SID, root, name);
    make_session(dir, 4, true);
    gpufl_upload_options o;
    opts(&o, dir, &bad);
    o.max_retries = 1;
    gpufl_upload_result r;
    gpufl_error err;
    CHECK_INT(gpufl_upload_logs(&o, &r, &err), GPUFL_ERR_UPLOAD);
    CHECK(!r.success);
    CHECK_INT(r.http_status, want_http);
    CHECK_U64(r.files_processed, 2);
    CHECK_U64(r.events_uploaded, 6);
    CHECK_CONTAINS(err.message, "scope.log");
    CHECK_CONTAINS(err.message, bad.url);
    CHECK_CONTAINS(err.message, "2 time(s)"); /* one retry */
    CHECK_CONTAINS(err.message, "resumes");
    if (want_http == 503)
        CHECK_CONTAINS(err.message, "answered HTTP 503");
    CHECK(strstr(err.message, KEY) == NULL);
    CHECK_STR(r.message, err.message);
    json_t *first = srv_requests(&bad);
    CHECK_U64(json_array_size(first), want_http == 503 ? 3 : 1);
    srv_stop(&bad);

    /* The same backend again (its port): the cursor is that backend's. */
    srv good;
    char port[16];
    snprintf(port, sizeof port, "%d", bad.port);
    CHECK_INT(srv_start(&good, name, "--port", port, NULL), 0);
    opts(&o, dir, &good);
    CHECK_INT(gpufl_upload_logs(&o, &r, &err), GPUFL_OK);
    CHECK_U64(r.files_skipped_by_cursor, 1);
    CHECK_U64(r.events_uploaded, 12);
    json_t *second = srv_requests(&good);
    CHECK_U64(json_array_size(second), 3);
    json_array_extend(first, second);
    check_exactly_once(first, count_lines(dir));
    json_decref(first);
    json_decref(second);
    srv_stop(&good);
}

/* The cursor belongs to a (backend, session): after everything went to
 * A, B still gets every file and the session-complete; A again gets
 * nothing; a failure at B leaves A's entry as it was. */
static void test_two_backends(void)
{
    srv a, b;
    char dir[512];
    gpufl_upload_options o;
    one_case(&a, "backend-a", NULL, NULL, "two-" SID, 3, true, dir, sizeof dir, &o);
    gpufl_upload_result r;
    gpufl_error err;
    CHECK_INT(gpufl_upload_logs(&o, &r, &err), GPUFL_OK);
    CHECK_U64(r.events_uploaded, 15);
    CHECK_INT(srv_start(&b, "backend-b", NULL, NULL, NULL), 0);
    opts(&o, dir, &b);
    CHECK_INT(gpufl_upload_logs(&o, &r, &err), GPUFL_OK);
    CHECK_U64(r.events_uploaded, 15);
    CHECK_U64(r.files_skipped_by_cursor, 0);
    CHECK_U64(r.sessions_uploaded, 1);
    CHECK_CONTAINS(r.message, "0 of 3 files already sent before");
    json_t *reqs = srv_requests(&b);
    CHECK_U64(json_array_size(reqs), 4);
    check_exactly_once(reqs, count_lines(dir));
    CHECK_STR(json_string_value(json_object_get(json_array_get(reqs, 3), "path")),
              "/api/v1/events/session-complete");
    json_decref(reqs);
    /* A again, and B again: nothing left for either. */
    opts(&o, dir, &a);
    CHECK_INT(gpufl_upload_logs(&o, &r, &err), GPUFL_OK);
    CHECK_U64(r.events_uploaded, 0);
    CHECK_U64(r.files_skipped_by_cursor, 3);
    opts(&o, dir, &b);
    CHECK_INT(gpufl_upload_logs(&o, &r, &err), GPUFL_OK);
    CHECK_U64(r.files_skipped_by_cursor, 3);
    reqs = srv_requests(&a);
    CHECK_U64(json_array_size(reqs), 4);
    json_decref(reqs);
    reqs = srv_requests(&b);
    CHECK_U64(json_array_size(reqs), 4);
    json_decref(reqs);
    /* The same backend through another API path is another backend. */
    o.api_path = "/api/v2";
    CHECK_INT(gpufl_upload_logs(&o, &r, &err), GPUFL_OK);
    CHECK_U64(r.files_skipped_by_cursor, 0);
    CHECK_U64(r.events_uploaded, 15);
    /* The cursor names each backend (without user:password@), never the key. */
    char cur[600];
    snprintf(cur, sizeof cur, "%s/.gpufl-upload-cursor.json", dir);
    CHECK(file_has(cur, a.url));
    CHECK(file_has(cur, b.url));
    CHECK(file_has(cur, "/api/v2"));
    CHECK(!file_has(cur, KEY));
    srv_stop(&a);
    srv_stop(&b);
    /* A cursor of schema 1 (no backend): every file again, saying why. */
    write_file(cur, "{\"schema_version\":1,\"uploaded_files\":[{\"file\":\"device.log\","
                    "\"bytes\":1}],\"session_complete\":true}");
    CHECK_INT(srv_start(&a, "backend-a1", NULL, NULL, NULL), 0);
    opts(&o, dir, &a);
    CHECK_INT(gpufl_upload_logs(&o, &r, &err), GPUFL_OK);
    CHECK_U64(r.files_skipped_by_cursor, 0);
    CHECK_U64(r.events_uploaded, 15);
    CHECK_CONTAINS(r.message, "names no backend (an older version wrote it): every file is "
                              "sent again");
    srv_stop(&a);
}

static void test_status(const char *status, int code, const char *words)
{
    srv s;
    char dir[512], name[64];
    snprintf(name, sizeof name, "status-%s-" SID, status);
    gpufl_upload_options o;
    one_case(&s, "status", "--status", status, name, 2, true, dir, sizeof dir, &o);
    gpufl_upload_result r;
    gpufl_error err;
    CHECK_INT(gpufl_upload_logs(&o, &r, &err), GPUFL_ERR_UPLOAD);
    CHECK_INT(r.http_status, code);
    CHECK_CONTAINS(err.message, words);
    CHECK_CONTAINS(err.message, "/api/v1/events/stream");
    CHECK(strstr(err.message, KEY) == NULL);
    json_t *reqs = srv_requests(&s);
    CHECK_U64(json_array_size(reqs), 1); /* a 4xx is not retried */
    json_decref(reqs);
    char cur[600];
    snprintf(cur, sizeof cur, "%s/.gpufl-upload-cursor.json", dir);
    CHECK(!file_has(cur, "device.log"));
    srv_stop(&s);
}

static void test_kill_switch(void)
{
    srv s;
    char dir[512];
    gpufl_upload_options o;
    one_case(&s, "kill", NULL, NULL, "kill-" SID, 2, true, dir, sizeof dir, &o);
    gpufl_upload_result r;
    gpufl_error err;
    setenv("GPUFL_DISABLED", "yes", 1);
    CHECK_INT(gpufl_upload_logs(&o, &r, &err), GPUFL_DISABLED);
    CHECK(r.success);
    CHECK_U64(r.events_uploaded, 0);
    CHECK_CONTAINS(r.message, "GPUFL_DISABLED=yes");
    setenv("GPUFL_DISABLED", "maybe", 1);
    CHECK_INT(gpufl_upload_logs(&o, &r, &err), GPUFL_ERR_ENV);
    unsetenv("GPUFL_DISABLED");
    o.enabled = false;
    o.backend_url = "not a url"; /* not even looked at */
    CHECK_INT(gpufl_upload_logs(&o, &r, &err), GPUFL_DISABLED);
    CHECK(r.success);
    CHECK(access(s.log, F_OK) != 0); /* no request at all */
    char cur[600];
    snprintf(cur, sizeof cur, "%s/.gpufl-upload-cursor.json", dir);
    CHECK(access(cur, F_OK) != 0);
    srv_stop(&s);
}

static void test_unfinished(void)
{
    srv s;
    char dir[512];
    gpufl_upload_options o;
    one_case(&s, "live", NULL, NULL, "live-" SID, 3, false, dir, sizeof dir, &o);
    gpufl_upload_result r;
    gpufl_error err;
    CHECK_INT(gpufl_upload_logs(&o, &r, &err), GPUFL_ERR_STATE);
    CHECK_CONTAINS(err.message, "not finished");
    CHECK_CONTAINS(err.message, "force");
    CHECK_U64(r.sessions_skipped, 1);
    CHECK(access(s.log, F_OK) != 0);
    o.force = true;
    CHECK_INT(gpufl_upload_logs(&o, &r, &err), GPUFL_OK);
    CHECK_U64(r.events_uploaded, 12);
    json_t *reqs = srv_requests(&s);
    CHECK_U64(json_array_size(reqs), 4);
    json_decref(reqs);
    srv_stop(&s);
}

static void test_arguments(void)
{
    gpufl_upload_options o;
    gpufl_upload_result r;
    gpufl_error err;
    unsetenv("GPUFL_BACKEND_URL");
    unsetenv("GPUFL_API_KEY");
    gpufl_upload_options_init(&o);
    CHECK_INT(gpufl_upload_logs(&o, &r, &err), GPUFL_ERR_INVALID_ARG);
    CHECK_CONTAINS(err.message, "no log path");
    o.log_path = root;
    CHECK_INT(gpufl_upload_logs(&o, &r, &err), GPUFL_ERR_INVALID_ARG);
    CHECK_CONTAINS(err.message, "GPUFL_BACKEND_URL");
    setenv("GPUFL_BACKEND_URL", "ftp://example.org", 1);
    CHECK_INT(gpufl_upload_logs(&o, &r, &err), GPUFL_ERR_INVALID_ARG);
    CHECK_CONTAINS(err.message, "\"ftp://example.org\" is not an http");
    /* A key pasted into the URL: redacted, although the URL is checked
     * before the key (issue 32), from the option and from the environment. */
    setenv("GPUFL_BACKEND_URL", "ftp://example.org/" KEY, 1);
    o.api_key = KEY;
    CHECK_INT(gpufl_upload_logs(&o, &r, &err), GPUFL_ERR_INVALID_ARG);
    CHECK_CONTAINS(err.message, "\"ftp://example.org/<redacted>\" is not an http");
    CHECK(strstr(err.message, KEY) == NULL && strstr(r.message, KEY) == NULL);
    o.api_key = NULL;
    setenv("GPUFL_API_KEY", KEY, 1);
    CHECK_INT(gpufl_upload_logs(&o, &r, &err), GPUFL_ERR_INVALID_ARG);
    CHECK_CONTAINS(err.message, "\"ftp://example.org/<redacted>\" is not an http");
    unsetenv("GPUFL_API_KEY");
    setenv("GPUFL_BACKEND_URL", "ftp://example.org", 1);
    setenv("GPUFL_BACKEND_URL", "http://127.0.0.1:9", 1);
    CHECK_INT(gpufl_upload_logs(&o, &r, &err), GPUFL_ERR_INVALID_ARG);
    CHECK_CONTAINS(err.message, "no API key");
    setenv("GPUFL_API_KEY", KEY, 1);
    o.log_path = "/nonexistent/gpufl-logs";
    CHECK_INT(gpufl_upload_logs(&o, &r, &err), GPUFL_ERR_IO);
    CHECK_CONTAINS(err.message, "\"/nonexistent/gpufl-logs\" is not a directory");
    o.log_path = root;
    o.timeout_s = 0;
    CHECK_INT(gpufl_upload_logs(&o, &r, &err), GPUFL_ERR_INVALID_ARG);
    CHECK(strstr(err.message, KEY) == NULL);
    unsetenv("GPUFL_BACKEND_URL");
    unsetenv("GPUFL_API_KEY");
    CHECK_STR(gpufl_strerror(GPUFL_ERR_UPLOAD),
              "the upload failed (the backend refused it or could not be reached)");
}

/* libcurl absent (in a child: the library loads libcurl once). */
static void test_no_curl(void)
{
    char dir[512];
    snprintf(dir, sizeof dir, "%s/nocurl-" SID, root);
    make_session(dir, 1, true);
    pid_t pid = fork();
    if (pid == 0) {
        setenv("GPUFL_CURL_LIBRARY", "/nonexistent/libcurl.so.4", 1);
        gpufl_upload_options o;
        gpufl_upload_options_init(&o);
        o.log_path = dir;
        o.backend_url = "http://127.0.0.1:9";
        o.api_key = KEY;
        gpufl_upload_result r;
        gpufl_error err;
        gpufl_status st = gpufl_upload_logs(&o, &r, &err);
        bool ok = st == GPUFL_ERR_NOT_SUPPORTED && strstr(err.message, "libcurl") &&
                  strstr(err.message, "apt-get install libcurl4") && !r.success;
        if (!ok)
            fprintf(stderr, "no libcurl: status %d: %s\n", st, err.message);
        _exit(ok ? 0 : 1);
    }
    int ws = 0;
    waitpid(pid, &ws, 0);
    CHECK(WIFEXITED(ws) && WEXITSTATUS(ws) == 0);
}

/* GPUFlight 1.3's own sessions (tests/fixtures/gpufl-1.3): published
 * windows, a .gz window sent as it is (the server gunzips it), the lock
 * and sidecars left alone; a file still in .tmp/ makes the session live. */
static void test_gpufl13(const char *layout, const char *sid)
{
    srv s;
    CHECK_INT(srv_start(&s, layout, NULL, NULL, NULL), 0);
    char cmd[1200], dir[600];
    const char *src = getenv("GP_TEST_SOURCE_DIR");
    snprintf(dir, sizeof dir, "%s/%s", root, layout);
    snprintf(cmd, sizeof cmd, "cp -r %s/fixtures/gpufl-1.3/%s %s && chmod -R u+w %s",
             src ? src : "tests", layout, dir, dir);
    CHECK_INT(system(cmd), 0);
    gpufl_upload_options o;
    opts(&o, dir, &s);
    gpufl_upload_result r;
    gpufl_error err;
    CHECK_INT(gpufl_upload_logs(&o, &r, &err), GPUFL_OK);
    CHECK_U64(r.files_processed, 4);
    CHECK_U64(r.sessions_uploaded, 1);
    json_t *reqs = srv_requests(&s);
    CHECK_U64(json_array_size(reqs), 5);
    size_t total = 0;
    for (size_t i = 0; i < 4 && i < json_array_size(reqs); i++) {
        json_t *q = json_array_get(reqs, i);
        CHECK_STR(hdr(q, "x-gpuflight-session-id"), sid);
        CHECK(!json_object_get(q, "body_error"));
        json_t *lines = json_object_get(q, "lines");
        total += json_array_size(lines);
        CHECK(json_array_size(lines) > 1);
        json_t *first = json_loads(json_string_value(json_array_get(lines, 0)), 0, NULL);
        CHECK_STR(json_string_value(json_object_get(first, "session_id")), sid);
        json_decref(first);
    }
    CHECK_U64(r.events_uploaded, total);
    json_decref(reqs);
    /* A file in .tmp/: live (or crashed) - not sent without force. */
    char sdir[700], tmpd[800], cur[800];
    snprintf(sdir, sizeof sdir, "%s/%s", dir, sid);
    snprintf(cur, sizeof cur, "%s/.gpufl-upload-cursor.json", sdir);
    remove(cur);
    snprintf(tmpd, sizeof tmpd, "%s/.tmp", sdir);
    mkdir(tmpd, 0755);
    snprintf(tmpd, sizeof tmpd, "%s/.tmp/system.log", sdir);
    write_file(tmpd, "{\"type\":\"test_event\",\"session_id\":\"x\"}\n");
    CHECK_INT(gpufl_upload_logs(&o, &r, &err), GPUFL_ERR_STATE);
    o.force = true;
    CHECK_INT(gpufl_upload_logs(&o, &r, &err), GPUFL_OK);
    CHECK_U64(r.files_processed, 5);
    reqs = srv_requests(&s);
    CHECK_U64(json_array_size(reqs), 11);
    /* .tmp/ last: after the system window, before the sass one. */
    CHECK_INT(json_array_size(json_object_get(json_array_get(reqs, 8), "lines")), 1);
    json_decref(reqs);
    srv_stop(&s);
}

/* Lines of a gzipped file (-1: not a gzip that ends well). */
static long gz_lines(const char *path)
{
    gzFile g = gzopen(path, "rb");
    if (!g)
        return -1;
    char buf[1 << 14];
    long n = 0;
    int r;
    while ((r = gzread(g, buf, sizeof buf)) > 0)
        for (int i = 0; i < r; i++)
            n += buf[i] == '\n';
    int e = 0;
    gzerror(g, &e);
    gzclose(g);
    return e == Z_OK ? n : -1;
}

/* A session of ours rotated into many windows (rotate_size): each window
 * is one file sent, every line of every window arrives once. */
static void test_rotated(void)
{
    srv s;
    CHECK_INT(srv_start(&s, "rotated", NULL, NULL, NULL), 0);
    char base[600], dir[1024];
    snprintf(base, sizeof base, "%s/rotated", root);
    gpufl_init_options io;
    gpufl_init_options_init(&io);
    io.app_name = "rotated";
    io.log_path = base;
    io.rotate_size = "2K";
    gpufl_error err;
    CHECK_INT(gpufl_init(&io, &err), GPUFL_OK);
    gpufl_session_dir(dir, sizeof dir);
    for (int r = 0; r < 20; r++) {
        for (int i = 0; i < 50; i++) {
            gpufl_scope sc = gpufl_scope_begin("step");
            gpufl_scope_end(&sc);
        }
        gpufl_flush();
    }
    gpufl_shutdown();
    uint64_t windows = 0, lines = 0;
    DIR *d = opendir(dir);
    for (struct dirent *e; d && (e = readdir(d));) {
        size_t n = strlen(e->d_name);
        if (e->d_name[0] == '.' || n < 7 || strcmp(e->d_name + n - 7, ".log.gz") != 0)
            continue;
        char p[1400];
        snprintf(p, sizeof p, "%s/%s", dir, e->d_name);
        long k = gz_lines(p);
        CHECK(k > 0);
        windows++;
        lines += k > 0 ? (uint64_t)k : 0;
    }
    if (d)
        closedir(d);
    CHECK(windows >= 10);
    gpufl_upload_options o;
    opts(&o, base, &s);
    gpufl_upload_result r;
    CHECK_INT(gpufl_upload_logs(&o, &r, &err), GPUFL_OK);
    CHECK_U64(r.sessions_uploaded, 1);
    CHECK_U64(r.files_processed, windows);
    CHECK_U64(r.events_uploaded, lines);
    json_t *reqs = srv_requests(&s);
    uint64_t sent = 0;
    for (size_t i = 0; i < json_array_size(reqs); i++)
        if (json_integer_value(json_object_get(json_array_get(reqs, i), "status")) == 200)
            sent += json_array_size(json_object_get(json_array_get(reqs, i), "lines"));
    CHECK_U64(sent, lines);
    json_decref(reqs);
    srv_stop(&s);
}

int main(void)
{
    signal(SIGPIPE, SIG_IGN);
    if (system("python3 -c 'import http.server' >/dev/null 2>&1") != 0) {
        printf("SKIP: no python3 for the test backend\n");
        return 77;
    }
    snprintf(root, sizeof root, "/tmp/gp_upload_test.%d", (int)getpid());
    mkdir(root, 0755);
    snprintf(srvdir, sizeof srvdir, "%s-srv", root);
    mkdir(srvdir, 0755);
    unsetenv("GPUFL_DISABLED");
    test_arguments();
    test_no_curl();
    test_full_upload();
    test_resume("fail5xx", "--fail-after", 503);
    test_resume("drop", "--drop-after", -1);
    test_two_backends();
    test_status("401", 401, "answered HTTP 401: the API key was refused");
    test_status("403", 403, "answered HTTP 403: the API key was refused");
    test_status("404", 404, "backend is too old");
    test_status("413", 413, "answered HTTP 413");
    test_status("400", 400, "answered HTTP 400");
    test_kill_switch();
    test_unfinished();
    test_gpufl13("gzip-windows", "11111111-2222-4333-8444-555555555555");
    test_gpufl13("uncompressed-windows", "aaaaaaaa-bbbb-4ccc-8ddd-eeeeeeeeeeee");
    test_rotated();
    char cmd[300];
    snprintf(cmd, sizeof cmd, "grep -rl '%s' %s >/dev/null 2>&1", KEY, root);
    CHECK(system(cmd) != 0); /* the key in no file the runs produced */
    snprintf(cmd, sizeof cmd, "rm -rf %s %s", root, srvdir);
    if (system(cmd) != 0)
        fprintf(stderr, "could not remove %s\n", root);
    return check_done("test_upload");
}
