/*
 * report/frames.c - gpufl_columns_read(): a session's batches as columns
 * (include/gpufl.h), what gpufl.analyzer builds its DataFrames from
 * without a Python object per row.
 *
 * Promises: one set per batch type read, its columns the union of the
 * batches' columns in first-seen order (dt_ns and ts_ns replaced by one
 * ts_ns = base_time_ns + dt_ns, as gpufl._logs computes it), rows in read
 * order; a cell that is null, or absent from a batch, is invalid (valid 0,
 * data 0), never a 0 that claims to be known; a column with a real is a
 * double column (its integers converted), else int64.  One set per
 * dictionary (id, name: later entries replace earlier ones, as a dict
 * does).  kernel_event_batch gets a "detail" column: codes into the
 * distinct kernel_detail records (compact JSON, corr_id left out) each
 * launch takes by gpufl._logs's rule (docs/gpufl.md).  Whatever has no
 * exact column form (an integer above INT64_MAX, a time past int64, a
 * dictionary key that is not a plain decimal integer, a name that is not
 * a string) clears the set's `exact`, so that the caller reads that table
 * the slow, exact way instead.
 */
#include "../reader/read.h"
#include "../util/error.h"
#include "gpufl.h"

#include <jansson.h>
#include <stdlib.h>
#include <string.h>

#define FR_MAX_COLS 1024 /* columns a set keeps; more is not exact */

/* An open-addressing map of int64 keys to int32 values (ids, corr_ids). */
typedef struct imap {
    int64_t *k;
    int32_t *v; /* -1: empty slot */
    size_t cap, n;
} imap;

static size_t imap_slot(const imap *m, int64_t key)
{
    uint64_t h = (uint64_t)key * 0x9E3779B97F4A7C15ull;
    size_t i = (size_t)(h >> 17) & (m->cap - 1);
    while (m->v[i] >= 0 && m->k[i] != key)
        i = (i + 1) & (m->cap - 1);
    return i;
}

static int32_t imap_get(const imap *m, int64_t key)
{
    return m->cap ? m->v[imap_slot(m, key)] : -1;
}

static bool imap_put(imap *m, int64_t key, int32_t val)
{
    if ((m->n + 1) * 2 > m->cap) {
        imap g = {.cap = m->cap ? m->cap * 2 : 64};
        g.k = malloc(g.cap * sizeof *g.k);
        g.v = malloc(g.cap * sizeof *g.v);
        if (!g.k || !g.v) {
            free(g.k);
            free(g.v);
            return false;
        }
        memset(g.v, 0xff, g.cap * sizeof *g.v);
        for (size_t i = 0; i < m->cap; i++)
            if (m->v[i] >= 0) {
                size_t s = imap_slot(&g, m->k[i]);
                g.k[s] = m->k[i];
                g.v[s] = m->v[i];
                g.n++;
            }
        free(m->k);
        free(m->v);
        *m = g;
    }
    size_t s = imap_slot(m, key);
    if (m->v[s] < 0)
        m->n++;
    m->k[s] = key;
    m->v[s] = val;
    return true;
}

static void imap_free(imap *m)
{
    free(m->k);
    free(m->v);
}

/* Strings interned once: a code per distinct string. */
typedef struct strtab {
    char **s;
    size_t n, cap;
    imap by_hash; /* hash -> first code; collisions chained in next */
    int32_t *next;
} strtab;

static int64_t str_hash(const char *s)
{
    uint64_t h = 1469598103934665603ull;
    for (; *s; s++)
        h = (h ^ (unsigned char)*s) * 1099511628211ull;
    return (int64_t)h;
}

/* The code of s (copied when new); -1 out of memory. */
static int32_t strtab_intern(strtab *t, const char *s)
{
    int64_t h = str_hash(s);
    int32_t c = imap_get(&t->by_hash, h);
    for (int32_t i = c; i >= 0; i = t->next[i])
        if (strcmp(t->s[i], s) == 0)
            return i;
    if (t->n == t->cap) {
        size_t cap = t->cap ? t->cap * 2 : 16;
        char **ns = realloc(t->s, cap * sizeof *ns);
        if (!ns)
            return -1;
        t->s = ns;
        int32_t *nx = realloc(t->next, cap * sizeof *nx);
        if (!nx)
            return -1;
        t->next = nx;
        t->cap = cap;
    }
    char *copy = strdup(s);
    if (!copy || !imap_put(&t->by_hash, h, (int32_t)t->n)) {
        free(copy);
        return -1;
    }
    t->s[t->n] = copy;
    t->next[t->n] = c;
    return (int32_t)t->n++;
}

static void strtab_free(strtab *t)
{
    for (size_t i = 0; i < t->n; i++)
        free(t->s[i]);
    free(t->s);
    free(t->next);
    imap_free(&t->by_hash);
}

/* One column being filled: int64 until a real arrives, then double. */
typedef struct col {
    char *name;
    bool real;
    union {
        int64_t *i;
        double *d;
        void *p;
    };
    uint8_t *valid;
    strtab strings; /* code columns (names, details) */
} col;

typedef struct set {
    char *name;
    fl_type type;
    size_t nrows, cap, ncols;
    col cols[FR_MAX_COLS + 2];
    bool exact;
    bool is_dict;
    imap by_id; /* dictionaries: id -> row */
    gpufl_column_set pub;
    gpufl_column *pubcols;
} set;

struct gpufl_columns {
    set **sets;
    size_t nsets;
    char **want; /* batch types asked for; NULL: all */
    size_t nwant;
    imap detail_by_corr; /* corr_id -> code in details */
    strtab details;      /* kernel_detail records, compact JSON without corr_id */
    bool details_exact;
    gpufl_columns_counts counts;
    const char *oom; /* why the read must stop */
};

static bool grow(set *s, size_t rows)
{
    if (rows <= s->cap)
        return true;
    size_t cap = s->cap ? s->cap : 1024;
    while (cap < rows)
        cap *= 2;
    for (size_t c = 0; c < s->ncols; c++) {
        void *p = realloc(s->cols[c].p, cap * 8);
        if (!p)
            return false;
        s->cols[c].p = p;
        uint8_t *v = realloc(s->cols[c].valid, cap);
        if (!v)
            return false;
        s->cols[c].valid = v;
    }
    s->cap = cap;
    return true;
}

/* The index of column name in s, added (invalid for the rows before) when
 * new; -1 past FR_MAX_COLS (not exact) or out of memory. */
static int col_of(set *s, const char *name)
{
    for (size_t c = 0; c < s->ncols; c++)
        if (strcmp(s->cols[c].name, name) == 0)
            return (int)c;
    if (s->ncols >= FR_MAX_COLS) {
        s->exact = false;
        return -1;
    }
    col *c = &s->cols[s->ncols];
    memset(c, 0, sizeof *c);
    c->name = strdup(name);
    c->p = calloc(s->cap ? s->cap : 1, 8);
    c->valid = calloc(s->cap ? s->cap : 1, 1);
    if (!c->name || !c->p || !c->valid) {
        free(c->name);
        free(c->p);
        free(c->valid);
        return -1;
    }
    return (int)s->ncols++;
}

static set *set_of(gpufl_columns *g, const char *name, fl_type type, bool is_dict)
{
    for (size_t i = 0; i < g->nsets; i++)
        if (g->sets[i]->is_dict == is_dict && strcmp(g->sets[i]->name, name) == 0)
            return g->sets[i];
    set **ns = realloc(g->sets, (g->nsets + 1) * sizeof *ns);
    if (!ns)
        return NULL;
    g->sets = ns;
    set *s = calloc(1, sizeof *s);
    if (!s || !(s->name = strdup(name))) {
        free(s);
        return NULL;
    }
    s->type = type;
    s->exact = true;
    s->is_dict = is_dict;
    g->sets[g->nsets++] = s;
    return s;
}

static void col_to_real(col *c, size_t nrows)
{
    for (size_t r = 0; r < nrows; r++)
        c->d[r] = c->valid[r] ? (double)c->i[r] : 0.0;
    c->real = true;
}

/* One cell into row r of c; false: no exact form (a uint). */
static bool put_cell(col *c, size_t r, const fl_cell *v, size_t nrows)
{
    switch (v->kind) {
    case FL_CELL_INT:
        if (c->real)
            c->d[r] = (double)v->i;
        else
            c->i[r] = v->i;
        c->valid[r] = 1;
        return true;
    case FL_CELL_REAL:
        if (!c->real)
            col_to_real(c, nrows);
        c->d[r] = v->d;
        c->valid[r] = 1;
        return true;
    case FL_CELL_UINT:
        c->i[r] = 0;
        c->valid[r] = 0;
        return false;
    default:
        c->i[r] = 0;
        c->valid[r] = 0;
        return true;
    }
}

static bool wanted(const gpufl_columns *g, const char *type)
{
    if (!g->want)
        return true;
    for (size_t i = 0; i < g->nwant; i++)
        if (strcmp(g->want[i], type) == 0)
            return true;
    return false;
}

/* The batch's ts_ns of row r into c (gpufl._logs: base + dt_ns when both
 * are integers, else base). */
static bool put_ts(col *c, size_t at, const fl_batch *b, int dt, size_t r)
{
    c->valid[at] = 0;
    c->i[at] = 0;
    if (!b->has_base)
        return true;
    if (b->base_time_ns > (uint64_t)INT64_MAX)
        return false;
    int64_t ts = (int64_t)b->base_time_ns;
    const fl_cell *v = dt >= 0 ? &b->cells[r * b->ncols + (size_t)dt] : NULL;
    if (v && v->kind == FL_CELL_UINT)
        return false;
    if (v && v->kind == FL_CELL_INT && __builtin_add_overflow(ts, v->i, &ts))
        return false;
    c->i[at] = ts;
    c->valid[at] = 1;
    return true;
}

static void on_batch(void *user, const fl_batch *b)
{
    gpufl_columns *g = user;
    /* A batch of no rows adds no column (gpufl._logs takes the columns of
     * rows). */
    if (g->oom || !b->type[0] || !b->nrows || !wanted(g, b->type))
        return;
    set *s = set_of(g, b->type, b->type_id, false);
    int ts = s ? col_of(s, "ts_ns") : -1;
    if (!s || ts < 0 || !grow(s, s->nrows + b->nrows)) {
        g->oom = "out of memory for the columns";
        return;
    }
    int map[FR_MAX_COLS];
    int dt = -1;
    size_t nc = b->ncols < FR_MAX_COLS ? b->ncols : FR_MAX_COLS;
    if (b->ncols > FR_MAX_COLS)
        s->exact = false;
    for (size_t c = 0; c < nc; c++) {
        map[c] = -1;
        if (strcmp(b->cols[c], "dt_ns") == 0)
            dt = (int)c;
        else if (strcmp(b->cols[c], "ts_ns") != 0 && (map[c] = col_of(s, b->cols[c])) < 0 &&
                 s->exact) {
            g->oom = "out of memory for the columns";
            return;
        }
    }
    size_t base = s->nrows;
    for (size_t c = 0; c < s->ncols; c++) /* absent from this batch: invalid */
        memset(s->cols[c].valid + base, 0, b->nrows);
    for (size_t c = 0; c < s->ncols; c++)
        memset(s->cols[c].i + base, 0, b->nrows * 8);
    for (size_t c = 0; c < nc; c++) {
        if (map[c] < 0)
            continue;
        col *dst = &s->cols[map[c]];
        const fl_cell *v = b->cells + c;
        if (b->all_ints && !dst->real) {
            for (size_t r = 0; r < b->nrows; r++, v += b->ncols) {
                dst->i[base + r] = v->i;
                dst->valid[base + r] = 1;
            }
            continue;
        }
        for (size_t r = 0; r < b->nrows; r++, v += b->ncols)
            if (!put_cell(dst, base + r, v, base + r))
                s->exact = false;
    }
    for (size_t r = 0; r < b->nrows; r++)
        if (!put_ts(&s->cols[ts], base + r, b, dt, r))
            s->exact = false;
    s->nrows += b->nrows;
}

/* A plain decimal integer key ("-12", "7"), as int() reads it; false for
 * anything int() would read otherwise or refuse. */
static bool dict_key(const char *k, int64_t *out)
{
    const char *p = k;
    if (*p == '-')
        p++;
    if (!*p || strspn(p, "0123456789") != strlen(p) || strlen(p) > 18)
        return false;
    *out = strtoll(k, NULL, 10);
    return true;
}

static void on_dictionary(gpufl_columns *g, json_t *rec)
{
    for (int d = 0; d < FL_DICT_COUNT; d++) {
        json_t *obj = json_object_get(rec, fl_dict_name((fl_dict)d));
        if (!json_is_object(obj))
            continue;
        set *s = set_of(g, fl_dict_name((fl_dict)d), FL_T_UNKNOWN, true);
        if (!s || (!s->ncols && (col_of(s, "id") != 0 || col_of(s, "name") != 1))) {
            g->oom = "out of memory for the dictionaries";
            return;
        }
        const char *k;
        json_t *v;
        json_object_foreach(obj, k, v)
        {
            int64_t id;
            if (!dict_key(k, &id) || !json_is_string(v)) {
                /* int() might read it, or the name is no string: not ours to guess */
                s->exact = false;
                continue;
            }
            int32_t code = strtab_intern(&s->cols[1].strings, json_string_value(v));
            int32_t row = imap_get(&s->by_id, id);
            if (row < 0) {
                row = (int32_t)s->nrows;
                if (code < 0 || !grow(s, s->nrows + 1) || !imap_put(&s->by_id, id, row)) {
                    g->oom = "out of memory for the dictionaries";
                    return;
                }
                s->nrows++;
            }
            s->cols[0].i[row] = id;
            s->cols[0].valid[row] = 1;
            s->cols[1].i[row] = code; /* a code; int32 once finished */
            s->cols[1].valid[row] = 1;
        }
    }
}

/* A kernel_detail's corr_id as Python's dict would match it to a batch's
 * integer corr_id (an integral real or a bool does; a string never). */
static bool detail_corr(json_t *v, int64_t *out)
{
    if (json_is_integer(v))
        *out = json_integer_value(v);
    else if (json_is_boolean(v))
        *out = json_is_true(v);
    else if (json_is_real(v) && json_real_value(v) == (double)(int64_t)json_real_value(v))
        *out = (int64_t)json_real_value(v);
    else
        return false;
    return true;
}

static void on_detail(gpufl_columns *g, json_t *rec)
{
    json_t *corr = json_object_get(rec, "corr_id");
    int64_t id;
    if (!corr || json_is_null(corr))
        return;
    if (!detail_corr(corr, &id)) {
        g->details_exact = false;
        return;
    }
    json_t *copy = json_copy(rec);
    char *text = NULL;
    if (copy) {
        json_object_del(copy, "corr_id");
        text = json_dumps(copy, JSON_COMPACT | JSON_SORT_KEYS);
        json_decref(copy);
    }
    int32_t code = text ? strtab_intern(&g->details, text) : -1;
    free(text);
    if (code < 0 || !imap_put(&g->detail_by_corr, id, code))
        g->oom = "out of memory for the kernel details";
}

static void on_record(void *user, int channel, fl_type t, const char *type, json_t *rec)
{
    (void)channel;
    (void)type;
    gpufl_columns *g = user;
    if (g->oom)
        return;
    if (t == FL_T_DICTIONARY_UPDATE)
        on_dictionary(g, rec);
    else if (t == FL_T_KERNEL_DETAIL)
        on_detail(g, rec);
}

static const char *on_stop(void *user)
{
    return ((gpufl_columns *)user)->oom;
}

static void on_warning(void *user, const char *file, uint64_t line, const char *msg)
{
    (void)user;
    (void)file;
    (void)line;
    (void)msg; /* counted in the result; the report says them */
}

/* The "detail" column of the kernels: gpufl._logs's rule - a launch with
 * has_details takes the detail of its corr_id when there is one, and it
 * stays its kernel's detail in force for the launches after. */
static bool join_details(gpufl_columns *g, set *s)
{
    int kid = -1, corr = -1, has = -1;
    for (size_t c = 0; c < s->ncols; c++) {
        const char *n = s->cols[c].name;
        if (strcmp(n, GPUFL_COLUMNS_DETAIL) == 0 ||
            (s->cols[c].real && (strcmp(n, "kernel_id") == 0 || strcmp(n, "corr_id") == 0 ||
                                 strcmp(n, "has_details") == 0)))
            s->exact = false; /* a real key matches as Python's == does: not ours */
        kid = strcmp(n, "kernel_id") == 0 ? (int)c : kid;
        corr = strcmp(n, "corr_id") == 0 ? (int)c : corr;
        has = strcmp(n, "has_details") == 0 ? (int)c : has;
    }
    if (!g->details_exact)
        s->exact = false;
    int d = col_of(s, GPUFL_COLUMNS_DETAIL);
    if (d < 0)
        return !s->exact || s->ncols >= FR_MAX_COLS;
    col *dc = &s->cols[d];
    int32_t *codes = (int32_t *)dc->p;
    imap current = {0};
    int32_t current_none = -1; /* the launches without a kernel_id */
    for (size_t r = 0; r < s->nrows; r++) {
        bool k_ok = kid >= 0 && s->cols[kid].valid[r];
        int64_t k = k_ok ? s->cols[kid].i[r] : 0;
        if (has >= 0 && s->cols[has].valid[r] && s->cols[has].i[r] && corr >= 0 &&
            s->cols[corr].valid[r]) {
            int32_t code = imap_get(&g->detail_by_corr, s->cols[corr].i[r]);
            if (code >= 0) {
                if (!k_ok)
                    current_none = code;
                else if (!imap_put(&current, k, code)) {
                    imap_free(&current);
                    return false;
                }
            }
        }
        int32_t code = k_ok ? imap_get(&current, k) : current_none;
        codes[r] = code < 0 ? 0 : code;
        dc->valid[r] = code >= 0;
    }
    imap_free(&current);
    dc->strings = g->details; /* shared: freed with g, never with the column */
    return true;
}

/* The public view of s; its code columns narrowed to int32. */
static bool publish(set *s)
{
    s->pubcols = calloc(s->ncols ? s->ncols : 1, sizeof *s->pubcols);
    if (!s->pubcols)
        return false;
    for (size_t c = 0; c < s->ncols; c++) {
        col *k = &s->cols[c];
        bool codes = k->strings.n > 0 || strcmp(k->name, GPUFL_COLUMNS_DETAIL) == 0 ||
                     (s->is_dict && c == 1);
        if (codes && !(strcmp(k->name, GPUFL_COLUMNS_DETAIL) == 0)) {
            int32_t *n = (int32_t *)k->p; /* in place: r * 4 <= r * 8 */
            for (size_t r = 0; r < s->nrows; r++)
                n[r] = (int32_t)k->i[r];
        }
        s->pubcols[c] = (gpufl_column){
            .name = k->name,
            .kind = codes     ? GPUFL_COLUMN_CODES
                    : k->real ? GPUFL_COLUMN_DOUBLE
                              : GPUFL_COLUMN_INT64,
            .data = k->p,
            .valid = k->valid,
            .strings = (const char *const *)k->strings.s,
            .nstrings = k->strings.n,
        };
    }
    s->pub = (gpufl_column_set){.name = s->name,
                                .nrows = s->nrows,
                                .ncols = s->ncols,
                                .cols = s->pubcols,
                                .exact = s->exact};
    return true;
}

static void set_free(set *s, const gpufl_columns *g)
{
    for (size_t c = 0; c < s->ncols; c++) {
        free(s->cols[c].name);
        free(s->cols[c].p);
        free(s->cols[c].valid);
        if (s->cols[c].strings.s != g->details.s)
            strtab_free(&s->cols[c].strings);
    }
    imap_free(&s->by_id);
    free(s->pubcols);
    free(s->name);
    free(s);
}

void gpufl_columns_free(gpufl_columns *g)
{
    if (!g)
        return;
    for (size_t i = 0; i < g->nsets; i++)
        set_free(g->sets[i], g);
    free(g->sets);
    for (size_t i = 0; i < g->nwant; i++)
        free(g->want[i]);
    free(g->want);
    imap_free(&g->detail_by_corr);
    strtab_free(&g->details);
    free(g);
}

void gpufl_columns_options_init(gpufl_columns_options *o)
{
    if (o)
        memset(o, 0, sizeof *o);
}

/* o->batches ("a,b,c") into g->want; false out of memory. */
static bool want_list(gpufl_columns *g, const char *list)
{
    if (!list)
        return true;
    g->want = calloc(strlen(list) / 2 + 2, sizeof *g->want);
    if (!g->want)
        return false;
    for (const char *p = list; *p;) {
        size_t n = strcspn(p, ",");
        if (n && !(g->want[g->nwant++] = strndup(p, n)))
            return false;
        p += n + (p[n] == ',');
    }
    return true;
}

static void take_counts(gpufl_columns *g, const fl_read_result *res)
{
    gpufl_columns_counts *c = &g->counts;
    snprintf(c->session_id, sizeof c->session_id, "%s", res->session_id);
    c->files = res->files;
    c->lines = res->lines;
    c->bad_lines = res->bad_lines;
    c->bad_records = res->bad_records;
    c->other_session_records = res->other_session;
    c->gz_errors = res->gz_errors;
    c->unreadable_files = res->unreadable_files;
    c->bad_windows = res->bad_windows;
    c->unknown_types = res->unknown_types;
    c->unpublished_files = res->tmp_files;
    c->lost_windows = res->lost_windows;
    c->capped_files = res->capped_files;
    c->session_capped = res->session_capped;
}

gpufl_status gpufl_columns_read(const char *path, const gpufl_columns_options *opts,
                                gpufl_columns **out, gpufl_error *err)
{
    fl_error_clear(err);
    if (out)
        *out = NULL;
    if (!path || !*path || !out)
        return fl_error_set(err, GPUFL_ERR_INVALID_ARG,
                            "gpufl_columns_read: %s: pass a log directory, a session directory "
                            "or a flat-layout prefix, and the address of a gpufl_columns *",
                            !out   ? "out is NULL"
                            : path ? "path is empty"
                                   : "path is NULL");
    gpufl_columns_options d;
    gpufl_columns_options_init(&d);
    if (!opts)
        opts = &d;
    gpufl_columns *g = calloc(1, sizeof *g);
    if (!g || !want_list(g, opts->batches)) {
        gpufl_columns_free(g);
        return fl_error_set(err, GPUFL_ERR_NO_MEMORY, "gpufl_columns_read: out of memory");
    }
    g->details_exact = true;
    if (gpufl_is_active())
        gpufl_flush(); /* what this process recorded so far is read too */
    fl_read_opts ro;
    fl_read_opts_init(&ro);
    ro.session_id = opts->session_id && *opts->session_id ? opts->session_id : NULL;
    ro.one_file_per_channel = opts->one_file_per_channel;
    fl_read_cb cb = {
        .user = g, .record = on_record, .batch = on_batch, .warning = on_warning, .stop = on_stop};
    fl_read_result *res = calloc(1, sizeof *res);
    gp_error ge = {0};
    gp_status st = res ? fl_read_session_prefixed(
                             path, opts->log_prefix && *opts->log_prefix ? opts->log_prefix : NULL,
                             &ro, &cb, res, &ge)
                       : GP_ERR_NO_MEMORY;
    if (st != GP_OK) {
        free(res);
        gpufl_columns_free(g);
        return ge.message[0]
                   ? fl_error_from_gp(err, &ge, "gpufl_columns_read")
                   : fl_error_set(err, fl_status_from_gp(st), "gpufl_columns_read: out of memory");
    }
    take_counts(g, res);
    free(res);
    bool ok = true;
    for (size_t i = 0; ok && i < g->nsets; i++) {
        if (g->sets[i]->type == FL_T_KERNEL_EVENT_BATCH && !g->sets[i]->is_dict)
            ok = join_details(g, g->sets[i]);
        ok = ok && publish(g->sets[i]);
    }
    if (!ok) {
        gpufl_columns_free(g);
        return fl_error_set(err, GPUFL_ERR_NO_MEMORY, "gpufl_columns_read: out of memory");
    }
    *out = g;
    return GPUFL_OK;
}

size_t gpufl_columns_count(const gpufl_columns *g)
{
    return g ? g->nsets : 0;
}

const gpufl_column_set *gpufl_columns_at(const gpufl_columns *g, size_t i)
{
    return g && i < g->nsets ? &g->sets[i]->pub : NULL;
}

const gpufl_column_set *gpufl_columns_find(const gpufl_columns *g, const char *name)
{
    for (size_t i = 0; g && name && i < g->nsets; i++)
        if (strcmp(g->sets[i]->name, name) == 0)
            return &g->sets[i]->pub;
    return NULL;
}

const gpufl_columns_counts *gpufl_columns_counts_of(const gpufl_columns *g)
{
    return g ? &g->counts : NULL;
}
