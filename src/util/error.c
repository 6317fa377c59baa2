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

const char *gp_strerror(gp_status status)
{
    switch (status) {
    case GP_OK:
        return "success";
    case GP_ERR_INVALID_ARG:
        return "invalid argument";
    case GP_ERR_NO_MEMORY:
        return "out of memory";
    case GP_ERR_BACKEND_UNAVAILABLE:
        return "backend unavailable";
    case GP_ERR_BACKEND:
        return "backend error";
    case GP_ERR_DEVICE_NOT_FOUND:
        return "device not found";
    case GP_ERR_DEVICE_LOST:
        return "device lost";
    case GP_ERR_TIMEOUT:
        return "timed out";
    case GP_ERR_STATE:
        return "call out of order";
    case GP_ERR_THREAD:
        return "thread error";
    case GP_ERR_IO:
        return "I/O error";
    case GP_ERR_NOT_SUPPORTED:
        return "not supported";
    case GP_ERR_PARSE:
        return "malformed backend output";
    case GP_ERR_CUPTI:
        return "CUPTI error";
    }
    return "unknown status";
}

const char *gp_status_id(gp_status status)
{
    static const char *const ids[] = {
        [GP_OK] = "ok",
        [GP_ERR_INVALID_ARG] = "invalid_arg",
        [GP_ERR_NO_MEMORY] = "no_memory",
        [GP_ERR_BACKEND_UNAVAILABLE] = "backend_unavailable",
        [GP_ERR_BACKEND] = "backend",
        [GP_ERR_DEVICE_NOT_FOUND] = "device_not_found",
        [GP_ERR_DEVICE_LOST] = "device_lost",
        [GP_ERR_TIMEOUT] = "timeout",
        [GP_ERR_STATE] = "state",
        [GP_ERR_THREAD] = "thread",
        [GP_ERR_IO] = "io",
        [GP_ERR_NOT_SUPPORTED] = "not_supported",
        [GP_ERR_PARSE] = "parse",
        [GP_ERR_CUPTI] = "cupti",
    };
    unsigned i = (unsigned)status;
    return i < sizeof ids / sizeof ids[0] && ids[i] ? ids[i] : "unknown";
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
    switch (status) {
    case GPUFL_OK:
        return "success";
    case GPUFL_DISABLED:
        return "disabled by the kill switch (enabled = false or GPUFL_DISABLED)";
    case GPUFL_ERR_INVALID_ARG:
        return "invalid option";
    case GPUFL_ERR_ENV:
        return "invalid environment variable";
    case GPUFL_ERR_CONFIG:
        return "invalid config file";
    case GPUFL_ERR_STATE:
        return "not in the right state (a session already active, or none recorded)";
    case GPUFL_ERR_IO:
        return "cannot read or write the session logs";
    case GPUFL_ERR_NO_MEMORY:
        return "out of memory";
    case GPUFL_ERR_THREAD:
        return "cannot start a thread";
    case GPUFL_ERR_BACKEND:
        return "no NVIDIA backend";
    case GPUFL_ERR_NOT_SUPPORTED:
        return "not supported by this build";
    case GPUFL_ERR_UPLOAD:
        return "the upload failed (the backend refused it or could not be reached)";
    }
    return "unknown status";
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
