/*
 * json_mini.h - a small strict JSON reader for the CLI tests (RFC 8259:
 * one value, nothing after it but blanks; duplicate keys rejected; strings
 * must be valid UTF-8 with their escapes decoded).  It builds a tree so a
 * test can check a report field by field; numbers keep their source text
 * so 64-bit integers are compared exactly.  Tests only: not fast, not
 * frugal.
 */
#ifndef GP_TEST_JSON_MINI_H
#define GP_TEST_JSON_MINI_H

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

typedef enum jn_type { JN_NULL, JN_BOOL, JN_NUM, JN_STR, JN_ARR, JN_OBJ } jn_type;

typedef struct jn {
    jn_type t;
    int b;
    double num;
    char *text;        /* JN_NUM: the number as written; JN_STR: decoded */
    size_t n;          /* items in an array or object */
    struct jn **items; /* values */
    char **keys;       /* JN_OBJ: decoded keys */
} jn;

typedef struct jn_parser {
    const char *p, *end;
    const char *err;
    int depth;
} jn_parser;

static inline jn *jn_value(jn_parser *j);

static inline void jn_free(jn *v)
{
    if (!v)
        return;
    for (size_t i = 0; i < v->n; i++) {
        jn_free(v->items[i]);
        if (v->keys)
            free(v->keys[i]);
    }
    free(v->items);
    free(v->keys);
    free(v->text);
    free(v);
}

static inline void *jn_fail(jn_parser *j, const char *why)
{
    if (!j->err)
        j->err = why;
    return NULL;
}

static inline void jn_ws(jn_parser *j)
{
    while (j->p < j->end && (*j->p == ' ' || *j->p == '\t' || *j->p == '\n' || *j->p == '\r'))
        j->p++;
}

static inline jn *jn_new(jn_type t)
{
    jn *v = (jn *)calloc(1, sizeof *v);
    if (v)
        v->t = t;
    return v;
}

static inline int jn_push(jn *v, jn *item, char *key)
{
    jn **items = (jn **)realloc(v->items, (v->n + 1) * sizeof *items);
    if (!items)
        return 0;
    v->items = items;
    if (v->t == JN_OBJ) {
        char **keys = (char **)realloc(v->keys, (v->n + 1) * sizeof *keys);
        if (!keys)
            return 0;
        v->keys = keys;
        v->keys[v->n] = key;
    }
    v->items[v->n++] = item;
    return 1;
}

static inline int jn_hex4(jn_parser *j, unsigned *out)
{
    unsigned v = 0;
    for (int i = 0; i < 4; i++) {
        if (j->p >= j->end)
            return 0;
        char c = *j->p++;
        v <<= 4;
        if (c >= '0' && c <= '9')
            v |= (unsigned)(c - '0');
        else if (c >= 'a' && c <= 'f')
            v |= (unsigned)(c - 'a' + 10);
        else if (c >= 'A' && c <= 'F')
            v |= (unsigned)(c - 'A' + 10);
        else
            return 0;
    }
    *out = v;
    return 1;
}

static inline size_t jn_put_utf8(char *out, unsigned cp)
{
    if (cp < 0x80) {
        out[0] = (char)cp;
        return 1;
    }
    if (cp < 0x800) {
        out[0] = (char)(0xC0 | (cp >> 6));
        out[1] = (char)(0x80 | (cp & 0x3F));
        return 2;
    }
    if (cp < 0x10000) {
        out[0] = (char)(0xE0 | (cp >> 12));
        out[1] = (char)(0x80 | ((cp >> 6) & 0x3F));
        out[2] = (char)(0x80 | (cp & 0x3F));
        return 3;
    }
    out[0] = (char)(0xF0 | (cp >> 18));
    out[1] = (char)(0x80 | ((cp >> 12) & 0x3F));
    out[2] = (char)(0x80 | ((cp >> 6) & 0x3F));
    out[3] = (char)(0x80 | (cp & 0x3F));
    return 4;
}

/* A well-formed raw UTF-8 sequence (not ASCII) at s: its length, or 0. */
static inline size_t jn_utf8_len(const unsigned char *s, size_t left)
{
    unsigned c = s[0], lo = 0x80, hi = 0xBF;
    size_t len;
    if (c >= 0xC2 && c <= 0xDF)
        len = 2;
    else if (c >= 0xE0 && c <= 0xEF)
        len = 3, lo = c == 0xE0 ? 0xA0 : 0x80, hi = c == 0xED ? 0x9F : 0xBF;
    else if (c >= 0xF0 && c <= 0xF4)
        len = 4, lo = c == 0xF0 ? 0x90 : 0x80, hi = c == 0xF4 ? 0x8F : 0xBF;
    else
        return 0;
    if (left < len || s[1] < lo || s[1] > hi)
        return 0;
    for (size_t i = 2; i < len; i++)
        if (s[i] < 0x80 || s[i] > 0xBF)
            return 0;
    return len;
}

static inline char *jn_string(jn_parser *j)
{
    if (j->p >= j->end || *j->p != '"')
        return (char *)jn_fail(j, "expected a string");
    j->p++;
    /* Decoded text is never longer than its source. */
    char *out = (char *)malloc((size_t)(j->end - j->p) + 1);
    size_t n = 0;
    if (!out)
        return (char *)jn_fail(j, "out of memory");
    while (j->p < j->end) {
        unsigned char c = (unsigned char)*j->p;
        if (c == '"') {
            j->p++;
            out[n] = '\0';
            return out;
        }
        if (c < 0x20) {
            free(out);
            return (char *)jn_fail(j, "raw control character in a string");
        }
        if (c == '\\') {
            j->p++;
            if (j->p >= j->end)
                break;
            char e = *j->p++;
            const char *from = "\"\\/bfnrt", *to = "\"\\/\b\f\n\r\t";
            const char *k = e ? strchr(from, e) : NULL;
            if (k) {
                out[n++] = to[k - from];
            } else if (e == 'u') {
                unsigned cp, lo;
                if (!jn_hex4(j, &cp)) {
                    free(out);
                    return (char *)jn_fail(j, "bad \\u escape");
                }
                if (cp >= 0xDC00 && cp <= 0xDFFF) {
                    free(out);
                    return (char *)jn_fail(j, "lone low surrogate");
                }
                if (cp >= 0xD800 && cp <= 0xDBFF) {
                    if (j->end - j->p < 6 || j->p[0] != '\\' || j->p[1] != 'u') {
                        free(out);
                        return (char *)jn_fail(j, "lone high surrogate");
                    }
                    j->p += 2;
                    if (!jn_hex4(j, &lo) || lo < 0xDC00 || lo > 0xDFFF) {
                        free(out);
                        return (char *)jn_fail(j, "bad surrogate pair");
                    }
                    cp = 0x10000 + ((cp - 0xD800) << 10) + (lo - 0xDC00);
                }
                n += jn_put_utf8(out + n, cp);
            } else {
                free(out);
                return (char *)jn_fail(j, "bad escape");
            }
        } else if (c >= 0x80) {
            size_t len = jn_utf8_len((const unsigned char *)j->p, (size_t)(j->end - j->p));
            if (!len) {
                free(out);
                return (char *)jn_fail(j, "invalid UTF-8");
            }
            memcpy(out + n, j->p, len);
            n += len;
            j->p += len;
        } else {
            out[n++] = (char)c;
            j->p++;
        }
    }
    free(out);
    return (char *)jn_fail(j, "unterminated string");
}

static inline jn *jn_number(jn_parser *j)
{
    const char *s = j->p;
    if (j->p < j->end && *j->p == '-')
        j->p++;
    if (j->p >= j->end || *j->p < '0' || *j->p > '9')
        return (jn *)jn_fail(j, "bad number");
    if (*j->p == '0')
        j->p++;
    else
        while (j->p < j->end && *j->p >= '0' && *j->p <= '9')
            j->p++;
    if (j->p < j->end && *j->p == '.') {
        j->p++;
        if (j->p >= j->end || *j->p < '0' || *j->p > '9')
            return (jn *)jn_fail(j, "bad fraction");
        while (j->p < j->end && *j->p >= '0' && *j->p <= '9')
            j->p++;
    }
    if (j->p < j->end && (*j->p == 'e' || *j->p == 'E')) {
        j->p++;
        if (j->p < j->end && (*j->p == '+' || *j->p == '-'))
            j->p++;
        if (j->p >= j->end || *j->p < '0' || *j->p > '9')
            return (jn *)jn_fail(j, "bad exponent");
        while (j->p < j->end && *j->p >= '0' && *j->p <= '9')
            j->p++;
    }
    jn *v = jn_new(JN_NUM);
    if (!v)
        return (jn *)jn_fail(j, "out of memory");
    size_t len = (size_t)(j->p - s);
    v->text = (char *)malloc(len + 1);
    if (!v->text) {
        free(v);
        return (jn *)jn_fail(j, "out of memory");
    }
    memcpy(v->text, s, len);
    v->text[len] = '\0';
    v->num = strtod(v->text, NULL);
    return v;
}

static inline jn *jn_container(jn_parser *j, int obj)
{
    if (++j->depth > 64)
        return (jn *)jn_fail(j, "nested too deep");
    jn *v = jn_new(obj ? JN_OBJ : JN_ARR);
    if (!v)
        return (jn *)jn_fail(j, "out of memory");
    j->p++;
    jn_ws(j);
    char close = obj ? '}' : ']';
    if (j->p < j->end && *j->p == close) {
        j->p++;
        j->depth--;
        return v;
    }
    for (;;) {
        char *key = NULL;
        jn_ws(j);
        if (obj) {
            key = jn_string(j);
            if (!key)
                break;
            for (size_t i = 0; i < v->n; i++)
                if (strcmp(v->keys[i], key) == 0) {
                    free(key);
                    key = NULL;
                    jn_fail(j, "duplicate key");
                    break;
                }
            if (!key)
                break;
            jn_ws(j);
            if (j->p >= j->end || *j->p != ':') {
                free(key);
                jn_fail(j, "expected ':'");
                break;
            }
            j->p++;
        }
        jn_ws(j);
        jn *item = jn_value(j);
        if (!item || !jn_push(v, item, key)) {
            jn_free(item);
            free(key);
            jn_fail(j, "bad member");
            break;
        }
        jn_ws(j);
        if (j->p < j->end && *j->p == ',') {
            j->p++;
            continue;
        }
        if (j->p < j->end && *j->p == close) {
            j->p++;
            j->depth--;
            return v;
        }
        jn_fail(j, obj ? "expected ',' or '}'" : "expected ',' or ']'");
        break;
    }
    jn_free(v);
    return NULL;
}

static inline int jn_lit(jn_parser *j, const char *lit)
{
    size_t n = strlen(lit);
    if ((size_t)(j->end - j->p) < n || memcmp(j->p, lit, n) != 0)
        return 0;
    j->p += n;
    return 1;
}

static inline jn *jn_value(jn_parser *j)
{
    jn_ws(j);
    if (j->p >= j->end)
        return (jn *)jn_fail(j, "unexpected end");
    char c = *j->p;
    if (c == '{' || c == '[')
        return jn_container(j, c == '{');
    if (c == '"') {
        char *s = jn_string(j);
        if (!s)
            return NULL;
        jn *v = jn_new(JN_STR);
        if (!v) {
            free(s);
            return (jn *)jn_fail(j, "out of memory");
        }
        v->text = s;
        return v;
    }
    if (c == '-' || (c >= '0' && c <= '9'))
        return jn_number(j);
    jn *v = NULL;
    if (jn_lit(j, "null"))
        v = jn_new(JN_NULL);
    else if (jn_lit(j, "true")) {
        v = jn_new(JN_BOOL);
        if (v)
            v->b = 1;
    } else if (jn_lit(j, "false"))
        v = jn_new(JN_BOOL);
    else
        return (jn *)jn_fail(j, "unexpected character");
    return v ? v : (jn *)jn_fail(j, "out of memory");
}

/* Parses text[0..len); NULL with *err set when it is not one JSON value. */
static inline jn *jn_parse(const char *text, size_t len, const char **err)
{
    jn_parser j = {text, text + len, NULL, 0};
    jn *v = jn_value(&j);
    if (v) {
        jn_ws(&j);
        if (j.p != j.end) {
            jn_free(v);
            v = NULL;
            jn_fail(&j, "text after the value");
        }
    }
    if (err)
        *err = j.err;
    return v;
}

static inline const jn *jn_get(const jn *o, const char *key)
{
    if (!o || o->t != JN_OBJ)
        return NULL;
    for (size_t i = 0; i < o->n; i++)
        if (strcmp(o->keys[i], key) == 0)
            return o->items[i];
    return NULL;
}

static inline const jn *jn_at(const jn *a, size_t i)
{
    return a && a->t == JN_ARR && i < a->n ? a->items[i] : NULL;
}

static inline int jn_is_null(const jn *v)
{
    return v && v->t == JN_NULL;
}

/* The string value, or NULL when v is not a string. */
static inline const char *jn_str(const jn *v)
{
    return v && v->t == JN_STR ? v->text : NULL;
}

/* An integer written without fraction or exponent; -1 for anything else. */
static inline long long jn_int(const jn *v)
{
    if (!v || v->t != JN_NUM || strpbrk(v->text, ".eE"))
        return -1;
    return strtoll(v->text, NULL, 10);
}

static inline uint64_t jn_u64(const jn *v)
{
    if (!v || v->t != JN_NUM || strpbrk(v->text, ".eE-"))
        return UINT64_MAX;
    return strtoull(v->text, NULL, 10);
}

static inline double jn_num(const jn *v)
{
    return v && v->t == JN_NUM ? v->num : -1e300;
}

#endif
