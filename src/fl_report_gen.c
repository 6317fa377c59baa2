/*
 * fl_report_gen.c - gpufl_generate_report(): the session this process
 * recorded, read back from its logs (fl_read.c) and reported (fl_report.c)
 * exactly as `gpu-profile report` does.  Errors are returned, never
 * printed; the report itself goes where the caller asked.
 */
#include "fl_internal.h"
#include "fl_read.h"
#include "fl_report.h"

#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <string.h>

gpufl_status gpufl_generate_report(const char *output_path, gpufl_error *err)
{
    if (err) {
        err->status = GPUFL_OK;
        err->message[0] = '\0';
    }
    char dir[PATH_MAX];
    bool live = false;
    if (!fl_session_report_dir(dir, sizeof dir, &live))
        return fl_error_set(err, GPUFL_ERR_STATE,
                            "no session was recorded in this process: call gpufl_init() first");
    fl_report *r = fl_report_create();
    if (!r)
        return fl_error_set(err, GPUFL_ERR_NO_MEMORY, "out of memory for the report");
    fl_report_set_live(r, live);
    fl_read_cb cb;
    fl_report_callbacks(r, &cb);
    fl_read_opts o;
    fl_read_opts_init(&o);
    fl_read_result res;
    char why[1024];
    if (fl_read_session(dir, &o, &cb, &res, why, sizeof why) != 0) {
        fl_report_destroy(r);
        return fl_error_set(err, GPUFL_ERR_IO, "cannot read the session: %s", why);
    }
    fl_report_finish(r, &res);
    fl_buf text = {0};
    fl_report_text(r, 10, &text);
    fl_report_destroy(r);
    if (text.oom) {
        fl_buf_free(&text);
        return fl_error_set(err, GPUFL_ERR_NO_MEMORY, "out of memory for the report");
    }
    bool to_file = output_path && *output_path;
    FILE *f = to_file ? fopen(output_path, "w") : stdout;
    if (!f) {
        int e = errno;
        fl_buf_free(&text);
        return fl_error_set(err, GPUFL_ERR_IO, "cannot create \"%s\": %s: choose a writable path",
                            output_path, strerror(e));
    }
    bool ok = fwrite(text.p ? text.p : "", 1, text.len, f) == text.len && fflush(f) == 0;
    int e = errno;
    if (to_file && fclose(f) != 0)
        ok = false;
    fl_buf_free(&text);
    if (!ok)
        return fl_error_set(err, GPUFL_ERR_IO, "cannot write \"%s\": %s",
                            to_file ? output_path : "standard output", strerror(e));
    return GPUFL_OK;
}
