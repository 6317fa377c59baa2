/*
 * vocab_dump.c - prints the wire vocabulary (src/wire/vocab.h) as one JSON
 * object, in the shape of python/gpufl/_wire.py, for the test that keeps
 * the Python copy equal to the C table (tests/python/test_gpufl.py).
 */
#include "util/buf.h"
#include "wire/vocab.h"

#include <stdio.h>

static void str_list(fl_buf *b, const char *(*name)(int), int n)
{
    FL_BUF_LIT(b, "[");
    for (int i = 0; i < n; i++) {
        if (i)
            FL_BUF_LIT(b, ",");
        fl_buf_str(b, name(i));
    }
    FL_BUF_LIT(b, "]");
}

static const char *channel(int i)
{
    return fl_channel_name(i);
}
static const char *dict(int i)
{
    return fl_dict_name((fl_dict)i);
}
static const char *cap_status(int i)
{
    return fl_cap_status_name((fl_cap_status)i);
}
static const char *engine(int i)
{
    return fl_engine_wire_name((gpufl_engine)i);
}

static void channel_of(fl_buf *b, const fl_type_info *ti)
{
    fl_buf_str(b, ti->channel == FL_CH_ALL ? "*" : fl_channel_name(ti->channel));
}

int main(void)
{
    fl_buf b = {0};
    FL_BUF_LIT(&b, "{\"channels\":");
    str_list(&b, channel, FL_CH_COUNT);
    FL_BUF_LIT(&b, ",\"dictionaries\":");
    str_list(&b, dict, FL_DICT_COUNT);
    for (int batch = 0; batch < 2; batch++) {
        fl_buf_puts(&b, batch ? ",\"batches\":{" : ",\"records\":{");
        int k = 0;
        for (int t = FL_T_UNKNOWN + 1; t < FL_T_COUNT; t++) {
            const fl_type_info *ti = fl_type_get((fl_type)t);
            if (ti->batch != (batch == 1))
                continue;
            if (k++)
                FL_BUF_LIT(&b, ",");
            fl_buf_str(&b, ti->name);
            FL_BUF_LIT(&b, ":[");
            channel_of(&b, ti);
            FL_BUF_LIT(&b, ",");
            fl_buf_u64(&b, ti->version);
            if (ti->batch) {
                FL_BUF_LIT(&b, ",[");
                for (size_t c = 0; c < ti->ncols; c++) {
                    if (c)
                        FL_BUF_LIT(&b, ",");
                    fl_buf_str(&b, ti->cols[c]);
                }
                FL_BUF_LIT(&b, "]");
            }
            FL_BUF_LIT(&b, "]");
        }
        FL_BUF_LIT(&b, "}");
    }
    FL_BUF_LIT(&b, ",\"capability_statuses\":");
    str_list(&b, cap_status, FL_CAP_COUNT);
    FL_BUF_LIT(&b, ",\"engines\":");
    str_list(&b, engine, GPUFL_ENGINE_PM_SAMPLING + 1);
    FL_BUF_LIT(&b, ",\"session_kinds\":[\"" FL_SESSION_KIND_MONITOR "\",\"" FL_SESSION_KIND_TRACE
                   "\"],\"nvtx_instance_bit\":");
    fl_buf_u64(&b, FL_NVTX_INSTANCE_BIT);
    FL_BUF_LIT(&b, ",\"window_sidecar_type\":\"" FL_WINDOW_SIDECAR_TYPE "\"");
    FL_BUF_LIT(&b, ",\"window_loss_type\":\"" FL_WINDOW_LOSS_TYPE "\"");
    FL_BUF_LIT(&b, ",\"mig_key\":\"" FL_KEY_MIG "\",\"mig_keys\":");
    str_list(&b, fl_mig_key_name, FL_MIG_KEY_COUNT);
    FL_BUF_LIT(&b, "}\n");
    int ok = !b.oom && fwrite(b.p, 1, b.len, stdout) == b.len;
    fl_buf_free(&b);
    return ok ? 0 : 1;
}
