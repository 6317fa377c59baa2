/*
 * report/generate.c - the report as the gpufl API gives it:
 * gpufl_generate_report() for the session this process recorded, and
 * gpufl_report_logs() for any session's logs (a log directory, a session
 * directory, a flat prefix, or GPUFlight's log_dir + log_prefix), read
 * back (reader/read.c) and reported (report/report.c) exactly as `gpu-profile
 * report` does.  Both go through one read-and-render function, so they
 * produce the same bytes for the same session; a log directory whose run
 * shown has several processes gets the run section as `gpu-profile
 * report` gives it.  Errors are returned, never printed; the
 * report itself goes where the caller asked.
 */
#include "../reader/read.h"
#include "../recorder/session.h"
#include "../util/buf.h"
#include "../util/error.h"
#include "html.h"
#include "report.h"
#include "runs.h"
#include "gpufl.h"

#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* What to read and how to render it. */
typedef struct render_req {
    const char *path;       /* what fl_read_session accepts */
    const char *log_prefix; /* NULL: path as it is (fl_read_session_prefixed) */
    const char *session_id; /* NULL: the latest */
    int top_n;
    gpufl_report_format format;
    unsigned sections;
} render_req;

/* The runs of a log directory as `gpu-profile report DIR` resolves them
 * (cli/logs.c): true with rs filled, its figures read and *dir the
 * session the other sections report, when the run shown has several
 * processes; false, rs freed, when path is no log directory to group (a
 * flat prefix, a channel file) or the session shown is of no run or alone
 * in it: then the plain read decides as before, so that a directory of
 * unrelated sessions reports the latest as it always has (the command
 * also lists the other runs there). */
static bool resolve_run(const render_req *q, fl_runs *rs, const char **dir)
{
    fl_runs_init(rs);
    if (q->log_prefix)
        return false;
    const char *paths[] = {q->path};
    gp_error ge;
    if (fl_runs_scan(rs, paths, 1, &ge) != GP_OK ||
        fl_runs_pick(rs, NULL, q->session_id, &ge) != GP_OK || rs->shown >= rs->ng ||
        rs->g[rs->shown].n < 2) {
        fl_runs_free(rs);
        return false;
    }
    fl_runs_figures(rs);
    *dir = fl_runs_primary(rs, q->session_id)->dir;
    return true;
}

/* Reads the session q names and renders its report into *out (appended;
 * the caller frees it, also after an error).  live: this process is still
 * recording it, so no shutdown is expected yet. */
static gpufl_status read_and_render(const render_req *q, bool live, fl_buf *out, gpufl_error *err)
{
    gp_error env;
    if (fl_report_env_check(&env) != GP_OK)
        return fl_error_from_gp(err, &env, "cannot read the session");
    fl_report *r = fl_report_create();
    if (!r)
        return fl_error_set(err, GPUFL_ERR_NO_MEMORY, "out of memory for the report");
    fl_runs rs;
    const char *path = q->path;
    bool run = !live && resolve_run(q, &rs, &path);
    if (run)
        fl_report_set_runs(r, &rs, q->session_id);
    const fl_report_format *fmt = &fl_report_formats[q->format];
    fl_html *h = NULL;
    if (fmt->timeline && !(h = fl_html_create())) {
        fl_report_destroy(r);
        if (run)
            fl_runs_free(&rs);
        return fl_error_set(err, GPUFL_ERR_NO_MEMORY, "out of memory for the report");
    }
    fl_read_cb cb, rcb;
    fl_report_callbacks(r, &rcb);
    cb = rcb;
    if (h)
        fl_html_tee(h, &rcb, &cb);
    fl_read_opts o;
    fl_read_opts_init(&o);
    o.session_id = q->session_id;
    fl_read_result res;
    gp_error ge;
    /* A run of several processes: all of them, as gpu-profile report reads it. */
    gp_status rst = run ? fl_runs_read(&rs, q->session_id, &o, &cb, &res, &ge)
                        : fl_read_session_prefixed(path, q->log_prefix, &o, &cb, &res, &ge);
    if (rst != GP_OK) {
        fl_report_destroy(r);
        if (run)
            fl_runs_free(&rs);
        fl_html_destroy(h);
        return fl_error_from_gp(err, &ge, "cannot read the session");
    }
    if (!live && gpufl_is_active()) {
        /* Reading this process's own session by its path: it is live too. */
        char id[sizeof res.session_id];
        gpufl_session_id(id, sizeof id);
        live = id[0] && strcmp(id, res.session_id) == 0;
    }
    fl_report_set_live(r, live);
    fl_report_finish(r, &res);
    fl_html_finish(h);
    fmt->render(r, h, q->top_n, q->sections, out);
    fl_report_destroy(r);
    if (run)
        fl_runs_free(&rs);
    fl_html_destroy(h);
    if (out->oom)
        return fl_error_set(err, GPUFL_ERR_NO_MEMORY, "out of memory for the report");
    return GPUFL_OK;
}

gpufl_status gpufl_generate_report(const char *output_path, gpufl_error *err)
{
    fl_error_clear(err);
    char dir[PATH_MAX];
    bool live = false;
    if (!fl_session_report_dir(dir, sizeof dir, &live))
        return fl_error_set(err, GPUFL_ERR_STATE,
                            "no session was recorded in this process: call gpufl_init() first");
    render_req q = {.path = dir, .top_n = 10, .format = GPUFL_REPORT_TEXT};
    fl_buf text = {0};
    gpufl_status st = read_and_render(&q, live, &text, err);
    if (st != GPUFL_OK) {
        fl_buf_free(&text);
        return st;
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

void gpufl_report_options_init(gpufl_report_options *opts)
{
    if (!opts)
        return;
    memset(opts, 0, sizeof *opts);
    opts->top_n = 10;
    opts->format = GPUFL_REPORT_TEXT;
    opts->sections = GPUFL_SECTION_ALL;
}

gpufl_status gpufl_report_logs(const char *log_dir, const gpufl_report_options *opts, char **out,
                               size_t *out_len, gpufl_error *err)
{
    fl_error_clear(err);
    if (out)
        *out = NULL;
    if (out_len)
        *out_len = 0;
    if (!log_dir || !*log_dir)
        return fl_error_set(err, GPUFL_ERR_INVALID_ARG,
                            "gpufl_report_logs: log_dir is %s: pass the log directory, a session "
                            "directory or a flat-layout prefix",
                            log_dir ? "empty" : "NULL");
    if (!out)
        return fl_error_set(err, GPUFL_ERR_INVALID_ARG,
                            "gpufl_report_logs: out is NULL: pass the address of a char * that "
                            "receives the report");
    gpufl_report_options d;
    gpufl_report_options_init(&d);
    if (!opts)
        opts = &d;
    if ((unsigned)opts->format >= FL_REPORT_FMT_N)
        return fl_error_set(err, GPUFL_ERR_INVALID_ARG,
                            "gpufl_report_logs: format %d: use GPUFL_REPORT_TEXT (0), "
                            "GPUFL_REPORT_JSON (1) or GPUFL_REPORT_HTML (2)",
                            (int)opts->format);
    if (opts->sections & ~(unsigned)GPUFL_SECTION_ALL)
        return fl_error_set(err, GPUFL_ERR_INVALID_ARG,
                            "gpufl_report_logs: sections 0x%x has bits outside GPUFL_SECTION_ALL "
                            "(0x%x): use GPUFL_SECTION_* values, or 0 for all",
                            opts->sections, (unsigned)GPUFL_SECTION_ALL);
    render_req q = {
        .path = log_dir,
        .log_prefix = opts->log_prefix && *opts->log_prefix ? opts->log_prefix : NULL,
        .session_id = opts->session_id && *opts->session_id ? opts->session_id : NULL,
        .top_n = opts->top_n < 1 ? 10 : opts->top_n,
        .format = opts->format,
        .sections = opts->sections,
    };
    /* What this process recorded so far is on disk before it is read. */
    if (gpufl_is_active())
        gpufl_flush();
    fl_buf text = {0};
    gpufl_status st = read_and_render(&q, false, &text, err);
    if (st != GPUFL_OK) {
        fl_buf_free(&text);
        return st;
    }
    size_t len = text.len;
    char *p = fl_buf_take(&text);
    if (!p)
        return fl_error_set(err, GPUFL_ERR_NO_MEMORY, "out of memory for the report");
    *out = p;
    if (out_len)
        *out_len = len;
    return GPUFL_OK;
}

void gpufl_free(void *p)
{
    free(p);
}
