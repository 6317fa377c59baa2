/*
 * report/export_ranges.h - the timed records of a session that the Chrome
 * trace draws as complete events besides kernels, copies, scopes and
 * synchronizations, read into one neutral shape (report/export_ranges.c)
 * that the export writes (report/export.c): where the event goes (a
 * device's stream, or a thread of the host process), its name, category,
 * span and args.
 *
 * Not exported; nothing here prints.
 */
#ifndef FL_REPORT_EXPORT_RANGES_H
#define FL_REPORT_EXPORT_RANGES_H

#include "../reader/read.h"
#include "../util/buf.h"

#include <jansson.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* The host process's threads these events use (export.c names them). */
#define FL_EX_TID_NVTX 2
#define FL_EX_TID_PERF 4 /* perf_metric_event ranges */
#define FL_EX_TID_DEEP 5 /* deep windows */

enum { FL_EX_ARG_U64, FL_EX_ARG_I64, FL_EX_ARG_DBL, FL_EX_ARG_STR };

typedef struct fl_ex_arg {
    const char *key;
    int kind; /* FL_EX_ARG_* */
    uint64_t u;
    int64_t i;
    double d;
    const char *s; /* borrowed from the record, or the span's text */
} fl_ex_arg;

#define FL_EX_MAX_ARGS 12

typedef struct fl_ex_span {
    const char *name, *cat;
    bool on_device;   /* a device's stream; else the host thread host_tid */
    int64_t device;   /* -1: not recorded */
    uint64_t stream;  /* on_device */
    int64_t host_tid; /* FL_EX_TID_* */
    uint64_t start_ns, dur_ns;
    fl_ex_arg args[FL_EX_MAX_ARGS];
    size_t nargs;
    fl_buf text; /* owned text an arg points into (fl_ex_span_free) */
} fl_ex_span;

/* The event of a record of type t: memset_event (on its stream:
 * GPUFlight's start_ns / end_ns or our ts_ns / duration_ns, device and
 * stream numbers or digit strings), graph_launch_event (on its stream),
 * nvtx_marker_event (host thread NVTX), perf_metric_event (host thread
 * "perf ranges", with the metrics it collected), deep_window_event (host
 * thread "deep windows").  false when t is none of them or the record has
 * no time (CUPTI gave none: start_ns 0). */
bool fl_ex_record_span(fl_type t, const json_t *rec, fl_ex_span *s);
void fl_ex_span_free(fl_ex_span *s);

#endif /* FL_REPORT_EXPORT_RANGES_H */
