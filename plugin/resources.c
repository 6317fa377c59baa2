/*
 * resources.c - CUDA contexts and modules to the engines (resources.h).
 *
 * Promises: each context created or about to be destroyed reaches every
 * engine of the table that follows contexts, in the table's order (each
 * ignores it when it is not running); a loaded module's cubin is copied
 * once, when some engine maps PCs to source lines (common/cubins.c keeps
 * it); nothing here calls CUPTI (it holds its own locks in these
 * callbacks).
 */
#include "resources.h"

#include "common/cubins.h"
#include "engines/engine.h"

static bool cubins_wanted(void)
{
    for (size_t i = 0; i < fl_n_engines; i++)
        if (fl_engines[i]->keeps_cubins && fl_engines[i]->keeps_cubins())
            return true;
    return false;
}

void fl_resource_event(CUpti_CallbackId cbid, const void *data)
{
    const CUpti_ResourceData *rd = data;
    if (!rd)
        return;
    if (cbid == CUPTI_CBID_RESOURCE_CONTEXT_CREATED) {
        for (size_t i = 0; i < fl_n_engines; i++)
            if (fl_engines[i]->context_created)
                fl_engines[i]->context_created(rd->context);
    } else if (cbid == CUPTI_CBID_RESOURCE_CONTEXT_DESTROY_STARTING) {
        for (size_t i = 0; i < fl_n_engines; i++)
            if (fl_engines[i]->context_destroying)
                fl_engines[i]->context_destroying(rd->context);
    } else if (cbid == CUPTI_CBID_RESOURCE_MODULE_LOADED) {
        const CUpti_ModuleResourceData *m = rd->resourceDescriptor;
        if (m && m->pCubin && m->cubinSize && cubins_wanted())
            fl_cubin_keep(m->pCubin, m->cubinSize);
    }
}
