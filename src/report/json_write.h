/*
 * report/json_write.h - the compact JSON writer the report's renderings
 * share (report/json.c, report/json_profile.c, the HTML timeline's
 * header in report/html_timeline.c): a separator before every value, a
 * key resets it; strings through fl_buf_str (escaping), reals through
 * the project's fixed-point writer, null for a value not recorded.
 * Inline: each is a few calls.
 *
 * Private to report/.
 */
#ifndef FL_REPORT_JSON_WRITE_H
#define FL_REPORT_JSON_WRITE_H

#include "report_int.h"
#include "../util/buf.h"

#include <jansson.h>
#include <stdbool.h>
#include <stdint.h>

/* A compact JSON writer: sep() before every value, a key resets it. */
typedef struct jw {
    fl_buf *b;
    bool comma;
} jw;

static inline void j_sep(jw *w)
{
    if (w->comma)
        fl_buf_put(w->b, ",", 1);
    w->comma = true;
}

static inline void j_key(jw *w, const char *k)
{
    j_sep(w);
    fl_buf_str(w->b, k);
    fl_buf_put(w->b, ":", 1);
    w->comma = false;
}

/* Where a value goes: after its key in an object (key), or as the next
 * element of an array (key NULL). */
static inline void j_at(jw *w, const char *key)
{
    if (key)
        j_key(w, key);
    j_sep(w);
}

static inline void j_open(jw *w, const char *key, char c)
{
    j_at(w, key);
    fl_buf_put(w->b, &c, 1);
    w->comma = false;
}

static inline void j_close(jw *w, char c)
{
    fl_buf_put(w->b, &c, 1);
    w->comma = true;
}

static inline void j_u64(jw *w, const char *key, uint64_t v)
{
    j_at(w, key);
    fl_buf_u64(w->b, v);
}

static inline void j_i64(jw *w, const char *key, int64_t v)
{
    j_at(w, key);
    fl_buf_i64(w->b, v);
}

static inline void j_dbl(jw *w, const char *key, bool ok, double v)
{
    j_at(w, key);
    fl_buf_opt_double(w->b, ok, v);
}

static inline void j_opt_u64(jw *w, const char *key, bool ok, uint64_t v)
{
    j_at(w, key);
    fl_buf_opt_u64(w->b, ok, v);
}

static inline void j_str(jw *w, const char *key, const char *s)
{
    j_at(w, key);
    fl_buf_str(w->b, s);
}

/* An object or array under key when there is something to say, else
 * null (never an empty one for an unknown).  Returns whether it opened. */
static inline bool j_open_if(jw *w, const char *key, bool any, char c)
{
    if (!any) {
        j_str(w, key, NULL);
        return false;
    }
    j_open(w, key, c);
    return true;
}

static inline void j_bool(jw *w, const char *key, bool v)
{
    j_at(w, key);
    fl_buf_puts(w->b, v ? "true" : "false");
}

static inline void j_raw_json(jw *w, const char *key, const json_t *v)
{
    j_at(w, key);
    if (!v) {
        fl_buf_puts(w->b, "null");
        return;
    }
    /* Strings and numbers of the record, re-emitted through our own
     * conventions (escaping, fixed-point reals). */
    if (json_is_string(v)) {
        fl_buf_str(w->b, json_string_value(v));
    } else if (json_is_integer(v)) {
        fl_buf_i64(w->b, (int64_t)json_integer_value(v));
    } else if (json_is_real(v)) {
        fl_buf_double(w->b, json_real_value(v));
    } else if (json_is_true(v) || json_is_false(v)) {
        fl_buf_puts(w->b, json_is_true(v) ? "true" : "false");
    } else {
        fl_buf_puts(w->b, "null");
    }
}

static inline void j_dim(jw *w, const char *key, bool varies, bool have, const uint32_t v[3])
{
    char buf[48];
    if (varies)
        j_str(w, key, "varies");
    else if (have)
        j_str(w, key, fl_dim3_format(buf, sizeof buf, v));
    else
        j_str(w, key, NULL);
}

static inline void j_device_id(jw *w, const char *key, int64_t id)
{
    if (id == DEVICE_UNKNOWN)
        j_str(w, key, NULL);
    else
        j_i64(w, key, id);
}

/* The keys of json_profile.c (FL_REPORT_SECTIONS' parts fl_json_stalls,
 * fl_json_sass, fl_json_perf), in the report's order: "stalls";
 * "sass_metrics" and "sass"; "perf_metrics", "pm_sampling",
 * "kernel_perf_metrics" and "scope_perf_metrics".  The PC samples' keys
 * inside "stalls" (json_stalls.c): */
void fl_json_stall_detail(const fl_report *r, int top, jw *w);
/* summary.synchronization_stacks (syncs.c). */
void fl_json_sync_stacks(const fl_report *r, jw *w);

#endif /* FL_REPORT_JSON_WRITE_H */
