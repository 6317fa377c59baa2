/*
 * util/error_set.c - gp_error_set (error.h), the one gp_error setter of the
 * project: the core library, the CUPTI plugin and its stack table link it
 * (the plugin links this file alone, not the rest of error.c).  Promises:
 * err may be NULL; the message is truncated, never overflowed.
 */
#include "error.h"

#include <stdarg.h>
#include <stdio.h>

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
