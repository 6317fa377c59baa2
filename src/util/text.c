/*
 * util/text.c - UTF-8 checking and JSON string literals, shared by the
 * summary renderer and the command's run report so every JSON document the
 * project writes escapes text the same way: valid UTF-8 passes through,
 * quotes, backslashes and control characters are escaped, and a byte that
 * is not well-formed UTF-8 becomes U+FFFD, so the output is always valid.
 * A text redacted of secrets never contains a whole occurrence of one
 * (a copy that is no part of a longer word), whatever the text around
 * them; parts of other words are left alone.
 */
#include "text.h"

#include <math.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

/* Length of the well-formed UTF-8 sequence at s (1..4), 0 if ill-formed
 * (stray continuation, overlong, surrogate, beyond U+10FFFF, cut short). */
size_t gp_utf8_len(const unsigned char *s, size_t n)
{
    /* The Unicode Standard's table 3-7: the lead bytes of a sequence, its
     * length, and the range of its second byte (the others 80..BF). */
    static const struct {
        unsigned char first, last, len, lo, hi;
    } lead[] = {
        {0xC2, 0xDF, 2, 0x80, 0xBF}, {0xE0, 0xE0, 3, 0xA0, 0xBF}, {0xE1, 0xEC, 3, 0x80, 0xBF},
        {0xED, 0xED, 3, 0x80, 0x9F}, {0xEE, 0xEF, 3, 0x80, 0xBF}, {0xF0, 0xF0, 4, 0x90, 0xBF},
        {0xF1, 0xF3, 4, 0x80, 0xBF}, {0xF4, 0xF4, 4, 0x80, 0x8F},
    };
    unsigned c = s[0];
    if (c < 0x80)
        return 1;
    for (size_t k = 0; k < sizeof lead / sizeof lead[0]; k++) {
        if (c < lead[k].first || c > lead[k].last)
            continue;
        size_t len = lead[k].len;
        if (n < len || s[1] < lead[k].lo || s[1] > lead[k].hi)
            return 0;
        for (size_t i = 2; i < len; i++)
            if (s[i] < 0x80 || s[i] > 0xBF)
                return 0;
        return len;
    }
    return 0;
}

/* Printable ASCII other than '"' and '\\': copied as it is. */
static bool json_plain(unsigned c)
{
    return c >= 0x20 && c < 0x7F && c != '"' && c != '\\';
}

static void json_escape(unsigned c, gp_emit_fn emit, void *ctx)
{
    /* The characters JSON escapes with one letter; the others as \u00XX. */
    static const char letter[0x60] = {['"'] = '"',  ['\\'] = '\\', ['\b'] = 'b', ['\f'] = 'f',
                                      ['\n'] = 'n', ['\r'] = 'r',  ['\t'] = 't'};
    char tmp[8];
    if (c < sizeof letter && letter[c]) {
        tmp[0] = '\\';
        tmp[1] = letter[c];
        emit(ctx, tmp, 2);
        return;
    }
    snprintf(tmp, sizeof tmp, "\\u%04x", c);
    emit(ctx, tmp, 6);
}

/* In runs: what needs no escape (printable ASCII, well-formed UTF-8) is
 * handed to emit as one piece up to the next byte that does, so a name
 * costs one call rather than one per character. */
void gp_json_quote(const char *s, size_t n, gp_emit_fn emit, void *ctx)
{
    const unsigned char *u = (const unsigned char *)s;
    emit(ctx, "\"", 1);
    size_t i = 0, run = 0;
    while (i < n) {
        unsigned c = u[i];
        if (json_plain(c)) {
            i++;
            continue;
        }
        if (c >= 0x80) {
            size_t len = gp_utf8_len(u + i, n - i);
            if (len) {
                i += len;
                continue;
            }
        }
        if (i > run)
            emit(ctx, s + run, i - run);
        if (c >= 0x80)
            emit(ctx, "\\ufffd", 6); /* keep the document valid UTF-8 whatever the backend sent */
        else
            json_escape(c, emit, ctx);
        run = ++i;
    }
    if (i > run)
        emit(ctx, s + run, i - run);
    emit(ctx, "\"", 1);
}

/*
 * A finite double in fixed point with `decimals` digits (0..6), '.' as the
 * separator whatever the locale; trailing zeros dropped with trim.  Values
 * too large for the scaled integer fall back to %.0f, which prints no
 * decimal point and so no locale-dependent character.  v must be finite.
 */
void gp_format_fixed(double v, int decimals, int trim, gp_emit_fn emit, void *ctx)
{
    static const double scale_of[] = {1, 10, 100, 1e3, 1e4, 1e5, 1e6};
    if (decimals < 0)
        decimals = 0;
    if (decimals > 6)
        decimals = 6;
    double scale = scale_of[decimals];
    if (!(fabs(v) * scale < 9.0e18)) {
        char big[400];
        int len = snprintf(big, sizeof big, "%.0f", v);
        emit(ctx, big, len > 0 ? (size_t)len : 0);
        return;
    }
    long long q = llround(v * scale);
    if (q < 0)
        emit(ctx, "-", 1);
    unsigned long long mag = q < 0 ? 0ull - (unsigned long long)q : (unsigned long long)q;
    unsigned long long div = (unsigned long long)scale;
    char ip[24];
    int ni = snprintf(ip, sizeof ip, "%llu", mag / div);
    emit(ctx, ip, (size_t)ni);
    if (decimals == 0)
        return;
    char frac[8];
    snprintf(frac, sizeof frac, "%0*llu", decimals, mag % div);
    int n = decimals;
    if (trim)
        while (n > 0 && frac[n - 1] == '0')
            n--;
    if (n == 0)
        return;
    emit(ctx, ".", 1);
    emit(ctx, frac, (size_t)n);
}

char *gp_concat3(const char *a, const char *b, const char *c)
{
    size_t n = strlen(a) + strlen(b) + strlen(c) + 1;
    char *s = malloc(n);
    if (s)
        snprintf(s, n, "%s%s%s", a, b, c);
    return s;
}

int gp_find_name(const char *const *names, size_t n, const char *text)
{
    if (!text)
        return -1;
    for (size_t i = 0; i < n; i++)
        if (strcasecmp(names[i], text) == 0)
            return (int)i;
    return -1;
}

#define N_OF(a) (sizeof(a) / sizeof((a)[0]))

int fl_parse_bool(const char *text)
{
    static const char *const yes[] = {"1", "true", "yes", "on"};
    static const char *const no[] = {"0", "false", "no", "off"};
    if (gp_find_name(yes, N_OF(yes), text) >= 0)
        return 1;
    if (gp_find_name(no, N_OF(no), text) >= 0)
        return 0;
    return -1;
}

int gp_parse_count(const char *text, uint64_t *out)
{
    if (!text || !*text)
        return -1;
    uint64_t n = 0;
    for (const char *c = text; *c; c++) {
        if (*c < '0' || *c > '9')
            return -1;
        unsigned d = (unsigned)(*c - '0');
        if (n > (UINT64_MAX - d) / 10)
            return -1;
        n = n * 10 + d;
    }
    if (n == 0)
        return -1;
    *out = n;
    return 0;
}

static bool in_any(unsigned c, const char *const *secrets, size_t n)
{
    for (size_t i = 0; i < n; i++)
        if (secrets[i] && strchr(secrets[i], (int)c))
            return true;
    return false;
}

/* The mask: "<redacted>" when no secret holds '<' or '>' or is a part of
 * it (an occurrence overlapping the mask would then have to hold one of
 * its ends), else three times a character no secret has, else nothing -
 * so that no secret can be made of the mask and the text around it. */
static void pick_mask(const char *const *secrets, size_t n, char mask[16])
{
    static const char redacted[] = "<redacted>";
    bool clash = in_any('<', secrets, n) || in_any('>', secrets, n);
    for (size_t i = 0; i < n && !clash; i++)
        clash = secrets[i] && *secrets[i] && strstr(redacted, secrets[i]);
    if (!clash) {
        memcpy(mask, redacted, sizeof redacted);
        return;
    }
    for (unsigned k = 0; k < 255; k++) {
        unsigned c = k < 94 ? 0x21 + k : k - 93; /* printable first, then any byte */
        if (c != 0 && c < 256 && !in_any(c, secrets, n)) {
            memset(mask, (int)c, 3);
            mask[3] = '\0';
            return;
        }
    }
    mask[0] = '\0';
}

/* Letters, digits, '_' and UTF-8's bytes: what a word is made of. */
static bool word_byte(unsigned char c)
{
    return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '_' ||
           c >= 0x80;
}

/* The first whole occurrence of secret in s at or after from: a run of
 * back-to-back copies that is no part of a longer word (the byte before
 * and after is no word byte, where the secret's own end is one).  Its
 * start, and its length in *len; NULL when none. */
static const char *find_whole(const char *s, const char *from, const char *secret, size_t *len)
{
    size_t l = strlen(secret);
    bool lw = word_byte((unsigned char)secret[0]), rw = word_byte((unsigned char)secret[l - 1]);
    for (const char *p = strstr(from, secret); p; p = strstr(p + 1, secret)) {
        const char *q = p + l;
        while (strncmp(q, secret, l) == 0)
            q += l;
        if ((lw && p > s && word_byte((unsigned char)p[-1])) ||
            (rw && word_byte((unsigned char)*q)))
            continue;
        *len = (size_t)(q - p);
        return p;
    }
    return NULL;
}

/* The leftmost whole occurrence of any secret (the longest at a tie). */
static const char *find_any(const char *s, const char *from, const char *const *secrets, size_t n,
                            size_t *len)
{
    const char *at = NULL;
    for (size_t i = 0; i < n; i++) {
        if (!secrets[i] || !*secrets[i])
            continue;
        size_t l = 0;
        const char *p = find_whole(s, from, secrets[i], &l);
        if (p && (!at || p < at || (p == at && l > *len))) {
            at = p;
            *len = l;
        }
    }
    return at;
}

void gp_redact(const char *s, const char *const *secrets, size_t n, gp_emit_fn emit, void *ctx)
{
    char mask[16];
    pick_mask(secrets, n, mask);
    const char *from = s;
    for (;;) {
        size_t len = 0;
        const char *at = find_any(s, from, secrets, n, &len);
        if (!at) {
            emit(ctx, from, strlen(from));
            return;
        }
        emit(ctx, from, (size_t)(at - from));
        emit(ctx, mask, strlen(mask));
        from = at + len;
    }
}

typedef struct fixed_out {
    char *p;
    size_t cap, len;
} fixed_out;

static void emit_fixed(void *ctx, const char *p, size_t n)
{
    fixed_out *o = ctx;
    size_t room = o->cap - 1 - o->len;
    if (n > room)
        n = room;
    memcpy(o->p + o->len, p, n);
    o->len += n;
}

bool gp_redact_in_place(char *s, size_t cap, const char *const *secrets, size_t n)
{
    if (!s || cap == 0)
        return false;
    size_t len = 0;
    if (!find_any(s, s, secrets, n, &len))
        return false;
    char *copy = strdup(s);
    if (!copy) {
        s[0] = '\0'; /* nothing, rather than the secret */
        return true;
    }
    /* Again while one is left: only an empty mask (secrets holding every
     * byte) can join two pieces into one, and each pass shortens s. */
    for (bool again = true; again;) {
        fixed_out o = {s, cap, 0};
        gp_redact(copy, secrets, n, emit_fixed, &o);
        s[o.len] = '\0';
        again = find_any(s, s, secrets, n, &len) != NULL;
        if (again)
            memcpy(copy, s, o.len + 1);
    }
    free(copy);
    return true;
}

int gp_parse_size(const char *text, uint64_t *bytes, char *why, size_t len)
{
    *bytes = 0;
    if (!text || !*text)
        return 0;
    const char *p = text;
    uint64_t v = 0;
    if (*p < '0' || *p > '9')
        goto bad;
    for (; *p >= '0' && *p <= '9'; p++) {
        uint64_t d = (uint64_t)(*p - '0');
        if (v > UINT64_MAX / 10 || (v == UINT64_MAX / 10 && d > UINT64_MAX % 10))
            goto bad;
        v = v * 10 + d;
    }
    static const struct {
        const char *suffix;
        unsigned shift;
    } units[] = {{"", 0},    {"B", 0},    {"K", 10}, {"KB", 10}, {"KiB", 10}, {"M", 20},
                 {"MB", 20}, {"MiB", 20}, {"G", 30}, {"GB", 30}, {"GiB", 30}, {"T", 40},
                 {"TB", 40}, {"TiB", 40}, {"k", 10}, {"m", 20},  {"g", 30},   {"t", 40}};
    for (size_t i = 0; i < sizeof units / sizeof units[0]; i++) {
        if (strcmp(p, units[i].suffix) != 0)
            continue;
        if (units[i].shift && v > (UINT64_MAX >> units[i].shift))
            goto bad;
        *bytes = v << units[i].shift;
        return 0;
    }
bad:
    snprintf(why, len,
             "\"%s\" is not a size: use a whole number of bytes, or one with K, M, G or T "
             "(binary: 64M = 64 MiB); 0 or \"\" = off",
             text);
    return -1;
}
