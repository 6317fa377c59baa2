/*
 * cupti_say.h - GPUFL_CUPTI_TRACE's words (cupti_say.c): a CUPTI call, its
 * result and the counts it answered, one line on stderr, for the engines'
 * traced tables (each engine's *_trace.c) - debug output the user asked
 * for, like GPUFL_ENABLE_DEBUG_OUTPUT.  Also the traced calls more than one
 * engine makes (the Profiler API's and the device's).
 */
#ifndef GP_PLUGIN_COMMON_CUPTI_SAY_H
#define GP_PLUGIN_COMMON_CUPTI_SAY_H

#include <cupti.h>
#include <cupti_profiler_target.h>
#include <cupti_target.h>
#include <stdint.h>

/* "[gpufl cupti] fn -> <code> <CUPTI's name>[: <fmt's text>]". */
void fl_cupti_say(const char *fn, CUptiResult r, const char *fmt, ...);

/* A wrapper that says only the result. */
#define FL_SAY_PLAIN(name, fn, T)                                                                  \
    static CUptiResult name(T *p)                                                                  \
    {                                                                                              \
        CUptiResult r = fn(p);                                                                     \
        fl_cupti_say(#fn, r, NULL);                                                                \
        return r;                                                                                  \
    }
/* A wrapper that says the result and the fields fmt names. */
#define FL_SAY_FIELDS(name, fn, T, fmt, ...)                                                       \
    static CUptiResult name(T *p)                                                                  \
    {                                                                                              \
        CUptiResult r = fn(p);                                                                     \
        fl_cupti_say(#fn, r, fmt, __VA_ARGS__);                                                    \
        return r;                                                                                  \
    }

/* The traced calls several engines make. */
CUptiResult fl_say_device_id(CUcontext ctx, uint32_t *dev);
CUptiResult fl_say_prof_init(CUpti_Profiler_Initialize_Params *p);
CUptiResult fl_say_prof_deinit(CUpti_Profiler_DeInitialize_Params *p);
CUptiResult fl_say_chip(CUpti_Device_GetChipName_Params *p);

#endif /* GP_PLUGIN_COMMON_CUPTI_SAY_H */
