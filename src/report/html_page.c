/*
 * report/html_page.c - the HTML report's page (html.h): the embedded style
 * and script (src/report/html/, C arrays from cmake/embed.cmake), and the
 * data as <script type="application/json"> blobs the script reads.
 *
 * Promises: the page is one file that fetches nothing; a blob can never
 * end its <script> element or start markup, because every '<', '>' and '&'
 * in it (inside JSON they occur only in strings) is written \u003c,
 * \u003e, \u0026, and U+2028 / U+2029 as \u2028 / \u2029.
 */
#include "html.h"
#include "../util/buf.h"

#include <string.h>

extern const char fl_html_report_css[]; /* generated: cmake/embed.cmake */
extern const char fl_html_report_js[];

/* JSON text s (valid JSON) written so that HTML's script parser cannot
 * see markup in it. */
static void put_script_json(fl_buf *out, const char *s, size_t n)
{
    size_t run = 0;
    for (size_t i = 0; i < n; i++) {
        unsigned char c = (unsigned char)s[i];
        const char *esc = NULL;
        if (c == '<')
            esc = "\\u003c";
        else if (c == '>')
            esc = "\\u003e";
        else if (c == '&')
            esc = "\\u0026";
        else if (c == 0xe2 && i + 2 < n && (unsigned char)s[i + 1] == 0x80 &&
                 ((unsigned char)s[i + 2] == 0xa8 || (unsigned char)s[i + 2] == 0xa9))
            esc = (unsigned char)s[i + 2] == 0xa8 ? "\\u2028" : "\\u2029";
        if (!esc)
            continue;
        fl_buf_put(out, s + run, i - run);
        fl_buf_puts(out, esc);
        if (c == 0xe2)
            i += 2;
        run = i + 1;
    }
    fl_buf_put(out, s + run, n - run);
}

void fl_html_page(const fl_html *h, const char *report_json, size_t json_len,
                  const char *report_text, size_t text_len, fl_buf *out)
{
    FL_BUF_LIT(out, "<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\">\n"
                    "<meta name=\"generator\" content=\"gpu-profile\">\n"
                    "<title>gpu-profile report</title>\n<style>\n");
    fl_buf_puts(out, fl_html_report_css);
    FL_BUF_LIT(out, "</style></head>\n<body>\n<div id=\"gp-errors\"></div>\n"
                    "<main id=\"gp-app\"><p id=\"gp-noscript\">This report draws itself with "
                    "JavaScript: enable scripts to see it.</p></main>\n"
                    "<script type=\"application/json\" id=\"gp-report\">");
    put_script_json(out, report_json, json_len);
    FL_BUF_LIT(out, "</script>\n<script type=\"application/json\" id=\"gp-text\">");
    /* The text report as one JSON string. */
    fl_buf t = {0};
    fl_buf_put(&t, report_text, text_len); /* NUL-ended for fl_buf_str */
    fl_buf_put(&t, "", 1);
    fl_buf js = {0};
    if (!t.oom)
        fl_buf_str(&js, t.p);
    put_script_json(out, js.p ? js.p : "\"\"", js.p ? js.len : 2);
    out->oom |= t.oom || js.oom;
    fl_buf_free(&t);
    fl_buf_reset(&js);
    FL_BUF_LIT(out, "</script>\n<script type=\"application/json\" id=\"gp-timeline\">");
    fl_html_timeline_json(h, &js);
    put_script_json(out, js.p ? js.p : "null", js.p ? js.len : 4);
    out->oom |= js.oom;
    fl_buf_free(&js);
    FL_BUF_LIT(out, "</script>\n<script>\n");
    fl_buf_puts(out, fl_html_report_js);
    FL_BUF_LIT(out, "</script>\n</body></html>\n");
}
