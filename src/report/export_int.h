/*
 * report/export_int.h - what an exporter (a row of export.h's
 * FL_EXPORTERS) sees of an export: the export's state, the line it
 * writes into, and the hooks it fills.
 *
 * Promises: report/export.c keeps the session model, the caps, the header
 * and the output; an exporter's hooks only add lines (fl_ex_put_line), so
 * a new format is one file with one fl_export_hooks and one row.  Not
 * exported; nothing here prints.
 */
#ifndef FL_EXPORT_INT_H
#define FL_EXPORT_INT_H

#include "../reader/read.h"
#include "../util/buf.h"
#include "export.h"
#include "maps.h"
#include "model.h"

#include <jansson.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>

#define FL_EX_DTEXT_BYTES 112

/* A kernel name's JSON or CSV text, cached by kernel id
 * (fl_ex_kernel_text): the model interns names, so the same pointer is
 * the same text. */
typedef struct fl_ex_qname {
    const char *src;
    size_t off, len; /* in fl_export.qtext */
    /* The grid and block dtext was written from (fl_ex_dims_text): compared
     * by value, since the model recycles a detail's memory. */
    uint32_t dims[6];
    bool have_dims, have_grid, have_block;
    size_t dlen;
    char dtext[FL_EX_DTEXT_BYTES];
} fl_ex_qname;

/* Lines are handed to the output in pieces of about this size. */
#define FL_EX_FLUSH_BYTES (64 * 1024)

struct fl_export {
    const fl_exporter *x; /* the row of the format */
    FILE *out;
    fl_model *m;
    fl_buf line;
    bool started, finished, write_error, oom;
    char stop_why[400]; /* cb_stop's answer */
    uint64_t events;
    /* The Chrome trace's (export_chrome.c): */
    bool first_event;
    uint64_t origin;
    bool have_origin;
    bool absolute;      /* ts from the Unix epoch, not from the session's origin */
    fl_u64map tracks;   /* pid << 33 | tid, pid << 33 | 2^32 for the process */
    fl_u64map open;     /* scope_instance_id -> a: start ns, b: name_id */
    fl_u64map open_tid; /* scope_instance_id -> a: its begin's tid */
    /* A format that writes a file by its path (hooks->open): its state,
     * and why it failed (stops the read; fl_export_error). */
    void *priv;
    char fail[512];
    fl_buf aside;     /* the event's per_event members, written at its end */
    uint64_t clip_ns; /* the event's time before the origin (put_ts) */
    uint64_t clipped; /* events so clipped */
    fl_buf qtext;     /* quoted kernel names back to back */
    fl_ex_qname *qnames;
    size_t nqnames;
    /* Interned strings' quoted text (fl_ex_interned_text), direct-mapped
     * by pointer; text in stext, emptied with the slots past a bound. */
    struct {
        const char *src;
        size_t off, len;
    } scache[64];
    fl_buf stext;
    uint64_t known_tracks[8]; /* the first tracks labelled (export_chrome.c) */
    unsigned n_known_tracks;
    /* A run's export (fl_export_begin_process): the process now read. */
    bool run;
    fl_export_process proc;
    char proc_host[256], proc_kind[64];
    int64_t pid_base; /* added to every Chrome trace pid: 0 for one session */
};

/* An exporter's hooks; NULL: nothing for it.  Each is called after the
 * model has taken what it reads, never after finish. */
struct fl_export_hooks {
    const char *header; /* written before the first line */
    /* A kernel row joined to its details (the model holds rows back until
     * their kernel_detail came); the header is written. */
    void (*kernel)(fl_export *e, const fl_krow *k);
    /* A batch of a known type (b->type set); the header is written. */
    void (*batch)(fl_export *e, const fl_batch *b);
    /* A record that is not a batch; the header is written only when the
     * hook writes (fl_ex_start). */
    void (*record)(fl_export *e, fl_type t, const json_t *rec);
    /* After the read and the model's finish, before the flush (res may be
     * NULL): what was held back, the closing lines. */
    void (*finish)(fl_export *e, const fl_read_result *res);
    /* A run's export (fl_export_begin_process): a session's held-back
     * events before the next session's model; also called before finish
     * for every export.  NULL: the format takes no run. */
    void (*session_end)(fl_export *e);
    /* The header of a run's export, when it differs (CSV's two more
     * columns); NULL: header. */
    const char *run_header;
    /* A format that writes a file by its path rather than the stream
     * (SQLite): open creates it in path (fl_export_set_file; 0, or -1 with
     * e->fail set), destroy frees e->priv.  NULL for a stream format. */
    int (*open)(fl_export *e, const char *path);
    void (*destroy)(fl_export *e);
};

/* The header, once, before any line. */
void fl_ex_start(fl_export *e);
/* e->line to the output (or the out-of-memory / write error noted), then
 * emptied. */
void fl_ex_put_line(fl_export *e);
/* The JSON or CSV text of a kernel's name (quote(b, name) appends it),
 * quoted once per export and kept by kernel id; NULL when the kernel has
 * no name or its text is not kept (then quote it in place). */
const char *fl_ex_kernel_text(fl_export *e, uint32_t kernel_id,
                              void (*quote)(fl_buf *, const char *), size_t *len);
/* The text write(buf, d) makes of a detail's grid and block (at most
 * FL_EX_DTEXT_BYTES), kept by kernel id while they stay the same (most
 * launches of a kernel share them); NULL when d is NULL or the text is not
 * kept (then write it in place). */
const char *fl_ex_dims_text(fl_export *e, uint32_t kernel_id, const fl_kdetail *d,
                            char *(*write)(char *, const fl_kdetail *), size_t *len);
/* The text quote(b, s) makes of s, an interned string of the model (a
 * detail's user_scope or limiting resource: the same pointer is the same
 * text for the whole export), kept in a small cache; NULL when s is
 * NULL or the text could not be kept (then quote it in place). */
const char *fl_ex_interned_text(fl_export *e, const char *s, void (*quote)(fl_buf *, const char *),
                                size_t *len);
/* A run's process as the export names it: "rank R (host, pid P)", "pid
 * P" without a rank, "monitor (host, pid P)" for the CLI's Monitor
 * session (fl_export_begin_process). */
void fl_ex_process_label(const fl_export *e, char *who, size_t size);
/* fl_ex_put_line once e->line holds FL_EX_FLUSH_BYTES: an exporter writing
 * an event a line calls this, and fl_ex_put_line in its finish hook, so
 * the output sees a few large writes. */
static inline void fl_ex_put_some(fl_export *e)
{
    if (e->line.len >= FL_EX_FLUSH_BYTES || e->line.oom)
        fl_ex_put_line(e);
}

extern const fl_export_hooks fl_export_chrome; /* export_chrome.c */
extern const fl_export_hooks fl_export_csv;    /* export_csv.c */
extern const fl_export_hooks fl_export_sqlite; /* export_sqlite.c */

#endif /* FL_EXPORT_INT_H */
