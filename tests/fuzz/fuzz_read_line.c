/*
 * fuzz_read_line.c - fuzz target of the session-log reader's line parser
 * (fl_read_line in src/reader/read.c): the batch scanner, jansson's path, the
 * session filter.  The input is fed whole as one line, then split at '\n'
 * into lines fed one by one on the three channels, every other one with a
 * session filter.  The callbacks touch everything they are given, so a
 * sanitizer sees any read out of bounds.  Each line (the whole input and
 * its first 64 lines) is also read through the detail callback and
 * through jansson's record: a kernel_detail must give the same counts,
 * warnings and members both ways (fuzz_detail_differs), else it traps;
 * so must the whole input read as one file's lines through one reader
 * (fuzz_lines_differ: the detail scanner's template of the lines before).
 *
 * libFuzzer: cmake -DGP_LIBFUZZER=ON with clang (tests/CMakeLists.txt);
 * without it, tests/test_fuzz_read.c includes this file and drives it with
 * its own mutation loop (docs/test-doubles.md, "Fuzzing").
 */
#include "reader/read.h"

#include <stddef.h>
#include <stdint.h>
#include <string.h>

typedef struct fuzz_sink {
    uint64_t sum;
} fuzz_sink;

static void fuzz_record(void *user, int channel, fl_type t, const char *type, json_t *rec)
{
    fuzz_sink *s = user;
    s->sum += (uint64_t)channel + (uint64_t)t + strlen(type) + json_object_size(rec);
    s->sum += (uint64_t)json_integer_value(json_object_get(rec, "ts_ns"));
}

static void fuzz_batch(void *user, const fl_batch *b)
{
    fuzz_sink *s = user;
    s->sum += strlen(b->type) + b->batch_id + b->base_time_ns + (uint64_t)b->channel;
    if (b->hostname)
        s->sum += strlen(b->hostname);
    for (size_t c = 0; c < b->ncols; c++)
        s->sum += strlen(b->cols[c]);
    for (size_t i = 0; i < b->nrows * b->ncols; i++)
        s->sum += (uint64_t)fl_cell_int(&b->cells[i], 1) + (fl_cell_real(&b->cells[i]) > 0);
    int dt = fl_batch_col(b, "dt_ns");
    for (size_t r = 0; r < b->nrows; r++)
        s->sum += (uint64_t)fl_cell_int(fl_batch_cell(b, r, dt), 0);
    s->sum += strlen(b->file);
}

static void fuzz_warning(void *user, const char *file, uint64_t line, const char *msg)
{
    fuzz_sink *s = user;
    s->sum += strlen(file) + line + strlen(msg);
}

/* ------------------------------------------- kernel_detail, both paths */

/* What one line gave: its counts, return, warnings and details (the
 * values, strings copied), as the detail callback or jansson's record
 * gave them. */
typedef struct dseen {
    int rc, n;
    uint64_t bad_lines, bad_records, other_session, unknown;
    uint64_t warn_hash;
    fl_jval v[2][FL_KD_COUNT];
    char str[2][FL_KD_COUNT][96];
    size_t slen[2][FL_KD_COUNT];
    uint64_t all_hash; /* every detail's members, in order */
} dseen;

static uint64_t hash_in(uint64_t h, const void *p, size_t n)
{
    for (size_t i = 0; i < n; i++)
        h = (h ^ ((const unsigned char *)p)[i]) * 0x100000001b3ull;
    return h;
}

static void dseen_add(dseen *s, const fl_detail *d)
{
    for (int i = 0; i < FL_KD_COUNT; i++) {
        const fl_jval *x = &d->v[i];
        s->all_hash = hash_in(s->all_hash, &x->kind, 1);
        if (x->kind == FL_J_STRING)
            s->all_hash = hash_in(s->all_hash, x->s, strlen(x->s) + 1);
        else if (x->kind == FL_J_INT)
            s->all_hash = hash_in(s->all_hash, &x->i, sizeof x->i);
        else if (x->kind == FL_J_REAL)
            s->all_hash = hash_in(s->all_hash, &x->d, sizeof x->d);
    }
    if (s->n < 2)
        for (int i = 0; i < FL_KD_COUNT; i++) {
            s->v[s->n][i] = d->v[i];
            if (d->v[i].kind == FL_J_STRING) {
                size_t n = strlen(d->v[i].s);
                s->slen[s->n][i] = n;
                memcpy(s->str[s->n][i], d->v[i].s, n < 95 ? n : 95);
                s->str[s->n][i][n < 95 ? n : 95] = '\0';
                s->v[s->n][i].s = NULL;
            }
        }
    s->n++;
}

static void dseen_detail(void *user, int channel, const fl_detail *d)
{
    (void)channel;
    dseen_add(user, d);
}

static void dseen_record(void *user, int channel, fl_type t, const char *type, json_t *rec)
{
    (void)channel;
    (void)type;
    if (t == FL_T_KERNEL_DETAIL) {
        fl_detail d;
        fl_detail_of_json(rec, &d);
        dseen_add(user, &d);
    }
}

static void dseen_warning(void *user, const char *file, uint64_t line, const char *msg)
{
    dseen *s = user;
    (void)file;
    (void)line;
    for (const char *p = msg; *p; p++)
        s->warn_hash = (s->warn_hash ^ (unsigned char)*p) * 0x100000001b3ull;
}

/* kernel_detail lines the direct path took (test_fuzz_read: it was
 * exercised). */
static uint64_t fuzz_details_direct;

static void dseen_read(const char *line, size_t len, const char *want, bool fast, dseen *s)
{
    memset(s, 0, sizeof *s);
    fl_read_cb cb = {.user = s, .record = dseen_record, .warning = dseen_warning};
    if (fast)
        cb.detail = dseen_detail;
    fl_read_result res;
    memset(&res, 0, sizeof res);
    s->rc = fl_read_line(line, len, FL_CH_DEVICE, want, &cb, &res, "fuzz", 1);
    s->bad_lines = res.bad_lines;
    s->bad_records = res.bad_records;
    s->other_session = res.other_session;
    s->unknown = res.unknown_types;
    fuzz_details_direct += res.details_direct;
}

/* Whether a kernel_detail line reads differently through the detail
 * callback (read.h: the fast scanner, or jansson where it does not take
 * the line) and through jansson's record: every count, warning and
 * member must be the same, a real bit for bit. */
static bool fuzz_detail_differs(const char *line, size_t len, const char *want)
{
    static dseen a, b;
    dseen_read(line, len, want, true, &a);
    dseen_read(line, len, want, false, &b);
    if (a.rc != b.rc || a.n != b.n || a.bad_lines != b.bad_lines ||
        a.bad_records != b.bad_records || a.other_session != b.other_session ||
        a.unknown != b.unknown || a.warn_hash != b.warn_hash)
        return true;
    for (int n = 0; n < a.n && n < 2; n++)
        for (int i = 0; i < FL_KD_COUNT; i++) {
            const fl_jval *x = &a.v[n][i], *y = &b.v[n][i];
            if (x->kind != y->kind || a.slen[n][i] != b.slen[n][i] ||
                strcmp(a.str[n][i], b.str[n][i]) != 0)
                return true;
            if ((x->kind == FL_J_INT && x->i != y->i) ||
                (x->kind == FL_J_REAL && memcmp(&x->d, &y->d, sizeof x->d) != 0))
                return true;
        }
    return false;
}

/* The same of text read as a file's lines through one reader (the
 * detail scanner takes members the same as a line before from it). */
static bool fuzz_lines_differ(const char *text, size_t len, const char *want)
{
    static dseen a, b;
    dseen *s[2] = {&a, &b};
    size_t bad[2];
    for (int f = 0; f < 2; f++) {
        memset(s[f], 0, sizeof *s[f]);
        fl_read_cb cb = {.user = s[f], .record = dseen_record, .warning = dseen_warning};
        if (f == 0)
            cb.detail = dseen_detail;
        fl_read_result res;
        memset(&res, 0, sizeof res);
        bad[f] = fl_read_lines(text, len, FL_CH_DEVICE, want, &cb, &res, "fuzz");
        s[f]->bad_lines = res.bad_lines;
        s[f]->bad_records = res.bad_records;
        s[f]->other_session = res.other_session;
        s[f]->unknown = res.unknown_types;
        if (f == 0)
            fuzz_details_direct += res.details_direct;
    }
    return bad[0] != bad[1] || a.n != b.n || a.bad_lines != b.bad_lines ||
           a.bad_records != b.bad_records || a.other_session != b.other_session ||
           a.unknown != b.unknown || a.warn_hash != b.warn_hash || a.all_hash != b.all_hash;
}

#ifndef FUZZ_DETAIL_MISMATCH
#define FUZZ_DETAIL_MISMATCH(line, len) __builtin_trap()
#endif

static void fuzz_detail_check(const char *line, size_t len)
{
    static const char *const wants[] = {NULL, "s", "3f2a9c1e-7b4d-4e21-9a0f-5c6d7e8f9a0b"};
    for (size_t w = 0; w < sizeof wants / sizeof wants[0]; w++)
        if (fuzz_detail_differs(line, len, wants[w]))
            FUZZ_DETAIL_MISMATCH(line, len);
}

static void fuzz_lines_check(const char *text, size_t len)
{
    static const char *const wants[] = {NULL, "3f2a9c1e-7b4d-4e21-9a0f-5c6d7e8f9a0b"};
    for (size_t w = 0; w < sizeof wants / sizeof wants[0]; w++)
        if (fuzz_lines_differ(text, len, wants[w]))
            FUZZ_DETAIL_MISMATCH(text, len);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    fuzz_sink sink = {0};
    fl_read_cb cb = {
        .user = &sink, .record = fuzz_record, .batch = fuzz_batch, .warning = fuzz_warning};
    fl_read_result res;
    memset(&res, 0, sizeof res);
    const char *text = (const char *)data;
    fl_read_line(text, size, FL_CH_DEVICE, NULL, &cb, &res, "fuzz", 1);
    fuzz_detail_check(text, size);
    fuzz_lines_check(text, size);
    const char *p = text, *end = text + size;
    uint64_t lineno = 0;
    while (p < end) {
        const char *nl = memchr(p, '\n', (size_t)(end - p));
        size_t len = nl ? (size_t)(nl - p) : (size_t)(end - p);
        lineno++;
        fl_read_line(p, len, (int)(lineno % FL_CH_COUNT), (lineno & 1) ? "s" : NULL, &cb, &res,
                     "fuzz", lineno);
        if (nl && lineno < 64)
            fuzz_detail_check(p, len);
        if (!nl)
            break;
        p = nl + 1;
    }
    return 0;
}
