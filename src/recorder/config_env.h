/*
 * recorder/config_env.h - the GPUFL_* environment as a layer of the
 * options (config_env.c): an empty variable is unset, and one that does not
 * parse fails with its name and what it accepts.
 */
#ifndef GP_RECORDER_CONFIG_ENV_H
#define GP_RECORDER_CONFIG_ENV_H

#include "config_fields.h"
#include "gpufl.h"

#include <stdbool.h>

/* getenv with "empty is unset": NULL then. */
const char *fl_config_getenv(const char *name);

/* The kill switch GPUFL_DISABLED: GPUFL_OK when the recorder may run,
 * GPUFL_DISABLED when it says so, GPUFL_ERR_ENV when it is no boolean. */
gpufl_status fl_config_env_kill_switch(gpufl_error *err);

/* GPUFL_NO_TSC, a switch of the scope clock rather than an option:
 * *no_tsc true for a truth value, false for a false one or unset,
 * GPUFL_ERR_ENV for anything else. */
gpufl_status fl_config_env_no_tsc(bool *no_tsc, gpufl_error *err);

/* Every option's variable that is set, over v (SRC_ENV), except
 * GPUFL_CONFIG_FILE: the file was chosen before any layer applied. */
gpufl_status fl_config_env_layer(fl_fval v[FL_NFIELDS], gpufl_error *err);

#endif /* GP_RECORDER_CONFIG_ENV_H */
