/*
 * gpufl13_layouts.h - GPUFlight 1.3's session layouts built from the two
 * sessions its own writer wrote (tests/fixtures/gpufl-1.3/, a copy of
 * shared/fixtures/gpufl-1.3/), for the reader, report, export and command
 * tests.  Test code only.
 *
 *   GL_PLAIN_WINDOWS  the uncompressed-windows session as written:
 *                     <channel>.1.log + sidecars + .gpufl-session.lock
 *   GL_GZ_WINDOWS     the gzip-windows session as written: <channel>.1.log.gz
 *   GL_TMP_LIVE       the uncompressed session as a live (or crashed) one
 *                     leaves it: only .tmp/<channel>.log (its lines without
 *                     the shutdown) and the lock
 *   GL_FLAT_WINDOWS   flat, windowed: <dir>/gfnative.<channel>.1.log
 *   GL_FLAT_GZ        flat, windowed and gzipped: gfnative.<channel>.1.log.gz
 *   GL_FLAT_PLAIN     flat, without window numbers: gfnative.<channel>.log
 *   GL_BAD_SIZE       GL_PLAIN_WINDOWS with scope's sidecar saying one byte
 *                     more than scope.1.log has
 *   GL_BAD_CRC        GL_GZ_WINDOWS with device's sidecar's CRC changed
 *
 * gl_build(layout, dir) builds one under dir (which it creates) and
 * returns the path to read: the session directory, or the flat prefix
 * dir/gfnative.  The sessions' content: see the fixture's README.
 */
#ifndef GP_TEST_GPUFL13_LAYOUTS_H
#define GP_TEST_GPUFL13_LAYOUTS_H

#include "check.h"
#include "util/fs.h"

#include <jansson.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <zlib.h>

#define GL_PLAIN_ID "aaaaaaaa-bbbb-4ccc-8ddd-eeeeeeeeeeee"
#define GL_GZ_ID "11111111-2222-4333-8444-555555555555"
#define GL_APP "gfnative"

enum {
    GL_PLAIN_WINDOWS,
    GL_GZ_WINDOWS,
    GL_TMP_LIVE,
    GL_FLAT_WINDOWS,
    GL_FLAT_GZ,
    GL_FLAT_PLAIN,
    GL_BAD_SIZE,
    GL_BAD_CRC,
    GL_COUNT
};

static const char *const gl_names[GL_COUNT] = {"plain-windows", "gz-windows", "tmp-live",
                                               "flat-windows",  "flat-gz",    "flat-plain",
                                               "bad-size",      "bad-crc"};
static const char *const gl_channels[] = {"device", "scope", "system", "sass"};

/* The fixture session directory of the plain (gz false) or gzip session. */
static inline const char *gl_fixture(bool gz, char *buf, size_t len)
{
    snprintf(buf, len, "%s/fixtures/gpufl-1.3/%s/%s", check_env("GP_TEST_SOURCE_DIR"),
             gz ? "gzip-windows" : "uncompressed-windows", gz ? GL_GZ_ID : GL_PLAIN_ID);
    return buf;
}

/* A file's bytes (a .gz file decompressed when unzip), NUL-terminated;
 * NULL if it cannot be read. */
static inline char *gl_slurp(const char *path, bool unzip, size_t *len)
{
    if (!unzip)
        return check_read_file(path, len);
    gzFile z = gzopen(path, "rb");
    if (!z)
        return NULL;
    size_t cap = 1 << 16, n = 0;
    char *p = (char *)malloc(cap + 1);
    int got;
    while (p && (got = gzread(z, p + n, (unsigned)(cap - n))) > 0) {
        n += (size_t)got;
        if (n == cap) {
            char *q = (char *)realloc(p, cap * 2 + 1);
            if (!q) {
                free(p);
                p = NULL;
                break;
            }
            p = q;
            cap *= 2;
        }
    }
    gzclose(z);
    if (p) {
        p[n] = '\0';
        if (len)
            *len = n;
    }
    return p;
}

static inline void gl_put(const char *path, const char *text, size_t len, bool gz)
{
    if (gz) {
        gzFile z = gzopen(path, "wb");
        CHECK(z != NULL);
        if (z) {
            CHECK(gzwrite(z, text, (unsigned)len) == (int)len);
            gzclose(z);
        }
        return;
    }
    FILE *f = fopen(path, "wb");
    CHECK(f != NULL);
    if (f) {
        CHECK(fwrite(text, 1, len, f) == len);
        fclose(f);
    }
}

/* Copies src to dst byte for byte. */
static inline void gl_copy(const char *src, const char *dst)
{
    size_t len = 0;
    char *t = gl_slurp(src, false, &len);
    CHECK(t != NULL);
    if (t)
        gl_put(dst, t, len, false);
    free(t);
}

/* text without its lines that contain drop (in place). */
static inline size_t gl_drop_lines(char *text, const char *drop)
{
    char *w = text;
    for (char *p = text; *p;) {
        char *nl = strchr(p, '\n');
        size_t n = nl ? (size_t)(nl - p) + 1 : strlen(p);
        char save = p[n];
        p[n] = '\0';
        bool keep = !strstr(p, drop);
        p[n] = save;
        if (keep) {
            memmove(w, p, n);
            w += n;
        }
        p += n;
    }
    *w = '\0';
    return (size_t)(w - text);
}

/* Sets member key of the sidecar of channel ch in dir to v + what it was. */
static inline void gl_bump_sidecar(const char *dir, const char *ch, const char *key, long long v)
{
    char path[4096];
    snprintf(path, sizeof path, "%s/.gpufl-window.%s.1.json", dir, ch);
    json_error_t e;
    json_t *j = json_load_file(path, 0, &e);
    CHECK(j != NULL);
    if (!j)
        return;
    json_int_t was = json_integer_value(json_object_get(j, key));
    json_object_set_new(j, key, json_integer(was + v));
    CHECK(json_dump_file(j, path, JSON_COMPACT) == 0);
    json_decref(j);
}

/* The fixture session (gz or not) copied into dir, file by file. */
static inline void gl_copy_session(bool gz, const char *dir)
{
    char src[4096], a[4096], b[4096];
    gl_fixture(gz, src, sizeof src);
    snprintf(a, sizeof a, "%s/.gpufl-session.lock", src);
    snprintf(b, sizeof b, "%s/.gpufl-session.lock", dir);
    gl_copy(a, b);
    for (size_t c = 0; c < 4; c++) {
        snprintf(a, sizeof a, "%s/%s.1.log%s", src, gl_channels[c], gz ? ".gz" : "");
        snprintf(b, sizeof b, "%s/%s.1.log%s", dir, gl_channels[c], gz ? ".gz" : "");
        gl_copy(a, b);
        snprintf(a, sizeof a, "%s/.gpufl-window.%s.1.json", src, gl_channels[c]);
        snprintf(b, sizeof b, "%s/.gpufl-window.%s.1.json", dir, gl_channels[c]);
        gl_copy(a, b);
    }
}

/* Each channel of the plain fixture written as dir/<name(channel)>,
 * gzipped when gz; without the shutdown lines when no_shutdown. */
static inline void gl_rewrite(const char *dir, const char *name_fmt, bool gz, bool no_shutdown)
{
    char src[4096], a[4096], b[4096], name[256];
    gl_fixture(false, src, sizeof src);
    for (size_t c = 0; c < 4; c++) {
        snprintf(a, sizeof a, "%s/%s.1.log", src, gl_channels[c]);
        size_t len = 0;
        char *t = gl_slurp(a, false, &len);
        CHECK(t != NULL);
        if (!t)
            continue;
        if (no_shutdown)
            len = gl_drop_lines(t, "\"type\":\"shutdown\"");
        snprintf(name, sizeof name, name_fmt, gl_channels[c]);
        snprintf(b, sizeof b, "%s/%s", dir, name);
        gl_put(b, t, len, gz);
        free(t);
    }
}

static inline const char *gl_build(int layout, const char *dir, char *out, size_t len)
{
    CHECK(fl_make_dirs(dir) == 0);
    snprintf(out, len, "%s", dir);
    char tmp[4096], lock[4096];
    switch (layout) {
    case GL_PLAIN_WINDOWS:
    case GL_BAD_SIZE:
        gl_copy_session(false, dir);
        if (layout == GL_BAD_SIZE)
            gl_bump_sidecar(dir, "scope", "payload_bytes", 1);
        break;
    case GL_GZ_WINDOWS:
    case GL_BAD_CRC:
        gl_copy_session(true, dir);
        if (layout == GL_BAD_CRC)
            gl_bump_sidecar(dir, "device", "payload_crc32", 1);
        break;
    case GL_TMP_LIVE:
        snprintf(tmp, sizeof tmp, "%s/.tmp", dir);
        CHECK(fl_make_dirs(tmp) == 0);
        snprintf(lock, sizeof lock, "%s/.gpufl-session.lock", dir);
        gl_put(lock, "", 0, false);
        gl_rewrite(tmp, "%s.log", false, true);
        break;
    case GL_FLAT_WINDOWS:
    case GL_FLAT_GZ:
        gl_rewrite(dir, layout == GL_FLAT_GZ ? GL_APP ".%s.1.log.gz" : GL_APP ".%s.1.log",
                   layout == GL_FLAT_GZ, false);
        snprintf(out, len, "%s/" GL_APP, dir);
        break;
    case GL_FLAT_PLAIN:
        gl_rewrite(dir, GL_APP ".%s.log", false, false);
        snprintf(out, len, "%s/" GL_APP, dir);
        break;
    default:
        break;
    }
    return out;
}

#endif /* GP_TEST_GPUFL13_LAYOUTS_H */
