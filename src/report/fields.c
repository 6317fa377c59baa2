/*
 * report/fields.c - reading the values of records and batch cells
 * (fields.h): every reader of a session in the report and the exports goes
 * through these, so a value that is damaged or missing is treated alike
 * in every section and format.
 */
#include "fields.h"
#include "../util/buf.h"

#include <inttypes.h>
#include <math.h>
#include <stdio.h>
#include <string.h>

/* ========================================================= batch cells */

bool fl_rcell_u64_slow(const fl_batch *b, size_t row, int col, uint64_t *out)
{
    const fl_cell *c = fl_batch_cell(b, row, col); /* out of range: a null cell */
    switch (c->kind) {
    case FL_CELL_INT:
        if (c->i < 0)
            return false;
        *out = (uint64_t)c->i;
        return true;
    case FL_CELL_UINT:
        *out = c->u;
        return true;
    case FL_CELL_REAL:
        if (!(c->d >= 0.0 && c->d < 18446744073709551616.0) || c->d != floor(c->d))
            return false;
        *out = (uint64_t)c->d;
        return true;
    default:
        return false;
    }
}

bool fl_rcell_real(const fl_batch *b, size_t row, int col, double *out)
{
    const fl_cell *c = fl_batch_cell(b, row, col); /* out of range: a null cell */
    switch (c->kind) {
    case FL_CELL_INT:
        *out = (double)c->i;
        return true;
    case FL_CELL_UINT:
        *out = (double)c->u;
        return true;
    case FL_CELL_REAL:
        if (!isfinite(c->d))
            return false;
        *out = c->d;
        return true;
    default:
        return false;
    }
}

/* ====================================================== record members */

bool fl_jval_u64(const fl_jval *v, uint64_t *out)
{
    if (v->kind == FL_J_INT) {
        if (v->i < 0)
            return false;
        *out = (uint64_t)v->i;
        return true;
    }
    if (v->kind == FL_J_REAL) {
        double d = v->d;
        if (!(d >= 0.0 && d < 18446744073709551616.0))
            return false;
        *out = (uint64_t)d;
        return true;
    }
    return false;
}

bool fl_jval_real(const fl_jval *v, double *out)
{
    if (v->kind == FL_J_INT)
        *out = (double)v->i;
    else if (v->kind == FL_J_REAL)
        *out = v->d;
    else
        return false;
    return isfinite(*out);
}

bool fl_jget_u64(const json_t *obj, const char *key, uint64_t *out)
{
    fl_jval v = fl_jval_of(json_object_get(obj, key));
    return fl_jval_u64(&v, out);
}

bool fl_jget_i64(const json_t *obj, const char *key, int64_t *out)
{
    const json_t *v = json_object_get(obj, key);
    if (json_is_integer(v)) {
        *out = (int64_t)json_integer_value(v);
        return true;
    }
    return false;
}

bool fl_jget_real(const json_t *obj, const char *key, double *out)
{
    fl_jval v = fl_jval_of(json_object_get(obj, key));
    return fl_jval_real(&v, out);
}

const char *fl_jget_str(const json_t *obj, const char *key)
{
    return json_string_value(json_object_get(obj, key));
}

bool fl_jget_id(const json_t *obj, const char *key, uint64_t *out)
{
    const char *s = fl_jget_str(obj, key);
    if (!s)
        return fl_jget_u64(obj, key, out);
    if (!*s || strlen(s) > 20)
        return false;
    uint64_t v = 0;
    for (const char *p = s; *p; p++) {
        if (*p < '0' || *p > '9' || v > (UINT64_MAX - (uint64_t)(*p - '0')) / 10)
            return false;
        v = v * 10 + (uint64_t)(*p - '0');
    }
    *out = v;
    return true;
}

bool fl_jget_span(const json_t *obj, uint64_t *start, uint64_t *dur)
{
    uint64_t a, b, d;
    if (fl_jget_u64(obj, "start_ns", &a) && a > 0) {
        *start = a;
        if (fl_jget_u64(obj, "end_ns", &b) && b >= a)
            *dur = b - a;
        else
            *dur = fl_jget_u64(obj, "duration_ns", &d) ? d : 0;
        return true;
    }
    if (fl_jget_u64(obj, "ts_ns", &a) && a > 0) {
        *start = a;
        *dur = fl_jget_u64(obj, "duration_ns", &d) ? d : 0;
        return true;
    }
    return false;
}

/* ========================================================== dimensions */

/* The writer's "(x,y,z)": three runs of 1-9 plain digits, nothing else
 * (what sscanf below reads the same way); false: not that form. */
static bool dim3_plain(const char *s, uint32_t v[3])
{
    if (*s++ != '(')
        return false;
    for (int i = 0; i < 3; i++) {
        const char *d = s;
        uint32_t x = 0;
        while (*s >= '0' && *s <= '9' && s - d < 9)
            x = x * 10 + (uint32_t)(*s++ - '0');
        if (s == d || *s != (i < 2 ? ',' : ')'))
            return false;
        s++;
        v[i] = x;
    }
    return *s == '\0';
}

/* "(x,y,z)" -> v; false if it is not that. */
bool fl_dim3_parse(const char *s, uint32_t v[3])
{
    if (!s)
        return false;
    if (dim3_plain(s, v))
        return true;
    unsigned long a[3];
    int end = 0;
    if (sscanf(s, " (%lu,%lu,%lu)%n", &a[0], &a[1], &a[2], &end) != 3 || s[end] != '\0')
        return false;
    for (int i = 0; i < 3; i++) {
        if (a[i] > UINT32_MAX)
            return false;
        v[i] = (uint32_t)a[i];
    }
    return true;
}

/* Without printf: the exports write one per launch. */
char *fl_put_dim3(char *d, const uint32_t v[3])
{
    *d++ = '(';
    for (int i = 0; i < 3; i++) {
        if (i)
            *d++ = ',';
        d = fl_put_u64(d, v[i]);
    }
    *d++ = ')';
    return d;
}

const char *fl_dim3_format(char *buf, size_t len, const uint32_t v[3])
{
    char tmp[40];
    size_t n = (size_t)(fl_put_dim3(tmp, v) - tmp);
    if (len == 0)
        return buf;
    if (n >= len)
        n = len - 1; /* cut as snprintf would */
    memcpy(buf, tmp, n);
    buf[n] = '\0';
    return buf;
}

/* =============================================================== names */

const char *const fl_perf_keys[FL_PERF_COUNT] = {"sm_throughput_pct",
                                                 "l1_hit_rate_pct",
                                                 "l2_hit_rate_pct",
                                                 "dram_read_bytes",
                                                 "dram_write_bytes",
                                                 "tensor_active_pct",
                                                 "achieved_occupancy_pct",
                                                 "shared_load_bank_conflicts",
                                                 "shared_store_bank_conflicts",
                                                 "shared_bank_conflicts",
                                                 "shared_wavefronts",
                                                 "shared_bank_conflict_overhead_pct",
                                                 "shared_bank_conflict_nway"};

const char *fl_stall_reason_name(uint64_t reason)
{
    /* CUPTI's CUpti_ActivityPCSamplingStallReason, as the spec lists it. */
    static const char *const names[] = {"invalid",
                                        "none",
                                        "instruction fetch",
                                        "execution dependency",
                                        "memory dependency",
                                        "texture",
                                        "sync",
                                        "constant memory",
                                        "pipe busy",
                                        "memory throttle",
                                        "not selected",
                                        "other",
                                        "sleeping"};
    return reason < sizeof names / sizeof names[0] ? names[reason] : NULL;
}

const char *fl_copy_kind_name(uint64_t kind)
{
    switch (kind) {
    case 1:
        return "HtoD";
    case 2:
        return "DtoH";
    case 8:
        return "DtoD";
    case 10:
        return "PtoP";
    default:
        return NULL;
    }
}
