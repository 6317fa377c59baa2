/*
 * resources.h - CUPTI's resource callbacks (CUDA contexts created and about
 * to be destroyed, modules loaded), dispatched to every engine that follows
 * them (resources.c): one entry, so each context reaches each engine and a
 * loaded cubin is kept once, however many engines map PCs to source lines.
 */
#ifndef GP_PLUGIN_RESOURCES_H
#define GP_PLUGIN_RESOURCES_H

#include <cupti.h>

/* The application's thread: a CUPTI_CB_DOMAIN_RESOURCE callback's id and
 * data (a CUpti_ResourceData; NULL-safe). */
void fl_resource_event(CUpti_CallbackId cbid, const void *data);

#endif /* GP_PLUGIN_RESOURCES_H */
