/*
 * report/export.h - a GPUFlight session, streamed through reader/read.h's
 * callbacks, written out in another tool's format as the records come
 * (report/export.c):
 *
 *  - FL_EXPORT_CHROME_TRACE: the Trace Event Format JSON that Perfetto
 *    (ui.perfetto.dev) and speedscope (www.speedscope.app) load;
 *  - FL_EXPORT_CSV_KERNELS: one CSV row per kernel launch.
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

typedef enum { FL_EXPORT_CHROME_TRACE, FL_EXPORT_CSV_KERNELS } fl_export_format;

/* Writes to out (not closed by the export) as records stream in; NULL
 * when out of memory. */
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
/* Chrome trace: ts from the Unix epoch (CLOCK_REALTIME, as the session
 * records it) instead of from the session's start, so that traces of
 * other tools line up; before the read only. */
void fl_export_set_absolute_time(fl_export *e, bool absolute);
/* After the read (res may be NULL): writes what was held back (kernel
 * rows awaiting their details, scopes still open) and closes the JSON,
 * then flushes out.  0, or -1 when a write failed (or memory ran out, so
 * the output is incomplete). */
int fl_export_finish(fl_export *e, const fl_read_result *res);
void fl_export_destroy(fl_export *e); /* NULL-safe */

#endif /* FL_EXPORT_H */
