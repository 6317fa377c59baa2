/*
 * reader/line.c - one line of a channel file into a record: the value of
 * the top-level "type" is found first (fl_probe_type, a few bytes for the
 * writer's own lines); columnar batches (type ending in "_batch") go to
 * the batch scanner (reader/batch.c), kernel_detail lines to theirs when
 * the reader's user takes them as such (reader/detail.c: jansson's path
 * for any line it does not take), every other record to jansson.  The
 * records every channel carries are given once (dedupe_common: a hash of
 * each such line).  A line that is no record is a warning and a count,
 * never the end of the read; a type the vocabulary does not know is
 * counted, and warned about once per type.
 */
#include "../util/buf.h"
#include "read_int.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* A record type every channel carries (dedupe_common). */
static bool is_common(fl_type t)
{
    return t != FL_T_UNKNOWN && fl_type_get(t)->channel == FL_CH_ALL;
}

/* A record of a type wire/vocab.h does not know, just counted in
 * unknown_types: the first of its type is also a warning naming it. */
static void note_unknown(rd *r, const char *type, size_t n)
{
    for (size_t i = 0; i < r->n_unknown; i++)
        if (strlen(r->unknown[i]) == n && memcmp(r->unknown[i], type, n) == 0)
            return;
    if (r->n_unknown == RD_MAX_UNKNOWN)
        return;
    char *copy = n < RD_TYPE_MAX ? strndup(type, n) : NULL;
    if (!copy ||
        fl_grow((void **)&r->unknown, &r->cap_unknown, r->n_unknown + 1, sizeof *r->unknown) != 0) {
        free(copy);
        return;
    }
    r->unknown[r->n_unknown++] = copy;
    if (r->n_unknown == RD_MAX_UNKNOWN)
        fl_rd_warn(r,
                   "record type \"%.*s\" is not known to this reader (its records are counted, "
                   "not read); %d unknown types: no more warnings for new ones",
                   (int)n, type, RD_MAX_UNKNOWN);
    else
        fl_rd_warn(r,
                   "record type \"%.*s\" is not known to this reader: its records are "
                   "counted, not read (one warning per type)",
                   (int)n, type);
}

/* Every other record: jansson. */
bool fl_rd_too_many_values(const char *line, size_t len)
{
    if (len <= 2 * RD_MAX_RECORD_VALUES)
        return false;
    size_t commas = 0;
    bool in_str = false;
    for (size_t i = 0; i < len; i++) {
        char c = line[i];
        if (in_str) {
            if (c == '\\')
                i++;
            else if (c == '"')
                in_str = false;
        } else if (c == '"') {
            in_str = true;
        } else if (c == ',' && ++commas >= RD_MAX_RECORD_VALUES) {
            return true;
        }
    }
    return false;
}

static int parse_json(rd *r, const char *line, size_t len)
{
    json_error_t e;
    json_t *j = json_loadb(line, len, JSON_REJECT_DUPLICATES, &e);
    if (!j && json_error_code(&e) == json_error_numeric_overflow)
        /* An integer above INT64_MAX (a uint64 counter): kept as a real
         * rather than losing the record. */
        j = json_loadb(line, len, JSON_REJECT_DUPLICATES | JSON_DECODE_INT_AS_REAL, &e);
    if (!j) {
        fl_rd_bad_line(r, "not JSON: %s at column %d", e.text, e.column);
        return 1;
    }
    int rc = 1;
    const char *type = json_string_value(json_object_get(j, "type"));
    json_t *sid = json_object_get(j, "session_id");
    if (!json_is_object(j)) {
        fl_rd_bad_line(r, "not a JSON object");
    } else if (!type) {
        fl_rd_bad_line(r, "no string \"type\" in the record");
    } else if (sid && !json_is_string(sid)) {
        r->res->bad_records++;
        fl_rd_warn(r, "bad %s: \"session_id\" is not a string; record skipped", type);
    } else if (sid && r->want && strcmp(json_string_value(sid), r->want) != 0) {
        r->res->other_session++;
    } else if (fl_is_batch_name(type, strlen(type))) {
        /* Only when the scanner could not find its type (nesting beyond
         * its limit): not handed out as a plain record. */
        r->res->bad_records++;
        fl_rd_warn(r, "bad %s: batch the scanner cannot read; skipped", type);
    } else {
        fl_type t = fl_type_of(type, strlen(type));
        if (t == FL_T_SHUTDOWN)
            r->saw_shutdown = true;
        if (t == FL_T_UNKNOWN) {
            r->res->unknown_types++;
            note_unknown(r, type, strlen(type));
        }
        if (t == FL_T_KERNEL_DETAIL && r->cb && r->cb->detail) {
            fl_detail d;
            fl_detail_of_json(j, &d);
            r->cb->detail(r->cb->user, r->channel, &d);
        } else if (r->cb && r->cb->record) {
            r->cb->record(r->cb->user, r->channel, t, type, j);
        }
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

/* Whether a line holds nothing but blanks. */
static bool blank_line(const char *line, size_t len)
{
    for (size_t i = 0; i < len; i++)
        if (line[i] != ' ' && line[i] != '\t' && line[i] != '\r')
            return false;
    return true;
}

int fl_rd_handle_line(rd *r, const char *line, size_t len)
{
    /* A bomb's filler is millions of blank lines: each said without
     * jansson's parse and its formatted error, at a fraction of the CPU. */
    if (__builtin_expect(len < 64 && blank_line(line, len), 0)) {
        fl_rd_bad_line_text(r, "not JSON: a blank line");
        return 1;
    }
    /* A detail per launch: most lines are kernel_details that start as
     * the one before, and the probe's ~190 instructions a line are not
     * needed to know it. */
    bool tried = false;
    if (r->cb && r->cb->detail && fl_rd_detail_like_last(r, line, len)) {
        int rc = fl_rd_fast_detail(r, line, len);
        if (rc >= 0)
            return rc;
        tried = true;
    }
    char type[RD_TYPE_MAX];
    int tl = fl_probe_type(&r->key, line, type);
    if (tl > 0 && fl_is_batch_name(type, (size_t)tl)) {
        uint64_t unknown = r->res->unknown_types;
        int rc = fl_rd_parse_batch(r, line, len);
        if (r->res->unknown_types != unknown)
            note_unknown(r, type, (size_t)tl);
        return rc;
    }
    if (!tried && tl > 0 && r->cb && r->cb->detail &&
        fl_type_of(type, (size_t)tl) == FL_T_KERNEL_DETAIL) {
        int rc = fl_rd_fast_detail(r, line, len);
        if (rc >= 0)
            return rc;
    }
    if (tl > 0 && r->dedupe && is_common(fl_type_of(type, (size_t)tl)) &&
        seen_before(r, hash_bytes(line, len)))
        return 0;
    if (fl_rd_too_many_values(line, len)) {
        r->res->bad_records++;
        fl_rd_warn(r, "bad %s: more than %zu values in one record (the reader's cap); skipped",
                   tl > 0 ? type : "record", RD_MAX_RECORD_VALUES);
        return 1;
    }
    return parse_json(r, line, len);
}

/* A read of lines given by the caller (fl_read_line, fl_read_lines). */
static void rd_start(rd *r, fl_read_result *dummy, int channel, const char *want_session,
                     const fl_read_cb *cb, fl_read_result *res, const char *file)
{
    memset(dummy, 0, sizeof *dummy);
    memset(r, 0, sizeof *r);
    r->cb = cb;
    r->res = res ? res : dummy;
    r->want = want_session && *want_session ? want_session : NULL;
    r->file = file;
    r->channel = channel;
}

/* One line of the caller's, counted, copied into *copy (grown, with the
 * NUL and RD_PAD the scanners read) and handled: fl_rd_handle_line's
 * return, 1 when it is no line. */
static int given_line(rd *r, char **copy, size_t *cap, const char *line, size_t len)
{
    r->res->lines++;
    r->res->bytes += len;
    if (!line && len) {
        fl_rd_bad_line(r, "no line given");
        return 1;
    }
    if (len > RD_MAX_LINE) {
        fl_rd_bad_line(r, "line longer than %zu bytes: skipped", RD_MAX_LINE);
        return 1;
    }
    if (*cap < len + 1 + RD_PAD) {
        char *c = realloc(*copy, len + 1 + RD_PAD);
        if (!c) {
            fl_rd_bad_line(r, "out of memory");
            return 1;
        }
        *copy = c;
        *cap = len + 1 + RD_PAD;
    }
    if (len)
        memcpy(*copy, line, len);
    memset(*copy + len, 0, 1 + RD_PAD);
    return fl_rd_handle_line(r, *copy, len);
}

int fl_read_line(const char *line, size_t len, int channel, const char *want_session,
                 const fl_read_cb *cb, fl_read_result *res, const char *file, uint64_t lineno)
{
    fl_read_result dummy;
    rd r;
    rd_start(&r, &dummy, channel, want_session, cb, res, file ? file : "(line)");
    r.line = lineno;
    char *copy = NULL;
    size_t cap = 0;
    int rc = given_line(&r, &copy, &cap, line, len);
    free(copy);
    fl_rd_free(&r);
    return rc;
}

size_t fl_read_lines(const char *text, size_t len, int channel, const char *want_session,
                     const fl_read_cb *cb, fl_read_result *res, const char *file)
{
    fl_read_result dummy;
    rd r;
    rd_start(&r, &dummy, channel, want_session, cb, res, file ? file : "(text)");
    size_t bad = 0;
    char *copy = NULL;
    size_t cap = 0;
    const char *p = text, *end = text ? text + len : NULL;
    while (p && p < end) {
        const char *nl = memchr(p, '\n', (size_t)(end - p));
        size_t n = nl ? (size_t)(nl - p) : (size_t)(end - p);
        r.line++;
        if (given_line(&r, &copy, &cap, p, n) != 0)
            bad++;
        p = nl ? nl + 1 : end;
    }
    free(copy);
    fl_rd_free(&r);
    return bad;
}
