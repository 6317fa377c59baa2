/*
 * reader/batch.c - a columnar batch line (`*_batch`) into an fl_batch:
 * the batches are nearly all of a trace's bytes, so they do not go through
 * jansson but through a scanner that validates the whole line as JSON
 * (reader/scan.h) and parses "rows" straight into cells (reader/rows.c).
 * It reads the envelope's keys in any order (those it does not use are
 * skipped, validated), and maps the batch's columns to the vocabulary's
 * (wire/vocab.h) so that consumers find them by id.
 */
#include "read_int.h"

#include <stdlib.h>
#include <string.h>

/* The writer's order is tried first, so the usual batch costs one compare
 * a column. */
void fl_batch_map_columns(fl_batch *b)
{
    for (int i = 0; i < FL_MAX_COLS; i++)
        b->col[i] = -1;
    b->type_id = fl_type_of(b->type, strlen(b->type));
    const fl_type_info *ti = fl_type_get(b->type_id);
    if (!ti->batch) {
        b->type_id = FL_T_UNKNOWN;
        return;
    }
    for (size_t i = 0; i < b->ncols && i < INT16_MAX; i++) {
        const char *c = b->cols[i];
        size_t k = i < ti->ncols && strcmp(ti->cols[i], c) == 0 ? i : SIZE_MAX;
        for (size_t j = 0; k == SIZE_MAX && j < ti->ncols; j++)
            if (strcmp(ti->cols[j], c) == 0)
                k = j;
        /* A duplicated name: the first one counts, as fl_batch_col finds it. */
        if (k != SIZE_MAX && b->col[k] < 0)
            b->col[k] = (int16_t)i;
    }
}

/* p at '"': the string appended to r->str as a string of its own (its
 * NUL kept); *off: where it starts. */
static const char *scan_own_str(rd *r, scan *s, const char *p, size_t *off)
{
    *off = r->str.len;
    p = fl_scan_str(s, p, &r->str);
    if (!p)
        return NULL;
    if (!fl_sb_reserve(&r->str, 1))
        return scan_fail(s, p, "out of memory");
    r->str.p[r->str.len++] = '\0';
    return p;
}

/* p at the value of "columns": names appended to r->str, offsets to
 * r->col_off. */
static const char *scan_columns(rd *r, scan *s, const char *p, size_t *ncols)
{
    size_t n = 0;
    if (*p != '[') {
        fl_scan_rec_err(s, "\"columns\" is not an array");
        return fl_skip_value(s, p);
    }
    p = skip_ws(p + 1);
    if (*p == ']') {
        *ncols = 0;
        return p + 1;
    }
    for (;;) {
        if (*p == '"') {
            if (n == r->col_cap) {
                size_t c = r->col_cap ? r->col_cap * 2 : 32;
                size_t *o = realloc(r->col_off, c * sizeof *o);
                if (!o)
                    return scan_fail(s, p, "out of memory");
                r->col_off = o;
                const char **cs = realloc(r->cols, c * sizeof *cs);
                if (!cs)
                    return scan_fail(s, p, "out of memory");
                r->cols = cs;
                r->col_cap = c;
            }
            p = scan_own_str(r, s, p, &r->col_off[n++]);
            if (!p)
                return NULL;
        } else {
            fl_scan_rec_err(s, "column %zu is not a string", n + 1);
            p = fl_skip_value(s, p);
            if (!p)
                return NULL;
        }
        int next = scan_next(&p, ']');
        if (next > 0)
            continue;
        if (next == 0) {
            *ncols = n;
            return p;
        }
        return scan_fail(s, p, "expected ',' or ']' in \"columns\"");
    }
}

/* A string value of the envelope into r->str: its offset, or SIZE_MAX. */
static const char *scan_env_str(rd *r, scan *s, const char *p, size_t *off, const char *name,
                                bool null_ok)
{
    if (*p == '"')
        return scan_own_str(r, s, p, off);
    if (!(null_ok && *p == 'n'))
        fl_scan_rec_err(s, "\"%s\" is not a string", name);
    return fl_skip_value(s, p);
}

static const char *scan_env_u64(scan *s, const char *p, uint64_t *v, const char *name)
{
    if (*p == '-' || is_digit(*p)) {
        fl_cell c;
        p = fl_scan_num(s, p, &c);
        if (p && (c.kind == FL_CELL_UINT || (c.kind == FL_CELL_INT && c.i >= 0)))
            *v = c.u;
        else if (p)
            fl_scan_rec_err(s, "\"%s\" is not a non-negative integer", name);
        return p;
    }
    fl_scan_rec_err(s, "\"%s\" is not a non-negative integer", name);
    return fl_skip_value(s, p);
}

enum {
    K_TYPE = 1,
    K_SID = 2,
    K_BID = 4,
    K_BASE = 8,
    K_COLS = 16,
    K_ROWS = 32,
    K_HOST = 64,
};

/* The header keys a batch names; any other key is skipped. */
static const struct {
    const char *name;
    size_t len;
    int id;
} batch_keys[] = {
    {"type", 4, K_TYPE},          {"rows", 4, K_ROWS},     {"columns", 7, K_COLS},
    {"batch_id", 8, K_BID},       {"hostname", 8, K_HOST}, {"session_id", 10, K_SID},
    {"base_time_ns", 12, K_BASE},
};

static int key_id(const char *k, size_t n)
{
    for (size_t i = 0; i < sizeof batch_keys / sizeof batch_keys[0]; i++)
        if (batch_keys[i].len == n && memcmp(k, batch_keys[i].name, n) == 0)
            return batch_keys[i].id;
    return 0;
}

/* A `*_batch` line (NUL at line[len]).  0: delivered. */

/* What the envelope of a batch line holds: its strings as offsets in
 * r->str (SIZE_MAX: absent), its numbers, its rows, and the keys seen
 * (K_*). */
typedef struct envelope {
    size_t o_type, o_sid, o_host;
    uint64_t bid, base;
    size_t ncols, nrows, ncells;
    size_t rows_len; /* the values of each row; SIZE_MAX: not known */
    unsigned seen;
} envelope;

/* p at the value of the key id (K_*, 0: a key the reader does not use)
 * into e. */
static inline const char *scan_member(rd *r, scan *s, const char *line, const char *p, int id,
                                      envelope *e)
{
    switch (id) {
    case K_TYPE:
        return scan_env_str(r, s, p, &e->o_type, "type", false);
    case K_SID:
        return scan_env_str(r, s, p, &e->o_sid, "session_id", false);
    case K_HOST:
        return scan_env_str(r, s, p, &e->o_host, "hostname", true);
    case K_BID:
        return scan_env_u64(s, p, &e->bid, "batch_id");
    case K_BASE:
        return scan_env_u64(s, p, &e->base, "base_time_ns");
    case K_COLS:
        return scan_columns(r, s, p, &e->ncols);
    case K_ROWS: {
        size_t rl = SIZE_MAX;
        p = fl_rd_scan_rows(r, s, line, p, (e->seen & K_COLS) ? e->ncols : SIZE_MAX, &e->nrows,
                            &e->ncells);
        if (p && e->nrows)
            rl = e->ncells / e->nrows;
        e->rows_len = rl;
        return p;
    }
    default:
        return fl_skip_value(s, p);
    }
}

/* The line (NUL at line[len]) as one JSON object, its members into e.
 * Returns its end, NULL when the line is not JSON (s->err says why). */
static inline const char *scan_envelope(rd *r, scan *s, const char *line, size_t len, envelope *e)
{
    const char *p = skip_ws(line);
    if (*p != '{')
        return scan_fail(s, p, "not an object");
    p = skip_ws(p + 1);
    if (*p == '}') {
        p++;
    } else {
        for (;;) {
            if (*p != '"')
                return scan_fail(s, p, "expected a key");
            const char *k;
            size_t kn;
            p = fl_scan_key(&r->key, s, p, &k, &kn);
            if (!p)
                return NULL;
            int id = key_id(k, kn);
            p = skip_ws(p);
            if (*p != ':')
                return scan_fail(s, p, "expected ':'");
            p = skip_ws(p + 1);
            if (id) {
                if (e->seen & (unsigned)id)
                    return scan_fail(s, p, "duplicate key");
                e->seen |= (unsigned)id;
            }
            p = scan_member(r, s, line, p, id, e);
            if (!p)
                return NULL;
            int next = scan_next(&p, '}');
            if (next > 0)
                continue;
            if (next == 0)
                break;
            return scan_fail(s, p, *p ? "expected ',' or '}'" : "unexpected end of line");
        }
    }
    p = skip_ws(p);
    if (p != line + len)
        return scan_fail(s, p, "text after the object");
    return p;
}

/* Valid JSON: whether the batch is to be delivered.  Another session's is
 * dropped whatever it holds; one that is not a usable batch is counted in
 * bad_records with a warning. */
static inline bool batch_usable(rd *r, scan *s, const envelope *e)
{
    const char *sid = e->o_sid != SIZE_MAX ? r->str.p + e->o_sid : NULL;
    if (sid && r->want && strcmp(sid, r->want) != 0) {
        r->res->other_session++;
        return false;
    }
    if (!(e->seen & K_COLS))
        fl_scan_rec_err(s, "no \"columns\"");
    else if (!(e->seen & K_ROWS))
        fl_scan_rec_err(s, "no \"rows\"");
    else if (e->nrows && e->rows_len != e->ncols)
        fl_scan_rec_err(s, "rows have %zu values, the batch has %zu columns", e->rows_len,
                        e->ncols);
    if (s->rec[0]) {
        r->res->bad_records++;
        fl_rd_warn(r, "bad %s: %s; batch skipped",
                   e->o_type != SIZE_MAX ? r->str.p + e->o_type : "batch", s->rec);
        return false;
    }
    return true;
}

/* The batch, its cells in r->cells, to the batch callback. */
static inline void deliver_batch(rd *r, const envelope *e)
{
    for (size_t i = 0; i < e->ncols; i++)
        r->cols[i] = r->str.p + r->col_off[i];
    fl_batch b = {
        .type = e->o_type != SIZE_MAX ? r->str.p + e->o_type : "",
        .channel = r->channel,
        .batch_id = e->bid,
        .base_time_ns = e->base,
        .ncols = e->ncols,
        .cols = e->ncols ? r->cols : NULL,
        .nrows = e->nrows,
        .cells = r->cells,
        .all_ints = !r->any_kind,
        .has_base = (e->seen & K_BASE) != 0,
        .hostname = e->o_host != SIZE_MAX ? r->str.p + e->o_host : NULL,
        .file = r->file,
        .line = r->line,
    };
    fl_batch_map_columns(&b);
    if (b.type_id == FL_T_UNKNOWN)
        r->res->unknown_types++;
    if (r->cb && r->cb->batch)
        r->cb->batch(r->cb->user, &b);
}

int fl_rd_parse_batch(rd *r, const char *line, size_t len)
{
    scan s = {0};
    envelope e = {.o_type = SIZE_MAX, .o_sid = SIZE_MAX, .o_host = SIZE_MAX, .rows_len = SIZE_MAX};
    r->str.len = 0;
    if (!scan_envelope(r, &s, line, len, &e)) {
        fl_rd_bad_line(r, "not JSON: %s at column %zu", s.err ? s.err : "syntax error",
                       (size_t)((s.at ? s.at : line) - line) + 1);
        return 1;
    }
    if (!batch_usable(r, &s, &e))
        return 1;
    deliver_batch(r, &e);
    return 0;
}
