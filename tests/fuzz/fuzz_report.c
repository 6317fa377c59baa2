/*
 * fuzz_report.c - fuzz target of the report and the exports over a small
 * session (src/report/): the input, split at form feeds ('\f'), is the
 * device.log, scope.log and system.log of a session directory, read into
 * a report (a small cap of distinct keys, so that the limit's path runs
 * too) rendered as text and JSON, and into the Chrome trace and CSV
 * exports (written to /dev/null).
 *
 * Driven by tests/fuzz/driver.c (gcc, CTest) or libFuzzer (GP_LIBFUZZER);
 * docs/test-doubles.md, "Fuzzing".
 */
#include "fuzz_session.h"
#include "report/export.h"
#include "report/report.h"

static const char *const channels[] = {"device.log", "scope.log", "system.log"};

static void report(const char *dir, uint64_t *sum)
{
    fl_report *r = fl_report_create();
    if (!r)
        return;
    fl_report_set_max_distinct(r, 4096);
    fl_read_cb cb;
    fl_report_callbacks(r, &cb);
    fl_read_result res;
    gp_error err;
    fl_read_opts o;
    fl_read_opts_init(&o);
    o.max_file_lines = 1u << 16;
    if (fl_read_session(dir, &o, &cb, &res, &err) == GP_OK) {
        fl_report_finish(r, &res);
        fl_buf out = {0};
        fl_report_text(r, 5, &out);
        fl_report_json(r, 5, &out);
        *sum += out.len + fl_report_out_of_memory(r) + fl_report_mem_bytes(r);
        fl_buf_free(&out);
    } else {
        *sum += strlen(err.message);
    }
    fl_report_destroy(r);
}

static void export(const char *dir, fl_export_format fmt, uint64_t *sum)
{
    static FILE *null;
    if (!null)
        null = fopen("/dev/null", "w");
    if (!null)
        return;
    fl_export *e = fl_export_create(fmt, null);
    if (!e)
        return;
    fl_export_set_max_distinct(e, 4096);
    fl_read_cb cb;
    fl_export_callbacks(e, &cb);
    fl_read_result res;
    gp_error err;
    if (fl_read_session(dir, NULL, &cb, &res, &err) == GP_OK)
        *sum += (uint64_t)fl_export_finish(e, &res);
    fl_export_destroy(e);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    const char *dir = fuzz_dir("report");
    if (!dir)
        return 0;
    fuzz_clear(dir);
    const uint8_t *p = data, *end = data + size;
    for (size_t c = 0; c < 3 && p <= end; c++) {
        const uint8_t *ff = c < 2 ? memchr(p, '\f', (size_t)(end - p)) : NULL;
        size_t len = ff ? (size_t)(ff - p) : (size_t)(end - p);
        fuzz_put(dir, channels[c], p, len);
        if (!ff)
            break;
        p = ff + 1;
    }
    uint64_t sum = 0;
    report(dir, &sum);
    export(dir, FL_EXPORT_CHROME_TRACE, &sum);
    export(dir, FL_EXPORT_CSV_KERNELS, &sum);
    return sum == UINT64_MAX;
}
