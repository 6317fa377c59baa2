/*
 * util/buf.h - the growable text buffer every writer appends to, and the
 * number writers its hot loops use (buf.c).
 *
 * Appends never fail loudly: on an allocation failure oom is set and later
 * appends do nothing until fl_buf_reset().
 */
#ifndef GP_UTIL_BUF_H
#define GP_UTIL_BUF_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

typedef struct fl_buf {
    char *p;
    size_t len, cap;
    bool oom;
} fl_buf;

void fl_buf_free(fl_buf *b);
void fl_buf_reset(fl_buf *b); /* len = 0, keeps the memory */
/* fl_buf_reserve's growth; callers use fl_buf_reserve. */
char *fl_buf_reserve_slow(fl_buf *b, size_t n);
/* Room for n more bytes (and a NUL) at the end; NULL once oom.  Write
 * there, then fl_buf_commit(b, end) with the end of what was written.
 * Inline: the exports reserve a few times per event, almost always within
 * the capacity. */
static inline char *fl_buf_reserve(fl_buf *b, size_t n)
{
    if (!b->oom && b->cap > b->len && n < b->cap - b->len)
        return b->p + b->len;
    return fl_buf_reserve_slow(b, n);
}
static inline void fl_buf_commit(fl_buf *b, char *end)
{
    b->len = (size_t)(end - b->p);
    b->p[b->len] = '\0';
}
static inline void fl_buf_put(fl_buf *b, const char *s, size_t n)
{
    char *d = fl_buf_reserve(b, n);
    if (!d)
        return;
    if (n)
        memcpy(d, s, n);
    fl_buf_commit(b, d + n);
}
void fl_buf_puts(fl_buf *b, const char *s);
void fl_buf_printf(fl_buf *b, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
void fl_buf_u64(fl_buf *b, uint64_t v);
void fl_buf_i64(fl_buf *b, int64_t v);
void fl_buf_str(fl_buf *b, const char *s); /* JSON string literal; NULL -> null */
void fl_buf_double(fl_buf *b, double v);   /* fixed, <= 6 decimals; null if not finite */
/* The value, or null when !ok (a metric that was not reported). */
void fl_buf_opt_u64(fl_buf *b, bool ok, uint64_t v);
void fl_buf_opt_i64(fl_buf *b, bool ok, int64_t v);
void fl_buf_opt_double(fl_buf *b, bool ok, double v);
/* The same as a JSON member after others: ,"key":value (key a plain
 * identifier, written as is). */
void fl_buf_member_opt_u64(fl_buf *b, const char *key, bool ok, uint64_t v);
void fl_buf_member_opt_double(fl_buf *b, const char *key, bool ok, double v);
/* The text, malloc'd, handed to the caller (b is left empty); NULL after an
 * allocation failure. */
char *fl_buf_take(fl_buf *b);

/* "" s "" only compiles for a string literal, whose sizeof is its length
 * plus one - a pointer would silently give sizeof(char *). */
#define FL_BUF_LIT(b, s) fl_buf_put((b), "" s "", sizeof(s) - 1)

/* An array *p of *cap elements of size bytes grown (doubling, from 16) to
 * hold at least need; 0, or -1 when out of memory (*p unchanged). */
int fl_grow(void **p, size_t *cap, size_t need, size_t size);

/* ------------------------------------------------ raw number writers */

/* Writers into memory reserved with fl_buf_reserve: each writes at d and
 * returns the end.  Inline, because the batch rows are almost all numbers
 * and these are their hot path. */

extern const char fl_digit_pairs[201];  /* "00" "01" ... "99" */
extern const uint64_t fl_pow10_u64[20]; /* 10^0 .. 10^19 */

/* Decimal digits of v at d; returns the end.  Needs 20 bytes.  The digit
 * count comes from the bit length (log10(2) ~ 1233/4096) and one table
 * compare; the digits are written from the end two at a time. */
static inline char *fl_put_u64(char *d, uint64_t v)
{
    if (v < 10) { /* flags, kinds and the many zero columns */
        *d = (char)('0' + v);
        return d + 1;
    }
    int t = ((64 - __builtin_clzll(v)) * 1233) >> 12;
    int n = t + (v >= fl_pow10_u64[t]);
    char *end = d + n, *p = end;
    while (v >= 100) {
        unsigned i = (unsigned)(v % 100) * 2;
        v /= 100;
        *--p = fl_digit_pairs[i + 1];
        *--p = fl_digit_pairs[i];
    }
    if (v >= 10) {
        *--p = fl_digit_pairs[v * 2 + 1];
        *--p = fl_digit_pairs[v * 2];
    } else {
        *--p = (char)('0' + v);
    }
    return end;
}

/* Needs 21 bytes. */
static inline char *fl_put_i64(char *d, int64_t v)
{
    if (v < 0) {
        *d++ = '-';
        /* Unsigned negation, so INT64_MIN has a magnitude too. */
        return fl_put_u64(d, 0u - (uint64_t)v);
    }
    return fl_put_u64(d, (uint64_t)v);
}

static inline char *fl_put_lit(char *d, const char *s, size_t n)
{
    memcpy(d, s, n);
    return d + n;
}

static inline char *fl_put_null(char *d)
{
    return fl_put_lit(d, "null", 4);
}

/* ,v - a number after the first of a list.  Needs 21 bytes. */
static inline char *fl_put_col(char *d, uint64_t v)
{
    *d++ = ',';
    return fl_put_u64(d, v);
}

static inline char *fl_put_opt_u64(char *d, bool ok, uint64_t v)
{
    return ok ? fl_put_u64(d, v) : fl_put_null(d);
}

#endif /* GP_UTIL_BUF_H */
