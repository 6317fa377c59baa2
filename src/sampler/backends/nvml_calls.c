/*
 * sampler/backends/nvml_calls.c - the NVML backend's calls into NVML: loading
 * libnvidia-ml with dlopen, and the jobs that the backend (nvml.c) runs on
 * its runners' threads with a deadline.
 *
 * Promises: gp_nvml_lib_load loads the library (the path given, else
 * libnvidia-ml.so.1, then libnvidia-ml.so) and resolves the newest symbol
 * of each function with a fallback to the older name; on any failure it
 * unloads what it loaded and says why (the library and dlerror's text, or
 * the missing symbol).  The library stays loaded, and NVML initialised,
 * while any reference is held.  A metric whose function is absent or
 * answers "not supported / no permission / no data" keeps its valid bit
 * clear and is never an error; GPU_IS_LOST is GP_ERR_DEVICE_LOST and any
 * other code GP_ERR_BACKEND, with the device, the function and the code in
 * the message.  Every NVML call of a job is named to its runner first
 * (gp_runner_doing), so a call that does not return is named in the
 * message.  A job touches its own area and the library only.  Every
 * message starts with "nvml: ".
 */
#include "../../util/clock.h"
#include "../../util/error.h"
#include "backend.h"
#include "nvml_abi.h"
#include "nvml_dev.h"
#include "runner.h"
#include "gpu_profile.h"

#include <dlfcn.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* The public reason bits are NVML's, so a mask passes through unchanged. */
#define SAME_BIT(x) ((long long)GP_THROTTLE_##x == (long long)NVML_CLOCKS_EVENT_##x)
_Static_assert(SAME_BIT(GPU_IDLE) && SAME_BIT(APP_CLOCKS) && SAME_BIT(SW_POWER_CAP) &&
                   SAME_BIT(HW_SLOWDOWN) && SAME_BIT(SYNC_BOOST) && SAME_BIT(SW_THERMAL) &&
                   SAME_BIT(HW_THERMAL) && SAME_BIT(HW_POWER_BRAKE) && SAME_BIT(DISPLAY_CLOCK),
               "GP_THROTTLE_* must be NVML's clock event reason bits");

/* One resolved function: the pointer and the symbol it came from (for
 * messages).  fn is NULL when the library has neither name. */
typedef struct nvml_sym {
    void *fn;
    const char *name;
} nvml_sym;

static const char *error_text(const nvml_lib *l, nvmlReturn_t rc)
{
    const char *s = l->api.error_string ? l->api.error_string(rc) : NULL;
    return s && *s ? s : "unknown NVML error";
}

/* ------------------------------------------------------------------ loading */

/* The newer symbol if present, else the older one (either may be NULL). */
static nvml_sym sym2(void *lib, const char *newer, const char *older)
{
    nvml_sym s = {gp_nvml_sym(lib, newer), newer};
    if (!s.fn && older) {
        s.fn = gp_nvml_sym(lib, older);
        s.name = older;
    }
    if (!s.fn)
        s.name = newer;
    return s;
}

/* dlerror's text usually starts with the path we passed: drop that copy. */
static const char *strip_path(const char *dl_text, const char *path)
{
    size_t n = strlen(path);
    if (dl_text && strncmp(dl_text, path, n) == 0 && dl_text[n] == ':' && dl_text[n + 1] == ' ')
        return dl_text + n + 2;
    return dl_text ? dl_text : "unknown dlopen error";
}

static gp_status load_library(nvml_lib *l, const char *path_cfg, gp_error *err)
{
    static const char *const defaults[] = {"libnvidia-ml.so.1", "libnvidia-ml.so"};
    if (path_cfg && *path_cfg) {
        l->handle = dlopen(path_cfg, RTLD_NOW | RTLD_LOCAL);
        if (!l->handle)
            return gp_error_set(err, GP_ERR_BACKEND_UNAVAILABLE,
                                "nvml: cannot load %s: %s: check the nvml_library path", path_cfg,
                                strip_path(dlerror(), path_cfg));
        snprintf(l->name, sizeof l->name, "%s", path_cfg);
        return GP_OK;
    }
    char first_error[GP_ERROR_MESSAGE_MAX / 2] = "";
    for (size_t i = 0; i < sizeof defaults / sizeof defaults[0]; i++) {
        l->handle = dlopen(defaults[i], RTLD_NOW | RTLD_LOCAL);
        if (l->handle) {
            snprintf(l->name, sizeof l->name, "%s", defaults[i]);
            return GP_OK;
        }
        const char *e = dlerror();
        if (i == 0)
            snprintf(first_error, sizeof first_error, "%s", strip_path(e, defaults[i]));
        else
            return gp_error_set(err, GP_ERR_BACKEND_UNAVAILABLE,
                                "nvml: neither %s (%s) nor %s (%s) could be loaded: is the "
                                "NVIDIA driver installed? Otherwise set nvml_library to its path",
                                defaults[0], first_error, defaults[i], strip_path(e, defaults[i]));
    }
    return GP_ERR_BACKEND_UNAVAILABLE; /* not reached: the loop returns */
}

static gp_status missing(const nvml_lib *l, const char *newer, const char *older, gp_error *err)
{
    if (older)
        return gp_error_set(err, GP_ERR_BACKEND_UNAVAILABLE,
                            "nvml: %s exports neither %s nor %s: it is not NVML, or an NVML too "
                            "old for this library",
                            l->name, newer, older);
    return gp_error_set(err, GP_ERR_BACKEND_UNAVAILABLE,
                        "nvml: %s does not export %s: it is not NVML, or an NVML too old for "
                        "this library",
                        l->name, newer);
}

/* A required function: the newer name, else the older; absent is fatal. */
#define REQUIRE(dst, newer, older, used_name)                                                      \
    do {                                                                                           \
        nvml_sym s_ = sym2(l->handle, newer, older);                                               \
        if (!s_.fn)                                                                                \
            return missing(l, newer, older, err);                                                  \
        NVML_SET_FN(dst, s_.fn);                                                                   \
        used_name = s_.name;                                                                       \
    } while (0)

static gp_status resolve(nvml_lib *l, gp_error *err)
{
    nvml_api *a = &l->api;
    void *h = l->handle;
    const char *unused_name;
    REQUIRE(a->init, "nvmlInit_v2", "nvmlInit", a->init_name);
    REQUIRE(a->shutdown, "nvmlShutdown", NULL, unused_name);
    REQUIRE(a->error_string, "nvmlErrorString", NULL, unused_name);
    REQUIRE(a->get_count, "nvmlDeviceGetCount_v2", "nvmlDeviceGetCount", a->count_name);
    REQUIRE(a->get_handle, "nvmlDeviceGetHandleByIndex_v2", "nvmlDeviceGetHandleByIndex",
            a->handle_name);
    REQUIRE(a->get_name, "nvmlDeviceGetName", NULL, unused_name);
    REQUIRE(a->get_uuid, "nvmlDeviceGetUUID", NULL, unused_name);
    REQUIRE(a->get_util, "nvmlDeviceGetUtilizationRates", NULL, unused_name);
    (void)unused_name;

    /* Optional: an absent function is an unsupported metric.  The v2 and
     * V calls are resolved beside the older ones, not instead of them, so a
     * driver that rejects the newer struct is still read. */
    NVML_SET_FN(a->get_mem_v2, gp_nvml_sym(h, "nvmlDeviceGetMemoryInfo_v2"));
    NVML_SET_FN(a->get_mem_v1, gp_nvml_sym(h, "nvmlDeviceGetMemoryInfo"));
    NVML_SET_FN(a->get_power, gp_nvml_sym(h, "nvmlDeviceGetPowerUsage"));
    NVML_SET_FN(a->get_energy, gp_nvml_sym(h, "nvmlDeviceGetTotalEnergyConsumption"));
    NVML_SET_FN(a->get_temp_v, gp_nvml_sym(h, "nvmlDeviceGetTemperatureV"));
    NVML_SET_FN(a->get_temp_v1, gp_nvml_sym(h, "nvmlDeviceGetTemperature"));
    NVML_SET_FN(a->get_clock, gp_nvml_sym(h, "nvmlDeviceGetClockInfo"));
    nvml_sym r = sym2(h, "nvmlDeviceGetCurrentClocksEventReasons",
                      "nvmlDeviceGetCurrentClocksThrottleReasons");
    NVML_SET_FN(a->get_reasons, r.fn);
    a->reasons_name = r.name;
    NVML_SET_FN(a->get_pcie, gp_nvml_sym(h, "nvmlDeviceGetPcieThroughput"));
    NVML_SET_FN(a->get_driver_version, gp_nvml_sym(h, "nvmlSystemGetDriverVersion"));
    NVML_SET_FN(a->gpm_query, gp_nvml_sym(h, "nvmlGpmQueryDeviceSupport"));
    NVML_SET_FN(a->gpm_alloc, gp_nvml_sym(h, "nvmlGpmSampleAlloc"));
    NVML_SET_FN(a->gpm_free, gp_nvml_sym(h, "nvmlGpmSampleFree"));
    NVML_SET_FN(a->gpm_get, gp_nvml_sym(h, "nvmlGpmSampleGet"));
    NVML_SET_FN(a->gpm_metrics, gp_nvml_sym(h, "nvmlGpmMetricsGet"));
    NVML_SET_FN(a->gpm_mig_get, gp_nvml_sym(h, "nvmlGpmMigSampleGet"));
    if (!a->gpm_alloc || !a->gpm_free || !a->gpm_get || !a->gpm_metrics)
        a->gpm_query = NULL; /* GPM needs all five: without one, no GPM */
    NVML_SET_FN(a->get_procs, gp_nvml_sym(h, "nvmlDeviceGetComputeRunningProcesses_v3"));
    NVML_SET_FN(a->get_proc_util, gp_nvml_sym(h, "nvmlDeviceGetProcessUtilization"));
    NVML_SET_FN(a->get_fields, gp_nvml_sym(h, "nvmlDeviceGetFieldValues"));
    NVML_SET_FN(a->mig_mode, gp_nvml_sym(h, "nvmlDeviceGetMigMode"));
    NVML_SET_FN(a->mig_max, gp_nvml_sym(h, "nvmlDeviceGetMaxMigDeviceCount"));
    NVML_SET_FN(a->mig_handle, gp_nvml_sym(h, "nvmlDeviceGetMigDeviceHandleByIndex"));
    NVML_SET_FN(a->gi_id, gp_nvml_sym(h, "nvmlDeviceGetGpuInstanceId"));
    NVML_SET_FN(a->ci_id, gp_nvml_sym(h, "nvmlDeviceGetComputeInstanceId"));
    if (!a->mig_max || !a->mig_handle)
        a->mig_mode = NULL; /* listing instances needs all three */
    gp_nvml_health_resolve(h, a);
    return GP_OK;
}

gp_status gp_nvml_lib_load(const char *path, nvml_lib **out, gp_error *err)
{
    *out = NULL;
    nvml_lib *l = calloc(1, sizeof *l);
    if (!l)
        return gp_error_set(err, GP_ERR_NO_MEMORY, "nvml: out of memory");
    pthread_mutex_init(&l->mu, NULL);
    l->refs = 1;
    gp_status st = load_library(l, path, err);
    if (st == GP_OK)
        st = resolve(l, err);
    if (st != GP_OK) {
        gp_nvml_lib_unref(l); /* not initialised: only unloads */
        return st;
    }
    *out = l;
    return GP_OK;
}

void gp_nvml_lib_ref(nvml_lib *l)
{
    pthread_mutex_lock(&l->mu);
    l->refs++;
    pthread_mutex_unlock(&l->mu);
}

void gp_nvml_lib_unref(nvml_lib *l)
{
    if (!l)
        return;
    pthread_mutex_lock(&l->mu);
    bool last = --l->refs == 0;
    bool shut = l->initialized && !l->shut_down;
    pthread_mutex_unlock(&l->mu);
    if (!last)
        return;
    /* Nobody else holds it: no call of ours is inside NVML now. */
    if (shut)
        l->api.shutdown();
    if (l->handle)
        dlclose(l->handle);
    pthread_mutex_destroy(&l->mu);
    free(l);
}

/* ------------------------------------------------------------ messages */

#define NO_DEVICE UINT32_MAX

/* Fills err for a failed call: "nvml: [device I (NAME): ]TEXT (FN returned
 * RC)", with TEXT NVML's own error string.  Returns the status. */
static gp_status fail(const nvml_lib *l, gp_status st, unsigned index, const char *name,
                      const char *fn, nvmlReturn_t rc, gp_error *err)
{
    if (index == NO_DEVICE)
        return gp_error_set(err, st, "nvml: %s (%s returned %d)", error_text(l, rc), fn, rc);
    if (name && *name)
        return gp_error_set(err, st, "nvml: device %u (%s): %s (%s returned %d)", index, name,
                            error_text(l, rc), fn, rc);
    return gp_error_set(err, st, "nvml: device %u: %s (%s returned %d)", index, error_text(l, rc),
                        fn, rc);
}

static gp_status status_for(nvmlReturn_t rc)
{
    return rc == NVML_ERROR_GPU_IS_LOST ? GP_ERR_DEVICE_LOST : GP_ERR_BACKEND;
}

/* A hint for the init failures a user can do something about. */
static const char *init_hint(nvmlReturn_t rc)
{
    switch (rc) {
    case NVML_ERROR_DRIVER_NOT_LOADED:
        return ": the NVIDIA kernel driver is not loaded (is there a GPU? see dmesg)";
    case NVML_ERROR_NO_PERMISSION:
        return ": no permission to open the GPU device files (/dev/nvidia*)";
    case NVML_ERROR_LIB_RM_VERSION_MISMATCH:
        return ": libnvidia-ml and the kernel driver are different versions (reload the driver "
               "or reboot)";
    default:
        return "";
    }
}

/* ------------------------------------------------------------ system jobs */

static gp_status sys_count(gp_runner *r, nvml_lib *l, unsigned *count, gp_error *err)
{
    unsigned n = 0;
    gp_runner_doing(r, l->api.count_name);
    nvmlReturn_t rc = l->api.get_count(&n);
    if (rc != NVML_SUCCESS)
        return fail(l, status_for(rc), NO_DEVICE, NULL, l->api.count_name, rc, err);
    *count = n;
    return GP_OK;
}

static gp_status sys_driver(gp_runner *r, nvml_lib *l, char *buf, size_t len, gp_error *err)
{
    buf[0] = '\0';
    if (!l->api.get_driver_version)
        return gp_error_set(err, GP_ERR_NOT_SUPPORTED,
                            "nvml: %s does not export nvmlSystemGetDriverVersion", l->name);
    char v[NVML_DRIVER_VERSION_BUFFER_SIZE] = "";
    gp_runner_doing(r, "nvmlSystemGetDriverVersion");
    nvmlReturn_t rc = l->api.get_driver_version(v, sizeof v);
    v[sizeof v - 1] = '\0';
    if (rc != NVML_SUCCESS)
        return fail(l, gp_nvml_unavailable(rc) ? GP_ERR_NOT_SUPPORTED : status_for(rc), NO_DEVICE,
                    NULL, "nvmlSystemGetDriverVersion", rc, err);
    snprintf(buf, len, "%s", v);
    return GP_OK;
}

void gp_nvml_job_system(gp_runner *r, void *job)
{
    nvml_sys *j = job;
    nvml_lib *l = j->key.lib;
    gp_error_clear(&j->err);
    j->status = GP_OK;
    switch (j->op) {
    case NVML_OP_INIT: {
        gp_runner_doing(r, l->api.init_name);
        nvmlReturn_t rc = l->api.init();
        if (rc == NVML_SUCCESS) {
            pthread_mutex_lock(&l->mu);
            l->initialized = true;
            pthread_mutex_unlock(&l->mu);
        } else {
            j->status = gp_error_set(&j->err, GP_ERR_BACKEND_UNAVAILABLE,
                                     "nvml: %s failed: %s (NVML error %d)%s", l->api.init_name,
                                     error_text(l, rc), (int)rc, init_hint(rc));
        }
        break;
    }
    case NVML_OP_COUNT:
        j->status = sys_count(r, l, &j->count, &j->err);
        break;
    case NVML_OP_DRIVER:
        j->status = sys_driver(r, l, j->driver, sizeof j->driver, &j->err);
        break;
    case NVML_OP_SHUTDOWN:
        gp_runner_doing(r, "nvmlShutdown");
        l->api.shutdown();
        pthread_mutex_lock(&l->mu);
        l->shut_down = true;
        pthread_mutex_unlock(&l->mu);
        break;
    }
}

/* ------------------------------------------------------------ device jobs */

static gp_status check_index(gp_runner *r, nvml_lib *l, unsigned index, gp_error *err)
{
    unsigned count = 0;
    gp_status st = sys_count(r, l, &count, err);
    if (st != GP_OK || index < count)
        return st;
    if (count == 0)
        return gp_error_set(err, GP_ERR_DEVICE_NOT_FOUND,
                            "nvml: device %u does not exist: NVML sees no device", index);
    if (count == 1)
        return gp_error_set(err, GP_ERR_DEVICE_NOT_FOUND,
                            "nvml: device %u does not exist: 1 device (0)", index);
    return gp_error_set(err, GP_ERR_DEVICE_NOT_FOUND,
                        "nvml: device %u does not exist: %u devices (0-%u)", index, count,
                        count - 1);
}

static gp_status get_handle(gp_runner *r, nvml_lib *l, unsigned index, nvmlDevice_t *dev,
                            gp_error *err)
{
    gp_runner_doing(r, l->api.handle_name);
    nvmlReturn_t rc = l->api.get_handle(index, dev);
    if (rc == NVML_SUCCESS)
        return GP_OK;
    return fail(l, status_for(rc), index, NULL, l->api.handle_name, rc, err);
}

/* Name or UUID: "" when the device will not say (not an error). */
static gp_status get_text(gp_runner *r, nvml_lib *l, unsigned index, nvmlDevice_t dev,
                          nvmlReturn_t (*fn)(nvmlDevice_t, char *, unsigned), const char *fn_name,
                          const char *dev_name, char *buf, unsigned len, gp_error *err)
{
    buf[0] = '\0';
    gp_runner_doing(r, fn_name);
    nvmlReturn_t rc = fn(dev, buf, len);
    buf[len - 1] = '\0'; /* never trust the terminator */
    if (rc == NVML_SUCCESS)
        return GP_OK;
    buf[0] = '\0';
    if (gp_nvml_unavailable(rc))
        return GP_OK;
    return fail(l, status_for(rc), index, dev_name, fn_name, rc, err);
}

/* The device's memory: v2 where it answers, else v1.  Returns the NVML code
 * of the call that decided; *v2_ok is cleared when v2 is to be skipped. */
static nvmlReturn_t read_memory(gp_runner *r, const nvml_api *a, nvmlDevice_t dev, bool *v2_ok,
                                unsigned long long *used, unsigned long long *total,
                                const char **fn_name)
{
    if (a->get_mem_v2 && *v2_ok) {
        nvmlMemory_v2_t m2;
        memset(&m2, 0, sizeof m2);
        m2.version = NVML_MEMORY_V2_VERSION;
        *fn_name = "nvmlDeviceGetMemoryInfo_v2";
        gp_runner_doing(r, *fn_name);
        nvmlReturn_t rc = a->get_mem_v2(dev, &m2);
        if (rc == NVML_SUCCESS) {
            *used = m2.used;
            *total = m2.total;
            return rc;
        }
        /* Driver 580 answers an unknown version word with FUNCTION_NOT_FOUND
         * rather than ARGUMENT_VERSION_MISMATCH: both mean "ask v1". */
        if (rc != NVML_ERROR_ARGUMENT_VERSION_MISMATCH && rc != NVML_ERROR_NOT_SUPPORTED &&
            rc != NVML_ERROR_FUNCTION_NOT_FOUND)
            return rc;
        *v2_ok = false;
    }
    *fn_name = "nvmlDeviceGetMemoryInfo";
    if (!a->get_mem_v1)
        return NVML_ERROR_FUNCTION_NOT_FOUND;
    nvmlMemory_t m1;
    memset(&m1, 0, sizeof m1);
    gp_runner_doing(r, *fn_name);
    nvmlReturn_t rc = a->get_mem_v1(dev, &m1);
    if (rc == NVML_SUCCESS) {
        *used = m1.used;
        *total = m1.total;
    }
    return rc;
}

/* The handle of d's device: a whole GPU by its index, a MIG instance by
 * its slot under its parent's handle (*parent, when asked: NULL for a
 * whole GPU). */
static gp_status open_device(gp_runner *r, nvml_dev *d, nvmlDevice_t *dev, nvmlDevice_t *parent,
                             gp_error *err)
{
    nvml_lib *l = d->key.lib;
    unsigned gpu = d->is_mig ? d->parent : d->key.index;
    nvmlDevice_t p = NULL;
    gp_status st = check_index(r, l, gpu, err);
    if (st == GP_OK)
        st = get_handle(r, l, gpu, d->is_mig ? &p : dev, err);
    if (parent)
        *parent = p;
    if (st != GP_OK || !d->is_mig)
        return st;
    return gp_nvml_mig_open(r, d, p, dev, err);
}

/* The parent, ids and profile of MIG device d (its name in name). */
static gp_status mig_identity(gp_runner *r, nvml_dev *d, nvmlDevice_t dev, nvmlDevice_t parent,
                              const char *name, gp_mig_info *out, gp_error *err)
{
    nvml_lib *l = d->key.lib;
    out->is_mig = 1;
    out->parent_index = d->parent;
    gp_nvml_mig_profile(name, out->profile, sizeof out->profile);
    gp_status st = get_text(r, l, d->parent, parent, l->api.get_name, "nvmlDeviceGetName", NULL,
                            out->parent_name, sizeof out->parent_name, err);
    if (st == GP_OK)
        st = get_text(r, l, d->parent, parent, l->api.get_uuid, "nvmlDeviceGetUUID",
                      out->parent_name, out->parent_uuid, sizeof out->parent_uuid, err);
    gp_nvml_mig_ids(r, &l->api, dev, &out->gpu_instance_id, &out->compute_instance_id);
    return st;
}

static gp_status device_info(gp_runner *r, nvml_dev *d, gp_device_info *out, gp_error *err)
{
    nvml_lib *l = d->key.lib;
    unsigned index = d->key.index;
    memset(out, 0, sizeof *out);
    out->index = index;
    nvmlDevice_t dev = NULL, parent = NULL;
    gp_status st = open_device(r, d, &dev, &parent, err);
    if (st == GP_OK)
        st = get_text(r, l, index, dev, l->api.get_name, "nvmlDeviceGetName", NULL, out->name,
                      sizeof out->name, err);
    if (st == GP_OK)
        st = get_text(r, l, index, dev, l->api.get_uuid, "nvmlDeviceGetUUID", out->name, out->uuid,
                      sizeof out->uuid, err);
    if (st == GP_OK && d->is_mig)
        st = mig_identity(r, d, dev, parent, out->name, &out->mig, err);
    if (st != GP_OK)
        return st;
    /* The bus id (dcgm-exporter's pci_bus_id label): a MIG instance's is
     * its GPU's.  Optional: unknown is "". */
    nvmlPciInfo_t pci;
    memset(&pci, 0, sizeof pci);
    gp_runner_doing(r, "nvmlDeviceGetPciInfo_v3");
    if (l->api.get_pci && l->api.get_pci(d->is_mig ? parent : dev, &pci) == NVML_SUCCESS)
        snprintf(out->pci_bus_id, sizeof out->pci_bus_id, "%.*s", (int)sizeof pci.busId - 1,
                 pci.busId);
    bool v2_ok = true;
    unsigned long long used = 0, total = 0;
    const char *fn = "";
    nvmlReturn_t rc = read_memory(r, &l->api, dev, &v2_ok, &used, &total, &fn);
    if (rc == NVML_SUCCESS) {
        out->mem_total_bytes = total;
        out->valid |= GP_M_MEM_TOTAL;
    } else if (!gp_nvml_unavailable(rc)) {
        return fail(l, status_for(rc), index, out->name, fn, rc, err);
    }
    return GP_OK;
}

void gp_nvml_job_info(gp_runner *r, void *job)
{
    nvml_dev *d = job;
    gp_error_clear(&d->err);
    d->status = device_info(r, d, &d->info, &d->err);
}

static gp_status mig_list(gp_runner *r, nvml_dev *d, gp_error *err)
{
    nvml_lib *l = d->key.lib;
    unsigned index = d->key.index;
    d->n_mig = 0;
    if (!l->api.mig_mode)
        return GP_OK;
    nvmlDevice_t dev = NULL;
    gp_status st = check_index(r, l, index, err);
    if (st == GP_OK)
        st = get_handle(r, l, index, &dev, err);
    const char *fn = "";
    nvmlReturn_t rc = NVML_SUCCESS;
    if (st == GP_OK)
        rc = gp_nvml_mig_slots(r, &l->api, dev, d->mig_slots, &d->n_mig, &fn);
    if (st == GP_OK && rc != NVML_SUCCESS)
        st = fail(l, status_for(rc), index, NULL, fn, rc, err);
    return st;
}

void gp_nvml_job_mig_list(gp_runner *r, void *job)
{
    nvml_dev *d = job;
    gp_error_clear(&d->err);
    d->status = mig_list(r, d, &d->err);
}

/* ------------------------------------------------------------------ GPM */

/* Frees the run's GPM samples (a sample left from a run whose stop did not
 * come, too). */
static void gpm_release(gp_runner *r, nvml_dev *d)
{
    const nvml_api *a = &d->key.lib->api;
    nvmlGpmSample_t *s[2] = {&d->gpm_prev, &d->gpm_cur};
    for (int i = 0; i < 2; i++) {
        if (*s[i] && a->gpm_free) {
            gp_runner_doing(r, "nvmlGpmSampleFree");
            a->gpm_free(*s[i]);
        }
        *s[i] = NULL;
    }
    d->gpm_ok = d->gpm_have_prev = false;
}

/* GPM for this run where the device has it: two samples.  A device or
 * driver without GPM, or one that refuses a sample, is sampled without. */
static gp_status gpm_setup(gp_runner *r, nvml_dev *d, gp_error *err)
{
    const nvml_api *a = &d->key.lib->api;
    gpm_release(r, d);
    if (!a->gpm_query)
        return GP_OK;
    nvmlGpmSupport_t sup = {NVML_GPM_SUPPORT_VERSION, 0};
    nvmlReturn_t rc = gp_nvml_gpm_support(r, d, &sup);
    if (rc == NVML_ERROR_GPU_IS_LOST)
        return fail(d->key.lib, GP_ERR_DEVICE_LOST, d->key.index, d->name,
                    "nvmlGpmQueryDeviceSupport", rc, err);
    if (rc != NVML_SUCCESS || !sup.isSupportedDevice)
        return GP_OK;
    gp_runner_doing(r, "nvmlGpmSampleAlloc");
    if (a->gpm_alloc(&d->gpm_prev) != NVML_SUCCESS) {
        d->gpm_prev = NULL;
        return GP_OK;
    }
    gp_runner_doing(r, "nvmlGpmSampleAlloc");
    if (a->gpm_alloc(&d->gpm_cur) != NVML_SUCCESS) {
        d->gpm_cur = NULL;
        gpm_release(r, d);
        return GP_OK;
    }
    d->gpm_ok = true;
    return GP_OK;
}

void gp_nvml_job_stop(gp_runner *r, void *job)
{
    nvml_dev *d = job;
    gp_error_clear(&d->err);
    gpm_release(r, d);
    d->status = GP_OK;
}

/* The handle and name of the device for the run d->gen, the newer calls
 * tried afresh. */
static gp_status start_device(gp_runner *r, nvml_dev *d, gp_error *err)
{
    nvml_lib *l = d->key.lib;
    unsigned index = d->key.index;
    d->started_gen = 0;
    d->mem_v2_ok = true;
    d->temp_v_ok = true;
    d->proc_last_ts = 0;
    d->proc_have_util = false;
    d->field_metrics = l->api.get_fields ? NVML_FIELD_METRICS : 0;
    d->mem_temp_field_ok = l->api.get_fields != NULL;
    d->health_read_ns = 0;
    d->name[0] = '\0';
    gp_status st = open_device(r, d, &d->dev, &d->parent_dev, err);
    if (st == GP_OK)
        st = get_text(r, l, index, d->dev, l->api.get_name, "nvmlDeviceGetName", NULL, d->name,
                      sizeof d->name, err);
    /* A MIG instance's GPM is its GPU instance's, through its parent. */
    if (st == GP_OK)
        st = gpm_setup(r, d, err);
    if (st == GP_OK)
        d->started_gen = d->gen;
    return st;
}

void gp_nvml_job_start(gp_runner *r, void *job)
{
    nvml_dev *d = job;
    gp_error_clear(&d->err);
    d->status = start_device(r, d, &d->err);
}

/* ---------------------------------------------------------------- reading */

/* Per metric: success sets the bit, "unavailable" leaves it clear, anything
 * else ends the read with that function's name and code. */
#define METRIC(call, fn_name, on_success)                                                          \
    do {                                                                                           \
        gp_runner_doing(r, (fn_name));                                                             \
        nvmlReturn_t rc_ = (call);                                                                 \
        if (rc_ == NVML_SUCCESS) {                                                                 \
            on_success;                                                                            \
        } else if (!gp_nvml_unavailable(rc_)) {                                                    \
            out->valid = 0; /* a failed read reports nothing */                                    \
            return fail(d->key.lib, status_for(rc_), d->key.index, d->name, (fn_name), rc_, err);  \
        }                                                                                          \
    } while (0)

/* Each step below reads one group of metrics of device d into out: GP_OK
 * when every metric was read or is unavailable, else the failure (out
 * cleared of valid bits, as METRIC does). */

static gp_status read_utilization(gp_runner *r, nvml_dev *d, gp_device_sample *out, gp_error *err)
{
    nvmlUtilization_t u = {0, 0};
    METRIC(d->key.lib->api.get_util(d->dev, &u), "nvmlDeviceGetUtilizationRates", {
        out->util_gpu_pct = u.gpu;
        out->util_mem_pct = u.memory;
        out->valid |= GP_M_UTIL_GPU | GP_M_UTIL_MEM;
    });
    return GP_OK;
}

static gp_status read_memory_use(gp_runner *r, nvml_dev *d, gp_device_sample *out, gp_error *err)
{
    const nvml_api *a = &d->key.lib->api;
    if (a->get_mem_v2 || a->get_mem_v1) {
        unsigned long long used = 0, total = 0;
        const char *fn = "nvmlDeviceGetMemoryInfo";
        METRIC(read_memory(r, a, d->dev, &d->mem_v2_ok, &used, &total, &fn), fn, {
            out->mem_used_bytes = used;
            out->mem_total_bytes = total;
            out->valid |= GP_M_MEM_USED | GP_M_MEM_TOTAL;
        });
    }
    return GP_OK;
}

/* Power always; the energy counter only when flags ask for it (slow).
 * Either skipped when the field values gave it (nvml_fields.c). */
static gp_status read_power_energy(gp_runner *r, nvml_dev *d, gp_device_sample *out, gp_error *err)
{
    const nvml_api *a = &d->key.lib->api;
    if (a->get_power && !(out->valid & GP_M_POWER)) {
        unsigned power_mw = 0;
        METRIC(a->get_power(d->dev, &power_mw), "nvmlDeviceGetPowerUsage", {
            out->power_mw = power_mw;
            out->valid |= GP_M_POWER;
        });
    }
    if (a->get_energy && (d->flags & GP_READ_ENERGY) && !(out->valid & GP_M_ENERGY)) {
        unsigned long long energy_mj = 0;
        METRIC(a->get_energy(d->dev, &energy_mj), "nvmlDeviceGetTotalEnergyConsumption", {
            out->energy_mj = energy_mj;
            out->valid |= GP_M_ENERGY;
        });
    }
    return GP_OK;
}

/* nvmlDeviceGetTemperatureV while the driver takes it, else the older call. */
static gp_status read_temperature(gp_runner *r, nvml_dev *d, gp_device_sample *out, gp_error *err)
{
    const nvml_api *a = &d->key.lib->api;
    if (a->get_temp_v && d->temp_v_ok) {
        nvmlTemperature_t t;
        memset(&t, 0, sizeof t);
        t.version = NVML_TEMPERATURE_V1_VERSION;
        t.sensorType = NVML_TEMPERATURE_GPU;
        gp_runner_doing(r, "nvmlDeviceGetTemperatureV");
        nvmlReturn_t rc = a->get_temp_v(d->dev, &t);
        if (rc == NVML_ERROR_ARGUMENT_VERSION_MISMATCH || rc == NVML_ERROR_FUNCTION_NOT_FOUND ||
            (rc == NVML_ERROR_NOT_SUPPORTED && a->get_temp_v1)) {
            d->temp_v_ok = false; /* ask the older call from now on */
        } else {
            METRIC(rc, "nvmlDeviceGetTemperatureV", {
                out->temp_c = t.temperature;
                out->valid |= GP_M_TEMP;
            });
            return GP_OK;
        }
    }
    if (a->get_temp_v1) {
        unsigned temp_c = 0;
        METRIC(a->get_temp_v1(d->dev, NVML_TEMPERATURE_GPU, &temp_c), "nvmlDeviceGetTemperature", {
            out->temp_c = (int32_t)temp_c;
            out->valid |= GP_M_TEMP;
        });
    }
    return GP_OK;
}

/* The SM and memory clocks and the throttle reasons. */
static gp_status read_clocks(gp_runner *r, nvml_dev *d, gp_device_sample *out, gp_error *err)
{
    const nvml_api *a = &d->key.lib->api;
    if (a->get_clock) {
        unsigned sm_mhz = 0, mem_mhz = 0;
        METRIC(a->get_clock(d->dev, NVML_CLOCK_SM, &sm_mhz), "nvmlDeviceGetClockInfo", {
            out->clock_sm_mhz = sm_mhz;
            out->valid |= GP_M_CLOCK_SM;
        });
        METRIC(a->get_clock(d->dev, NVML_CLOCK_MEM, &mem_mhz), "nvmlDeviceGetClockInfo", {
            out->clock_mem_mhz = mem_mhz;
            out->valid |= GP_M_CLOCK_MEM;
        });
    }
    if (a->get_reasons) {
        unsigned long long reasons = 0;
        METRIC(a->get_reasons(d->dev, &reasons), a->reasons_name, {
            out->throttle_reasons = reasons;
            out->valid |= GP_M_THROTTLE;
        });
    }
    return GP_OK;
}

/* Off by default: each call blocks ~20 ms in real NVML. */
static gp_status read_pcie(gp_runner *r, nvml_dev *d, gp_device_sample *out, gp_error *err)
{
    const nvml_api *a = &d->key.lib->api;
    if (d->sample_pcie && a->get_pcie) {
        unsigned tx_kbps = 0, rx_kbps = 0;
        METRIC(a->get_pcie(d->dev, NVML_PCIE_UTIL_TX_BYTES, &tx_kbps),
               "nvmlDeviceGetPcieThroughput", {
                   out->pcie_tx_kbps = tx_kbps;
                   out->valid |= GP_M_PCIE_TX;
               });
        METRIC(a->get_pcie(d->dev, NVML_PCIE_UTIL_RX_BYTES, &rx_kbps),
               "nvmlDeviceGetPcieThroughput", {
                   out->pcie_rx_kbps = rx_kbps;
                   out->valid |= GP_M_PCIE_RX;
               });
    }
    return GP_OK;
}

/* The metrics asked of nvmlGpmMetricsGet, in gp_gpm_metric order. */
static const unsigned gpm_ids[GP_GPM_COUNT] = {
    [GP_GPM_SM_ACTIVE] = NVML_GPM_METRIC_SM_UTIL,
    [GP_GPM_SM_OCCUPANCY] = NVML_GPM_METRIC_SM_OCCUPANCY,
    [GP_GPM_TENSOR_ACTIVE] = NVML_GPM_METRIC_ANY_TENSOR_UTIL,
    [GP_GPM_TENSOR_DFMA] = NVML_GPM_METRIC_DFMA_TENSOR_UTIL,
    [GP_GPM_TENSOR_HMMA] = NVML_GPM_METRIC_HMMA_TENSOR_UTIL,
    [GP_GPM_TENSOR_IMMA] = NVML_GPM_METRIC_IMMA_TENSOR_UTIL,
    [GP_GPM_DRAM_ACTIVE] = NVML_GPM_METRIC_DRAM_BW_UTIL,
    [GP_GPM_FP64_ACTIVE] = NVML_GPM_METRIC_FP64_UTIL,
    [GP_GPM_FP32_ACTIVE] = NVML_GPM_METRIC_FP32_UTIL,
    [GP_GPM_FP16_ACTIVE] = NVML_GPM_METRIC_FP16_UTIL,
    [GP_GPM_PCIE_TX] = NVML_GPM_METRIC_PCIE_TX_PER_SEC,
    [GP_GPM_PCIE_RX] = NVML_GPM_METRIC_PCIE_RX_PER_SEC,
    [GP_GPM_NVLINK_TX] = NVML_GPM_METRIC_NVLINK_TOTAL_TX_PER_SEC,
    [GP_GPM_NVLINK_RX] = NVML_GPM_METRIC_NVLINK_TOTAL_RX_PER_SEC,
};

/* Copies the metrics NVML computed: only the first numMetrics entries are
 * read, each by its own metricId (never by position), and only a finite,
 * non-negative value with a SUCCESS code sets its bit. */
static void gpm_take(const nvmlGpmMetricsGet_t *m, gp_device_sample *out)
{
    unsigned n = m->numMetrics < NVML_GPM_METRIC_MAX ? m->numMetrics : NVML_GPM_METRIC_MAX;
    for (unsigned k = 0; k < n; k++) {
        const nvmlGpmMetric_t *e = &m->metrics[k];
        double v = e->value;
        if (e->nvmlReturn != NVML_SUCCESS || !(v >= 0.0) || v > 1e300)
            continue;
        for (unsigned i = 0; i < GP_GPM_COUNT; i++) {
            if (gpm_ids[i] != e->metricId)
                continue;
            /* NVML gives PCIe and NVLink in MiB/s (nvml.h's comments);
             * ours are bytes/s.  Percentages above 100 are rounding noise,
             * as for util.gpu. */
            if (i >= GP_GPM_PCIE_TX)
                out->gpm[i] = v * 1048576.0;
            else
                out->gpm[i] = v > 100.0 ? 100.0 : v;
            out->valid |= GP_M_GPM(i);
        }
    }
}

/* A GPM sample now, and the metrics since the previous one.  "Unavailable"
 * codes leave the bits clear (the next read starts a new pair); a lost GPU
 * fails the read like any metric. */
static gp_status read_gpm(gp_runner *r, nvml_dev *d, gp_device_sample *out, gp_error *err)
{
    if (!d->gpm_ok)
        return GP_OK;
    const nvml_api *a = &d->key.lib->api;
    bool have_prev = d->gpm_have_prev;
    d->gpm_have_prev = false;
    METRIC(gp_nvml_gpm_sample(r, d, d->gpm_cur), GP_NVML_GPM_SAMPLE_FN(d),
           { d->gpm_have_prev = true; });
    if (!d->gpm_have_prev || !have_prev)
        goto swap;
    nvmlGpmMetricsGet_t *m = &d->gpm_req;
    memset(m, 0, offsetof(nvmlGpmMetricsGet_t, metrics) + GP_GPM_COUNT * sizeof m->metrics[0]);
    m->version = NVML_GPM_METRICS_GET_VERSION;
    m->numMetrics = GP_GPM_COUNT;
    m->sample1 = d->gpm_prev;
    m->sample2 = d->gpm_cur;
    for (unsigned i = 0; i < GP_GPM_COUNT; i++)
        m->metrics[i].metricId = gpm_ids[i];
    METRIC(a->gpm_metrics(m), "nvmlGpmMetricsGet", gpm_take(m, out));
swap:
    if (d->gpm_have_prev) {
        nvmlGpmSample_t t = d->gpm_prev;
        d->gpm_prev = d->gpm_cur;
        d->gpm_cur = t;
    }
    return GP_OK;
}

/* read() allocates nothing and formats nothing unless it fails. */
void gp_nvml_job_read(gp_runner *r, void *job)
{
    nvml_dev *d = job;
    gp_device_sample *out = &d->sample;
    gp_error *err = &d->err;
    memset(out, 0, sizeof *out);
    gp_status st = GP_OK;
    if (d->started_gen != d->gen) /* start() gave up on this device: start it now */
        st = start_device(r, d, err);
    if (st == GP_OK)
        st = read_utilization(r, d, out, err);
    if (st == GP_OK)
        st = read_memory_use(r, d, out, err);
    /* A MIG instance has its own memory and GPU instance's GPM only: power,
     * temperature, clocks and PCIe are its parent's (n/a here). */
    if (d->is_mig) {
        d->status = st == GP_OK ? read_gpm(r, d, out, err) : st;
        return;
    }
    if (st == GP_OK)
        gp_nvml_health_begin(d, gp_now_mono_ns());
    if (st == GP_OK)
        (void)gp_nvml_read_fields(r, d, out);
    if (st == GP_OK)
        st = read_power_energy(r, d, out, err);
    if (st == GP_OK)
        st = read_temperature(r, d, out, err);
    if (st == GP_OK)
        st = read_clocks(r, d, out, err);
    if (st == GP_OK)
        st = read_pcie(r, d, out, err);
    if (st == GP_OK)
        st = read_gpm(r, d, out, err);
    if (st == GP_OK)
        gp_nvml_read_procs(r, d, out);
    if (st == GP_OK)
        gp_nvml_list_procs(r, d);
    if (st == GP_OK)
        gp_nvml_read_health(r, d, out);
    d->status = st;
}
