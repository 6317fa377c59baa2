/*
 * test_export_speed.c - what made the exports fast (issue 37) changed no
 * byte and holds its bounds: JSON strings quoted in runs (fl_buf_str,
 * gp_json_quote) equal the per-character quoting they replaced on random
 * hostile strings (quotes, backslashes, control bytes, good and broken
 * UTF-8); numbers written without printf (fl_buf_double) equal
 * gp_format_fixed(v, 6, 1); and an export hands its output to the FILE in
 * a few large writes rather than one per event, which an unbuffered FILE
 * counts.  No timing.
 */
#include "check.h"
#include "reader/read.h"
#include "report/export.h"
#include "util/buf.h"
#include "util/text.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* ------------------------------------------- the quoting it replaced */

static void ref_quote(fl_buf *b, const char *s, size_t n)
{
    const unsigned char *u = (const unsigned char *)s;
    FL_BUF_LIT(b, "\"");
    for (size_t i = 0; i < n;) {
        unsigned c = u[i];
        size_t len = gp_utf8_len(u + i, n - i);
        if (len == 0) {
            FL_BUF_LIT(b, "\\ufffd");
            i++;
            continue;
        }
        if (len > 1) {
            fl_buf_put(b, s + i, len);
            i += len;
            continue;
        }
        i++;
        const char *esc = c == '"'    ? "\\\""
                          : c == '\\' ? "\\\\"
                          : c == '\b' ? "\\b"
                          : c == '\f' ? "\\f"
                          : c == '\n' ? "\\n"
                          : c == '\r' ? "\\r"
                          : c == '\t' ? "\\t"
                                      : NULL;
        char tmp[8];
        if (esc) {
            fl_buf_puts(b, esc);
        } else if (c < 0x20 || c == 0x7F) {
            snprintf(tmp, sizeof tmp, "\\u%04x", c);
            fl_buf_puts(b, tmp);
        } else {
            fl_buf_put(b, s + i - 1, 1);
        }
    }
    FL_BUF_LIT(b, "\"");
}

static uint64_t rng = 88172645463325252ull;
static uint64_t next(void)
{
    rng ^= rng << 13;
    rng ^= rng >> 7;
    rng ^= rng << 17;
    return rng;
}

static void test_quote(void)
{
    /* Bytes drawn mostly from the ones that matter. */
    static const unsigned char pool[] = {'a',  'Z',  '0',  ' ',  '"',  '\\', '\n', '\t', 0x01,
                                         0x1f, 0x7f, 0xc3, 0xa9, 0xe2, 0x82, 0xac, 0xf0, 0x9f,
                                         0x98, 0x80, 0xed, 0xa0, 0xff, 0xc0, '/',  '<'};
    fl_buf got = {0}, want = {0};
    size_t bad = 0;
    for (int t = 0; t < 20000; t++) {
        char s[64];
        size_t n = next() % 48;
        for (size_t i = 0; i < n; i++)
            s[i] = (char)(next() % 3 ? 'a' + next() % 26 : pool[next() % sizeof pool]);
        for (size_t i = 0; i < n; i++)
            if (s[i] == 0)
                s[i] = 'x';
        s[n] = '\0';
        fl_buf_reset(&got);
        fl_buf_reset(&want);
        fl_buf_str(&got, s);
        ref_quote(&want, s, n);
        if (got.len != want.len || memcmp(got.p, want.p, got.len) != 0) {
            if (bad++ < 3)
                fprintf(stderr, "quote differs: got %s want %s\n", got.p, want.p);
        }
    }
    CHECK_INT(bad, 0);
    fl_buf_reset(&got);
    fl_buf_str(&got, "plain name(float*, int)");
    CHECK_STR(got.p, "\"plain name(float*, int)\"");
    fl_buf_reset(&got);
    fl_buf_str(&got, NULL);
    CHECK_STR(got.p, "null");
    fl_buf_free(&got);
    fl_buf_free(&want);
}

static void emit(void *ctx, const char *p, size_t n)
{
    fl_buf_put(ctx, p, n);
}

static void test_double(void)
{
    static const double fixed[] = {
        0,          -0.0,      0.5,         -0.5,   1e-7,     -1e-7, 0.0000005,
        -0.0000005, 123.4560,  1e12 + 0.25, 9e12,   -9.5e12,  0.75,  61.25,
        262.144,    1.0 / 3.0, 1e300,       -1e300, INFINITY, NAN,   4294967296.000001};
    fl_buf got = {0}, want = {0};
    size_t bad = 0;
    for (size_t t = 0; t < 200000; t++) {
        double v;
        if (t < sizeof fixed / sizeof fixed[0]) {
            v = fixed[t];
        } else {
            int64_t i = (int64_t)(next() % 2000000001ull) - 1000000000;
            v = (double)i / (double)(1ull << (next() % 40));
        }
        fl_buf_reset(&got);
        fl_buf_reset(&want);
        fl_buf_double(&got, v);
        if (isfinite(v))
            gp_format_fixed(v, 6, 1, emit, &want);
        else
            FL_BUF_LIT(&want, "null");
        if (got.len != want.len || memcmp(got.p, want.p, got.len) != 0) {
            if (bad++ < 3)
                fprintf(stderr, "%.17g: got %s want %s\n", v, got.p, want.p);
        }
    }
    CHECK_INT(bad, 0);
    fl_buf_free(&got);
    fl_buf_free(&want);
}

/* ------------------------------------------------ writes per event */

static size_t writes;
static ssize_t count_write(void *c, const char *p, size_t n)
{
    (void)c;
    (void)p;
    writes++;
    return (ssize_t)n;
}

static const char *const kcols[] = {"dt_ns",         "kernel_id",  "stream_id", "duration_ns",
                                    "corr_id",       "dyn_shared", "num_regs",  "has_details",
                                    "external_kind", "external_id"};

/* 20 000 kernel rows through each format into an unbuffered FILE: the
 * export writes in pieces of about FL_EX_FLUSH_BYTES, not a line each. */
static void test_writes(fl_export_format fmt, const char *what)
{
    cookie_io_functions_t io = {.write = count_write};
    FILE *f = fopencookie(NULL, "w", io);
    CHECK(f != NULL);
    if (!f)
        return;
    setvbuf(f, NULL, _IONBF, 0);
    writes = 0;
    fl_export *e = fl_export_create(fmt, f);
    fl_read_cb cb;
    fl_export_callbacks(e, &cb);
    enum { ROWS = 1000, BATCHES = 20 };
    static fl_cell cells[ROWS * 10];
    for (int bt = 0; bt < BATCHES; bt++) {
        for (int r = 0; r < ROWS; r++) {
            int64_t v[10] = {r * 1000, r % 7, r % 4, 500, bt * ROWS + r, 0, 32, 0, 0, 0};
            for (int c = 0; c < 10; c++)
                cells[r * 10 + c] = (fl_cell){.kind = FL_CELL_INT, .i = v[c]};
        }
        fl_batch b;
        memset(&b, 0, sizeof b);
        b.type = "kernel_event_batch";
        b.base_time_ns = 1000000000ull + (uint64_t)bt * 10000000ull;
        b.ncols = 10;
        b.cols = kcols;
        b.nrows = ROWS;
        b.cells = cells;
        fl_batch_map_columns(&b);
        cb.batch(cb.user, &b);
    }
    CHECK_INT(fl_export_finish(e, NULL), 0);
    fl_export_destroy(e);
    fclose(f);
    if (writes > 200)
        fprintf(stderr, "%s: %zu writes for %d events\n", what, writes, ROWS * BATCHES);
    CHECK(writes > 0 && writes <= 200);
}

/* One row of the largest numbers each column holds, through a fresh
 * export (its buffers at their smallest): every digit there, exactly. */
static void test_extremes(fl_export_format fmt, const char *want)
{
    char *text = NULL;
    size_t len = 0;
    FILE *f = open_memstream(&text, &len);
    fl_export *e = fl_export_create(fmt, f);
    fl_read_cb cb;
    fl_export_callbacks(e, &cb);
    int64_t v[10] = {INT64_MAX / 2, 4000000000, 4294967295, INT64_MAX / 2, 4294967295,
                     INT64_MAX,     INT64_MAX,  0,          INT64_MAX,     INT64_MAX};
    fl_cell cells[10];
    for (int c = 0; c < 10; c++)
        cells[c] = (fl_cell){.kind = FL_CELL_INT, .i = v[c]};
    fl_batch b;
    memset(&b, 0, sizeof b);
    b.type = "kernel_event_batch";
    b.base_time_ns = 1;
    b.ncols = 10;
    b.cols = kcols;
    b.nrows = 1;
    b.cells = cells;
    fl_batch_map_columns(&b);
    cb.batch(cb.user, &b);
    CHECK_INT(fl_export_finish(e, NULL), 0);
    fl_export_destroy(e);
    fclose(f);
    CHECK_CONTAINS(text, want);
    free(text);
}

int main(void)
{
    test_quote();
    test_double();
    test_writes(FL_EXPORT_CHROME_TRACE, "chrome-trace");
    test_writes(FL_EXPORT_CSV_KERNELS, "csv");
    /* ts 0: the first row is the origin. */
    test_extremes(FL_EXPORT_CHROME_TRACE,
                  "{\"name\":\"kernel 4000000000\",\"cat\":\"kernel\",\"ph\":\"X\",\"ts\":0.000,"
                  "\"pid\":99,\"tid\":4294967295,\"dur\":4611686018427387.903,\"args\":{"
                  "\"kernel_id\":4000000000,\"registers\":9223372036854775807,"
                  "\"dyn_shared_bytes\":9223372036854775807},\"per_event\":{\"corr_id\":4294967295,"
                  "\"external_kind\":9223372036854775807,\"external_id\":9223372036854775807}}");
    test_extremes(
        FL_EXPORT_CSV_KERNELS,
        "\n4611686018427387904,9223372036854775807,4611686018427387903,,4294967295,4294967295,"
        "4000000000,,,,9223372036854775807,9223372036854775807,,,,9223372036854775807,"
        "9223372036854775807,\n");
    return check_done("test_export_speed");
}
