/*
 * sampler/backends/rocm_smi.c - the amd backend (polled): AMD GPUs through
 * ROCm SMI, librocm_smi64 loaded with dlopen (never linked).
 *
 * Promises: a figure the device does not report (NOT_SUPPORTED, no data,
 * no permission, a sysfs file the kernel lacks) keeps its valid bit clear
 * and is never a 0; a device whose every figure fails as a removed
 * device's do (its sysfs files gone, its index refused) fails the read
 * with GP_ERR_DEVICE_LOST and the others go on.  Every ROCm SMI call runs
 * on the context's worker thread (runner.h) and is waited for at most 2 s
 * (or the configured timeout when smaller): one that does not answer
 * fails with GP_ERR_TIMEOUT naming it, its thread is abandoned and keeps
 * the library loaded, and the context asks ROCm SMI nothing more while it
 * is stuck (every later call fails at once).  What the library prints
 * while rsmi_init looks for devices (it writes to stderr on a machine
 * without them) does not reach our stderr: it is caught and becomes part
 * of the error message (and with the default library rsmi_init is not
 * called at all where sysfs shows no AMD device).  Every message starts
 * with "amd: ".  The declarations below are ours, from ROCm SMI's
 * documented ABI (stable since ROCm 1.x); tests/fakes/fake_rocm_smi.c is
 * built from the real header, so a mistake on either side fails a test.
 */
#include "../../util/clock.h"
#include "../../util/error.h"
#include "backend.h"
#include "runner.h"
#include "gpu_profile.h"

#include <dirent.h>
#include <dlfcn.h>
#include <inttypes.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

/* ------------------------------------------------- ROCm SMI's ABI subset */

enum {
    RSMI_OK = 0,
    RSMI_INVALID_ARGS = 1,
    RSMI_NOT_SUPPORTED = 2,
    RSMI_FILE_ERROR = 3,
    RSMI_PERMISSION = 4,
    RSMI_INIT_ERROR = 8,
    RSMI_NOT_YET_IMPLEMENTED = 9,
    RSMI_NOT_FOUND = 10,
    RSMI_NO_DATA = 14,
    RSMI_UNEXPECTED_DATA = 15
};
enum { RSMI_MEM_VRAM = 0, RSMI_CLK_SYS = 0, RSMI_CLK_MEM = 4, RSMI_TEMP_EDGE = 0 };
enum { RSMI_TEMP_METRIC_CURRENT = 0, RSMI_SW_DRIVER = 0, RSMI_MAX_FREQS = 32 };

typedef struct rsmi_freqs {
    uint32_t num_supported;
    uint32_t current;
    uint64_t frequency[RSMI_MAX_FREQS]; /* Hz */
} rsmi_freqs;

typedef int (*rsmi_init_fn)(uint64_t);
typedef int (*rsmi_void_fn)(void);
typedef int (*rsmi_count_fn)(uint32_t *);
typedef int (*rsmi_u32_fn)(uint32_t, uint32_t *);
typedef int (*rsmi_u64_fn)(uint32_t, uint64_t *);
typedef int (*rsmi_mem_fn)(uint32_t, int, uint64_t *);
typedef int (*rsmi_power_fn)(uint32_t, uint32_t, uint64_t *);
typedef int (*rsmi_temp_fn)(uint32_t, uint32_t, int, int64_t *);
typedef int (*rsmi_clk_fn)(uint32_t, int, rsmi_freqs *);
typedef int (*rsmi_name_fn)(uint32_t, char *, size_t);
typedef int (*rsmi_string_fn)(int, const char **);
typedef int (*rsmi_version_fn)(int, char *, uint32_t);

typedef struct rsmi_lib {
    void *handle;
    char name[256];
    bool named; /* given by path (option or environment), not the default search */
    rsmi_init_fn init;
    rsmi_void_fn shut_down;
    rsmi_count_fn num_devices;
    rsmi_u32_fn busy, mem_busy;
    rsmi_mem_fn mem_total, mem_used;
    rsmi_power_fn power_ave;
    rsmi_temp_fn temp;
    rsmi_clk_fn clk;
    rsmi_u64_fn unique_id, pci_id;
    rsmi_name_fn dev_name;
    rsmi_string_fn status_string; /* optional */
    rsmi_version_fn version_str;  /* optional */
} rsmi_lib;

#define AMD_LIBRARY_ENV "GPU_PROFILE_ROCM_SMI_LIBRARY"

/* ------------------------------------------------------------ library */

static const char *status_text(const rsmi_lib *l, int st)
{
    const char *s = NULL;
    if (l->status_string && l->status_string(st, &s) == RSMI_OK && s && *s)
        return s;
    return "unknown ROCm SMI status";
}

/* Stores a dlsym result in a function pointer without a cast ISO C lacks. */
#define SET_FN(dst, h, sym) memcpy(&(dst), &(void *){dlsym((h), (sym))}, sizeof(dst))

static gp_status bind_symbols(rsmi_lib *l, gp_error *err)
{
    static const char *const need[] = {"rsmi_init",
                                       "rsmi_shut_down",
                                       "rsmi_num_monitor_devices",
                                       "rsmi_dev_busy_percent_get",
                                       "rsmi_dev_memory_busy_percent_get",
                                       "rsmi_dev_memory_total_get",
                                       "rsmi_dev_memory_usage_get",
                                       "rsmi_dev_power_ave_get",
                                       "rsmi_dev_temp_metric_get",
                                       "rsmi_dev_gpu_clk_freq_get",
                                       "rsmi_dev_unique_id_get",
                                       "rsmi_dev_pci_id_get",
                                       "rsmi_dev_name_get"};
    for (size_t i = 0; i < sizeof need / sizeof need[0]; i++)
        if (!dlsym(l->handle, need[i]))
            return gp_error_set(err, GP_ERR_BACKEND_UNAVAILABLE,
                                "amd: %s does not export %s: it is not ROCm SMI, or one too old",
                                l->name, need[i]);
    SET_FN(l->init, l->handle, "rsmi_init");
    SET_FN(l->shut_down, l->handle, "rsmi_shut_down");
    SET_FN(l->num_devices, l->handle, "rsmi_num_monitor_devices");
    SET_FN(l->busy, l->handle, "rsmi_dev_busy_percent_get");
    SET_FN(l->mem_busy, l->handle, "rsmi_dev_memory_busy_percent_get");
    SET_FN(l->mem_total, l->handle, "rsmi_dev_memory_total_get");
    SET_FN(l->mem_used, l->handle, "rsmi_dev_memory_usage_get");
    SET_FN(l->power_ave, l->handle, "rsmi_dev_power_ave_get");
    SET_FN(l->temp, l->handle, "rsmi_dev_temp_metric_get");
    SET_FN(l->clk, l->handle, "rsmi_dev_gpu_clk_freq_get");
    SET_FN(l->unique_id, l->handle, "rsmi_dev_unique_id_get");
    SET_FN(l->pci_id, l->handle, "rsmi_dev_pci_id_get");
    SET_FN(l->dev_name, l->handle, "rsmi_dev_name_get");
    SET_FN(l->status_string, l->handle, "rsmi_status_string");
    SET_FN(l->version_str, l->handle, "rsmi_version_str_get");
    return GP_OK;
}

static gp_status load_library(rsmi_lib *l, const char *path_cfg, gp_error *err)
{
    /* Newest first: ROCm 6.x/7.x install .so.7/.so.6/.so.5, Debian 12 .so.1. */
    static const char *const defaults[] = {"librocm_smi64.so.7", "librocm_smi64.so.6",
                                           "librocm_smi64.so.5", "librocm_smi64.so.1",
                                           "/opt/rocm/lib/librocm_smi64.so"};
    const char *from = "rocm_smi_library";
    if (!path_cfg || !*path_cfg) {
        path_cfg = getenv(AMD_LIBRARY_ENV);
        from = AMD_LIBRARY_ENV;
    }
    if (path_cfg && *path_cfg) {
        l->handle = dlopen(path_cfg, RTLD_NOW | RTLD_LOCAL);
        if (!l->handle) {
            const char *e = dlerror();
            return gp_error_set(err, GP_ERR_BACKEND_UNAVAILABLE,
                                "amd: cannot load %s: %s: check the %s path", path_cfg,
                                e ? e : "unknown dlopen error", from);
        }
        snprintf(l->name, sizeof l->name, "%s", path_cfg);
        l->named = true;
        return GP_OK;
    }
    for (size_t i = 0; i < sizeof defaults / sizeof defaults[0]; i++) {
        l->handle = dlopen(defaults[i], RTLD_NOW | RTLD_LOCAL);
        if (l->handle) {
            snprintf(l->name, sizeof l->name, "%s", defaults[i]);
            return GP_OK;
        }
    }
    return gp_error_set(err, GP_ERR_BACKEND_UNAVAILABLE,
                        "amd: no AMD GPU: ROCm SMI (librocm_smi64.so.7, .so.6, .so.5, .so.1 or "
                        "/opt/rocm/lib/librocm_smi64.so) could not be loaded: install ROCm SMI "
                        "(Debian: librocm-smi64-1) or set rocm_smi_library to its path");
}

/* Whether sysfs shows an AMD display device (PCI vendor 0x1002, the one
 * ROCm SMI lists by default): without one rsmi_init is not called at all,
 * so `auto` on an NVIDIA or GPU-less machine costs no ROCm SMI start-up and
 * hears none of its stderr. */
static bool sysfs_has_amd_gpu(void)
{
    DIR *d = opendir("/sys/class/drm");
    bool found = false;
    for (struct dirent *e; d && !found && (e = readdir(d));) {
        if (strncmp(e->d_name, "card", 4) != 0 || strchr(e->d_name, '-'))
            continue; /* connectors (card0-DP-1) share their card's device */
        char path[512], text[32] = "";
        snprintf(path, sizeof path, "/sys/class/drm/%s/device/vendor", e->d_name);
        FILE *f = fopen(path, "re");
        if (f) {
            found = fgets(text, sizeof text, f) && strtoul(text, NULL, 16) == 0x1002;
            fclose(f);
        }
    }
    if (d)
        closedir(d);
    return found;
}

/* rsmi_init with the library's stderr caught in a temporary file: it prints
 * "Failed to open drm root directory ..." where it finds no GPU, which would
 * land in the profiled program's output.  On failure the first line of what
 * it said comes back in said (for the message); on success what was caught
 * goes to stderr after all, so a line another thread wrote meanwhile is not
 * lost. */
static int quiet_init(const rsmi_lib *l, char *said, size_t said_len)
{
    said[0] = '\0';
    fflush(stderr);
    FILE *tmp = tmpfile();
    int saved = tmp ? dup(STDERR_FILENO) : -1;
    if (saved < 0 || dup2(fileno(tmp), STDERR_FILENO) < 0) {
        if (saved >= 0)
            close(saved);
        if (tmp)
            fclose(tmp);
        return l->init(0);
    }
    int st = l->init(0);
    fflush(stderr);
    dup2(saved, STDERR_FILENO);
    close(saved);
    rewind(tmp);
    if (st == RSMI_OK) {
        char buf[4096];
        size_t n;
        while ((n = fread(buf, 1, sizeof buf, tmp)) > 0 && fwrite(buf, 1, n, stderr) == n)
            ;
        fflush(stderr);
    } else if (fgets(said, (int)said_len, tmp)) {
        size_t n = strcspn(said, "\r\n");
        said[n] = '\0';
        while (n > 0 && (said[n - 1] == '.' || said[n - 1] == ' '))
            said[--n] = '\0';
    }
    fclose(tmp);
    return st;
}

/* ------------------------------------------------------- the figures */

/* How one figure's status counts: read, not reported, or a device gone. */
typedef struct amd_round {
    int answered;  /* figures read */
    int gone;      /* statuses a removed device gives */
    int gone_st;   /* the first of them */
    int first_bad; /* the first status that was neither */
} amd_round;

static bool took(amd_round *r, int rs)
{
    if (rs == RSMI_OK) {
        r->answered++;
        return true;
    }
    if (rs == RSMI_FILE_ERROR || rs == RSMI_NOT_FOUND || rs == RSMI_INVALID_ARGS) {
        if (!r->gone++)
            r->gone_st = rs;
    } else if (rs != RSMI_NOT_SUPPORTED && rs != RSMI_NOT_YET_IMPLEMENTED && rs != RSMI_NO_DATA &&
               rs != RSMI_PERMISSION && rs != RSMI_UNEXPECTED_DATA && !r->first_bad) {
        r->first_bad = rs;
    }
    return false;
}

/* The current level of a clock in MHz (frequencies are in Hz). */
static bool read_clock(const rsmi_lib *l, unsigned index, int type, amd_round *r, uint32_t *mhz)
{
    rsmi_freqs f;
    memset(&f, 0, sizeof f);
    if (!took(r, l->clk(index, type, &f)))
        return false;
    if (f.num_supported == 0 || f.num_supported > RSMI_MAX_FREQS || f.current >= f.num_supported)
        return false;
    *mhz = (uint32_t)(f.frequency[f.current] / 1000000u);
    return true;
}

static gp_status read_device(const rsmi_lib *l, unsigned i, gp_device_sample *out, gp_error *err)
{
    amd_round r = {0, 0, 0, 0};
    uint32_t u32 = 0;
    uint64_t u64 = 0;
    int64_t i64 = 0;
    memset(out, 0, sizeof *out);
    if (took(&r, l->busy(i, &u32)) && u32 <= 100) {
        out->util_gpu_pct = u32;
        out->valid |= GP_M_UTIL_GPU;
    }
    if (took(&r, l->mem_busy(i, &u32)) && u32 <= 100) {
        out->util_mem_pct = u32;
        out->valid |= GP_M_UTIL_MEM;
    }
    if (took(&r, l->mem_used(i, RSMI_MEM_VRAM, &u64))) {
        out->mem_used_bytes = u64;
        out->valid |= GP_M_MEM_USED;
    }
    if (took(&r, l->mem_total(i, RSMI_MEM_VRAM, &u64))) {
        out->mem_total_bytes = u64;
        out->valid |= GP_M_MEM_TOTAL;
    }
    if (took(&r, l->power_ave(i, 0, &u64))) { /* µW */
        out->power_mw = (uint32_t)(u64 / 1000u > UINT32_MAX ? UINT32_MAX : u64 / 1000u);
        out->valid |= GP_M_POWER;
    }
    if (took(&r, l->temp(i, RSMI_TEMP_EDGE, RSMI_TEMP_METRIC_CURRENT, &i64))) { /* m°C */
        out->temp_c = (int32_t)(i64 / 1000);
        out->valid |= GP_M_TEMP;
    }
    if (read_clock(l, i, RSMI_CLK_SYS, &r, &out->clock_sm_mhz))
        out->valid |= GP_M_CLOCK_SM;
    if (read_clock(l, i, RSMI_CLK_MEM, &r, &out->clock_mem_mhz))
        out->valid |= GP_M_CLOCK_MEM;
    if (r.answered == 0 && r.gone > 0)
        return gp_error_set(err, GP_ERR_DEVICE_LOST,
                            "amd: device %u is gone: ROCm SMI cannot read any of its figures "
                            "(%s): it was removed or its driver reset",
                            i, status_text(l, r.gone_st));
    if (r.answered == 0 && r.first_bad)
        return gp_error_set(err, GP_ERR_BACKEND, "amd: device %u: %s", i,
                            status_text(l, r.first_bad));
    return GP_OK;
}

static void read_info(const rsmi_lib *l, unsigned index, gp_device_info *out)
{
    memset(out, 0, sizeof *out);
    out->index = index;
    out->mig.gpu_instance_id = -1;
    out->mig.compute_instance_id = -1;
    int rs = l->dev_name(index, out->name, sizeof out->name);
    out->name[sizeof out->name - 1] = '\0';
    if (rs != RSMI_OK || !out->name[0])
        snprintf(out->name, sizeof out->name, "AMD GPU %u", index);
    uint64_t id = 0;
    if (l->unique_id(index, &id) == RSMI_OK && id != 0)
        snprintf(out->uuid, sizeof out->uuid, "%016" PRIx64, id);
    uint64_t bdf = 0;
    if (l->pci_id(index, &bdf) == RSMI_OK)
        snprintf(out->pci_bus_id, sizeof out->pci_bus_id, "%04x:%02x:%02x.%x",
                 (unsigned)(bdf >> 32), (unsigned)((bdf >> 8) & 0xff),
                 (unsigned)((bdf >> 3) & 0x1f), (unsigned)(bdf & 0x7));
    uint64_t total = 0;
    if (l->mem_total(index, RSMI_MEM_VRAM, &total) == RSMI_OK) {
        out->mem_total_bytes = total;
        out->valid |= GP_M_MEM_TOTAL;
    }
}

/* ------------------------------------------- calls bounded in time */

/* One job on the context's runner: what it asks and what comes back.  The
 * library's table is copied in, so an abandoned job still has it; the
 * library itself then stays loaded for good (close leaves it). */
enum { JOB_INIT, JOB_INFO, JOB_READ, JOB_DRIVER, JOB_SHUTDOWN };
typedef struct amd_job {
    rsmi_lib lib;
    int kind;
    unsigned index;
    int rs, count_rs;
    uint32_t count;
    char said[256];
    gp_device_info info;
    gp_device_sample s;
    gp_status st;
    gp_error err;
    char driver[96];
} amd_job;

typedef struct amd_ctx {
    rsmi_lib lib;
    gp_runner *r;
    uint64_t call_ns; /* the bound of one call */
    bool inited;      /* rsmi_init answered OK: close shuts it down */
    uint32_t n_devs;
    unsigned *slot_index; /* slot -> device index, while sampling */
    size_t n_slots;
} amd_ctx;

#define AMD_CALL_TIMEOUT_NS 2000000000ull
#define AMD_NO_DEVICE UINT32_MAX

static void job_main(gp_runner *r, void *area)
{
    amd_job *j = area;
    const rsmi_lib *l = &j->lib;
    switch (j->kind) {
    case JOB_INIT:
        gp_runner_doing(r, "rsmi_init");
        j->rs = quiet_init(l, j->said, sizeof j->said);
        if (j->rs == RSMI_OK) {
            gp_runner_doing(r, "rsmi_num_monitor_devices");
            j->count_rs = l->num_devices(&j->count);
        }
        break;
    case JOB_INFO:
        gp_runner_doing(r, "rsmi_dev_*_get");
        read_info(l, j->index, &j->info);
        break;
    case JOB_READ:
        gp_runner_doing(r, "rsmi_dev_*_get");
        gp_error_clear(&j->err);
        j->st = read_device(l, j->index, &j->s, &j->err);
        break;
    case JOB_DRIVER:
        gp_runner_doing(r, "rsmi_version_str_get");
        j->driver[0] = '\0';
        if (!l->version_str || l->version_str(RSMI_SW_DRIVER, j->driver, sizeof j->driver) != 0)
            j->driver[0] = '\0';
        j->driver[sizeof j->driver - 1] = '\0';
        break;
    default:
        gp_runner_doing(r, "rsmi_shut_down");
        l->shut_down();
        break;
    }
}

/* The job area for a new call, or an error when an earlier call is still
 * stuck in ROCm SMI (then it is not asked again). */
static amd_job *job_for(amd_ctx *c, int kind, unsigned index, gp_error *err)
{
    gp_runner_stuck why;
    if (gp_runner_stuck_now(c->r, &why)) {
        gp_error_set(
            err, GP_ERR_TIMEOUT,
            "amd: ROCm SMI is still stuck in %s (%.1f s): it is not asked again until it returns",
            why.what, (double)(gp_now_mono_ns() - why.since_ns) / 1e9);
        return NULL;
    }
    amd_job *j = gp_runner_job(c->r);
    j->lib = c->lib;
    j->kind = kind;
    j->index = index;
    return j;
}

static gp_status call(amd_ctx *c, unsigned index, const char *what, gp_error *err)
{
    gp_runner_stuck why;
    gp_status st = gp_runner_call(c->r, job_main, what, gp_now_mono_ns() + c->call_ns, &why);
    if (st == GP_ERR_THREAD)
        return gp_error_set(err, st, "amd: cannot start the thread that calls ROCm SMI");
    if (st != GP_ERR_TIMEOUT)
        return st;
    char dev[32] = "";
    if (index != AMD_NO_DEVICE)
        snprintf(dev, sizeof dev, "device %u: ", index);
    return gp_error_set(err, GP_ERR_TIMEOUT,
                        "amd: %s%s did not answer within %.1f s: the GPU or its driver hangs "
                        "(see dmesg); ROCm SMI is not asked again by this process until it "
                        "returns",
                        dev, why.what, (double)c->call_ns / 1e9);
}

/* ------------------------------------------------------------ backend */

static void amd_close(void *ctx)
{
    amd_ctx *c = ctx;
    if (!c)
        return;
    bool stuck = c->r && gp_runner_stuck_now(c->r, NULL);
    if (c->inited && !stuck) {
        gp_error ignored;
        if (job_for(c, JOB_SHUTDOWN, AMD_NO_DEVICE, &ignored))
            stuck = call(c, AMD_NO_DEVICE, "rsmi_shut_down", &ignored) == GP_ERR_TIMEOUT;
    }
    if (c->r)
        gp_runner_release(c->r);
    /* A call stuck in the library keeps it loaded: its thread returns there. */
    if (c->lib.handle && !stuck)
        dlclose(c->lib.handle);
    free(c->slot_index);
    free(c);
}

static gp_status amd_open(const gp_backend_config *cfg, void **ctx, gp_error *err)
{
    *ctx = NULL;
    amd_ctx *c = calloc(1, sizeof *c);
    if (!c)
        return gp_error_set(err, GP_ERR_NO_MEMORY, "amd: out of memory");
    c->call_ns = AMD_CALL_TIMEOUT_NS;
    if (cfg && cfg->timeout_ns > 0 && cfg->timeout_ns < c->call_ns)
        c->call_ns = cfg->timeout_ns;
    gp_status st = load_library(&c->lib, cfg ? cfg->rocm_smi_library : NULL, err);
    if (st == GP_OK)
        st = bind_symbols(&c->lib, err);
    if (st == GP_OK && !c->lib.named && !sysfs_has_amd_gpu())
        st = gp_error_set(err, GP_ERR_BACKEND_UNAVAILABLE,
                          "amd: no AMD GPU: no AMD device (PCI vendor 0x1002) under "
                          "/sys/class/drm: the amdgpu driver is not loaded, or the GPU is not "
                          "visible here (a container needs /dev/kfd, /dev/dri and /sys); %s was "
                          "not started",
                          c->lib.name);
    if (st == GP_OK && !(c->r = gp_runner_create(sizeof(amd_job), NULL)))
        st = gp_error_set(err, GP_ERR_NO_MEMORY, "amd: out of memory");
    amd_job *j = st == GP_OK ? job_for(c, JOB_INIT, AMD_NO_DEVICE, err) : NULL;
    if (j)
        st = call(c, AMD_NO_DEVICE, "rsmi_init", err);
    if (st != GP_OK) {
        amd_close(c);
        return st;
    }
    if (j->rs != RSMI_OK) {
        gp_error_set(err, GP_ERR_BACKEND_UNAVAILABLE,
                     "amd: no AMD GPU: rsmi_init of %s failed: %s%s%s: is the amdgpu driver "
                     "loaded (/sys/class/kfd)? On a machine without AMD GPUs use another "
                     "backend",
                     c->lib.name, status_text(&c->lib, j->rs), j->said[0] ? "; it said: " : "",
                     j->said);
        amd_close(c);
        return GP_ERR_BACKEND_UNAVAILABLE;
    }
    c->inited = true;
    if (j->count_rs != RSMI_OK) {
        gp_error_set(err, GP_ERR_BACKEND, "amd: rsmi_num_monitor_devices failed: %s",
                     status_text(&c->lib, j->count_rs));
        amd_close(c);
        return GP_ERR_BACKEND;
    }
    c->n_devs = j->count;
    *ctx = c;
    return GP_OK;
}

static gp_status amd_device_count(void *ctx, unsigned *count, gp_error *err)
{
    (void)err;
    *count = ((amd_ctx *)ctx)->n_devs;
    return GP_OK;
}

static gp_status check_index(const amd_ctx *c, unsigned index, gp_error *err)
{
    if (index >= c->n_devs)
        return gp_error_set(err, GP_ERR_DEVICE_NOT_FOUND,
                            "amd: device %u does not exist: ROCm SMI lists %u device%s", index,
                            c->n_devs, c->n_devs == 1 ? "" : "s");
    return GP_OK;
}

static gp_status amd_device_info(void *ctx, unsigned index, gp_device_info *out, gp_error *err)
{
    amd_ctx *c = ctx;
    gp_status st = check_index(c, index, err);
    amd_job *j = st == GP_OK ? job_for(c, JOB_INFO, index, err) : NULL;
    if (!j)
        return st != GP_OK ? st : err->status;
    st = call(c, index, "rsmi_dev_*_get", err);
    if (st == GP_OK)
        *out = j->info;
    return st;
}

static gp_status amd_driver_version(void *ctx, char *buf, size_t len, gp_error *err)
{
    amd_ctx *c = ctx;
    if (len)
        buf[0] = '\0';
    amd_job *j = job_for(c, JOB_DRIVER, AMD_NO_DEVICE, err);
    if (!j)
        return err->status;
    gp_status st = call(c, AMD_NO_DEVICE, "rsmi_version_str_get", err);
    if (st == GP_OK && len)
        snprintf(buf, len, "%s", j->driver);
    return st;
}

static gp_status amd_start(void *ctx, const unsigned *indices, size_t n, uint64_t interval_ns,
                           gp_error *err)
{
    amd_ctx *c = ctx;
    (void)interval_ns;
    for (size_t i = 0; i < n; i++) {
        gp_status st = check_index(c, indices[i], err);
        if (st != GP_OK)
            return st;
    }
    unsigned *slots = malloc((n ? n : 1) * sizeof *slots);
    if (!slots)
        return gp_error_set(err, GP_ERR_NO_MEMORY, "amd: out of memory for %zu devices", n);
    memcpy(slots, indices, n * sizeof *slots);
    free(c->slot_index);
    c->slot_index = slots;
    c->n_slots = n;
    return GP_OK;
}

static gp_status amd_read(void *ctx, size_t slot, unsigned flags, gp_device_sample *out,
                          gp_error *err)
{
    amd_ctx *c = ctx;
    (void)flags;
    if (slot >= c->n_slots)
        return gp_error_set(err, GP_ERR_INVALID_ARG, "amd: slot %zu is not sampled", slot);
    unsigned i = c->slot_index[slot];
    amd_job *j = job_for(c, JOB_READ, i, err);
    if (!j)
        return err->status;
    gp_status st = call(c, i, "rsmi_dev_*_get", err);
    if (st != GP_OK)
        return st;
    if (j->st != GP_OK) {
        *err = j->err;
        return j->st;
    }
    *out = j->s;
    return GP_OK;
}

static void amd_stop(void *ctx)
{
    amd_ctx *c = ctx;
    free(c->slot_index);
    c->slot_index = NULL;
    c->n_slots = 0;
}

const gp_backend gp_backend_amd = {
    .name = "amd",
    .self_paced = 0,
    .open = amd_open,
    .close = amd_close,
    .device_count = amd_device_count,
    .device_info = amd_device_info,
    .driver_version = amd_driver_version,
    .start = amd_start,
    .read = amd_read,
    .stop = amd_stop,
};
