/*
 * kinds.c - the CUPTI activity kinds enabled (kinds.h).
 *
 * Promises: each kind is enabled at most once and recorded, so the
 * injection's early attach and the session's start share one list, and
 * stop disables exactly what was enabled.
 */
#include "kinds.h"

#include "common/cupti_error.h"

#include <stdio.h>

static CUpti_ActivityKind enabled[16];
static size_t n_enabled;

void fl_kinds_message(CUptiResult r, char *out, size_t len, const char *what)
{
    snprintf(out, len, "%s failed: %s (%d)", what, fl_cupti_name(r), (int)r);
}

void fl_kinds_forget(void)
{
    n_enabled = 0;
}

void fl_kinds_disable_all(void)
{
    for (size_t i = n_enabled; i-- > 0;)
        cuptiActivityDisable(enabled[i]);
    n_enabled = 0;
}

static bool kind_enabled(CUpti_ActivityKind kind)
{
    for (size_t i = 0; i < n_enabled; i++)
        if (enabled[i] == kind)
            return true;
    return false;
}

CUptiResult fl_kinds_enable(CUpti_ActivityKind kind)
{
    if (kind_enabled(kind))
        return CUPTI_SUCCESS;
    CUptiResult r = cuptiActivityEnable(kind);
    if (r == CUPTI_SUCCESS && n_enabled < sizeof enabled / sizeof enabled[0])
        enabled[n_enabled++] = kind;
    return r;
}

void fl_kinds_optional(CUpti_ActivityKind kind, uint32_t feat, const char *what,
                       fl_trace_stats *notes)
{
    CUptiResult r = fl_kinds_enable(kind);
    if (r == CUPTI_SUCCESS)
        return;
    if (!notes->unavailable)
        fl_kinds_message(r, notes->unavailable_msg, sizeof notes->unavailable_msg, what);
    notes->unavailable |= feat;
}

CUptiResult fl_kinds_start(const fl_trace_options *o, bool keep, fl_trace_stats *notes,
                           const char **what)
{
    /* Kernels are the engine: without them there is no Trace.  With
     * CONCURRENT_KERNEL on, CUPTI's SASS metrics count 0 for every
     * instruction; with KERNEL (kernels serialised) they count (an H200,
     * CUDA 13.0: tests/gpu/sass_probe.cu --activity, --serial). */
    CUpti_ActivityKind kernels =
        o->sass_metrics ? CUPTI_ACTIVITY_KIND_KERNEL : CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL;
    if (!keep)
        n_enabled = 0;
    /* Injection enabled concurrent kernels; a SASS session serialises. */
    for (size_t i = 0; o->sass_metrics && i < n_enabled; i++)
        if (enabled[i] == CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL) {
            cuptiActivityDisable(enabled[i]);
            enabled[i] = enabled[--n_enabled];
            break;
        }
    CUptiResult r = fl_kinds_enable(kernels);
    if (r != CUPTI_SUCCESS) {
        *what = o->sass_metrics ? "cuptiActivityEnable(KERNEL)"
                                : "cuptiActivityEnable(CONCURRENT_KERNEL)";
        return r;
    }
    static const struct {
        CUpti_ActivityKind kind;
        uint32_t feat;
        const char *what;
    } always[] = {
        {CUPTI_ACTIVITY_KIND_MEMCPY, FL_FEAT_MEMCPY, "cuptiActivityEnable(MEMCPY)"},
        {CUPTI_ACTIVITY_KIND_MEMCPY2, FL_FEAT_MEMCPY, "cuptiActivityEnable(MEMCPY2)"},
        {CUPTI_ACTIVITY_KIND_MEMSET, FL_FEAT_MEMSET, "cuptiActivityEnable(MEMSET)"},
        {CUPTI_ACTIVITY_KIND_OVERHEAD, FL_FEAT_OVERHEAD, "cuptiActivityEnable(OVERHEAD)"},
    };
    for (size_t i = 0; i < sizeof always / sizeof always[0]; i++)
        fl_kinds_optional(always[i].kind, always[i].feat, always[i].what, notes);
    if (o->synchronization)
        fl_kinds_optional(CUPTI_ACTIVITY_KIND_SYNCHRONIZATION, FL_FEAT_SYNC,
                          "cuptiActivityEnable(SYNCHRONIZATION)", notes);
    if (o->memory)
        fl_kinds_optional(CUPTI_ACTIVITY_KIND_MEMORY2, FL_FEAT_MEMORY,
                          "cuptiActivityEnable(MEMORY2)", notes);
    if (o->external_correlation)
        fl_kinds_optional(CUPTI_ACTIVITY_KIND_EXTERNAL_CORRELATION, FL_FEAT_EXTERNAL,
                          "cuptiActivityEnable(EXTERNAL_CORRELATION)", notes);
    if (o->nvtx)
        fl_kinds_optional(CUPTI_ACTIVITY_KIND_MARKER, FL_FEAT_NVTX, "cuptiActivityEnable(MARKER)",
                          notes);
    if (o->graphs)
        fl_kinds_optional(CUPTI_ACTIVITY_KIND_GRAPH_TRACE, FL_FEAT_GRAPHS,
                          "cuptiActivityEnable(GRAPH_TRACE)", notes);
    return CUPTI_SUCCESS;
}
