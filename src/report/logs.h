/*
 * report/logs.h - the report subsystem as a program that embeds it (the
 * gpu-profile command) includes it: session logs read back (reader/read.h),
 * summed up into the report (report.h) or written out as another tool's
 * format (export.h), and how the report writes its units for a person
 * (units.h).  The library's own files include the one they use.
 */
#ifndef GP_REPORT_LOGS_H
#define GP_REPORT_LOGS_H

#include "../reader/read.h"
#include "export.h"
#include "report.h"
#include "units.h"

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* A PC-sampling row's stall reason as the command's summary names it:
 * NVIDIA's display name of metric_dict's name (stall_names.c's table;
 * a name not in it as given), or, with no name, of the activity API's
 * reason number - written to buf; *not_issued set for a "_not_issued"
 * reason (a subset of its samples, never added to a total). */
/* The kind of a SASS metric's metric_dict name (sass_metrics.h's SM_*:
 * 0 instructions executed, 1 thread-instructions, 2 global loads, 3
 * global stores, 4 global sectors, 5 their ideal, ...); -1: a metric the
 * report does not read. */
int fl_sass_metric_kind(const char *name);

const char *fl_stall_label(const char *metric_name, uint64_t reason, char *buf, size_t len,
                           bool *not_issued);

#endif /* GP_REPORT_LOGS_H */
