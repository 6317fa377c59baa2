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
    "external_id\n";

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

static void csv_row(fl_buf *b, const fl_model *m, const fl_krow *k)
{
    const fl_kdetail *d = k->detail;
    int64_t dev = k->device_id >= 0 ? k->device_id : m->default_device;
    char buf[64];
    fl_buf_printf(b, "%" PRIu64 ",%" PRIu64 ",%" PRIu64 ",", k->start_ns,
                  k->start_ns + k->duration_ns, k->duration_ns);
    if (dev >= 0)
        fl_buf_i64(b, dev);
    fl_buf_printf(b, ",%" PRIu32 ",%" PRIu32 ",%" PRIu32 ",", k->stream_id, k->corr_id,
                  k->kernel_id);
    csv_field(b, fl_model_kernel_name(m, k->kernel_id));
    fl_buf_puts(b, ",");
    if (d && d->have_grid)
        csv_field(b, fl_dim3_format(buf, sizeof buf, d->grid));
    fl_buf_puts(b, ",");
    if (d && d->have_block)
        csv_field(b, fl_dim3_format(buf, sizeof buf, d->block));
    fl_buf_puts(b, ",");
    if (k->num_regs >= 0)
        fl_buf_i64(b, k->num_regs);
    fl_buf_puts(b, ",");
    if (k->dyn_shared >= 0)
        fl_buf_i64(b, k->dyn_shared);
    fl_buf_puts(b, ",");
    if (d && d->static_shared >= 0)
        fl_buf_i64(b, d->static_shared);
    fl_buf_puts(b, ",");
    if (d && !isnan(d->occupancy))
        fl_buf_double(b, d->occupancy);
    fl_buf_puts(b, ",");
    if (d)
        csv_field(b, d->user_scope);
    fl_buf_puts(b, ",");
    if (k->external_kind > 0)
        fl_buf_printf(b, "%" PRId64 ",%" PRIu64, k->external_kind, k->external_id);
    else
        fl_buf_puts(b, ",");
    fl_buf_puts(b, "\n");
}

static void csv_kernel(fl_export *e, const fl_krow *k)
{
    csv_row(&e->line, e->m, k);
    fl_ex_put_line(e);
    e->events++;
}

const fl_export_hooks fl_export_csv = {.header = csv_header, .kernel = csv_kernel};
