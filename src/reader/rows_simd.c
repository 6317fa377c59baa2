/*
 * reader/rows_simd.c - the writer's rows at SIMD speed: the row scanners
 * that take the rows of a batch as the recorder writes them (non-negative
 * integers of at most 15 digits without leading zeros, no spaces, the
 * batch's column count in every row) with the same answers as the
 * byte-by-byte path (reader/rows.c), and stop at the first row they do not
 * take, which that path then reads (and reports).  Each checks a row's
 * shape on bit masks of its bytes before converting any number, and
 * converts without a branch on a digit.
 *
 *  - fast_rows_avx2 (x86-64 with AVX2, BMI1, BMI2 and POPCNT, chosen at
 *    run time; rows up to 128 bytes): fast_rows_ssse3's steps on 32-byte
 *    vectors, four numbers a step (BMI2 for shlx / shrx / bzhi: shifts by
 *    a row's end without cl; AVX2 CPUs have it in practice, one without
 *    takes fast_rows_ssse3);
 *  - fast_rows_ssse3 (SSSE3 and POPCNT): two numbers a step
 *    (pmaddubsw, pmaddwd);
 *  - fast_rows (SSE2, every x86-64; rows up to 64 bytes): SWAR, eight
 *    digits at a time.
 *
 * GP_READ_SIMD=ssse3, =sse2 or =off in the environment caps the choice
 * (tests, and comparing the paths on one build).
 */
#include "read_int.h"

#include <pthread.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>

/* The row paths this build has: fast_rows (SSE2, little-endian),
 * fast_rows_ssse3 and fast_rows_avx2 (x86-64, chosen at run time). */
#if defined(__BYTE_ORDER__) && __BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__ && defined(__SSE2__)
#define RD_SSE2 1
#include <emmintrin.h>
#if defined(__x86_64__) && defined(__GNUC__)
#define RD_SSSE3 1
#define RD_AVX2 1
#include <immintrin.h>
#include <tmmintrin.h>
#endif
#endif

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
#ifdef RD_AVX2
    if (lv == 2 && __builtin_cpu_supports("avx2") && __builtin_cpu_supports("bmi") &&
        __builtin_cpu_supports("bmi2"))
        lv = 3;
#endif
    const char *e = getenv("GP_READ_SIMD");
    int cap = 3;
    if (e && strcmp(e, "off") == 0)
        cap = 0;
    else if (e && strcmp(e, "sse2") == 0)
        cap = 1;
    else if (e && strcmp(e, "ssse3") == 0)
        cap = 2;
    simd_level = lv < cap ? lv : cap;
}

int fl_rd_simd_level(void)
{
    pthread_once(&simd_once, simd_init);
    return simd_level;
}

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
/* The numbers of a row, in bit masks of its bytes (bit i: byte i after
 * the '['; comma, digit and zero already cut to the bytes below the ']',
 * at bit end): none empty (a ',' first, after a ',' or last), none with a
 * leading zero, none of 16 digits or more.  One rule for every scanner,
 * over 64 or 128 bytes of row. */
#define RD_NUMBERS_OK(name, T)                                                                     \
    static inline __attribute__((always_inline)) bool name(T comma, T digit, T zero, T below,      \
                                                           unsigned end)                           \
    {                                                                                              \
        T starts = ((comma << 1) | 1) & below;                                                     \
        T run = digit;                                                                             \
        run &= run >> 1;                                                                           \
        run &= run >> 2;                                                                           \
        run &= run >> 4;                                                                           \
        run &= run >> 8;                                                                           \
        return ((starts & comma) | (comma >> (end - 1)) | (zero & starts & (digit >> 1)) | run) == \
               0;                                                                                  \
    }
RD_NUMBERS_OK(numbers_ok64, uint64_t)

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
        /* Only digits and commas, numbers as numbers_ok64 takes them. */
        if ((comma | digit) != below || !numbers_ok64(comma, digit, zero, below, end))
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
                v = rd_swar8((w ^ K) << (64 - 8 * len));
            } else {
                uint64_t w2;
                memcpy(&w2, r + b + 8, 8);
                v = rd_swar8(w ^ K) * p10[len - 8] + rd_swar8((w2 ^ K) << (128 - 8 * len));
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
RD_NUMBERS_OK(numbers_ok128, rd_u128)

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

/* The shape of a row that ends within its first 64 bytes (some byte there
 * is neither a digit nor a ','), for every vector scanner: true when that
 * byte is the ']' (*end) after ncommas + 1 numbers as numbers_ok64 takes
 * them (at least one), with *ends the bits of the numbers' ends (their
 * ',' and the ']').  Inlined: the caller's target compiles it. */
static inline __attribute__((always_inline)) bool row_ends64(const char *r, uint64_t comma,
                                                             uint64_t digit, uint64_t zero,
                                                             unsigned ncommas, unsigned *end,
                                                             uint64_t *ends)
{
    unsigned e = (unsigned)__builtin_ctzll(~(comma | digit));
    if (r[e] != ']' || e == 0)
        return false;
    uint64_t below = (1ull << e) - 1;
    comma &= below;
    digit &= below;
    if (!numbers_ok64(comma, digit, zero, below, e) ||
        (unsigned)__builtin_popcountll(comma) != ncommas)
        return false;
    *end = e;
    *ends = comma | (1ull << e);
    return true;
}

/* The same for a row of 65 to 128 bytes: the first 64 all digits and
 * commas, the masks of the next 64 in comma1, digit1 and zero1. */
static inline __attribute__((always_inline)) bool
row_ends128(const char *r, uint64_t comma, uint64_t digit, uint64_t zero, uint64_t comma1,
            uint64_t digit1, uint64_t zero1, unsigned ncommas, unsigned *end, rd_u128 *ends)
{
    uint64_t other1 = ~(comma1 | digit1);
    if (!other1)
        return false;
    unsigned e = 64 + (unsigned)__builtin_ctzll(other1);
    if (r[e] != ']')
        return false;
    rd_u128 below = ((rd_u128)1 << e) - 1;
    rd_u128 cm = (comma | (rd_u128)comma1 << 64) & below;
    rd_u128 dg = (digit | (rd_u128)digit1 << 64) & below;
    rd_u128 zr = zero | (rd_u128)zero1 << 64;
    if (!numbers_ok128(cm, dg, zr, below, e) ||
        (unsigned)(__builtin_popcountll((uint64_t)cm) +
                   __builtin_popcountll((uint64_t)(cm >> 64))) != ncommas)
        return false;
    *end = e;
    *ends = cm | ((rd_u128)1 << e);
    return true;
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
        unsigned end;
        fl_cell *c = cp;
        if (~(comma | digit)) {
            /* The first byte that is neither a digit nor a ',' must be
             * the ']'; a row of at least one number, each of 1..15 digits
             * without a leading zero, expect of them. */
            uint64_t ends;
            if (!row_ends64(r, comma, digit, zero, ncommas, &end, &ends))
                break;
            RD_CONVERT_ROW((unsigned)__builtin_ctzll);
        } else {
            /* 64 digits and commas: a longer row, up to 128 bytes. */
            uint64_t comma1, digit1, zero1;
            masks64(r + 64, &comma1, &digit1, &zero1);
            rd_u128 ends;
            if (!row_ends128(r, comma, digit, zero, comma1, digit1, zero1, ncommas, &end, &ends))
                break;
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

#ifdef RD_AVX2
/*
 * fast_rows_ssse3 on 32-byte vectors (chosen at run time,
 * fl_rd_simd_level): the same rows, checks and answers.  The masks come
 * from two 32-byte loads; the numbers are converted four at a time: two
 * numbers' 16-byte windows (each ending at its ',' or ']') in the two
 * lanes of one vector, digit_groups' steps on both, then groups_value's
 * on four, which leaves numbers 0 and 2 in the low lane and 1 and 3 in the
 * high one - so that unpacking them with their kind gives cells 0, 1 and
 * then 2, 3 as two 32-byte stores.  The last one to four numbers of a
 * row take one more such step, which stores four cells (those after the
 * row's are overwritten by the next row: it needs room for them).  Reads
 * what fast_rows_ssse3 reads.
 */

/* The numbers of lengths la and lb that end just before r[ea] and r[eb]:
 * their four groups of four digits, 32 bits each, a in the low lane. */
__attribute__((target("avx2"))) static inline __m256i digit_groups2(const char *r, size_t ea,
                                                                    size_t la, size_t eb, size_t lb)
{
    __m256i x = _mm256_inserti128_si256(
        _mm256_castsi128_si256(_mm_loadu_si128((const __m128i *)(const void *)(r + ea - 16))),
        _mm_loadu_si128((const __m128i *)(const void *)(r + eb - 16)), 1);
    __m256i t = _mm256_inserti128_si256(
        _mm256_castsi128_si256(_mm_loadu_si128((const __m128i *)(const void *)(rd_digit_sub + la))),
        _mm_loadu_si128((const __m128i *)(const void *)(rd_digit_sub + lb)), 1);
    x = _mm256_maddubs_epi16(_mm256_subs_epu8(x, t), _mm256_set1_epi16(0x010a));
    return _mm256_madd_epi16(x, _mm256_set1_epi32(0x00010064));
}

/* Numbers 0, 1 (in a) and 2, 3 (in b): their values, 64 bits each, in
 * the order 0, 2, 1, 3. */
__attribute__((target("avx2"))) static inline __m256i groups_value4(__m256i a, __m256i b)
{
    __m256i z = _mm256_madd_epi16(_mm256_packs_epi32(a, b), _mm256_set1_epi32(0x00012710));
    return _mm256_add_epi64(_mm256_mul_epu32(z, _mm256_set1_epi64x(100000000)),
                            _mm256_srli_epi64(z, 32));
}

/* 64 bytes from r: the masks of ',', digits and '0'. */
__attribute__((target("avx2"))) static inline void masks64_avx2(const char *r, uint64_t *comma,
                                                                uint64_t *digit, uint64_t *zero)
{
    const __m256i v_comma = _mm256_set1_epi8(','), v_zero = _mm256_set1_epi8('0');
    const __m256i v_off = _mm256_set1_epi8(0x50), v_lim = _mm256_set1_epi8(-118);
    __m256i a = _mm256_loadu_si256((const __m256i *)(const void *)r);
    __m256i b = _mm256_loadu_si256((const __m256i *)(const void *)(r + 32));
#define RD_MASK64(f)                                                                               \
    ((uint64_t)(uint32_t)_mm256_movemask_epi8(f(a)) |                                              \
     (uint64_t)(uint32_t)_mm256_movemask_epi8(f(b)) << 32)
#define RD_IS_COMMA(v) _mm256_cmpeq_epi8(v, v_comma)
#define RD_IS_DIGIT(v) _mm256_cmpgt_epi8(v_lim, _mm256_add_epi8(v, v_off))
#define RD_IS_ZERO(v) _mm256_cmpeq_epi8(v, v_zero)
    *comma = RD_MASK64(RD_IS_COMMA);
    *digit = RD_MASK64(RD_IS_DIGIT);
    *zero = RD_MASK64(RD_IS_ZERO);
#undef RD_MASK64
#undef RD_IS_COMMA
#undef RD_IS_DIGIT
#undef RD_IS_ZERO
}

/* The numbers cut by the bits of ends (expect of them; the last one is
 * the ']', at endbit), converted into cells at c: nfull steps of four,
 * then one for the last 1..4 (nlast), which stores four cells whatever
 * nlast is - once the row's numbers are used up, the step takes the ']'
 * again (ends keeps its bit) and a length wrapped into 0..15: values that
 * land in the cells after the row's, which the next row overwrites (the
 * caller makes room for them), and no branch on nlast. */
#define RD_CONVERT_ROW4(CTZ, ENDBIT)                                                               \
    do {                                                                                           \
        size_t b_ = 0;                                                                             \
        _Pragma("GCC unroll 4") for (size_t k_ = nfull; k_; k_--)                                  \
        {                                                                                          \
            size_t e0 = CTZ(ends);                                                                 \
            ends &= ends - 1;                                                                      \
            size_t e1 = CTZ(ends);                                                                 \
            ends &= ends - 1;                                                                      \
            size_t e2 = CTZ(ends);                                                                 \
            ends &= ends - 1;                                                                      \
            size_t e3 = CTZ(ends);                                                                 \
            ends &= ends - 1;                                                                      \
            __m256i v = groups_value4(digit_groups2(r, e0, e0 - b_, e1, e1 - e0 - 1),              \
                                      digit_groups2(r, e2, e2 - e1 - 1, e3, e3 - e2 - 1));         \
            _mm256_storeu_si256((__m256i *)(void *)c, _mm256_unpacklo_epi64(v_kind, v));           \
            _mm256_storeu_si256((__m256i *)(void *)(c + 2), _mm256_unpackhi_epi64(v_kind, v));     \
            c += 4;                                                                                \
            b_ = e3 + 1;                                                                           \
        }                                                                                          \
        size_t e0 = CTZ(ends);                                                                     \
        ends = (ends & (ends - 1)) | (ENDBIT);                                                     \
        size_t e1 = CTZ(ends);                                                                     \
        ends = (ends & (ends - 1)) | (ENDBIT);                                                     \
        size_t e2 = CTZ(ends);                                                                     \
        ends = (ends & (ends - 1)) | (ENDBIT);                                                     \
        size_t e3 = CTZ(ends);                                                                     \
        __m256i v =                                                                                \
            groups_value4(digit_groups2(r, e0, e0 - b_, e1, (e1 - e0 - 1) & 15),                   \
                          digit_groups2(r, e2, (e2 - e1 - 1) & 15, e3, (e3 - e2 - 1) & 15));       \
        _mm256_storeu_si256((__m256i *)(void *)c, _mm256_unpacklo_epi64(v_kind, v));               \
        _mm256_storeu_si256((__m256i *)(void *)(c + 2), _mm256_unpackhi_epi64(v_kind, v));         \
        c += nlast;                                                                                \
    } while (0)

/* fast_rows_avx2 for expect = 4 * nfull + nlast numbers a row (1 <= nlast
 * <= 4): inlined with constants for the writer's rows (its eleven
 * columns, the spec's ten), so that the steps of four are unrolled. */
__attribute__((target("avx2,bmi,bmi2,popcnt"), always_inline)) static inline const char *
fast_rows_avx2_n(const char *p, fl_cell **cpp, const fl_cell *cend, size_t nfull, size_t nlast,
                 size_t *done, bool *after)
{
    const __m256i v_kind = _mm256_set1_epi64x(FL_CELL_INT);
    fl_cell *cp = *cpp;
    *after = false;
    const unsigned ncommas = (unsigned)(4 * nfull + nlast) - 1;
    /* The last place a row may start at (it stores 4 * nfull + 4 cells);
     * 0: none (cp is never 0).  No row counter: rows are the cells / the
     * row's count, fewer values kept across the loop. */
    const size_t room = 4 * nfull + 4;
    const uintptr_t cp_last = (size_t)(cend - cp) >= room ? (uintptr_t)(cend - room) : (uintptr_t)0;
    while (*p == '[' && (uintptr_t)cp <= cp_last) {
        const char *r = p + 1;
        uint64_t comma, digit, zero;
        masks64_avx2(r, &comma, &digit, &zero);
        unsigned end;
        fl_cell *c = cp;
        if (~(comma | digit)) {
            /* As in fast_rows_ssse3. */
            uint64_t ends;
            if (!row_ends64(r, comma, digit, zero, ncommas, &end, &ends))
                break;
            RD_CONVERT_ROW4((unsigned)__builtin_ctzll, 1ull << end);
        } else {
            uint64_t comma1, digit1, zero1;
            masks64_avx2(r + 64, &comma1, &digit1, &zero1);
            rd_u128 ends;
            if (!row_ends128(r, comma, digit, zero, comma1, digit1, zero1, ncommas, &end, &ends))
                break;
            RD_CONVERT_ROW4(ctz128, (rd_u128)1 << end);
        }
        cp = c;
        p = r + end + 1;
        if (p[0] == ',' && p[1] == '[') {
            p++;
            continue;
        }
        *after = true;
        break;
    }
    *done = (size_t)(cp - *cpp) / (4 * nfull + nlast);
    *cpp = cp;
    return p;
}
#undef RD_CONVERT_ROW4

__attribute__((target("avx2,bmi,bmi2,popcnt"), noinline)) static const char *
fast_rows_avx2(const char *p, fl_cell **cpp, const fl_cell *cend, size_t expect, size_t *done,
               bool *after)
{
    if (expect == 0 || expect > 64) {
        *after = false;
        *done = 0;
        return p;
    }
    /* Whole steps of four, then the last 1..4 numbers (stored as four). */
    if (expect == 11)
        return fast_rows_avx2_n(p, cpp, cend, 2, 3, done, after);
    if (expect == 10)
        return fast_rows_avx2_n(p, cpp, cend, 2, 2, done, after);
    size_t nfull = (expect - 1) / 4;
    return fast_rows_avx2_n(p, cpp, cend, nfull, expect - 4 * nfull, done, after);
}
#endif

const char *fl_rd_fast_rows(int level, const char *p, fl_cell **cpp, const fl_cell *cend,
                            size_t expect, size_t *done, bool *after)
{
#ifdef RD_AVX2
    if (level >= 3)
        return fast_rows_avx2(p, cpp, cend, expect, done, after);
#endif
#ifdef RD_SSSE3
    if (level >= 2)
        return fast_rows_ssse3(p, cpp, cend, expect, done, after);
#endif
#ifdef RD_SSE2
    if (level >= 1)
        return fast_rows(p, cpp, cend, expect, done, after);
#endif
    (void)level;
    (void)cpp;
    (void)cend;
    (void)expect;
    *after = false;
    *done = 0;
    return p;
}
