/*
 * recorder/config_file.c - the config file: one JSON object of options.
 *
 * Promises: the file is checked whole before any of it counts: a key that
 * is unknown, repeated or of the wrong type, a value out of range and
 * malformed JSON each fail with the file, line, column and the fix; an
 * empty string is "left at default", as in code and the environment; a
 * failed allocation is reported as memory, never blamed on the file; the
 * text near a syntax error is not quoted when an API key is set anywhere
 * or the file names one in any spelling (config.c then removes any key
 * value from whatever message is left); only a regular file of at most
 * FL_CONFIG_FILE_MAX bytes is read (a FIFO, a device such as /dev/zero,
 * a socket or a directory is refused without blocking on it).
 */
#include "config_file.h"
#include "../util/buf.h"
#include "../util/error.h"
#include "../util/fs.h"

#include <errno.h>
#include <fcntl.h>
#include <jansson.h>
#include <limits.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

/* DECODE_ANY so a scalar top level gets the "not an object" message rather
 * than a parse error. */
#define PARSE_FLAGS (JSON_REJECT_DUPLICATES | JSON_DECODE_ANY)

/* ------------------------------------------------------------- the keys */

static void keys_free(fl_keylist *l)
{
    for (size_t i = 0; i < l->n; i++)
        free(l->k[i].name);
    free(l->k);
    memset(l, 0, sizeof *l);
}

static bool keys_add(fl_keylist *l, char *name, size_t off)
{
    if (fl_grow((void **)&l->k, &l->cap, l->n + 1, sizeof *l->k) != 0)
        return false;
    l->k[l->n].name = name;
    l->k[l->n].off = off;
    l->n++;
    return true;
}

static bool is_ws(char c)
{
    return c == ' ' || c == '\t' || c == '\n' || c == '\r';
}

/* Index just past the string literal starting at t[i] == '"' (or len). */
static size_t skip_string(const char *t, size_t len, size_t i)
{
    for (i++; i < len; i++) {
        if (t[i] == '\\')
            i++;
        else if (t[i] == '"')
            return i + 1;
    }
    return len;
}

/* The key's text; escapes are rare in keys, so only then is jansson asked
 * to decode the literal.  NULL on an allocation failure. */
static char *decode_key(const char *lit, size_t n)
{
    if (!memchr(lit, '\\', n)) {
        char *s = malloc(n - 1);
        if (s) {
            memcpy(s, lit + 1, n - 2);
            s[n - 2] = '\0';
        }
        return s;
    }
    json_t *j = json_loadb(lit, n, JSON_DECODE_ANY, NULL);
    char *s = NULL;
    if (j && json_is_string(j))
        s = strdup(json_string_value(j));
    else
        s = strndup(lit + 1, n - 2);
    json_decref(j);
    return s;
}

/* Lists the keys of the top-level object: a string at depth 1 followed by
 * ':' is a key.  Strings are skipped whole, so brackets inside them do not
 * count.  Only called on text jansson accepted or rejected for a duplicate,
 * i.e. well-formed up to the point of interest. */
static bool scan_keys(const char *t, size_t len, fl_keylist *out)
{
    int depth = 0;
    size_t i = 0;
    while (i < len) {
        char c = t[i];
        if (c == '"') {
            size_t end = skip_string(t, len, i);
            if (depth == 1 && end - i >= 2) {
                size_t j = end;
                while (j < len && is_ws(t[j]))
                    j++;
                if (j < len && t[j] == ':') {
                    char *name = decode_key(t + i, end - i);
                    if (!name || !keys_add(out, name, i)) {
                        free(name);
                        return false;
                    }
                }
            }
            i = end;
            continue;
        }
        if (c == '{' || c == '[')
            depth++;
        else if (c == '}' || c == ']')
            depth--;
        i++;
    }
    return true;
}

/* 1-based line and column of byte offset off; columns count characters
 * (UTF-8 lead bytes), as jansson's do. */
static void offset_pos(const char *t, size_t off, int *line, int *col)
{
    int l = 1, c = 0;
    for (size_t i = 0; i < off; i++) {
        if (t[i] == '\n') {
            l++;
            c = 0;
        } else if (((unsigned char)t[i] & 0xC0) != 0x80) {
            c++;
        }
    }
    *line = l;
    *col = c + 1;
}

/* ------------------------------------------------------------- the file */

void fl_config_file_free(fl_config_file *f)
{
    free(f->text);
    json_decref(f->root);
    keys_free(&f->keys);
    memset(f, 0, sizeof *f);
}

static gpufl_status cfail(gpufl_error *err, const fl_config_file *f, size_t off, const char *fmt,
                          ...) __attribute__((format(printf, 4, 5)));
static gpufl_status cfail(gpufl_error *err, const fl_config_file *f, size_t off, const char *fmt,
                          ...)
{
    char msg[GPUFL_ERROR_MESSAGE_MAX];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    int line, col;
    offset_pos(f->text, off, &line, &col);
    return fl_error_set(err, GPUFL_ERR_CONFIG, "config file \"%s\", line %d, column %d: %s",
                        f->path, line, col, msg);
}

/* Where key sits in the file; a key jansson returned is always listed, the
 * fallback only guards against a scanner bug. */
static size_t key_offset(const fl_config_file *f, const char *key)
{
    for (size_t i = 0; i < f->keys.n; i++)
        if (strcmp(f->keys.k[i].name, key) == 0)
            return f->keys.k[i].off;
    return 0;
}

static const char *json_kind(const json_t *j)
{
    switch (json_typeof(j)) {
    case JSON_OBJECT:
        return "an object";
    case JSON_ARRAY:
        return "an array";
    case JSON_STRING:
        return "a string";
    case JSON_INTEGER:
        return "an integer";
    case JSON_REAL:
        return "a real number";
    case JSON_TRUE:
    case JSON_FALSE:
        return "a boolean";
    case JSON_NULL:
        return "null";
    }
    return "an unknown value";
}

/* Opens path to read: a regular file of at most FL_CONFIG_FILE_MAX bytes
 * (O_NONBLOCK: a FIFO without a writer does not block the open). */
static gpufl_status open_config(const char *path, const char *via, int *fd, gpufl_error *err)
{
    char ebuf[128]; /* strerror_r: init may run beside other threads */
    *fd = open(path, O_RDONLY | O_CLOEXEC | O_NONBLOCK);
    if (*fd < 0 && errno == ENOMEM)
        return fl_error_set(err, GPUFL_ERR_NO_MEMORY,
                            "config file \"%s\": out of memory opening it", path);
    if (*fd < 0)
        return fl_error_set(err, GPUFL_ERR_CONFIG,
                            "config file \"%s\"%s cannot be read: %s; check the path", path, via,
                            strerror_r(errno, ebuf, sizeof ebuf));
    struct stat st;
    const char *why = NULL;
    if (fstat(*fd, &st) != 0)
        why = strerror_r(errno, ebuf, sizeof ebuf);
    else if (!S_ISREG(st.st_mode))
        why = fl_file_kind(st.st_mode);
    if (why) {
        close(*fd);
        return fl_error_set(err, GPUFL_ERR_CONFIG,
                            "config file \"%s\"%s cannot be read: %s, not a regular file; name a "
                            "JSON file",
                            path, via, why);
    }
    if ((uint64_t)st.st_size > FL_CONFIG_FILE_MAX) {
        close(*fd);
        return fl_error_set(err, GPUFL_ERR_CONFIG,
                            "config file \"%s\"%s is %llu bytes, more than the %u bytes (1 MiB) a "
                            "config file may have; check the path",
                            path, via, (unsigned long long)st.st_size, FL_CONFIG_FILE_MAX);
    }
    int fl = fcntl(*fd, F_GETFL);
    if (fl >= 0)
        (void)fcntl(*fd, F_SETFL, fl & ~O_NONBLOCK);
    return GPUFL_OK;
}

static gpufl_status read_text(const char *path, bool from_env, char **text, size_t *len,
                              gpufl_error *err)
{
    const char *via = from_env ? " (named by GPUFL_CONFIG_FILE)" : "";
    char ebuf[128];
    int fd;
    gpufl_status st = open_config(path, via, &fd, err);
    if (st != GPUFL_OK)
        return st;
    /* One byte more than the cap: a file that grew past it since fstat. */
    char *buf = malloc((size_t)FL_CONFIG_FILE_MAX + 2);
    if (!buf) {
        close(fd);
        return fl_error_set(err, GPUFL_ERR_NO_MEMORY,
                            "config file \"%s\": out of memory reading it", path);
    }
    size_t n = 0;
    while (n <= FL_CONFIG_FILE_MAX) {
        ssize_t got = read(fd, buf + n, (size_t)FL_CONFIG_FILE_MAX + 1 - n);
        if (got < 0 && errno == EINTR)
            continue;
        if (got < 0) {
            int e = errno;
            free(buf);
            close(fd);
            return fl_error_set(err, GPUFL_ERR_CONFIG,
                                "config file \"%s\"%s cannot be read: %s; check the path", path,
                                via, strerror_r(e, ebuf, sizeof ebuf));
        }
        if (got == 0)
            break;
        n += (size_t)got;
    }
    close(fd);
    if (n > FL_CONFIG_FILE_MAX) {
        free(buf);
        return fl_error_set(err, GPUFL_ERR_CONFIG,
                            "config file \"%s\"%s is more than the %u bytes (1 MiB) a config "
                            "file may have; check the path",
                            path, via, FL_CONFIG_FILE_MAX);
    }
    buf[n] = '\0';
    *text = buf;
    *len = n;
    return GPUFL_OK;
}

/* ------------------------------------------------------- the key checks */

static void known_keys(char *buf, size_t cap)
{
    size_t n = 0;
    buf[0] = '\0';
    for (int i = 0; i < FL_NFIELDS; i++) {
        if (strcmp(fl_config_fields[i].name, "config_file") == 0)
            continue;
        int w = snprintf(buf + n, cap - n, "%s%s", n ? ", " : "", fl_config_fields[i].name);
        if (w < 0 || (size_t)w >= cap - n)
            return;
        n += (size_t)w;
    }
}

/* Checks one key's value and stores it in v as SRC_CONFIG. */
static gpufl_status apply_key(const fl_config_file *f, const char *key, json_t *val, fl_fval *v,
                              gpufl_error *err)
{
    size_t off = key_offset(f, key);
    if (strcmp(key, "config_file") == 0)
        return cfail(err, f, off,
                     "key \"config_file\" is not allowed inside a config file: remove it and set "
                     "config_file in code or GPUFL_CONFIG_FILE instead");
    int idx = fl_config_field_index(key);
    if (idx < 0) {
        char list[768];
        known_keys(list, sizeof list);
        return cfail(err, f, off, "unknown key \"%s\": use one of %s", key, list);
    }
    const fl_field *fd = &fl_config_fields[idx];
    fl_fval *dst = &v[idx];
    switch (fd->type) {
    case FT_STR:
        if (!json_is_string(val))
            return cfail(err, f, off, "key \"%s\" has the wrong type: expected a string, got %s",
                         key, json_kind(val));
        /* "" is "left at default" here as in code and the environment. */
        if (json_string_length(val) > 0) {
            dst->s = json_string_value(val);
            dst->src = SRC_CONFIG;
        }
        return GPUFL_OK;
    case FT_BOOL:
        if (!json_is_boolean(val))
            return cfail(err, f, off,
                         "key \"%s\" has the wrong type: expected true or false, got %s", key,
                         json_kind(val));
        dst->b = json_is_true(val);
        dst->src = SRC_CONFIG;
        return GPUFL_OK;
    case FT_INT: {
        if (!json_is_integer(val))
            return cfail(err, f, off,
                         "key \"%s\" has the wrong type: expected an integer in 0..%d, got %s", key,
                         INT_MAX, json_kind(val));
        json_int_t n = json_integer_value(val);
        if (n < 0 || n > INT_MAX)
            return cfail(err, f, off,
                         "key \"%s\" is out of range: %" JSON_INTEGER_FORMAT
                         "; expected an integer in 0..%d",
                         key, n, INT_MAX);
        dst->i = (int)n;
        dst->src = SRC_CONFIG;
        return GPUFL_OK;
    }
    case FT_BACKEND:
    case FT_ENGINE: {
        const char *list = fd->type == FT_BACKEND ? fl_config_backend_list : fl_config_engine_list;
        if (!json_is_string(val))
            return cfail(err, f, off,
                         "key \"%s\" has the wrong type: expected a string, one of %s, got %s", key,
                         list, json_kind(val));
        const char *s = json_string_value(val);
        gpufl_status st;
        if (fd->type == FT_BACKEND) {
            gpufl_backend_kind k = GPUFL_BACKEND_AUTO;
            st = gpufl_backend_parse(s, &k);
            dst->i = (int)k;
        } else {
            gpufl_engine e = GPUFL_ENGINE_MONITOR;
            st = gpufl_engine_parse(s, &e);
            dst->i = (int)e;
        }
        if (st != GPUFL_OK)
            return cfail(err, f, off,
                         "key \"%s\" has an unknown value \"%s\": expected one of %s (any case)",
                         key, s, list);
        dst->src = SRC_CONFIG;
        return GPUFL_OK;
    }
    }
    return GPUFL_OK;
}

/* Every key checked and applied: in file order, so the first problem
 * reported is the first in the file. */
static gpufl_status apply_keys(const fl_config_file *f, fl_fval *v, gpufl_error *err)
{
    for (size_t i = 0; i < f->keys.n; i++) {
        const char *key = f->keys.k[i].name;
        json_t *val = json_object_get(f->root, key);
        if (!val)
            continue;
        gpufl_status st = apply_key(f, key, val, v, err);
        if (st != GPUFL_OK)
            return st;
    }
    /* Belt and braces: any key the scanner missed is still checked. */
    const char *key;
    json_t *val;
    json_object_foreach(f->root, key, val)
    {
        gpufl_status st = apply_key(f, key, val, v, err);
        if (st != GPUFL_OK)
            return st;
    }
    return GPUFL_OK;
}

/* "enabled": false in the file turns the recorder off. */
static gpufl_status check_enabled(const fl_config_file *f, const fl_fval *v, gpufl_error *err)
{
    int en = fl_config_field_index("enabled");
    if (v[en].src == SRC_CONFIG && !v[en].b) {
        int line, col;
        offset_pos(f->text, key_offset(f, "enabled"), &line, &col);
        return fl_error_set(err, GPUFL_DISABLED,
                            "config file \"%s\", line %d, column %d: \"enabled\" is false: the "
                            "recorder is off, nothing was started",
                            f->path, line, col);
    }
    return GPUFL_OK;
}

/* ------------------------------------------------------------ the parse */

/* jansson leaves the error blank when one of its own allocations fails,
 * and a failed allocation in its lexer reads as a syntax error.  A fault
 * in the file reproduces exactly; anything else is memory, not the user's
 * file. */
static bool failed_for_memory(fl_config_file *f, const json_error_t *jerr)
{
    bool oom = json_error_code(jerr) == json_error_out_of_memory || jerr->text[0] == '\0';
    if (!oom) {
        json_error_t again;
        f->root = json_loadb(f->text, f->len, PARSE_FLAGS, &again);
        oom = f->root || again.position != jerr->position || strcmp(again.text, jerr->text);
        json_decref(f->root);
        f->root = NULL;
    }
    return oom;
}

/* A repeated top-level key, named with both places.  jansson stops just
 * after the repeated key: the last top-level key before that point is it,
 * unless the duplicate is nested (GPUFL_OK then: jansson's own message
 * says it). */
static gpufl_status duplicate_key(fl_config_file *f, const json_error_t *jerr, gpufl_error *err)
{
    if (!scan_keys(f->text, f->len, &f->keys))
        return fl_error_set(err, GPUFL_ERR_NO_MEMORY, "config file \"%s\": out of memory", f->path);
    size_t pos = jerr->position > 0 ? (size_t)jerr->position : 0;
    const fl_keypos *dup = NULL;
    for (size_t i = 0; i < f->keys.n && f->keys.k[i].off < pos; i++)
        dup = &f->keys.k[i];
    if (!dup)
        return GPUFL_OK;
    for (const fl_keypos *k = f->keys.k; k < dup; k++) {
        if (strcmp(k->name, dup->name) == 0) {
            int line, col;
            offset_pos(f->text, k->off, &line, &col);
            return cfail(err, f, dup->off,
                         "duplicate key \"%s\" (first at line %d, column %d): keep only one of "
                         "them",
                         dup->name, line, col);
        }
    }
    return GPUFL_OK;
}

/* Whether some string literal of the text, once its escapes are decoded
 * ("api\u005fkey"), is "api_key" - wherever it is and whatever follows. */
static bool names_api_key(const char *t, size_t len)
{
    for (size_t i = 0; i < len; i++) {
        if (t[i] != '"')
            continue;
        size_t end = skip_string(t, len, i);
        bool hit = false;
        if (end - i >= 2 && end - i < 64) {
            char *name = decode_key(t + i, end - i);
            hit = !name || strcmp(name, "api_key") == 0; /* no memory: assume so */
            free(name);
        }
        if (hit)
            return true;
        i = end - 1;
    }
    return false;
}

/* jansson's own account of a syntax error, with its place. */
static gpufl_status malformed(const fl_config_file *f, json_error_t *jerr, gpufl_error *err)
{
    /* jansson quotes the text near the error, which may be (a part of) the
     * API key - an unterminated string, a control character in it: no
     * quote when a key is set anywhere or the file names one, in any
     * spelling.  The line and column still say where. */
    char *near = strstr(jerr->text, " near '");
    if (near && (f->hide_quotes || names_api_key(f->text, f->len)))
        *near = '\0';
    int col = jerr->column > 0 ? jerr->column : 1;
    int line = jerr->line > 0 ? jerr->line : 1;
    return fl_error_set(err, GPUFL_ERR_CONFIG,
                        "config file \"%s\", line %d, column %d: malformed JSON: %s; write "
                        "one JSON object of options",
                        f->path, line, col, jerr->text);
}

/* f->root from the text, or the error that explains why not. */
static gpufl_status parse(fl_config_file *f, gpufl_error *err)
{
    json_error_t jerr;
    f->root = json_loadb(f->text, f->len, PARSE_FLAGS, &jerr);
    if (f->root)
        return GPUFL_OK;
    enum json_error_code code = json_error_code(&jerr);
    if (failed_for_memory(f, &jerr))
        return fl_error_set(err, GPUFL_ERR_NO_MEMORY, "config file \"%s\": out of memory", f->path);
    if (code == json_error_duplicate_key) {
        gpufl_status st = duplicate_key(f, &jerr, err);
        if (st != GPUFL_OK)
            return st;
    }
    return malformed(f, &jerr, err);
}

const char *fl_config_file_api_key(const fl_config_file *f)
{
    json_t *k = f->root ? json_object_get(f->root, "api_key") : NULL;
    return json_is_string(k) ? json_string_value(k) : NULL;
}

gpufl_status fl_config_file_load(fl_config_file *f, bool from_env, fl_fval v[FL_NFIELDS],
                                 gpufl_error *err)
{
    gpufl_status st = read_text(f->path, from_env, &f->text, &f->len, err);
    if (st != GPUFL_OK)
        return st;
    return fl_config_file_apply_text(f, v, err);
}

gpufl_status fl_config_file_apply_text(fl_config_file *f, fl_fval v[FL_NFIELDS], gpufl_error *err)
{
    gpufl_status st;

    size_t first = 0;
    while (first < f->len && is_ws(f->text[first]))
        first++;
    if (first == f->len)
        return cfail(err, f, first,
                     "the file is empty: write a JSON object of options, e.g. {\"app_name\": "
                     "\"train\"}");
    st = parse(f, err);
    if (st != GPUFL_OK)
        return st;
    if (!json_is_object(f->root))
        return cfail(err, f, first,
                     "the top level is %s: expected a JSON object of options, e.g. "
                     "{\"app_name\": \"train\"}",
                     json_kind(f->root));
    if (!scan_keys(f->text, f->len, &f->keys))
        return fl_error_set(err, GPUFL_ERR_NO_MEMORY, "config file \"%s\": out of memory", f->path);
    st = apply_keys(f, v, err);
    if (st != GPUFL_OK)
        return st;
    return check_enabled(f, v, err);
}
