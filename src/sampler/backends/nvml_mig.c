/*
 * sampler/backends/nvml_mig.c - the NVML calls that find MIG instances:
 * a GPU's occupied MIG slots and an instance's GPU / compute instance ids,
 * on a runner's thread like every NVML call (nvml_calls.c makes the
 * others and turns these answers into devices and messages).
 *
 * Promises: slots are listed only for a GPU whose current MIG mode is on;
 * a GPU without MIG (or MIG off), an empty slot, or a library without the
 * MIG calls lists none and is not a failure; any other code is returned
 * with the function that gave it.  An id the driver will not give is -1.
 * GPM of an instance is its GPU instance's, sampled on the parent's handle
 * (nvmlGpmMigSampleGet); without that call or a GPU instance id it is
 * NOT_SUPPORTED, which the reader turns into n/a.
 */
#include "../../util/error.h"
#include "nvml_abi.h"
#include "nvml_dev.h"
#include "runner.h"

#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

/* "Not here": no MIG on this GPU, an empty slot, a call the driver does
 * not have or will not answer (gp_nvml_unavailable, plus the
 * answers of a slot or GPU without an instance). */
static bool not_here(nvmlReturn_t rc)
{
    return rc == NVML_ERROR_INVALID_ARGUMENT || gp_nvml_unavailable(rc);
}

nvmlReturn_t gp_nvml_mig_slots(gp_runner *r, const nvml_api *a, nvmlDevice_t dev, unsigned *slots,
                               unsigned *n, const char **fn)
{
    *n = 0;
    if (!a->mig_mode)
        return NVML_SUCCESS;
    unsigned cur = 0, pending = 0, max = 0;
    *fn = "nvmlDeviceGetMigMode";
    gp_runner_doing(r, *fn);
    nvmlReturn_t rc = a->mig_mode(dev, &cur, &pending);
    if (rc != NVML_SUCCESS || cur != NVML_DEVICE_MIG_ENABLE)
        return rc == NVML_SUCCESS || not_here(rc) ? NVML_SUCCESS : rc;
    *fn = "nvmlDeviceGetMaxMigDeviceCount";
    gp_runner_doing(r, *fn);
    rc = a->mig_max(dev, &max);
    if (rc != NVML_SUCCESS)
        return not_here(rc) ? NVML_SUCCESS : rc;
    *fn = "nvmlDeviceGetMigDeviceHandleByIndex";
    for (unsigned i = 0; i < max && i < NVML_MIG_MAX; i++) {
        nvmlDevice_t h = NULL;
        gp_runner_doing(r, *fn);
        rc = a->mig_handle(dev, i, &h);
        if (rc == NVML_SUCCESS)
            slots[(*n)++] = i;
        else if (!not_here(rc))
            return rc;
    }
    return NVML_SUCCESS;
}

static int32_t instance_id(gp_runner *r, nvml_device_get_instance_id_fn fn, const char *fn_name,
                           nvmlDevice_t dev)
{
    unsigned id = 0;
    if (!fn)
        return -1;
    gp_runner_doing(r, fn_name);
    return fn(dev, &id) == NVML_SUCCESS && id <= INT32_MAX ? (int32_t)id : -1;
}

void gp_nvml_mig_ids(gp_runner *r, const nvml_api *a, nvmlDevice_t dev, int32_t *gi, int32_t *ci)
{
    *gi = instance_id(r, a->gi_id, "nvmlDeviceGetGpuInstanceId", dev);
    *ci = instance_id(r, a->ci_id, "nvmlDeviceGetComputeInstanceId", dev);
}

void gp_nvml_mig_profile(const char *name, char *out, size_t cap)
{
    const char *p = NULL;
    for (const char *q = strstr(name, " MIG "); q; q = strstr(q + 1, " MIG "))
        p = q;
    snprintf(out, cap, "%s", p ? p + 5 : "");
}

gp_status gp_nvml_mig_open(gp_runner *r, const nvml_dev *d, nvmlDevice_t parent, nvmlDevice_t *dev,
                           gp_error *err)
{
    /* The instance was listed, so the library has the MIG calls. */
    const nvml_api *a = &d->key.lib->api;
    const char *fn = "nvmlDeviceGetMigDeviceHandleByIndex";
    gp_runner_doing(r, fn);
    nvmlReturn_t rc = a->mig_handle(parent, d->mig_slot, dev);
    if (rc == NVML_SUCCESS)
        return GP_OK;
    if (rc == NVML_ERROR_NOT_FOUND || rc == NVML_ERROR_INVALID_ARGUMENT)
        return gp_error_set(err, GP_ERR_DEVICE_NOT_FOUND,
                            "nvml: device %u: MIG device %u of GPU %u is gone (destroyed since "
                            "the devices were listed): list the devices again",
                            d->key.index, d->mig_slot, d->parent);
    const char *text = a->error_string ? a->error_string(rc) : NULL;
    return gp_error_set(err, rc == NVML_ERROR_GPU_IS_LOST ? GP_ERR_DEVICE_LOST : GP_ERR_BACKEND,
                        "nvml: device %u: %s (%s returned %d)", d->key.index,
                        text && *text ? text : "unknown NVML error", fn, rc);
}

nvmlReturn_t gp_nvml_gpm_support(gp_runner *r, nvml_dev *d, nvmlGpmSupport_t *sup)
{
    const nvml_api *a = &d->key.lib->api;
    nvmlDevice_t on = d->dev;
    if (d->is_mig) {
        /* The GI id is read afresh each run: an instance recreated in the
         * same slot may have another. */
        d->mig_gi = instance_id(r, a->gi_id, "nvmlDeviceGetGpuInstanceId", d->dev);
        if (!a->gpm_mig_get || d->mig_gi < 0 || !d->parent_dev)
            return NVML_ERROR_NOT_SUPPORTED;
        on = d->parent_dev;
    }
    gp_runner_doing(r, "nvmlGpmQueryDeviceSupport");
    return a->gpm_query(on, sup);
}

nvmlReturn_t gp_nvml_gpm_sample(gp_runner *r, const nvml_dev *d, nvmlGpmSample_t sample)
{
    const nvml_api *a = &d->key.lib->api;
    gp_runner_doing(r, GP_NVML_GPM_SAMPLE_FN(d));
    if (d->is_mig)
        return a->gpm_mig_get(d->parent_dev, (unsigned)d->mig_gi, sample);
    return a->gpm_get(d->dev, sample);
}
