/*
 * reader/rows.c - the "rows" of a batch into cells: nearly all of a
 * trace's bytes go through here, so the writer's rows take a SIMD path and
 * everything else JSON allows a byte-by-byte one with the same answers.
 *
 *  - fast_rows_ssse3 (x86-64 with SSSE3 and POPCNT, chosen at run time;
 *    rows up to 128 bytes): the same masks as fast_rows, the column count
 *    checked on them too, then two numbers at a time converted by
 *    pmaddubsw/pmaddwd (see there).  Else fast_rows (x86-64, SSE2): the
 *    writer's rows - integers, no spaces, at most 64 bytes - one row at a
 *    time: four 16-byte compares give the bit masks of ',', ']', digits
 *    and '0's; the row's shape (only digits and commas, no empty number, no
 *    leading zero, at most 15 digits, the expected count) is checked on the
 *    masks, then each number is cut between two bits and converted 8
 *    digits at a time with three multiplications (SWAR), and stored with
 *    its kind in one 16-byte store.  No branch depends on a digit, and
 *    finding the next number never waits on converting this one.
 *  - anything else (spaces, null, negative and real numbers, longer rows,
 *    rows before "columns", errors, GP_READ_SIMD=off): byte by byte
 *    (scan_row), integers still 8 digits at a time, the rest through
 *    fl_scan_num.
 *
 * Everything a row's values go through is in this file or static inline,
 * so that the per-value loops call nothing but the rare paths.
 */
#include "read_int.h"

#include <math.h>
#include <pthread.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>

/* A batch holding more cells than this is a bad record (the writer's
 * batches have at most 1024 rows of ~20 columns); bounds the memory of one
 * batch to 64 MiB whatever the line. */
#define RD_MAX_CELLS ((size_t)1 << 22)

/* The row paths this build has: SWAR (little-endian), fast_rows (SSE2),
 * fast_rows_ssse3 (x86-64, chosen at run time). */
#if defined(__BYTE_ORDER__) && __BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__
#define RD_SWAR 1
#if defined(__SSE2__)
#define RD_SSE2 1
#include <emmintrin.h>
#if defined(__x86_64__) && defined(__GNUC__)
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

/* Where the rows of a batch are in r->cells: cells its start, cp the next
 * cell, cend the end of the buffer (it grows). */
typedef struct cellpos {
    fl_cell *cells, *cp, *cend;
} cellpos;

/* The rows fast_rows_ssse3 or fast_rows take from p on (none when the row
 * length is not known yet or the batch is bad already), added to *nrows;
 * *after: it stopped just after a row's ']'. */
static inline const char *take_fast_rows(scan *s, const char *line, const char *p, int simd,
                                         size_t expect, cellpos *at, size_t *nrows, bool *after)
{
    *after = false;
#ifdef RD_SSE2
    if (simd && expect != SIZE_MAX && !s->rec[0] && *p == '[') {
        size_t nfast;
        fl_cell *cp = at->cp;
#ifdef RD_SSSE3
        /* It reads the 16 bytes before p. */
        if (simd > 1 && p - line >= 16)
            p = fast_rows_ssse3(p, &cp, at->cend, expect, &nfast, after);
        else
#endif
            p = fast_rows(p, &cp, at->cend, expect, &nfast, after);
        at->cp = cp;
        *nrows += nfast;
    }
#else
    (void)s;
    (void)line;
    (void)simd;
    (void)expect;
    (void)at;
    (void)nrows;
#endif
    return p;
}

/* The cells are full: they grow (up to RD_MAX_CELLS), or, when the batch
 * is bad already or cannot grow, its cells are dropped from here on (it
 * will not be delivered).  *row0: the current row's first cell.  false:
 * no room at all. */
static inline bool room_for_cell(rd *r, scan *s, cellpos *at, fl_cell **row0)
{
    size_t used = (size_t)(at->cp - at->cells), r0 = (size_t)(*row0 - at->cells);
    if (s->rec[0]) {
        /* Nothing of this batch is delivered any more. */
        at->cp = *row0 = at->cells;
    } else if (!grow_cells(r, used + 1)) {
        fl_scan_rec_err(s, "more than %zu values in one batch (or out of memory)", r->cell_cap);
        at->cp = *row0 = at->cells;
    } else {
        at->cells = r->cells;
        at->cend = at->cells + r->cell_cap;
        at->cp = at->cells + used;
        *row0 = at->cells + r0;
    }
    return at->cp != at->cend;
}

/* A number the integer paths do not take (negative, real, too long, a
 * leading zero): by fl_scan_num. */
static inline const char *num_cell(rd *r, scan *s, const char *p, fl_cell *cp, size_t nrows)
{
    p = fl_scan_num(s, p, cp);
    if (!p)
        return NULL;
    if (cp->kind == FL_CELL_REAL && !isfinite(cp->d))
        fl_scan_rec_err(s, "row %zu: a number out of range", nrows + 1);
    r->any_kind |= cp->kind != FL_CELL_INT;
    return p;
}

/* p at a value of row nrows + 1 (spaces before it are skipped): it goes to
 * *cp (row0: the row's first cell).  Returns the byte after it, NULL when
 * the line is not JSON. */
static inline const char *scan_cell(rd *r, scan *s, const char *p, fl_cell *cp, const fl_cell *row0,
                                    size_t nrows)
{
    for (;;) {
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
            if (!p || ((dd & 0xff) == 0 && p - s0 > 1) || *p == '.' || (*p | 0x20) == 'e')
                return num_cell(r, s, s0, cp, nrows);
            cp->kind = FL_CELL_INT; /* < 10^15 */
            cp->i = (int64_t)v;
            return p;
        }
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
            if (p - s0 > 19 || (d0 == 0 && p - s0 > 1) || *p == '.' || (*p | 0x20) == 'e')
                return num_cell(r, s, s0, cp, nrows);
            cp->kind = v > (uint64_t)INT64_MAX ? FL_CELL_UINT : FL_CELL_INT;
            cp->u = v;
            r->any_kind |= cp->kind != FL_CELL_INT;
            return p;
        }
#endif
        if (*p == '-')
            return num_cell(r, s, p, cp, nrows);
        if (*p == 'n' && p[1] == 'u' && p[2] == 'l' && p[3] == 'l') {
            r->any_kind = true;
            cp->kind = FL_CELL_NULL;
            cp->u = 0;
            return p + 4;
        }
        if (is_ws(*p)) {
            p = skip_ws(p);
            continue;
        }
        const char *v0 = p;
        p = fl_skip_value(s, p);
        if (!p)
            return NULL;
        fl_scan_rec_err(s, "row %zu, value %zu is not a number or null (%.*s)", nrows + 1,
                        (size_t)(cp - row0) + 1, (int)(p - v0 > 24 ? 24 : p - v0), v0);
        cp->kind = FL_CELL_NULL;
        r->any_kind = true;
        return p;
    }
}

/* p at row nrows + 1, byte by byte: its values into cells from at->cp on,
 * their count checked against *expect (SIZE_MAX: this row sets it).
 * Returns the byte after the row, NULL when the line is not JSON. */
static inline const char *scan_row(rd *r, scan *s, const char *p, cellpos *at, size_t *expect,
                                   size_t nrows)
{
    if (*p != '[') {
        fl_scan_rec_err(s, "row %zu is not an array", nrows + 1);
        return fl_skip_value(s, p);
    }
    p++;
    fl_cell *row0 = at->cp;
    if (is_ws(*p))
        p = skip_ws(p);
    if (*p == ']') {
        p++;
    } else {
        for (;;) {
            if (at->cp == at->cend && !room_for_cell(r, s, at, &row0))
                return scan_fail(s, p, "out of memory");
            p = scan_cell(r, s, p, at->cp, row0, nrows);
            if (!p)
                return NULL;
            at->cp++;
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
            return scan_fail(s, p, c ? "expected ',' or ']' in a row" : "unexpected end of line");
        }
    }
    size_t len = (size_t)(at->cp - row0);
    if (*expect == SIZE_MAX)
        *expect = len;
    else if (len != *expect && !s->rec[0])
        fl_scan_rec_err(s, "row %zu has %zu values, expected %zu", nrows + 1, len, *expect);
    if (s->rec[0])
        at->cp = at->cells; /* bounded memory: nothing will be delivered */
    return p;
}

const char *fl_rd_scan_rows(rd *r, scan *s, const char *line, const char *p, size_t expect,
                            size_t *nrows_out, size_t *ncells_out)
{
    size_t nrows = 0;
#ifdef RD_SSE2
    const int simd = rd_simd_level();
#else
    const int simd = 0;
#endif
    if (*p != '[') {
        fl_scan_rec_err(s, "\"rows\" is not an array");
        return fl_skip_value(s, p);
    }
    p = skip_ws(p + 1);
    if (!r->cell_cap && !grow_cells(r, 1))
        return scan_fail(s, p, "out of memory");
    cellpos at = {.cells = r->cells, .cp = r->cells, .cend = r->cells + r->cell_cap};
    r->any_kind = false;
    if (*p == ']') {
        p++;
    } else {
        for (;;) {
            bool after;
            p = take_fast_rows(s, line, p, simd, expect, &at, &nrows, &after);
            if (!after) {
                p = scan_row(r, s, p, &at, &expect, nrows);
                if (!p)
                    return NULL;
                nrows++;
            }
            p = skip_ws(p);
            if (*p == ',') {
                p = skip_ws(p + 1);
                continue;
            }
            if (*p == ']') {
                p++;
                break;
            }
            return scan_fail(s, p,
                             *p ? "expected ',' or ']' after a row" : "unexpected end of line");
        }
    }
    *nrows_out = nrows;
    *ncells_out = (size_t)(at.cp - at.cells);
    return p;
}
