/*
 * recorder/config.c - the flight recorder's options, resolved (config.h).
 *
 * Promises:
 *  - gpufl_init_options_init() fills the seed's InitOptions defaults.
 *  - fl_config_resolve() merges, field by field and highest first: a value
 *    set in code (different from its default; NULL or "" strings are "left
 *    at default"), a GPUFL_* environment variable (an empty one is unset),
 *    the JSON config_file (an empty string there is unset too), the default.
 *    GPUFL_DISABLED is looked at before anything else and enabled = false in
 *    code returns before any file is opened.
 *  - Every failure returns a status and a message that names the input
 *    (variable, file with line and column, key, field) and the fix; out is
 *    then left zeroed, and fl_config_free() on it is a no-op.
 *  - Nothing is printed; the library never exits or aborts here.
 */
#include "config.h"
#include "../util/buf.h"
#include "../util/error.h"
#include "../util/text.h"
#include "gpufl.h"

#include <errno.h>
#include <jansson.h>
#include <limits.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* Enum fields are copied through int with memcpy (code may pass any int). */
_Static_assert(sizeof(gpufl_backend_kind) == sizeof(int), "backend enum is int-sized");
_Static_assert(sizeof(gpufl_engine) == sizeof(int), "engine enum is int-sized");

#define N_OF(a) (sizeof(a) / sizeof((a)[0]))

static const char remote_upload_warning[] =
    "remote_upload is deprecated (GPUFlight v1.1, removed in v1.2) and has no effect: "
    "live upload was removed; upload a finished session's logs instead";

void gpufl_init_options_init(gpufl_init_options *opts)
{
    if (!opts)
        return;
    memset(opts, 0, sizeof *opts);
    opts->app_name = "gpufl";
    opts->log_path = "";
    opts->backend_url = "";
    opts->api_key = "";
    opts->api_path = "";
    opts->remote_upload = false;
    opts->enable_stack_trace = false;
    opts->enable_source_collection = true;
    opts->enable_external_correlation = true;
    opts->enable_synchronization = true;
    opts->enable_memory_tracking = false;
    opts->enable_cuda_graphs_tracking = false;
    opts->system_sample_rate_ms = 0;
    opts->kernel_sample_rate_ms = 0;
    opts->continuous_system_sampling = false;
    opts->backend = GPUFL_BACKEND_AUTO;
    opts->profiling_engine = GPUFL_ENGINE_MONITOR;
    opts->config_file = "";
    opts->flush_logs_always = false;
    opts->enable_debug_output = false;
    opts->enabled = true;
    opts->log_fn = NULL;
    opts->log_user = NULL;
}

/* ------------------------------------------------------------ the table */

enum ftype { FT_STR, FT_BOOL, FT_INT, FT_BACKEND, FT_ENGINE };
enum fsrc { SRC_DEFAULT, SRC_CONFIG, SRC_ENV, SRC_CODE };

#define NO_OUT ((size_t)-1)

/* One row per option, in the struct's order, so the known-key list and the
 * provenance read like the documentation.  config_file and enabled are rows
 * too (for code and the key list) but take special paths below. */
typedef struct field {
    const char *name;
    enum ftype type;
    size_t opt_off;
    size_t out_off; /* NO_OUT: not carried into fl_config (enabled) */
    const char *env;
} field;

#define OPT(f) offsetof(gpufl_init_options, f)
#define OUT(f) offsetof(fl_config, f)

static const field fields[] = {
    {"app_name", FT_STR, OPT(app_name), OUT(app_name), NULL},
    {"log_path", FT_STR, OPT(log_path), OUT(log_path), NULL},
    {"backend_url", FT_STR, OPT(backend_url), OUT(backend_url), "GPUFL_BACKEND_URL"},
    {"api_key", FT_STR, OPT(api_key), OUT(api_key), "GPUFL_API_KEY"},
    {"api_path", FT_STR, OPT(api_path), OUT(api_path), "GPUFL_API_PATH"},
    {"remote_upload", FT_BOOL, OPT(remote_upload), OUT(remote_upload), "GPUFL_REMOTE_UPLOAD"},
    {"enable_stack_trace", FT_BOOL, OPT(enable_stack_trace), OUT(enable_stack_trace), NULL},
    {"enable_source_collection", FT_BOOL, OPT(enable_source_collection),
     OUT(enable_source_collection), NULL},
    {"enable_external_correlation", FT_BOOL, OPT(enable_external_correlation),
     OUT(enable_external_correlation), NULL},
    {"enable_synchronization", FT_BOOL, OPT(enable_synchronization), OUT(enable_synchronization),
     NULL},
    {"enable_memory_tracking", FT_BOOL, OPT(enable_memory_tracking), OUT(enable_memory_tracking),
     NULL},
    {"enable_cuda_graphs_tracking", FT_BOOL, OPT(enable_cuda_graphs_tracking),
     OUT(enable_cuda_graphs_tracking), NULL},
    {"system_sample_rate_ms", FT_INT, OPT(system_sample_rate_ms), OUT(system_sample_rate_ms), NULL},
    {"kernel_sample_rate_ms", FT_INT, OPT(kernel_sample_rate_ms), OUT(kernel_sample_rate_ms), NULL},
    {"continuous_system_sampling", FT_BOOL, OPT(continuous_system_sampling),
     OUT(continuous_system_sampling), NULL},
    {"backend", FT_BACKEND, OPT(backend), OUT(backend), NULL},
    {"profiling_engine", FT_ENGINE, OPT(profiling_engine), OUT(profiling_engine),
     "GPUFL_PROFILING_ENGINE"},
    {"config_file", FT_STR, OPT(config_file), OUT(config_file), "GPUFL_CONFIG_FILE"},
    {"flush_logs_always", FT_BOOL, OPT(flush_logs_always), OUT(flush_logs_always), NULL},
    {"enable_debug_output", FT_BOOL, OPT(enable_debug_output), OUT(enable_debug_output), NULL},
    {"enabled", FT_BOOL, OPT(enabled), NO_OUT, NULL},
    {"cupti_buffer_kib", FT_INT, OPT(cupti_buffer_kib), OUT(cupti_buffer_kib),
     "GPUFL_CUPTI_BUFFER_KIB"},
    {"cupti_max_buffers", FT_INT, OPT(cupti_max_buffers), OUT(cupti_max_buffers),
     "GPUFL_CUPTI_MAX_BUFFERS"},
};

enum { NF = (int)N_OF(fields) };

static int field_index(const char *name)
{
    for (int i = 0; i < NF; i++)
        if (strcmp(fields[i].name, name) == 0)
            return i;
    return -1;
}

/* A field's value while the layers are applied.  Strings are borrowed (from
 * opts, the environment or the parsed JSON) until they are copied out. */
typedef struct fval {
    enum fsrc src;
    const char *s;
    bool b;
    int i;
} fval;

static void read_opt(const gpufl_init_options *o, const field *f, fval *v)
{
    const char *base = (const char *)o + f->opt_off;
    switch (f->type) {
    case FT_STR:
        v->s = *(const char *const *)(const void *)base;
        break;
    case FT_BOOL:
        v->b = *(const bool *)(const void *)base;
        break;
    case FT_INT:
        v->i = *(const int *)(const void *)base;
        break;
    case FT_BACKEND:
    case FT_ENGINE:
        memcpy(&v->i, base, sizeof v->i);
        break;
    }
}

/* "Set in code" means different from the default; a string that is NULL or
 * "" is left at default whatever the default is. */
static bool differs(const field *f, const fval *code, const fval *def)
{
    switch (f->type) {
    case FT_STR:
        return code->s && code->s[0] && strcmp(code->s, def->s) != 0;
    case FT_BOOL:
        return code->b != def->b;
    default:
        return code->i != def->i;
    }
}

/* ---------------------------------------------------- the config file */

/* A top-level key of the config text and the byte offset of its opening
 * quote: jansson reports positions only for errors, so problems with valid
 * JSON are located from here. */
typedef struct keypos {
    char *name;
    size_t off;
} keypos;

typedef struct keylist {
    keypos *k;
    size_t n, cap;
} keylist;

static void keys_free(keylist *l)
{
    for (size_t i = 0; i < l->n; i++)
        free(l->k[i].name);
    free(l->k);
    memset(l, 0, sizeof *l);
}

static bool keys_add(keylist *l, char *name, size_t off)
{
    if (l->n == l->cap) {
        size_t cap = l->cap ? l->cap * 2 : 32;
        keypos *k = realloc(l->k, cap * sizeof *k);
        if (!k)
            return false;
        l->k = k;
        l->cap = cap;
    }
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
static bool scan_keys(const char *t, size_t len, keylist *out)
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

typedef struct cfile {
    const char *path;
    char *text;
    size_t len;
    json_t *root;
    keylist keys;
} cfile;

static void cfile_free(cfile *f)
{
    free(f->text);
    json_decref(f->root);
    keys_free(&f->keys);
    memset(f, 0, sizeof *f);
}

static gpufl_status cfail(gpufl_error *err, const cfile *f, size_t off, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));
static gpufl_status cfail(gpufl_error *err, const cfile *f, size_t off, const char *fmt, ...)
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
static size_t key_offset(const cfile *f, const char *key)
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

static gpufl_status read_text(const char *path, bool from_env, char **text, size_t *len,
                              gpufl_error *err)
{
    const char *via = from_env ? " (named by GPUFL_CONFIG_FILE)" : "";
    char ebuf[128]; /* strerror_r: init may run beside other threads */
    FILE *fp = fopen(path, "rb");
    if (!fp && errno == ENOMEM)
        return fl_error_set(err, GPUFL_ERR_NO_MEMORY,
                            "config file \"%s\": out of memory opening it", path);
    if (!fp)
        return fl_error_set(err, GPUFL_ERR_CONFIG,
                            "config file \"%s\"%s cannot be read: %s; check the path", path, via,
                            strerror_r(errno, ebuf, sizeof ebuf));
    char *buf = NULL;
    size_t n = 0, cap = 0;
    for (;;) {
        if (cap - n < 4096) {
            size_t ncap = cap ? cap * 2 : 8192;
            char *p = realloc(buf, ncap + 1);
            if (!p) {
                free(buf);
                fclose(fp);
                return fl_error_set(err, GPUFL_ERR_NO_MEMORY,
                                    "config file \"%s\": out of memory reading it", path);
            }
            buf = p;
            cap = ncap;
        }
        size_t got = fread(buf + n, 1, cap - n, fp);
        n += got;
        if (got == 0) {
            if (ferror(fp)) {
                int e = errno;
                free(buf);
                fclose(fp);
                return fl_error_set(err, GPUFL_ERR_CONFIG,
                                    "config file \"%s\"%s cannot be read: %s; check the path", path,
                                    via, strerror_r(e, ebuf, sizeof ebuf));
            }
            break;
        }
    }
    fclose(fp);
    buf[n] = '\0';
    *text = buf;
    *len = n;
    return GPUFL_OK;
}

static const char *const backend_list = "Auto, Nvidia, Amd, None";
static const char *const engine_list =
    "Monitor, Trace, PcSampling, SassMetrics, RangeProfiler, Deep";

static void known_keys(char *buf, size_t cap)
{
    size_t n = 0;
    buf[0] = '\0';
    for (int i = 0; i < NF; i++) {
        if (strcmp(fields[i].name, "config_file") == 0)
            continue;
        int w = snprintf(buf + n, cap - n, "%s%s", n ? ", " : "", fields[i].name);
        if (w < 0 || (size_t)w >= cap - n)
            return;
        n += (size_t)w;
    }
}

/* Checks one key's value and stores it in v as SRC_CONFIG. */
static gpufl_status apply_key(const cfile *f, const char *key, json_t *val, fval *v,
                              gpufl_error *err)
{
    size_t off = key_offset(f, key);
    if (strcmp(key, "config_file") == 0)
        return cfail(err, f, off,
                     "key \"config_file\" is not allowed inside a config file: remove it and set "
                     "config_file in code or GPUFL_CONFIG_FILE instead");
    int idx = field_index(key);
    if (idx < 0) {
        char list[768];
        known_keys(list, sizeof list);
        return cfail(err, f, off, "unknown key \"%s\": use one of %s", key, list);
    }
    const field *fd = &fields[idx];
    fval *dst = &v[idx];
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
        const char *list = fd->type == FT_BACKEND ? backend_list : engine_list;
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

/* Reads, parses and applies the config file into v.  GPUFL_DISABLED when it
 * says "enabled": false (code cannot have said false: that returned earlier). */
static gpufl_status load_config(cfile *f, bool from_env, fval *v, gpufl_error *err)
{
    gpufl_status st = read_text(f->path, from_env, &f->text, &f->len, err);
    if (st != GPUFL_OK)
        return st;

    size_t first = 0;
    while (first < f->len && is_ws(f->text[first]))
        first++;
    if (first == f->len)
        return cfail(err, f, first,
                     "the file is empty: write a JSON object of options, e.g. {\"app_name\": "
                     "\"train\"}");

    json_error_t jerr;
    /* DECODE_ANY so a scalar top level gets the "not an object" message below
     * rather than a parse error. */
    const size_t flags = JSON_REJECT_DUPLICATES | JSON_DECODE_ANY;
    f->root = json_loadb(f->text, f->len, flags, &jerr);
    if (!f->root) {
        enum json_error_code code = json_error_code(&jerr);
        /* jansson leaves the error blank when one of its own allocations
         * fails, and a failed allocation in its lexer reads as a syntax
         * error.  A fault in the file reproduces exactly; anything else is
         * memory, not the user's file. */
        bool oom = code == json_error_out_of_memory || jerr.text[0] == '\0';
        if (!oom) {
            json_error_t again;
            f->root = json_loadb(f->text, f->len, flags, &again);
            oom = f->root || again.position != jerr.position || strcmp(again.text, jerr.text);
            json_decref(f->root);
            f->root = NULL;
        }
        if (oom)
            return fl_error_set(err, GPUFL_ERR_NO_MEMORY, "config file \"%s\": out of memory",
                                f->path);
        if (code == json_error_duplicate_key) {
            /* jansson stops just after the repeated key: the last top-level
             * key before that point is it, unless the duplicate is nested. */
            if (!scan_keys(f->text, f->len, &f->keys))
                return fl_error_set(err, GPUFL_ERR_NO_MEMORY, "config file \"%s\": out of memory",
                                    f->path);
            size_t pos = jerr.position > 0 ? (size_t)jerr.position : 0;
            const keypos *dup = NULL;
            for (size_t i = 0; i < f->keys.n && f->keys.k[i].off < pos; i++)
                dup = &f->keys.k[i];
            if (dup) {
                for (const keypos *k = f->keys.k; k < dup; k++) {
                    if (strcmp(k->name, dup->name) == 0) {
                        int line, col;
                        offset_pos(f->text, k->off, &line, &col);
                        return cfail(err, f, dup->off,
                                     "duplicate key \"%s\" (first at line %d, column %d): keep "
                                     "only one of them",
                                     dup->name, line, col);
                    }
                }
            }
        }
        /* jansson quotes the text near the error, which may be the api key
         * (an unterminated string, say): drop the quote when a key is near. */
        char *near = strstr(jerr.text, " near '");
        if (near && memmem(f->text, f->len, "api_key", 7))
            *near = '\0';
        int col = jerr.column > 0 ? jerr.column : 1;
        int line = jerr.line > 0 ? jerr.line : 1;
        return fl_error_set(err, GPUFL_ERR_CONFIG,
                            "config file \"%s\", line %d, column %d: malformed JSON: %s; write "
                            "one JSON object of options",
                            f->path, line, col, jerr.text);
    }
    if (!json_is_object(f->root))
        return cfail(err, f, first,
                     "the top level is %s: expected a JSON object of options, e.g. "
                     "{\"app_name\": \"train\"}",
                     json_kind(f->root));
    if (!scan_keys(f->text, f->len, &f->keys))
        return fl_error_set(err, GPUFL_ERR_NO_MEMORY, "config file \"%s\": out of memory", f->path);

    /* In file order, so the first problem reported is the first in the file. */
    for (size_t i = 0; i < f->keys.n; i++) {
        const char *key = f->keys.k[i].name;
        json_t *val = json_object_get(f->root, key);
        if (!val)
            continue;
        st = apply_key(f, key, val, v, err);
        if (st != GPUFL_OK)
            return st;
    }
    /* Belt and braces: any key the scanner missed is still checked. */
    const char *key;
    json_t *val;
    json_object_foreach(f->root, key, val)
    {
        st = apply_key(f, key, val, v, err);
        if (st != GPUFL_OK)
            return st;
    }
    int en = field_index("enabled");
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

/* ------------------------------------------------------ the environment */

/* getenv with "empty is unset". */
static const char *env_value(const char *name)
{
    const char *s = getenv(name);
    return s && *s ? s : NULL;
}

static gpufl_status apply_env(const field *fd, fval *dst, gpufl_error *err)
{
    const char *s = env_value(fd->env);
    if (!s)
        return GPUFL_OK;
    switch (fd->type) {
    case FT_STR:
        dst->s = s;
        break;
    case FT_BOOL: {
        int b = fl_parse_bool(s);
        if (b < 0)
            return fl_error_set(err, GPUFL_ERR_ENV,
                                "%s=\"%s\" is not a boolean: use one of 1, true, yes, on, 0, "
                                "false, no, off (any case)",
                                fd->env, s);
        dst->b = b == 1;
        break;
    }
    case FT_ENGINE: {
        gpufl_engine e = GPUFL_ENGINE_MONITOR;
        if (gpufl_engine_parse(s, &e) != GPUFL_OK)
            return fl_error_set(err, GPUFL_ERR_ENV, "%s=\"%s\" is not an engine: use one of %s",
                                fd->env, s, engine_list);
        dst->i = (int)e;
        break;
    }
    case FT_INT: {
        char *end = NULL;
        errno = 0;
        long v = strtol(s, &end, 10);
        if (errno || end == s || *end || v < INT_MIN || v > INT_MAX)
            return fl_error_set(err, GPUFL_ERR_ENV, "%s=\"%s\" is not a whole number", fd->env, s);
        dst->i = (int)v;
        break;
    }
    case FT_BACKEND:
        /* No environment variable of this type exists. */
        return GPUFL_OK;
    }
    dst->src = SRC_ENV;
    return GPUFL_OK;
}

/* ------------------------------------------------------------- resolve */

void fl_config_free(fl_config *c)
{
    if (!c)
        return;
    free(c->app_name);
    free(c->log_path);
    free(c->backend_url);
    free(c->api_key);
    free(c->api_path);
    free(c->config_file);
    for (int i = 0; i < FL_MAX_WARNINGS; i++)
        free(c->warnings[i]);
    free(c->provenance);
    memset(c, 0, sizeof *c);
}

static const char *src_text(const fval *v, const field *fd, const char *cfg_path, char *buf,
                            size_t cap)
{
    switch (v->src) {
    case SRC_CODE:
        return "code";
    case SRC_ENV:
        snprintf(buf, cap, "env %s", fd->env);
        return buf;
    case SRC_CONFIG:
        snprintf(buf, cap, "config %s", cfg_path);
        return buf;
    case SRC_DEFAULT:
        break;
    }
    return "default";
}

static gpufl_status validate(const fval *v, const char *cfg_path, gpufl_error *err)
{
    char src[GPUFL_ERROR_MESSAGE_MAX];
    for (int i = 0; i < NF; i++) {
        const field *fd = &fields[i];
        const fval *x = &v[i];
        const char *from = src_text(x, fd, cfg_path, src, sizeof src);
        if (fd->type == FT_INT && strncmp(fd->name, "cupti_", 6) == 0) {
            int hi = strcmp(fd->name, "cupti_max_buffers") == 0 ? FL_CUPTI_MAX_BUFFERS
                                                                : FL_CUPTI_MAX_BUFFER_KIB;
            if (x->i < 0 || x->i > hi)
                return fl_error_set(err, GPUFL_ERR_INVALID_ARG,
                                    "%s = %d (%s) is out of range: use 0 (the default) or a "
                                    "value up to %d",
                                    fd->name, x->i, from, hi);
            continue;
        }
        if (fd->type == FT_INT && x->i < 0)
            return fl_error_set(err, GPUFL_ERR_INVALID_ARG,
                                "%s = %d (%s) is negative: use 0 (off) or a period in "
                                "milliseconds",
                                fd->name, x->i, from);
        if (fd->type == FT_BACKEND && !gpufl_backend_name((gpufl_backend_kind)x->i))
            return fl_error_set(err, GPUFL_ERR_INVALID_ARG,
                                "%s = %d (%s) is not a backend: use one of GPUFL_BACKEND_AUTO, "
                                "GPUFL_BACKEND_NVIDIA, GPUFL_BACKEND_AMD, GPUFL_BACKEND_NONE",
                                fd->name, x->i, from);
        if (fd->type == FT_ENGINE && !gpufl_engine_name((gpufl_engine)x->i))
            return fl_error_set(err, GPUFL_ERR_INVALID_ARG,
                                "%s = %d (%s) is not an engine: use one of GPUFL_ENGINE_MONITOR, "
                                "GPUFL_ENGINE_TRACE, GPUFL_ENGINE_PC_SAMPLING, "
                                "GPUFL_ENGINE_SASS_METRICS, GPUFL_ENGINE_RANGE_PROFILER, "
                                "GPUFL_ENGINE_DEEP",
                                fd->name, x->i, from);
    }
    /* app_name names the default log directory and appears in every
     * record: a '/' would make it a path, a control character breaks lines
     * and terminals. */
    int an = field_index("app_name");
    const char *name = v[an].s;
    const char *from = src_text(&v[an], &fields[an], cfg_path, src, sizeof src);
    if (strchr(name, '/'))
        return fl_error_set(err, GPUFL_ERR_INVALID_ARG,
                            "app_name \"%s\" (%s) contains '/': use a plain name and set "
                            "log_path for the directory",
                            name, from);
    for (const unsigned char *p = (const unsigned char *)name; *p; p++)
        if (*p < 0x20 || *p == 0x7f)
            return fl_error_set(err, GPUFL_ERR_INVALID_ARG,
                                "app_name (%s) contains a control character (0x%02x): use "
                                "printable characters only",
                                from, *p);
    return GPUFL_OK;
}

/* log_path: app_name when empty, then a trailing ".log" dropped (the seed's
 * default was "<app_name>.log", a file; here it is the base directory). */
static char *resolve_log_path(const char *log_path, const char *app_name)
{
    const char *base = log_path && *log_path ? log_path : app_name;
    size_t n = strlen(base);
    if (n > 4 && strcmp(base + n - 4, ".log") == 0)
        n -= 4;
    return strndup(base, n);
}

static gpufl_status build_out(const fval *v, const char *cfg_path, const gpufl_init_options *o,
                              fl_config *out)
{
    for (int i = 0; i < NF; i++) {
        const field *fd = &fields[i];
        if (fd->out_off == NO_OUT)
            continue;
        char *base = (char *)out + fd->out_off;
        switch (fd->type) {
        case FT_STR: {
            char *s;
            if (strcmp(fd->name, "log_path") == 0)
                s = resolve_log_path(v[i].s, v[field_index("app_name")].s);
            else if (strcmp(fd->name, "api_path") == 0 && !*v[i].s)
                s = strdup("/api/v1");
            else if (strcmp(fd->name, "config_file") == 0)
                s = strdup(cfg_path ? cfg_path : "");
            else
                s = strdup(v[i].s);
            if (!s)
                return GPUFL_ERR_NO_MEMORY;
            *(char **)(void *)base = s;
            break;
        }
        case FT_BOOL:
            *(bool *)(void *)base = v[i].b;
            break;
        case FT_INT:
            *(int *)(void *)base = v[i].i;
            break;
        case FT_BACKEND:
        case FT_ENGINE:
            memcpy(base, &v[i].i, sizeof v[i].i);
            break;
        }
    }
    out->log_fn = o->log_fn;
    out->log_user = o->log_user;

    if (out->remote_upload) {
        out->warnings[out->n_warnings] = strdup(remote_upload_warning);
        if (!out->warnings[out->n_warnings])
            return GPUFL_ERR_NO_MEMORY;
        out->n_warnings++;
    }

    fl_buf pb = {0};
    for (int i = 0; i < NF; i++) {
        const field *fd = &fields[i];
        if (fd->out_off == NO_OUT || v[i].src == SRC_DEFAULT)
            continue;
        const char *base = (const char *)out + fd->out_off;
        fl_buf_printf(&pb, "  %s = ", fd->name);
        switch (fd->type) {
        case FT_STR:
            /* The key is a secret: its presence is all debug output gets. */
            fl_buf_printf(&pb, "%s",
                          strcmp(fd->name, "api_key") == 0 ? "<set>"
                                                           : *(char *const *)(const void *)base);
            break;
        case FT_BOOL:
            fl_buf_printf(&pb, "%s", v[i].b ? "true" : "false");
            break;
        case FT_INT:
            fl_buf_printf(&pb, "%d", v[i].i);
            break;
        case FT_BACKEND:
            fl_buf_printf(&pb, "%s", gpufl_backend_name((gpufl_backend_kind)v[i].i));
            break;
        case FT_ENGINE:
            fl_buf_printf(&pb, "%s", gpufl_engine_name((gpufl_engine)v[i].i));
            break;
        }
        if (v[i].src == SRC_CODE)
            fl_buf_printf(&pb, " (code)");
        else if (v[i].src == SRC_ENV)
            fl_buf_printf(&pb, " (env %s)", fd->env);
        else
            fl_buf_printf(&pb, " (config %s)", cfg_path);
        fl_buf_printf(&pb, "%s\n",
                      strcmp(fd->name, "kernel_sample_rate_ms") == 0 ? " - deprecated, no effect"
                                                                     : "");
    }
    out->provenance = fl_buf_take(&pb);
    if (!out->provenance)
        return GPUFL_ERR_NO_MEMORY;
    return GPUFL_OK;
}

gpufl_status fl_config_resolve(const gpufl_init_options *opts, fl_config *out, gpufl_error *err)
{
    if (!out)
        return fl_error_set(err, GPUFL_ERR_INVALID_ARG, "fl_config_resolve: out is NULL");
    memset(out, 0, sizeof *out);

    /* 1. The kill switch, before anything can fail or touch the disk. */
    const char *dis = env_value("GPUFL_DISABLED");
    if (dis) {
        int b = fl_parse_bool(dis);
        if (b < 0)
            return fl_error_set(err, GPUFL_ERR_ENV,
                                "GPUFL_DISABLED=\"%s\" is not a boolean: use 1, true, yes or on "
                                "to disable the recorder, 0, false, no or off (or unset it) to "
                                "keep it on (any case)",
                                dis);
        if (b == 1)
            return fl_error_set(err, GPUFL_DISABLED,
                                "GPUFL_DISABLED=%s: the recorder is off, nothing was started", dis);
    }

    gpufl_init_options defaults;
    gpufl_init_options_init(&defaults);
    const gpufl_init_options *o = opts ? opts : &defaults;

    /* 2. Disabled in code: return before any file or variable is read. */
    if (!o->enabled)
        return fl_error_set(err, GPUFL_DISABLED,
                            "enabled = false in code: the recorder is off, nothing was started");

    fval def[NF], code[NF], v[NF];
    memset(def, 0, sizeof def);
    memset(code, 0, sizeof code);
    for (int i = 0; i < NF; i++) {
        read_opt(&defaults, &fields[i], &def[i]);
        def[i].src = SRC_DEFAULT;
        read_opt(o, &fields[i], &code[i]);
        code[i].src = SRC_CODE;
    }
    memcpy(v, def, sizeof v);

    /* 3. The config file: code's config_file, else GPUFL_CONFIG_FILE. */
    int cf = field_index("config_file");
    bool cf_env = false;
    if (differs(&fields[cf], &code[cf], &v[cf])) {
        v[cf] = code[cf];
    } else if (env_value("GPUFL_CONFIG_FILE")) {
        v[cf].s = env_value("GPUFL_CONFIG_FILE");
        v[cf].src = SRC_ENV;
        cf_env = true;
    }
    const char *cfg_path = v[cf].src != SRC_DEFAULT ? v[cf].s : NULL;

    cfile file = {0};
    gpufl_status st = GPUFL_OK;
    if (cfg_path) {
        file.path = cfg_path;
        st = load_config(&file, cf_env, v, err);
        if (st != GPUFL_OK)
            goto done;
    }

    /* 4. Environment over config, code over environment. */
    for (int i = 0; i < NF; i++) {
        if (!fields[i].env || i == cf)
            continue;
        st = apply_env(&fields[i], &v[i], err);
        if (st != GPUFL_OK)
            goto done;
    }
    for (int i = 0; i < NF; i++) {
        if (i == cf || fields[i].out_off == NO_OUT)
            continue;
        if (differs(&fields[i], &code[i], &def[i]))
            v[i] = code[i];
    }

    /* 5. */
    st = validate(v, cfg_path, err);
    if (st != GPUFL_OK)
        goto done;

    st = build_out(v, cfg_path, o, out);
    if (st == GPUFL_ERR_NO_MEMORY)
        fl_error_set(err, st, "out of memory resolving the options");
    else
        fl_error_set(err, GPUFL_OK, "%s", "");

done:
    /* Strings in v borrow from the parsed file: build_out copied them. */
    cfile_free(&file);
    if (st != GPUFL_OK)
        fl_config_free(out);
    return st;
}
