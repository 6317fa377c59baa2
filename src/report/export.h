/*
 * report/export.h - a GPUFlight session, streamed through reader/read.h's
 * callbacks, written out in another tool's format as the records come
 * (report/export.c), one exporter per row of FL_EXPORTERS:
 *
 *  - FL_EXPORT_CHROME_TRACE (export_chrome.c): the Trace Event Format JSON
 *    that Perfetto (ui.perfetto.dev) and speedscope (www.speedscope.app)
 *    load;
 *  - FL_EXPORT_CSV_KERNELS (export_csv.c): one CSV row per kernel launch;
 *  - FL_EXPORT_SQLITE (export_sqlite.c): a SQLite database, one table per
 *    kind of event, names in a strings table (docs/report.md, "SQLite").
 *
 * Memory is bounded by the session's distinct streams, devices, kernels
 * and open scopes, never by the number of events.  Not exported; nothing
 * here prints.
 */
#ifndef FL_EXPORT_H
#define FL_EXPORT_H

#include "../reader/read.h"

#include <stdbool.h>
#include <stdint.h>

#include <stdio.h>

typedef struct fl_export fl_export;

typedef struct fl_export_hooks fl_export_hooks; /* export_int.h */

/* The exporters, one row each, in the order `export --format` lists them:
 * X(id, name, hooks, help, absolute_time) - id the fl_export_format
 * constant, name --format's word, hooks its fl_export_hooks, help what it
 * writes (a phrase for export's page), absolute_time whether it takes
 * fl_export_set_absolute_time.  The first row goes through FIRST, so that
 * the names join without a separator in front (FL_EXPORT_NAMES_*).
 * Promises: a row added here is created, named, listed, completed and
 * parsed by `gpu-profile export`; nothing else names a format. */
#define FL_EXPORTERS(FIRST, X)                                                                     \
    FIRST(FL_EXPORT_CHROME_TRACE, "chrome-trace", fl_export_chrome,                                \
          "Trace Event Format JSON for ui.perfetto.dev or speedscope\n"                            \
          "(kernels and copies per GPU and stream, scopes, metric counters)",                      \
          true)                                                                                    \
    X(FL_EXPORT_CSV_KERNELS, "csv", fl_export_csv, "one line per kernel", false)                   \
    X(FL_EXPORT_SQLITE, "sqlite", fl_export_sqlite,                                                \
      "a SQLite database (needs -o FILE): kernels, copies, syncs, scopes,\n"                       \
      "samples and metrics in tables, names in strings",                                           \
      false)

#define FL_EXPORT_ID_(id, name, hooks, help, abs) id,
typedef enum { FL_EXPORTERS(FL_EXPORT_ID_, FL_EXPORT_ID_) FL_EXPORT_N } fl_export_format;

/* The names as one string literal: "a or b", "a|b", "a b". */
#define FL_EXPORT_FIRST_(id, name, hooks, help, abs) name
#define FL_EXPORT_OR_(id, name, hooks, help, abs) " or " name
#define FL_EXPORT_BAR_(id, name, hooks, help, abs) "|" name
#define FL_EXPORT_SP_(id, name, hooks, help, abs) " " name
#define FL_EXPORT_NAMES_OR FL_EXPORTERS(FL_EXPORT_FIRST_, FL_EXPORT_OR_)
#define FL_EXPORT_NAMES_BAR FL_EXPORTERS(FL_EXPORT_FIRST_, FL_EXPORT_BAR_)
#define FL_EXPORT_NAMES_SP FL_EXPORTERS(FL_EXPORT_FIRST_, FL_EXPORT_SP_)

/* A row as the program sees it: fl_exporters[fmt]. */
typedef struct fl_exporter {
    const char *name; /* --format's word */
    const char *help; /* what it writes */
    bool absolute_time;
    const fl_export_hooks *hooks;
} fl_exporter;
extern const fl_exporter fl_exporters[FL_EXPORT_N];

/* The format named name (--format's word); -1 when no row has it. */
int fl_export_format_of(const char *name);

/* Writes to out (not closed by the export) as records stream in; NULL
 * when out of memory or fmt is no row. */
fl_export *fl_export_create(fl_export_format fmt, FILE *out);
/* Fills cb (user, record, batch, warning, stop) for fl_read_session(): the
 * read stops (GP_ERR_NO_MEMORY, naming the file, line and why) when the
 * export runs out of memory or past its cap of distinct keys. */
void fl_export_callbacks(fl_export *e, fl_read_cb *cb);
/* The cap on distinct keys (report/maps.h); 0: none.  Default: the
 * environment's GPU_PROFILE_MAX_DISTINCT, else 2^20. */
void fl_export_set_max_distinct(fl_export *e, uint64_t max);
/* The cap on the bytes the export keeps (report/maps.h); 0: none.
 * Default: the environment's GPU_PROFILE_MAX_MEMORY, else
 * FL_MAX_MEMORY_DEFAULT. */
void fl_export_set_max_memory(fl_export *e, uint64_t bytes);
/* Whether the format writes a file by its path (SQLite: -o FILE, never a
 * stream): fl_export_set_file before the read. */
bool fl_export_writes_file(fl_export_format fmt);
/* Such a format's file: created at path (an empty or absent file; the
 * caller renames it into place), before the read.  0, or -1 with
 * fl_export_error saying why. */
int fl_export_set_file(fl_export *e, const char *path);
/* Why the export failed (the file format's own error); NULL if it did
 * not say. */
const char *fl_export_error(const fl_export *e);
/* Chrome trace: ts from the Unix epoch (CLOCK_REALTIME, as the session
 * records it) instead of from the session's start, so that traces of
 * other tools line up; before the read only. */
void fl_export_set_absolute_time(fl_export *e, bool absolute);
/* One process of a run (docs/report.md, "Export of a run"): the export
 * of several sessions into one output, each read in turn with the same
 * callbacks.  Before each session's read: index its place in the run (0
 * for the first; the Chrome trace's pid block, 1000 * (index + 1) + the
 * track), pid and rank as its job_start says (have_*: recorded), host and
 * kind (NULL: none), and origin_ns the run's earliest start (the Chrome
 * trace's origin for every process, unless absolute time).  From the
 * second on, the previous session's held-back events are written and the
 * session model starts afresh (kernel ids never mix across processes).
 * 0, or -1 when the format takes no run (fl_export_takes_run) or memory
 * ran out. */
typedef struct fl_export_process {
    unsigned index;
    int64_t pid, rank;
    bool have_pid, have_rank;
    const char *host, *kind;
    uint64_t origin_ns;
} fl_export_process;
int fl_export_begin_process(fl_export *e, const fl_export_process *p);
/* Whether the format writes every process of a run (else one session). */
bool fl_export_takes_run(fl_export_format fmt);
/* After the read (res may be NULL): writes what was held back (kernel
 * rows awaiting their details, scopes still open) and closes the JSON,
 * then flushes out.  0, or -1 when a write failed (or memory ran out, so
 * the output is incomplete). */
int fl_export_finish(fl_export *e, const fl_read_result *res);
void fl_export_destroy(fl_export *e); /* NULL-safe */

#endif /* FL_EXPORT_H */
