/* backend_smi.c - placeholder until the smi backend lands. */
#include "gp_internal.h"

static gp_status open_(const gp_backend_config *cfg, void **ctx, gp_error *err)
{
    (void)cfg;
    *ctx = NULL;
    return gp_error_set(err, GP_ERR_NOT_SUPPORTED, "smi: not implemented yet");
}

const gp_backend gp_backend_smi = {.name = "smi", .open = open_};
