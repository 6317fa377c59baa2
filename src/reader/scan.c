/*
 * reader/scan.c - the JSON scanning primitives (reader/scan.h): strings,
 * numbers, skipping values, keys and the type probe.
 *
 * They validate as strictly as jansson, which parses every record that is
 * not a batch, so that a line is JSON or not whichever parser reads it.
 * Unlike jansson they do not look for duplicate keys inside values they
 * skip (the batch scanner checks its own keys), and a number beyond a
 * double is a bad record rather than a bad line.  Numbers are exact:
 * integers to 2^64-1, reals by the exact fast path or strtod in the C
 * locale (a program's setlocale must not change what "1.5" means).
 */
#include "scan.h"

#include <locale.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

bool fl_sb_reserve(sbuf *b, size_t n)
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

void fl_scan_rec_err(scan *s, const char *fmt, ...)
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
const char *fl_scan_str(scan *s, const char *p, sbuf *out)
{
    const unsigned char *q = (const unsigned char *)p + 1;
    if (out) {
        if (!fl_sb_reserve(out, 0))
            return scan_fail(s, p, "out of memory");
        out->p[out->len] = '\0';
    }
    for (;;) {
        const unsigned char *run = q;
        q = (const unsigned char *)fl_scan_plain((const char *)q);
        if (out && q > run && !sb_put(out, run, (size_t)(q - run)))
            return scan_fail(s, p, "out of memory");
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
                    return scan_fail(s, (const char *)q, "invalid \\u escape");
                size_t used = 6;
                if (cp >= 0xd800 && cp <= 0xdbff) {
                    if (q[6] != '\\' || q[7] != 'u')
                        return scan_fail(s, (const char *)q, "lone surrogate in \\u escape");
                    long lo = hex4(q + 8);
                    if (lo < 0xdc00 || lo > 0xdfff)
                        return scan_fail(s, (const char *)q, "invalid surrogate pair");
                    cp = 0x10000 + ((cp - 0xd800) << 10) + (lo - 0xdc00);
                    used = 12;
                } else if (cp >= 0xdc00 && cp <= 0xdfff) {
                    return scan_fail(s, (const char *)q, "lone surrogate in \\u escape");
                } else if (cp == 0) {
                    return scan_fail(s, (const char *)q, "\\u0000 in a string");
                }
                if (out) {
                    char u[4];
                    if (!sb_put(out, u, put_utf8(u, (unsigned long)cp)))
                        return scan_fail(s, p, "out of memory");
                }
                q += used;
                continue;
            }
            default:
                return scan_fail(s, (const char *)q, "invalid escape in a string");
            }
            if (out && !sb_put(out, &e, 1))
                return scan_fail(s, p, "out of memory");
            q += 2;
        } else if (c >= 0x80) {
            int n = utf8_len(q);
            if (!n)
                return scan_fail(s, (const char *)q, "invalid UTF-8 in a string");
            if (out && !sb_put(out, q, (size_t)n))
                return scan_fail(s, p, "out of memory");
            q += n;
        } else {
            return scan_fail(s, (const char *)q,
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

/* p at '-' or a digit: a JSON number, validated.  c (NULL: only validate)
 * gets an int when it is an integer that fits int64 / uint64, else a real
 * (exact by the fast path, else strtod; inf when out of range). */
const char *fl_scan_num(scan *s, const char *p, fl_cell *c)
{
    const char *start = p;
    bool neg = false;
    if (*p == '-') {
        neg = true;
        p++;
    }
    if (!is_digit(*p))
        return scan_fail(s, start, "invalid number");
    const char *is = p;
    if (*p == '0') {
        p++;
        if (is_digit(*p))
            return scan_fail(s, start, "number with a leading zero");
    } else {
        while (is_digit(*p))
            p++;
    }
    const char *ie = p, *fs = NULL, *fe = NULL;
    if (*p == '.') {
        p++;
        fs = p;
        if (!is_digit(*p))
            return scan_fail(s, start, "invalid number");
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
            return scan_fail(s, start, "invalid number");
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
const char *fl_skip_value(scan *s, const char *p)
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
                return scan_fail(s, p, "nested too deeply");
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
            p = fl_scan_str(s, p, NULL);
            if (!p)
                return NULL;
            break;
        case 't':
        case 'f':
        case 'n': {
            /* strncmp stops at the line's NUL: never reads past it. */
            const char *lit = *p == 't' ? "true" : *p == 'f' ? "false" : "null";
            size_t n = strlen(lit);
            if (strncmp(p, lit, n) != 0)
                return scan_fail(s, p, "invalid literal");
            p += n;
            break;
        }
        default:
            if (*p == '-' || is_digit(*p)) {
                p = fl_scan_num(s, p, NULL);
                if (!p)
                    return NULL;
                break;
            }
            return scan_fail(s, p, *p ? "invalid value" : "unexpected end of line");
        }
        /* After a value: separators and closing brackets. */
        for (;;) {
            if (depth == 0)
                return p;
            bool obj = (stack[(depth - 1) >> 3] >> ((depth - 1) & 7)) & 1;
            int next = scan_next(&p, obj ? '}' : ']');
            if (next > 0) {
                if (obj)
                    goto key;
                goto value;
            }
            if (next == 0) {
                depth--;
                continue;
            }
            return scan_fail(s, p, obj ? "expected ',' or '}'" : "expected ',' or ']'");
        }
    key:
        if (*p != '"')
            return scan_fail(s, p, "expected a key");
        p = fl_scan_str(s, p, NULL);
        if (!p)
            return NULL;
        p = skip_ws(p);
        if (*p != ':')
            return scan_fail(s, p, "expected ':'");
        p = skip_ws(p + 1);
    value:;
    }
}

/* A key in the line as it is when it has no escapes (the writer's keys:
 * no copy), else unescaped into key. */
const char *fl_scan_key(sbuf *key, scan *s, const char *p, const char **k, size_t *kn)
{
    const unsigned char *q = (const unsigned char *)fl_scan_plain(p + 1);
    if (*q == '"') {
        *k = p + 1;
        *kn = (size_t)((const char *)q - (p + 1));
        return (const char *)q + 1;
    }
    key->len = 0;
    const char *e = fl_scan_str(s, p, key);
    *k = key->p ? key->p : "";
    *kn = key->len;
    return e;
}

/* Keys before "type" are skipped, validated; the type is unescaped in
 * scratch before it is copied to buf. */
int fl_probe_type(sbuf *scratch, const char *line, char *buf)
{
    scan s; /* its errors are not read: not all 200 bytes of rec cleared */
    s.err = s.at = NULL;
    s.rec[0] = '\0';
    const char *p = skip_ws(line);
    if (*p != '{')
        return -1;
    p = skip_ws(p + 1);
    while (*p == '"') {
        const char *k;
        size_t kn;
        p = fl_scan_key(scratch, &s, p, &k, &kn);
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
            const char *e = fl_scan_plain(p + 1);
            if (*e == '"' && e - (p + 1) < RD_TYPE_MAX) {
                /* No escapes (the writer's): as it is. */
                size_t n = (size_t)(e - (p + 1));
                memcpy(buf, p + 1, n);
                buf[n] = '\0';
                return (int)n;
            }
            scratch->len = 0;
            if (!fl_scan_str(&s, p, scratch) || scratch->len >= RD_TYPE_MAX)
                return -1;
            memcpy(buf, scratch->p, scratch->len + 1);
            return (int)scratch->len;
        }
        p = fl_skip_value(&s, p);
        if (!p)
            return -1;
        p = skip_ws(p);
        if (*p != ',')
            return -1;
        p = skip_ws(p + 1);
    }
    return -1;
}
