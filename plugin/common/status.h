/*
 * status.h - the plugin's side of the project's one error convention
 * (src/util/error.h): a gp_status returned, a gp_error filled.  The plugin
 * does not link src/util/error.c (the core's), so this is its setter.
 * Promises: err may be NULL; the message is truncated, never overflowed.
 */
#ifndef GP_PLUGIN_COMMON_STATUS_H
#define GP_PLUGIN_COMMON_STATUS_H

#include "gpu_profile.h"

/* Sets err (if non-NULL) to status and a printf-style message; returns status. */
gp_status fl_fail(gp_error *err, gp_status status, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

#endif /* GP_PLUGIN_COMMON_STATUS_H */
