/*
 * reader/sidecar.c - a published window's sidecar checked against the
 * window: GPUFlight writes <session>/.gpufl-window.<channel>.<N>.json
 * (shared/spec/session-log-format.md) before it publishes the payload file
 * <channel>.<N>.log[.gz], with the payload's size (payload_bytes) and
 * zlib CRC-32 (payload_crc32).  A sidecar that is not valid (not a JSON
 * object, not a transport window, fields missing or of another channel,
 * window or session) or whose payload's size or CRC differ is one warning
 * naming the sidecar, counted in bad_windows; the window is read all the
 * same (its lines are checked one by one anyway).  A window without a
 * sidecar (an older writer, ours) is not checked.
 */
#include "read_int.h"

#include <errno.h>
#include <inttypes.h>
#include <jansson.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

/* A sidecar is small; a bigger file is not one. */
#define SIDECAR_MAX ((size_t)64 << 10)

static void bad(rd *r, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

static void bad(rd *r, const char *fmt, ...)
{
    char m[400];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(m, sizeof m, fmt, ap);
    va_end(ap);
    r->res->bad_windows++;
    fl_rd_warn(r, "window sidecar %s; the window is read all the same", m);
}

/* A member that is a non-negative integer. */
static bool get_u64(const json_t *o, const char *key, uint64_t *out)
{
    const json_t *v = json_object_get(o, key);
    if (json_is_integer(v) && json_integer_value(v) >= 0) {
        *out = (uint64_t)json_integer_value(v);
        return true;
    }
    if (json_is_real(v) && json_real_value(v) >= 0 && json_real_value(v) < 18446744073709551616.0 &&
        json_real_value(v) == (double)(uint64_t)json_real_value(v)) {
        *out = (uint64_t)json_real_value(v); /* above INT64_MAX: read as a real */
        return true;
    }
    return false;
}

/* The sidecar's fields that say which window it is; false after a
 * warning. */
static bool identity(rd *r, const json_t *j, const rd_file *f)
{
    const char *type = json_string_value(json_object_get(j, "type"));
    const char *ch = json_string_value(json_object_get(j, "channel"));
    const char *sid = json_string_value(json_object_get(j, "session_id"));
    uint64_t seq;
    if (!type || strcmp(type, FL_WINDOW_SIDECAR_TYPE) != 0) {
        bad(r, "is not valid: its \"type\" is not \"%s\"", FL_WINDOW_SIDECAR_TYPE);
        return false;
    }
    if (!ch || strcmp(ch, fl_channel_name(f->channel)) != 0) {
        bad(r, "is not valid: its \"channel\" is not \"%s\"", fl_channel_name(f->channel));
        return false;
    }
    if (!get_u64(j, "window_sequence", &seq) || seq != f->window) {
        bad(r, "is not valid: its \"window_sequence\" is not %lu", f->window);
        return false;
    }
    if (sid && r->want && strcmp(sid, r->want) != 0) {
        bad(r, "is not valid: it describes session %.80s, not %.80s", sid, r->want);
        return false;
    }
    return true;
}

/* The payload file the sidecar names: in the session directory, else in
 * its .tmp/ (a window staged there); NULL when neither has it. */
static char *payload_path(const char *dir, const char *name)
{
    char *p = fl_rd_join(dir, "/", name);
    struct stat st;
    if (p && stat(p, &st) == 0 && S_ISREG(st.st_mode))
        return p;
    free(p);
    p = fl_rd_join(dir, "/" RD_TMP_DIR "/", name);
    if (p && stat(p, &st) == 0 && S_ISREG(st.st_mode))
        return p;
    free(p);
    return NULL;
}

/* Compares the sidecar's size and CRC with the payload's. */
static void check_payload(rd *r, const char *dir, const json_t *j, const rd_file *f,
                          const rd_crc *crc)
{
    const char *name = json_string_value(json_object_get(j, "payload_file"));
    uint64_t want_bytes, want_crc;
    if (!name || !*name || strchr(name, '/')) {
        bad(r, "is not valid: no \"payload_file\" name");
        return;
    }
    if (!get_u64(j, "payload_bytes", &want_bytes) || !get_u64(j, "payload_crc32", &want_crc) ||
        want_crc > UINT32_MAX) {
        bad(r, "is not valid: \"payload_bytes\" or \"payload_crc32\" is missing or not a "
               "non-negative integer");
        return;
    }
    const char *base = strrchr(f->path, '/');
    base = base ? base + 1 : f->path;
    rd_crc got;
    if (crc && crc->complete && strcmp(base, name) == 0) {
        got = *crc; /* the file just read */
    } else {
        char *p = strcmp(base, name) == 0 ? strdup(f->path) : payload_path(dir, name);
        if (!p) {
            bad(r, "names payload %.200s, which is not in the session directory (read %.200s)",
                name, base);
            return;
        }
        int rc = fl_rd_file_crc(p, &got);
        int e = errno;
        free(p);
        if (rc != 0) {
            bad(r, "names payload %.200s, which cannot be read: %s", name, strerror(e));
            return;
        }
    }
    if (got.bytes != want_bytes)
        bad(r, "does not match %.200s: payload_bytes %" PRIu64 ", the file has %" PRIu64, name,
            want_bytes, got.bytes);
    else if (got.crc != (uint32_t)want_crc)
        bad(r, "does not match %.200s: payload_crc32 %" PRIu64 ", the file's is %" PRIu32, name,
            want_crc, got.crc);
}

/* The path of window f's sidecar in dir (malloc'd; NULL: out of memory). */
static char *sidecar_path(const char *dir, const rd_file *f)
{
    char name[128];
    snprintf(name, sizeof name, "/%s%s.%lu.json", RD_SIDECAR_PREFIX, fl_channel_name(f->channel),
             f->window);
    return fl_rd_join(dir, name, "");
}

bool fl_rd_has_sidecar(const char *dir, const rd_file *f)
{
    char *path = sidecar_path(dir, f);
    struct stat st;
    bool has = path && stat(path, &st) == 0;
    free(path);
    return has;
}

void fl_rd_check_sidecar(rd *r, const char *dir, const rd_file *f, const rd_crc *crc)
{
    char *path = sidecar_path(dir, f);
    if (!path)
        return;
    struct stat st;
    if (stat(path, &st) != 0) {
        free(path); /* no sidecar: nothing to check */
        return;
    }
    const char *file = r->file;
    uint64_t line = r->line;
    r->file = path;
    r->line = 1;
    json_error_t e;
    json_t *j = NULL;
    if (!S_ISREG(st.st_mode) || (size_t)st.st_size > SIDECAR_MAX)
        bad(r, "is not valid: not a file of at most %zu bytes", SIDECAR_MAX);
    else if (!(j = json_load_file(path, JSON_REJECT_DUPLICATES, &e)))
        bad(r, "is not valid: not JSON (%s)", e.text);
    else if (!json_is_object(j))
        bad(r, "is not valid: not a JSON object");
    else if (identity(r, j, f))
        check_payload(r, dir, j, f, crc);
    json_decref(j);
    r->file = file;
    r->line = line;
    free(path);
}
