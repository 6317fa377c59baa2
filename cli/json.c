/*
 * json.c - a growable output buffer and the JSON conventions the command
 * shares with the library's summary (docs/json-schema.md): strings escaped
 * per RFC 8259 with bytes that are not UTF-8 replaced by U+FFFD, so any
 * argv gives a valid document; numbers fixed-point with at most 6
 * decimals, trailing zeros removed, '.' whatever the locale, and null for
 * NaN and infinities.  An allocation failure is remembered (oom), never
 * fatal: the caller checks it once at the end.
 */
#include "cli.h"
#include "gp_internal.h"

#include <math.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>

static int reserve(cli_buf *b, size_t extra)
{
    if (b->oom)
        return 0;
    if (b->len + extra + 1 <= b->cap)
        return 1;
    size_t cap = b->cap ? b->cap : 256;
    while (cap < b->len + extra + 1)
        cap *= 2;
    char *p = realloc(b->p, cap);
    if (!p) {
        b->oom = 1;
        return 0;
    }
    b->p = p;
    b->cap = cap;
    return 1;
}

void cli_buf_putn(cli_buf *b, const char *s, size_t n)
{
    if (!reserve(b, n))
        return;
    memcpy(b->p + b->len, s, n);
    b->len += n;
    b->p[b->len] = '\0';
}

void cli_buf_put(cli_buf *b, const char *s)
{
    cli_buf_putn(b, s, strlen(s));
}

void cli_buf_printf(cli_buf *b, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    int n = vsnprintf(NULL, 0, fmt, ap);
    va_end(ap);
    if (n < 0 || !reserve(b, (size_t)n))
        return;
    va_start(ap, fmt);
    vsnprintf(b->p + b->len, (size_t)n + 1, fmt, ap);
    va_end(ap);
    b->len += (size_t)n;
}

void cli_buf_free(cli_buf *b)
{
    free(b->p);
    memset(b, 0, sizeof *b);
}

static void emit_buf(void *ctx, const char *p, size_t n)
{
    cli_buf_putn((cli_buf *)ctx, p, n);
}

void cli_json_str(cli_buf *b, const char *str)
{
    if (!str) {
        cli_buf_put(b, "null");
        return;
    }
    /* The library's escaping: the run object and its embedded summaries
     * treat text the same way. */
    gp_json_quote(str, strlen(str), emit_buf, b);
}

void cli_json_num(cli_buf *b, double v)
{
    if (!isfinite(v)) {
        cli_buf_put(b, "null");
        return;
    }
    gp_format_fixed(v, 6, 1, emit_buf, b); /* the summaries' number format */
}

void cli_json_key(cli_buf *b, const char *key)
{
    cli_json_str(b, key);
    cli_buf_put(b, ":");
}

void cli_json_sep(cli_buf *b, int *first)
{
    if (!*first)
        cli_buf_put(b, ",");
    *first = 0;
}
