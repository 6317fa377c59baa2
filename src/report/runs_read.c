/*
 * report/runs_read.c - the shown run read as one session (runs.h's
 * fl_runs_read): every session of the run given in turn to one consumer
 * (the report), each session's dictionary ids mapped into run-wide ids
 * interned by name (kernels of one name are one kernel whichever process
 * launched them; two processes' id 1 never meet), and the device and host
 * rows of one source only: gpu-profile's own Monitor session when the run
 * has one, else each device (by uuid) and each host from the first session
 * that recorded it, so nothing is counted twice.
 *
 * Memory grows with the distinct names and devices of the run, never with
 * its events.  Nothing here prints.
 */
#include "runs.h"
#include "../reader/read.h"
#include "../util/error.h"
#include "../wire/vocab.h"
#include "maps.h"
#include "model.h"

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* The batch columns that hold a dictionary id. */
static const struct {
    fl_type type;
    int col;
    fl_dict dict;
} id_cols[] = {
    {FL_T_KERNEL_EVENT_BATCH, FL_COL_KERNEL_KERNEL_ID, FL_DICT_KERNEL},
    {FL_T_SCOPE_EVENT_BATCH, FL_COL_SCOPE_NAME_ID, FL_DICT_SCOPE_NAME},
    {FL_T_SYNCHRONIZATION_EVENT_BATCH, FL_COL_SYNC_STACK_ID, FL_DICT_STACK},
    {FL_T_PROFILE_SAMPLE_BATCH, FL_COL_PROFILE_FUNCTION_ID, FL_DICT_FUNCTION},
    {FL_T_PROFILE_SAMPLE_BATCH, FL_COL_PROFILE_METRIC_ID, FL_DICT_METRIC},
    {FL_T_PROFILE_SAMPLE_BATCH, FL_COL_PROFILE_SCOPE_NAME_ID, FL_DICT_SCOPE_NAME},
    {FL_T_PROFILE_SAMPLE_BATCH, FL_COL_PROFILE_SOURCE_FILE_ID, FL_DICT_SOURCE_FILE},
    {FL_T_PM_SAMPLE_BATCH, FL_COL_PM_METRIC_ID, FL_DICT_METRIC},
    {FL_T_PM_SAMPLE_BATCH, FL_COL_PM_SCOPE_NAME_ID, FL_DICT_SCOPE_NAME},
};
#define N_ID_COLS (sizeof id_cols / sizeof id_cols[0])

typedef struct merge {
    fl_read_cb inner;
    size_t session;      /* the session being read (its index in the order read) */
    bool metrics_source; /* a run with a Monitor session: this is it */
    bool have_monitor;
    fl_strpool pool;
    fl_u64map by_name[FL_DICT_COUNT]; /* (uintptr_t) interned name -> a: run id */
    fl_u64map local[FL_DICT_COUNT];   /* this session's id -> a: run id */
    uint64_t next_id[FL_DICT_COUNT];  /* the last run id given */
    fl_u64map dev_uuid;               /* this session's device id -> a: (uintptr_t) uuid */
    fl_u64map owner;                  /* (uintptr_t) device uuid or host name -> a: session + 1 */
    fl_cell *cells;
    size_t cap_cells;
    bool oom;
} merge;

static uint64_t fresh_id(merge *x, int d)
{
    return ++x->next_id[d];
}

/* The run id of this session's id in dictionary d; name NULL: not (yet)
 * named, a run id of its own. */
static uint64_t run_id_of(merge *x, int d, uint64_t id, const char *name)
{
    fl_mval *v = fl_map_find(&x->local[d], id);
    if (v)
        return v->a;
    uint64_t rid = 0;
    if (name) {
        const char *s = fl_pool_intern(&x->pool, name);
        bool fresh = false;
        fl_mval *n = s ? fl_map_put(&x->by_name[d], (uintptr_t)s, &fresh) : NULL;
        if (!n) {
            x->oom = true;
            return id;
        }
        if (fresh)
            n->a = fresh_id(x, d);
        rid = n->a;
    } else {
        rid = fresh_id(x, d);
    }
    v = fl_map_put(&x->local[d], id, NULL);
    if (!v) {
        x->oom = true;
        return rid;
    }
    v->a = rid;
    return rid;
}

/* dictionary_update with each dictionary's ids made the run's. */
static json_t *remap_dicts(merge *x, json_t *rec)
{
    json_t *out = json_copy(rec);
    if (!out)
        return NULL;
    for (int d = 0; d < FL_DICT_COUNT; d++) {
        const char *dname = fl_dict_name((fl_dict)d);
        json_t *dict = json_object_get(rec, dname);
        /* op_dict's ids are hashes of the names (the same in every
         * session), and kernel rows carry them as they are. */
        if (!json_is_object(dict) || d == FL_DICT_OP)
            continue;
        json_t *nd = json_object();
        if (!nd)
            break;
        const char *key;
        json_t *val;
        json_object_foreach(dict, key, val)
        {
            uint64_t id;
            if (!fl_model_dict_key(key, &id) || !json_is_string(val)) {
                json_object_set(nd, key, val); /* the model counts it bad */
                continue;
            }
            char k[24];
            snprintf(k, sizeof k, "%" PRIu64, run_id_of(x, d, id, json_string_value(val)));
            json_object_set(nd, k, val);
        }
        json_object_set_new(out, dname, nd);
    }
    return out;
}

/* The devices this session numbers as device rows do (NVML's lists). */
static void note_devices(merge *x, const json_t *rec)
{
    static const char *const lists[] = {"gpu_static_devices", "devices"};
    for (size_t l = 0; l < 2; l++) {
        const json_t *arr = json_object_get(rec, lists[l]);
        for (size_t i = 0; i < json_array_size(arr); i++) {
            const json_t *dev = json_array_get(arr, i);
            json_int_t id = json_integer_value(json_object_get(dev, "id"));
            const char *uuid = json_string_value(json_object_get(dev, "uuid"));
            if (!json_is_integer(json_object_get(dev, "id")) || !uuid || !uuid[0] ||
                fl_map_find(&x->dev_uuid, (uint64_t)id))
                continue;
            const char *s = fl_pool_intern(&x->pool, uuid);
            fl_mval *v = s ? fl_map_put(&x->dev_uuid, (uint64_t)id, NULL) : NULL;
            if (v)
                v->a = (uintptr_t)s;
            else
                x->oom = true;
        }
    }
}

static void on_record(void *user, int channel, fl_type t, const char *type, json_t *rec)
{
    merge *x = user;
    if (!x->inner.record)
        return;
    if (t == FL_T_JOB_START && rec)
        note_devices(x, rec);
    json_t *mapped = t == FL_T_DICTIONARY_UPDATE && rec ? remap_dicts(x, rec) : NULL;
    if (t == FL_T_DICTIONARY_UPDATE && rec && !mapped)
        x->oom = true;
    x->inner.record(x->inner.user, channel, t, type, mapped ? mapped : rec);
    json_decref(mapped);
}

static void on_detail(void *user, int channel, const fl_detail *d)
{
    merge *x = user;
    x->inner.detail(x->inner.user, channel, d);
}

/* Whether key (a device uuid, a host name: interned) is this session's to
 * give: the first session that gives it owns it. */
static bool owns(merge *x, const char *key)
{
    const char *s = fl_pool_intern(&x->pool, key);
    bool fresh = false;
    fl_mval *v = s ? fl_map_put(&x->owner, (uintptr_t)s, &fresh) : NULL;
    if (!v) {
        x->oom = true;
        return false;
    }
    if (fresh)
        v->a = x->session + 1;
    return v->a == x->session + 1;
}

static bool keep_row(merge *x, const fl_batch *b, size_t r)
{
    if (x->have_monitor)
        return x->metrics_source;
    if (b->type_id == FL_T_HOST_METRIC_BATCH)
        return owns(x, b->hostname ? b->hostname : "");
    int c = fl_batch_colid(b, FL_COL_DEVMETRIC_DEVICE_ID);
    int64_t id = fl_cell_int(fl_batch_cell(b, r, c), -1);
    const fl_mval *u = fl_map_find(&x->dev_uuid, (uint64_t)id);
    char key[48];
    snprintf(key, sizeof key, "device %" PRId64, id); /* no uuid: by its number */
    return owns(x, u ? (const char *)(uintptr_t)u->a : key);
}

static bool cells_room(merge *x, size_t n)
{
    if (n <= x->cap_cells)
        return true;
    fl_cell *c = realloc(x->cells, n * sizeof *c);
    if (!c) {
        x->oom = true;
        return false;
    }
    x->cells = c;
    x->cap_cells = n;
    return true;
}

static void on_batch(void *user, const fl_batch *b)
{
    merge *x = user;
    if (!x->inner.batch)
        return;
    if (!b || !b->cells) {
        x->inner.batch(x->inner.user, b);
        return;
    }
    fl_batch c = *b;
    bool metrics = b->type_id == FL_T_DEVICE_METRIC_BATCH || b->type_id == FL_T_HOST_METRIC_BATCH;
    if (metrics) {
        if (!cells_room(x, b->nrows * b->ncols))
            return;
        size_t n = 0;
        for (size_t r = 0; r < b->nrows; r++)
            if (keep_row(x, b, r))
                memcpy(x->cells + n++ * b->ncols, b->cells + r * b->ncols,
                       b->ncols * sizeof *x->cells);
        if (n == 0)
            return;
        c.nrows = n;
        c.cells = x->cells;
        x->inner.batch(x->inner.user, &c);
        return;
    }
    bool copied = false;
    for (size_t i = 0; i < N_ID_COLS; i++) {
        int col = id_cols[i].type == b->type_id ? fl_batch_colid(b, id_cols[i].col) : -1;
        if (col < 0)
            continue;
        if (!copied) {
            if (!cells_room(x, b->nrows * b->ncols))
                return;
            memcpy(x->cells, b->cells, b->nrows * b->ncols * sizeof *x->cells);
            c.cells = x->cells;
            copied = true;
        }
        for (size_t r = 0; r < b->nrows; r++) {
            fl_cell *cell = &x->cells[r * b->ncols + (size_t)col];
            /* 0 is "none" in the id columns that allow one (stack_id). */
            if (cell->kind != FL_CELL_INT || cell->i <= 0)
                continue;
            cell->i = (int64_t)run_id_of(x, id_cols[i].dict, (uint64_t)cell->i, NULL);
        }
    }
    x->inner.batch(x->inner.user, &c);
}

static void on_warning(void *user, const char *file, uint64_t line, const char *msg)
{
    merge *x = user;
    if (x->inner.warning)
        x->inner.warning(x->inner.user, file, line, msg);
}

static const char *on_stop(void *user)
{
    merge *x = user;
    if (x->oom)
        return "out of memory merging the run's sessions";
    return x->inner.stop ? x->inner.stop(x->inner.user) : NULL;
}

static void merge_free(merge *x)
{
    for (int d = 0; d < FL_DICT_COUNT; d++) {
        fl_map_free(&x->by_name[d]);
        fl_map_free(&x->local[d]);
    }
    fl_map_free(&x->dev_uuid);
    fl_map_free(&x->owner);
    fl_pool_free(&x->pool);
    free(x->cells);
}

static void add_result(fl_read_result *sum, const fl_read_result *r)
{
    sum->crashed |= r->crashed;
    sum->lines += r->lines;
    sum->bytes += r->bytes;
    sum->bad_lines += r->bad_lines;
    sum->bad_records += r->bad_records;
    sum->other_session += r->other_session;
    sum->unknown_types += r->unknown_types;
    sum->details_direct += r->details_direct;
    sum->files += r->files;
    sum->gz_errors += r->gz_errors;
    sum->bad_windows += r->bad_windows;
    sum->tmp_files += r->tmp_files;
    sum->capped_files += r->capped_files;
    sum->unreadable_files += r->unreadable_files;
    sum->lost_windows += r->lost_windows;
    if (r->session_capped && !sum->session_capped) {
        sum->session_capped = true;
        memcpy(sum->session_capped_why, r->session_capped_why, sizeof sum->session_capped_why);
    }
}

size_t fl_runs_read_order(const fl_runs *rs, const char *session_id, const fl_runs_session **out,
                          size_t cap)
{
    const fl_runs_session *p = fl_runs_primary(rs, session_id);
    if (!p || cap == 0)
        return 0;
    size_t n = 0;
    out[n++] = p;
    if (session_id && *session_id)
        return n;
    const fl_runs_group *g = &rs->g[rs->shown];
    if (rs->telemetry && rs->telemetry != p && n < cap)
        out[n++] = rs->telemetry;
    for (size_t k = 0; k < g->n && n < cap; k++) {
        const fl_runs_session *s = &rs->s[g->idx[k]];
        if (s != p && s != rs->telemetry)
            out[n++] = s;
    }
    return n;
}

gp_status fl_runs_read(const fl_runs *rs, const char *session_id, const fl_read_opts *opts,
                       const fl_read_cb *cb, fl_read_result *res, gp_error *err)
{
    size_t cap = rs->shown < rs->ng ? rs->g[rs->shown].n : 0;
    const fl_runs_session **order = calloc(cap ? cap : 1, sizeof *order);
    if (!order)
        return gp_error_set(err, GP_ERR_NO_MEMORY, "out of memory reading the run");
    size_t n = fl_runs_read_order(rs, session_id, order, cap);
    merge x = {.inner = *cb, .have_monitor = rs->telemetry != NULL};
    fl_read_cb mcb = {.user = &x,
                      .record = on_record,
                      .batch = on_batch,
                      .warning = on_warning,
                      .stop = on_stop,
                      .detail = cb->detail ? on_detail : NULL};
    fl_read_opts o = *opts;
    o.session_id = NULL; /* each session's own directory */
    gp_status st = n ? GP_OK : gp_error_set(err, GP_ERR_IO, "the run has no session to read");
    size_t read = 0;
    uint64_t unreadable = 0;
    for (size_t k = 0; k < n; k++) {
        x.session = k;
        x.metrics_source = order[k] == rs->telemetry;
        for (int d = 0; d < FL_DICT_COUNT; d++)
            fl_map_clear(&x.local[d]);
        fl_map_clear(&x.dev_uuid);
        fl_read_result r;
        gp_error e;
        gp_status s = fl_read_session(order[k]->dir, &o, n == 1 ? cb : &mcb, &r, &e);
        if (s == GP_ERR_NO_MEMORY || (s != GP_OK && n == 1)) {
            st = s;
            if (err)
                *err = e;
            break;
        }
        if (s != GP_OK) {
            /* One process's session that cannot be read: said, the rest
             * still reported (a partial read). */
            on_warning(&x, order[k]->dir, 0, e.message);
            unreadable++;
            continue;
        }
        if (read++ == 0)
            *res = r;
        else
            add_result(res, &r);
    }
    if (read)
        res->unreadable_files += unreadable;
    if (st == GP_OK && read == 0)
        st = gp_error_set(err, GP_ERR_IO, "none of the run's %zu sessions could be read", n);
    merge_free(&x);
    free(order);
    return st;
}
