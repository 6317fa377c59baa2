/*
 * capture_cb.c - CUPTI's profiler-API and NVTX callbacks as the core's
 * capture edges (capture_cb.h).
 *
 * Promises: no CUDA driver call and no lock here (the callbacks run on the
 * application's threads, inside its calls); a start is reported at its
 * call's exit and a stop at its entry, each with the call's own
 * correlation id, so a kernel launched between them falls inside the
 * window by id; NVTX callbacks have no id, so their edges carry the
 * highest one the plugin's runtime and driver callbacks have seen.
 */
#include "capture_cb.h"

#include <generated_nvtx_meta.h>
#include <stdatomic.h>
#include <stddef.h>
#include <stdlib.h>
#include <strings.h>

typedef void (*edge_fn)(int edge, const char *name, uint64_t id, uint32_t corr);

static _Atomic(edge_fn) edge;
static bool want_api, want_nvtx;
static _Atomic uint32_t high_corr;

CUptiResult fl_capture_cb_start(const fl_trace_options *o, CUpti_SubscriberHandle subscriber)
{
    want_api = o->capture_edge && o->capture_profiler_api;
    want_nvtx = o->capture_edge && o->capture_nvtx;
    atomic_store(&high_corr, 0);
    atomic_store_explicit(&edge, want_api || want_nvtx ? o->capture_edge : NULL,
                          memory_order_release);
    CUptiResult r = CUPTI_SUCCESS;
    if (!subscriber)
        return r;
    if (want_api)
        r = cuptiEnableCallback(1, subscriber, CUPTI_CB_DOMAIN_DRIVER_API,
                                CUPTI_DRIVER_TRACE_CBID_cuProfilerStart);
    if (r == CUPTI_SUCCESS && want_api)
        r = cuptiEnableCallback(1, subscriber, CUPTI_CB_DOMAIN_DRIVER_API,
                                CUPTI_DRIVER_TRACE_CBID_cuProfilerStop);
    if (r == CUPTI_SUCCESS && want_nvtx)
        r = cuptiEnableDomain(1, subscriber, CUPTI_CB_DOMAIN_NVTX);
    return r;
}

void fl_capture_cb_stop(void)
{
    atomic_store_explicit(&edge, NULL, memory_order_release);
}

bool fl_capture_cb_nvtx_asked(void)
{
    const char *r = getenv("GPUFL_CAPTURE_RANGE");
    return want_nvtx || (r && strncasecmp(r, "nvtx:", 5) == 0);
}

/* An Ex call's message, when it is ASCII (a registered string or a wide
 * one never matches a name given as bytes). */
static const char *attr_message(const nvtxEventAttributes_t *a)
{
    return a && a->messageType == NVTX_MESSAGE_TYPE_ASCII ? a->message.ascii : NULL;
}

static void nvtx_cb(edge_fn fn, CUpti_CallbackId cbid, const CUpti_NvtxData *d)
{
    const void *p = d ? d->functionParams : NULL;
    uint32_t corr = atomic_load_explicit(&high_corr, memory_order_relaxed);
    const char *msg = NULL;
    int e = 0;
    uint64_t id = 0;
    switch (cbid) {
    case CUPTI_CBID_NVTX_nvtxRangePushA:
        e = FL_EDGE_NVTX_PUSH;
        msg = p ? ((const nvtxRangePushA_params *)p)->message : NULL;
        break;
    case CUPTI_CBID_NVTX_nvtxRangePushEx:
        e = FL_EDGE_NVTX_PUSH;
        msg = p ? attr_message(((const nvtxRangePushEx_params *)p)->eventAttrib) : NULL;
        break;
    case CUPTI_CBID_NVTX_nvtxDomainRangePushEx:
        e = FL_EDGE_NVTX_PUSH;
        msg = p ? attr_message(((const nvtxDomainRangePushEx_params *)p)->core.eventAttrib) : NULL;
        break;
    case CUPTI_CBID_NVTX_nvtxRangePushW:
        e = FL_EDGE_NVTX_PUSH; /* counts the depth; never a name we match */
        break;
    case CUPTI_CBID_NVTX_nvtxRangePop:
    case CUPTI_CBID_NVTX_nvtxDomainRangePop:
        e = FL_EDGE_NVTX_POP;
        break;
    case CUPTI_CBID_NVTX_nvtxRangeStartA:
        e = FL_EDGE_NVTX_START;
        msg = p ? ((const nvtxRangeStartA_params *)p)->message : NULL;
        break;
    case CUPTI_CBID_NVTX_nvtxRangeStartEx:
        e = FL_EDGE_NVTX_START;
        msg = p ? attr_message(((const nvtxRangeStartEx_params *)p)->eventAttrib) : NULL;
        break;
    case CUPTI_CBID_NVTX_nvtxDomainRangeStartEx:
        e = FL_EDGE_NVTX_START;
        msg = p ? attr_message(((const nvtxDomainRangeStartEx_params *)p)->core.eventAttrib) : NULL;
        break;
    case CUPTI_CBID_NVTX_nvtxRangeEnd:
        e = FL_EDGE_NVTX_END;
        id = p ? ((const nvtxRangeEnd_params *)p)->id : 0;
        break;
    case CUPTI_CBID_NVTX_nvtxDomainRangeEnd:
        e = FL_EDGE_NVTX_END;
        id = p ? ((const nvtxDomainRangeEnd_params *)p)->core.id : 0;
        break;
    default:
        return;
    }
    /* A start's id is its return value, there when CUPTI gives one. */
    if (e == FL_EDGE_NVTX_START && d && d->functionReturnValue)
        id = *(const nvtxRangeId_t *)d->functionReturnValue;
    fn(e, msg, id, corr);
}

bool fl_capture_cb(CUpti_CallbackDomain domain, CUpti_CallbackId cbid, const void *data)
{
    edge_fn fn = atomic_load_explicit(&edge, memory_order_acquire);
    if (!fn || !data)
        return false;
    if (domain == CUPTI_CB_DOMAIN_NVTX) {
        if (want_nvtx)
            nvtx_cb(fn, cbid, data);
        return true;
    }
    if (domain != CUPTI_CB_DOMAIN_DRIVER_API && domain != CUPTI_CB_DOMAIN_RUNTIME_API)
        return false;
    const CUpti_CallbackData *cb = data;
    bool start =
        domain == CUPTI_CB_DOMAIN_DRIVER_API && cbid == CUPTI_DRIVER_TRACE_CBID_cuProfilerStart;
    bool stop =
        domain == CUPTI_CB_DOMAIN_DRIVER_API && cbid == CUPTI_DRIVER_TRACE_CBID_cuProfilerStop;
    if (want_api && start && cb->callbackSite == CUPTI_API_EXIT)
        fn(FL_EDGE_PROFILER_START, NULL, 0, cb->correlationId);
    else if (want_api && stop && cb->callbackSite == CUPTI_API_ENTER)
        fn(FL_EDGE_PROFILER_STOP, NULL, 0, cb->correlationId);
    if (start || stop)
        return true;
    if (want_nvtx) {
        uint32_t c = cb->correlationId,
                 seen = atomic_load_explicit(&high_corr, memory_order_relaxed);
        while (c > seen && !atomic_compare_exchange_weak_explicit(
                               &high_corr, &seen, c, memory_order_relaxed, memory_order_relaxed))
            ;
    }
    return false;
}
