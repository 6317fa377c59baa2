/*
 * report/html.h - the report as one self-contained HTML page: the JSON
 * report (fl_report_json, so the page's figures are the JSON's by
 * construction), the text report (its verdict lines), and a bounded
 * summary of the session's events for the timeline and the device charts,
 * all inline beside the page's own script and style (src/report/html/,
 * embedded at build time).  The page fetches nothing.
 *
 * Promises: the timeline keeps at most FL_HTML_TRACKS tracks of
 * FL_HTML_BUCKETS time buckets each (per bucket the longest event, the
 * number of events and their summed time), the device charts at most
 * FL_HTML_POINTS points per device (means per time bucket), whatever the
 * number of events: a session of millions of kernels gives a page of a few
 * MB.  Every string is escaped for the place it goes: no byte of the
 * session can end a <script> element.  Not exported; nothing here prints.
 */
#ifndef FL_REPORT_HTML_H
#define FL_REPORT_HTML_H

#include "../reader/read.h"
#include "../util/buf.h"

#include <stdbool.h>

#define FL_HTML_BUCKETS 1024
#define FL_HTML_TRACKS 64
/* The processes of a run told apart on the timeline (the last one holds
 * the rest). */
#define FL_HTML_PROCS 255
#define FL_HTML_POINTS 400
#define FL_HTML_DEVICES 16

typedef struct fl_html fl_html;

fl_html *fl_html_create(void);    /* NULL: out of memory */
void fl_html_destroy(fl_html *h); /* NULL-safe */
/* *out: callbacks that give every record, detail and batch to inner (the
 * report's callbacks) and to h's timeline; h and inner must outlive the
 * read.  The read stops as inner's stop says, or when h ran out of
 * memory. */
void fl_html_tee(fl_html *h, const fl_read_cb *inner, fl_read_cb *out);
/* After the read: what was held back is placed. */
void fl_html_finish(fl_html *h);
/* The page, appended to out: report_json (fl_report_json's text) and
 * report_text (fl_report_text's) inline beside h's timeline.  out->oom
 * says whether memory ran out. */
void fl_html_page(const fl_html *h, const char *report_json, size_t json_len,
                  const char *report_text, size_t text_len, fl_buf *out);
/* The timeline's JSON alone (for the tests: what the page's script
 * gets), appended to out. */
void fl_html_timeline_json(const fl_html *h, fl_buf *out);

/* s as a JSON string of at most max_bytes (< 250) of s, cut on a UTF-8
 * boundary with an ellipsis (html_timeline.c). */
void fl_html_put_str(fl_buf *out, const char *s, size_t max_bytes);

#endif /* FL_REPORT_HTML_H */
