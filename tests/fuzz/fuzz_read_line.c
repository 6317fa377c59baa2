/*
 * fuzz_read_line.c - fuzz target of the session-log reader's line parser
 * (fl_read_line in src/reader/read.c): the batch scanner, jansson's path, the
 * session filter.  The input is fed whole as one line, then split at '\n'
 * into lines fed one by one on the three channels, every other one with a
 * session filter.  The callbacks touch everything they are given, so a
 * sanitizer sees any read out of bounds.
 *
 * libFuzzer: cmake -DGP_LIBFUZZER=ON with clang (tests/CMakeLists.txt);
 * without it, tests/test_fuzz_read.c includes this file and drives it with
 * its own mutation loop (docs/test-doubles.md, "Fuzzing").
 */
#include "reader/read.h"

#include <stddef.h>
#include <stdint.h>
#include <string.h>

typedef struct fuzz_sink {
    uint64_t sum;
} fuzz_sink;

static void fuzz_record(void *user, int channel, fl_type t, const char *type, json_t *rec)
{
    fuzz_sink *s = user;
    s->sum += (uint64_t)channel + (uint64_t)t + strlen(type) + json_object_size(rec);
    s->sum += (uint64_t)json_integer_value(json_object_get(rec, "ts_ns"));
}

static void fuzz_batch(void *user, const fl_batch *b)
{
    fuzz_sink *s = user;
    s->sum += strlen(b->type) + b->batch_id + b->base_time_ns + (uint64_t)b->channel;
    if (b->hostname)
        s->sum += strlen(b->hostname);
    for (size_t c = 0; c < b->ncols; c++)
        s->sum += strlen(b->cols[c]);
    for (size_t i = 0; i < b->nrows * b->ncols; i++)
        s->sum += (uint64_t)fl_cell_int(&b->cells[i], 1) + (fl_cell_real(&b->cells[i]) > 0);
    int dt = fl_batch_col(b, "dt_ns");
    for (size_t r = 0; r < b->nrows; r++)
        s->sum += (uint64_t)fl_cell_int(fl_batch_cell(b, r, dt), 0);
    s->sum += strlen(b->file);
}

static void fuzz_warning(void *user, const char *file, uint64_t line, const char *msg)
{
    fuzz_sink *s = user;
    s->sum += strlen(file) + line + strlen(msg);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    fuzz_sink sink = {0};
    fl_read_cb cb = {
        .user = &sink, .record = fuzz_record, .batch = fuzz_batch, .warning = fuzz_warning};
    fl_read_result res;
    memset(&res, 0, sizeof res);
    const char *text = (const char *)data;
    fl_read_line(text, size, FL_CH_DEVICE, NULL, &cb, &res, "fuzz", 1);
    const char *p = text, *end = text + size;
    uint64_t lineno = 0;
    while (p < end) {
        const char *nl = memchr(p, '\n', (size_t)(end - p));
        size_t len = nl ? (size_t)(nl - p) : (size_t)(end - p);
        lineno++;
        fl_read_line(p, len, (int)(lineno % FL_CH_COUNT), (lineno & 1) ? "s" : NULL, &cb, &res,
                     "fuzz", lineno);
        if (!nl)
            break;
        p = nl + 1;
    }
    return 0;
}
