/*
 * fl_error.c - the recorder's status strings, enum names and version.
 * Messages are truncated, never overflowed; a NULL gpufl_error is accepted.
 */
#include "fl_internal.h"

#include <stdarg.h>
#include <stdio.h>
#include <strings.h>

const char *gpufl_version(void)
{
    return GPUFL_VERSION_STRING;
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

static const char *const backend_names[] = {"Auto", "Nvidia", "Amd", "None"};
static const char *const engine_names[] = {"Monitor",     "Trace",         "PcSampling",
                                           "SassMetrics", "RangeProfiler", "Deep"};
#define N_OF(a) (sizeof(a) / sizeof((a)[0]))

const char *gpufl_backend_name(gpufl_backend_kind kind)
{
    return (unsigned)kind < N_OF(backend_names) ? backend_names[kind] : NULL;
}

const char *gpufl_engine_name(gpufl_engine engine)
{
    return (unsigned)engine < N_OF(engine_names) ? engine_names[engine] : NULL;
}

static int find_name(const char *const *names, size_t n, const char *text)
{
    if (!text)
        return -1;
    for (size_t i = 0; i < n; i++)
        if (strcasecmp(names[i], text) == 0)
            return (int)i;
    return -1;
}

gpufl_status gpufl_engine_parse(const char *text, gpufl_engine *out)
{
    int i = find_name(engine_names, N_OF(engine_names), text);
    if (i < 0)
        return GPUFL_ERR_INVALID_ARG;
    if (out)
        *out = (gpufl_engine)i;
    return GPUFL_OK;
}

gpufl_status gpufl_backend_parse(const char *text, gpufl_backend_kind *out)
{
    int i = find_name(backend_names, N_OF(backend_names), text);
    if (i < 0)
        return GPUFL_ERR_INVALID_ARG;
    if (out)
        *out = (gpufl_backend_kind)i;
    return GPUFL_OK;
}

int fl_parse_bool(const char *text)
{
    static const char *const yes[] = {"1", "true", "yes", "on"};
    static const char *const no[] = {"0", "false", "no", "off"};
    if (find_name(yes, N_OF(yes), text) >= 0)
        return 1;
    if (find_name(no, N_OF(no), text) >= 0)
        return 0;
    return -1;
}
