/*
 * util/error.h - the library's one error convention.
 *
 * Every fallible internal function returns a status, OK = 0, and fills an
 * error struct with a message naming the input and the fix.  Two status
 * enums exist because two public API layers do (gpu_profile.h: gp_status,
 * gpufl.h: gpufl_status, both frozen); inside the library everything below
 * the recorder's API speaks gp_status + gp_error (the sampler, the reader,
 * the plugin contracts), the recorder's API speaks gpufl_status +
 * gpufl_error, and the one crossing between them is fl_status_from_gp()
 * below: the documented mapping, in one place (docs/architecture.md).
 * Messages are truncated, never overflowed; a NULL error is accepted.
 */
#ifndef GP_UTIL_ERROR_H
#define GP_UTIL_ERROR_H

#include "gpu_profile.h"
#include "gpufl.h"

/* Sets err (if non-NULL) to status and a printf-style message; returns status. */
gp_status gp_error_set(gp_error *err, gp_status status, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
/* Prefixes an existing message: "<prefix>: <old message>". */
void gp_error_prefix(gp_error *err, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
void gp_error_clear(gp_error *err);
/* A status's stable name for records and JSON ("ok", "device_lost",
 * "backend", "timeout", ...); gp_strerror() is the prose.  "unknown" for
 * a value this version does not know. */
const char *gp_status_id(gp_status status);

/* The recorder's API side of the same convention. */
void fl_error_clear(gpufl_error *err);
gpufl_status fl_error_set(gpufl_error *err, gpufl_status status, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

/*
 * gp_status -> gpufl_status, for a gp_status that reaches the recorder's
 * API (a sampler, reader or plugin failure):
 *   GP_OK -> GPUFL_OK; GP_ERR_INVALID_ARG -> GPUFL_ERR_INVALID_ARG;
 *   GP_ERR_NO_MEMORY -> GPUFL_ERR_NO_MEMORY; GP_ERR_THREAD -> GPUFL_ERR_THREAD;
 *   GP_ERR_IO -> GPUFL_ERR_IO (a log that cannot be written or read);
 *   GP_ERR_STATE -> GPUFL_ERR_STATE; GP_ERR_NOT_SUPPORTED -> GPUFL_ERR_NOT_SUPPORTED;
 *   every device or backend failure (BACKEND_UNAVAILABLE, BACKEND,
 *   DEVICE_NOT_FOUND, DEVICE_LOST, TIMEOUT, PARSE: malformed backend
 *   output, CUPTI) -> GPUFL_ERR_BACKEND.
 */
gpufl_status fl_status_from_gp(gp_status st);
/* Copies a gp_error into a gpufl_error with the mapped status and the
 * message behind an optional prefix ("cannot start the sampler: ..."). */
gpufl_status fl_error_from_gp(gpufl_error *err, const gp_error *ge, const char *prefix);

#endif /* GP_UTIL_ERROR_H */
