/*
 * util/buf.c - the growable text buffer every writer appends to, and the
 * number writers (buf.h).
 *
 * Promises: it grows by doubling and stays NUL-terminated after every
 * append, so p can be used as a C string.  After an allocation failure oom
 * is set and appends are ignored until fl_buf_reset(), which lets the
 * writer drop a damaged line and try the next one; nothing here prints or
 * aborts.
 */
#include "buf.h"
#include "text.h"

#include <math.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define FL_BUF_MIN_CAP 256

char *fl_buf_reserve_slow(fl_buf *b, size_t n)
{
    if (b->oom)
        return NULL;
    if (n > SIZE_MAX - b->len - 1) {
        b->oom = true;
        return NULL;
    }
    size_t need = b->len + n + 1;
    if (need > b->cap) {
        size_t cap = b->cap ? b->cap : FL_BUF_MIN_CAP;
        while (cap < need)
            cap = cap > SIZE_MAX / 2 ? need : cap * 2;
        char *p = realloc(b->p, cap);
        if (!p) {
            b->oom = true;
            return NULL;
        }
        b->p = p;
        b->cap = cap;
    }
    return b->p + b->len;
}

void fl_buf_free(fl_buf *b)
{
    if (!b)
        return;
    free(b->p);
    b->p = NULL;
    b->len = b->cap = 0;
    b->oom = false;
}

void fl_buf_reset(fl_buf *b)
{
    b->len = 0;
    b->oom = false;
    if (b->p)
        b->p[0] = '\0';
}

void fl_buf_puts(fl_buf *b, const char *s)
{
    fl_buf_put(b, s, strlen(s));
}

void fl_buf_printf(fl_buf *b, const char *fmt, ...)
{
    if (b->oom)
        return;
    va_list ap, again;
    va_start(ap, fmt);
    va_copy(again, ap);
    size_t avail = b->cap > b->len ? b->cap - b->len : 0;
    int n = vsnprintf(avail ? b->p + b->len : NULL, avail, fmt, ap);
    va_end(ap);
    if (n < 0) {
        /* vsnprintf may have stored part of the text: hide it again. */
        if (b->p)
            b->p[b->len] = '\0';
    } else if ((size_t)n < avail) {
        b->len += (size_t)n;
    } else {
        char *d = fl_buf_reserve(b, (size_t)n);
        if (d) {
            vsnprintf(d, (size_t)n + 1, fmt, again);
            b->len += (size_t)n;
        }
    }
    va_end(again);
}

static void emit_buf(void *ctx, const char *p, size_t n)
{
    fl_buf_put((fl_buf *)ctx, p, n);
}

/* The project's JSON conventions (gp_json_quote, gp_format_fixed), shared
 * by the session records and the command's reports.  A string of plain
 * ASCII (the names, almost always) is copied whole; anything else goes
 * through gp_json_quote, which escapes in runs. */
void fl_buf_str(fl_buf *b, const char *s)
{
    if (!s) {
        fl_buf_put(b, "null", 4);
        return;
    }
    const unsigned char *u = (const unsigned char *)s;
    size_t n = 0;
    while (u[n] >= 0x20 && u[n] < 0x7F && u[n] != '"' && u[n] != '\\')
        n++;
    if (u[n] != '\0') {
        gp_json_quote(s, n + strlen(s + n), emit_buf, b);
        return;
    }
    char *d = fl_buf_reserve(b, n + 2);
    if (!d)
        return;
    *d++ = '"';
    memcpy(d, s, n);
    d += n;
    *d++ = '"';
    fl_buf_commit(b, d);
}

/* gp_format_fixed(v, 6, 1) without printf: the same llround of v * 10^6,
 * the integer part by fl_put_u64, the six decimals trimmed. */
void fl_buf_double(fl_buf *b, double v)
{
    if (!isfinite(v)) {
        fl_buf_put(b, "null", 4);
        return;
    }
    if (!(fabs(v) * 1e6 < 9.0e18)) {
        gp_format_fixed(v, 6, 1, emit_buf, b);
        return;
    }
    long long q = llround(v * 1e6);
    char *d = fl_buf_reserve(b, 32);
    if (!d)
        return;
    if (q < 0)
        *d++ = '-';
    uint64_t mag = q < 0 ? 0ull - (uint64_t)q : (uint64_t)q;
    d = fl_put_u64(d, mag / 1000000);
    unsigned frac = (unsigned)(mag % 1000000);
    if (frac) {
        int n = 6;
        while (frac % 10 == 0) {
            frac /= 10;
            n--;
        }
        *d = '.';
        for (int i = n; i > 0; i--, frac /= 10)
            d[i] = (char)('0' + frac % 10);
        d += n + 1;
    }
    fl_buf_commit(b, d);
}

void fl_buf_opt_u64(fl_buf *b, bool ok, uint64_t v)
{
    if (ok)
        fl_buf_u64(b, v);
    else
        fl_buf_put(b, "null", 4);
}

void fl_buf_opt_i64(fl_buf *b, bool ok, int64_t v)
{
    if (ok)
        fl_buf_i64(b, v);
    else
        fl_buf_put(b, "null", 4);
}

void fl_buf_opt_double(fl_buf *b, bool ok, double v)
{
    if (ok)
        fl_buf_double(b, v);
    else
        fl_buf_put(b, "null", 4);
}

static void member_key(fl_buf *b, const char *key)
{
    fl_buf_put(b, ",\"", 2);
    fl_buf_puts(b, key);
    fl_buf_put(b, "\":", 2);
}

void fl_buf_member_opt_u64(fl_buf *b, const char *key, bool ok, uint64_t v)
{
    member_key(b, key);
    fl_buf_opt_u64(b, ok, v);
}

void fl_buf_member_opt_double(fl_buf *b, const char *key, bool ok, double v)
{
    member_key(b, key);
    fl_buf_opt_double(b, ok, v);
}

char *fl_buf_take(fl_buf *b)
{
    if (b->oom) {
        fl_buf_free(b);
        return NULL;
    }
    char *p = b->p ? b->p : strdup("");
    b->p = NULL;
    b->len = b->cap = 0;
    return p;
}

int fl_grow(void **p, size_t *cap, size_t need, size_t size)
{
    if (need <= *cap)
        return 0;
    size_t c = *cap ? *cap * 2 : 16;
    while (c < need)
        c *= 2;
    if (size && c > SIZE_MAX / size)
        return -1;
    void *q = realloc(*p, c * size);
    if (!q)
        return -1;
    *p = q;
    *cap = c;
    return 0;
}

/* ------------------------------------------------------------ numbers */

const char fl_digit_pairs[201] = "00010203040506070809"
                                 "10111213141516171819"
                                 "20212223242526272829"
                                 "30313233343536373839"
                                 "40414243444546474849"
                                 "50515253545556575859"
                                 "60616263646566676869"
                                 "70717273747576777879"
                                 "80818283848586878889"
                                 "90919293949596979899";

const uint64_t fl_pow10_u64[20] = {1ull,
                                   10ull,
                                   100ull,
                                   1000ull,
                                   10000ull,
                                   100000ull,
                                   1000000ull,
                                   10000000ull,
                                   100000000ull,
                                   1000000000ull,
                                   10000000000ull,
                                   100000000000ull,
                                   1000000000000ull,
                                   10000000000000ull,
                                   100000000000000ull,
                                   1000000000000000ull,
                                   10000000000000000ull,
                                   100000000000000000ull,
                                   1000000000000000000ull,
                                   10000000000000000000ull};

void fl_buf_u64(fl_buf *b, uint64_t v)
{
    char *d = fl_buf_reserve(b, 20);
    if (d)
        fl_buf_commit(b, fl_put_u64(d, v));
}

void fl_buf_i64(fl_buf *b, int64_t v)
{
    char *d = fl_buf_reserve(b, 21);
    if (d)
        fl_buf_commit(b, fl_put_i64(d, v));
}
