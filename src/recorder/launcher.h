/*
 * recorder/launcher.h - what a launcher (the gpu-profile command) may use
 * of the recorder beyond gpufl.h: a session fed by the launcher's own
 * monitor, and the child's end in its shutdown records (session.c).  The
 * one internal header the command includes for the recorder.
 */
#ifndef GP_RECORDER_LAUNCHER_H
#define GP_RECORDER_LAUNCHER_H

#include "gpu_profile.h"
#include "gpufl.h"

#include <stdbool.h>
#include <stddef.h>

/* For the CLI: a session whose device metrics come from the caller's
 * monitor (created, not started): the session sets its round hook and
 * starts it (system_sample_rate_ms > 0); the caller stops it before
 * gpufl_shutdown() and destroys it after.  One sampler for the summary and
 * the log.  Same statuses as gpufl_init(). */
gpufl_status fl_init_with_monitor(const gpufl_init_options *opts, gp_monitor *mon,
                                  gpufl_error *err);

/* For the CLI (a launcher): append a shutdown with the child's end to every
 * channel at gpufl_shutdown() instead of the plain one.  Call before
 * gpufl_shutdown(); no-op without a session. */
void fl_session_set_child_exit(int exit_code, int signal, bool crashed);

/* The run id every process of a run shares (GPUFL_RUN_ID, job_start's
 * run_id; run_ident.c).  Whether s is a usable one: 1 to 64 bytes of
 * [A-Za-z0-9._:-]. */
int fl_run_id_ok(const char *s);
/* A fresh one: a UUID v4, lower-case, 36 characters, into buf (37 bytes). */
void fl_run_id_new(char *buf);
/* For the CLI: whether range and end are values gpufl_init takes as
 * capture_range / capture_range_end (capture.c's one parser): GP_OK, or
 * GP_ERR_INVALID_ARG with err's message naming the field
 * (capture_range, capture_range_end) and the fix. */
gp_status fl_capture_check(const char *range, const char *end, gp_error *err);

#endif /* GP_RECORDER_LAUNCHER_H */
