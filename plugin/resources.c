/*
 * resources.c - CUDA contexts and modules to the engines (resources.h).
 *
 * Promises: each context created or about to be destroyed reaches PC
 * sampling, PM sampling and SASS metrics, in that order (each ignores it
 * when it is not running); a loaded module's cubin is copied once, when PC
 * sampling or SASS metrics map PCs to source lines (pcsamp_source.c keeps
 * it); nothing here calls CUPTI (it holds its own locks in these
 * callbacks).
 */
#include "resources.h"
#include "pcsamp.h"
#include "pmsamp.h"
#include "sassmetrics.h"

void fl_resource_event(CUpti_CallbackId cbid, const void *data)
{
    const CUpti_ResourceData *rd = data;
    if (!rd)
        return;
    if (cbid == CUPTI_CBID_RESOURCE_CONTEXT_CREATED) {
        fl_pcs_context_created(rd->context);
        fl_pms_context_created(rd->context);
        fl_sass_context_created(rd->context);
    } else if (cbid == CUPTI_CBID_RESOURCE_CONTEXT_DESTROY_STARTING) {
        fl_pcs_context_destroying(rd->context);
        fl_pms_context_destroying(rd->context);
        fl_sass_context_destroying(rd->context);
    } else if (cbid == CUPTI_CBID_RESOURCE_MODULE_LOADED) {
        const CUpti_ModuleResourceData *m = rd->resourceDescriptor;
        if (m && m->pCubin && m->cubinSize && (fl_pcs_keeps_cubins() || fl_sass_keeps_cubins()))
            fl_cubin_keep(m->pCubin, m->cubinSize);
    }
}
