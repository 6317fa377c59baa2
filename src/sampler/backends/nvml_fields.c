/*
 * sampler/backends/nvml_fields.c - the per-sample metrics that NVML also
 * offers as field values, read in one nvmlDeviceGetFieldValues call.
 *
 * Promises: a metric read here has exactly the value its own call would
 * give (the same driver counter, the same unit); a field whose entry
 * answers anything but success is read by its own call for the rest of the
 * run (remembered per device), and a call that fails as a whole, or a
 * library without it, sends every metric to its own call.  Never fails the
 * read: its own call then reports what is wrong.
 *
 * Which metrics: NVML 12's field list (nvml.h, NVML_FI_DEV_*) has the
 * energy counter (TOTAL_ENERGY_CONSUMPTION, the counter of
 * nvmlDeviceGetTotalEnergyConsumption).  Power has fields (POWER_AVERAGE
 * 185, POWER_INSTANT 186, later headers) whose meaning differs from
 * nvmlDeviceGetPowerUsage on some GPUs (the 1 s average on Ampere and
 * later, but not GA100; instantaneous before), so it keeps its own call;
 * the GPU temperature, the clocks, utilisation, memory and the throttle
 * reasons have no field (MEMORY_TEMP, 82, is the HBM's).  docs/performance.md.
 */
#include "backend.h"
#include "nvml_abi.h"
#include "nvml_dev.h"
#include "runner.h"
#include "gpu_profile.h"

#include <string.h>

static const struct {
    uint32_t metric; /* GP_M_* */
    unsigned field;  /* NVML_FI_DEV_* */
} fields[] = {
    {GP_M_ENERGY, NVML_FI_DEV_TOTAL_ENERGY_CONSUMPTION},
};
#define N_FIELDS (sizeof fields / sizeof fields[0])

/* The metrics this read asks for: energy only when flags say so. */
static uint32_t wanted(const nvml_dev *d)
{
    uint32_t w = d->field_metrics;
    if (!(d->flags & GP_READ_ENERGY))
        w &= ~(uint32_t)GP_M_ENERGY;
    return w;
}

static bool take(const nvmlFieldValue_t *v, unsigned long long *out)
{
    switch (v->valueType) {
    case NVML_VALUE_TYPE_UNSIGNED_INT:
        *out = v->value.uiVal;
        return true;
    case NVML_VALUE_TYPE_UNSIGNED_LONG_LONG:
        *out = v->value.ullVal;
        return true;
    default:
        return false;
    }
}

uint32_t gp_nvml_read_fields(gp_runner *r, nvml_dev *d, gp_device_sample *out)
{
    const nvml_api *a = &d->key.lib->api;
    uint32_t want = wanted(d);
    if (!a->get_fields || !want)
        return 0;
    nvmlFieldValue_t v[N_FIELDS];
    uint32_t which[N_FIELDS];
    int n = 0;
    for (size_t i = 0; i < N_FIELDS; i++) {
        if (!(want & fields[i].metric))
            continue;
        memset(&v[n], 0, sizeof v[n]);
        v[n].fieldId = fields[i].field;
        which[n++] = fields[i].metric;
    }
    gp_runner_doing(r, "nvmlDeviceGetFieldValues");
    if (a->get_fields(d->dev, n, v) != NVML_SUCCESS) {
        d->field_metrics = 0; /* the whole call: every metric by its own call */
        return 0;
    }
    uint32_t got = 0;
    for (int k = 0; k < n; k++) {
        unsigned long long x = 0;
        if (v[k].nvmlReturn != NVML_SUCCESS || !take(&v[k], &x)) {
            d->field_metrics &= ~which[k];
            continue;
        }
        if (which[k] == GP_M_ENERGY)
            out->energy_mj = x;
        out->valid |= which[k];
        got |= which[k];
    }
    return got;
}
