/*
 * test_nvml_fake.c - the fake libnvidia-ml itself, called directly through
 * dlopen: the scenario rules the backend tests rely on (sequences, error
 * after / times, count, slow, lost), NVML's reference counting, and the
 * struct version checks (a wrong version word gets
 * ARGUMENT_VERSION_MISMATCH, so a backend that gets it wrong cannot pass).
 */
#include "check.h"
#include "sampler/backends/nvml_abi.h"
#include "util/clock.h"

#include <dlfcn.h>

static const char *src_dir;

static void use_scenario(const char *name)
{
    static char path[1024];
    if (!name) {
        unsetenv("FAKE_NVML_SCENARIO");
        return;
    }
    snprintf(path, sizeof path, "%s/scenarios/%s", src_dir, name);
    setenv("FAKE_NVML_SCENARIO", path, 1);
}

typedef struct fake {
    void *lib;
    nvml_init_fn init;
    nvml_shutdown_fn shutdown;
    nvml_device_get_count_fn count;
    nvml_device_get_handle_by_index_fn handle;
    nvml_device_get_name_fn name;
    nvml_device_get_utilization_rates_fn util;
    nvml_device_get_memory_info_v2_fn mem_v2;
    nvml_device_get_temperature_v_fn temp_v;
    nvml_device_get_clocks_event_reasons_fn reasons;
    nvml_device_get_power_usage_fn power;
} fake;

static void *must(void *lib, const char *name)
{
    void *p = dlsym(lib, name);
    CHECK(p != NULL);
    if (!p)
        fprintf(stderr, "  missing %s\n", name);
    return p;
}

#define LOAD(f, field, name)                                                                       \
    do {                                                                                           \
        void *p_ = must((f)->lib, name);                                                           \
        memcpy(&(f)->field, &p_, sizeof p_);                                                       \
    } while (0)

static int load(fake *f, const char *path)
{
    memset(f, 0, sizeof *f);
    f->lib = dlopen(path, RTLD_NOW | RTLD_LOCAL);
    CHECK(f->lib != NULL);
    if (!f->lib)
        return -1;
    LOAD(f, init, "nvmlInit_v2");
    LOAD(f, shutdown, "nvmlShutdown");
    LOAD(f, count, "nvmlDeviceGetCount_v2");
    LOAD(f, handle, "nvmlDeviceGetHandleByIndex_v2");
    LOAD(f, name, "nvmlDeviceGetName");
    LOAD(f, util, "nvmlDeviceGetUtilizationRates");
    LOAD(f, mem_v2, "nvmlDeviceGetMemoryInfo_v2");
    LOAD(f, temp_v, "nvmlDeviceGetTemperatureV");
    LOAD(f, reasons, "nvmlDeviceGetCurrentClocksEventReasons");
    LOAD(f, power, "nvmlDeviceGetPowerUsage");
    return f->init && f->shutdown && f->count && f->handle && f->name && f->util && f->mem_v2 &&
                   f->temp_v && f->reasons && f->power
               ? 0
               : -1;
}

static void test_refcount(fake *f)
{
    use_scenario(NULL);
    unsigned n = 0;
    nvmlUtilization_t u;
    CHECK_INT(f->count(&n), NVML_ERROR_UNINITIALIZED);
    CHECK_INT(f->shutdown(), NVML_ERROR_UNINITIALIZED);
    CHECK_INT(f->init(), NVML_SUCCESS);
    CHECK_INT(f->init(), NVML_SUCCESS);
    nvmlDevice_t d = NULL;
    CHECK_INT(f->handle(0, &d), NVML_SUCCESS);
    CHECK_INT(f->shutdown(), NVML_SUCCESS);
    CHECK_INT(f->util(d, &u), NVML_SUCCESS); /* still one reference */
    CHECK_INT(f->shutdown(), NVML_SUCCESS);
    CHECK_INT(f->util(d, &u), NVML_ERROR_UNINITIALIZED);
    CHECK_INT(f->shutdown(), NVML_ERROR_UNINITIALIZED);
}

static void test_arguments(fake *f)
{
    use_scenario(NULL);
    CHECK_INT(f->init(), NVML_SUCCESS);
    nvmlDevice_t d = NULL;
    CHECK_INT(f->handle(1, &d), NVML_ERROR_INVALID_ARGUMENT);
    CHECK_INT(f->handle(0, &d), NVML_SUCCESS);
    char small[8];
    CHECK_INT(f->name(d, small, sizeof small), NVML_ERROR_INSUFFICIENT_SIZE);
    char name[NVML_DEVICE_NAME_BUFFER_SIZE];
    CHECK_INT(f->name(d, name, sizeof name), NVML_SUCCESS);
    CHECK_STR(name, "Fake NVIDIA GPU");
    unsigned mw = 0;
    CHECK_INT(f->power((nvmlDevice_t)name, &mw), NVML_ERROR_INVALID_ARGUMENT); /* not a handle */
    CHECK_INT(f->power(NULL, &mw), NVML_ERROR_INVALID_ARGUMENT);

    /* Versioned structs: the exact word or ARGUMENT_VERSION_MISMATCH. */
    nvmlMemory_v2_t m;
    memset(&m, 0, sizeof m);
    m.version = NVML_STRUCT_VERSION(nvmlMemory_v2_t, 1);
    CHECK_INT(f->mem_v2(d, &m), NVML_ERROR_ARGUMENT_VERSION_MISMATCH);
    m.version = 0x02000024; /* the size a struct without padding would have */
    CHECK_INT(f->mem_v2(d, &m), NVML_ERROR_ARGUMENT_VERSION_MISMATCH);
    m.version = NVML_MEMORY_V2_VERSION;
    CHECK_INT(f->mem_v2(d, &m), NVML_SUCCESS);
    CHECK_U64(m.total, 85899345920ull);
    CHECK_U64(m.reserved, 536870912ull);
    CHECK_U64(m.used, 1073741824ull);
    CHECK_U64(m.free, 85899345920ull - 536870912ull - 1073741824ull);
    nvmlTemperature_t t;
    memset(&t, 0, sizeof t);
    t.version = 0x02000000 | (unsigned)sizeof t;
    CHECK_INT(f->temp_v(d, &t), NVML_ERROR_ARGUMENT_VERSION_MISMATCH);
    t.version = NVML_TEMPERATURE_V1_VERSION;
    t.sensorType = 1;
    CHECK_INT(f->temp_v(d, &t), NVML_ERROR_INVALID_ARGUMENT);
    t.sensorType = NVML_TEMPERATURE_GPU;
    CHECK_INT(f->temp_v(d, &t), NVML_SUCCESS);
    CHECK_INT(t.temperature, 35);
    CHECK_INT(f->shutdown(), NVML_SUCCESS);
}

static void test_rules(fake *f)
{
    use_scenario("nvml_fake_features.txt");
    CHECK_INT(f->init(), NVML_SUCCESS);
    unsigned n = 0;
    CHECK_INT(f->count(&n), NVML_SUCCESS);
    CHECK_INT(n, 3); /* `count 3` over two devices */
    nvmlDevice_t d0 = NULL, d1 = NULL, d2 = NULL;
    CHECK_INT(f->handle(0, &d0), NVML_SUCCESS);
    CHECK_INT(f->handle(1, &d1), NVML_SUCCESS);
    CHECK_INT(f->handle(2, &d2), NVML_ERROR_INVALID_ARGUMENT);

    /* error 0 util 27 after 1 times 2: the values advance on success only. */
    nvmlUtilization_t u = {0, 0};
    CHECK_INT(f->util(d0, &u), NVML_SUCCESS);
    CHECK_INT(u.gpu, 10);
    CHECK_INT(f->util(d0, &u), NVML_ERROR_NOT_READY);
    CHECK_INT(f->util(d0, &u), NVML_ERROR_NOT_READY);
    CHECK_INT(f->util(d0, &u), NVML_SUCCESS);
    CHECK_INT(u.gpu, 20);
    CHECK_INT(f->util(d0, &u), NVML_SUCCESS);
    CHECK_INT(u.gpu, 30);
    CHECK_INT(f->util(d0, &u), NVML_SUCCESS);
    CHECK_INT(u.gpu, 30); /* the last value repeats */

    /* slow 1 util 100000: the call takes at least 100 ms; other calls on
     * that device do not (the bound is loose for a loaded machine). */
    uint64_t t0 = gp_now_mono_ns();
    CHECK_INT(f->util(d1, &u), NVML_SUCCESS);
    CHECK(gp_now_mono_ns() - t0 >= 100000000ull);
    unsigned mw = 0;
    uint64_t fastest_ns = UINT64_MAX; /* the best of three shrugs off a stall */
    for (int i = 0; i < 3; i++) {
        t0 = gp_now_mono_ns();
        CHECK_INT(f->power(d1, &mw), NVML_SUCCESS);
        uint64_t dt = gp_now_mono_ns() - t0;
        fastest_ns = dt < fastest_ns ? dt : fastest_ns;
    }
    CHECK(fastest_ns < 50000000ull);

    unsigned long long mask = 0;
    CHECK_INT(f->reasons(d1, &mask), NVML_SUCCESS);
    CHECK_U64(mask, 0xffffffffffffffffull);
    CHECK_INT(f->shutdown(), NVML_SUCCESS);

    /* Lost: every call on the device from the (N+1)th utilization on. */
    use_scenario("nvml_lost.txt");
    CHECK_INT(f->init(), NVML_SUCCESS);
    CHECK_INT(f->handle(1, &d1), NVML_SUCCESS);
    for (int i = 0; i < 3; i++)
        CHECK_INT(f->util(d1, &u), NVML_SUCCESS);
    CHECK_INT(f->power(d1, &mw), NVML_SUCCESS);
    CHECK_INT(f->util(d1, &u), NVML_ERROR_GPU_IS_LOST);
    CHECK_INT(f->power(d1, &mw), NVML_ERROR_GPU_IS_LOST);
    CHECK_INT(f->handle(1, &d1), NVML_ERROR_GPU_IS_LOST);
    CHECK_INT(f->handle(0, &d0), NVML_SUCCESS);
    CHECK_INT(f->util(d0, &u), NVML_SUCCESS);
    CHECK_INT(f->shutdown(), NVML_SUCCESS);

    /* Each init from zero reads the scenario again, from the start. */
    CHECK_INT(f->init(), NVML_SUCCESS);
    CHECK_INT(f->handle(1, &d1), NVML_SUCCESS);
    CHECK_INT(f->util(d1, &u), NVML_SUCCESS);
    CHECK_INT(f->shutdown(), NVML_SUCCESS);

    use_scenario("nvml_init_error.txt");
    CHECK_INT(f->init(), NVML_ERROR_DRIVER_NOT_LOADED);
    CHECK_INT(f->count(&n), NVML_ERROR_UNINITIALIZED);
    use_scenario("does-not-exist.txt");
    fprintf(stderr, "(the fake's complaint about does-not-exist.txt below is expected)\n");
    CHECK_INT(f->init(), NVML_ERROR_UNKNOWN);
}

/* The old build really lacks the newer symbols. */
static void test_old_symbols(const char *path)
{
    void *lib = dlopen(path, RTLD_NOW | RTLD_LOCAL);
    CHECK(lib != NULL);
    if (!lib)
        return;
    static const char *const absent[] = {
        "nvmlInit_v2",
        "nvmlDeviceGetCount_v2",
        "nvmlDeviceGetHandleByIndex_v2",
        "nvmlDeviceGetMemoryInfo_v2",
        "nvmlDeviceGetTemperatureV",
        "nvmlDeviceGetCurrentClocksEventReasons",
        "nvmlDeviceGetTotalEnergyConsumption",
    };
    static const char *const present[] = {
        "nvmlInit",
        "nvmlDeviceGetCount",
        "nvmlDeviceGetHandleByIndex",
        "nvmlDeviceGetMemoryInfo",
        "nvmlDeviceGetTemperature",
        "nvmlDeviceGetCurrentClocksThrottleReasons",
        "nvmlDeviceGetPowerUsage",
        "nvmlSystemGetDriverVersion",
    };
    for (size_t i = 0; i < sizeof absent / sizeof absent[0]; i++)
        CHECK(dlsym(lib, absent[i]) == NULL);
    for (size_t i = 0; i < sizeof present / sizeof present[0]; i++)
        CHECK(dlsym(lib, present[i]) != NULL);
    dlclose(lib);
}

int main(void)
{
    src_dir = check_env("GP_TEST_SOURCE_DIR");
    const char *path = check_env("GP_TEST_FAKE_NVML");
    unsetenv("FAKE_NVML_STATS");
    fake f;
    if (load(&f, path) == 0) {
        test_refcount(&f);
        test_arguments(&f);
        test_rules(&f);
    }
    if (f.lib)
        dlclose(f.lib);
    test_old_symbols(check_env("GP_TEST_FAKE_NVML_OLD"));
    return check_done("test_nvml_fake");
}
