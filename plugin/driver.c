/*
 * driver.c - device limits through the CUDA driver API, loaded at run time.
 *
 * Promises: libcuda is opened with dlopen (never linked, so the plugin
 * loads where only CUPTI is present and fails softly without a driver);
 * every query is by ordinal with no context, so nothing here can touch a
 * NULL context; a device whose attributes cannot be read is reported as
 * unknown, never as zeros that look real; every device's limits are read
 * by ordinal once, on the thread that starts the session, after cuInit
 * (gp_driver_devices), and kept: gp_driver_limits_known answers from them
 * alone, for the writer thread and the CUPTI callbacks, which never call
 * the driver (inside a launch callback the launch holds the driver's lock
 * a second cuInit - cuBLAS's own runtime - waits for; at exit CUDA may be
 * torn down before the session ends, and there an injected program's
 * first cuInit from the writer blocked forever on an H200).
 */
#include "plugin.h"
#include "../src/util/error.h"

#include "gpu_profile.h"

#include <cuda.h>
#include <cupti.h>
#include <cupti_target.h>
#include <cupti_profiler_target.h>
#include <dlfcn.h>
#include <pthread.h>
#include <stdio.h>
#include <string.h>

typedef CUresult (*init_fn)(unsigned int);
typedef CUresult (*count_fn)(int *);
typedef CUresult (*get_fn)(CUdevice *, int);
typedef CUresult (*attr_fn)(int *, CUdevice_attribute, CUdevice);
typedef CUresult (*name_fn)(char *, int, CUdevice);
typedef CUresult (*uuid_fn)(CUuuid *, CUdevice);
typedef CUresult (*ctx_fn)(CUcontext *);
typedef CUresult (*sync_fn)(void);

static struct {
    pthread_once_t once, init_once;
    bool syms, ok;
    init_fn init;
    count_fn count;
    get_fn get;
    attr_fn attr;
    name_fn name;
    uuid_fn uuid;
    ctx_fn current; /* NULL: not found */
    sync_fn sync;   /* cuCtxSynchronize; NULL: not found */
} drv = {PTHREAD_ONCE_INIT, PTHREAD_ONCE_INIT};

static void *sym(void *h, const char *name)
{
    return dlsym(h, name);
}

static void load(void)
{
    void *h = dlopen("libcuda.so.1", RTLD_NOW | RTLD_LOCAL);
    if (!h)
        return;
    void *p[6] = {sym(h, "cuInit"),          sym(h, "cuDeviceGetCount"),
                  sym(h, "cuDeviceGet"),     sym(h, "cuDeviceGetAttribute"),
                  sym(h, "cuDeviceGetName"), sym(h, "cuDeviceGetUuid_v2")};
    if (!p[5])
        p[5] = sym(h, "cuDeviceGetUuid");
    for (int i = 0; i < 5; i++)
        if (!p[i])
            return;
    memcpy(&drv.init, &p[0], sizeof p[0]);
    memcpy(&drv.count, &p[1], sizeof p[1]);
    memcpy(&drv.get, &p[2], sizeof p[2]);
    memcpy(&drv.attr, &p[3], sizeof p[3]);
    memcpy(&drv.name, &p[4], sizeof p[4]);
    memcpy(&drv.uuid, &p[5], sizeof p[5]);
    void *cur = sym(h, "cuCtxGetCurrent");
    memcpy(&drv.current, &cur, sizeof cur);
    void *sy = sym(h, "cuCtxSynchronize");
    memcpy(&drv.sync, &sy, sizeof sy);
    drv.syms = true;
}

bool gp_driver_missing(void)
{
    /* Already in the process (CUDA loaded it, or load() did): present.
     * Otherwise a lazy load that is undone at once: only asked after a
     * failure, never on a path that runs while tracing. */
    void *h = dlopen("libcuda.so.1", RTLD_NOLOAD | RTLD_LAZY | RTLD_LOCAL);
    if (!h)
        h = dlopen("libcuda.so.1", RTLD_LAZY | RTLD_LOCAL);
    if (!h)
        return true;
    dlclose(h);
    return false;
}

static void init(void)
{
    drv.ok = drv.init(0) == CUDA_SUCCESS;
}

static bool ready(void)
{
    pthread_once(&drv.once, load);
    if (!drv.syms)
        return false;
    pthread_once(&drv.init_once, init);
    return drv.ok;
}

bool gp_driver_init(void)
{
    return ready();
}

static int attr(CUdevice d, CUdevice_attribute a)
{
    int v = 0;
    return drv.attr(&v, a, d) == CUDA_SUCCESS ? v : 0;
}

/* The limits of device ordinal, the driver being initialised. */
static bool limits_of(uint32_t ordinal, fl_gpu_limits *l)
{
    CUdevice d;
    if (drv.get(&d, (int)ordinal) != CUDA_SUCCESS)
        return false;
    memset(l, 0, sizeof *l);
    l->device_id = ordinal;
    l->cc_major = attr(d, CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR);
    l->cc_minor = attr(d, CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR);
    l->sm_count = attr(d, CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT);
    l->warp_size = attr(d, CU_DEVICE_ATTRIBUTE_WARP_SIZE);
    l->max_threads_per_block = attr(d, CU_DEVICE_ATTRIBUTE_MAX_THREADS_PER_BLOCK);
    l->max_threads_per_sm = attr(d, CU_DEVICE_ATTRIBUTE_MAX_THREADS_PER_MULTIPROCESSOR);
    l->max_blocks_per_sm = attr(d, CU_DEVICE_ATTRIBUTE_MAX_BLOCKS_PER_MULTIPROCESSOR);
    l->regs_per_sm = attr(d, CU_DEVICE_ATTRIBUTE_MAX_REGISTERS_PER_MULTIPROCESSOR);
    l->max_regs_per_block = attr(d, CU_DEVICE_ATTRIBUTE_MAX_REGISTERS_PER_BLOCK);
    l->smem_per_sm_bytes = attr(d, CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_MULTIPROCESSOR);
    l->smem_per_block_bytes = attr(d, CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_BLOCK);
    l->smem_per_block_optin_bytes = attr(d, CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_BLOCK_OPTIN);
    l->reserved_smem_per_block_bytes =
        attr(d, CU_DEVICE_ATTRIBUTE_RESERVED_SHARED_MEMORY_PER_BLOCK);
    l->l2_cache_bytes = attr(d, CU_DEVICE_ATTRIBUTE_L2_CACHE_SIZE);
    if (drv.name(l->name, (int)sizeof l->name, d) != CUDA_SUCCESS)
        l->name[0] = '\0';
    CUuuid u;
    if (drv.uuid && drv.uuid(&u, d) == CUDA_SUCCESS) {
        const unsigned char *b = (const unsigned char *)u.bytes;
        snprintf(l->uuid, sizeof l->uuid,
                 "GPU-%02x%02x%02x%02x-%02x%02x-%02x%02x-%02x%02x-%02x%02x%02x%02x%02x%02x", b[0],
                 b[1], b[2], b[3], b[4], b[5], b[6], b[7], b[8], b[9], b[10], b[11], b[12], b[13],
                 b[14], b[15]);
    }
    /* The allocation granularities are filled by the core
     * (fl_gpu_limits_fill_arch), which owns the occupancy rules. */
    return l->cc_major != 0 && l->sm_count != 0;
}

bool gp_driver_limits(uint32_t ordinal, fl_gpu_limits *l)
{
    return ready() && limits_of(ordinal, l);
}

/* The limits read by ordinal on the thread that starts the session (after
 * cuInit, outside every CUPTI callback), for the writer. */
#define KEPT_MAX 64
static struct {
    pthread_mutex_t mu;
    fl_gpu_limits l[KEPT_MAX];
    bool have[KEPT_MAX];
} kept = {.mu = PTHREAD_MUTEX_INITIALIZER};

static void keep(const fl_gpu_limits *l)
{
    if (l->device_id >= KEPT_MAX)
        return;
    pthread_mutex_lock(&kept.mu);
    kept.l[l->device_id] = *l;
    kept.have[l->device_id] = true;
    pthread_mutex_unlock(&kept.mu);
}

bool gp_driver_limits_known(uint32_t ordinal, fl_gpu_limits *out)
{
    if (ordinal >= KEPT_MAX)
        return false;
    pthread_mutex_lock(&kept.mu);
    bool have = kept.have[ordinal];
    if (have)
        *out = kept.l[ordinal];
    pthread_mutex_unlock(&kept.mu);
    return have;
}

size_t gp_driver_devices(fl_gpu_limits *out, size_t cap)
{
    if (!ready())
        return 0;
    int n = 0;
    if (drv.count(&n) != CUDA_SUCCESS || n <= 0)
        return 0;
    size_t k = 0;
    for (int i = 0; i < n && k < cap; i++)
        if (gp_driver_limits((uint32_t)i, &out[k]))
            keep(&out[k++]);
    return k;
}

gp_status gp_driver_chip_name(int device, char *out, size_t cap, gp_error *err)
{
    int n = 0;
    if (!ready() || drv.count(&n) != CUDA_SUCCESS || n <= 0)
        return gp_error_set(err, GP_ERR_NOT_SUPPORTED,
                            "no CUDA device (no driver, or it lists none)");
    if (device < 0 || device >= n)
        return gp_error_set(err, GP_ERR_DEVICE_NOT_FOUND,
                            "CUDA device %d does not exist (the driver lists %d)", device, n);
    CUpti_Device_GetChipName_Params p;
    memset(&p, 0, sizeof p);
    p.structSize = CUpti_Device_GetChipName_Params_STRUCT_SIZE;
    p.deviceIndex = (size_t)device;
    CUptiResult r = cuptiDeviceGetChipName(&p);
    if (r != CUPTI_SUCCESS || !p.pChipName) {
        const char *m = NULL;
        cuptiGetResultString(r, &m);
        return gp_error_set(err, GP_ERR_CUPTI, "cuptiDeviceGetChipName(%d) failed: %s (%d)", device,
                            m ? m : "unknown CUPTI error", (int)r);
    }
    snprintf(out, cap, "%s", p.pChipName);
    return GP_OK;
}

void *gp_driver_context(void)
{
    CUcontext c = NULL;
    if (!ready() || !drv.current || drv.current(&c) != CUDA_SUCCESS)
        return NULL;
    return c;
}

int gp_driver_ctx_synchronize(void)
{
    if (!ready() || !drv.sync)
        return (int)CUDA_ERROR_NOT_INITIALIZED;
    return (int)drv.sync();
}
