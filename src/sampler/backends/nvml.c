/*
 * sampler/backends/nvml.c - the NVML backend (polled), libnvidia-ml loaded with dlopen.
 *
 * Promises: open() loads the library (cfg->nvml_library, else
 * libnvidia-ml.so.1, then libnvidia-ml.so), resolves the newest symbol of
 * each function with a fallback to the older name, and initialises NVML;
 * on any failure it unloads what it loaded and says why (the library and
 * dlerror's text, the missing symbol, or NVML's own error string and code).
 * A metric whose function is absent or answers "not supported / no
 * permission / no data" keeps its valid bit clear and is never an error;
 * GPU_IS_LOST is GP_ERR_DEVICE_LOST and any other code GP_ERR_BACKEND, with
 * the device, the function and the code in the message.  read() allocates
 * nothing and formats nothing unless it fails.  Every message starts with
 * "nvml: ".  State lives in the context only.
 */
#include "../../util/error.h"
#include "backend.h"
#include "nvml_abi.h"
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

typedef struct nvml_api {
    nvml_init_fn init;
    nvml_shutdown_fn shutdown;
    nvml_error_string_fn error_string;
    nvml_device_get_count_fn get_count;
    nvml_device_get_handle_by_index_fn get_handle;
    nvml_device_get_name_fn get_name;
    nvml_device_get_uuid_fn get_uuid;
    nvml_device_get_utilization_rates_fn get_util;
    /* Optional: NULL when the library lacks them. */
    nvml_device_get_memory_info_v2_fn get_mem_v2;
    nvml_device_get_memory_info_fn get_mem_v1;
    nvml_device_get_power_usage_fn get_power;
    nvml_device_get_total_energy_consumption_fn get_energy;
    nvml_device_get_temperature_v_fn get_temp_v;
    nvml_device_get_temperature_fn get_temp_v1;
    nvml_device_get_clock_info_fn get_clock;
    nvml_device_get_clocks_event_reasons_fn get_reasons;
    nvml_device_get_pcie_throughput_fn get_pcie;
    nvml_system_get_driver_version_fn get_driver_version;

    /* The symbol names actually resolved, for error messages. */
    const char *init_name;
    const char *count_name;
    const char *handle_name;
    const char *reasons_name;
} nvml_api;

typedef struct nvml_slot {
    unsigned index;
    nvmlDevice_t dev;
    /* Cleared for good once the newer call answers that it does not know
     * the struct version (older driver behind a newer library) or is not
     * supported, so later reads go straight to the older call. */
    bool mem_v2_ok;
    bool temp_v_ok;
    char name[NVML_DEVICE_NAME_BUFFER_SIZE];
} nvml_slot;

typedef struct nvml_ctx {
    void *lib;
    char lib_name[512]; /* as given to dlopen, for messages */
    bool initialized;
    bool sample_pcie;
    nvml_api api;
    nvml_slot *slots;
    size_t n_slots;
} nvml_ctx;

/* Codes that mean "this metric is not available here", never an error. */
static bool is_unavailable(nvmlReturn_t rc)
{
    switch (rc) {
    case NVML_ERROR_NOT_SUPPORTED:
    case NVML_ERROR_NO_PERMISSION:
    case NVML_ERROR_NOT_FOUND:
    case NVML_ERROR_FUNCTION_NOT_FOUND:
    case NVML_ERROR_NO_DATA:
    case NVML_ERROR_NOT_READY:
        return true;
    default:
        return false;
    }
}

static const char *error_text(const nvml_ctx *c, nvmlReturn_t rc)
{
    const char *s = c->api.error_string ? c->api.error_string(rc) : NULL;
    return s && *s ? s : "unknown NVML error";
}

/* ------------------------------------------------------------------ loading */

static void *sym(void *lib, const char *name)
{
    dlerror(); /* a NULL result is only an error if dlerror says so */
    void *p = dlsym(lib, name);
    return dlerror() ? NULL : p;
}

/* The newer symbol if present, else the older one (either may be NULL). */
static nvml_sym sym2(void *lib, const char *newer, const char *older)
{
    nvml_sym s = {sym(lib, newer), newer};
    if (!s.fn && older) {
        s.fn = sym(lib, older);
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

static gp_status load_library(nvml_ctx *c, const char *path_cfg, gp_error *err)
{
    static const char *const defaults[] = {"libnvidia-ml.so.1", "libnvidia-ml.so"};
    if (path_cfg && *path_cfg) {
        c->lib = dlopen(path_cfg, RTLD_NOW | RTLD_LOCAL);
        if (!c->lib)
            return gp_error_set(err, GP_ERR_BACKEND_UNAVAILABLE,
                                "nvml: cannot load %s: %s: check the nvml_library path", path_cfg,
                                strip_path(dlerror(), path_cfg));
        snprintf(c->lib_name, sizeof c->lib_name, "%s", path_cfg);
        return GP_OK;
    }
    char first_error[GP_ERROR_MESSAGE_MAX / 2] = "";
    for (size_t i = 0; i < sizeof defaults / sizeof defaults[0]; i++) {
        c->lib = dlopen(defaults[i], RTLD_NOW | RTLD_LOCAL);
        if (c->lib) {
            snprintf(c->lib_name, sizeof c->lib_name, "%s", defaults[i]);
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

static gp_status missing(const nvml_ctx *c, const char *newer, const char *older, gp_error *err)
{
    if (older)
        return gp_error_set(err, GP_ERR_BACKEND_UNAVAILABLE,
                            "nvml: %s exports neither %s nor %s: it is not NVML, or an NVML too "
                            "old for this library",
                            c->lib_name, newer, older);
    return gp_error_set(err, GP_ERR_BACKEND_UNAVAILABLE,
                        "nvml: %s does not export %s: it is not NVML, or an NVML too old for "
                        "this library",
                        c->lib_name, newer);
}

/* Stores a dlsym result in a function pointer without a cast ISO C lacks. */
#define SET_FN(dst, p)                                                                             \
    do {                                                                                           \
        void *p_ = (p);                                                                            \
        _Static_assert(sizeof(dst) == sizeof p_, "function and data pointers differ in size");     \
        memcpy(&(dst), &p_, sizeof p_);                                                            \
    } while (0)

/* A required function: the newer name, else the older; absent is fatal. */
#define REQUIRE(dst, newer, older, used_name)                                                      \
    do {                                                                                           \
        nvml_sym s_ = sym2(c->lib, newer, older);                                                  \
        if (!s_.fn)                                                                                \
            return missing(c, newer, older, err);                                                  \
        SET_FN(dst, s_.fn);                                                                        \
        used_name = s_.name;                                                                       \
    } while (0)

static gp_status resolve(nvml_ctx *c, gp_error *err)
{
    nvml_api *a = &c->api;
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
    SET_FN(a->get_mem_v2, sym(c->lib, "nvmlDeviceGetMemoryInfo_v2"));
    SET_FN(a->get_mem_v1, sym(c->lib, "nvmlDeviceGetMemoryInfo"));
    SET_FN(a->get_power, sym(c->lib, "nvmlDeviceGetPowerUsage"));
    SET_FN(a->get_energy, sym(c->lib, "nvmlDeviceGetTotalEnergyConsumption"));
    SET_FN(a->get_temp_v, sym(c->lib, "nvmlDeviceGetTemperatureV"));
    SET_FN(a->get_temp_v1, sym(c->lib, "nvmlDeviceGetTemperature"));
    SET_FN(a->get_clock, sym(c->lib, "nvmlDeviceGetClockInfo"));
    nvml_sym r = sym2(c->lib, "nvmlDeviceGetCurrentClocksEventReasons",
                      "nvmlDeviceGetCurrentClocksThrottleReasons");
    SET_FN(a->get_reasons, r.fn);
    a->reasons_name = r.name;
    SET_FN(a->get_pcie, sym(c->lib, "nvmlDeviceGetPcieThroughput"));
    SET_FN(a->get_driver_version, sym(c->lib, "nvmlSystemGetDriverVersion"));
    return GP_OK;
}

static void nvml_close(void *ctx)
{
    nvml_ctx *c = ctx;
    if (!c)
        return;
    free(c->slots);
    if (c->initialized)
        c->api.shutdown();
    if (c->lib)
        dlclose(c->lib);
    free(c);
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

static gp_status nvml_open(const gp_backend_config *cfg, void **ctx, gp_error *err)
{
    *ctx = NULL;
    nvml_ctx *c = calloc(1, sizeof *c);
    if (!c)
        return gp_error_set(err, GP_ERR_NO_MEMORY, "nvml: out of memory");
    c->sample_pcie = cfg && cfg->sample_pcie;
    gp_status st = load_library(c, cfg ? cfg->nvml_library : NULL, err);
    if (st == GP_OK)
        st = resolve(c, err);
    if (st == GP_OK) {
        nvmlReturn_t rc = c->api.init();
        if (rc == NVML_SUCCESS)
            c->initialized = true;
        else
            st = gp_error_set(err, GP_ERR_BACKEND_UNAVAILABLE,
                              "nvml: %s failed: %s (NVML error %d)%s", c->api.init_name,
                              error_text(c, rc), (int)rc, init_hint(rc));
    }
    if (st != GP_OK) {
        nvml_close(c);
        return st;
    }
    *ctx = c;
    return GP_OK;
}

/* -------------------------------------------------------------- discovery */

#define NO_DEVICE UINT32_MAX

/* Fills err for a failed call: "nvml: [device I (NAME): ]TEXT (FN returned
 * RC)", with TEXT NVML's own error string.  Returns the status. */
static gp_status fail(const nvml_ctx *c, gp_status st, unsigned index, const char *name,
                      const char *fn, nvmlReturn_t rc, gp_error *err)
{
    if (index == NO_DEVICE)
        return gp_error_set(err, st, "nvml: %s (%s returned %d)", error_text(c, rc), fn, rc);
    if (name && *name)
        return gp_error_set(err, st, "nvml: device %u (%s): %s (%s returned %d)", index, name,
                            error_text(c, rc), fn, rc);
    return gp_error_set(err, st, "nvml: device %u: %s (%s returned %d)", index, error_text(c, rc),
                        fn, rc);
}

static gp_status status_for(nvmlReturn_t rc)
{
    return rc == NVML_ERROR_GPU_IS_LOST ? GP_ERR_DEVICE_LOST : GP_ERR_BACKEND;
}

static gp_status nvml_device_count(void *ctx, unsigned *count, gp_error *err)
{
    nvml_ctx *c = ctx;
    unsigned n = 0;
    nvmlReturn_t rc = c->api.get_count(&n);
    if (rc != NVML_SUCCESS)
        return fail(c, status_for(rc), NO_DEVICE, NULL, c->api.count_name, rc, err);
    *count = n;
    return GP_OK;
}

static gp_status check_index(nvml_ctx *c, unsigned index, gp_error *err)
{
    unsigned count = 0;
    gp_status st = nvml_device_count(c, &count, err);
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

static gp_status get_handle(nvml_ctx *c, unsigned index, nvmlDevice_t *dev, gp_error *err)
{
    nvmlReturn_t rc = c->api.get_handle(index, dev);
    if (rc == NVML_SUCCESS)
        return GP_OK;
    return fail(c, status_for(rc), index, NULL, c->api.handle_name, rc, err);
}

/* Name or UUID: "" when the device will not say (not an error). */
static gp_status get_text(nvml_ctx *c, unsigned index, nvmlDevice_t dev,
                          nvmlReturn_t (*fn)(nvmlDevice_t, char *, unsigned), const char *fn_name,
                          const char *dev_name, char *buf, unsigned len, gp_error *err)
{
    buf[0] = '\0';
    nvmlReturn_t rc = fn(dev, buf, len);
    buf[len - 1] = '\0'; /* never trust the terminator */
    if (rc == NVML_SUCCESS)
        return GP_OK;
    buf[0] = '\0';
    if (is_unavailable(rc))
        return GP_OK;
    return fail(c, status_for(rc), index, dev_name, fn_name, rc, err);
}

/* The device's memory: v2 where it answers, else v1.  Returns the NVML code
 * of the call that decided; *v2_ok is cleared when v2 is to be skipped. */
static nvmlReturn_t read_memory(const nvml_api *a, nvmlDevice_t dev, bool *v2_ok,
                                unsigned long long *used, unsigned long long *total,
                                const char **fn_name)
{
    if (a->get_mem_v2 && *v2_ok) {
        nvmlMemory_v2_t m2;
        memset(&m2, 0, sizeof m2);
        m2.version = NVML_MEMORY_V2_VERSION;
        *fn_name = "nvmlDeviceGetMemoryInfo_v2";
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
    if (!a->get_mem_v1) {
        *fn_name = "nvmlDeviceGetMemoryInfo";
        return NVML_ERROR_FUNCTION_NOT_FOUND;
    }
    nvmlMemory_t m1;
    memset(&m1, 0, sizeof m1);
    *fn_name = "nvmlDeviceGetMemoryInfo";
    nvmlReturn_t rc = a->get_mem_v1(dev, &m1);
    if (rc == NVML_SUCCESS) {
        *used = m1.used;
        *total = m1.total;
    }
    return rc;
}

static gp_status nvml_device_info(void *ctx, unsigned index, gp_device_info *out, gp_error *err)
{
    nvml_ctx *c = ctx;
    memset(out, 0, sizeof *out);
    out->index = index;
    gp_status st = check_index(c, index, err);
    nvmlDevice_t dev = NULL;
    if (st == GP_OK)
        st = get_handle(c, index, &dev, err);
    if (st == GP_OK)
        st = get_text(c, index, dev, c->api.get_name, "nvmlDeviceGetName", NULL, out->name,
                      sizeof out->name, err);
    if (st == GP_OK)
        st = get_text(c, index, dev, c->api.get_uuid, "nvmlDeviceGetUUID", out->name, out->uuid,
                      sizeof out->uuid, err);
    if (st != GP_OK)
        return st;
    bool v2_ok = true;
    unsigned long long used = 0, total = 0;
    const char *fn = "";
    nvmlReturn_t rc = read_memory(&c->api, dev, &v2_ok, &used, &total, &fn);
    if (rc == NVML_SUCCESS) {
        out->mem_total_bytes = total;
        out->valid |= GP_M_MEM_TOTAL;
    } else if (!is_unavailable(rc)) {
        return fail(c, status_for(rc), index, out->name, fn, rc, err);
    }
    return GP_OK;
}

static gp_status nvml_driver_version(void *ctx, char *buf, size_t len, gp_error *err)
{
    nvml_ctx *c = ctx;
    if (len)
        buf[0] = '\0';
    if (!c->api.get_driver_version)
        return gp_error_set(err, GP_ERR_NOT_SUPPORTED,
                            "nvml: %s does not export nvmlSystemGetDriverVersion", c->lib_name);
    char v[NVML_DRIVER_VERSION_BUFFER_SIZE] = "";
    nvmlReturn_t rc = c->api.get_driver_version(v, sizeof v);
    v[sizeof v - 1] = '\0';
    if (rc != NVML_SUCCESS)
        return fail(c, is_unavailable(rc) ? GP_ERR_NOT_SUPPORTED : status_for(rc), NO_DEVICE, NULL,
                    "nvmlSystemGetDriverVersion", rc, err);
    if (len)
        snprintf(buf, len, "%s", v);
    return GP_OK;
}

/* --------------------------------------------------------------- sampling */

static void nvml_stop(void *ctx)
{
    nvml_ctx *c = ctx;
    if (!c)
        return;
    free(c->slots);
    c->slots = NULL;
    c->n_slots = 0;
}

static gp_status nvml_start(void *ctx, const unsigned *indices, size_t n, uint64_t interval_ns,
                            gp_error *err)
{
    nvml_ctx *c = ctx;
    (void)interval_ns; /* polled: the sampler keeps the time */
    nvml_stop(c);
    nvml_slot *slots = calloc(n ? n : 1, sizeof *slots);
    if (!slots)
        return gp_error_set(err, GP_ERR_NO_MEMORY, "nvml: out of memory for %zu devices", n);
    gp_status st = GP_OK;
    for (size_t i = 0; i < n && st == GP_OK; i++) {
        nvml_slot *s = &slots[i];
        s->index = indices[i];
        s->mem_v2_ok = true;
        s->temp_v_ok = true;
        st = check_index(c, s->index, err);
        if (st == GP_OK)
            st = get_handle(c, s->index, &s->dev, err);
        if (st == GP_OK)
            st = get_text(c, s->index, s->dev, c->api.get_name, "nvmlDeviceGetName", NULL, s->name,
                          sizeof s->name, err);
    }
    if (st != GP_OK) {
        free(slots);
        return st;
    }
    c->slots = slots;
    c->n_slots = n;
    return GP_OK;
}

/* Per metric: success sets the bit, "unavailable" leaves it clear, anything
 * else ends the read with that function's name and code. */
#define METRIC(call, fn_name, on_success)                                                          \
    do {                                                                                           \
        nvmlReturn_t rc_ = (call);                                                                 \
        if (rc_ == NVML_SUCCESS) {                                                                 \
            on_success;                                                                            \
        } else if (!is_unavailable(rc_)) {                                                         \
            out->valid = 0; /* a failed read reports nothing */                                    \
            return fail(c, status_for(rc_), s->index, s->name, (fn_name), rc_, err);               \
        }                                                                                          \
    } while (0)

/* Each step below reads one group of metrics of slot s into out: GP_OK
 * when every metric was read or is unavailable, else the failure (out
 * cleared of valid bits, as METRIC does). */

static gp_status read_utilization(nvml_ctx *c, nvml_slot *s, gp_device_sample *out, gp_error *err)
{
    nvmlUtilization_t u = {0, 0};
    METRIC(c->api.get_util(s->dev, &u), "nvmlDeviceGetUtilizationRates", {
        out->util_gpu_pct = u.gpu;
        out->util_mem_pct = u.memory;
        out->valid |= GP_M_UTIL_GPU | GP_M_UTIL_MEM;
    });
    return GP_OK;
}

static gp_status read_memory_use(nvml_ctx *c, nvml_slot *s, gp_device_sample *out, gp_error *err)
{
    const nvml_api *a = &c->api;
    if (a->get_mem_v2 || a->get_mem_v1) {
        unsigned long long used = 0, total = 0;
        const char *fn = "";
        METRIC(read_memory(a, s->dev, &s->mem_v2_ok, &used, &total, &fn), fn, {
            out->mem_used_bytes = used;
            out->mem_total_bytes = total;
            out->valid |= GP_M_MEM_USED | GP_M_MEM_TOTAL;
        });
    }
    return GP_OK;
}

/* Power always; the energy counter only when flags ask for it (slow). */
static gp_status read_power_energy(nvml_ctx *c, nvml_slot *s, unsigned flags, gp_device_sample *out,
                                   gp_error *err)
{
    const nvml_api *a = &c->api;
    if (a->get_power) {
        unsigned power_mw = 0;
        METRIC(a->get_power(s->dev, &power_mw), "nvmlDeviceGetPowerUsage", {
            out->power_mw = power_mw;
            out->valid |= GP_M_POWER;
        });
    }
    if (a->get_energy && (flags & GP_READ_ENERGY)) {
        unsigned long long energy_mj = 0;
        METRIC(a->get_energy(s->dev, &energy_mj), "nvmlDeviceGetTotalEnergyConsumption", {
            out->energy_mj = energy_mj;
            out->valid |= GP_M_ENERGY;
        });
    }
    return GP_OK;
}

/* nvmlDeviceGetTemperatureV while the driver takes it, else the older call. */
static gp_status read_temperature(nvml_ctx *c, nvml_slot *s, gp_device_sample *out, gp_error *err)
{
    const nvml_api *a = &c->api;
    if (a->get_temp_v && s->temp_v_ok) {
        nvmlTemperature_t t;
        memset(&t, 0, sizeof t);
        t.version = NVML_TEMPERATURE_V1_VERSION;
        t.sensorType = NVML_TEMPERATURE_GPU;
        nvmlReturn_t rc = a->get_temp_v(s->dev, &t);
        if (rc == NVML_ERROR_ARGUMENT_VERSION_MISMATCH || rc == NVML_ERROR_FUNCTION_NOT_FOUND ||
            (rc == NVML_ERROR_NOT_SUPPORTED && a->get_temp_v1)) {
            s->temp_v_ok = false; /* ask the older call from now on */
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
        METRIC(a->get_temp_v1(s->dev, NVML_TEMPERATURE_GPU, &temp_c), "nvmlDeviceGetTemperature", {
            out->temp_c = (int32_t)temp_c;
            out->valid |= GP_M_TEMP;
        });
    }
    return GP_OK;
}

/* The SM and memory clocks and the throttle reasons. */
static gp_status read_clocks(nvml_ctx *c, nvml_slot *s, gp_device_sample *out, gp_error *err)
{
    const nvml_api *a = &c->api;
    if (a->get_clock) {
        unsigned sm_mhz = 0, mem_mhz = 0;
        METRIC(a->get_clock(s->dev, NVML_CLOCK_SM, &sm_mhz), "nvmlDeviceGetClockInfo", {
            out->clock_sm_mhz = sm_mhz;
            out->valid |= GP_M_CLOCK_SM;
        });
        METRIC(a->get_clock(s->dev, NVML_CLOCK_MEM, &mem_mhz), "nvmlDeviceGetClockInfo", {
            out->clock_mem_mhz = mem_mhz;
            out->valid |= GP_M_CLOCK_MEM;
        });
    }
    if (a->get_reasons) {
        unsigned long long reasons = 0;
        METRIC(a->get_reasons(s->dev, &reasons), a->reasons_name, {
            out->throttle_reasons = reasons;
            out->valid |= GP_M_THROTTLE;
        });
    }
    return GP_OK;
}

/* Off by default: each call blocks ~20 ms in real NVML. */
static gp_status read_pcie(nvml_ctx *c, nvml_slot *s, gp_device_sample *out, gp_error *err)
{
    const nvml_api *a = &c->api;
    if (c->sample_pcie && a->get_pcie) {
        unsigned tx_kbps = 0, rx_kbps = 0;
        METRIC(a->get_pcie(s->dev, NVML_PCIE_UTIL_TX_BYTES, &tx_kbps),
               "nvmlDeviceGetPcieThroughput", {
                   out->pcie_tx_kbps = tx_kbps;
                   out->valid |= GP_M_PCIE_TX;
               });
        METRIC(a->get_pcie(s->dev, NVML_PCIE_UTIL_RX_BYTES, &rx_kbps),
               "nvmlDeviceGetPcieThroughput", {
                   out->pcie_rx_kbps = rx_kbps;
                   out->valid |= GP_M_PCIE_RX;
               });
    }
    return GP_OK;
}

static gp_status nvml_read(void *ctx, size_t slot, unsigned flags, gp_device_sample *out,
                           gp_error *err)
{
    nvml_ctx *c = ctx;
    memset(out, 0, sizeof *out);
    if (slot >= c->n_slots)
        return gp_error_set(err, GP_ERR_STATE, "nvml: slot %zu was not started (%zu slots)", slot,
                            c->n_slots);
    nvml_slot *s = &c->slots[slot];
    gp_status st = read_utilization(c, s, out, err);
    if (st == GP_OK)
        st = read_memory_use(c, s, out, err);
    if (st == GP_OK)
        st = read_power_energy(c, s, flags, out, err);
    if (st == GP_OK)
        st = read_temperature(c, s, out, err);
    if (st == GP_OK)
        st = read_clocks(c, s, out, err);
    if (st == GP_OK)
        st = read_pcie(c, s, out, err);
    return st;
}

const gp_backend gp_backend_nvml = {
    .name = "nvml",
    .self_paced = 0,
    .open = nvml_open,
    .close = nvml_close,
    .device_count = nvml_device_count,
    .device_info = nvml_device_info,
    .driver_version = nvml_driver_version,
    .start = nvml_start,
    .read = nvml_read,
    .wait_tick = NULL,
    .interrupt = NULL,
    .stop = nvml_stop,
};
