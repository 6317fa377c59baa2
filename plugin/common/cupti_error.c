/*
 * cupti_error.c - CUPTI results to statuses and messages with the fix
 * (cupti_error.h).
 *
 * Promises: one mapping of CUPTI's results for every engine (a MIG
 * instance is the engine's own status when it says so); one message form;
 * the texts that depend on the engine are the engine's (fl_cupti_fixes),
 * the others written once here.
 */
#include "cupti_error.h"

#include <stdio.h>

const fl_cupti_fixes fl_pcs_fixes = {
    .no_permission =
        "GPU profiling is restricted to administrators: run as root, or allow it for "
        "every user with the nvidia module option NVreg_RestrictProfilingToAdminUsers=0 "
        "(a line 'options nvidia NVreg_RestrictProfilingToAdminUsers=0' in "
        "/etc/modprobe.d/, then reload the driver or reboot)",
    .not_supported = "this device, driver or CUPTI has no PC sampling (it needs compute capability "
                     "7.0 or newer, not MIG, and a CUPTI no older than the driver)",
    .conflict = "another profiler holds the device (Nsight, the Profiler API, or a second CUPTI "
                "subscriber): PC sampling and the Profiler API cannot run together; stop the "
                "other tool",
};

uint32_t fl_cupti_status(CUptiResult r, const fl_cupti_fixes *f)
{
    if (f && f->mig_own && r == CUPTI_ERROR_MIG_DEVICE_NOT_SUPPORTED)
        return FL_PC_MIG;
    switch (r) {
    case CUPTI_SUCCESS:
        return FL_PC_ACTIVE;
    case CUPTI_ERROR_INSUFFICIENT_PRIVILEGES:
        return FL_PC_NO_PERMISSION;
    case CUPTI_ERROR_VIRTUALIZED_DEVICE_NOT_SUPPORTED:
    case CUPTI_ERROR_VIRTUALIZED_DEVICE_INSUFFICIENT_PRIVILEGES:
        return FL_PC_VIRTUALIZED;
    case CUPTI_ERROR_NOT_SUPPORTED:
    case CUPTI_ERROR_LEGACY_PROFILER_NOT_SUPPORTED:
    case CUPTI_ERROR_NOT_COMPATIBLE:
    case CUPTI_ERROR_CMP_DEVICE_NOT_SUPPORTED:
    case CUPTI_ERROR_MIG_DEVICE_NOT_SUPPORTED:
    case CUPTI_ERROR_WSL_DEVICE_NOT_SUPPORTED:
    case CUPTI_ERROR_CONFIDENTIAL_COMPUTING_NOT_SUPPORTED:
        return FL_PC_NOT_SUPPORTED;
    case CUPTI_ERROR_UNKNOWN:
    case CUPTI_ERROR_NOT_INITIALIZED:
        return FL_PC_NO_DRIVER;
    case CUPTI_ERROR_OLD_PROFILER_API_INITIALIZED:
    case CUPTI_ERROR_MULTIPLE_SUBSCRIBERS_NOT_SUPPORTED:
    case CUPTI_ERROR_HARDWARE_BUSY:
        return FL_PC_CONFLICT;
    default:
        return FL_PC_FAILED;
    }
}

/* f's words for status; NULL when f has none. */
static const char *own_words(uint32_t status, const fl_cupti_fixes *f)
{
    return status == FL_PC_NO_PERMISSION   ? f->no_permission
           : status == FL_PC_NOT_SUPPORTED ? f->not_supported
           : status == FL_PC_CONFLICT      ? f->conflict
           : status == FL_PC_MIG           ? f->mig
                                           : NULL;
}

const char *fl_cupti_fix(uint32_t status, const fl_cupti_fixes *f)
{
    const char *own = f ? own_words(status, f) : NULL;
    if (!own)
        own = own_words(status, &fl_pcs_fixes);
    if (own)
        return own;
    switch (status) {
    case FL_PC_VIRTUALIZED:
        return "a virtual GPU (vGPU) allows profiling only when its host enables it for the "
               "VM (the vGPU's enable_profiling setting): ask the host's administrator, or run "
               "on a physical GPU";
    case FL_PC_NO_DRIVER:
        return "CUPTI found no working NVIDIA driver (no GPU, or the driver is not loaded)";
    default:
        return "see CUPTI's message";
    }
}

const char *fl_cupti_name(CUptiResult r)
{
    const char *m = NULL;
    if (cuptiGetResultString(r, &m) != CUPTI_SUCCESS || !m)
        m = "unknown CUPTI error";
    return m;
}

void fl_cupti_explain(CUptiResult r, const char *what, const fl_cupti_fixes *f, char *out,
                      size_t len)
{
    snprintf(out, len, "%s failed: %s (%d): %s; the session runs Trace", what, fl_cupti_name(r),
             (int)r, fl_cupti_fix(fl_cupti_status(r, f), f));
}

uint32_t fl_pcs_status_of(CUptiResult r)
{
    return fl_cupti_status(r, &fl_pcs_fixes);
}

const char *fl_pcs_fix(uint32_t status)
{
    return fl_cupti_fix(status, &fl_pcs_fixes);
}

void fl_pcs_explain(CUptiResult r, const char *what, char *out, size_t len)
{
    fl_cupti_explain(r, what, &fl_pcs_fixes, out, len);
}

uint32_t fl_profiler_status(CUptiResult r, bool late)
{
    uint32_t st = fl_pcs_status_of(r);
    if (st == FL_PC_ACTIVE || st == FL_PC_FAILED)
        return late ? FL_RP_LATE_INIT : FL_PC_FAILED;
    return st;
}

const char *fl_late_init_advice(bool late)
{
    return late ? "; gpufl_init ran after CUDA work had started on this context: the "
                  "Profiler API needs a clean context, so call gpufl_init before the first "
                  "kernel (in PyTorch right after `import torch`)"
                : "";
}
