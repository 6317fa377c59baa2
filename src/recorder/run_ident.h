/*
 * recorder/run_ident.h - which run a session belongs to and its place in
 * it (run_ident.c): the run_id (GPUFL_RUN_ID, which gpu-profile sets for
 * every process it profiles, else a fresh UUID v4), the rank, local rank
 * and world size the launcher put in the environment, and the
 * CLOCK_MONOTONIC reading beside job_start's wall clock.  Read once, at
 * init; never fails: a bad value is left out (null) with a warning.
 */
#ifndef GP_RECORDER_RUN_IDENT_H
#define GP_RECORDER_RUN_IDENT_H

#include "../wire/records.h"

#include <stddef.h>

/* GPUFL_RUN_ID's longest value (bytes). */
#define FL_RUN_ID_MAX 64

/* Fills ri (run_id into buf, at least FL_RUN_ID_MAX + 1 bytes) from
 * getenv; a variable that is set but unusable adds a sentence to warn
 * (cap bytes; "" when none). */
void fl_run_ident_read(fl_run_ident *ri, char *buf, char *warn, size_t cap);
/* fl_run_id_ok and fl_run_id_new: launcher.h (the command makes the id). */

#endif /* GP_RECORDER_RUN_IDENT_H */
