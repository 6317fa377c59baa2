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
 * Which metrics (docs/performance.md has the whole list, field by field):
 * the energy counter (TOTAL_ENERGY_CONSUMPTION, 83, the counter of
 * nvmlDeviceGetTotalEnergyConsumption) and power (POWER_AVERAGE, 185, GPU
 * scope).  NVML documents 185 as the 1 s average "supported on Ampere
 * (except GA100) or newer", and nvmlDeviceGetPowerUsage as the 1 s average
 * on exactly those GPUs (instantaneous on GA100 and older): where 185
 * answers, both are the same average; where it does not (GA100 and older,
 * drivers older than the field), power comes from its own call, as
 * before.  POWER_INSTANT (186) is not used: NVML does not say it is the
 * value GetPowerUsage gives on the older GPUs.  The GPU temperature, the
 * clocks, utilisation, memory, the throttle reasons and PCIe throughput
 * have no field with their meaning in NVML 12 or 13.
 */
#include "backend.h"
#include "nvml_abi.h"
#include "nvml_dev.h"
#include "runner.h"
#include "gpu_profile.h"

#include <limits.h>
#include <stdint.h>
#include <string.h>

static const struct {
    uint32_t metric; /* GP_M_* */
    unsigned field;  /* NVML_FI_DEV_* */
} fields[] = {
    {GP_M_ENERGY, NVML_FI_DEV_TOTAL_ENERGY_CONSUMPTION},
    {GP_M_POWER, NVML_FI_DEV_POWER_AVERAGE},
};
#define N_FIELDS (sizeof fields / sizeof fields[0])

/* The metrics this read asks for: power always, energy only when flags
 * say so. */
static uint32_t wanted(const nvml_dev *d)
{
    uint32_t w = d->field_metrics;
    if (!(d->flags & GP_READ_ENERGY))
        w &= ~(uint32_t)GP_M_ENERGY;
    return w;
}

/* The entry's value as a non-negative integer no larger than max; false
 * for any other type or value (then the metric's own call reads it). */
static bool take(const nvmlFieldValue_t *v, unsigned long long max, unsigned long long *out)
{
    unsigned long long x;
    switch (v->valueType) {
    case NVML_VALUE_TYPE_UNSIGNED_INT:
        x = v->value.uiVal;
        break;
    case NVML_VALUE_TYPE_UNSIGNED_LONG_LONG:
        x = v->value.ullVal;
        break;
    case NVML_VALUE_TYPE_SIGNED_INT:
        if (v->value.siVal < 0)
            return false;
        x = (unsigned long long)v->value.siVal;
        break;
    case NVML_VALUE_TYPE_SIGNED_LONG_LONG:
        if (v->value.sllVal < 0)
            return false;
        x = (unsigned long long)v->value.sllVal;
        break;
    default:
        return false;
    }
    if (x > max)
        return false;
    *out = x;
    return true;
}

uint32_t gp_nvml_read_fields(gp_runner *r, nvml_dev *d, gp_device_sample *out)
{
    const nvml_api *a = &d->key.lib->api;
    uint32_t want = wanted(d);
    bool mem_temp = d->health_due && d->mem_temp_field_ok;
    if (!a->get_fields || (!want && !mem_temp))
        return 0;
    nvmlFieldValue_t v[N_FIELDS + 1];
    uint32_t which[N_FIELDS + 1];
    int n = 0;
    for (size_t i = 0; i < N_FIELDS; i++) {
        if (!(want & fields[i].metric))
            continue;
        memset(&v[n], 0, sizeof v[n]);
        v[n].fieldId = fields[i].field;
        v[n].scopeId = NVML_FI_SCOPE_GPU; /* power: the GPU's, as GetPowerUsage */
        which[n++] = fields[i].metric;
    }
    /* The memory temperature rides on the same call (no call of its own
     * exists): which[] 0 marks it. */
    if (mem_temp) {
        memset(&v[n], 0, sizeof v[n]);
        v[n].fieldId = NVML_FI_DEV_MEMORY_TEMP;
        which[n++] = 0;
    }
    /* Names the metrics asked, for a call that does not answer. */
    uint32_t asked = 0;
    for (int k = 0; k < n; k++)
        asked |= which[k];
    gp_runner_doing(r, asked == GP_M_ENERGY  ? "nvmlDeviceGetFieldValues (energy)"
                       : asked == GP_M_POWER ? "nvmlDeviceGetFieldValues (power)"
                       : asked == 0          ? "nvmlDeviceGetFieldValues (memory temperature)"
                                             : "nvmlDeviceGetFieldValues (energy, power)");
    if (a->get_fields(d->dev, n, v) != NVML_SUCCESS) {
        d->field_metrics = 0; /* the whole call: every metric by its own call */
        d->mem_temp_field_ok = false;
        return 0;
    }
    uint32_t got = 0;
    for (int k = 0; k < n; k++) {
        unsigned long long x = 0;
        if (which[k] == 0) {
            if (v[k].nvmlReturn != NVML_SUCCESS || !take(&v[k], 300, &x)) {
                d->mem_temp_field_ok = false;
                continue;
            }
            d->health.mem_temp_c = (int32_t)x;
            d->health.health_valid |= GP_H_MEM_TEMP;
            continue;
        }
        unsigned long long max = which[k] == GP_M_POWER ? UINT32_MAX : ULLONG_MAX;
        if (v[k].nvmlReturn != NVML_SUCCESS || !take(&v[k], max, &x)) {
            d->field_metrics &= ~which[k];
            continue;
        }
        if (which[k] == GP_M_ENERGY)
            out->energy_mj = x;
        else if (which[k] == GP_M_POWER)
            out->power_mw = (uint32_t)x;
        out->valid |= which[k];
        got |= which[k];
    }
    return got;
}
