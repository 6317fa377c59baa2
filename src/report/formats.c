/*
 * report/formats.c - the report's formats, one row each of report.h's
 * FL_REPORT_FORMATS: how a read session's report is rendered as text,
 * JSON or a self-contained HTML page (html.h).
 *
 * Promises: the command (`report --format`) and the gpufl API
 * (gpufl_report_options.format) render through these rows, so a format
 * added here is parsed, listed and rendered by both.
 */
#include "report.h"
#include "html.h"
#include "gpufl.h"

#include <string.h>

static void render_text(const fl_report *r, const fl_html *h, int top_n, unsigned sections,
                        fl_buf *out)
{
    (void)h;
    fl_report_text_sections(r, top_n, sections, out);
}

static void render_json(const fl_report *r, const fl_html *h, int top_n, unsigned sections,
                        fl_buf *out)
{
    (void)h;
    (void)sections;
    fl_report_json(r, top_n, out);
}

/* The page holds the whole report: the sections mask is for text only. */
static void render_html(const fl_report *r, const fl_html *h, int top_n, unsigned sections,
                        fl_buf *out)
{
    (void)sections;
    fl_buf json = {0}, text = {0};
    fl_report_json(r, top_n, &json);
    fl_report_text(r, top_n, &text);
    if (json.oom || text.oom || !h)
        out->oom = true;
    else
        fl_html_page(h, json.p, json.len, text.p, text.len, out);
    fl_buf_free(&json);
    fl_buf_free(&text);
}

#define FL_REPORT_FMT_ROW_(id, nm, tl, fn) [id] = {.name = nm, .timeline = tl, .render = fn},
const fl_report_format fl_report_formats[FL_REPORT_FMT_N] = {
    FL_REPORT_FORMATS(FL_REPORT_FMT_ROW_, FL_REPORT_FMT_ROW_)};

/* The public enum numbers the same rows. */
_Static_assert((int)GPUFL_REPORT_TEXT == (int)FL_REPORT_FMT_TEXT &&
                   (int)GPUFL_REPORT_JSON == (int)FL_REPORT_FMT_JSON &&
                   (int)GPUFL_REPORT_HTML == (int)FL_REPORT_FMT_HTML,
               "gpufl_report_format and FL_REPORT_FORMATS number the formats alike");

int fl_report_format_of(const char *name)
{
    for (int i = 0; name && i < FL_REPORT_FMT_N; i++)
        if (strcmp(fl_report_formats[i].name, name) == 0)
            return i;
    return -1;
}
