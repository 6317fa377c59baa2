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
 * read by fl_scan_num (exact, as jansson's strtod is).  Members byte for
 * byte those of a line taken before (the template, see dline) are taken
 * from it without a scan: most of the writer's members repeat from launch
 * to launch.  GP_READ_DETAIL=off in the environment sends every line to
 * jansson, GP_READ_DETAIL=scan scans every member (tests, and comparing
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

/* What a line's scan keeps: FL_KD_COUNT members and the session_id. */
#define N_KEPT (FL_KD_COUNT + 1)
#define MEM_MAX (NKEYS + OTHER_MAX)
/* A longer line is not kept as a template. */
#define TPL_MAX_LINE ((size_t)1 << 16)

/* One taken line: the values kept (a string's text in str at soff, slen
 * bytes and a NUL) and where its members lie (offsets in it: the key's
 * '"', the ',' or '}' after the value; mk: the key's index in keys, -1
 * for a key not there).
 *
 * A line is also the template of the lines after it.  The writer repeats
 * most members from line to line (version, type, session_id, pid and app
 * always, most of a kernel's zeros and nulls), and a member whose bytes,
 * with the ',' or '}' after them, are those of the template's member at
 * the same place among the members has the template's key and value:
 * jansson reads the same bytes the same way.  Such members are taken
 * without a scan (take_same), a run of them at a time.  The template
 * stays while most of each line's members come from it (the members that
 * differ, the corr_id, the launch's dimensions, are as many whichever
 * line it is), else the line just taken becomes the template (make_template). */
typedef struct dline {
    fl_jval v[N_KEPT];
    size_t soff[N_KEPT], slen[N_KEPT];
    sbuf str;
    uint32_t mstart[MEM_MAX], mend[MEM_MAX];
    int8_t mk[MEM_MAX];
    size_t nmem;
    /* The runs of members [i, j) taken from the template, at shift bytes
     * from where they are in it; how many members they hold. */
    struct {
        uint8_t i, j;
        uint32_t shift;
    } run[MEM_MAX];
    size_t nrun, taken;
    /* As a template: mlim[i] = mend[i] (UINT32_MAX for a key not in keys,
     * and at nmem: the runs stop there), cum[i] the keys' bits of the
     * members before i, scum[i] the bits of the slots they fill, and the
     * line's bytes (len, then 32 zeros: same_bytes reads them); prefix:
     * the bytes through its "type" member and the ',' after it (0: no
     * "type" among its first members), sid_other: its session_id is not
     * the one the read wants. */
    uint32_t mlim[MEM_MAX + 1], cum[MEM_MAX + 1], scum[MEM_MAX + 1];
    char *line;
    size_t len, cap, prefix;
    bool sid_other;
    /* The slots holding a string, and those taken from the template. */
    unsigned strs, from_t;
} dline;

/* The two lines of a read: l[cur] the template (nmem 0: none), the other
 * the one each scan fills. */
struct rd_dtpl {
    dline l[2];
    unsigned cur;
    bool wide; /* same_bytes_avx2 */
};

/* The keys the line's scan met that are not in keys. */
typedef struct dscan {
    size_t n_other;
    const char *other[OTHER_MAX];
    size_t other_len[OTHER_MAX];
} dscan;

void fl_rd_detail_free(rd *r)
{
    if (!r->dt)
        return;
    for (int i = 0; i < 2; i++) {
        free(r->dt->l[i].str.p);
        free(r->dt->l[i].line);
    }
    free(r->dt);
    r->dt = NULL;
}

/* How many of the n bytes at a and b are the same before the first that
 * differs (reads up to 15 bytes past n on both sides). */
static inline size_t same_bytes(const char *a, const char *b, size_t n)
{
#if defined(__SSE2__)
    for (size_t i = 0; i < n; i += 16) {
        __m128i x = _mm_loadu_si128((const __m128i *)(const void *)(a + i));
        __m128i y = _mm_loadu_si128((const __m128i *)(const void *)(b + i));
        unsigned ne = ~(unsigned)_mm_movemask_epi8(_mm_cmpeq_epi8(x, y)) & 0xffffu;
        if (ne) {
            i += (size_t)__builtin_ctz(ne);
            return i < n ? i : n;
        }
    }
    return n;
#else
    size_t i = 0;
    while (i < n && a[i] == b[i])
        i++;
    return i;
#endif
}

/* n bytes from src to dst; both may be read and written 32 bytes on (the
 * strings' room is reserved with STR_SLACK more). */
#define STR_SLACK 32
static inline void copy_text(char *dst, const char *src, size_t n)
{
#if defined(__SSE2__)
    if (n <= 32) {
        __m128i a = _mm_loadu_si128((const __m128i *)(const void *)src);
        __m128i b = _mm_loadu_si128((const __m128i *)(const void *)(src + 16));
        _mm_storeu_si128((__m128i *)(void *)dst, a);
        _mm_storeu_si128((__m128i *)(void *)(dst + 16), b);
        return;
    }
#endif
    memcpy(dst, src, n);
}

#if defined(__SSE2__) && defined(__x86_64__) && defined(__GNUC__)
#define DT_AVX2 1
#include <immintrin.h>
/* same_bytes, 32 bytes a step (reads up to 31 bytes past n). */
static __attribute__((target("avx2"), noinline)) size_t same_bytes_avx2(const char *a,
                                                                        const char *b, size_t n)
{
    for (size_t i = 0; i < n; i += 32) {
        __m256i x = _mm256_loadu_si256((const __m256i *)(const void *)(a + i));
        __m256i y = _mm256_loadu_si256((const __m256i *)(const void *)(b + i));
        uint32_t ne = ~(uint32_t)_mm256_movemask_epi8(_mm256_cmpeq_epi8(x, y));
        if (ne) {
            i += (size_t)__builtin_ctz(ne);
            return i < n ? i : n;
        }
    }
    return n;
}
#endif

/* same_bytes by the widest the CPU has. */
static inline size_t same_run(const struct rd_dtpl *dt, const char *a, const char *b, size_t n)
{
#ifdef DT_AVX2
    if (dt->wide)
        return same_bytes_avx2(a, b, n);
#endif
    (void)dt;
    return same_bytes(a, b, n);
}

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

/* p at a string: after it; slot >= 0: its text appended to nw->str with
 * its NUL, nw->v[slot] a string at nw->soff[slot].  NULL when not JSON. */
static const char *string_at(scan *s, const char *p, dline *nw, int slot)
{
    const char *q = fl_scan_plain(p + 1);
    if (*q != '"') /* escapes, UTF-8, or not JSON: the whole scan */
        q = NULL;
    if (slot < 0)
        return q ? q + 1 : fl_scan_str(s, p, NULL);
    size_t off = nw->str.len;
    if (q) {
        /* The line's length is reserved: its strings' text fits. */
        size_t n = (size_t)(q - (p + 1));
        copy_text(nw->str.p + off, p + 1, n);
        nw->str.len += n;
        nw->str.p[nw->str.len] = '\0';
        q++;
    } else {
        q = fl_scan_str(s, p, &nw->str);
        if (!q)
            return NULL;
    }
    nw->v[slot].kind = FL_J_STRING;
    nw->strs |= 1u << slot;
    nw->soff[slot] = off;
    nw->slen[slot] = nw->str.len - off;
    nw->str.len++; /* its NUL (the room is reserved) */
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
        uint64_t u = 0;
        if (*p != '0') {
            /* The first up to 8 digits at once (8 bytes: within RD_PAD):
             * the bytes before the first that is no digit (a carry of the
             * + 6 only comes out of a byte that is none). */
            uint64_t x;
            memcpy(&x, p, 8);
            uint64_t bad =
                ((x & 0xF0F0F0F0F0F0F0F0ull) ^ 0x3030303030303030ull) |
                (((x + 0x0606060606060606ull) & 0xF0F0F0F0F0F0F0F0ull) ^ 0x3030303030303030ull);
            unsigned n = bad ? (unsigned)__builtin_ctzll(bad) >> 3 : 8; /* >= 1 */
            u = rd_swar8((x - 0x3030303030303030ull) << (8 * (8 - n)));
            q = p + n;
            if (n == 8)
                while (is_digit(*q) && q - p < 18)
                    u = u * 10 + (uint64_t)(*q++ - '0');
        }
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

/* p at a value: after it, with nw->v[slot] filled when slot >= 0 (a
 * string's text in nw->str); NULL when the line is not taken. */
static inline const char *value_at(scan *s, const char *p, dline *nw, int slot)
{
    fl_jval skip, *v = slot >= 0 ? &nw->v[slot] : &skip;
    switch (*p) {
    case '"':
        return string_at(s, p, nw, slot);
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

/* The slot of nw->v a key fills: -1 none (validated only). */
static inline int slot_of(int k)
{
    int field = k >= 0 ? keys[k].field : FLD_SKIP;
    return field == FLD_SESSION ? FL_KD_COUNT : field;
}

/* Members *mi on of the line at p (a member's '"') that are byte for byte
 * the template's at the same places, the ',' or '}' after each included:
 * taken as the template took them, into nw->v (their places: a run).
 * Returns the ',' or '}' after the last one taken (p when none is), NULL
 * when the line is not taken (a key twice). */
static const char *take_same(const struct rd_dtpl *dt, const dline *t, dline *nw, size_t *mi,
                             const char *line, const char *end, const char *p, uint32_t *seen,
                             size_t *next)
{
    size_t i = *mi, j = i;
    uint32_t base = t->mstart[i], at = (uint32_t)(p - line);
    size_t room = (size_t)(end - p) < t->len - base ? (size_t)(end - p) : t->len - base;
    uint32_t lim = base + (uint32_t)same_run(dt, p, t->line + base, room);
    while (t->mlim[j] < lim)
        j++;
    if (j == i)
        return p;
    uint32_t keys_in = t->cum[j] ^ t->cum[i];
    if (*seen & keys_in)
        return NULL; /* twice: jansson's error */
    *seen |= keys_in;
    *next = (size_t)t->mk[j - 1] + 1;
    unsigned kept = t->scum[j] ^ t->scum[i];
    nw->from_t |= kept;
    nw->strs |= kept & t->strs;
    for (; kept; kept &= kept - 1) {
        unsigned slot = (unsigned)__builtin_ctz(kept);
        nw->v[slot] = t->v[slot];
        if (t->v[slot].kind == FL_J_STRING) {
            size_t n = t->slen[slot];
            nw->soff[slot] = nw->str.len;
            nw->slen[slot] = n;
            copy_text(nw->str.p + nw->str.len, t->str.p + t->soff[slot], n + 1);
            nw->str.len += n + 1;
        }
    }
    nw->run[nw->nrun].i = (uint8_t)i;
    nw->run[nw->nrun].j = (uint8_t)j;
    nw->run[nw->nrun++].shift = at - base;
    nw->taken += j - i;
    *mi = j;
    return line + (t->mend[j - 1] + (at - base));
}

/* The members of the object in line (a kernel_detail by its probed type)
 * into nw, those the same as the template t's (when t->nmem) taken from
 * it; false when the line is not taken. */
static bool scan_line(const struct rd_dtpl *dt, dscan *ds, const dline *t, dline *nw,
                      const char *line, size_t len)
{
    scan s; /* what the primitives read of it (not all 200 bytes of rec) */
    s.err = s.at = NULL;
    s.rec[0] = '\0';
    const char *end = line + len;
    const char *p = skip_ws(line);
    if (*p != '{')
        return false;
    p = skip_ws(p + 1);
    size_t next = 0, mi = 0;
    uint32_t seen = 0; /* bit i: keys[i] was read */
    for (;; mi++) {
        if (mi < t->nmem) {
            size_t was = mi;
            p = take_same(dt, t, nw, &mi, line, end, p, &seen, &next);
            if (!p)
                return false;
            if (mi > was) {
                if (*p == '}') {
                    nw->nmem = mi;
                    return skip_ws(p + 1) == end;
                }
                p++;
                if ((unsigned char)*p <= ' ')
                    p = skip_ws(p);
            }
        }
        if (mi == MEM_MAX)
            return false;
        nw->mstart[mi] = (uint32_t)(p - line);
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
        if (k >= 0) {
            if (seen & (1u << k))
                return false; /* twice: jansson's error */
            seen |= 1u << k;
            next = (size_t)k + 1;
        }
        nw->mk[mi] = (int8_t)k;
        if ((unsigned char)*p <= ' ') /* the only bytes before a value: spaces */
            p = skip_ws(p);
        p = value_at(&s, p, nw, slot_of(k));
        if (!p)
            return false;
        if (*p != ',') {
            p = skip_ws(p);
            if (*p != ',' && *p != '}')
                return false;
        }
        nw->mend[mi] = (uint32_t)(p - line);
        if (*p == '}')
            break;
        p++;
        if ((unsigned char)*p <= ' ')
            p = skip_ws(p);
    }
    nw->nmem = mi + 1;
    return skip_ws(p + 1) == end;
}

/* nw, just taken with t as its template, becomes the template: the
 * members of its runs placed as in t, and what take_same asks of a
 * template.  False (nw is no template) when it is long or memory short. */
static bool make_template(const dline *t, dline *nw, const char *line, size_t len)
{
    if (len > TPL_MAX_LINE)
        return false;
    if (nw->cap < len + 32) {
        size_t cap = len + 32 > 1024 ? len + 32 : 1024;
        char *p = realloc(nw->line, cap);
        if (!p)
            return false;
        nw->line = p;
        nw->cap = cap;
    }
    memcpy(nw->line, line, len);
    memset(nw->line + len, 0, 32);
    nw->len = len;
    for (size_t r = 0; r < nw->nrun; r++)
        for (size_t i = nw->run[r].i; i < nw->run[r].j; i++) {
            nw->mstart[i] = t->mstart[i] + nw->run[r].shift;
            nw->mend[i] = t->mend[i] + nw->run[r].shift;
            nw->mk[i] = t->mk[i];
        }
    nw->cum[0] = nw->scum[0] = 0;
    for (size_t i = 0; i < nw->nmem; i++) {
        int k = nw->mk[i], slot = slot_of(k);
        nw->mlim[i] = k >= 0 ? nw->mend[i] : UINT32_MAX;
        nw->cum[i + 1] = nw->cum[i] | (k >= 0 ? 1u << k : 0);
        nw->scum[i + 1] = nw->scum[i] | (slot >= 0 ? 1u << slot : 0);
    }
    nw->mlim[nw->nmem] = UINT32_MAX;
    /* The members up to its first "type" (keys[1]): a line that starts
     * with these bytes has the type kernel_detail by fl_probe_type, which
     * reads no further (fl_rd_detail_like_last). */
    nw->prefix = 0;
    for (size_t i = 0; i < nw->nmem && i < 4; i++)
        if (nw->mk[i] == 1) {
            nw->prefix = (size_t)nw->mend[i] + 1;
            break;
        }
    return true;
}

static bool fast_off, template_off;
static pthread_once_t fast_once = PTHREAD_ONCE_INIT;
static void fast_init(void)
{
    const char *e = getenv("GP_READ_DETAIL");
    fast_off = e && strcmp(e, "off") == 0;
    template_off = e && strcmp(e, "scan") == 0;
}
static const dline no_template;

int fl_rd_fast_detail(rd *r, const char *line, size_t len)
{
    pthread_once(&fast_once, fast_init);
    if (fast_off)
        return -1;
    if (!r->dt) {
        if (!(r->dt = calloc(1, sizeof *r->dt)))
            return -1;
        r->dt->wide = fl_rd_simd_level() >= 3;
    }
    const dline *t = template_off ? &no_template : &r->dt->l[r->dt->cur];
    dline *nw = &r->dt->l[r->dt->cur ^ 1];
    dscan ds;
    ds.n_other = 0;
#pragma GCC unroll 16
    for (size_t i = 0; i < N_KEPT; i++)
        nw->v[i].kind = FL_J_ABSENT;
    nw->str.len = 0;
    nw->nmem = nw->nrun = nw->taken = 0;
    nw->strs = nw->from_t = 0;
    if (!fl_sb_reserve(&nw->str, len + STR_SLACK) || !scan_line(r->dt, &ds, t, nw, line, len)) {
        nw->nmem = 0;
        return -1;
    }
    for (unsigned m = nw->strs; m; m &= m - 1) {
        unsigned i = (unsigned)__builtin_ctz(m);
        nw->v[i].s = nw->str.p + nw->soff[i];
    }
    const fl_jval *sid = &nw->v[FL_KD_COUNT];
    bool other = false;
    if (sid->kind == FL_J_STRING && r->want)
        other = nw->from_t & (1u << FL_KD_COUNT) ? t->sid_other : strcmp(sid->s, r->want) != 0;
    if (!template_off && nw->taken * 2 < nw->nmem && make_template(t, nw, line, len)) {
        nw->sid_other = other;
        r->dt->cur ^= 1;
    }
    if (sid->kind != FL_J_ABSENT && sid->kind != FL_J_STRING)
        return -1; /* jansson's path says so */
    if (other) {
        r->res->other_session++;
        return 1;
    }
    fl_detail d;
    memcpy(d.v, nw->v, sizeof d.v);
    r->res->details_direct++;
    r->cb->detail(r->cb->user, r->channel, &d);
    return 0;
}

bool fl_rd_detail_like_last(const rd *r, const char *line, size_t len)
{
    if (!r->dt)
        return false;
    const dline *t = &r->dt->l[r->dt->cur];
    size_t n = t->prefix;
    return n && len >= n && same_bytes(line, t->line, n) == n;
}
