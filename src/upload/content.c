/*
 * upload/content.c - a channel file made ready for the wire (its NDJSON
 * read through zlib, which takes plain and gzipped files alike; a plain
 * file gzipped, a .gz file sent as it is; its lines counted, its session
 * id, hostname and whether it ends with the shutdown record), and the
 * cursor file: which files a session already sent to which backend,
 * written whole (a temporary file renamed) so that a crash leaves the old
 * one.
 */
#include "upload_int.h"
#include "../util/error.h"
#include "../wire/vocab.h"

#include <errno.h>
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <zlib.h>

/* Whole files are read into memory: the wire sends one file per request. */
typedef struct growbuf {
    unsigned char *p;
    size_t len, cap;
} growbuf;

static bool gb_reserve(growbuf *b, size_t more)
{
    if (b->len + more <= b->cap)
        return true;
    size_t nc = b->cap ? b->cap : 65536;
    while (nc < b->len + more)
        nc *= 2;
    unsigned char *p = realloc(b->p, nc);
    if (!p)
        return false;
    b->p = p;
    b->cap = nc;
    return true;
}

/* The string member key of the JSON line (len bytes) into out. */
static void line_member(const char *line, size_t len, const char *key, char *out, size_t cap)
{
    json_t *j = json_loadb(line, len, 0, NULL);
    const char *v = j ? json_string_value(json_object_get(j, key)) : NULL;
    if (v)
        snprintf(out, cap, "%s", v);
    json_decref(j);
}

/* Lines, first ids and the last line's type of the NDJSON text. */
static void inspect(const unsigned char *t, size_t len, up_content *c)
{
    size_t start = 0, last = 0, last_len = 0;
    for (size_t i = 0; i < len; i++) {
        if (t[i] != '\n')
            continue;
        size_t n = i - start;
        if (n) {
            c->lines++;
            /* The ids are in the first records (job_start): a few lines are looked at. */
            if (c->lines <= 8 && !c->session_id[0])
                line_member((const char *)t + start, n, "session_id", c->session_id,
                            sizeof c->session_id);
            if (c->lines <= 8 && !c->hostname[0])
                line_member((const char *)t + start, n, "hostname", c->hostname,
                            sizeof c->hostname);
            last = start;
            last_len = n;
        }
        start = i + 1;
    }
    if (start < len) { /* a last line without its newline (a torn write) */
        c->lines++;
        last = start;
        last_len = len - start;
    }
    char type[64] = "";
    if (last_len)
        line_member((const char *)t + last, last_len, "type", type, sizeof type);
    c->ends_with_shutdown = strcmp(type, fl_type_name(FL_T_SHUTDOWN)) == 0;
}

static bool read_text(const char *path, growbuf *b)
{
    gzFile g = gzopen(path, "rb");
    if (!g)
        return false;
    bool ok = true;
    for (;;) {
        if (!gb_reserve(b, 65536)) {
            ok = false;
            break;
        }
        int n = gzread(g, b->p + b->len, 65536);
        if (n < 0) {
            ok = false;
            break;
        }
        if (n == 0)
            break;
        b->len += (size_t)n;
    }
    gzclose(g);
    return ok;
}

static bool read_raw(const char *path, growbuf *b)
{
    FILE *f = fopen(path, "rb");
    if (!f)
        return false;
    size_t n;
    bool ok = true;
    do {
        if (!gb_reserve(b, 65536)) {
            ok = false;
            break;
        }
        n = fread(b->p + b->len, 1, 65536, f);
        b->len += n;
    } while (n > 0);
    ok = ok && !ferror(f);
    fclose(f);
    return ok;
}

static bool gzip_text(const unsigned char *t, size_t len, growbuf *out)
{
    z_stream z;
    memset(&z, 0, sizeof z);
    /* 15 + 16: a gzip wrapper, as Content-Encoding: gzip says. */
    if (deflateInit2(&z, 6, Z_DEFLATED, 15 + 16, 8, Z_DEFAULT_STRATEGY) != Z_OK)
        return false;
    size_t bound = deflateBound(&z, (uLong)len) + 64;
    bool ok = gb_reserve(out, bound);
    if (ok) {
        z.next_in = (unsigned char *)t;
        z.avail_in = (uInt)len;
        z.next_out = out->p;
        z.avail_out = (uInt)bound;
        ok = deflate(&z, Z_FINISH) == Z_STREAM_END;
        out->len = bound - z.avail_out;
    }
    deflateEnd(&z);
    return ok;
}

gpufl_status up_content_load(const up_file *f, up_content *c, gpufl_error *err)
{
    memset(c, 0, sizeof *c);
    growbuf text = {0}, body = {0};
    errno = 0;
    if (!read_text(f->path, &text)) {
        free(text.p);
        return fl_error_set(err, GPUFL_ERR_IO,
                            "cannot read \"%s\" (%s): check the file (a broken gzip window "
                            "cannot be sent)",
                            f->path, errno ? strerror(errno) : "corrupt or out of memory");
    }
    if (text.len > 0xffffffffu) { /* zlib's one-call deflate takes 32-bit lengths */
        free(text.p);
        return fl_error_set(err, GPUFL_ERR_IO,
                            "\"%s\" holds more than 4 GiB of NDJSON: too large for one request; "
                            "record with smaller windows",
                            f->path);
    }
    inspect(text.p, text.len, c);
    c->text_len = text.len;
    bool ok = f->gz ? read_raw(f->path, &body) : gzip_text(text.p, text.len, &body);
    free(text.p);
    if (!ok) {
        free(body.p);
        return fl_error_set(err, GPUFL_ERR_IO, "cannot %s \"%s\"", f->gz ? "read" : "compress",
                            f->path);
    }
    c->body = body.p;
    c->body_len = body.len;
    return GPUFL_OK;
}

void up_content_free(up_content *c)
{
    free(c->body);
    memset(c, 0, sizeof *c);
}

/* ------------------------------------------------------------- cursor */

bool up_cursor_add(up_cursor *c, const char *file, uint64_t bytes)
{
    for (size_t i = 0; i < c->n; i++)
        if (strcmp(c->files[i], file) == 0) {
            c->bytes[i] = bytes;
            return true;
        }
    if (c->n == c->cap) {
        size_t nc = c->cap ? c->cap * 2 : 8;
        char **f = realloc(c->files, nc * sizeof *f);
        if (!f)
            return false;
        c->files = f;
        uint64_t *b = realloc(c->bytes, nc * sizeof *b);
        if (!b)
            return false;
        c->bytes = b;
        c->cap = nc;
    }
    c->files[c->n] = strdup(file);
    if (!c->files[c->n])
        return false;
    c->bytes[c->n++] = bytes;
    return true;
}

bool up_cursor_has(const up_cursor *c, const char *file, uint64_t bytes)
{
    for (size_t i = 0; i < c->n; i++)
        if (strcmp(c->files[i], file) == 0)
            return c->bytes[i] == bytes;
    return false;
}

/* The files of one backend's entry. */
static void entry_files(json_t *entry, up_cursor *c)
{
    size_t i;
    json_t *e;
    json_array_foreach(json_object_get(entry, "uploaded_files"), i, e)
    {
        const char *name = json_string_value(json_object_get(e, "file"));
        json_t *b = json_object_get(e, "bytes");
        if (name && json_is_integer(b) && json_integer_value(b) >= 0)
            up_cursor_add(c, name, (uint64_t)json_integer_value(b));
    }
    c->complete = json_is_true(json_object_get(entry, "session_complete"));
}

void up_cursor_read(const char *dir, const char *backend, up_cursor *c, char *note, size_t cap)
{
    memset(c, 0, sizeof *c);
    if (cap)
        note[0] = '\0';
    json_t *others = json_array();
    c->others = others;
    char path[4096];
    snprintf(path, sizeof path, "%s/%s", dir, UP_CURSOR_NAME);
    if (access(path, F_OK) != 0 || !others)
        return;
    json_error_t je;
    json_t *j = json_load_file(path, 0, &je);
    json_t *all = j ? json_object_get(j, "backends") : NULL;
    if (!json_is_array(all)) {
        /* Schema 1 named no backend: which one took its files is unknown. */
        if (json_is_array(json_object_get(j, "uploaded_files")))
            snprintf(note, cap,
                     "the cursor \"%s\" names no backend (an older version wrote it): every "
                     "file is sent again",
                     path);
        else
            snprintf(note, cap,
                     "the cursor \"%s\" could not be read (%s): every file is sent again", path,
                     j ? "no backends" : je.text);
        json_decref(j);
        return;
    }
    size_t i;
    json_t *e;
    json_array_foreach(all, i, e)
    {
        const char *b = json_string_value(json_object_get(e, "backend"));
        if (!b)
            continue;
        if (strcmp(b, backend) == 0)
            entry_files(e, c);
        else
            json_array_append(others, e);
    }
    json_decref(j);
}

static json_t *cursor_json(const char *backend, const up_cursor *c)
{
    json_t *files = json_array();
    json_t *entry = json_object();
    json_t *all = json_array();
    json_t *root = json_object();
    if (!files || !entry || !all || !root) {
        json_decref(files);
        json_decref(entry);
        json_decref(all);
        json_decref(root);
        return NULL;
    }
    for (size_t i = 0; i < c->n; i++)
        json_array_append_new(
            files, json_pack("{s:s,s:I}", "file", c->files[i], "bytes", (json_int_t)c->bytes[i]));
    json_object_set_new(entry, "backend", json_string(backend));
    json_object_set_new(entry, "uploaded_files", files);
    json_object_set_new(entry, "session_complete", json_boolean(c->complete));
    if (c->others)
        json_array_extend(all, c->others);
    json_array_append_new(all, entry);
    json_object_set_new(root, "schema_version", json_integer(2));
    json_object_set_new(root, "backends", all);
    return root;
}

gpufl_status up_cursor_write(const char *dir, const char *backend, const up_cursor *c,
                             gpufl_error *err)
{
    char path[4096], tmp[4200];
    snprintf(path, sizeof path, "%s/%s", dir, UP_CURSOR_NAME);
    snprintf(tmp, sizeof tmp, "%s.tmp", path);
    json_t *j = cursor_json(backend, c);
    if (!j)
        return fl_error_set(err, GPUFL_ERR_NO_MEMORY, "out of memory writing \"%s\"", path);
    int rc = json_dump_file(j, tmp, JSON_COMPACT);
    json_decref(j);
    if (rc != 0 || rename(tmp, path) != 0) {
        int e = errno;
        unlink(tmp);
        return fl_error_set(err, GPUFL_ERR_IO,
                            "cannot write the upload cursor \"%s\" (%s): the session directory "
                            "must be writable to resume an upload",
                            path, strerror(e));
    }
    return GPUFL_OK;
}

void up_cursor_free(up_cursor *c)
{
    for (size_t i = 0; i < c->n; i++)
        free(c->files[i]);
    free(c->files);
    free(c->bytes);
    json_decref(c->others);
    memset(c, 0, sizeof *c);
}
