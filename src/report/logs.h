/*
 * report/logs.h - the report subsystem as a program that embeds it (the
 * gpu-profile command) includes it: session logs read back (reader/read.h),
 * summed up into the report (report.h), the sessions of a run summed up
 * (run.h), the runs of log directories and their processes (runs.h), or written out as another
 * tool's format (export.h), and how the report writes its units for a person (units.h).  The
 * library's own files include the one they use.
 */
#ifndef GP_REPORT_LOGS_H
#define GP_REPORT_LOGS_H

#include "../reader/read.h"
#include "export.h"
#include "html.h"
#include "report.h"
#include "run.h"
#include "runs.h"
#include "units.h"

#endif /* GP_REPORT_LOGS_H */
