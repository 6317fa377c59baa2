/*
 * reader/read.c - reading GPUFlight session logs back (reader/read.h).
 *
 * Three parts:
 *
 *  - Finding the session: a session directory (it holds <channel>.log or
 *    <channel>.<N>.log.gz), a log directory (its subdirectories that are
 *    session directories: by session_id, else the most recently modified),
 *    or the older flat layout (<prefix>.<channel>.log, given as the prefix,
 *    as one of its files, or as the directory holding them).  An app
 *    filter keeps only sessions whose job_start names that app (for a
 *    session directory only its files' first lines are read), and
 *    fl_read_session_prefixed resolves GPUFlight's log_dir + log_prefix.
 *
 *  - Reading lines: each channel's gzipped windows in window order, then its
 *    plain file, through one growable buffer (lines are handled in place,
 *    never copied).  A writer writes whole lines, so a last line without
 *    '\n' is torn: it is skipped with a warning and counted in bad_lines,
 *    even when it happens to be complete JSON.  A line longer than 256 MiB
 *    is skipped with a warning.  A broken or truncated gzip stream ends
 *    that file with a warning; the lines before it are kept.
 *
 *  - Parsing a line: the value of the top-level "type" is found first
 *    (probe_type, a few bytes for the writer's own lines).  Columnar
 *    batches (type ending in "_batch") go to a specialised scanner that
 *    validates the whole line as JSON and parses "rows" straight into
 *    fl_cell; every other record goes to jansson.
 *
 * The batch scanner works on a NUL-terminated line followed by RD_PAD
 * readable bytes (the reader overwrites the '\n' and keeps the padding
 * after its buffer; fl_read_line copies): every loop stops at the NUL
 * because it is no byte that JSON allows there, so the inner loops need no
 * bounds checks, and any NUL found before the end is an error.  It reads
 * the envelope's keys in any order (those it does not use are skipped,
 * validated, iteratively: no recursion, 2048 levels like jansson), and
 * "rows" on two paths:
 *
 *  - fast_rows_ssse3 (x86-64 with SSSE3 and POPCNT, chosen at run time;
 *    rows up to 128 bytes): the same masks, the column count checked on
 *    them too, then two numbers at a time converted by pmaddubsw/pmaddwd
 *    (see there).  Else fast_rows (x86-64, SSE2): the writer's rows - integers, no spaces,
 *    at most 64 bytes - one row at a time: four 16-byte compares give the
 *    bit masks of ',', ']', digits and '0's; the row's shape (only digits
 *    and commas, no empty number, no leading zero, at most 15 digits, the
 *    expected count) is checked on the masks, then each number is cut
 *    between two bits and converted 8 digits at a time with three
 *    multiplications (SWAR), and stored with its kind in one 16-byte store.
 *    No branch depends on a digit, and finding the next number never waits
 *    on converting this one.
 *  - anything else (spaces, null, negative and real numbers, longer rows,
 *    rows before "columns", errors, GP_READ_SIMD=off): byte by byte, integers still 8 digits
 *    at a time, the rest through scan_num (exact integers to 2^64-1, reals
 *    by the exact fast path or strtod in the C locale).
 *
 * Unlike jansson it does not look for duplicate keys inside values it
 * skips (its own keys are checked), and a number beyond a double is a bad
 * record rather than a bad line.
 */
#include "read.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <locale.h>
#include <math.h>
#include <stddef.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#include <zlib.h>

#define RD_MAX_LINE ((size_t)256 << 20)
#define RD_CHUNK ((size_t)1 << 20)
/* One read() at most: small enough that the lines are still in the cache
 * (L2) when they are parsed. */
#define RD_READ ((size_t)256 << 10)
#define RD_MAX_DEPTH 2048
/* A batch holding more cells than this is a bad record (the writer's
 * batches have at most 1024 rows of ~20 columns); bounds the memory of one
 * batch to 64 MiB whatever the line. */
#define RD_MAX_CELLS ((size_t)1 << 22)
#define RD_TYPE_MAX 256
/* Bytes after every line's NUL that may be read (zero or the next line):
 * the digit scanner loads 8 bytes at a time. */
#define RD_PAD 128
#if defined(__BYTE_ORDER__) && __BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__
#define RD_SWAR 1
#if defined(__SSE2__)
#define RD_SSE2 1
#include <emmintrin.h>
#if defined(__x86_64__) && defined(__GNUC__)
/* fast_rows_ssse3, chosen at run time (rd_simd_level). */
#define RD_SSSE3 1
#include <tmmintrin.h>
#endif
#endif
#endif

/* Which row scanner a batch's rows take: 2 fast_rows_ssse3 (when the CPU
 * has SSSE3 and POPCNT), 1 fast_rows (SSE2), 0 none (byte by byte).
 * GP_READ_SIMD=sse2 or =off in the environment caps it (tests, and
 * comparing the paths on one build). */
static int simd_level;
static pthread_once_t simd_once = PTHREAD_ONCE_INIT;
static void simd_init(void)
{
    int lv = 0;
#ifdef RD_SSE2
    lv = 1;
#endif
#ifdef RD_SSSE3
    __builtin_cpu_init();
    if (__builtin_cpu_supports("ssse3") && __builtin_cpu_supports("popcnt"))
        lv = 2;
#endif
    const char *e = getenv("GP_READ_SIMD");
    if (e && strcmp(e, "off") == 0)
        lv = 0;
    else if (e && strcmp(e, "sse2") == 0 && lv > 1)
        lv = 1;
    simd_level = lv;
}

static int rd_simd_level(void)
{
    pthread_once(&simd_once, simd_init);
    return simd_level;
}

/* ------------------------------------------------------------ cells */

double fl_cell_real(const fl_cell *c)
{
    if (!c)
        return NAN;
    switch (c->kind) {
    case FL_CELL_INT:
        return (double)c->i;
    case FL_CELL_UINT:
        return (double)c->u;
    case FL_CELL_REAL:
        return c->d;
    default:
        return NAN;
    }
}

int64_t fl_cell_int(const fl_cell *c, int64_t def)
{
    if (!c)
        return def;
    switch (c->kind) {
    case FL_CELL_INT:
        return c->i;
    case FL_CELL_UINT:
        return INT64_MAX;
    case FL_CELL_REAL:
        if (isnan(c->d))
            return def;
        if (c->d >= 9223372036854775807.0)
            return INT64_MAX;
        if (c->d <= -9223372036854775808.0)
            return INT64_MIN;
        return (int64_t)c->d;
    default:
        return def;
    }
}

int fl_batch_col(const fl_batch *b, const char *name)
{
    if (!b || !name)
        return -1;
    for (size_t i = 0; i < b->ncols && i < INT_MAX; i++)
        if (b->cols[i] && strcmp(b->cols[i], name) == 0)
            return (int)i;
    return -1;
}

int fl_batch_time_col(const fl_batch *b, bool duration)
{
    if (!b)
        return -1;
    const fl_type_info *ti = fl_type_get(b->type_id);
    if (ti->batch) {
        int id = duration ? ti->col_duration : ti->col_dt;
        return id < 0 ? -1 : b->col[id];
    }
    /* A batch type the vocabulary does not know: by the names every
     * batch gives these columns. */
    const fl_type_info *k = fl_type_get(FL_T_KERNEL_EVENT_BATCH);
    return fl_batch_col(b, k->cols[duration ? FL_COL_KERNEL_DURATION_NS : FL_COL_KERNEL_DT_NS]);
}

const fl_cell *fl_batch_cell(const fl_batch *b, size_t row, int col)
{
    static const fl_cell null_cell = {.kind = FL_CELL_NULL};
    if (!b || col < 0 || (size_t)col >= b->ncols || row >= b->nrows)
        return &null_cell;
    return &b->cells[row * b->ncols + (size_t)col];
}

void fl_read_opts_init(fl_read_opts *o)
{
    if (!o)
        return;
    memset(o, 0, sizeof *o);
    o->session_id = NULL;
    o->dedupe_common = true;
}

/* ------------------------------------------------------------ state */

typedef struct sbuf {
    char *p;
    size_t len, cap;
} sbuf;

static bool sb_reserve(sbuf *b, size_t n)
{
    if (b->cap - b->len > n)
        return true;
    size_t c = b->cap ? b->cap : 256;
    while (c - b->len <= n) {
        if (c > SIZE_MAX / 2)
            return false;
        c *= 2;
    }
    char *q = realloc(b->p, c);
    if (!q)
        return false;
    b->p = q;
    b->cap = c;
    return true;
}

static bool sb_put(sbuf *b, const void *s, size_t n)
{
    if (!sb_reserve(b, n))
        return false;
    memcpy(b->p + b->len, s, n);
    b->len += n;
    b->p[b->len] = '\0';
    return true;
}

/* One read: callbacks, counters, the session filter and the scratch
 * buffers reused from batch to batch. */
typedef struct rd {
    const fl_read_cb *cb;
    fl_read_result *res;
    const char *want; /* session filter; NULL: none */
    bool dedupe;
    bool saw_shutdown;
    const char *file;
    uint64_t line;
    int channel;
    fl_cell *cells;
    size_t cell_cap;
    bool any_kind; /* the batch has a cell that is not an FL_CELL_INT */
    sbuf str;      /* a batch's type, session_id, hostname and column names */
    sbuf key;      /* an escaped key */
    size_t *col_off;
    const char **cols;
    size_t col_cap;
    uint64_t *set; /* dedupe: hashes of the common records' lines */
    size_t set_cap, set_n;
} rd;

static void rd_free(rd *r)
{
    free(r->cells);
    free(r->str.p);
    free(r->key.p);
    free(r->col_off);
    free(r->cols);
    free(r->set);
}

static void warn(rd *r, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void warn(rd *r, const char *fmt, ...)
{
    if (!r->cb || !r->cb->warning)
        return;
    char msg[512];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    r->cb->warning(r->cb->user, r->file, r->line, msg);
}

/* ------------------------------------------------------------ scanner */

typedef struct scan {
    const char *err; /* the line is not JSON: why (static text) */
    const char *at;  /* and where */
    char rec[200];   /* valid JSON, but not a usable batch: why ("" if it is) */
} scan;

static const char *fail(scan *s, const char *at, const char *msg)
{
    if (!s->err) {
        s->err = msg;
        s->at = at;
    }
    return NULL;
}

static void rec_err(scan *s, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void rec_err(scan *s, const char *fmt, ...)
{
    if (s->rec[0])
        return;
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(s->rec, sizeof s->rec, fmt, ap);
    va_end(ap);
    if (!s->rec[0])
        s->rec[0] = '?';
}

static inline bool is_ws(char c)
{
    return c == ' ' || c == '\t' || c == '\r' || c == '\n';
}

static inline const char *skip_ws(const char *p)
{
    while (is_ws(*p))
        p++;
    return p;
}

static inline bool is_digit(char c)
{
    return (unsigned)((unsigned char)c - '0') < 10u;
}

static int hexval(unsigned char c)
{
    if (c >= '0' && c <= '9')
        return c - '0';
    if (c >= 'a' && c <= 'f')
        return c - 'a' + 10;
    if (c >= 'A' && c <= 'F')
        return c - 'A' + 10;
    return -1;
}

/* Four hex digits at h (stops at the first that is not: never reads past
 * a NUL); -1 if invalid. */
static long hex4(const unsigned char *h)
{
    long v = 0;
    for (int i = 0; i < 4; i++) {
        int d = hexval(h[i]);
        if (d < 0)
            return -1;
        v = v * 16 + d;
    }
    return v;
}

/* The length of the valid UTF-8 sequence at q (lead byte >= 0x80), 0 if
 * invalid (overlong, surrogate, above U+10FFFF, truncated). */
static int utf8_len(const unsigned char *q)
{
    unsigned char c = q[0];
#define CONT(x) ((x) >= 0x80 && (x) <= 0xbf)
    if (c >= 0xc2 && c <= 0xdf)
        return CONT(q[1]) ? 2 : 0;
    if (c >= 0xe0 && c <= 0xef) {
        unsigned char lo = c == 0xe0 ? 0xa0 : 0x80, hi = c == 0xed ? 0x9f : 0xbf;
        return q[1] >= lo && q[1] <= hi && CONT(q[2]) ? 3 : 0;
    }
    if (c >= 0xf0 && c <= 0xf4) {
        unsigned char lo = c == 0xf0 ? 0x90 : 0x80, hi = c == 0xf4 ? 0x8f : 0xbf;
        return q[1] >= lo && q[1] <= hi && CONT(q[2]) && CONT(q[3]) ? 4 : 0;
    }
#undef CONT
    return 0;
}

static size_t put_utf8(char *d, unsigned long cp)
{
    if (cp < 0x80) {
        d[0] = (char)cp;
        return 1;
    }
    if (cp < 0x800) {
        d[0] = (char)(0xc0 | (cp >> 6));
        d[1] = (char)(0x80 | (cp & 0x3f));
        return 2;
    }
    if (cp < 0x10000) {
        d[0] = (char)(0xe0 | (cp >> 12));
        d[1] = (char)(0x80 | ((cp >> 6) & 0x3f));
        d[2] = (char)(0x80 | (cp & 0x3f));
        return 3;
    }
    d[0] = (char)(0xf0 | (cp >> 18));
    d[1] = (char)(0x80 | ((cp >> 12) & 0x3f));
    d[2] = (char)(0x80 | ((cp >> 6) & 0x3f));
    d[3] = (char)(0x80 | (cp & 0x3f));
    return 4;
}

/* p at '"': validates the string (escapes, UTF-8, no control characters,
 * no \u0000 as jansson); appends its text to out (NUL-terminated) when
 * out is not NULL.  Returns the byte after the closing quote, NULL on an
 * error. */
static const char *scan_str(scan *s, const char *p, sbuf *out)
{
    const unsigned char *q = (const unsigned char *)p + 1;
    if (out) {
        if (!sb_reserve(out, 0))
            return fail(s, p, "out of memory");
        out->p[out->len] = '\0';
    }
    for (;;) {
        const unsigned char *run = q;
        while (*q >= 0x20 && *q < 0x80 && *q != '"' && *q != '\\')
            q++;
        if (out && q > run && !sb_put(out, run, (size_t)(q - run)))
            return fail(s, p, "out of memory");
        unsigned char c = *q;
        if (c == '"')
            return (const char *)q + 1;
        if (c == '\\') {
            char e = 0;
            switch (q[1]) {
            case '"':
                e = '"';
                break;
            case '\\':
                e = '\\';
                break;
            case '/':
                e = '/';
                break;
            case 'b':
                e = '\b';
                break;
            case 'f':
                e = '\f';
                break;
            case 'n':
                e = '\n';
                break;
            case 'r':
                e = '\r';
                break;
            case 't':
                e = '\t';
                break;
            case 'u': {
                long cp = hex4(q + 2);
                if (cp < 0)
                    return fail(s, (const char *)q, "invalid \\u escape");
                size_t used = 6;
                if (cp >= 0xd800 && cp <= 0xdbff) {
                    if (q[6] != '\\' || q[7] != 'u')
                        return fail(s, (const char *)q, "lone surrogate in \\u escape");
                    long lo = hex4(q + 8);
                    if (lo < 0xdc00 || lo > 0xdfff)
                        return fail(s, (const char *)q, "invalid surrogate pair");
                    cp = 0x10000 + ((cp - 0xd800) << 10) + (lo - 0xdc00);
                    used = 12;
                } else if (cp >= 0xdc00 && cp <= 0xdfff) {
                    return fail(s, (const char *)q, "lone surrogate in \\u escape");
                } else if (cp == 0) {
                    return fail(s, (const char *)q, "\\u0000 in a string");
                }
                if (out) {
                    char u[4];
                    if (!sb_put(out, u, put_utf8(u, (unsigned long)cp)))
                        return fail(s, p, "out of memory");
                }
                q += used;
                continue;
            }
            default:
                return fail(s, (const char *)q, "invalid escape in a string");
            }
            if (out && !sb_put(out, &e, 1))
                return fail(s, p, "out of memory");
            q += 2;
        } else if (c >= 0x80) {
            int n = utf8_len(q);
            if (!n)
                return fail(s, (const char *)q, "invalid UTF-8 in a string");
            if (out && !sb_put(out, q, (size_t)n))
                return fail(s, p, "out of memory");
            q += n;
        } else {
            return fail(s, (const char *)q,
                        c ? "control character in a string" : "unterminated string");
        }
    }
}

static double pow10_exact(int e)
{
    static const double t[] = {1e0,  1e1,  1e2,  1e3,  1e4,  1e5,  1e6,  1e7,
                               1e8,  1e9,  1e10, 1e11, 1e12, 1e13, 1e14, 1e15,
                               1e16, 1e17, 1e18, 1e19, 1e20, 1e21, 1e22};
    return t[e];
}

static locale_t c_locale;
static pthread_once_t c_locale_once = PTHREAD_ONCE_INIT;
static void c_locale_init(void)
{
    c_locale = newlocale(LC_NUMERIC_MASK, "C", (locale_t)0);
}

/* strtod in the C locale (a program's setlocale must not change what "1.5"
 * means). */
static double c_strtod(const char *p)
{
    pthread_once(&c_locale_once, c_locale_init);
    return c_locale ? strtod_l(p, NULL, c_locale) : strtod(p, NULL);
}

#ifdef RD_SWAR
/* Eight digits, one per byte (0..9, the first in the lowest byte): their
 * value (fast_float's parse_eight_digits_unrolled). */
static inline uint64_t swar8(uint64_t d)
{
    d = d * 10 + (d >> 8);
    return (((d & 0x000000FF000000FFull) * 0x000F424000000064ull) +
            (((d >> 16) & 0x000000FF000000FFull) * 0x0000271000000001ull)) >>
           32;
}

/* d: 8 bytes XOR '0'.  0x80 in each byte that is not a digit. */
static inline uint64_t nondigits(uint64_t d)
{
    return (((d & 0x7f7f7f7f7f7f7f7full) + 0x7676767676767676ull) | d) & 0x8080808080808080ull;
}

/* p at a digit, d/nd its 8 bytes and their non-digit mask: the value of
 * a run of at most 15 digits into *v and its end; NULL when longer.  Reads
 * 16 bytes from p, never past the line's NUL + RD_PAD. */
static inline const char *swar_uint(const char *p, uint64_t d, uint64_t nd, uint64_t *v)
{
    static const uint64_t p10[8] = {1, 10, 100, 1000, 10000, 100000, 1000000, 10000000};
    if (nd) {
        unsigned k = (unsigned)__builtin_ctzll(nd) >> 3;
        *v = swar8(d << (64 - 8 * k));
        return p + k;
    }
    uint64_t w2;
    memcpy(&w2, p + 8, 8);
    uint64_t d2 = w2 ^ 0x3030303030303030ull, nd2 = nondigits(d2);
    if (nd2 & 0x80) {
        *v = swar8(d);
        return p + 8;
    }
    if (!nd2)
        return NULL;
    unsigned k = (unsigned)__builtin_ctzll(nd2) >> 3;
    *v = swar8(d) * p10[k] + swar8(d2 << (64 - 8 * k));
    return p + 8 + k;
}
#endif

#ifdef RD_SSE2
/*
 * The writer's rows, as many as come in a row: p at a row's '['; each row
 * = expect non-negative integers of at most 15 digits without leading
 * zeros, separated by ',' without spaces, closed by ']' within 64 bytes,
 * rows separated by ','.  For each row one pass of SSE2 compares gives
 * bit masks of the ',', the ']', the digits and the '0's; the shape is
 * checked on the masks, and the numbers are cut between the bits, so that
 * finding the next number never waits on converting this one.  Cells go
 * to *cpp (advanced), *done the rows read; returns where it stopped: at
 * the '[' of a row it does not take (the caller parses that one byte by
 * byte, which reports any error), or (*after) just after a row's ']' that
 * is not followed by ",[".  Reads 64 bytes from a row's '[' and 16 from
 * each number: within the line's NUL + RD_PAD.
 */
/* fast_rows stores a cell as one 16 bytes: the kind, then the value. */
_Static_assert(sizeof(fl_cell) == 16 && offsetof(fl_cell, kind) == 0 && offsetof(fl_cell, i) == 8,
               "fl_cell layout");

__attribute__((noinline)) static const char *fast_rows(const char *p, fl_cell **cpp,
                                                       const fl_cell *cend, size_t expect,
                                                       size_t *done, bool *after)
{
    static const uint64_t p10[8] = {1, 10, 100, 1000, 10000, 100000, 1000000, 10000000};
    const __m128i v_comma = _mm_set1_epi8(','), v_close = _mm_set1_epi8(']');
    const __m128i v_lo = _mm_set1_epi8('0' - 1), v_hi = _mm_set1_epi8('9' + 1);
    const __m128i v_zero = _mm_set1_epi8('0');
    const __m128i v_kind = _mm_cvtsi32_si128(FL_CELL_INT);
    const uint64_t K = 0x3030303030303030ull;
    fl_cell *cp = *cpp;
    size_t rows = 0;
    *after = false;
    while (*p == '[' && (size_t)(cend - cp) >= 32) {
        const char *r = p + 1;
        __m128i v0 = _mm_loadu_si128((const __m128i *)(const void *)r);
        __m128i v1 = _mm_loadu_si128((const __m128i *)(const void *)(r + 16));
        __m128i v2 = _mm_loadu_si128((const __m128i *)(const void *)(r + 32));
        __m128i v3 = _mm_loadu_si128((const __m128i *)(const void *)(r + 48));
#define MASK64(expr_of)                                                                            \
    ((uint64_t)(unsigned)_mm_movemask_epi8(expr_of(v0)) |                                          \
     (uint64_t)(unsigned)_mm_movemask_epi8(expr_of(v1)) << 16 |                                    \
     (uint64_t)(unsigned)_mm_movemask_epi8(expr_of(v2)) << 32 |                                    \
     (uint64_t)(unsigned)_mm_movemask_epi8(expr_of(v3)) << 48)
#define IS_COMMA(v) _mm_cmpeq_epi8(v, v_comma)
#define IS_CLOSE(v) _mm_cmpeq_epi8(v, v_close)
#define IS_ZERO(v) _mm_cmpeq_epi8(v, v_zero)
#define IS_DIGIT(v) _mm_and_si128(_mm_cmpgt_epi8(v, v_lo), _mm_cmplt_epi8(v, v_hi))
        uint64_t comma = MASK64(IS_COMMA), close = MASK64(IS_CLOSE);
        uint64_t digit = MASK64(IS_DIGIT), zero = MASK64(IS_ZERO);
#undef MASK64
#undef IS_COMMA
#undef IS_CLOSE
#undef IS_ZERO
#undef IS_DIGIT
        if (!close)
            break;
        unsigned end = (unsigned)__builtin_ctzll(close);
        if (end == 0)
            break;
        uint64_t below = (1ull << end) - 1;
        comma &= below;
        digit &= below;
        uint64_t starts = ((comma << 1) | 1) & below;
        uint64_t run = digit;
        run &= run >> 1;
        run &= run >> 2;
        run &= run >> 4;
        run &= run >> 8;
        /* Only digits and commas; no empty number (a ',' first, after a
         * ',' or last); no leading zero; no run of 16 digits. */
        if ((comma | digit) != below || (starts & comma) || (comma >> (end - 1)) ||
            (zero & starts & (digit >> 1)) || run)
            break;
        uint64_t ends = comma | (1ull << end);
        fl_cell *c = cp;
        unsigned b = 0;
        while (ends) {
            unsigned e = (unsigned)__builtin_ctzll(ends);
            unsigned len = e - b;
            uint64_t w;
            memcpy(&w, r + b, 8);
            uint64_t v;
            if (len <= 8) {
                v = swar8((w ^ K) << (64 - 8 * len));
            } else {
                uint64_t w2;
                memcpy(&w2, r + b + 8, 8);
                v = swar8(w ^ K) * p10[len - 8] + swar8((w2 ^ K) << (128 - 8 * len));
            }
            /* kind and value in one 16-byte store */
            _mm_storeu_si128((__m128i *)(void *)c,
                             _mm_unpacklo_epi64(v_kind, _mm_cvtsi64_si128((long long)v)));
            c++;
            ends &= ends - 1;
            b = e + 1;
        }
        if ((size_t)(c - cp) != expect)
            break;
        cp = c;
        rows++;
        p = r + end + 1;
        if (p[0] == ',' && p[1] == '[') {
            p++;
            continue;
        }
        *after = true;
        break;
    }
    *cpp = cp;
    *done = rows;
    return p;
}
#endif

#ifdef RD_SSSE3
/*
 * fast_rows with SSSE3 (chosen at run time, rd_simd_level): the same rows
 * and the same answers, rows of up to 128 bytes, and a cheaper conversion.
 * The shape is checked on the masks first, the column count included (one
 * popcount), so the conversion takes a fixed number of steps per row:
 * each number is loaded as the 16 bytes that end at its ',' or ']', one
 * saturating subtraction (a table row by its length) zeroes the bytes
 * before its first digit and turns its digits into 0..9, and two numbers
 * at a time are combined by pmaddubsw, pmaddwd, packssdw, pmaddwd and
 * pmuludq into two 64-bit values, stored with their kind.  No branch
 * depends on a digit or a length.  Reads 64 bytes from a row's '[' (128
 * when the row is longer; within the line's NUL + RD_PAD, the '[' being
 * before the NUL) and the 16 bytes before each number's end: the caller
 * makes sure that the 16 bytes before p are the line's.
 */
__extension__ typedef unsigned __int128 rd_u128;

/* Row len: (16 - len) bytes 0xff, then len bytes '0'. */
static const unsigned char rd_digit_sub[32] = {
    0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff,
    '0',  '0',  '0',  '0',  '0',  '0',  '0',  '0',  '0',  '0',  '0',  '0',  '0',  '0',  '0',  '0'};

/* The number of len (1..16) digits that ends just before r[e]: its four
 * groups of four digits, 32 bits each, the most significant first. */
__attribute__((target("ssse3"))) static inline __m128i digit_groups(const char *r, size_t e,
                                                                    size_t len)
{
    __m128i x = _mm_loadu_si128((const __m128i *)(const void *)(r + e - 16));
    x = _mm_subs_epu8(x, _mm_loadu_si128((const __m128i *)(const void *)(rd_digit_sub + len)));
    x = _mm_maddubs_epi16(x, _mm_set1_epi16(0x010a));     /* 10, 1 */
    return _mm_madd_epi16(x, _mm_set1_epi32(0x00010064)); /* 100, 1 */
}

/* Two numbers' groups: their values, 64 bits each. */
__attribute__((target("ssse3"))) static inline __m128i groups_value(__m128i a, __m128i b)
{
    __m128i z = _mm_madd_epi16(_mm_packs_epi32(a, b), _mm_set1_epi32(0x00012710)); /* 10^4, 1 */
    return _mm_add_epi64(_mm_mul_epu32(z, _mm_set1_epi64x(100000000)), _mm_srli_epi64(z, 32));
}

/* 64 bytes from r: the masks of ',', digits and '0'. */
__attribute__((target("ssse3"))) static inline void masks64(const char *r, uint64_t *comma,
                                                            uint64_t *digit, uint64_t *zero)
{
    const __m128i v_comma = _mm_set1_epi8(','), v_zero = _mm_set1_epi8('0');
    /* c + 0x50 = (c - '0') ^ 0x80: below -118 (10 ^ 0x80) as signed for
     * the digits only. */
    const __m128i v_off = _mm_set1_epi8(0x50), v_lim = _mm_set1_epi8(-118);
    uint64_t c = 0, d = 0, z = 0;
    for (int i = 0; i < 4; i++) {
        __m128i v = _mm_loadu_si128((const __m128i *)(const void *)(r + 16 * i));
        c |= (uint64_t)(unsigned)_mm_movemask_epi8(_mm_cmpeq_epi8(v, v_comma)) << (16 * i);
        d |= (uint64_t)(unsigned)_mm_movemask_epi8(_mm_cmplt_epi8(_mm_add_epi8(v, v_off), v_lim))
             << (16 * i);
        z |= (uint64_t)(unsigned)_mm_movemask_epi8(_mm_cmpeq_epi8(v, v_zero)) << (16 * i);
    }
    *comma = c;
    *digit = d;
    *zero = z;
}

/* The numbers cut by the bits of ends (n of them: ends has at least n
 * bits), converted into cells at c. */
#define RD_CONVERT_ROW(CTZ)                                                                        \
    do {                                                                                           \
        size_t b_ = 0;                                                                             \
        for (size_t k_ = npairs; k_; k_--) {                                                       \
            size_t e0 = CTZ(ends);                                                                 \
            ends &= ends - 1;                                                                      \
            size_t e1 = CTZ(ends);                                                                 \
            ends &= ends - 1;                                                                      \
            __m128i v =                                                                            \
                groups_value(digit_groups(r, e0, e0 - b_), digit_groups(r, e1, e1 - e0 - 1));      \
            _mm_storeu_si128((__m128i *)(void *)c, _mm_unpacklo_epi64(v_kind, v));                 \
            _mm_storeu_si128((__m128i *)(void *)(c + 1), _mm_unpackhi_epi64(v_kind_hi, v));        \
            c += 2;                                                                                \
            b_ = e1 + 1;                                                                           \
        }                                                                                          \
        if (odd) {                                                                                 \
            size_t e0 = CTZ(ends);                                                                 \
            __m128i g = digit_groups(r, e0, e0 - b_);                                              \
            _mm_storeu_si128((__m128i *)(void *)c,                                                 \
                             _mm_unpacklo_epi64(v_kind, groups_value(g, g)));                      \
            c++;                                                                                   \
        }                                                                                          \
    } while (0)

static inline unsigned ctz128(rd_u128 x)
{
    uint64_t lo = (uint64_t)x;
    return lo ? (unsigned)__builtin_ctzll(lo) : 64 + (unsigned)__builtin_ctzll((uint64_t)(x >> 64));
}

__attribute__((target("ssse3,popcnt"), noinline)) static const char *
fast_rows_ssse3(const char *p, fl_cell **cpp, const fl_cell *cend, size_t expect, size_t *done,
                bool *after)
{
    const __m128i v_kind = _mm_cvtsi32_si128(FL_CELL_INT), v_kind_hi = _mm_slli_si128(v_kind, 8);
    fl_cell *cp = *cpp;
    size_t rows = 0;
    *after = false;
    if (expect == 0 || expect > 64) {
        *done = 0;
        return p;
    }
    const size_t npairs = expect / 2;
    const bool odd = expect & 1;
    const unsigned ncommas = (unsigned)expect - 1;
    while (*p == '[' && (size_t)(cend - cp) >= expect) {
        const char *r = p + 1;
        uint64_t comma, digit, zero;
        masks64(r, &comma, &digit, &zero);
        uint64_t other = ~(comma | digit);
        unsigned end;
        fl_cell *c = cp;
        if (other) {
            /* The first byte that is neither a digit nor a ',' must be
             * the ']'; a row of at least one number, each of 1..15 digits
             * without a leading zero, expect of them. */
            end = (unsigned)__builtin_ctzll(other);
            if (r[end] != ']' || end == 0)
                break;
            uint64_t below = (1ull << end) - 1;
            comma &= below;
            digit &= below;
            uint64_t starts = ((comma << 1) | 1) & below;
            uint64_t run = digit;
            run &= run >> 1;
            run &= run >> 2;
            run &= run >> 4;
            run &= run >> 8;
            if ((starts & comma) || (comma >> (end - 1)) || (zero & starts & (digit >> 1)) || run ||
                (unsigned)__builtin_popcountll(comma) != ncommas)
                break;
            uint64_t ends = comma | (1ull << end);
            RD_CONVERT_ROW((unsigned)__builtin_ctzll);
        } else {
            /* 64 digits and commas: a longer row, up to 128 bytes. */
            uint64_t comma1, digit1, zero1;
            masks64(r + 64, &comma1, &digit1, &zero1);
            uint64_t other1 = ~(comma1 | digit1);
            if (!other1)
                break;
            end = 64 + (unsigned)__builtin_ctzll(other1);
            if (r[end] != ']')
                break;
            rd_u128 below = ((rd_u128)1 << end) - 1;
            rd_u128 cm = (comma | (rd_u128)comma1 << 64) & below;
            rd_u128 dg = (digit | (rd_u128)digit1 << 64) & below;
            rd_u128 zr = zero | (rd_u128)zero1 << 64;
            rd_u128 starts = ((cm << 1) | 1) & below;
            rd_u128 run = dg;
            run &= run >> 1;
            run &= run >> 2;
            run &= run >> 4;
            run &= run >> 8;
            if ((starts & cm) || (cm >> (end - 1)) || (zr & starts & (dg >> 1)) || run ||
                (unsigned)(__builtin_popcountll((uint64_t)cm) +
                           __builtin_popcountll((uint64_t)(cm >> 64))) != ncommas)
                break;
            rd_u128 ends = cm | ((rd_u128)1 << end);
            RD_CONVERT_ROW(ctz128);
        }
        cp = c;
        rows++;
        p = r + end + 1;
        if (p[0] == ',' && p[1] == '[') {
            p++;
            continue;
        }
        *after = true;
        break;
    }
    *cpp = cp;
    *done = rows;
    return p;
}
#undef RD_CONVERT_ROW
#endif

/* p at '-' or a digit: a JSON number, validated.  c (NULL: only validate)
 * gets an int when it is an integer that fits int64 / uint64, else a real
 * (exact by the fast path, else strtod; inf when out of range). */
static const char *scan_num(scan *s, const char *p, fl_cell *c)
{
    const char *start = p;
    bool neg = false;
    if (*p == '-') {
        neg = true;
        p++;
    }
    if (!is_digit(*p))
        return fail(s, start, "invalid number");
    const char *is = p;
    if (*p == '0') {
        p++;
        if (is_digit(*p))
            return fail(s, start, "number with a leading zero");
    } else {
        while (is_digit(*p))
            p++;
    }
    const char *ie = p, *fs = NULL, *fe = NULL;
    if (*p == '.') {
        p++;
        fs = p;
        if (!is_digit(*p))
            return fail(s, start, "invalid number");
        while (is_digit(*p))
            p++;
        fe = p;
    }
    bool has_exp = false, exp_neg = false;
    long ex = 0;
    if (*p == 'e' || *p == 'E') {
        has_exp = true;
        p++;
        if (*p == '+' || *p == '-')
            exp_neg = *p++ == '-';
        if (!is_digit(*p))
            return fail(s, start, "invalid number");
        while (is_digit(*p)) {
            if (ex < 100000)
                ex = ex * 10 + (*p - '0');
            p++;
        }
    }
    if (!c)
        return p;
    if (!fs && !has_exp) {
        uint64_t v = 0;
        bool ovf = false;
        for (const char *q = is; q < ie; q++) {
            if (__builtin_mul_overflow(v, 10, &v) || __builtin_add_overflow(v, *q - '0', &v)) {
                ovf = true;
                break;
            }
        }
        if (!ovf && !neg) {
            c->kind = v > (uint64_t)INT64_MAX ? FL_CELL_UINT : FL_CELL_INT;
            c->u = v;
            return p;
        }
        if (!ovf && v <= (uint64_t)1 << 63) {
            c->kind = FL_CELL_INT;
            c->i = v == (uint64_t)1 << 63 ? INT64_MIN : -(int64_t)v;
            return p;
        }
    }
    /* A real (or an integer beyond 64 bits): exact when the digits fit 2^53
     * and the power of ten is exact (one correctly rounded operation). */
    uint64_t m = 0;
    int nd = 0;
    bool fast = true;
    for (const char *q = is; q < ie && fast; q++) {
        if (m == 0 && *q == '0')
            continue;
        m = m * 10 + (uint64_t)(*q - '0');
        fast = ++nd <= 19;
    }
    for (const char *q = fs; q && q < fe && fast; q++) {
        if (m != 0 || *q != '0')
            fast = ++nd <= 19;
        m = m * 10 + (uint64_t)(*q - '0');
    }
    long e10 = (exp_neg ? -ex : ex) - (fs ? (long)(fe - fs) : 0);
    double d;
    if (fast && m <= (uint64_t)1 << 53 && (m == 0 || (e10 >= -22 && e10 <= 22))) {
        d = (double)m;
        if (m != 0)
            d = e10 < 0 ? d / pow10_exact((int)-e10) : d * pow10_exact((int)e10);
        if (neg)
            d = -d;
    } else {
        d = c_strtod(start);
    }
    c->kind = FL_CELL_REAL;
    c->d = d;
    return p;
}

/* p at a value: skips it, validating.  Iterative (a bit per level says
 * object or array). */
static const char *skip_value(scan *s, const char *p)
{
    unsigned char stack[RD_MAX_DEPTH / 8];
    int depth = 0;
    for (;;) {
        switch (*p) {
        case '{':
        case '[': {
            bool obj = *p == '{';
            p = skip_ws(p + 1);
            if (*p == (obj ? '}' : ']')) {
                p++;
                break;
            }
            if (depth == RD_MAX_DEPTH)
                return fail(s, p, "nested too deeply");
            if (obj)
                stack[depth >> 3] |= (unsigned char)(1u << (depth & 7));
            else
                stack[depth >> 3] &= (unsigned char)~(1u << (depth & 7));
            depth++;
            if (obj)
                goto key;
            continue;
        }
        case '"':
            p = scan_str(s, p, NULL);
            if (!p)
                return NULL;
            break;
        case 't':
            if (!(p[1] == 'r' && p[2] == 'u' && p[3] == 'e'))
                return fail(s, p, "invalid literal");
            p += 4;
            break;
        case 'f':
            if (!(p[1] == 'a' && p[2] == 'l' && p[3] == 's' && p[4] == 'e'))
                return fail(s, p, "invalid literal");
            p += 5;
            break;
        case 'n':
            if (!(p[1] == 'u' && p[2] == 'l' && p[3] == 'l'))
                return fail(s, p, "invalid literal");
            p += 4;
            break;
        default:
            if (*p == '-' || is_digit(*p)) {
                p = scan_num(s, p, NULL);
                if (!p)
                    return NULL;
                break;
            }
            return fail(s, p, *p ? "invalid value" : "unexpected end of line");
        }
        /* After a value: separators and closing brackets. */
        for (;;) {
            if (depth == 0)
                return p;
            bool obj = (stack[(depth - 1) >> 3] >> ((depth - 1) & 7)) & 1;
            p = skip_ws(p);
            if (*p == ',') {
                p = skip_ws(p + 1);
                if (obj)
                    goto key;
                goto value;
            }
            if (*p == (obj ? '}' : ']')) {
                p++;
                depth--;
                continue;
            }
            return fail(s, p, obj ? "expected ',' or '}'" : "expected ',' or ']'");
        }
    key:
        if (*p != '"')
            return fail(s, p, "expected a key");
        p = scan_str(s, p, NULL);
        if (!p)
            return NULL;
        p = skip_ws(p);
        if (*p != ':')
            return fail(s, p, "expected ':'");
        p = skip_ws(p + 1);
    value:;
    }
}

/* p at '"': a key; *k and *kn its text (in the line, or unescaped in r->key). */
static const char *scan_key(rd *r, scan *s, const char *p, const char **k, size_t *kn)
{
    const unsigned char *q = (const unsigned char *)p + 1;
    while (*q >= 0x20 && *q < 0x80 && *q != '"' && *q != '\\')
        q++;
    if (*q == '"') {
        *k = p + 1;
        *kn = (size_t)((const char *)q - (p + 1));
        return (const char *)q + 1;
    }
    r->key.len = 0;
    const char *e = scan_str(s, p, &r->key);
    *k = r->key.p ? r->key.p : "";
    *kn = r->key.len;
    return e;
}

/*
 * The top-level "type" of the object in the line, unescaped into
 * buf[RD_TYPE_MAX]: its length, or -1 when the line does not start an
 * object, the type is not a string (or is longer than RD_TYPE_MAX - 1), or
 * the JSON is broken before it (jansson then says why).  The writer puts
 * "type" first or second: a few bytes.
 */
static int probe_type(rd *r, const char *line, char *buf)
{
    scan s = {0};
    const char *p = skip_ws(line);
    if (*p != '{')
        return -1;
    p = skip_ws(p + 1);
    while (*p == '"') {
        const char *k;
        size_t kn;
        p = scan_key(r, &s, p, &k, &kn);
        if (!p)
            return -1;
        bool is_type = kn == 4 && memcmp(k, "type", 4) == 0;
        p = skip_ws(p);
        if (*p != ':')
            return -1;
        p = skip_ws(p + 1);
        if (is_type) {
            if (*p != '"')
                return -1;
            r->key.len = 0;
            if (!scan_str(&s, p, &r->key) || r->key.len >= RD_TYPE_MAX)
                return -1;
            memcpy(buf, r->key.p, r->key.len + 1);
            return (int)r->key.len;
        }
        p = skip_value(&s, p);
        if (!p)
            return -1;
        p = skip_ws(p);
        if (*p != ',')
            return -1;
        p = skip_ws(p + 1);
    }
    return -1;
}

/* ------------------------------------------------------------ records */

/* A record type every channel carries (dedupe_common). */
static bool is_common(fl_type t)
{
    return t != FL_T_UNKNOWN && fl_type_get(t)->channel == FL_CH_ALL;
}

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

static void bad_line(rd *r, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void bad_line(rd *r, const char *fmt, ...)
{
    r->res->bad_lines++;
    if (!r->cb || !r->cb->warning)
        return;
    char msg[512];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    r->cb->warning(r->cb->user, r->file, r->line, msg);
}

static bool grow_cells(rd *r, size_t need)
{
    size_t c = r->cell_cap ? r->cell_cap : 16384;
    while (c < need)
        c *= 2;
    if (c > RD_MAX_CELLS)
        c = RD_MAX_CELLS;
    if (c < need)
        return false;
    fl_cell *n = realloc(r->cells, c * sizeof *n);
    if (!n)
        return false;
    r->cells = n;
    r->cell_cap = c;
    return true;
}

/*
 * p at the value of "rows".  Cells go to r->cells; expect: the row length
 * (the number of columns, or SIZE_MAX while not known: then the first
 * row's length is expected of the others).  Sets *nrows, *ncells; errors
 * of shape go to s->rec (cells are then no longer kept).
 */
static const char *scan_rows(rd *r, scan *s, const char *line, const char *p, size_t expect,
                             size_t *nrows_out, size_t *ncells_out)
{
    size_t nrows = 0;
#ifdef RD_SSE2
    const int simd = rd_simd_level();
#else
    (void)line;
#endif
    if (*p != '[') {
        rec_err(s, "\"rows\" is not an array");
        return skip_value(s, p);
    }
    p = skip_ws(p + 1);
    if (!r->cell_cap && !grow_cells(r, 1))
        return fail(s, p, "out of memory");
    fl_cell *cells = r->cells, *cp = cells, *cend = cells + r->cell_cap;
    r->any_kind = false;
    if (*p == ']') {
        p++;
        goto done;
    }
    for (;;) {
#ifdef RD_SSE2
        if (simd && expect != SIZE_MAX && !s->rec[0] && *p == '[') {
            size_t nfast;
            bool after;
#ifdef RD_SSSE3
            /* It reads the 16 bytes before p. */
            if (simd > 1 && p - line >= 16)
                p = fast_rows_ssse3(p, &cp, cend, expect, &nfast, &after);
            else
#endif
                p = fast_rows(p, &cp, cend, expect, &nfast, &after);
            nrows += nfast;
            if (after)
                goto after_row;
        }
#endif
        if (*p != '[') {
            rec_err(s, "row %zu is not an array", nrows + 1);
            p = skip_value(s, p);
            if (!p)
                return NULL;
            goto row_end;
        }
        p++;
        fl_cell *row0 = cp;
        if (is_ws(*p))
            p = skip_ws(p);
        if (*p == ']') {
            p++;
        } else {
            for (;;) {
                if (cp == cend) {
                    size_t used = (size_t)(cp - cells), r0 = (size_t)(row0 - cells);
                    if (s->rec[0]) {
                        /* Nothing of this batch is delivered any more. */
                        cp = row0 = cells;
                    } else if (!grow_cells(r, used + 1)) {
                        rec_err(s, "more than %zu values in one batch (or out of memory)",
                                r->cell_cap);
                        cp = row0 = cells;
                    } else {
                        cells = r->cells;
                        cend = cells + r->cell_cap;
                        cp = cells + used;
                        row0 = cells + r0;
                    }
                    if (cp == cend) /* no room at all */
                        return fail(s, p, "out of memory");
                }
#ifdef RD_SWAR
                uint64_t w;
                memcpy(&w, p, 8);
                uint64_t dd = w ^ 0x3030303030303030ull, nd = nondigits(dd);
                if (!(nd & 0x80)) {
                    /* A non-negative integer, 8 bytes at a time (in the rows
                     * fast_rows does not take). */
                    const char *s0 = p;
                    uint64_t v = 0;
                    p = swar_uint(p, dd, nd, &v);
                    if (!p || ((dd & 0xff) == 0 && p - s0 > 1) || *p == '.' || (*p | 0x20) == 'e') {
                        p = scan_num(s, s0, cp);
                        if (!p)
                            return NULL;
                        if (cp->kind == FL_CELL_REAL && !isfinite(cp->d))
                            rec_err(s, "row %zu: a number out of range", nrows + 1);
                        r->any_kind |= cp->kind != FL_CELL_INT;
                    } else {
                        cp->kind = FL_CELL_INT; /* < 10^15 */
                        cp->i = (int64_t)v;
                    }
                    cp++;
                } else
#else
                unsigned d0 = (unsigned)((unsigned char)*p - '0');
                if (d0 < 10) {
                    /* The hot path: a non-negative integer. */
                    const char *s0 = p++;
                    uint64_t v = d0;
                    unsigned d;
                    while ((d = (unsigned)((unsigned char)*p - '0')) < 10) {
                        v = v * 10 + d;
                        p++;
                    }
                    if (p - s0 > 19 || (d0 == 0 && p - s0 > 1) || *p == '.' || (*p | 0x20) == 'e') {
                        p = scan_num(s, s0, cp);
                        if (!p)
                            return NULL;
                        if (cp->kind == FL_CELL_REAL && !isfinite(cp->d))
                            rec_err(s, "row %zu: a number out of range", nrows + 1);
                    } else {
                        cp->kind = v > (uint64_t)INT64_MAX ? FL_CELL_UINT : FL_CELL_INT;
                        cp->u = v;
                    }
                    r->any_kind |= cp->kind != FL_CELL_INT;
                    cp++;
                } else
#endif
                    if (*p == '-') {
                    p = scan_num(s, p, cp);
                    if (!p)
                        return NULL;
                    if (cp->kind == FL_CELL_REAL && !isfinite(cp->d))
                        rec_err(s, "row %zu: a number out of range", nrows + 1);
                    r->any_kind |= cp->kind != FL_CELL_INT;
                    cp++;
                } else if (*p == 'n' && p[1] == 'u' && p[2] == 'l' && p[3] == 'l') {
                    r->any_kind = true;
                    cp->kind = FL_CELL_NULL;
                    cp->u = 0;
                    cp++;
                    p += 4;
                } else if (is_ws(*p)) {
                    p = skip_ws(p);
                    continue;
                } else {
                    const char *v0 = p;
                    p = skip_value(s, p);
                    if (!p)
                        return NULL;
                    rec_err(s, "row %zu, value %zu is not a number or null (%.*s)", nrows + 1,
                            (size_t)(cp - row0) + 1, (int)(p - v0 > 24 ? 24 : p - v0), v0);
                    cp->kind = FL_CELL_NULL;
                    r->any_kind = true;
                    cp++;
                }
                char c = *p;
                if (c == ',') {
                    p++;
                    continue;
                }
                if (c == ']') {
                    p++;
                    break;
                }
                if (is_ws(c)) {
                    p = skip_ws(p);
                    c = *p;
                    if (c == ',') {
                        p++;
                        continue;
                    }
                    if (c == ']') {
                        p++;
                        break;
                    }
                }
                return fail(s, p, c ? "expected ',' or ']' in a row" : "unexpected end of line");
            }
        }
        {
            size_t len = (size_t)(cp - row0);
            if (expect == SIZE_MAX)
                expect = len;
            else if (len != expect && !s->rec[0])
                rec_err(s, "row %zu has %zu values, expected %zu", nrows + 1, len, expect);
            if (s->rec[0])
                cp = cells; /* bounded memory: nothing will be delivered */
        }
    row_end:
        nrows++;
#ifdef RD_SSE2
    after_row:
#endif
        p = skip_ws(p);
        if (*p == ',') {
            p = skip_ws(p + 1);
            continue;
        }
        if (*p == ']') {
            p++;
            break;
        }
        return fail(s, p, *p ? "expected ',' or ']' after a row" : "unexpected end of line");
    }
done:
    *nrows_out = nrows;
    *ncells_out = (size_t)(cp - cells);
    return p;
}

/* p at the value of "columns": names appended to r->str, offsets to
 * r->col_off. */
static const char *scan_columns(rd *r, scan *s, const char *p, size_t *ncols)
{
    size_t n = 0;
    if (*p != '[') {
        rec_err(s, "\"columns\" is not an array");
        return skip_value(s, p);
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
                    return fail(s, p, "out of memory");
                r->col_off = o;
                const char **cs = realloc(r->cols, c * sizeof *cs);
                if (!cs)
                    return fail(s, p, "out of memory");
                r->cols = cs;
                r->col_cap = c;
            }
            r->col_off[n++] = r->str.len;
            p = scan_str(s, p, &r->str);
            if (!p)
                return NULL;
            if (!sb_reserve(&r->str, 1))
                return fail(s, p, "out of memory");
            r->str.len++; /* keep the NUL sb_put wrote (or write one) */
            r->str.p[r->str.len - 1] = '\0';
        } else {
            rec_err(s, "column %zu is not a string", n + 1);
            p = skip_value(s, p);
            if (!p)
                return NULL;
        }
        p = skip_ws(p);
        if (*p == ',') {
            p = skip_ws(p + 1);
            continue;
        }
        if (*p == ']') {
            *ncols = n;
            return p + 1;
        }
        return fail(s, p, "expected ',' or ']' in \"columns\"");
    }
}

/* A string value of the envelope into r->str: its offset, or SIZE_MAX. */
static const char *scan_env_str(rd *r, scan *s, const char *p, size_t *off, const char *name,
                                bool null_ok)
{
    if (*p == '"') {
        *off = r->str.len;
        p = scan_str(s, p, &r->str);
        if (p) {
            if (!sb_reserve(&r->str, 1))
                return fail(s, p, "out of memory");
            r->str.p[r->str.len++] = '\0';
        }
        return p;
    }
    if (!(null_ok && *p == 'n'))
        rec_err(s, "\"%s\" is not a string", name);
    return skip_value(s, p);
}

static const char *scan_env_u64(scan *s, const char *p, uint64_t *v, const char *name)
{
    if (*p == '-' || is_digit(*p)) {
        fl_cell c;
        p = scan_num(s, p, &c);
        if (p && (c.kind == FL_CELL_UINT || (c.kind == FL_CELL_INT && c.i >= 0)))
            *v = c.u;
        else if (p)
            rec_err(s, "\"%s\" is not a non-negative integer", name);
        return p;
    }
    rec_err(s, "\"%s\" is not a non-negative integer", name);
    return skip_value(s, p);
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

static int key_id(const char *k, size_t n)
{
    switch (n) {
    case 4:
        if (memcmp(k, "type", 4) == 0)
            return K_TYPE;
        if (memcmp(k, "rows", 4) == 0)
            return K_ROWS;
        break;
    case 7:
        if (memcmp(k, "columns", 7) == 0)
            return K_COLS;
        break;
    case 8:
        if (memcmp(k, "batch_id", 8) == 0)
            return K_BID;
        if (memcmp(k, "hostname", 8) == 0)
            return K_HOST;
        break;
    case 10:
        if (memcmp(k, "session_id", 10) == 0)
            return K_SID;
        break;
    case 12:
        if (memcmp(k, "base_time_ns", 12) == 0)
            return K_BASE;
        break;
    }
    return 0;
}

/* A `*_batch` line (NUL at line[len]).  0: delivered. */
static int parse_batch(rd *r, const char *line, size_t len)
{
    scan s = {0};
    const char *end = line + len;
    size_t o_type = SIZE_MAX, o_sid = SIZE_MAX, o_host = SIZE_MAX;
    uint64_t bid = 0, base = 0;
    size_t ncols = 0, nrows = 0, ncells = 0, rows_len = SIZE_MAX;
    unsigned seen = 0;
    r->str.len = 0;

    const char *p = skip_ws(line);
    if (*p != '{') {
        fail(&s, p, "not an object");
        goto syntax;
    }
    p = skip_ws(p + 1);
    if (*p == '}') {
        p++;
    } else {
        for (;;) {
            if (*p != '"') {
                fail(&s, p, "expected a key");
                goto syntax;
            }
            const char *k;
            size_t kn;
            p = scan_key(r, &s, p, &k, &kn);
            if (!p)
                goto syntax;
            int id = key_id(k, kn);
            p = skip_ws(p);
            if (*p != ':') {
                fail(&s, p, "expected ':'");
                goto syntax;
            }
            p = skip_ws(p + 1);
            if (id) {
                if (seen & (unsigned)id) {
                    fail(&s, p, "duplicate key");
                    goto syntax;
                }
                seen |= (unsigned)id;
            }
            switch (id) {
            case K_TYPE:
                p = scan_env_str(r, &s, p, &o_type, "type", false);
                break;
            case K_SID:
                p = scan_env_str(r, &s, p, &o_sid, "session_id", false);
                break;
            case K_HOST:
                p = scan_env_str(r, &s, p, &o_host, "hostname", true);
                break;
            case K_BID:
                p = scan_env_u64(&s, p, &bid, "batch_id");
                break;
            case K_BASE:
                p = scan_env_u64(&s, p, &base, "base_time_ns");
                break;
            case K_COLS:
                p = scan_columns(r, &s, p, &ncols);
                break;
            case K_ROWS: {
                size_t rl = SIZE_MAX;
                p = scan_rows(r, &s, line, p, (seen & K_COLS) ? ncols : SIZE_MAX, &nrows, &ncells);
                if (p && nrows)
                    rl = ncells / nrows;
                rows_len = rl;
                break;
            }
            default:
                p = skip_value(&s, p);
                break;
            }
            if (!p)
                goto syntax;
            p = skip_ws(p);
            if (*p == ',') {
                p = skip_ws(p + 1);
                continue;
            }
            if (*p == '}') {
                p++;
                break;
            }
            fail(&s, p, *p ? "expected ',' or '}'" : "unexpected end of line");
            goto syntax;
        }
    }
    p = skip_ws(p);
    if (p != end) {
        fail(&s, p, "text after the object");
        goto syntax;
    }

    /* Valid JSON.  Another session's?  Then it is dropped whatever it holds. */
    const char *sid = o_sid != SIZE_MAX ? r->str.p + o_sid : NULL;
    if (sid && r->want && strcmp(sid, r->want) != 0) {
        r->res->other_session++;
        return 1;
    }
    if (!(seen & K_COLS))
        rec_err(&s, "no \"columns\"");
    else if (!(seen & K_ROWS))
        rec_err(&s, "no \"rows\"");
    else if (nrows && rows_len != ncols)
        rec_err(&s, "rows have %zu values, the batch has %zu columns", rows_len, ncols);
    if (s.rec[0]) {
        r->res->bad_records++;
        warn(r, "bad %s: %s; batch skipped", o_type != SIZE_MAX ? r->str.p + o_type : "batch",
             s.rec);
        return 1;
    }
    for (size_t i = 0; i < ncols; i++)
        r->cols[i] = r->str.p + r->col_off[i];
    fl_batch b = {
        .type = o_type != SIZE_MAX ? r->str.p + o_type : "",
        .channel = r->channel,
        .batch_id = bid,
        .base_time_ns = base,
        .ncols = ncols,
        .cols = ncols ? r->cols : NULL,
        .nrows = nrows,
        .cells = r->cells,
        .all_ints = !r->any_kind,
        .hostname = o_host != SIZE_MAX ? r->str.p + o_host : NULL,
        .file = r->file,
        .line = r->line,
    };
    fl_batch_map_columns(&b);
    if (b.type_id == FL_T_UNKNOWN)
        r->res->unknown_types++;
    if (r->cb && r->cb->batch)
        r->cb->batch(r->cb->user, &b);
    return 0;

syntax:
    bad_line(r, "not JSON: %s at column %zu", s.err ? s.err : "syntax error",
             (size_t)((s.at ? s.at : line) - line) + 1);
    return 1;
}

/* Every other record: jansson. */
static int parse_json(rd *r, const char *line, size_t len)
{
    json_error_t e;
    json_t *j = json_loadb(line, len, JSON_REJECT_DUPLICATES, &e);
    if (!j && json_error_code(&e) == json_error_numeric_overflow)
        /* An integer above INT64_MAX (a uint64 counter): kept as a real
         * rather than losing the record. */
        j = json_loadb(line, len, JSON_REJECT_DUPLICATES | JSON_DECODE_INT_AS_REAL, &e);
    if (!j) {
        bad_line(r, "not JSON: %s at column %d", e.text, e.column);
        return 1;
    }
    int rc = 1;
    const char *type = json_string_value(json_object_get(j, "type"));
    json_t *sid = json_object_get(j, "session_id");
    if (!json_is_object(j)) {
        bad_line(r, "not a JSON object");
    } else if (!type) {
        bad_line(r, "no string \"type\" in the record");
    } else if (sid && !json_is_string(sid)) {
        r->res->bad_records++;
        warn(r, "bad %s: \"session_id\" is not a string; record skipped", type);
    } else if (sid && r->want && strcmp(json_string_value(sid), r->want) != 0) {
        r->res->other_session++;
    } else if (fl_is_batch_name(type, strlen(type))) {
        /* Only when the scanner could not find its type (nesting beyond
         * its limit): not handed out as a plain record. */
        r->res->bad_records++;
        warn(r, "bad %s: batch the scanner cannot read; skipped", type);
    } else {
        fl_type t = fl_type_of(type, strlen(type));
        if (t == FL_T_SHUTDOWN)
            r->saw_shutdown = true;
        if (t == FL_T_UNKNOWN)
            r->res->unknown_types++;
        if (r->cb && r->cb->record)
            r->cb->record(r->cb->user, r->channel, t, type, j);
        rc = 0;
    }
    json_decref(j);
    return rc;
}

static uint64_t hash_bytes(const char *p, size_t n)
{
    uint64_t h = 0x9e3779b97f4a7c15ull ^ ((uint64_t)n * 0xff51afd7ed558ccdull);
    while (n >= 8) {
        uint64_t w;
        memcpy(&w, p, 8);
        h = (h ^ w) * 0x9fb21c651e98df25ull;
        h ^= h >> 29;
        p += 8;
        n -= 8;
    }
    uint64_t w = 0;
    memcpy(&w, p, n);
    h = (h ^ w) * 0x9fb21c651e98df25ull;
    h ^= h >> 32;
    h *= 0xc4ceb9fe1a85ec53ull;
    h ^= h >> 29;
    return h ? h : 1;
}

/* Adds h to the dedupe set; true if it was there already. */
static bool seen_before(rd *r, uint64_t h)
{
    if ((r->set_n + 1) * 2 > r->set_cap) {
        size_t nc = r->set_cap ? r->set_cap * 2 : 64;
        uint64_t *ns = calloc(nc, sizeof *ns);
        if (!ns)
            return false; /* no dedupe rather than no record */
        for (size_t i = 0; i < r->set_cap; i++) {
            if (!r->set[i])
                continue;
            size_t j = r->set[i] & (nc - 1);
            while (ns[j])
                j = (j + 1) & (nc - 1);
            ns[j] = r->set[i];
        }
        free(r->set);
        r->set = ns;
        r->set_cap = nc;
    }
    size_t m = r->set_cap - 1, i = h & m;
    while (r->set[i]) {
        if (r->set[i] == h)
            return true;
        i = (i + 1) & m;
    }
    r->set[i] = h;
    r->set_n++;
    return false;
}

/* One line, NUL at line[len].  0: a usable record (given, or a duplicate
 * of one given). */
static int handle_line(rd *r, const char *line, size_t len)
{
    char type[RD_TYPE_MAX];
    int tl = probe_type(r, line, type);
    if (tl > 0 && fl_is_batch_name(type, (size_t)tl))
        return parse_batch(r, line, len);
    if (tl > 0 && r->dedupe && is_common(fl_type_of(type, (size_t)tl)) &&
        seen_before(r, hash_bytes(line, len)))
        return 0;
    return parse_json(r, line, len);
}

int fl_read_line(const char *line, size_t len, int channel, const char *want_session,
                 const fl_read_cb *cb, fl_read_result *res, const char *file, uint64_t lineno)
{
    fl_read_result dummy;
    memset(&dummy, 0, sizeof dummy);
    rd r;
    memset(&r, 0, sizeof r);
    r.cb = cb;
    r.res = res ? res : &dummy;
    r.want = want_session && *want_session ? want_session : NULL;
    r.file = file ? file : "(line)";
    r.line = lineno;
    r.channel = channel;
    r.res->lines++;
    r.res->bytes += len;
    if (!line && len) {
        bad_line(&r, "no line given");
        return 1;
    }
    if (len > RD_MAX_LINE) {
        bad_line(&r, "line longer than %zu bytes: skipped", RD_MAX_LINE);
        return 1;
    }
    char *copy = malloc(len + 1 + RD_PAD);
    if (!copy) {
        bad_line(&r, "out of memory");
        return 1;
    }
    if (len)
        memcpy(copy, line, len);
    memset(copy + len, 0, 1 + RD_PAD);
    int rc = handle_line(&r, copy, len);
    free(copy);
    rd_free(&r);
    return rc;
}

/* ------------------------------------------------------------ files */

typedef struct lbuf {
    char *p;
    size_t cap;
} lbuf;

enum { EV_LINE, EV_TORN, EV_LONG, EV_GZERR, EV_IOERR };
/* A line (NUL-terminated at len), or an event; returns true to stop. */
typedef bool (*line_fn)(void *ctx, int ev, char *line, size_t len, uint64_t lineno,
                        const char *msg);

/* Reads path line by line (gz: through zlib).  -1 if it cannot be opened
 * (errno), else 0. */
static int read_lines(lbuf *lb, const char *path, bool gz, line_fn fn, void *ctx, uint64_t *bytes)
{
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0)
        return -1;
    gzFile z = NULL;
    if (gz) {
        z = gzdopen(fd, "rb");
        if (!z) {
            close(fd);
            errno = ENOMEM;
            return -1;
        }
        gzbuffer(z, 256 * 1024);
    } else {
        posix_fadvise(fd, 0, 0, POSIX_FADV_SEQUENTIAL);
    }
    if (lb->cap < 4 * RD_CHUNK) {
        char *n = realloc(lb->p, 4 * RD_CHUNK);
        if (!n) {
            if (z)
                gzclose_r(z);
            else
                close(fd);
            errno = ENOMEM;
            return -1;
        }
        lb->p = n;
        lb->cap = 4 * RD_CHUNK;
    }
    size_t have = 0, pos = 0, scanned = 0;
    uint64_t lineno = 0;
    bool skipping = false, stop = false, failed = false;
    for (;;) {
        while (!stop) {
            char *nl = memchr(lb->p + scanned, '\n', have - scanned);
            if (!nl) {
                scanned = have;
                break;
            }
            size_t end = (size_t)(nl - lb->p);
            lineno++;
            if (skipping) {
                skipping = false; /* the end of a line already reported */
            } else {
                *nl = '\0';
                stop = fn(ctx, EV_LINE, lb->p + pos, end - pos, lineno, NULL);
            }
            pos = scanned = end + 1;
        }
        if (stop)
            break;
        if (skipping || have - pos > RD_MAX_LINE) {
            if (!skipping) {
                skipping = true;
                stop = fn(ctx, EV_LONG, NULL, have - pos, lineno + 1, NULL);
                if (stop)
                    break;
            }
            pos = scanned = have;
        }
        if (pos > 0) {
            memmove(lb->p, lb->p + pos, have - pos);
            have -= pos;
            scanned -= pos;
            pos = 0;
        }
        if (lb->cap - have < RD_CHUNK + 1 + RD_PAD) {
            /* Up to what the longest line allowed needs, no more. */
            size_t nc = lb->cap * 2;
            if (nc > RD_MAX_LINE + 2 * RD_CHUNK)
                nc = RD_MAX_LINE + 2 * RD_CHUNK;
            char *n = nc > lb->cap ? realloc(lb->p, nc) : NULL;
            if (!n) {
                fn(ctx, EV_IOERR, NULL, 0, lineno + 1, "out of memory for a long line");
                failed = true;
                break;
            }
            lb->p = n;
            lb->cap = nc;
        }
        size_t room = lb->cap - have - 1 - RD_PAD;
        if (room > RD_READ)
            room = RD_READ;
        long n;
        if (z) {
            n = gzread(z, lb->p + have, (unsigned)room);
            int zerr = Z_OK;
            const char *zmsg = gzerror(z, &zerr);
            if (n <= 0 && zerr != Z_OK) {
                /* zlib says "<fd:N>: why"; the warning names the file. */
                if (zmsg && strncmp(zmsg, "<fd:", 4) == 0 && strstr(zmsg, ": "))
                    zmsg = strstr(zmsg, ": ") + 2;
                char m[300];
                snprintf(m, sizeof m, "gzip stream error: %s%s", zmsg ? zmsg : "?",
                         have ? "; the partial line before it is dropped" : "");
                fn(ctx, EV_GZERR, NULL, 0, lineno + 1, m);
                failed = true;
                break;
            }
        } else {
            n = (long)read(fd, lb->p + have, room);
            if (n < 0 && errno == EINTR)
                continue;
            if (n < 0) {
                char m[300];
                snprintf(m, sizeof m, "read error: %s", strerror(errno));
                fn(ctx, EV_IOERR, NULL, 0, lineno + 1, m);
                failed = true;
                break;
            }
        }
        if (n <= 0)
            break;
        have += (size_t)n;
        memset(lb->p + have, 0, 1 + RD_PAD);
        if (bytes)
            *bytes += (uint64_t)n;
    }
    if (!stop && !failed && !skipping && have > pos) {
        lb->p[have] = '\0';
        fn(ctx, EV_TORN, lb->p + pos, have - pos, lineno + 1, NULL);
    }
    if (z)
        gzclose_r(z);
    else
        close(fd);
    return 0;
}

/* The reader's handler of lines and events. */
static bool on_line(void *ctx, int ev, char *line, size_t len, uint64_t lineno, const char *msg)
{
    rd *r = ctx;
    r->line = lineno;
    switch (ev) {
    case EV_LINE:
        r->res->lines++;
        handle_line(r, line, len);
        break;
    case EV_TORN:
        r->res->lines++;
        bad_line(r, "torn last line (%zu bytes without a newline): skipped", len);
        break;
    case EV_LONG:
        r->res->lines++;
        bad_line(r, "line longer than %zu bytes: skipped", RD_MAX_LINE);
        break;
    case EV_GZERR:
        r->res->gz_errors++;
        warn(r, "%s", msg);
        break;
    default:
        warn(r, "%s", msg);
        break;
    }
    return false;
}

/* ------------------------------------------------------------ discovery */

static void set_err(char *errbuf, size_t errlen, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
static void set_err(char *errbuf, size_t errlen, const char *fmt, ...)
{
    if (!errbuf || !errlen)
        return;
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(errbuf, errlen, fmt, ap);
    va_end(ap);
}

/* "<channel>.log" (*win = 0) or "<channel>.<N>.log.gz" (*win = N >= 1). */
static bool chan_file(const char *name, int *ch, unsigned long *win)
{
    for (int c = 0; c < FL_CH_COUNT; c++) {
        size_t n = strlen(fl_channel_name(c));
        if (strncmp(name, fl_channel_name(c), n) != 0 || name[n] != '.')
            continue;
        const char *rest = name + n + 1;
        if (strcmp(rest, "log") == 0) {
            *ch = c;
            *win = 0;
            return true;
        }
        if (!is_digit(*rest))
            return false;
        char *e;
        errno = 0;
        unsigned long w = strtoul(rest, &e, 10);
        if (errno || w == 0 || strcmp(e, ".log.gz") != 0)
            return false;
        *ch = c;
        *win = w;
        return true;
    }
    return false;
}

static int64_t mtime_ns(const struct stat *st)
{
    return (int64_t)st->st_mtim.tv_sec * 1000000000 + st->st_mtim.tv_nsec;
}

/* A session directory: holds a channel file.  *newest: the latest mtime of
 * the directory and its channel files. */
static bool session_dir(const char *dir, int64_t *newest)
{
    DIR *d = opendir(dir);
    if (!d)
        return false;
    bool found = false;
    struct stat st;
    int64_t t = 0;
    if (newest && fstat(dirfd(d), &st) == 0)
        t = mtime_ns(&st);
    struct dirent *e;
    while ((e = readdir(d))) {
        int ch;
        unsigned long w;
        if (!chan_file(e->d_name, &ch, &w))
            continue;
        if (fstatat(dirfd(d), e->d_name, &st, 0) != 0 || !S_ISREG(st.st_mode))
            continue;
        found = true;
        if (!newest)
            break;
        if (mtime_ns(&st) > t)
            t = mtime_ns(&st);
    }
    closedir(d);
    if (newest)
        *newest = t;
    return found;
}

static char *join(const char *a, const char *b, const char *c)
{
    size_t n = strlen(a) + strlen(b) + strlen(c) + 1;
    char *s = malloc(n);
    if (s)
        snprintf(s, n, "%s%s%s", a, b, c);
    return s;
}

static int cmp_ulong(const void *a, const void *b)
{
    unsigned long x = *(const unsigned long *)a, y = *(const unsigned long *)b;
    return x < y ? -1 : x > y;
}

/* The files of channel ch, in reading order: the windows by number, then
 * the plain file (session directory), or <prefix>.<channel>.log (flat).
 * NULL-terminated, malloc'd; NULL when out of memory. */
static char **channel_files(const char *where, bool flat, int ch)
{
    size_t n = 0, cap = 8;
    char **v = calloc(cap + 1, sizeof *v);
    if (!v)
        return NULL;
    if (flat) {
        char suffix[32];
        snprintf(suffix, sizeof suffix, ".%s.log", fl_channel_name(ch));
        char *f = join(where, suffix, "");
        struct stat st;
        if (f && stat(f, &st) == 0 && S_ISREG(st.st_mode))
            v[n++] = f;
        else
            free(f);
        return v;
    }
    unsigned long *w = NULL;
    size_t nw = 0, wcap = 0;
    bool plain = false;
    DIR *d = opendir(where);
    if (d) {
        struct dirent *e;
        while ((e = readdir(d))) {
            int c;
            unsigned long win;
            if (!chan_file(e->d_name, &c, &win) || c != ch)
                continue;
            if (win == 0) {
                plain = true;
                continue;
            }
            if (nw == wcap) {
                wcap = wcap ? wcap * 2 : 16;
                unsigned long *nwv = realloc(w, wcap * sizeof *nwv);
                if (!nwv)
                    break;
                w = nwv;
            }
            w[nw++] = win;
        }
        closedir(d);
    }
    if (nw)
        qsort(w, nw, sizeof *w, cmp_ulong);
    for (size_t i = 0; i <= nw; i++) {
        char name[64];
        if (i < nw)
            snprintf(name, sizeof name, "/%s.%lu.log.gz", fl_channel_name(ch), w[i]);
        else if (plain)
            snprintf(name, sizeof name, "/%s.log", fl_channel_name(ch));
        else
            break;
        if (n == cap) {
            cap *= 2;
            char **nv = realloc(v, (cap + 1) * sizeof *nv);
            if (!nv)
                break;
            v = nv;
        }
        v[n] = join(where, name, "");
        if (v[n])
            n++;
        v[n] = NULL;
    }
    free(w);
    return v;
}

static void free_list(char **v)
{
    for (size_t i = 0; v && v[i]; i++)
        free(v[i]);
    free(v);
}

static bool ends_with(const char *s, const char *suf)
{
    size_t a = strlen(s), b = strlen(suf);
    return a >= b && strcmp(s + a - b, suf) == 0;
}

/* Pre-scans: the session ids of job_start records, or the first session_id
 * of any record. */
typedef struct idscan {
    rd r; /* only for probe_type's scratch */
    const char *want;
    const char *app; /* a job_start of another app is passed over */
    bool found_want;
    bool first_any; /* stop at the first record with a session_id */
    char id[256];
    int lines_left;
} idscan;

static bool on_id_line(void *ctx, int ev, char *line, size_t len, uint64_t lineno, const char *msg)
{
    (void)lineno;
    (void)msg;
    idscan *s = ctx;
    if (ev != EV_LINE)
        return false;
    char type[RD_TYPE_MAX];
    int tl = probe_type(&s->r, line, type);
    bool js = tl > 0 && fl_type_of(type, (size_t)tl) == FL_T_JOB_START;
    if (s->first_any) {
        if (--s->lines_left < 0)
            return true;
        if (tl > 0 && fl_is_batch_name(type, (size_t)tl)) {
            /* The writer puts session_id right after type. */
            scan sc = {0};
            s->r.str.len = 0;
            const char *k = strstr(line, "\"session_id\"");
            if (!k)
                return false;
            k = skip_ws(k + 12);
            if (*k != ':')
                return false;
            k = skip_ws(k + 1);
            size_t off = 0;
            if (*k == '"' && scan_env_str(&s->r, &sc, k, &off, "session_id", false)) {
                snprintf(s->id, sizeof s->id, "%s", s->r.str.p + off);
                return true;
            }
            return false;
        }
    } else if (!js) {
        return false;
    }
    json_t *j = json_loadb(line, len, JSON_DECODE_INT_AS_REAL, NULL);
    if (js && s->app) {
        const char *app = json_string_value(json_object_get(j, "app"));
        if (!app || strcmp(app, s->app) != 0) {
            json_decref(j);
            return false;
        }
    }
    const char *sid = json_string_value(json_object_get(j, "session_id"));
    bool stop = false;
    if (sid) {
        snprintf(s->id, sizeof s->id, "%s", sid);
        if (s->want && strcmp(sid, s->want) == 0)
            s->found_want = true;
        stop = s->first_any || s->found_want;
    }
    json_decref(j);
    return stop;
}

/* The channel files of a session (dir or flat prefix), in order. */
static char **all_files(const char *where, bool flat)
{
    char **all = calloc(1, sizeof *all);
    size_t n = 0;
    for (int ch = 0; all && ch < FL_CH_COUNT; ch++) {
        char **v = channel_files(where, flat, ch);
        for (size_t i = 0; v && v[i]; i++) {
            char **na = realloc(all, (n + 2) * sizeof *na);
            if (!na) {
                for (size_t k = i; v[k]; k++)
                    free(v[k]);
                break;
            }
            all = na;
            all[n++] = v[i];
            all[n] = NULL;
        }
        free(v);
    }
    return all;
}

/* Scans the files of a session for job_start (first_any: the first record
 * with a session_id).  Stops at the first file that had one. */
static void scan_ids(idscan *s, const char *where, bool flat, lbuf *lb)
{
    char **files = all_files(where, flat);
    for (size_t i = 0; files && files[i]; i++) {
        s->lines_left = 64;
        read_lines(lb, files[i], ends_with(files[i], ".gz"), on_id_line, s, NULL);
        if (s->id[0] || s->found_want)
            break;
    }
    free_list(files);
}

/* The app of a session directory: its job_start's, which the writer puts
 * first in every channel file, so only first lines are read. */
typedef struct appscan {
    rd r; /* only for probe_type's scratch */
    char app[256];
    bool found;
} appscan;

static bool on_app_line(void *ctx, int ev, char *line, size_t len, uint64_t lineno, const char *msg)
{
    (void)lineno;
    (void)msg;
    appscan *s = ctx;
    char type[RD_TYPE_MAX];
    int tl = ev == EV_LINE ? probe_type(&s->r, line, type) : -1;
    if (tl > 0 && fl_type_of(type, (size_t)tl) == FL_T_JOB_START) {
        json_t *j = json_loadb(line, len, JSON_DECODE_INT_AS_REAL, NULL);
        const char *app = json_string_value(json_object_get(j, "app"));
        if (app) {
            snprintf(s->app, sizeof s->app, "%s", app);
            s->found = true;
        }
        json_decref(j);
    }
    return true;
}

/* Whether the session directory dir's job_start names app; have (optional)
 * gets the app it names ("" when no first line is a job_start). */
static bool dir_app_is(const char *dir, const char *app, lbuf *lb, char *have, size_t cap)
{
    appscan s;
    memset(&s, 0, sizeof s);
    char **files = all_files(dir, false);
    for (size_t i = 0; files && files[i] && !s.found; i++)
        read_lines(lb, files[i], ends_with(files[i], ".gz"), on_app_line, &s, NULL);
    free_list(files);
    rd_free(&s.r);
    if (have && cap)
        snprintf(have, cap, "%s", s.found ? s.app : "");
    return s.found && strcmp(s.app, app) == 0;
}

typedef struct target {
    char *where; /* directory or flat prefix */
    bool flat;
    char id[256];
} target;

/* A flat prefix of name in dir ("<prefix>.<channel>.log"), or false;
 * *chan: the channel. */
static bool flat_name(const char *name, char *prefix, size_t cap, int *chan)
{
    for (int c = 0; c < FL_CH_COUNT; c++) {
        char suffix[32];
        snprintf(suffix, sizeof suffix, ".%s.log", fl_channel_name(c));
        size_t a = strlen(name), b = strlen(suffix);
        if (a > b && strcmp(name + a - b, suffix) == 0 && a - b < cap) {
            memcpy(prefix, name, a - b);
            prefix[a - b] = '\0';
            if (chan)
                *chan = c;
            return true;
        }
    }
    return false;
}

/* Whether ch is the first channel that prefix has a file of (each prefix
 * is considered once). */
static bool first_flat_channel(const char *dir, const char *prefix, int ch)
{
    for (int c = 0; c < ch; c++) {
        char name[1200];
        snprintf(name, sizeof name, "%s/%s.%s.log", dir, prefix, fl_channel_name(c));
        struct stat st;
        if (stat(name, &st) == 0 && S_ISREG(st.st_mode))
            return false;
    }
    return true;
}

static bool flat_exists(const char *prefix, int64_t *newest)
{
    bool found = false;
    int64_t t = 0;
    for (int c = 0; c < FL_CH_COUNT; c++) {
        char suffix[32];
        snprintf(suffix, sizeof suffix, ".%s.log", fl_channel_name(c));
        char *f = join(prefix, suffix, "");
        struct stat st;
        if (f && stat(f, &st) == 0 && S_ISREG(st.st_mode)) {
            found = true;
            if (mtime_ns(&st) > t)
                t = mtime_ns(&st);
        }
        free(f);
    }
    if (newest)
        *newest = t;
    return found;
}

/* In a directory: a log directory's session (1), the flat layout's chosen
 * prefix (1), nothing there (0), or an error (-1, errbuf set).  With app,
 * only the sessions and flat prefixes of that app are candidates. */
static int pick_in_dir(const char *dir, const char *want, const char *app, target *t, lbuf *lb,
                       char *errbuf, size_t errlen)
{
    DIR *d = opendir(dir);
    if (!d) {
        set_err(errbuf, errlen, "%s: cannot open the directory: %s", dir, strerror(errno));
        return -1;
    }
    char *best = NULL, *best_flat = NULL;
    int64_t best_t = INT64_MIN, best_flat_t = INT64_MIN;
    char *want_flat = NULL;
    bool any_flat = false;
    size_t other_app = 0; /* sessions and flat prefixes of another app */
    struct dirent *e;
    while ((e = readdir(d))) {
        if (e->d_name[0] == '.')
            continue;
        char *sub = join(dir, "/", e->d_name);
        if (!sub)
            continue;
        int64_t mt;
        struct stat st;
        char prefix[1024];
        int fch = 0;
        bool ok = stat(sub, &st) == 0;
        if (ok && S_ISDIR(st.st_mode)) {
            if (!session_dir(sub, &mt)) {
                free(sub);
                continue;
            }
            if (app && !dir_app_is(sub, app, lb, NULL, 0)) {
                other_app++;
                free(sub);
                continue;
            }
            if (!best || mt > best_t || (mt == best_t && strcmp(sub, best) > 0)) {
                free(best);
                best = sub;
                best_t = mt;
                continue;
            }
        } else if (ok && S_ISREG(st.st_mode) && flat_name(e->d_name, prefix, sizeof prefix, &fch) &&
                   first_flat_channel(dir, prefix, fch)) {
            char *pf = join(dir, "/", prefix);
            if (pf && app) {
                idscan s;
                memset(&s, 0, sizeof s);
                s.app = app;
                scan_ids(&s, pf, true, lb);
                rd_free(&s.r);
                if (!s.id[0]) {
                    other_app++;
                    free(pf);
                    free(sub);
                    continue;
                }
            }
            any_flat = true;
            if (pf && want && !want_flat) {
                idscan s;
                memset(&s, 0, sizeof s);
                s.want = want;
                s.app = app;
                scan_ids(&s, pf, true, lb);
                rd_free(&s.r);
                if (s.found_want) {
                    want_flat = pf;
                    pf = NULL;
                }
            }
            if (pf && flat_exists(pf, &mt) &&
                (!best_flat || mt > best_flat_t ||
                 (mt == best_flat_t && strcmp(pf, best_flat) > 0))) {
                free(best_flat);
                best_flat = pf;
                best_flat_t = mt;
                pf = NULL;
            }
            free(pf);
        }
        free(sub);
    }
    closedir(d);
    int rc = 0;
    if (best) {
        if (want) {
            set_err(errbuf, errlen,
                    "no session %s in the log directory %s (looked for %s/%s/ holding "
                    "<channel>.log or <channel>.<N>.log.gz)",
                    want, dir, dir, want);
            rc = -1;
        } else {
            t->where = best;
            best = NULL;
            t->flat = false;
            rc = 1;
        }
    } else if (want_flat) {
        t->where = want_flat;
        want_flat = NULL;
        t->flat = true;
        snprintf(t->id, sizeof t->id, "%s", want);
        rc = 1;
    } else if (any_flat && want) {
        set_err(errbuf, errlen,
                "no session %s in %s: no job_start of that session in its "
                "<prefix>.<channel>.log files",
                want, dir);
        rc = -1;
    } else if (best_flat) {
        t->where = best_flat;
        best_flat = NULL;
        t->flat = true;
        rc = 1;
    } else if (other_app) {
        set_err(errbuf, errlen,
                "no session of app \"%s\" in %s: the job_start of none of its %zu "
                "session%s names that app",
                app, dir, other_app, other_app == 1 ? "" : "s");
        rc = -1;
    }
    free(best);
    free(best_flat);
    free(want_flat);
    return rc;
}

static int find_session(const char *path_in, const char *want, const char *app, target *t, lbuf *lb,
                        char *errbuf, size_t errlen)
{
    memset(t, 0, sizeof *t);
    char *path = strdup(path_in);
    if (!path) {
        set_err(errbuf, errlen, "%s: out of memory", path_in);
        return -1;
    }
    size_t n = strlen(path);
    while (n > 1 && path[n - 1] == '/')
        path[--n] = '\0';
    int rc = -1;
    struct stat st;
    char prefix[4096];
    if (stat(path, &st) == 0 && S_ISDIR(st.st_mode)) {
        char *sub = want ? join(path, "/", want) : NULL;
        if (sub && session_dir(sub, NULL)) {
            t->where = sub;
            sub = NULL;
            rc = 0;
        } else if (session_dir(path, NULL)) {
            t->where = path;
            path = NULL;
            rc = 0;
        } else {
            int k = pick_in_dir(path, want, app, t, lb, errbuf, errlen);
            if (k == 1)
                rc = 0;
            else if (k == 0)
                set_err(errbuf, errlen,
                        "no session in %s: no device.log, scope.log, system.log or "
                        "<channel>.<N>.log.gz there (a session directory), no subdirectory "
                        "holding them (a log directory), no <prefix>.<channel>.log files "
                        "(the flat layout)",
                        path);
        }
        free(sub);
    } else if (flat_exists(path, NULL)) {
        t->where = path;
        path = NULL;
        t->flat = true;
        rc = 0;
    } else if (stat(path, &st) == 0 && S_ISREG(st.st_mode) &&
               flat_name(path, prefix, sizeof prefix, NULL) && flat_exists(prefix, NULL)) {
        t->where = strdup(prefix);
        t->flat = true;
        rc = t->where ? 0 : -1;
        if (rc)
            set_err(errbuf, errlen, "%s: out of memory", path);
    } else if (ends_with(path, ".log") && n > 4) {
        /* A trailing ".log" on a log path is dropped (the spec). */
        path[n - 4] = '\0';
        rc = find_session(path, want, app, t, lb, errbuf, errlen);
        if (rc < 0)
            set_err(errbuf, errlen,
                    "no session at %s: not a directory, no %s.device.log, %s.scope.log or "
                    "%s.system.log (the flat layout), and %s has none either",
                    path_in, path_in, path_in, path_in, path);
    } else {
        set_err(errbuf, errlen,
                "no session at %s: %s, and no %s.device.log, %s.scope.log or %s.system.log "
                "(the flat layout)",
                path, stat(path, &st) == 0 ? "not a directory" : "no such directory", path, path,
                path);
    }
    free(path);
    if (rc < 0)
        return -1;
    char have[256];
    if (app && !t->flat && !dir_app_is(t->where, app, lb, have, sizeof have)) {
        if (have[0])
            set_err(errbuf, errlen,
                    "the session directory %s is of app \"%s\" (its job_start), not \"%s\"",
                    t->where, have, app);
        else
            set_err(errbuf, errlen,
                    "the session directory %s has no job_start saying its app (looked for app "
                    "\"%s\")",
                    t->where, app);
        free(t->where);
        t->where = NULL;
        return -1;
    }
    if (t->id[0])
        return 0;
    /* The session's id: the one asked for, the flat layout's last job_start
     * (of app, with one), or the first session_id in a session directory. */
    idscan s;
    memset(&s, 0, sizeof s);
    s.first_any = !t->flat;
    s.want = want;
    s.app = t->flat ? app : NULL;
    scan_ids(&s, t->where, t->flat, lb);
    rd_free(&s.r);
    if (app && t->flat && !s.id[0]) {
        set_err(errbuf, errlen, "no job_start of app \"%s\" in %s.<channel>.log", app, t->where);
        free(t->where);
        t->where = NULL;
        return -1;
    }
    if (want) {
        if (!t->flat && s.id[0] && strcmp(s.id, want) != 0) {
            set_err(errbuf, errlen, "the session directory %s holds session %s, not %s", t->where,
                    s.id, want);
            free(t->where);
            t->where = NULL;
            return -1;
        }
        if (t->flat && !s.found_want) {
            set_err(errbuf, errlen,
                    "no session %s in %s.<channel>.log: no job_start of that session", want,
                    t->where);
            free(t->where);
            t->where = NULL;
            return -1;
        }
        snprintf(t->id, sizeof t->id, "%s", want);
    } else if (s.id[0]) {
        snprintf(t->id, sizeof t->id, "%s", s.id);
    } else if (!t->flat) {
        const char *base = strrchr(t->where, '/');
        snprintf(t->id, sizeof t->id, "%s", base ? base + 1 : t->where);
    }
    return 0;
}

int fl_read_session(const char *path, const fl_read_opts *opts, const fl_read_cb *cb,
                    fl_read_result *res, char *errbuf, size_t errlen)
{
    fl_read_result dummy;
    if (!res)
        res = &dummy;
    memset(res, 0, sizeof *res);
    if (errbuf && errlen)
        errbuf[0] = '\0';
    fl_read_opts o;
    fl_read_opts_init(&o);
    if (opts)
        o = *opts;
    const char *want = o.session_id && *o.session_id ? o.session_id : NULL;
    const char *app = o.app && *o.app ? o.app : NULL;
    if (!path || !*path) {
        set_err(errbuf, errlen, "no session path given");
        return -1;
    }
    lbuf lb = {0};
    target t;
    if (find_session(path, want, app, &t, &lb, errbuf, errlen) < 0) {
        free(lb.p);
        return -1;
    }
    snprintf(res->session_id, sizeof res->session_id, "%s", t.id);
    snprintf(res->session_dir, sizeof res->session_dir, "%s", t.where);
    res->flat = t.flat;

    rd r;
    memset(&r, 0, sizeof r);
    r.cb = cb;
    r.res = res;
    r.want = t.id[0] ? t.id : NULL;
    r.dedupe = o.dedupe_common;
    int rc = 0, opened = 0;
    char first_err[600] = "";
    for (int ch = 0; ch < FL_CH_COUNT; ch++) {
        char **files = channel_files(t.where, t.flat, ch);
        for (size_t i = 0; files && files[i]; i++) {
            r.file = files[i];
            r.line = 0;
            r.channel = ch;
            if (read_lines(&lb, files[i], ends_with(files[i], ".gz"), on_line, &r, &res->bytes) <
                0) {
                char m[560];
                snprintf(m, sizeof m, "cannot open %s: %s", files[i], strerror(errno));
                if (!first_err[0])
                    snprintf(first_err, sizeof first_err, "%s", m);
                warn(&r, "%s", m);
                continue;
            }
            opened++;
            res->files++;
        }
        free_list(files);
    }
    r.file = NULL;
    if (!opened) {
        set_err(errbuf, errlen, "%s: no channel file could be read%s%s", t.where,
                first_err[0] ? ": " : "", first_err);
        rc = -1;
    }
    res->crashed = !r.saw_shutdown;
    rd_free(&r);
    free(lb.p);
    free(t.where);
    return rc;
}

int fl_read_session_prefixed(const char *log_dir, const char *log_prefix, const fl_read_opts *opts,
                             const fl_read_cb *cb, fl_read_result *res, char *errbuf, size_t errlen)
{
    if (!log_prefix || !*log_prefix)
        return fl_read_session(log_dir, opts, cb, res, errbuf, errlen);
    if (res)
        memset(res, 0, sizeof *res);
    if (!log_dir || !*log_dir) {
        set_err(errbuf, errlen, "no log directory given for log_prefix \"%s\"", log_prefix);
        return -1;
    }
    fl_read_opts o;
    fl_read_opts_init(&o);
    if (opts)
        o = *opts;
    char *at = join(log_dir, "/", log_prefix);
    if (!at) {
        set_err(errbuf, errlen, "%s: out of memory", log_dir);
        return -1;
    }
    /* (a) and (b) name the files or the directory themselves, which hold
     * the app's sessions whatever name their job_start gives. */
    o.app = NULL;
    struct stat st;
    int rc = 1;
    for (int c = 0; rc > 0 && c < FL_CH_COUNT; c++) {
        char suffix[32];
        snprintf(suffix, sizeof suffix, ".%s.log", fl_channel_name(c));
        char *f = join(at, suffix, "");
        /* A channel file's own path: read as its flat prefix even when
         * <log_dir>/<log_prefix> is also a directory. */
        if (f && stat(f, &st) == 0 && S_ISREG(st.st_mode))
            rc = fl_read_session(f, &o, cb, res, errbuf, errlen);
        free(f);
    }
    if (rc > 0 && stat(at, &st) == 0 && S_ISDIR(st.st_mode))
        rc = fl_read_session(at, &o, cb, res, errbuf, errlen);
    if (rc > 0) {
        o.app = log_prefix;
        char why[1024] = "";
        rc = fl_read_session(log_dir, &o, cb, res, why, sizeof why);
        if (rc != 0)
            set_err(errbuf, errlen,
                    "no session for log_prefix \"%s\" in %s: no %s.<channel>.log files (the "
                    "flat layout), no directory %s, and no session of app \"%s\" read from %s: "
                    "%s",
                    log_prefix, log_dir, at, at, log_prefix, log_dir, why);
    }
    free(at);
    return rc;
}
