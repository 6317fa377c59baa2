/*
 * recorder/names.c - the recorder's enum names (backends, engines) and version.
 */
#include "../util/text.h"
#include "gpufl.h"

#include <stdarg.h>
#include <stdio.h>
#include <strings.h>

const char *gpufl_version(void)
{
    return GPUFL_VERSION_STRING;
}

static const char *const backend_names[] = {"Auto", "Nvidia", "Amd", "None"};
static const char *const engine_names[] = {"Monitor",       "Trace", "PcSampling", "SassMetrics",
                                           "RangeProfiler", "Deep",  "PmSampling"};
#define N_OF(a) (sizeof(a) / sizeof((a)[0]))

const char *gpufl_backend_name(gpufl_backend_kind kind)
{
    return (unsigned)kind < N_OF(backend_names) ? backend_names[kind] : NULL;
}

const char *gpufl_engine_name(gpufl_engine engine)
{
    return (unsigned)engine < N_OF(engine_names) ? engine_names[engine] : NULL;
}

/* One parser for both enums: the index of text in names (case as
 * gp_find_name compares), or GPUFL_ERR_INVALID_ARG. */
static gpufl_status parse_name(const char *const *names, size_t n, const char *text, int *out)
{
    int i = gp_find_name(names, n, text);
    if (i < 0)
        return GPUFL_ERR_INVALID_ARG;
    *out = i;
    return GPUFL_OK;
}

gpufl_status gpufl_engine_parse(const char *text, gpufl_engine *out)
{
    int i = 0;
    gpufl_status st = parse_name(engine_names, N_OF(engine_names), text, &i);
    if (st == GPUFL_OK && out)
        *out = (gpufl_engine)i;
    return st;
}

gpufl_status gpufl_backend_parse(const char *text, gpufl_backend_kind *out)
{
    int i = 0;
    gpufl_status st = parse_name(backend_names, N_OF(backend_names), text, &i);
    if (st == GPUFL_OK && out)
        *out = (gpufl_backend_kind)i;
    return st;
}
