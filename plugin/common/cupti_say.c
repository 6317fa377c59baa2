/*
 * cupti_say.c - GPUFL_CUPTI_TRACE's lines (cupti_say.h).
 *
 * Promises: called only from the traced tables an engine installs when
 * the user set GPUFL_CUPTI_TRACE; each call is CUPTI's own, its result
 * given back unchanged.
 */
#include "cupti_say.h"

#include <stdarg.h>
#include <stdio.h>

void fl_cupti_say(const char *fn, CUptiResult r, const char *fmt, ...)
{
    const char *m = NULL;
    if (cuptiGetResultString(r, &m) != CUPTI_SUCCESS || !m)
        m = "?";
    char extra[256] = "";
    if (fmt) {
        va_list ap;
        va_start(ap, fmt);
        vsnprintf(extra, sizeof extra, fmt, ap);
        va_end(ap);
    }
    fprintf(stderr, "[gpufl cupti] %s -> %d %s%s%s\n", fn, (int)r, m, extra[0] ? ": " : "", extra);
}

CUptiResult fl_say_device_id(CUcontext ctx, uint32_t *dev)
{
    CUptiResult r = cuptiGetDeviceId(ctx, dev);
    fl_cupti_say("cuptiGetDeviceId", r, "ctx %p device %u", (void *)ctx,
                 r == CUPTI_SUCCESS ? *dev : 0u);
    return r;
}

CUptiResult fl_say_prof_init(CUpti_Profiler_Initialize_Params *p)
{
    CUptiResult r = cuptiProfilerInitialize(p);
    fl_cupti_say("cuptiProfilerInitialize", r, NULL);
    return r;
}

CUptiResult fl_say_prof_deinit(CUpti_Profiler_DeInitialize_Params *p)
{
    CUptiResult r = cuptiProfilerDeInitialize(p);
    fl_cupti_say("cuptiProfilerDeInitialize", r, NULL);
    return r;
}

CUptiResult fl_say_chip(CUpti_Device_GetChipName_Params *p)
{
    CUptiResult r = cuptiDeviceGetChipName(p);
    fl_cupti_say("cuptiDeviceGetChipName", r, "device %zu chip %s", p->deviceIndex,
                 p->pChipName ? p->pChipName : "(null)");
    return r;
}
