/*
 * upload/upload.c - gpufl_upload_logs: the upload protocol of
 * shared/spec/session-log-format.md over the sessions session.c finds.
 * Promises: nothing read or sent with the kill switch on; only finished
 * sessions unless forced; a failure stops the upload and leaves a cursor
 * from which a re-run resumes without sending a file twice; the API key
 * goes into the Authorization header and nowhere else (every message is
 * also redacted against it, whatever a backend echoes).
 */
#include "http.h"
#include "upload_int.h"
#include "../util/env.h"
#include "../util/error.h"
#include "../util/text.h"
#include "../wire/vocab.h"

#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

void gpufl_upload_options_init(gpufl_upload_options *opts)
{
    if (!opts)
        return;
    memset(opts, 0, sizeof *opts);
    opts->enabled = true;
    opts->timeout_s = 60.0;
    opts->connect_timeout_s = 10.0;
    opts->max_retries = 2;
    opts->retry_delay_ms = 500;
}

/* One upload's settings and tallies. */
typedef struct up_ctx {
    char stream_url[2048], complete_url[2048];
    char shown[2048]; /* backend_url + api_path without any user:password@ */
    char *auth;       /* "Authorization: Bearer <key>" */
    long timeout_ms, connect_ms;
    int retries, delay_ms;
    gpufl_upload_result *res;
    uint64_t unfinished;
    char note[512];
} up_ctx;

static const char *pick(const char *given, const char *env)
{
    if (given && *given)
        return given;
    const char *e = getenv(env);
    return e && *e ? e : NULL;
}

static bool has_control(const char *s)
{
    for (; *s; s++)
        if ((unsigned char)*s < 0x20 || *s == 0x7f)
            return true;
    return false;
}

/* url without "user:password@" in its authority. */
static void strip_userinfo(const char *url, char *out, size_t cap)
{
    const char *auth = strstr(url, "://");
    auth = auth ? auth + 3 : url;
    const char *end = auth + strcspn(auth, "/?#");
    const char *at = NULL;
    for (const char *p = auth; p < end; p++)
        if (*p == '@')
            at = p;
    if (!at) {
        snprintf(out, cap, "%s", url);
        return;
    }
    snprintf(out, cap, "%.*s%s", (int)(auth - url), url, at + 1);
}

static gpufl_status resolve(const gpufl_upload_options *o, up_ctx *c, gpufl_error *err)
{
    const char *url = pick(o->backend_url, "GPUFL_BACKEND_URL");
    const char *key = pick(o->api_key, GP_API_KEY_ENV);
    const char *path = pick(o->api_path, "GPUFL_API_PATH");
    if (!o->log_path || !*o->log_path)
        return fl_error_set(err, GPUFL_ERR_INVALID_ARG,
                            "no log path: give the session directory or the log directory "
                            "to upload");
    if (!url)
        return fl_error_set(err, GPUFL_ERR_INVALID_ARG,
                            "no backend URL: pass backend_url (--backend-url) or set "
                            "GPUFL_BACKEND_URL, e.g. https://api.gpuflight.com");
    if ((strncmp(url, "http://", 7) != 0 && strncmp(url, "https://", 8) != 0) || has_control(url) ||
        strlen(url) > 1024)
        return fl_error_set(err, GPUFL_ERR_INVALID_ARG,
                            "backend URL \"%s\" is not an http:// or https:// URL: give the "
                            "backend's host, e.g. https://api.gpuflight.com",
                            url);
    if (!key)
        return fl_error_set(err, GPUFL_ERR_INVALID_ARG,
                            "no API key: pass api_key (--api-key) or set " GP_API_KEY_ENV);
    if (has_control(key))
        return fl_error_set(err, GPUFL_ERR_INVALID_ARG,
                            "the API key holds a control character (a newline?): give the key "
                            "alone");
    if (!path)
        path = "/api/v1";
    if (has_control(path) || strlen(path) > 512)
        return fl_error_set(err, GPUFL_ERR_INVALID_ARG,
                            "api_path \"%s\" is not a path: give e.g. /api/v1", path);
    size_t ul = strlen(url), pl = strlen(path);
    while (ul > 0 && url[ul - 1] == '/')
        ul--;
    while (pl > 0 && path[pl - 1] == '/')
        pl--;
    const char *slash = pl && path[0] != '/' ? "/" : "";
    snprintf(c->stream_url, sizeof c->stream_url, "%.*s%s%.*s/events/stream", (int)ul, url, slash,
             (int)pl, path);
    snprintf(c->complete_url, sizeof c->complete_url, "%.*s%s%.*s/events/session-complete", (int)ul,
             url, slash, (int)pl, path);
    char base[2048];
    snprintf(base, sizeof base, "%.*s%s%.*s", (int)ul, url, slash, (int)pl, path);
    strip_userinfo(base, c->shown, sizeof c->shown);
    size_t n = strlen(key) + 32;
    c->auth = malloc(n);
    if (!c->auth)
        return fl_error_set(err, GPUFL_ERR_NO_MEMORY, "out of memory");
    snprintf(c->auth, n, "Authorization: Bearer %s", key);
    return GPUFL_OK;
}

static gpufl_status check_numbers(const gpufl_upload_options *o, up_ctx *c, gpufl_error *err)
{
    if (!(o->timeout_s > 0 && o->timeout_s <= 86400) ||
        !(o->connect_timeout_s > 0 && o->connect_timeout_s <= 86400))
        return fl_error_set(err, GPUFL_ERR_INVALID_ARG,
                            "timeout_s %g / connect_timeout_s %g out of range: give seconds in "
                            "(0, 86400]",
                            o->timeout_s, o->connect_timeout_s);
    if (o->max_retries < 0 || o->max_retries > 10 || o->retry_delay_ms < 0 ||
        o->retry_delay_ms > 60000)
        return fl_error_set(err, GPUFL_ERR_INVALID_ARG,
                            "max_retries %d / retry_delay_ms %d out of range: give 0..10 retries "
                            "and 0..60000 ms",
                            o->max_retries, o->retry_delay_ms);
    c->timeout_ms = (long)(o->timeout_s * 1000.0 + 0.5);
    c->connect_ms = (long)(o->connect_timeout_s * 1000.0 + 0.5);
    if (c->timeout_ms < 1)
        c->timeout_ms = 1;
    if (c->connect_ms < 1)
        c->connect_ms = 1;
    c->retries = o->max_retries;
    c->delay_ms = o->retry_delay_ms;
    return GPUFL_OK;
}

/* A header value from a file: control characters become '?'. */
static void header(char *out, size_t cap, const char *name, const char *value)
{
    int n = snprintf(out, cap, "%s: %s", name, value);
    size_t len = n < 0 ? 0 : ((size_t)n < cap ? (size_t)n : cap - 1);
    for (size_t i = strlen(name) + 2; i < len; i++)
        if ((unsigned char)out[i] < 0x20 || out[i] == 0x7f)
            out[i] = '?';
}

static void sleep_ms(long ms)
{
    struct timespec ts = {ms / 1000, (ms % 1000) * 1000000L};
    while (nanosleep(&ts, &ts) != 0)
        ;
}

/* One POST with its retries (5xx, a timeout, a dropped or refused
 * connection); the last attempt's reply in *r, attempts in *tries. */
static void post(up_ctx *c, const char *url, const char *sid, const char *host, bool stream,
                 const up_content *body, up_reply *r, int *tries)
{
    char h_sid[256], h_host[320], h_ver[64], h_ua[64];
    header(h_sid, sizeof h_sid, "X-GpuFlight-Session-Id", sid);
    header(h_host, sizeof h_host, "X-GpuFlight-Hostname", host);
    header(h_ver, sizeof h_ver, "X-GpuFlight-Client-Version", GPUFL_VERSION_STRING);
    header(h_ua, sizeof h_ua, "User-Agent", "gpu-profile/" GPUFL_VERSION_STRING);
    const char *hs[10];
    size_t n = 0;
    hs[n++] = c->auth;
    hs[n++] = stream ? "Content-Type: application/x-ndjson" : "Content-Type: application/json";
    if (stream)
        hs[n++] = "Content-Encoding: gzip";
    hs[n++] = h_sid;
    if (*host)
        hs[n++] = h_host;
    hs[n++] = h_ver;
    hs[n++] = "X-GpuFlight-Wire-Version: 1";
    hs[n++] = h_ua;
    hs[n++] = "Expect:"; /* no 100-continue round trip */
    long delay = c->delay_ms;
    for (*tries = 1;; (*tries)++) {
        up_http_post(url, hs, n, stream ? body->body : NULL, stream ? body->body_len : 0,
                     c->timeout_ms, c->connect_ms, r);
        bool again =
            r->status >= 500 || (r->status == 0 && (r->timed_out || r->dropped || r->refused));
        if (!again || *tries > c->retries)
            return;
        sleep_ms(delay);
        delay *= 2;
    }
}

/* The failed reply r of url as an error (and result->http_status). */
static gpufl_status failure(up_ctx *c, const char *url, const char *what, const up_reply *r,
                            int tries, gpufl_error *err)
{
    char shown[2048];
    strip_userinfo(url, shown, sizeof shown);
    c->res->http_status = r->status > 0 ? (int)r->status : -1;
    long st = r->status;
    if (st == 401 || st == 403)
        return fl_error_set(err, GPUFL_ERR_UPLOAD,
                            "%s: POST %s answered HTTP %ld: the API key was refused; check "
                            "api_key (--api-key, " GP_API_KEY_ENV ") and its workspace",
                            what, shown, st);
    if (st == 404)
        return fl_error_set(err, GPUFL_ERR_UPLOAD,
                            "%s: POST %s answered HTTP 404: the backend is too old for this "
                            "upload protocol (no /events endpoints) or api_path is wrong "
                            "(api_path, --api-path, GPUFL_API_PATH; default /api/v1)",
                            what, shown);
    if (st == 413)
        return fl_error_set(err, GPUFL_ERR_UPLOAD,
                            "%s: POST %s answered HTTP 413: the file is larger than the "
                            "backend accepts in one request; raise the backend's body limit",
                            what, shown);
    if (st >= 500)
        return fl_error_set(err, GPUFL_ERR_UPLOAD,
                            "%s: POST %s answered HTTP %ld %d time(s): the backend is failing; "
                            "run the upload again later (it resumes where it stopped)",
                            what, shown, st, tries);
    if (st > 0)
        return fl_error_set(err, GPUFL_ERR_UPLOAD, "%s: POST %s answered HTTP %ld: %.300s", what,
                            shown, st, r->body_len ? r->body : "(no body)");
    if (r->tls)
        return fl_error_set(err, GPUFL_ERR_UPLOAD,
                            "%s: POST %s: TLS certificate verification failed (%s): the "
                            "backend's certificate is not trusted here; install its CA in the "
                            "system's store (verification stays on)",
                            what, shown, r->transport);
    return fl_error_set(err, GPUFL_ERR_UPLOAD,
                        "%s: POST %s failed %d time(s)%s: %s; check the URL and the network, "
                        "then run the upload again (it resumes where it stopped)",
                        what, shown, tries, r->timed_out ? " (timed out)" : "", r->transport);
}

/* The backend's {"accepted": N, "rejected": N}; without them, lines sent. */
static void tally(up_ctx *c, const up_reply *r, const up_content *t)
{
    json_t *j = r->body_len ? json_loadb(r->body, r->body_len, 0, NULL) : NULL;
    json_t *a = json_object_get(j, "accepted"), *rej = json_object_get(j, "rejected");
    c->res->events_uploaded += json_is_integer(a) && json_integer_value(a) >= 0
                                   ? (uint64_t)json_integer_value(a)
                                   : t->lines;
    if (json_is_integer(rej) && json_integer_value(rej) > 0)
        c->res->events_rejected += (uint64_t)json_integer_value(rej);
    json_decref(j);
    c->res->bytes_uploaded += t->text_len;
}

/* Whether each channel's last file ends with the shutdown record (and no
 * .tmp/ is left): the session was shut down, not still recording or
 * crashed.  -1 with err when a file cannot be read. */
static int finished(const up_session *s, gpufl_error *err)
{
    if (s->has_tmp || s->n_files == 0)
        return 0;
    for (size_t i = 0; i < s->n_files; i++) {
        if (i + 1 < s->n_files && s->files[i + 1].channel == s->files[i].channel)
            continue;
        up_content t;
        if (up_content_load(&s->files[i], &t, err) != GPUFL_OK)
            return -1;
        bool done = t.ends_with_shutdown;
        up_content_free(&t);
        if (!done)
            return 0;
    }
    return 1;
}

/* Sends one file (unless the cursor has it); sid and host: the session's
 * ids, filled from the first file that has them. */
static gpufl_status send_file(up_ctx *c, const up_session *s, const up_file *f, up_cursor *cur,
                              char *sid, size_t sid_cap, char *host, size_t host_cap,
                              gpufl_error *err)
{
    c->res->files_processed++;
    if (up_cursor_has(cur, f->name, f->size)) {
        c->res->files_skipped_by_cursor++;
        return GPUFL_OK;
    }
    up_content t;
    gpufl_status st = up_content_load(f, &t, err);
    if (st != GPUFL_OK)
        return st;
    if (t.session_id[0])
        snprintf(sid, sid_cap, "%s", t.session_id);
    if (t.hostname[0] && !host[0])
        snprintf(host, host_cap, "%s", t.hostname);
    if (t.text_len > 0) {
        up_reply r;
        int tries;
        post(c, c->stream_url, sid, host, true, &t, &r, &tries);
        if (r.status < 200 || r.status > 299) {
            char what[1024];
            snprintf(what, sizeof what, "session %s, file %s", s->base, f->name);
            up_content_free(&t);
            return failure(c, c->stream_url, what, &r, tries, err);
        }
        tally(c, &r, &t);
    }
    up_content_free(&t);
    if (!up_cursor_add(cur, f->name, f->size))
        return fl_error_set(err, GPUFL_ERR_NO_MEMORY, "out of memory");
    return up_cursor_write(s->dir, c->shown, cur, err);
}

static gpufl_status upload_session(up_ctx *c, const up_session *s, bool force, gpufl_error *err)
{
    up_cursor cur;
    char note[600];
    up_cursor_read(s->dir, c->shown, &cur, note, sizeof note);
    if (note[0] && !c->note[0])
        snprintf(c->note, sizeof c->note, "%s", note);
    if (cur.complete) {
        c->res->files_processed += s->n_files;
        c->res->files_skipped_by_cursor += s->n_files;
        c->res->sessions_skipped++;
        up_cursor_free(&cur);
        return GPUFL_OK;
    }
    int fin = finished(s, err);
    if (fin < 0 || (fin == 0 && !force)) {
        c->unfinished += fin == 0;
        c->res->sessions_skipped += fin == 0;
        up_cursor_free(&cur);
        return fin < 0 ? GPUFL_ERR_IO : GPUFL_OK;
    }
    char sid[128], host[256] = "";
    snprintf(sid, sizeof sid, "%s", s->base);
    gpufl_status st = GPUFL_OK;
    for (size_t i = 0; i < s->n_files && st == GPUFL_OK; i++)
        st = send_file(c, s, &s->files[i], &cur, sid, sizeof sid, host, sizeof host, err);
    if (st == GPUFL_OK) {
        up_reply r;
        int tries;
        post(c, c->complete_url, sid, host, false, NULL, &r, &tries);
        if (r.status < 200 || r.status > 299) {
            char what[512];
            snprintf(what, sizeof what, "session %s, session-complete", s->base);
            st = failure(c, c->complete_url, what, &r, tries, err);
        } else {
            cur.complete = true;
            st = up_cursor_write(s->dir, c->shown, &cur, err);
            c->res->sessions_uploaded += st == GPUFL_OK;
        }
    }
    up_cursor_free(&cur);
    return st;
}

static void summary(up_ctx *c, const char *log_path)
{
    gpufl_upload_result *r = c->res;
    char *m = r->message;
    size_t cap = sizeof r->message;
    int n = snprintf(m, cap,
                     "uploaded %llu events (%llu bytes of NDJSON) of %llu session(s) from \"%s\" "
                     "to %s; %llu of %llu files already sent before",
                     (unsigned long long)r->events_uploaded, (unsigned long long)r->bytes_uploaded,
                     (unsigned long long)r->sessions_uploaded, log_path, c->shown,
                     (unsigned long long)r->files_skipped_by_cursor,
                     (unsigned long long)r->files_processed);
    size_t len = n < 0 ? 0 : ((size_t)n < cap ? (size_t)n : cap - 1);
    if (r->events_rejected)
        len += (size_t)snprintf(m + len, cap - len, "; the backend rejected %llu events",
                                (unsigned long long)r->events_rejected);
    if (len < cap && c->unfinished)
        len += (size_t)snprintf(m + len, cap - len,
                                "; %llu unfinished session(s) skipped (still recording or "
                                "crashed: force sends them)",
                                (unsigned long long)c->unfinished);
    if (len < cap && c->note[0])
        snprintf(m + len, cap - len, "; %s", c->note);
}

/* Kill switch: GPUFL_OK (may run), GPUFL_DISABLED or GPUFL_ERR_ENV. */
static gpufl_status kill_switch(const gpufl_upload_options *o, gpufl_error *err)
{
    const char *dis = getenv("GPUFL_DISABLED");
    if (dis && *dis) {
        int b = fl_parse_bool(dis);
        if (b < 0)
            return fl_error_set(err, GPUFL_ERR_ENV,
                                "GPUFL_DISABLED=\"%s\" is not a boolean: use 1, true, yes or on "
                                "(or 0, false, no, off)",
                                dis);
        if (b)
            return fl_error_set(err, GPUFL_DISABLED,
                                "GPUFL_DISABLED=%s: upload skipped, nothing read or sent", dis);
    }
    if (!o->enabled)
        return fl_error_set(err, GPUFL_DISABLED,
                            "enabled = false: upload skipped, nothing read or sent");
    return GPUFL_OK;
}

static gpufl_status run(const gpufl_upload_options *o, up_ctx *c, gpufl_error *err)
{
    gpufl_status st = resolve(o, c, err);
    if (st == GPUFL_OK)
        st = check_numbers(o, c, err);
    up_session *ss = NULL;
    size_t n = 0;
    if (st == GPUFL_OK)
        st = up_find_sessions(o->log_path, o->session_id, &ss, &n, err);
    gp_error why;
    if (st == GPUFL_OK && up_http_load(&why) != GP_OK)
        st = fl_error_set(err, GPUFL_ERR_NOT_SUPPORTED, "%s", why.message);
    for (size_t i = 0; i < n && st == GPUFL_OK; i++)
        st = upload_session(c, &ss[i], o->force, err);
    up_sessions_free(ss, n);
    if (st == GPUFL_OK && c->unfinished && c->res->sessions_uploaded == 0 &&
        c->unfinished == c->res->sessions_skipped)
        st = fl_error_set(err, GPUFL_ERR_STATE,
                          "nothing uploaded: %llu session(s) in \"%s\" not finished (no shutdown "
                          "record: still recording or crashed); set force (--force) to send "
                          "them as they are",
                          (unsigned long long)c->unfinished, o->log_path);
    return st;
}

gpufl_status gpufl_upload_logs(const gpufl_upload_options *opts, gpufl_upload_result *result,
                               gpufl_error *err)
{
    gpufl_upload_options defaults;
    gpufl_upload_result local;
    if (!opts) {
        gpufl_upload_options_init(&defaults);
        opts = &defaults;
    }
    if (!result)
        result = &local;
    memset(result, 0, sizeof *result);
    result->http_status = -1;
    fl_error_clear(err);
    gpufl_error e = {GPUFL_OK, ""};
    gpufl_status st = kill_switch(opts, &e);
    up_ctx c;
    memset(&c, 0, sizeof c);
    c.res = result;
    if (st == GPUFL_OK)
        st = run(opts, &c, &e);
    if (st == GPUFL_DISABLED) { /* nothing read, no connection: a success */
        result->success = true;
        snprintf(result->message, sizeof result->message, "%s", e.message);
    } else if (st == GPUFL_OK) {
        result->success = true;
        summary(&c, opts->log_path);
    } else {
        snprintf(result->message, sizeof result->message, "%s", e.message);
    }
    /* Whatever a backend echoed, a URL, a path or a variable held - checked
     * before the key itself, or not - never the key. */
    const char *keys[] = {pick(opts->api_key, GP_API_KEY_ENV)};
    if (keys[0]) {
        gp_redact_in_place(result->message, sizeof result->message, keys, 1);
        gp_redact_in_place(e.message, sizeof e.message, keys, 1);
    }
    if (c.auth) {
        memset(c.auth, 0, strlen(c.auth));
        free(c.auth);
    }
    if (st != GPUFL_OK)
        fl_error_set(err, st, "%s", e.message);
    return st;
}
