/*
 * error.c - status strings, error messages and the version functions.
 * Messages are truncated, never overflowed; a NULL gp_error is accepted
 * everywhere.
 */
#include "gp_internal.h"

#include <stdio.h>
#include <string.h>

const char *gp_version(void)
{
    return GP_VERSION_STRING;
}

int gp_version_number(void)
{
    return GP_VERSION_NUMBER;
}

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

gp_status gp_error_set(gp_error *err, gp_status status, const char *fmt, ...)
{
    if (err) {
        va_list ap;
        va_start(ap, fmt);
        err->status = status;
        vsnprintf(err->message, sizeof err->message, fmt, ap);
        va_end(ap);
    }
    return status;
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
