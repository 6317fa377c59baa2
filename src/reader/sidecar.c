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
 *
 * A window GPUFlight lost on its way to publication (a gzip it could not
 * recover) leaves only its marker .gpufl-transport-loss.<channel>.<N>.json
 * in the session directory: each such marker is one warning naming it, the
 * channel and the window (lost_windows), so that the session never reads
 * as complete.
 */
#include "../util/buf.h"
#include "../util/fs.h"
#include "read_int.h"

#include <dirent.h>
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
    char *p = gp_concat3(dir, "/", name);
    struct stat st;
    if (p && stat(p, &st) == 0 && S_ISREG(st.st_mode))
        return p;
    free(p);
    p = gp_concat3(dir, "/" RD_TMP_DIR "/", name);
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
    return gp_concat3(dir, name, "");
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

/* ------------------------------------------------------------ lost windows */

/* A loss marker: its channel (FL_CH_COUNT: one this reader does not know,
 * or a name that does not parse) and window, for the order of the
 * warnings. */
typedef struct loss {
    char *name; /* the file's name */
    int ch;
    unsigned long win;
    bool parsed; /* <channel>.<N> read from the name */
} loss;

static int cmp_loss(const void *a, const void *b)
{
    const loss *x = a, *y = b;
    return fl_file_order(x->ch, x->win, x->name, y->ch, y->win, y->name);
}

/* name's "<channel>.<N>" between RD_LOSS_PREFIX and ".json" into k. */
static void parse_loss(loss *k, char *chan, size_t cap)
{
    size_t pl = strlen(RD_LOSS_PREFIX), n = strlen(k->name) - pl - 5;
    k->ch = FL_CH_COUNT;
    snprintf(chan, cap, "%.*s", (int)n, k->name + pl);
    char *dot = strrchr(chan, '.');
    if (!dot || dot == chan || !is_digit(dot[1]))
        return;
    char *e;
    errno = 0;
    k->win = strtoul(dot + 1, &e, 10);
    if (errno || *e)
        return;
    *dot = '\0';
    k->parsed = true;
    for (int c = 0; c < FL_CH_COUNT; c++)
        if (strcmp(chan, fl_channel_name(c)) == 0)
            k->ch = c;
}

/* The reason GPUFlight wrote in the marker (its "reason" member), or "". */
static void loss_reason(const char *path, char *out, size_t cap)
{
    out[0] = '\0';
    struct stat st;
    if (stat(path, &st) != 0 || (size_t)st.st_size > SIDECAR_MAX)
        return;
    json_t *j = json_load_file(path, JSON_REJECT_DUPLICATES, NULL);
    const char *type = json_string_value(json_object_get(j, "type"));
    const char *why = json_string_value(json_object_get(j, "reason"));
    if (type && strcmp(type, FL_WINDOW_LOSS_TYPE) == 0 && why && *why)
        snprintf(out, cap, "; reason \"%.80s\"", why);
    json_decref(j);
}

/* One warning for marker k of dir. */
static void warn_loss(rd *r, const char *dir, const loss *k)
{
    char *path = gp_concat3(dir, "/", k->name);
    if (!path)
        return;
    char chan[256], why[128];
    loss t = *k;
    parse_loss(&t, chan, sizeof chan);
    loss_reason(path, why, sizeof why);
    const char *file = r->file;
    uint64_t line = r->line;
    r->file = path;
    r->line = 1;
    r->res->lost_windows++;
    if (t.parsed)
        fl_rd_warn(r,
                   "window %lu of channel %.80s was lost in transport (GPUFlight's marker%s): "
                   "its events are missing from this session",
                   t.win, chan, why);
    else
        fl_rd_warn(r,
                   "a window was lost in transport (GPUFlight's marker%s): its events are "
                   "missing from this session",
                   why);
    r->file = file;
    r->line = line;
    free(path);
}

void fl_rd_check_losses(rd *r, const char *dir)
{
    DIR *d = opendir(dir);
    if (!d)
        return;
    loss *v = NULL;
    size_t n = 0, cap = 0;
    size_t pl = strlen(RD_LOSS_PREFIX);
    struct dirent *e;
    while ((e = readdir(d))) {
        struct stat st;
        size_t len = strlen(e->d_name);
        /* GPUFlight's rule: a regular file by that prefix and ".json" is a
         * loss, whatever it holds (its ".part" files are not yet). */
        if (len <= pl + 5 || strncmp(e->d_name, RD_LOSS_PREFIX, pl) != 0 ||
            strcmp(e->d_name + len - 5, ".json") != 0 ||
            fstatat(dirfd(d), e->d_name, &st, 0) != 0 || !S_ISREG(st.st_mode))
            continue;
        loss k = {.name = strdup(e->d_name)};
        char chan[256];
        if (!k.name || fl_grow((void **)&v, &cap, n + 1, sizeof *v) != 0) {
            free(k.name);
            break;
        }
        parse_loss(&k, chan, sizeof chan);
        v[n++] = k;
    }
    closedir(d);
    if (n > 1)
        qsort(v, n, sizeof *v, cmp_loss);
    for (size_t i = 0; i < n; i++) {
        warn_loss(r, dir, &v[i]);
        free(v[i].name);
    }
    free(v);
}
