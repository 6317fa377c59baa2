/*
 * report/export.c - a session written out in another tool's format, event
 * by event as the reader gives them: the one loop over FL_EXPORTERS
 * (export.h).
 *
 * Promises: the session model (model.c) sees every record, detail and
 * batch before the format's hook does; the format's header comes before
 * its first line, written once; the caps on distinct keys and bytes stop
 * the read for every format alike; a hook is never called after finish.
 * The formats themselves are in export_chrome.c, export_csv.c and
 * export_sqlite.c, behind export_int.h's fl_export_hooks.
 */
#include "export.h"
#include "export_int.h"
#include "../reader/read.h"
#include "../util/buf.h"
#include "model.h"

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define FL_EXPORT_ROW_(id, nm, hk, hl, abs)                                                        \
    [id] = {.name = nm, .help = hl, .absolute_time = abs, .hooks = &hk},
const fl_exporter fl_exporters[FL_EXPORT_N] = {FL_EXPORTERS(FL_EXPORT_ROW_, FL_EXPORT_ROW_)};

int fl_export_format_of(const char *name)
{
    for (int i = 0; name && i < FL_EXPORT_N; i++)
        if (strcmp(fl_exporters[i].name, name) == 0)
            return i;
    return -1;
}

/* ------------------------------------------------------------- output */

void fl_ex_put_line(fl_export *e)
{
    if (e->line.oom) {
        e->oom = true;
    } else if (e->line.len && fwrite(e->line.p, 1, e->line.len, e->out) != e->line.len) {
        e->write_error = true;
    }
    fl_buf_reset(&e->line);
}

/* Beyond this id a name is quoted each time: the cache's index stays
 * small (about 3 MB at most) whatever ids a damaged session holds. */
#define FL_EX_QNAME_MAX_ID 16384

static fl_ex_qname *qslot(fl_export *e, uint32_t kernel_id)
{
    if (kernel_id >= FL_EX_QNAME_MAX_ID)
        return NULL;
    if (kernel_id >= e->nqnames) {
        size_t n = e->nqnames ? e->nqnames : 64;
        while (n <= kernel_id)
            n *= 2;
        fl_ex_qname *q = realloc(e->qnames, n * sizeof *q);
        if (!q)
            return NULL;
        memset(q + e->nqnames, 0, (n - e->nqnames) * sizeof *q);
        e->qnames = q;
        e->nqnames = n;
    }
    return &e->qnames[kernel_id];
}

const char *fl_ex_kernel_text(fl_export *e, uint32_t kernel_id,
                              void (*quote)(fl_buf *, const char *), size_t *len)
{
    const char *name = fl_model_kernel_name(e->m, kernel_id);
    fl_ex_qname *q = name ? qslot(e, kernel_id) : NULL;
    if (!q)
        return NULL;
    if (q->src != name) {
        size_t off = e->qtext.len;
        quote(&e->qtext, name);
        if (e->qtext.oom) {
            e->oom = true;
            return NULL;
        }
        q->src = name;
        q->off = off;
        q->len = e->qtext.len - off;
    }
    *len = q->len;
    return e->qtext.p + q->off;
}

const char *fl_ex_dims_text(fl_export *e, uint32_t kernel_id, const fl_kdetail *d,
                            char *(*write)(char *, const fl_kdetail *), size_t *len)
{
    fl_ex_qname *q = d ? qslot(e, kernel_id) : NULL;
    if (!q)
        return NULL;
    uint32_t dims[6] = {d->grid[0], d->grid[1], d->grid[2], d->block[0], d->block[1], d->block[2]};
    if (!q->have_dims || q->have_grid != d->have_grid || q->have_block != d->have_block ||
        memcmp(q->dims, dims, sizeof dims) != 0) {
        q->dlen = (size_t)(write(q->dtext, d) - q->dtext);
        memcpy(q->dims, dims, sizeof dims);
        q->have_grid = d->have_grid;
        q->have_block = d->have_block;
        q->have_dims = true;
    }
    *len = q->dlen;
    return q->dtext;
}

#define FL_EX_STEXT_MAX_BYTES (256 * 1024)

const char *fl_ex_interned_text(fl_export *e, const char *s, void (*quote)(fl_buf *, const char *),
                                size_t *len)
{
    if (!s)
        return NULL;
    size_t n = sizeof e->scache / sizeof e->scache[0];
    size_t i = ((uintptr_t)s >> 3) % n;
    if (e->scache[i].src != s) {
        if (e->stext.len > FL_EX_STEXT_MAX_BYTES) {
            /* Bounded whatever the scopes: start again. */
            memset(e->scache, 0, sizeof e->scache);
            fl_buf_reset(&e->stext);
        }
        size_t off = e->stext.len;
        quote(&e->stext, s);
        if (e->stext.oom) {
            fl_buf_reset(&e->stext);
            memset(e->scache, 0, sizeof e->scache);
            return NULL;
        }
        e->scache[i].src = s;
        e->scache[i].off = off;
        e->scache[i].len = e->stext.len - off;
    }
    *len = e->scache[i].len;
    return e->stext.p + e->scache[i].off;
}

void fl_ex_start(fl_export *e)
{
    if (e->started)
        return;
    e->started = true;
    const char *h =
        e->run && e->x->hooks->run_header ? e->x->hooks->run_header : e->x->hooks->header;
    if (h)
        fl_buf_puts(&e->line, h);
    fl_ex_put_line(e);
    e->first_event = true;
}

/* ---------------------------------------------------------- callbacks */

static void on_kernel(void *user, const fl_krow *k)
{
    fl_export *e = user;
    if (e->finished || !e->x->hooks->kernel)
        return;
    fl_ex_start(e);
    e->x->hooks->kernel(e, k);
}

static void cb_record(void *user, int channel, fl_type t, const char *type, json_t *rec)
{
    fl_export *e = user;
    if (e->finished)
        return;
    fl_model_record(e->m, channel, t, type, rec);
    if (e->x->hooks->record && type && rec)
        e->x->hooks->record(e, t, rec);
}

/* A kernel_detail (cb_record's, read without jansson): the model's. */
static void cb_detail(void *user, int channel, const fl_detail *d)
{
    fl_export *e = user;
    (void)channel;
    if (!e->finished)
        fl_model_detail(e->m, d);
}

static void cb_batch(void *user, const fl_batch *b)
{
    fl_export *e = user;
    if (e->finished)
        return;
    fl_model_batch(e->m, b);
    if (!e->x->hooks->batch || !b || !b->type)
        return;
    fl_ex_start(e);
    e->x->hooks->batch(e, b);
}

static void cb_warning(void *user, const char *file, uint64_t line, const char *msg)
{
    (void)user;
    (void)file;
    (void)line;
    (void)msg; /* the reader's result counts them; the caller reports */
}

fl_export *fl_export_create(fl_export_format fmt, FILE *out)
{
    if (!out || (unsigned)fmt >= FL_EXPORT_N)
        return NULL;
    fl_export *e = calloc(1, sizeof *e);
    if (!e)
        return NULL;
    e->x = &fl_exporters[fmt];
    e->out = out;
    e->m = fl_model_create(on_kernel, e);
    if (!e->m) {
        free(e);
        return NULL;
    }
    e->tracks.budget = e->open.budget = e->open_tid.budget = &e->m->keys;
    return e;
}

bool fl_export_writes_file(fl_export_format fmt)
{
    return (unsigned)fmt < FL_EXPORT_N && fl_exporters[fmt].hooks->open;
}

int fl_export_set_file(fl_export *e, const char *path)
{
    if (!e || !path || !e->x->hooks->open || e->priv || e->started) {
        if (e)
            snprintf(e->fail, sizeof e->fail, "export: --format %s writes no file of its own",
                     e->x->name);
        return -1;
    }
    return e->x->hooks->open(e, path);
}

const char *fl_export_error(const fl_export *e)
{
    return e && e->fail[0] ? e->fail : NULL;
}

void fl_export_set_absolute_time(fl_export *e, bool absolute)
{
    if (e && !e->have_origin)
        e->absolute = absolute;
}

void fl_export_set_max_distinct(fl_export *e, uint64_t max)
{
    if (e)
        e->m->keys.max = max;
}

void fl_export_set_max_memory(fl_export *e, uint64_t bytes)
{
    if (e)
        e->m->keys.max_bytes = bytes;
}

/* fl_read_cb.stop: past the budget of keys or bytes, or out of memory. */
static const char *cb_stop(void *user)
{
    fl_export *e = user;
    if (e->fail[0])
        return e->fail;
    return fl_keys_why(&e->m->keys, e->oom || e->m->oom || e->line.oom, "export",
                       "kernel ids, names, streams, open scopes, correlation ids", e->stop_why,
                       sizeof e->stop_why)
               ? e->stop_why
               : NULL;
}

void fl_export_callbacks(fl_export *e, fl_read_cb *cb)
{
    *cb = (fl_read_cb){.user = e,
                       .record = cb_record,
                       .detail = cb_detail,
                       .batch = cb_batch,
                       .warning = cb_warning,
                       .stop = cb_stop};
}

int fl_export_finish(fl_export *e, const fl_read_result *res)
{
    if (!e)
        return -1;
    if (!e->finished) {
        fl_ex_start(e);
        fl_model_finish(e->m);
        e->finished = true;
        if (e->x->hooks->session_end)
            e->x->hooks->session_end(e);
        if (e->x->hooks->finish)
            e->x->hooks->finish(e, res);
        if (fflush(e->out) != 0 || ferror(e->out))
            e->write_error = true;
    }
    return e->write_error || e->oom || e->line.oom || e->m->oom || e->fail[0] ? -1 : 0;
}

void fl_ex_process_label(const fl_export *e, char *who, size_t size)
{
    const fl_export_process *p = &e->proc;
    int n = 0;
    if (p->have_rank)
        n = snprintf(who, size, "rank %" PRId64, p->rank);
    else if (p->kind && strcmp(p->kind, "monitor") == 0)
        n = snprintf(who, size, "monitor");
    if (n > 0 && (size_t)n < size && (p->host || p->have_pid))
        snprintf(who + n, size - (size_t)n, " (%s%s%s%" PRId64 ")", p->host ? p->host : "",
                 p->host && p->have_pid ? ", " : "", p->have_pid ? "pid " : "",
                 p->have_pid ? p->pid : 0);
    else if (n == 0 && p->have_pid)
        snprintf(who, size, "pid %" PRId64, p->pid);
    else if (n == 0)
        snprintf(who, size, "process %u", p->index);
}

bool fl_export_takes_run(fl_export_format fmt)
{
    return (unsigned)fmt < FL_EXPORT_N && fl_exporters[fmt].hooks->session_end;
}

/* The previous session written out, and what was keyed by its ids
 * forgotten: the next session's kernel ids, names and scopes are its own.
 * The caps carry over to the new model. */
static int next_model(fl_export *e)
{
    fl_ex_start(e);
    fl_model_finish(e->m);
    e->x->hooks->session_end(e);
    fl_ex_put_line(e);
    fl_model *m = fl_model_create(on_kernel, e);
    if (!m)
        return -1;
    m->keys.max = e->m->keys.max;
    m->keys.max_bytes = e->m->keys.max_bytes;
    e->oom |= e->m->oom; /* the last session short: the export is */
    fl_map_free(&e->tracks);
    fl_map_free(&e->open);
    fl_map_free(&e->open_tid);
    fl_model_destroy(e->m);
    e->m = m;
    e->tracks.budget = e->open.budget = e->open_tid.budget = &e->m->keys;
    /* The caches compare pointers the old model freed. */
    free(e->qnames);
    e->qnames = NULL;
    e->nqnames = 0;
    fl_buf_reset(&e->qtext);
    memset(e->scache, 0, sizeof e->scache);
    fl_buf_reset(&e->stext);
    e->n_known_tracks = 0;
    return 0;
}

int fl_export_begin_process(fl_export *e, const fl_export_process *p)
{
    if (!e || !p || e->finished || !e->x->hooks->session_end)
        return -1;
    if (e->run && next_model(e) != 0) {
        e->oom = true;
        return -1;
    }
    e->run = true;
    e->proc = *p;
    snprintf(e->proc_host, sizeof e->proc_host, "%s", p->host ? p->host : "");
    snprintf(e->proc_kind, sizeof e->proc_kind, "%s", p->kind ? p->kind : "");
    e->proc.host = p->host ? e->proc_host : NULL;
    e->proc.kind = p->kind ? e->proc_kind : NULL;
    e->pid_base = 1000 * ((int64_t)p->index + 1);
    if (!e->absolute) {
        e->origin = p->origin_ns;
        e->have_origin = true;
    }
    return 0;
}

void fl_export_destroy(fl_export *e)
{
    if (!e)
        return;
    if (e->x->hooks->destroy)
        e->x->hooks->destroy(e);
    fl_model_destroy(e->m);
    fl_buf_free(&e->line);
    fl_buf_free(&e->aside);
    fl_buf_free(&e->qtext);
    fl_buf_free(&e->stext);
    free(e->qnames);
    fl_map_free(&e->tracks);
    fl_map_free(&e->open);
    fl_map_free(&e->open_tid);
    free(e);
}
