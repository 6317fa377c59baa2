/*
 * sampler/backends/nvml_dev.h - what the NVML backend's two halves share:
 * nvml_calls.c makes the NVML calls (loading the library, and the jobs
 * that run on the runners' threads), nvml.c is the backend the sampler
 * sees, which runs those jobs with a deadline (runner.h).  Private to
 * sampler/backends/.
 */
#ifndef GP_SAMPLER_NVML_DEV_H
#define GP_SAMPLER_NVML_DEV_H

#include "nvml_abi.h"
#include "runner.h"
#include "gpu_profile.h"

#include <pthread.h>
#include <stdbool.h>
#include <dlfcn.h>
#include <stdint.h>

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
    /* GPM: all five or none (gpm_query NULL then). */
    nvml_gpm_query_device_support_fn gpm_query;
    nvml_gpm_sample_alloc_fn gpm_alloc;
    nvml_gpm_sample_free_fn gpm_free;
    nvml_gpm_sample_get_fn gpm_get;
    nvml_gpm_metrics_get_fn gpm_metrics;
    nvml_gpm_mig_sample_get_fn gpm_mig_get; /* NULL: no GPM on MIG instances */
    /* Per-process attribution (NULL when absent). */
    nvml_device_get_compute_running_processes_fn get_procs;
    nvml_device_get_process_utilization_fn get_proc_util;
    nvml_device_get_field_values_fn get_fields; /* NULL: every metric by its own call */
    /* MIG: the first three or none (mig_mode NULL then: no instances
     * listed); the instance ids optional (-1 without them). */
    nvml_device_get_mig_mode_fn mig_mode;
    nvml_device_get_max_mig_device_count_fn mig_max;
    nvml_device_get_mig_device_handle_by_index_fn mig_handle;
    nvml_device_get_instance_id_fn gi_id;
    nvml_device_get_instance_id_fn ci_id;
    /* Health (nvml_health.c, nvml_xid.c): each optional. */
    nvml_device_get_total_ecc_errors_fn get_ecc;
    nvml_device_get_retired_pages_fn get_retired;
    nvml_device_get_remapped_rows_fn get_remapped;
    nvml_device_get_uint_fn get_pcie_replay;
    nvml_device_get_uint_fn get_fan;
    nvml_device_get_nvlink_error_counter_fn get_nvlink_err;
    nvml_device_get_codec_util_fn get_enc, get_dec;
    nvml_device_get_pci_info_fn get_pci; /* nvmlDeviceGetPciInfo_v3 */
    /* XID events: all four or none (event_create NULL then). */
    nvml_event_set_create_fn event_create;
    nvml_device_register_events_fn event_register;
    nvml_event_set_wait_fn event_wait;
    nvml_event_set_free_fn event_free;

    /* The symbol names actually resolved, for error messages. */
    const char *init_name;
    const char *count_name;
    const char *handle_name;
    const char *reasons_name;
} nvml_api;

/*
 * The loaded library, shared by a context and its runners (reference
 * counted): it stays loaded while any of them holds it, so a call stuck in
 * NVML never finds its code unmapped.  The last reference shuts NVML down
 * (if it was initialised and not shut down yet) and unloads it: on the
 * thread of a stuck call when that call was the last holder.
 */
typedef struct nvml_lib {
    pthread_mutex_t mu;
    int refs;
    bool initialized, shut_down; /* under mu */
    void *handle;
    char name[512]; /* as given to dlopen, for messages */
    nvml_api api;
} nvml_lib;

/* Codes that mean "this metric is not available here", never an error
 * (inline: nvml_calls.c and nvml_mig.c both ask, and call each other
 * otherwise only one way). */
static inline bool gp_nvml_unavailable(nvmlReturn_t rc)
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

gp_status gp_nvml_lib_load(const char *path, nvml_lib **out, gp_error *err);
void gp_nvml_lib_ref(nvml_lib *l);
void gp_nvml_lib_unref(nvml_lib *l);

/* A job area's first member: which library, and which device (NVML_SYSTEM
 * for the calls that name none). */
#define NVML_SYSTEM UINT32_MAX
typedef struct nvml_key {
    nvml_lib *lib; /* a reference, dropped by the runner's on_free */
    unsigned index;
} nvml_key;

/* The system runner's job area: nvmlInit, nvmlDeviceGetCount,
 * nvmlSystemGetDriverVersion, nvmlShutdown. */
enum nvml_sys_op { NVML_OP_INIT, NVML_OP_COUNT, NVML_OP_DRIVER, NVML_OP_SHUTDOWN };
typedef struct nvml_sys {
    nvml_key key;
    enum nvml_sys_op op;
    unsigned count;
    char driver[NVML_DRIVER_VERSION_BUFFER_SIZE];
    nvmlEventSet_t event_set; /* gp_nvml_job_event_set: made, or to free */
    bool event_free;          /* input: free event_set rather than make one */
    gp_status status;
    gp_error err;
} nvml_sys;

/* The most processes read per device and sample (more: n/a). */
#define NVML_PROC_MAX 256
/* MIG device handles looked at per GPU (an H100 has at most 7). */
#define NVML_MIG_MAX 16

/* A device runner's job area: what is kept between calls (the handle of
 * the current sampling run, which calls the driver takes), one call's
 * input (gen, flags) and its output. */
typedef struct nvml_dev {
    nvml_key key;
    bool sample_pcie;
    uint64_t gen;         /* input: the sampling run (start() counts them) */
    uint64_t started_gen; /* the run the handle below belongs to; 0: none */
    nvmlDevice_t dev;
    bool mem_v2_ok, temp_v_ok;
    char name[NVML_DEVICE_NAME_BUFFER_SIZE];
    /* GPM, per run: two samples (the previous reading and the next), set
     * up by start when the device supports GPM; freed by gp_nvml_job_stop
     * or the next start. */
    bool gpm_ok, gpm_have_prev;
    nvmlGpmSample_t gpm_prev, gpm_cur;
    nvmlGpmMetricsGet_t gpm_req; /* ~13 KB: kept here, not on a stack */
    unsigned flags;              /* input: GP_READ_* */
    /* Per-process attribution (nvml_procs.c): input, the processes to sum
     * (n_pids 0: none); kept between reads, the newest utilisation sample
     * time seen and the last sums (repeated while the driver has no newer
     * sample); scratch for NVML's answers. */
    /* Field values (nvml_fields.c), per run: the GP_M_* metrics still
     * read through nvmlDeviceGetFieldValues (a field that once answered
     * anything but success is read by its own call from then on). */
    uint32_t field_metrics;
    int pids[GP_PROC_PIDS_MAX];
    size_t n_pids;
    unsigned long long proc_last_ts;
    bool proc_have_util;
    uint32_t proc_util[4]; /* ours sm, mem; all sm, mem */
    nvmlProcessInfo_t proc_infos[NVML_PROC_MAX];
    nvmlProcessUtilizationSample_t proc_samples[NVML_PROC_MAX];
    /* The list of every process on the device (nvml_procs.c, serve
     * --processes): input, whether to read it; output, the list (plist_ok:
     * read this time); kept between reads, the newest utilisation sample
     * seen and each process's last SM share (repeated while the driver has
     * no newer sample). */
    bool list_procs, plist_ok;
    unsigned n_plist, n_plist_sm;
    gp_process_use plist[NVML_PROC_MAX];
    unsigned long long plist_last_ts;
    bool plist_have_util;
    struct nvml_proc_sm {
        unsigned pid, sm_pct;
    } plist_sm[NVML_PROC_MAX];
    /* Input, set before every job: this device is MIG handle mig_slot of
     * the GPU at NVML index parent (is_mig false: a whole GPU, key.index). */
    bool is_mig;
    unsigned parent, mig_slot;
    /* A MIG instance's run (start_device): its parent's handle and GPU
     * instance id, which its GPM samples are taken with (nvml_mig.c). */
    nvmlDevice_t parent_dev;
    int32_t mig_gi;
    /* gp_nvml_job_mig_list's answer: key.index's occupied MIG slots. */
    unsigned n_mig;
    unsigned mig_slots[NVML_MIG_MAX];
    /* Health (nvml_health.c), per run: the counters are read at the first
     * read and every NVML_HEALTH_PERIOD_NS (health_due for that read),
     * kept in `health` and repeated in every sample between;
     * mem_temp_field_ok: the memory temperature field still answers. */
    bool health_due, mem_temp_field_ok;
    /* gp_nvml_job_event_register: the set (input), whether the device
     * took the XID registration (output). */
    nvmlEventSet_t event_set;
    bool event_ok;
    uint64_t health_read_ns; /* 0: not read this run */
    gp_device_sample health;
    gp_device_info info;
    gp_device_sample sample;
    gp_status status;
    gp_error err;
} nvml_dev;

/* Adds the per-process fields to out (nvml_procs.c): never fails the read
 * (an NVML answer other than success leaves the bits clear). */
void gp_nvml_read_procs(gp_runner *r, nvml_dev *d, gp_device_sample *out);
/* With d->list_procs: lists every process on the device into d->plist
 * (plist_ok false when the driver refused the listing). */
void gp_nvml_list_procs(gp_runner *r, nvml_dev *d);

/* The metrics read through nvmlDeviceGetFieldValues where the driver
 * answers them (nvml_fields.c). */
#define NVML_FIELD_METRICS (GP_M_ENERGY | GP_M_POWER)

/* Reads the metrics of d->field_metrics this read wants in one
 * nvmlDeviceGetFieldValues call; returns the GP_M_* bits it filled (the
 * caller reads the rest by their own calls).  Never fails the read. */
uint32_t gp_nvml_read_fields(gp_runner *r, nvml_dev *d, gp_device_sample *out);

/* The health counters of a whole GPU into out->health_* (nvml_health.c):
 * never fails the read (an unavailable or failing call leaves its bit
 * clear: the other metrics report a lost GPU).  gp_nvml_health_begin
 * decides, before the field values are asked, whether this read is one
 * that reads the counters (the memory temperature rides on the field
 * values call, nvml_fields.c). */
#define NVML_HEALTH_PERIOD_NS 5000000000ull
void gp_nvml_health_resolve(void *lib_handle, nvml_api *a);

/* dlsym of name in lib, NULL when absent: a NULL result is only an error
 * if dlerror says so. */
static inline void *gp_nvml_sym(void *lib, const char *name)
{
    dlerror();
    void *p = dlsym(lib, name);
    return dlerror() ? NULL : p;
}
/* Stores a dlsym result in a function pointer without a cast ISO C lacks. */
#define NVML_SET_FN(dst, p)                                                                        \
    do {                                                                                           \
        void *p_ = (p);                                                                            \
        _Static_assert(sizeof(dst) == sizeof p_, "function and data pointers differ in size");     \
        memcpy(&(dst), &p_, sizeof p_);                                                            \
    } while (0)
void gp_nvml_health_begin(nvml_dev *d, uint64_t now_mono_ns);
void gp_nvml_read_health(gp_runner *r, nvml_dev *d, gp_device_sample *out);

/* XID events (nvml_xid.c).  The event set is made and freed on the
 * system runner (gp_nvml_job_event_set) and each GPU registered on its own
 * runner (gp_nvml_job_event_register), each bounded like any call; then a
 * thread waits on nvmlEventSetWait_v2 with a timeout for the devices that
 * took the registration, and frees the set when it ends (NULL: none took
 * it, no thread).  Stop returns within about one wait timeout; a thread
 * stuck inside NVML is left to finish on its own (it holds its own
 * reference to the library).  Fill adds the device's XID figures to out
 * (GP_H_XID) when it is registered. */
typedef struct nvml_xid nvml_xid;
void gp_nvml_job_event_set(gp_runner *r, void *job);      /* nvml_sys */
void gp_nvml_job_event_register(gp_runner *r, void *job); /* nvml_dev */
nvml_xid *gp_nvml_xid_start(nvml_lib *lib, nvmlEventSet_t set, const unsigned *indices,
                            const nvmlDevice_t *handles, size_t n);
void gp_nvml_xid_stop(nvml_xid *x);
void gp_nvml_xid_fill(nvml_xid *x, unsigned index, gp_device_sample *out);

/* The jobs (run on a runner's thread; every NVML call is named first with
 * gp_runner_doing).  Each fills status and err of its area. */
void gp_nvml_job_system(gp_runner *r, void *job);   /* nvml_sys, by op */
void gp_nvml_job_info(gp_runner *r, void *job);     /* nvml_dev: info of key.index */
void gp_nvml_job_start(gp_runner *r, void *job);    /* nvml_dev: handle and name for gen */
void gp_nvml_job_read(gp_runner *r, void *job);     /* nvml_dev: sample (starts if needed) */
void gp_nvml_job_stop(gp_runner *r, void *job);     /* nvml_dev: frees the run's GPM samples */
void gp_nvml_job_mig_list(gp_runner *r, void *job); /* nvml_dev: key.index's MIG slots */

/* nvml_mig.c.  The occupied MIG slots of GPU dev into slots[NVML_MIG_MAX]
 * (none when MIG is off or absent); an unexpected code is returned with
 * *fn the function that gave it.  An instance's GPU / compute instance
 * ids (-1 unknown).  NVML names an instance "<parent's name> MIG
 * <profile>": the profile is what follows the last " MIG " ("" without). */
nvmlReturn_t gp_nvml_mig_slots(gp_runner *r, const nvml_api *a, nvmlDevice_t dev, unsigned *slots,
                               unsigned *n, const char **fn);
void gp_nvml_mig_ids(gp_runner *r, const nvml_api *a, nvmlDevice_t dev, int32_t *gi, int32_t *ci);
void gp_nvml_mig_profile(const char *name, char *out, size_t cap);
/* GPM on d (nvml_mig.c): support asked of the device, or for a MIG
 * instance of its parent (NOT_SUPPORTED without nvmlGpmMigSampleGet or a
 * GPU instance id); a sample of the device, or of the instance's GPU
 * instance through its parent.  Each names its call to the runner. */
nvmlReturn_t gp_nvml_gpm_support(gp_runner *r, nvml_dev *d, nvmlGpmSupport_t *sup);
nvmlReturn_t gp_nvml_gpm_sample(gp_runner *r, const nvml_dev *d, nvmlGpmSample_t sample);
#define GP_NVML_GPM_SAMPLE_FN(d) ((d)->is_mig ? "nvmlGpmMigSampleGet" : "nvmlGpmSampleGet")
/* MIG instance d's handle under its parent's (an instance gone since the
 * listing: GP_ERR_DEVICE_NOT_FOUND, saying so). */
gp_status gp_nvml_mig_open(gp_runner *r, const nvml_dev *d, nvmlDevice_t parent, nvmlDevice_t *dev,
                           gp_error *err);

#endif /* GP_SAMPLER_NVML_DEV_H */
