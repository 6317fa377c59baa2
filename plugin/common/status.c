/*
 * status.c - fl_fail (status.h): the plugin's gp_error setter.
 */
#include "status.h"

#include <stdarg.h>
#include <stdio.h>

gp_status fl_fail(gp_error *err, gp_status status, const char *fmt, ...)
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
