/*
 * report/export_sqlite.c - the SQLite exporter, one row of
 * report/export.h's FL_EXPORTERS: a session as a database that SQL can
 * query the way nsys's SQLite export is queried (docs/report.md, "SQLite
 * export": every table and column).
 *
 * Promises: one table per kind of event (kernels, memcpy, memset, syncs,
 * scopes, device and host samples, PC / SASS samples, PM samples, range
 * profiler metrics, memory allocations, graph launches) plus processes,
 * devices, meta and strings; every name is a row of strings, referenced
 * by id (each distinct text once); times in ns from the Unix epoch as the
 * session recorded them; a value the session did not record is NULL,
 * never 0.  Everything is written in one transaction through prepared
 * statements, the indexes made at the end; SQLite is loaded only here
 * (sqlite_api.c).  The file is the caller's temporary file: it appears
 * whole or not at all (cli/outfile.c), so no journal is kept.
 */
#include "export_int.h"
#include "../util/buf.h"
#include "fields.h"
#include "maps.h"
#include "model.h"
#include "scopes.h"
#include "sqlite_api.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#define FL_SQLITE_SCHEMA_VERSION 1

/* The tables made from a batch type's columns (wire/vocab.h): a time
 * column (start_ns and end_ns for a batch with a duration, else ts_ns),
 * then the type's columns but dt_ns, in the vocabulary's order. */
typedef struct gspec {
    fl_type t;
    const char *table;
} gspec;
static const gspec gspecs[] = {
    {FL_T_MEMCPY_EVENT_BATCH, "memcpy"},
    {FL_T_DEVICE_METRIC_BATCH, "device_samples"},
    {FL_T_HOST_METRIC_BATCH, "host_samples"},
    {FL_T_SYNCHRONIZATION_EVENT_BATCH, "syncs"},
    {FL_T_MEMORY_ALLOC_EVENT_BATCH, "memory_allocs"},
    {FL_T_PROFILE_SAMPLE_BATCH, "profile_samples"},
    {FL_T_PM_SAMPLE_BATCH, "pm_samples"},
    {FL_T_GRAPH_EVENT_BATCH, "graph_launches"},
};
#define N_GSPECS (sizeof gspecs / sizeof gspecs[0])

/* A column holding a dictionary id is written as the strings id of the
 * name instead (0 and an id the dictionary lacks: NULL). */
typedef enum { D_NONE, D_FUNCTION, D_METRIC, D_SCOPE, D_SOURCE, D_STACK } dkind;
static const struct {
    fl_type t;
    const char *col;
    dkind d;
} dict_cols[] = {
    {FL_T_PROFILE_SAMPLE_BATCH, "function_id", D_FUNCTION},
    {FL_T_PROFILE_SAMPLE_BATCH, "metric_id", D_METRIC},
    {FL_T_PROFILE_SAMPLE_BATCH, "scope_name_id", D_SCOPE},
    {FL_T_PROFILE_SAMPLE_BATCH, "source_file_id", D_SOURCE},
    {FL_T_PM_SAMPLE_BATCH, "metric_id", D_METRIC},
    {FL_T_PM_SAMPLE_BATCH, "scope_name_id", D_SCOPE},
    {FL_T_SYNCHRONIZATION_EVENT_BATCH, "stack_id", D_STACK},
};

typedef struct gtab {
    void *ins;
    bool range; /* start_ns, end_ns; else ts_ns */
    int dur;    /* the duration column's index in the vocabulary; -1 none */
    uint8_t dict[FL_MAX_COLS];
} gtab;

enum { S_STR, S_KERNEL, S_SCOPE, S_MEMSET, S_PERF, S_COUNT };

/* The kernels table's columns; occupancy the one REAL. */
#define K_COLS 24
#define K_OCC 17
#define KB 32 /* rows per multi-row insert (K_COLS * KB under SQLite's 999 parameters) */
typedef struct krow {
    int64_t v[K_COLS];
    double occ;
    uint32_t null; /* bit c: column c is NULL */
} krow;

typedef struct sq {
    const fl_sqlite_api *api;
    void *db;
    void *st[S_COUNT];
    void *kmany; /* KB rows' insert */
    krow kb[KB];
    int nk;
    gtab g[N_GSPECS];
    fl_u64map by_ptr;  /* a stable text's address -> a: strings id */
    fl_u64map by_hash; /* FNV-1a of a text (probed on) -> a: strings id, b: its text */
    fl_strpool pool;   /* the texts of records, kept while the map points to them */
    uint64_t next_sid;
    fl_u64map scope_depth; /* open scope instance -> a: depth + 1, b: tid + 1 */
} sq;

static void fail(fl_export *e, const char *what)
{
    sq *s = e->priv;
    if (e->fail[0])
        return;
    snprintf(e->fail, sizeof e->fail, "SQLite: %s: %s", what,
             s && s->db ? s->api->errmsg(s->db) : "no database");
}

static bool ok(fl_export *e)
{
    if (!e->priv && !e->fail[0])
        snprintf(e->fail, sizeof e->fail,
                 "--format sqlite writes a file: give it one (-o FILE.db; "
                 "fl_export_set_file)");
    return !e->fail[0];
}

static bool exec(fl_export *e, const char *sql)
{
    sq *s = e->priv;
    char *msg = NULL;
    if (s->api->exec(s->db, sql, NULL, NULL, &msg) == FL_SQLITE_OK)
        return true;
    if (!e->fail[0])
        snprintf(e->fail, sizeof e->fail, "SQLite: %.200s: %s", sql,
                 msg ? msg : s->api->errmsg(s->db));
    s->api->free(msg);
    return false;
}

static void *prepare(fl_export *e, const char *sql)
{
    sq *s = e->priv;
    void *st = NULL;
    if (s->api->prepare_v2(s->db, sql, -1, &st, NULL) != FL_SQLITE_OK) {
        fail(e, sql);
        return NULL;
    }
    return st;
}

/* Steps an insert whose values are bound, then resets it for the next. */
static void run(fl_export *e, void *st)
{
    sq *s = e->priv;
    if (s->api->step(st) != FL_SQLITE_DONE)
        fail(e, "insert");
    s->api->reset(st);
}

static void bind_i(sq *s, void *st, int i, int64_t v)
{
    s->api->bind_int64(st, i, v);
}

static void bind_opt(sq *s, void *st, int i, bool have, int64_t v)
{
    if (have)
        s->api->bind_int64(st, i, v);
    else
        s->api->bind_null(st, i);
}

static void bind_cell(sq *s, void *st, int i, const fl_cell *c)
{
    switch (c->kind) {
    case FL_CELL_INT:
        s->api->bind_int64(st, i, c->i);
        break;
    case FL_CELL_UINT: /* above INT64_MAX: only a REAL holds it */
        s->api->bind_double(st, i, (double)c->u);
        break;
    case FL_CELL_REAL:
        s->api->bind_double(st, i, c->d);
        break;
    default:
        s->api->bind_null(st, i);
        break;
    }
}

/* ----------------------------------------------------------- strings */

static uint64_t fnv1a(const char *p)
{
    uint64_t h = 1469598103934665603ull;
    for (; *p; p++)
        h = (h ^ (uint8_t)*p) * 1099511628211ull;
    return h;
}

/* The strings id of text (NULL: 0, the caller binds NULL); stable: text
 * lives as long as the export (the model's interned names). */
static uint64_t sid(fl_export *e, const char *text, bool stable)
{
    sq *s = e->priv;
    if (!text)
        return 0;
    fl_mval *v = stable ? fl_map_find(&s->by_ptr, (uintptr_t)text) : NULL;
    if (v)
        return v->a;
    uint64_t h = fnv1a(text);
    for (;; h++) {
        v = fl_map_find(&s->by_hash, h);
        if (!v)
            break;
        if (strcmp((const char *)(uintptr_t)v->b, text) == 0)
            goto found;
    }
    if (!stable && !(text = fl_pool_intern(&s->pool, text))) {
        e->oom = true;
        return 0;
    }
    v = fl_map_put(&s->by_hash, h, NULL);
    if (!v) {
        e->oom = true;
        return 0;
    }
    v->a = ++s->next_sid;
    v->b = (uintptr_t)text;
    bind_i(s, s->st[S_STR], 1, (int64_t)v->a);
    s->api->bind_text(s->st[S_STR], 2, text, (int)strlen(text), NULL);
    run(e, s->st[S_STR]);
found:;
    uint64_t id = v->a;
    if (stable) {
        fl_mval *p = fl_map_put(&s->by_ptr, (uintptr_t)text, NULL);
        if (p)
            p->a = id;
    }
    return id;
}

static void bind_sid(fl_export *e, void *st, int i, const char *text, bool stable)
{
    sq *s = e->priv;
    uint64_t id = sid(e, text, stable);
    bind_opt(s, st, i, id != 0, (int64_t)id);
}

/* ------------------------------------------------------------ schema */

static const char schema[] =
    "PRAGMA page_size=65536;PRAGMA journal_mode=OFF;PRAGMA synchronous=OFF;"
    "PRAGMA locking_mode=EXCLUSIVE;PRAGMA temp_store=MEMORY;"
    "PRAGMA cache_size=-65536;PRAGMA foreign_keys=OFF;BEGIN;"
    "CREATE TABLE meta(key TEXT PRIMARY KEY, value);"
    "CREATE TABLE strings(id INTEGER PRIMARY KEY, value TEXT NOT NULL);"
    "CREATE TABLE processes(pid INTEGER, app_id INTEGER, hostname_id INTEGER,"
    " session_id TEXT, start_ns INTEGER, end_ns INTEGER, engine TEXT, session_kind TEXT);"
    "CREATE TABLE devices(id INTEGER, cuda_id INTEGER, name_id INTEGER, uuid TEXT,"
    " mig_profile TEXT);"
    "CREATE TABLE kernels(start_ns INTEGER NOT NULL, end_ns INTEGER NOT NULL,"
    " duration_ns INTEGER NOT NULL, device_id INTEGER, stream_id INTEGER, corr_id INTEGER,"
    " kernel_id INTEGER NOT NULL, name_id INTEGER, grid_x INTEGER, grid_y INTEGER,"
    " grid_z INTEGER, block_x INTEGER, block_y INTEGER, block_z INTEGER, registers INTEGER,"
    " dyn_shared_bytes INTEGER, static_shared_bytes INTEGER, occupancy REAL,"
    " limiting_id INTEGER, scope_id INTEGER, stack_id INTEGER, external_kind INTEGER,"
    " external_id INTEGER, op_id INTEGER);"
    "CREATE TABLE scopes(start_ns INTEGER, end_ns INTEGER, duration_ns INTEGER,"
    " instance_id INTEGER NOT NULL, name_id INTEGER, depth INTEGER, tid INTEGER,"
    " nvtx INTEGER NOT NULL);"
    "CREATE TABLE memset(start_ns INTEGER NOT NULL, end_ns INTEGER NOT NULL,"
    " duration_ns INTEGER NOT NULL, device_id INTEGER, stream_id INTEGER,"
    " context_id INTEGER, corr_id INTEGER, bytes INTEGER, value INTEGER,"
    " memory_kind INTEGER);"
    "CREATE TABLE perf_metrics(kind TEXT NOT NULL, start_ns INTEGER, end_ns INTEGER,"
    " duration_ns INTEGER, range_name_id INTEGER, scope_id INTEGER,"
    " metric_name_id INTEGER NOT NULL, value REAL NOT NULL);";

static const char views[] =
    "CREATE VIEW pc_samples AS SELECT * FROM profile_samples WHERE sample_kind = 0;"
    "CREATE VIEW sass_metrics AS SELECT * FROM profile_samples WHERE sample_kind = 1;";

static const char indexes[] =
    "CREATE INDEX kernels_start ON kernels(start_ns);"
    "CREATE INDEX scopes_start ON scopes(start_ns);"
    "CREATE INDEX memset_start ON memset(start_ns);"
    "CREATE INDEX perf_metrics_start ON perf_metrics(start_ns);"
    "CREATE INDEX memcpy_start ON memcpy(start_ns);"
    "CREATE INDEX syncs_start ON syncs(start_ns);"
    "CREATE INDEX memory_allocs_start ON memory_allocs(start_ns);"
    "CREATE INDEX graph_launches_start ON graph_launches(start_ns);"
    "CREATE INDEX device_samples_ts ON device_samples(ts_ns);"
    "CREATE INDEX host_samples_ts ON host_samples(ts_ns);"
    "CREATE INDEX pm_samples_ts ON pm_samples(ts_ns);"
    "CREATE INDEX profile_samples_function ON profile_samples(function_id);";

static const char *const fixed_inserts[S_COUNT] = {
    [S_STR] = "INSERT INTO strings VALUES(?,?)",
    [S_KERNEL] = "INSERT INTO kernels VALUES(?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?)",
    [S_SCOPE] = "INSERT INTO scopes VALUES(?,?,?,?,?,?,?,?)",
    [S_MEMSET] = "INSERT INTO memset VALUES(?,?,?,?,?,?,?,?,?,?)",
    [S_PERF] = "INSERT INTO perf_metrics VALUES(?,?,?,?,?,?,?,?)",
};

static bool is_real_col(fl_type t, const char *col)
{
    return t == FL_T_PM_SAMPLE_BATCH && strcmp(col, "value") == 0;
}

/* A batch type's table and its insert. */
static bool gtable(fl_export *e, size_t k, fl_buf *create, fl_buf *ins)
{
    sq *s = e->priv;
    const fl_type_info *ti = fl_type_get(gspecs[k].t);
    gtab *g = &s->g[k];
    g->dur = ti->col_duration;
    g->range = g->dur >= 0;
    fl_buf_reset(create);
    fl_buf_reset(ins);
    fl_buf_printf(create, "CREATE TABLE %s(%s", gspecs[k].table,
                  g->range ? "start_ns INTEGER, end_ns INTEGER" : "ts_ns INTEGER");
    fl_buf_printf(ins, "INSERT INTO %s VALUES(?%s", gspecs[k].table, g->range ? ",?" : "");
    for (int c = 0; c < ti->ncols; c++) {
        if (c == ti->col_dt)
            continue;
        fl_buf_printf(create, ", %s %s", ti->cols[c],
                      is_real_col(gspecs[k].t, ti->cols[c]) ? "REAL" : "INTEGER");
        fl_buf_puts(ins, ",?");
        for (size_t d = 0; d < sizeof dict_cols / sizeof dict_cols[0]; d++)
            if (dict_cols[d].t == gspecs[k].t && strcmp(dict_cols[d].col, ti->cols[c]) == 0)
                g->dict[c] = (uint8_t)dict_cols[d].d;
    }
    fl_buf_puts(create, ")");
    fl_buf_puts(ins, ")");
    if (create->oom || ins->oom) {
        e->oom = true;
        return false;
    }
    return exec(e, create->p) && (g->ins = prepare(e, ins->p)) != NULL;
}

static void sq_free(sq *s)
{
    for (int i = 0; i < S_COUNT; i++)
        if (s->st[i])
            s->api->finalize(s->st[i]);
    for (size_t k = 0; k < N_GSPECS; k++)
        if (s->g[k].ins)
            s->api->finalize(s->g[k].ins);
    memset(s->st, 0, sizeof s->st);
    if (s->kmany)
        s->api->finalize(s->kmany);
    s->kmany = NULL;
    for (size_t k = 0; k < N_GSPECS; k++)
        s->g[k].ins = NULL;
    if (s->db)
        s->api->close(s->db);
    s->db = NULL;
}

static int sq_open(fl_export *e, const char *path)
{
    char why[512];
    const fl_sqlite_api *api = fl_sqlite_load(why, sizeof why);
    if (!api) {
        snprintf(e->fail, sizeof e->fail, "%s", why);
        return -1;
    }
    sq *s = calloc(1, sizeof *s);
    if (!s) {
        snprintf(e->fail, sizeof e->fail, "out of memory");
        return -1;
    }
    s->api = api;
    s->by_ptr.budget = s->by_hash.budget = s->scope_depth.budget = &e->m->keys;
    s->pool.budget = &e->m->keys;
    e->priv = s;
    if (api->open_v2(path, &s->db,
                     FL_SQLITE_OPEN_READWRITE | FL_SQLITE_OPEN_CREATE | FL_SQLITE_OPEN_NOMUTEX,
                     NULL) != FL_SQLITE_OK) {
        fail(e, "cannot open the database");
        return -1;
    }
    if (!exec(e, schema))
        return -1;
    for (int i = 0; i < S_COUNT; i++)
        if (!(s->st[i] = prepare(e, fixed_inserts[i])))
            return -1;
    fl_buf create = {0}, ins = {0};
    fl_buf_puts(&ins, "INSERT INTO kernels VALUES");
    for (int r = 0; r < KB; r++)
        fl_buf_puts(&ins, r ? ",(?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?)"
                            : "(?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?)");
    bool good = !ins.oom && (s->kmany = prepare(e, ins.p)) != NULL;
    for (size_t k = 0; good && k < N_GSPECS; k++)
        good = gtable(e, k, &create, &ins);
    fl_buf_free(&create);
    fl_buf_free(&ins);
    return good && exec(e, views) ? 0 : -1;
}

static void sq_destroy(fl_export *e)
{
    sq *s = e->priv;
    if (!s)
        return;
    sq_free(s);
    fl_map_free(&s->by_ptr);
    fl_map_free(&s->by_hash);
    fl_map_free(&s->scope_depth);
    fl_pool_free(&s->pool);
    free(s);
    e->priv = NULL;
}

/* ----------------------------------------------------------- kernels */

/* A kernel row's values, bound later with others: one multi-row insert
 * of KB rows costs SQLite's statement overhead once (a third of the time
 * a row took alone). */
static void kernel_put(sq *s, void *st, int base, const krow *r)
{
    for (int c = 0; c < K_COLS; c++) {
        if (r->null >> c & 1)
            s->api->bind_null(st, base + c);
        else if (c == K_OCC)
            s->api->bind_double(st, base + c, r->occ);
        else
            s->api->bind_int64(st, base + c, r->v[c]);
    }
}

static void kernels_flush(fl_export *e)
{
    sq *s = e->priv;
    if (s->nk == KB) {
        for (int r = 0; r < KB; r++)
            kernel_put(s, s->kmany, 1 + r * K_COLS, &s->kb[r]);
        run(e, s->kmany);
    } else {
        for (int r = 0; r < s->nk; r++) {
            kernel_put(s, s->st[S_KERNEL], 1, &s->kb[r]);
            run(e, s->st[S_KERNEL]);
        }
    }
    s->nk = 0;
}

static void kset(krow *r, int c, bool have, int64_t v)
{
    r->v[c] = v;
    if (!have)
        r->null |= 1u << c;
}

static void sq_kernel(fl_export *e, const fl_krow *k)
{
    if (!ok(e))
        return;
    sq *s = e->priv;
    krow *r = &s->kb[s->nk];
    const fl_kdetail *d = k->detail;
    int64_t dev = k->device_id >= 0 ? k->device_id : e->m->default_device;
    r->null = 0;
    kset(r, 0, true, (int64_t)k->start_ns);
    kset(r, 1, true, (int64_t)(k->start_ns + k->duration_ns));
    kset(r, 2, true, (int64_t)k->duration_ns);
    kset(r, 3, dev >= 0, dev);
    kset(r, 4, true, k->stream_id);
    kset(r, 5, true, k->corr_id);
    kset(r, 6, true, k->kernel_id);
    uint64_t id = sid(e, fl_model_kernel_name(e->m, k->kernel_id), true);
    kset(r, 7, id != 0, (int64_t)id);
    for (int i = 0; i < 3; i++) {
        kset(r, 8 + i, d && d->have_grid, d ? d->grid[i] : 0);
        kset(r, 11 + i, d && d->have_block, d ? d->block[i] : 0);
    }
    kset(r, 14, k->num_regs >= 0, k->num_regs);
    kset(r, 15, k->dyn_shared >= 0, k->dyn_shared);
    kset(r, 16, d && d->static_shared >= 0, d ? d->static_shared : 0);
    r->occ = d ? d->occupancy : NAN;
    kset(r, K_OCC, !isnan(r->occ), 0);
    const char *texts[3] = {d ? d->limiting : NULL, d ? d->user_scope : NULL,
                            d && d->stack_trace && *d->stack_trace ? d->stack_trace : NULL};
    for (int i = 0; i < 3; i++) {
        id = sid(e, texts[i], true);
        kset(r, 18 + i, id != 0, (int64_t)id);
    }
    kset(r, 21, k->external_kind > 0, k->external_kind);
    kset(r, 22, k->external_kind > 0, (int64_t)k->external_id);
    /* the framework op's name (op_dict), in strings like the others */
    id = sid(e, fl_model_op_name(e->m, k->external_kind, k->external_id), true);
    kset(r, 23, id != 0, (int64_t)id);
    if (++s->nk == KB)
        kernels_flush(e);
    e->events++;
}

/* ----------------------------------------------------------- batches */

static const char *dict_name(const fl_model *m, dkind d, uint64_t id)
{
    switch (d) {
    case D_FUNCTION:
        return fl_model_function_name(m, id);
    case D_METRIC:
        return fl_model_metric_name(m, id);
    case D_SCOPE:
        return fl_model_scope_name(m, id);
    case D_SOURCE:
        return fl_model_source_file_name(m, id);
    case D_STACK:
        return id ? fl_model_stack_text(m, id) : NULL;
    default:
        return NULL;
    }
}

static void gbatch(fl_export *e, const gtab *g, const fl_batch *b)
{
    sq *s = e->priv;
    const fl_type_info *ti = fl_type_get(b->type_id);
    int dtc = fl_batch_colid(b, ti->col_dt), durc = g->dur >= 0 ? fl_batch_colid(b, g->dur) : -1;
    for (size_t r = 0; r < b->nrows && !e->fail[0]; r++) {
        uint64_t dt = 0, dur = 0;
        bool have_t = fl_rcell_u64(b, r, dtc, &dt);
        int i = 1;
        bind_opt(s, g->ins, i++, have_t, (int64_t)(b->base_time_ns + dt));
        if (g->range) {
            bool have_end = have_t && fl_rcell_u64(b, r, durc, &dur);
            bind_opt(s, g->ins, i++, have_end,
                     have_end ? (int64_t)(b->base_time_ns + dt + dur) : 0);
        }
        for (int c = 0; c < ti->ncols; c++) {
            if (c == ti->col_dt)
                continue;
            const fl_cell *cell = fl_batch_cell(b, r, fl_batch_colid(b, c));
            if (g->dict[c] != D_NONE) {
                uint64_t id;
                const char *name = fl_rcell_u64(b, r, fl_batch_colid(b, c), &id)
                                       ? dict_name(e->m, (dkind)g->dict[c], id)
                                       : NULL;
                bind_sid(e, g->ins, i++, name, true);
            } else {
                bind_cell(s, g->ins, i++, cell);
            }
        }
        run(e, g->ins);
        e->events++;
    }
}

/* Scopes: paired by report/scopes.h's rule, one row when a scope ends;
 * those still open at the end are rows with end_ns NULL (sq_finish). */
static void scope_batch(fl_export *e, const fl_batch *b)
{
    sq *s = e->priv;
    fl_scope_cols c = fl_scope_cols_of(b);
    int depth_c = fl_batch_colid(b, FL_COL_SCOPE_DEPTH),
        tid_c = fl_batch_colid(b, FL_COL_SCOPE_TID);
    for (size_t r = 0; r < b->nrows && !e->fail[0]; r++) {
        fl_scope_end end;
        uint64_t depth = 0, tid = 0, inst;
        bool have_depth = fl_rcell_u64(b, r, depth_c, &depth);
        bool have_tid = fl_rcell_u64(b, r, tid_c, &tid);
        fl_scope_step step = fl_scope_row(&e->open, b, &c, r, &end);
        if (step == FL_SCOPE_OOM) {
            e->oom = true;
            return;
        }
        if (step == FL_SCOPE_NOTHING && fl_rcell_u64(b, r, c.id, &inst) &&
            fl_map_find(&e->open, inst)) {
            fl_mval *v = fl_map_put(&s->scope_depth, inst, NULL);
            if (!v) {
                e->oom = true;
                return;
            }
            v->a = have_depth ? depth + 1 : 0;
            v->b = have_tid ? tid + 1 : 0;
            continue;
        }
        if (step != FL_SCOPE_ENDED)
            continue;
        fl_mval *v = fl_map_find(&s->scope_depth, end.instance);
        if (v) { /* the begin's depth and thread */
            have_depth = v->a != 0;
            depth = v->a - 1;
            have_tid = v->b != 0;
            tid = v->b - 1;
        }
        void *st = s->st[S_SCOPE];
        bind_i(s, st, 1, (int64_t)end.start_ns);
        bind_i(s, st, 2, (int64_t)end.end_ns);
        bind_opt(s, st, 3, end.end_ns >= end.start_ns, (int64_t)(end.end_ns - end.start_ns));
        bind_i(s, st, 4, (int64_t)end.instance);
        bind_sid(e, st, 5, fl_model_scope_name(e->m, end.name_id), true);
        bind_opt(s, st, 6, have_depth, (int64_t)depth);
        bind_opt(s, st, 7, have_tid, (int64_t)tid);
        bind_i(s, st, 8, (end.instance & FL_NVTX_INSTANCE_BIT) != 0);
        run(e, st);
        if (v)
            fl_map_del(&s->scope_depth, end.instance);
        e->events++;
    }
}

static void sq_batch(fl_export *e, const fl_batch *b)
{
    if (!ok(e))
        return;
    if (b->type_id == FL_T_SCOPE_EVENT_BATCH) {
        scope_batch(e, b);
        return;
    }
    sq *s = e->priv;
    for (size_t k = 0; k < N_GSPECS; k++)
        if (gspecs[k].t == b->type_id)
            gbatch(e, &s->g[k], b);
}

/* ----------------------------------------------------------- records */

static void memset_rec(fl_export *e, const json_t *rec)
{
    sq *s = e->priv;
    void *st = s->st[S_MEMSET];
    uint64_t t, dur, v = 0;
    if (!fl_jget_span(rec, &t, &dur))
        return;
    bind_i(s, st, 1, (int64_t)t);
    bind_i(s, st, 2, (int64_t)(t + dur));
    bind_i(s, st, 3, (int64_t)dur);
    static const char *const keys[] = {"device_id", "stream_id", "context_id", "corr_id",
                                       "bytes",     "value",     "memory_kind"};
    for (int i = 0; i < 7; i++) {
        bool have = i < 2 ? fl_jget_id(rec, keys[i], &v) : fl_jget_u64(rec, keys[i], &v);
        bind_opt(s, st, 4 + i, have, (int64_t)v);
    }
    run(e, st);
    e->events++;
}

/* A range profiler record: one row per metric it has (a value below 0
 * is one the pass could not hold: none). */
static void perf_rec(fl_export *e, fl_type t, const json_t *rec)
{
    sq *s = e->priv;
    void *st = s->st[S_PERF];
    bool kernel = t == FL_T_KERNEL_PERF_METRIC_EVENT;
    const char *name = fl_jget_str(rec, kernel ? "kernel_name" : "name");
    if (kernel && (!name || !*name))
        name = fl_jget_str(rec, "range_name");
    uint64_t start = 0, dur = 0;
    bool have_t = fl_jget_span(rec, &start, &dur);
    int n = kernel ? FL_PERF_COUNT : FL_PERF_SCOPE_COUNT;
    for (int k = 0; k < n && !e->fail[0]; k++) {
        double v;
        if (!fl_jget_real(rec, fl_perf_keys[k], &v) || v < 0)
            continue;
        s->api->bind_text(st, 1, kernel ? "kernel" : "scope", -1, NULL);
        bind_opt(s, st, 2, have_t, (int64_t)start);
        bind_opt(s, st, 3, have_t, (int64_t)(start + dur));
        bind_opt(s, st, 4, have_t, (int64_t)dur);
        bind_sid(e, st, 5, name && *name ? name : NULL, false);
        bind_sid(e, st, 6, fl_jget_str(rec, "user_scope"), false);
        bind_sid(e, st, 7, fl_perf_keys[k], true);
        s->api->bind_double(st, 8, v);
        run(e, st);
        e->events++;
    }
}

static void sq_record(fl_export *e, fl_type t, const json_t *rec)
{
    if (!e->priv) /* a record without a file: said at the first event */
        return;
    if (e->fail[0])
        return;
    if (t == FL_T_MEMSET_EVENT)
        memset_rec(e, rec);
    else if (t == FL_T_PERF_METRIC_EVENT || t == FL_T_KERNEL_PERF_METRIC_EVENT)
        perf_rec(e, t, rec);
}

/* ------------------------------------------------------------ finish */

static void meta_row(fl_export *e, void *st, const char *key, bool have, int64_t iv, const char *sv)
{
    sq *s = e->priv;
    s->api->bind_text(st, 1, key, -1, NULL);
    if (sv)
        s->api->bind_text(st, 2, sv, -1, FL_SQLITE_TRANSIENT);
    else
        bind_opt(s, st, 2, have, iv);
    run(e, st);
}

static void finish_meta(fl_export *e, const fl_read_result *res)
{
    sq *s = e->priv;
    const fl_model *m = e->m;
    void *st = prepare(e, "INSERT INTO meta VALUES(?,?)");
    if (!st)
        return;
    meta_row(e, st, "schema_version", true, FL_SQLITE_SCHEMA_VERSION, NULL);
    meta_row(e, st, "tool", false, 0, "gpu-profile");
    meta_row(e, st, "tool_version", false, 0, GP_VERSION_STRING);
    meta_row(e, st, "session_id", m->session_id != NULL, 0, m->session_id);
    meta_row(e, st, "app", m->app != NULL, 0, m->app);
    meta_row(e, st, "hostname", m->hostname != NULL, 0, m->hostname);
    meta_row(e, st, "pid", m->have_pid, m->pid, NULL);
    meta_row(e, st, "start_ns", m->have_start, (int64_t)m->start_ns, NULL);
    meta_row(e, st, "end_ns", m->have_shutdown, (int64_t)m->shutdown_ns, NULL);
    meta_row(e, st, "first_ns", m->have_time, (int64_t)m->first_ns, NULL);
    meta_row(e, st, "last_ns", m->have_time, (int64_t)m->last_ns, NULL);
    meta_row(e, st, "crashed", res != NULL, res && res->crashed, NULL);
    meta_row(e, st, "bad_lines", res != NULL, res ? (int64_t)res->bad_lines : 0, NULL);
    s->api->finalize(st);

    st = prepare(e, "INSERT INTO processes VALUES(?,?,?,?,?,?,?,?)");
    if (!st)
        return;
    bind_opt(s, st, 1, m->have_pid, m->pid);
    bind_sid(e, st, 2, m->app, false);
    bind_sid(e, st, 3, m->hostname, false);
    if (m->session_id)
        s->api->bind_text(st, 4, m->session_id, -1, FL_SQLITE_TRANSIENT);
    bind_opt(s, st, 5, m->have_start, (int64_t)m->start_ns);
    bind_opt(s, st, 6, m->have_shutdown, (int64_t)m->shutdown_ns);
    if (m->engine)
        s->api->bind_text(st, 7, m->engine, -1, FL_SQLITE_TRANSIENT);
    if (m->session_kind)
        s->api->bind_text(st, 8, m->session_kind, -1, FL_SQLITE_TRANSIENT);
    run(e, st);
    s->api->finalize(st);

    st = prepare(e, "INSERT INTO devices VALUES(?,?,?,?,?)");
    if (!st)
        return;
    for (size_t i = 0; i < m->n_devices; i++) {
        const fl_model_device *d = &m->devices[i];
        bind_i(s, st, 1, d->id);
        bind_opt(s, st, 2, d->cuda_id >= 0, d->cuda_id);
        bind_sid(e, st, 3, d->name, false);
        if (d->uuid)
            s->api->bind_text(st, 4, d->uuid, -1, FL_SQLITE_TRANSIENT);
        else
            s->api->bind_null(st, 4);
        if (d->is_mig && d->mig_profile)
            s->api->bind_text(st, 5, d->mig_profile, -1, FL_SQLITE_TRANSIENT);
        else
            s->api->bind_null(st, 5);
        run(e, st);
    }
    s->api->finalize(st);
}

/* Scopes begun and never ended (a crashed session): end_ns NULL. */
static void finish_open_scopes(fl_export *e)
{
    sq *s = e->priv;
    void *st = s->st[S_SCOPE];
    for (size_t i = 0; i < e->open.cap && !e->fail[0]; i++) {
        if (!e->open.used[i])
            continue;
        uint64_t inst = e->open.keys[i];
        const fl_mval *o = &e->open.vals[i];
        const fl_mval *v = fl_map_find(&s->scope_depth, inst);
        bind_i(s, st, 1, (int64_t)o->a);
        s->api->bind_null(st, 2);
        s->api->bind_null(st, 3);
        bind_i(s, st, 4, (int64_t)inst);
        bind_sid(e, st, 5, fl_model_scope_name(e->m, o->b), true);
        bind_opt(s, st, 6, v && v->a, v ? (int64_t)v->a - 1 : 0);
        bind_opt(s, st, 7, v && v->b, v ? (int64_t)v->b - 1 : 0);
        bind_i(s, st, 8, (inst & FL_NVTX_INSTANCE_BIT) != 0);
        run(e, st);
    }
}

static void sq_finish(fl_export *e, const fl_read_result *res)
{
    if (!ok(e))
        return;
    sq *s = e->priv;
    kernels_flush(e);
    finish_open_scopes(e);
    if (!e->fail[0])
        finish_meta(e, res);
    if (!e->fail[0] && !e->oom && exec(e, indexes))
        exec(e, "COMMIT");
    sq_free(s);
}

const fl_export_hooks fl_export_sqlite = {.kernel = sq_kernel,
                                          .batch = sq_batch,
                                          .record = sq_record,
                                          .finish = sq_finish,
                                          .open = sq_open,
                                          .destroy = sq_destroy};
