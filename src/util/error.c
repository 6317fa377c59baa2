/*
 * util/error.c - the one error convention (error.h): both status enums'
 * strings, the error setters and the one mapping between the enums.
 * Messages are truncated, never overflowed; a NULL error is accepted
 * everywhere.
 */
#include "error.h"
#include "gpu_profile.h"
#include "gpufl.h"

#include <stdarg.h>
#include <stdio.h>
#include <string.h>

/* Each status's stable name (records, JSON) and its prose, in one row. */
static const struct {
    const char *id, *prose;
} statuses[] = {
    [GP_OK] = {"ok", "success"},
    [GP_ERR_INVALID_ARG] = {"invalid_arg", "invalid argument"},
    [GP_ERR_NO_MEMORY] = {"no_memory", "out of memory"},
    [GP_ERR_BACKEND_UNAVAILABLE] = {"backend_unavailable", "backend unavailable"},
    [GP_ERR_BACKEND] = {"backend", "backend error"},
    [GP_ERR_DEVICE_NOT_FOUND] = {"device_not_found", "device not found"},
    [GP_ERR_DEVICE_LOST] = {"device_lost", "device lost"},
    [GP_ERR_TIMEOUT] = {"timeout", "timed out"},
    [GP_ERR_STATE] = {"state", "call out of order"},
    [GP_ERR_THREAD] = {"thread", "thread error"},
    [GP_ERR_IO] = {"io", "I/O error"},
    [GP_ERR_NOT_SUPPORTED] = {"not_supported", "not supported"},
    [GP_ERR_PARSE] = {"parse", "malformed backend output"},
    [GP_ERR_CUPTI] = {"cupti", "CUPTI error"},
};

static unsigned known(gp_status status)
{
    unsigned i = (unsigned)status;
    return i < sizeof statuses / sizeof statuses[0] && statuses[i].id ? i : ~0u;
}

const char *gp_strerror(gp_status status)
{
    unsigned i = known(status);
    return i != ~0u ? statuses[i].prose : "unknown status";
}

const char *gp_status_id(gp_status status)
{
    unsigned i = known(status);
    return i != ~0u ? statuses[i].id : "unknown";
}

void gp_error_prefix(gp_error *err, const char *fmt, ...)
{
    if (!err)
        return;
    char prefix[GP_ERROR_MESSAGE_MAX];
    char old[GP_ERROR_MESSAGE_MAX];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(prefix, sizeof prefix, fmt, ap);
    va_end(ap);
    memcpy(old, err->message, sizeof old);
    old[sizeof old - 1] = '\0';
    snprintf(err->message, sizeof err->message, "%s: %s", prefix, old);
}

void gp_error_clear(gp_error *err)
{
    if (err) {
        err->status = GP_OK;
        err->message[0] = '\0';
    }
}

const char *gpufl_strerror(gpufl_status status)
{
    static const char *const prose[] = {
        [GPUFL_OK] = "success",
        [GPUFL_DISABLED] = "disabled by the kill switch (enabled = false or GPUFL_DISABLED)",
        [GPUFL_ERR_INVALID_ARG] = "invalid option",
        [GPUFL_ERR_ENV] = "invalid environment variable",
        [GPUFL_ERR_CONFIG] = "invalid config file",
        [GPUFL_ERR_STATE] = "not in the right state (a session already active, or none recorded)",
        [GPUFL_ERR_IO] = "cannot read or write the session logs",
        [GPUFL_ERR_NO_MEMORY] = "out of memory",
        [GPUFL_ERR_THREAD] = "cannot start a thread",
        [GPUFL_ERR_BACKEND] = "no NVIDIA backend",
        [GPUFL_ERR_NOT_SUPPORTED] = "not supported by this build",
        [GPUFL_ERR_UPLOAD] = "the upload failed (the backend refused it or could not be reached)",
    };
    unsigned i = (unsigned)status;
    return i < sizeof prose / sizeof prose[0] && prose[i] ? prose[i] : "unknown status";
}

void fl_error_clear(gpufl_error *err)
{
    if (err) {
        err->status = GPUFL_OK;
        err->message[0] = '\0';
    }
}

gpufl_status fl_error_set(gpufl_error *err, gpufl_status status, const char *fmt, ...)
{
    if (err) {
        err->status = status;
        va_list ap;
        va_start(ap, fmt);
        vsnprintf(err->message, sizeof err->message, fmt, ap);
        va_end(ap);
    }
    return status;
}

gpufl_status fl_status_from_gp(gp_status st)
{
    switch (st) {
    case GP_OK:
        return GPUFL_OK;
    case GP_ERR_INVALID_ARG:
        return GPUFL_ERR_INVALID_ARG;
    case GP_ERR_NO_MEMORY:
        return GPUFL_ERR_NO_MEMORY;
    case GP_ERR_THREAD:
        return GPUFL_ERR_THREAD;
    case GP_ERR_IO:
        return GPUFL_ERR_IO;
    case GP_ERR_STATE:
        return GPUFL_ERR_STATE;
    case GP_ERR_NOT_SUPPORTED:
        return GPUFL_ERR_NOT_SUPPORTED;
    case GP_ERR_BACKEND_UNAVAILABLE:
    case GP_ERR_BACKEND:
    case GP_ERR_DEVICE_NOT_FOUND:
    case GP_ERR_DEVICE_LOST:
    case GP_ERR_TIMEOUT:
    case GP_ERR_PARSE:
    case GP_ERR_CUPTI:
        return GPUFL_ERR_BACKEND;
    }
    return GPUFL_ERR_BACKEND;
}

gpufl_status fl_error_from_gp(gpufl_error *err, const gp_error *ge, const char *prefix)
{
    gpufl_status st = fl_status_from_gp(ge ? ge->status : GP_ERR_BACKEND);
    const char *msg = ge ? ge->message : "";
    if (prefix && *prefix)
        return fl_error_set(err, st, "%s: %s", prefix, msg);
    return fl_error_set(err, st, "%s", msg);
}
