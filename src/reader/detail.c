/*
 * reader/detail.c - kernel_detail lines straight into an fl_detail (the
 * detail callback of read.h), at about the batches' speed: the recorder
 * writes one per launch, ~590 bytes each, which jansson reads thirty times
 * slower than the batch rows around them.  And the members as jansson
 * gives them (fl_jval_of, fl_detail_of_json), for the lines this scanner
 * does not take and for the record callback's users.
 *
 * The scanner takes a line only when jansson would read it to the same
 * values: one object of scalars (no nested object or array), keys without
 * escapes and none twice (JSON_REJECT_DUPLICATES), integers within int64
 * (one beyond would make jansson read every number of the line as a real)
 * and reals within a double, nothing after the object but spaces, and a
 * session_id that is a string or absent.  Any other line, valid or not,
 * goes to jansson (fl_rd_fast_detail returns -1), which reads it - or
 * says why it is no record - exactly as it did before this path existed.
 * Strings are validated and unescaped by scan.c's fl_scan_str, numbers
 * read by fl_scan_num (exact, as jansson's strtod is).  GP_READ_DETAIL=off
 * in the environment sends every line to jansson (tests, and comparing
 * the paths on one build).
 */
#include "read_int.h"

#include <math.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

/* ------------------------------------------------- members, as jansson */

fl_jval fl_jval_of(const json_t *v)
{
    fl_jval o;
    memset(&o, 0, sizeof o);
    switch (v ? json_typeof(v) : JSON_NULL) {
    case JSON_OBJECT:
    case JSON_ARRAY:
        o.kind = FL_J_OTHER;
        break;
    case JSON_STRING:
        o.kind = FL_J_STRING;
        o.s = json_string_value(v);
        break;
    case JSON_INTEGER:
        o.kind = FL_J_INT;
        o.i = (int64_t)json_integer_value(v);
        break;
    case JSON_REAL:
        o.kind = FL_J_REAL;
        o.d = json_real_value(v);
        break;
    case JSON_TRUE:
        o.kind = FL_J_TRUE;
        break;
    case JSON_FALSE:
        o.kind = FL_J_FALSE;
        break;
    default:
        o.kind = v ? FL_J_NULL : FL_J_ABSENT;
    }
    return o;
}

/* The writer's keys in the writer's order (wire/records.c's
 * fl_rec_kernel_detail; GPUFlight writes the same), each with the
 * member of fl_detail it fills: a line in this order finds each key at
 * its first guess, as the bytes '"key":' (pat: plen bytes, mask their bits).
 * FLD_SKIP: validated only; FLD_SESSION: the filter. */
enum { FLD_SKIP = -1, FLD_SESSION = -2 };
typedef struct dkey {
    char pat[32];
    uint32_t mask; /* plen bits */
    uint8_t plen;  /* the key's length + 3 */
    int8_t field;
} dkey;
#define DK(name, field)                                                                            \
    {                                                                                              \
        "\"" name "\":", (uint32_t)((1ull << (sizeof name + 2)) - 1), (uint8_t)(sizeof name + 2),  \
            field                                                                                  \
    }
static const dkey keys[] = {
    DK("version", FLD_SKIP),
    DK("type", FLD_SKIP),
    DK("session_id", FLD_SESSION),
    DK("pid", FLD_SKIP),
    DK("app", FLD_SKIP),
    DK("corr_id", FL_KD_CORR_ID),
    DK("grid", FL_KD_GRID),
    DK("block", FL_KD_BLOCK),
    DK("static_shared", FL_KD_STATIC_SHARED),
    DK("local_bytes", FLD_SKIP),
    DK("const_bytes", FLD_SKIP),
    DK("occupancy", FL_KD_OCCUPANCY),
    DK("reg_occupancy", FLD_SKIP),
    DK("smem_occupancy", FLD_SKIP),
    DK("warp_occupancy", FLD_SKIP),
    DK("block_occupancy", FLD_SKIP),
    DK("limiting_resource", FL_KD_LIMITING_RESOURCE),
    DK("max_active_blocks", FLD_SKIP),
    DK("local_mem_total_bytes", FLD_SKIP),
    DK("local_mem_per_thread_bytes", FLD_SKIP),
    DK("cache_config_requested", FLD_SKIP),
    DK("cache_config_executed", FLD_SKIP),
    DK("shared_mem_executed_bytes", FLD_SKIP),
    DK("user_scope", FL_KD_USER_SCOPE),
    DK("stack_trace", FL_KD_STACK_TRACE),
};
#undef DK
#define NKEYS (sizeof keys / sizeof keys[0])

/* A key's name: its pattern without the quotes and the colon. */
static inline const char *key_name(const dkey *k, size_t *n)
{
    *n = (size_t)k->plen - 3;
    return k->pat + 1;
}

void fl_detail_of_json(const json_t *rec, fl_detail *d)
{
    for (size_t i = 0; i < NKEYS; i++) {
        if (keys[i].field < 0)
            continue;
        size_t n = 0;
        const char *name = key_name(&keys[i], &n);
        d->v[keys[i].field] = fl_jval_of(json_object_getn(rec, name, n));
    }
}

/* ------------------------------------------------------ the fast path */

/* Keys that are not in keys, told apart from each other (a line with
 * more goes to jansson). */
#define OTHER_MAX 16

/* What one line's scan keeps: FL_KD_COUNT members and the session_id;
 * a string's offset in r->dstr until the scan is done (it may move). */
#define N_KEPT (FL_KD_COUNT + 1)
typedef struct dscan {
    fl_jval v[N_KEPT];
    size_t soff[N_KEPT];
    size_t n_other;
    const char *other[OTHER_MAX];
    size_t other_len[OTHER_MAX];
} dscan;

/* Whether the bytes at p are keys[i]'s pattern (reads 32 bytes: within
 * the line's RD_PAD). */
static inline bool pat_at(const char *p, const dkey *k)
{
#if defined(__SSE2__)
    __m128i a = _mm_loadu_si128((const __m128i *)(const void *)p);
    __m128i b = _mm_loadu_si128((const __m128i *)(const void *)(p + 16));
    uint32_t eq = (uint32_t)_mm_movemask_epi8(
                      _mm_cmpeq_epi8(a, _mm_loadu_si128((const __m128i *)(const void *)k->pat))) |
                  (uint32_t)_mm_movemask_epi8(_mm_cmpeq_epi8(
                      b, _mm_loadu_si128((const __m128i *)(const void *)(k->pat + 16))))
                      << 16;
    return (eq & k->mask) == k->mask;
#else
    return memcmp(p, k->pat, k->plen) == 0;
#endif
}

/* The key at p ('"'), not the guess: its index in keys, or -1 for one
 * that is not there (a new one: kept in ds->other), -2 when the line is
 * not taken (an escape or a byte above 0x7f in the key, a key twice).
 * *end: after its closing quote. */
static int key_lookup(dscan *ds, const char *p, const char **end)
{
    const char *q = fl_scan_plain(p + 1);
    if (*q != '"')
        return -2;
    size_t n = (size_t)(q - (p + 1));
    *end = q + 1;
    for (size_t i = 0; i < NKEYS; i++) {
        size_t kn;
        const char *name = key_name(&keys[i], &kn);
        if (kn == n && memcmp(name, p + 1, n) == 0)
            return (int)i;
    }
    for (size_t i = 0; i < ds->n_other; i++)
        if (ds->other_len[i] == n && memcmp(ds->other[i], p + 1, n) == 0)
            return -2;
    if (ds->n_other == OTHER_MAX)
        return -2;
    ds->other[ds->n_other] = p + 1;
    ds->other_len[ds->n_other++] = n;
    return -1;
}

/* Whether the number text [p, e) is an integer by its syntax. */
static bool int_syntax(const char *p, const char *e)
{
    for (; p < e; p++)
        if (*p == '.' || *p == 'e' || *p == 'E')
            return false;
    return true;
}

/* p at a string: after it; kept: its text appended to r->dstr with its
 * NUL, its offset in *soff.  NULL when not JSON. */
static const char *string_at(rd *r, scan *s, const char *p, bool kept, fl_jval *v, size_t *soff)
{
    const char *q = fl_scan_plain(p + 1);
    if (*q != '"') /* escapes, UTF-8, or not JSON: the whole scan */
        q = NULL;
    if (!kept)
        return q ? q + 1 : fl_scan_str(s, p, NULL);
    size_t off = r->dstr.len;
    if (q) {
        size_t n = (size_t)(q - (p + 1));
        if (!sb_put(&r->dstr, p + 1, n))
            return NULL;
        q++;
    } else {
        q = fl_scan_str(s, p, &r->dstr);
        if (!q)
            return NULL;
    }
    r->dstr.len++; /* its NUL (the room is reserved) */
    v->kind = FL_J_STRING;
    *soff = off;
    return q;
}

/* p at a number: after it, *v an FL_J_INT or FL_J_REAL as jansson reads
 * it; NULL when not taken. */
static const char *number_at(scan *s, const char *p, fl_jval *v)
{
    /* The writer's: up to 18 digits (a first 0 alone), then neither a
     * digit, a fraction nor an exponent. */
    if (is_digit(*p)) {
        const char *q = p + 1;
        uint64_t u = (uint64_t)(*p - '0');
        if (u)
            while (is_digit(*q) && q - p < 18)
                u = u * 10 + (uint64_t)(*q++ - '0');
        char c = *q;
        if (!is_digit(c) && c != '.' && (c | 0x20) != 'e') {
            v->kind = FL_J_INT;
            v->i = (int64_t)u;
            return q;
        }
    }
    const char *q;
    fl_cell c;
    q = fl_scan_num(s, p, &c);
    if (!q)
        return NULL;
    if (c.kind == FL_CELL_INT) {
        v->kind = FL_J_INT;
        v->i = c.i;
        return q;
    }
    /* A real jansson reads (not one beyond a double: its error), and not
     * an integer beyond int64 (jansson reads the line again with every
     * number as a real). */
    if (c.kind != FL_CELL_REAL || !isfinite(c.d) || int_syntax(p, q))
        return NULL;
    v->kind = FL_J_REAL;
    v->d = c.d;
    return q;
}

/* p at a value: after it, with *v filled (kept: a string's text in
 * r->dstr, its offset in *soff); NULL when the line is not taken. */
static inline const char *value_at(rd *r, scan *s, const char *p, bool kept, fl_jval *v,
                                   size_t *soff)
{
    switch (*p) {
    case '"':
        return string_at(r, s, p, kept, v, soff);
    case 'n':
        v->kind = FL_J_NULL;
        return memcmp(p, "null", 4) == 0 ? p + 4 : NULL;
    case 't':
        v->kind = FL_J_TRUE;
        return memcmp(p, "true", 4) == 0 ? p + 4 : NULL;
    case 'f':
        v->kind = FL_J_FALSE;
        return memcmp(p, "false", 5) == 0 ? p + 5 : NULL;
    default:
        if (*p == '-' || is_digit(*p))
            return number_at(s, p, v);
        return NULL; /* an object, an array, or not JSON */
    }
}

/* The members of the object in line (a kernel_detail by its probed type)
 * into ds; false when the line is not taken. */
static bool scan_line(rd *r, dscan *ds, const char *line, size_t len)
{
    scan s; /* what the primitives read of it (not all 200 bytes of rec) */
    s.err = s.at = NULL;
    s.rec[0] = '\0';
    const char *p = skip_ws(line);
    if (*p != '{')
        return false;
    p = skip_ws(p + 1);
    size_t next = 0;
    uint32_t seen = 0; /* bit i: keys[i] was read */
    for (;;) {
        int k;
        if (next < NKEYS && pat_at(p, &keys[next])) {
            k = (int)next;
            p += keys[next].plen;
        } else {
            if (*p != '"')
                return false;
            const char *e;
            k = key_lookup(ds, p, &e);
            if (k == -2)
                return false;
            p = skip_ws(e);
            if (*p != ':')
                return false;
            p++;
        }
        int field = FLD_SKIP;
        if (k >= 0) {
            if (seen & (1u << k))
                return false; /* twice: jansson's error */
            seen |= 1u << k;
            next = (size_t)k + 1;
            field = keys[k].field;
        }
        if ((unsigned char)*p <= ' ') /* the only bytes before a value: spaces */
            p = skip_ws(p);
        size_t slot = field == FLD_SESSION ? FL_KD_COUNT : (size_t)field;
        fl_jval skip;
        bool kept = field != FLD_SKIP;
        p = value_at(r, &s, p, kept, kept ? &ds->v[slot] : &skip, kept ? &ds->soff[slot] : NULL);
        if (!p)
            return false;
        if (*p != ',') {
            p = skip_ws(p);
            if (*p == '}')
                break;
            if (*p != ',')
                return false;
        }
        p++;
        if ((unsigned char)*p <= ' ')
            p = skip_ws(p);
    }
    return skip_ws(p + 1) == line + len;
}

static bool fast_off;
static pthread_once_t fast_once = PTHREAD_ONCE_INIT;
static void fast_init(void)
{
    const char *e = getenv("GP_READ_DETAIL");
    fast_off = e && strcmp(e, "off") == 0;
}

int fl_rd_fast_detail(rd *r, const char *line, size_t len)
{
    pthread_once(&fast_once, fast_init);
    if (fast_off)
        return -1;
    dscan ds;
    for (size_t i = 0; i < N_KEPT; i++)
        ds.v[i].kind = FL_J_ABSENT;
    ds.n_other = 0;
    r->dstr.len = 0;
    if (!scan_line(r, &ds, line, len))
        return -1;
    for (size_t i = 0; i < N_KEPT; i++)
        if (ds.v[i].kind == FL_J_STRING)
            ds.v[i].s = r->dstr.p + ds.soff[i];
    const fl_jval *sid = &ds.v[FL_KD_COUNT];
    if (sid->kind != FL_J_ABSENT && sid->kind != FL_J_STRING)
        return -1; /* jansson's path says so */
    if (sid->kind == FL_J_STRING && r->want && strcmp(sid->s, r->want) != 0) {
        r->res->other_session++;
        return 1;
    }
    fl_detail d;
    memcpy(d.v, ds.v, sizeof d.v);
    r->res->details_direct++;
    r->cb->detail(r->cb->user, r->channel, &d);
    return 0;
}
