/*
 * report/export_csv.c - the kernels CSV exporter, one row of
 * report/export.h's FL_EXPORTERS: its header, then one row per kernel
 * launch in file order, RFC 4180 quoting (a field with a comma, quote or
 * line break is quoted, quotes doubled), an empty field for what was not
 * recorded.
 */
#include "export_int.h"
#include "../util/buf.h"
#include "fields.h"
#include "model.h"

#include <inttypes.h>
#include <math.h>
#include <string.h>

static const char csv_header[] =
    "start_ns,end_ns,duration_ns,device_id,stream_id,corr_id,kernel_id,name,grid,block,"
    "registers,dyn_shared_bytes,static_shared_bytes,occupancy,user_scope,external_kind,"
    "external_id,op\n";

/* A run's export: which process each row is (fl_export_begin_process);
 * "" where not recorded. */
static const char csv_run_header[] =
    "start_ns,end_ns,duration_ns,device_id,stream_id,corr_id,kernel_id,name,grid,block,"
    "registers,dyn_shared_bytes,static_shared_bytes,occupancy,user_scope,external_kind,"
    "external_id,op,pid,rank\n";

static void csv_field(fl_buf *b, const char *s)
{
    if (!s)
        return;
    if (!strpbrk(s, ",\"\r\n")) {
        fl_buf_puts(b, s);
        return;
    }
    fl_buf_puts(b, "\"");
    for (const char *p = s; *p; p++) {
        if (*p == '"')
            fl_buf_puts(b, "\"\"");
        else
            fl_buf_put(b, p, 1);
    }
    fl_buf_puts(b, "\"");
}

/* The row's numbers are written into one reservation (fl_put_*): a
 * kernel row is a dozen numbers, and a call per field cost more than the
 * digits. */
static char *put_u(char *p, uint64_t v)
{
    p = fl_put_u64(p, v);
    *p++ = ',';
    return p;
}

static char *put_opt(char *p, bool ok, int64_t v)
{
    if (ok)
        p = fl_put_i64(p, v);
    *p++ = ',';
    return p;
}

/* A dim3 has commas, so it is always quoted. */
static char *put_dim3(char *p, bool ok, const uint32_t v[3])
{
    if (ok) {
        *p++ = '"';
        p = fl_put_dim3(p, v);
        *p++ = '"';
    }
    *p++ = ',';
    return p;
}

/* grid,block of a detail, the same for the launches that share it, so
 * kept (fl_ex_dims_text). */
static char *put_dims(char *p, const fl_kdetail *d)
{
    p = put_dim3(p, d->have_grid, d->grid);
    return put_dim3(p, d->have_block, d->block);
}

static void csv_row(fl_export *e, const fl_krow *k)
{
    fl_buf *b = &e->line;
    const fl_model *m = e->m;
    const fl_kdetail *d = k->detail;
    int64_t dev = k->device_id >= 0 ? k->device_id : m->default_device;
    char *p = fl_buf_reserve(b, 7 * 22 + 8); /* seven numbers and their commas */
    if (!p)
        return;
    p = put_u(p, k->start_ns);
    p = put_u(p, k->start_ns + k->duration_ns);
    p = put_u(p, k->duration_ns);
    p = put_opt(p, dev >= 0, dev);
    p = put_u(p, k->stream_id);
    p = put_u(p, k->corr_id);
    p = put_u(p, k->kernel_id);
    fl_buf_commit(b, p);
    size_t len;
    const char *name = fl_ex_kernel_text(e, k->kernel_id, csv_field, &len);
    if (name)
        fl_buf_put(b, name, len);
    else
        csv_field(b, fl_model_kernel_name(m, k->kernel_id));
    p = fl_buf_reserve(b, 1 + FL_EX_DTEXT_BYTES + 3 * 22 + 8);
    if (!p)
        return;
    *p++ = ',';
    size_t dlen;
    const char *dtext = fl_ex_dims_text(e, k->kernel_id, d, put_dims, &dlen);
    if (dtext) {
        p = fl_put_lit(p, dtext, dlen);
    } else {
        p = put_dim3(p, d && d->have_grid, d ? d->grid : NULL);
        p = put_dim3(p, d && d->have_block, d ? d->block : NULL);
    }
    p = put_opt(p, k->num_regs >= 0, k->num_regs);
    p = put_opt(p, k->dyn_shared >= 0, k->dyn_shared);
    p = put_opt(p, d && d->static_shared >= 0, d ? d->static_shared : 0);
    fl_buf_commit(b, p);
    if (d && !isnan(d->occupancy))
        fl_buf_double(b, d->occupancy);
    FL_BUF_LIT(b, ",");
    const char *scope = d ? fl_ex_interned_text(e, d->user_scope, csv_field, &len) : NULL;
    if (scope)
        fl_buf_put(b, scope, len);
    else if (d)
        csv_field(b, d->user_scope);
    p = fl_buf_reserve(b, 4 * 21 + 5);
    if (!p)
        return;
    *p++ = ',';
    if (k->external_kind > 0) {
        p = fl_put_i64(p, k->external_kind);
        *p++ = ',';
        p = fl_put_u64(p, k->external_id);
    } else {
        *p++ = ',';
    }
    *p++ = ',';
    const char *op = fl_model_op_name(e->m, k->external_kind, k->external_id);
    if (op) {
        fl_buf_commit(b, p);
        csv_field(b, op);
        p = fl_buf_reserve(b, 2 * 21 + 3);
        if (!p)
            return;
    }
    if (e->run) {
        *p++ = ',';
        if (e->proc.have_pid)
            p = fl_put_i64(p, e->proc.pid);
        *p++ = ',';
        if (e->proc.have_rank)
            p = fl_put_i64(p, e->proc.rank);
    }
    *p++ = '\n';
    fl_buf_commit(b, p);
}

static void csv_kernel(fl_export *e, const fl_krow *k)
{
    csv_row(e, k);
    fl_ex_put_some(e);
    e->events++;
}

static void csv_session_end(fl_export *e)
{
    fl_ex_put_line(e);
}

static void csv_finish(fl_export *e, const fl_read_result *res)
{
    (void)res;
    fl_ex_put_line(e);
}

const fl_export_hooks fl_export_csv = {.header = csv_header,
                                       .kernel = csv_kernel,
                                       .finish = csv_finish,
                                       .session_end = csv_session_end,
                                       .run_header = csv_run_header};
