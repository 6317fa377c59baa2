/*
 * reader/scan.h - the JSON scanning primitives the reader's parsers share
 * (reader/scan.c): the batch scanner (reader/batch.c, reader/rows.c), the
 * type probe of every line (reader/line.c) and the session discovery's
 * look at first lines (reader/discover.c) validate JSON the same way and
 * give the same messages.
 *
 * They work on a NUL-terminated line followed by RD_PAD readable bytes:
 * every loop stops at the NUL because it is no byte that JSON allows
 * there, so the inner loops need no bounds checks, and any NUL found before
 * the end is an error.  No reader state: what a scan finds goes to a scan
 * (errors) and an sbuf (unescaped text).  The helpers the per-value loops
 * call are static inline here so that they stay inlined.
 */
#ifndef FL_READER_SCAN_H
#define FL_READER_SCAN_H

#include "cell.h"

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>
#if defined(__SSE2__)
#include <emmintrin.h>
#endif

/* Nesting that skipping a value accepts (jansson's limit). */
#define RD_MAX_DEPTH 2048
/* The longest record type the probe gives (with its NUL). */
#define RD_TYPE_MAX 256
/* Bytes after every line's NUL that may be read (zero or the next line):
 * the digit scanners load 8 and 16 bytes at a time. */
#define RD_PAD 128

/* A growable string buffer, NUL-terminated after every put. */
typedef struct sbuf {
    char *p;
    size_t len, cap;
} sbuf;

/* Room for n more bytes and a NUL; false when out of memory. */
bool fl_sb_reserve(sbuf *b, size_t n);

static inline bool sb_put(sbuf *b, const void *s, size_t n)
{
    if (!fl_sb_reserve(b, n))
        return false;
    memcpy(b->p + b->len, s, n);
    b->len += n;
    b->p[b->len] = '\0';
    return true;
}

/* What one scan of a line found wrong. */
typedef struct scan {
    const char *err; /* the line is not JSON: why (static text) */
    const char *at;  /* and where */
    char rec[200];   /* valid JSON, but not a usable batch: why ("" if it is) */
} scan;

/* The line is not JSON (the first reason counts); returns NULL, what every
 * scanning function returns on such an error. */
static inline const char *scan_fail(scan *s, const char *at, const char *msg)
{
    if (!s->err) {
        s->err = msg;
        s->at = at;
    }
    return NULL;
}

/* The line is JSON but not a usable record (the first reason counts). */
void fl_scan_rec_err(scan *s, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

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

/* After a member or an element: 1 at a ',' (*pp past it and the white
 * space after), 0 at close (*pp past it), -1 at anything else (*pp at
 * it, for the caller's message).  One rule for every JSON list we read. */
static inline int scan_next(const char **pp, char close)
{
    const char *p = skip_ws(*pp);
    if (*p == ',') {
        *pp = skip_ws(p + 1);
        return 1;
    }
    *pp = *p == close ? p + 1 : p;
    return *p == close ? 0 : -1;
}

static inline bool is_digit(char c)
{
    return (unsigned)((unsigned char)c - '0') < 10u;
}

/* The first byte from p on that ends a plain run of a string: '"', '\\',
 * a control character (the NUL included) or a byte above 0x7f.  Sixteen
 * bytes a step where the build has SSE2 (it may read 15 bytes past that
 * byte: within the line's RD_PAD). */
static inline const char *fl_scan_plain(const char *p)
{
#if defined(__SSE2__)
    const __m128i quote = _mm_set1_epi8('"'), bslash = _mm_set1_epi8('\\'),
                  space = _mm_set1_epi8(0x20);
    for (;; p += 16) {
        __m128i x = _mm_loadu_si128((const __m128i *)(const void *)p);
        /* Signed: bytes above 0x7f are below 0x20 too. */
        __m128i m = _mm_or_si128(_mm_or_si128(_mm_cmpeq_epi8(x, quote), _mm_cmpeq_epi8(x, bslash)),
                                 _mm_cmplt_epi8(x, space));
        unsigned bits = (unsigned)_mm_movemask_epi8(m);
        if (bits)
            return p + __builtin_ctz(bits);
    }
#else
    const unsigned char *q = (const unsigned char *)p;
    while (*q >= 0x20 && *q < 0x80 && *q != '"' && *q != '\\')
        q++;
    return (const char *)q;
#endif
}

/* p at '"': validates the string (escapes, UTF-8, no control characters,
 * no \u0000 as jansson); appends its text to out (NUL-terminated) when
 * out is not NULL.  Returns the byte after the closing quote, NULL on an
 * error. */
const char *fl_scan_str(scan *s, const char *p, sbuf *out);

/* p at '-' or a digit: a JSON number, validated.  c (NULL: only validate)
 * gets an int when it is an integer that fits int64 / uint64, else a real
 * (exact by the fast path, else strtod; inf when out of range). */
const char *fl_scan_num(scan *s, const char *p, fl_cell *c);

/* p at a value: skips it, validating (iteratively, RD_MAX_DEPTH levels). */
const char *fl_skip_value(scan *s, const char *p);

/* p at '"': a key; *k and *kn its text (in the line, or unescaped in key). */
const char *fl_scan_key(sbuf *key, scan *s, const char *p, const char **k, size_t *kn);

/*
 * The top-level "type" of the object in the line, unescaped into
 * buf[RD_TYPE_MAX] (scratch: a buffer for escaped keys): its length, or -1
 * when the line does not start an object, the type is not a string (or is
 * longer than RD_TYPE_MAX - 1), or the JSON is broken before it (jansson
 * then says why).  The writer puts "type" first or second: a few bytes.
 */
int fl_probe_type(sbuf *scratch, const char *line, char *buf);

#endif /* FL_READER_SCAN_H */
