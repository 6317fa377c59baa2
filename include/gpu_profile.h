/*
 * gpu_profile.h - the gpu-profile sampler library.
 *
 * Samples device metrics (util.gpu, util.mem, memory, power, energy,
 * temperature, clocks, throttle reasons) on a background thread through a
 * backend (NVML loaded with dlopen, a long-lived nvidia-smi, or none) and
 * summarises a region.  Two styles, as in the seed's Python API:
 *
 *   - gp_profile_call(): run a function and profile it (the decorator);
 *   - gp_monitor_create/start/stop/destroy: profile a region (the context
 *     manager).
 *
 * Errors are values: every call that can fail returns gp_status and, when
 * given a gp_error, a message naming the input and the fix.  The library
 * never prints (except the summary report a caller asks for), never exits
 * and never aborts.
 */
#ifndef GPU_PROFILE_H
#define GPU_PROFILE_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#ifdef __cplusplus
extern "C" {
#endif

#if defined(_WIN32)
#define GP_API
#elif defined(__GNUC__) || defined(__clang__)
#define GP_API __attribute__((visibility("default")))
#else
#define GP_API
#endif

#define GP_VERSION_MAJOR 0
#define GP_VERSION_MINOR 1
#define GP_VERSION_PATCH 0
#define GP_VERSION_STRING "0.1.0"
/* Encoded as MAJOR*10000 + MINOR*100 + PATCH. */
#define GP_VERSION_NUMBER (GP_VERSION_MAJOR * 10000 + GP_VERSION_MINOR * 100 + GP_VERSION_PATCH)

/* Runtime version: the library actually loaded, "MAJOR.MINOR.PATCH". */
GP_API const char *gp_version(void);
GP_API int gp_version_number(void);

/* ------------------------------------------------------------------ errors */

typedef enum gp_status {
    GP_OK = 0,
    GP_ERR_INVALID_ARG = 1,         /* an option or argument is out of range */
    GP_ERR_NO_MEMORY = 2,           /* an allocation failed */
    GP_ERR_BACKEND_UNAVAILABLE = 3, /* library or binary missing, driver not loaded */
    GP_ERR_BACKEND = 4,             /* the backend answered with an error */
    GP_ERR_DEVICE_NOT_FOUND = 5,    /* a device index that does not exist */
    GP_ERR_DEVICE_LOST = 6,         /* the device fell off the bus (GPU_IS_LOST) */
    GP_ERR_TIMEOUT = 7,             /* the backend did not answer in time */
    GP_ERR_STATE = 8,               /* a call out of order (stop before start, ...) */
    GP_ERR_THREAD = 9,              /* a thread could not be created */
    GP_ERR_IO = 10,                 /* a read or write failed */
    GP_ERR_NOT_SUPPORTED = 11,      /* the backend or device does not offer it */
    GP_ERR_PARSE = 12,              /* malformed backend output */
    GP_ERR_CUPTI = 13               /* CUPTI answered with an error (gpu_metrics.h) */
} gp_status;

#define GP_ERROR_MESSAGE_MAX 1024

/* Optional error detail: pass one to any call that takes it, or NULL. */
typedef struct gp_error {
    gp_status status;
    char message[GP_ERROR_MESSAGE_MAX];
} gp_error;

/* A short static description of a status ("invalid argument", ...). */
GP_API const char *gp_strerror(gp_status status);

/* --------------------------------------------------------------- backends */

typedef enum gp_backend_kind {
    GP_BACKEND_AUTO = 0, /* nvml, else smi */
    GP_BACKEND_NVML = 1,
    GP_BACKEND_SMI = 2,
    GP_BACKEND_NONE = 3, /* no sampling: dry runs */
    GP_BACKEND_AMD = 4   /* ROCm SMI (librocm_smi64, dlopen); auto's choice when no
                            NVIDIA GPU answers (docs/concepts.md, "AMD GPUs") */
} gp_backend_kind;

/* "auto", "nvml", "smi", "none"; NULL for an unknown value. */
GP_API const char *gp_backend_name(gp_backend_kind kind);
/* Parses "auto" | "nvml" | "smi" | "none" | "amd" (as gp_backend_name writes them). */
GP_API gp_status gp_backend_parse(const char *text, gp_backend_kind *out, gp_error *err);

/* ---------------------------------------------------------------- samples */

/* Validity bits: a metric whose bit is clear was not reported by the
 * device/backend for that sample.  It is written as null, never as 0. */
enum {
    GP_M_UTIL_GPU = 1u << 0,
    GP_M_UTIL_MEM = 1u << 1,
    GP_M_MEM_USED = 1u << 2,
    GP_M_MEM_TOTAL = 1u << 3,
    GP_M_POWER = 1u << 4,
    GP_M_ENERGY = 1u << 5,
    GP_M_TEMP = 1u << 6,
    GP_M_CLOCK_SM = 1u << 7,
    GP_M_CLOCK_MEM = 1u << 8,
    GP_M_THROTTLE = 1u << 9,
    GP_M_PCIE_TX = 1u << 10,
    GP_M_PCIE_RX = 1u << 11
};

/* GPM metrics (NVML's GPU Performance Monitoring, Hopper and later),
 * computed by the driver between two consecutive samples of a device, so
 * a device's first sample of a region has none.  gp_device_sample.gpm[i]
 * and gp_summary.gpm_*[i] are meaningful only when GP_M_GPM(i) is set in
 * their `valid`; a device without GPM never sets them (docs/concepts.md). */
typedef enum gp_gpm_metric {
    GP_GPM_SM_ACTIVE = 0,     /* % of time an SM had a warp resident (SM activity) */
    GP_GPM_SM_OCCUPANCY = 1,  /* % of the SMs' warp slots in use */
    GP_GPM_TENSOR_ACTIVE = 2, /* % of cycles any tensor pipe was active */
    GP_GPM_TENSOR_DFMA = 3,   /* % tensor (FP64 DFMA) */
    GP_GPM_TENSOR_HMMA = 4,   /* % tensor (HMMA: FP16/BF16/TF32) */
    GP_GPM_TENSOR_IMMA = 5,   /* % tensor (IMMA: integer) */
    GP_GPM_DRAM_ACTIVE = 6,   /* % of peak DRAM bandwidth */
    GP_GPM_FP64_ACTIVE = 7,   /* % of cycles the FP64 pipe was active */
    GP_GPM_FP32_ACTIVE = 8,
    GP_GPM_FP16_ACTIVE = 9,
    GP_GPM_PCIE_TX = 10,   /* bytes/s */
    GP_GPM_PCIE_RX = 11,   /* bytes/s */
    GP_GPM_NVLINK_TX = 12, /* bytes/s, every link */
    GP_GPM_NVLINK_RX = 13, /* bytes/s, every link */
    GP_GPM_COUNT = 14
} gp_gpm_metric;

/* The valid bit of GPM metric i (bits 12..25). */
#define GP_M_GPM(i) (1u << (12u + (unsigned)(i)))
#define GP_M_GPM_ALL (((1u << GP_GPM_COUNT) - 1u) << 12u)

/* The metric's name as the JSON and the recorder write it ("sm_active",
 * "tensor_active", "pcie_tx_bps", ...); NULL for an unknown one. */
GP_API const char *gp_gpm_metric_name(gp_gpm_metric m);
/* 1 for the bytes/s metrics (GP_GPM_PCIE_*, GP_GPM_NVLINK_*), 0 for %. */
GP_API int gp_gpm_metric_is_rate(gp_gpm_metric m);

/* Throttle ("clock event") reason bits, as NVML defines them. */
enum {
    GP_THROTTLE_GPU_IDLE = 0x1ull,
    GP_THROTTLE_APP_CLOCKS = 0x2ull,
    GP_THROTTLE_SW_POWER_CAP = 0x4ull,
    GP_THROTTLE_HW_SLOWDOWN = 0x8ull,
    GP_THROTTLE_SYNC_BOOST = 0x10ull,
    GP_THROTTLE_SW_THERMAL = 0x20ull,
    GP_THROTTLE_HW_THERMAL = 0x40ull,
    GP_THROTTLE_HW_POWER_BRAKE = 0x80ull,
    GP_THROTTLE_DISPLAY_CLOCK = 0x100ull
};

/* One device's metrics at one instant. */
typedef struct gp_device_sample {
    uint32_t valid;        /* GP_M_* bits */
    uint32_t util_gpu_pct; /* 0..100 */
    uint32_t util_mem_pct; /* 0..100 */
    uint64_t mem_used_bytes;
    uint64_t mem_total_bytes;
    uint32_t power_mw;
    uint64_t energy_mj; /* driver counter: total since driver load */
    int32_t temp_c;
    uint32_t clock_sm_mhz;
    uint32_t clock_mem_mhz;
    uint64_t throttle_reasons; /* GP_THROTTLE_* bits */
    uint32_t pcie_tx_kbps;     /* KB/s */
    uint32_t pcie_rx_kbps;
    /* Appended (GPM): GPM metrics (gp_gpm_metric), valid with GP_M_GPM(i). */
    double gpm[GP_GPM_COUNT];
    /* Appended (per-process, NVML only, when gp_options.pids names
     * processes): "ours" are the listed processes (and their descendants
     * with pid_tree), "all" every compute process NVML lists on the device.
     * Memory with GP_M_PROC_MEM, utilisation with GP_M_PROC_UTIL
     * (docs/concepts.md, "Per-process attribution"). */
    uint64_t proc_mem_used_bytes;     /* ours: sum of their GPU memory */
    uint64_t proc_all_mem_used_bytes; /* every process NVML lists */
    uint32_t proc_count;              /* ours running on the device */
    uint32_t proc_all_count;          /* every process NVML lists */
    uint32_t proc_sm_pct;             /* ours: sum of their SM utilisation, % */
    uint32_t proc_mem_pct;            /* ours: sum of their memory-controller utilisation, % */
    uint32_t proc_all_sm_pct;         /* every process with a sample */
    uint32_t proc_all_mem_pct;
    /* Appended (health, NVML only; docs/metrics.md "Health"): each field
     * valid with its GP_H_* bit in health_valid, absent (never 0) where the
     * device does not report it.  Counters are the driver's own (volatile:
     * since the driver loaded; aggregate: the device's lifetime). */
    uint32_t health_valid;         /* GP_H_* bits */
    uint32_t fan_speed_pct;        /* GP_H_FAN: % of the fan's maximum speed */
    uint64_t ecc_sbe_volatile;     /* GP_H_ECC_VOL: corrected (single-bit) */
    uint64_t ecc_dbe_volatile;     /* GP_H_ECC_VOL: uncorrected (double-bit) */
    uint64_t ecc_sbe_aggregate;    /* GP_H_ECC_AGG */
    uint64_t ecc_dbe_aggregate;    /* GP_H_ECC_AGG */
    uint32_t retired_pages_sbe;    /* GP_H_RETIRED: pages retired for repeated SBEs */
    uint32_t retired_pages_dbe;    /* GP_H_RETIRED: pages retired for a DBE */
    uint32_t remapped_rows_corr;   /* GP_H_REMAP: rows remapped for correctable errors */
    uint32_t remapped_rows_unc;    /* GP_H_REMAP: rows remapped for uncorrectable errors */
    uint32_t remap_pending;        /* GP_H_REMAP: 1: a remap waits for a GPU reset */
    uint32_t remap_failure;        /* GP_H_REMAP: 1: a remap failed (no spare row) */
    uint64_t pcie_replay_count;    /* GP_H_PCIE_REPLAY */
    uint64_t nvlink_crc_flit_errs; /* GP_H_NVLINK: every link, summed */
    uint64_t nvlink_recovery_errs; /* GP_H_NVLINK: every link, summed */
    int32_t mem_temp_c;            /* GP_H_MEM_TEMP: HBM temperature */
    uint32_t enc_util_pct;         /* GP_H_ENC */
    uint32_t dec_util_pct;         /* GP_H_DEC */
    uint32_t xid_last;             /* GP_H_XID: the newest XID code (0: none yet) */
    uint64_t xid_count;            /* GP_H_XID: XID events seen since sampling started */
} gp_device_sample;

/* The valid bits of the health fields (gp_device_sample.health_valid). */
enum {
    GP_H_FAN = 1u << 0,
    GP_H_ECC_VOL = 1u << 1,
    GP_H_ECC_AGG = 1u << 2,
    GP_H_RETIRED = 1u << 3,
    GP_H_REMAP = 1u << 4,
    GP_H_PCIE_REPLAY = 1u << 5,
    GP_H_NVLINK = 1u << 6,
    GP_H_MEM_TEMP = 1u << 7,
    GP_H_ENC = 1u << 8,
    GP_H_DEC = 1u << 9,
    GP_H_XID = 1u << 10 /* the device's XID events are watched (nvmlEventSetWait) */
};

/* The valid bits of the per-process fields (after GPM's 12..25). */
#define GP_M_PROC_MEM (1u << 26)
#define GP_M_PROC_UTIL (1u << 27)

/* A sample as kept by a monitor (keep_samples). */
typedef struct gp_sample {
    uint64_t t_mono_ns;    /* CLOCK_MONOTONIC */
    uint64_t t_wall_ns;    /* CLOCK_REALTIME, ns since the Unix epoch */
    uint32_t slot;         /* position in the monitor's device list */
    uint32_t device_index; /* the backend's device index */
    gp_device_sample m;
} gp_sample;

#define GP_NAME_MAX 96

/*
 * A MIG instance's identity (docs/concepts.md, "MIG instances").  A GPU in
 * MIG mode is listed as itself (its power, temperature and clocks) and
 * each of its MIG instances as a device of its own, numbered after every
 * whole GPU; is_mig is 0 for a whole GPU and the other fields are then
 * empty.  Unknown ids are -1 (0 is a real instance id).
 */
#define GP_MIG_PROFILE_MAX 32
#define GP_PCI_BUS_ID_MAX 32
typedef struct gp_mig_info {
    uint32_t is_mig;       /* 1: a MIG instance of parent_index */
    uint32_t parent_index; /* the parent GPU's device index */
    char parent_uuid[GP_NAME_MAX];
    char parent_name[GP_NAME_MAX];
    char profile[GP_MIG_PROFILE_MAX]; /* "1g.10gb"; "" when unknown */
    int32_t gpu_instance_id;          /* GI id; -1 when unknown */
    int32_t compute_instance_id;      /* CI id; -1 when unknown */
} gp_mig_info;

typedef struct gp_device_info {
    uint32_t index;
    char name[GP_NAME_MAX];
    char uuid[GP_NAME_MAX];
    uint32_t valid; /* GP_M_MEM_TOTAL when mem_total_bytes is known */
    uint64_t mem_total_bytes;
    /* Appended (MIG): set when this device is a MIG instance. */
    gp_mig_info mig;
    /* Appended: the PCI bus id ("00000000:07:00.0" as NVML writes it; a MIG
     * instance: its GPU's; amd: "dddd:bb:dd.f"); "" when unknown. */
    char pci_bus_id[GP_PCI_BUS_ID_MAX];
} gp_device_info;

/* ---------------------------------------------------------------- summary */

typedef enum gp_energy_source {
    GP_ENERGY_NONE = 0,          /* no energy figure: neither counter nor power */
    GP_ENERGY_COUNTER = 1,       /* difference of the driver's energy counter */
    GP_ENERGY_POWER_INTEGRAL = 2 /* trapezoidal integral of the power samples */
} gp_energy_source;

/* "none", "counter", "power_integral". */
GP_API const char *gp_energy_source_name(gp_energy_source src);

#define GP_SPARK_WIDTH 32
#define GP_SPARK_NONE 255 /* a sparkline cell with no util.gpu sample */
#define GP_NOTE_MAX 512

/*
 * The statistics of one device over a region (the seed's GpuSummary).
 * A field is meaningful only when its GP_M_* bit is set in `valid`
 * (util_* <- GP_M_UTIL_GPU/GP_M_UTIL_MEM, mem_used_max <- GP_M_MEM_USED,
 * power_* <- GP_M_POWER, temp_max_c <- GP_M_TEMP, clock_* <- GP_M_CLOCK_*,
 * throttle_reasons_seen <- GP_M_THROTTLE, energy_j <- energy_source != NONE,
 * busy_time_est_s <- GP_M_UTIL_GPU, gpm_*[i] <- GP_M_GPM(i)).  Statistics cover the samples taken
 * after warmup_s; percentiles are exact (nearest rank).
 */
typedef struct gp_summary {
    uint32_t device_index;
    char name[GP_NAME_MAX];
    char uuid[GP_NAME_MAX];
    char backend[16];       /* backend that sampled: "nvml", "smi", "none" */
    char note[GP_NOTE_MAX]; /* why the backend fell back to none, and what
                               nvidia-smi's pace did (stalled, flooded:
                               docs/concepts.md); "" if neither */

    double duration_s;       /* region wall time, start to stop */
    double interval_s;       /* requested sampling interval */
    double warmup_s;         /* requested warmup */
    uint64_t sample_count;   /* samples in the statistics (after warmup) */
    uint64_t samples_warmup; /* samples dropped by warmup */
    double interval_mean_s;  /* achieved mean interval between samples; 0 if < 2 */

    uint32_t valid;       /* GP_M_* bits with at least one valid sample */
    double util_gpu_mean; /* % */
    uint32_t util_gpu_p50;
    uint32_t util_gpu_p95;
    uint32_t util_gpu_max;
    double util_mem_mean;
    uint32_t util_mem_max;
    uint64_t mem_used_max_bytes;
    uint64_t mem_total_bytes;
    double power_mean_mw;
    uint32_t power_max_mw;
    double energy_j;
    gp_energy_source energy_source;
    int32_t temp_max_c;
    double clock_sm_mean_mhz;
    double clock_mem_mean_mhz;
    uint64_t throttle_reasons_seen; /* OR of every sample's reasons */
    double busy_time_est_s;         /* live span * util_gpu_mean / 100: the live
                                       span is duration_s, or device_error_at_s
                                       for a device that failed mid-run */

    /* Mean util.gpu per cell (0..100) or GP_SPARK_NONE; spark_len cells. */
    uint8_t spark[GP_SPARK_WIDTH];
    uint32_t spark_len;

    /* A device that failed mid-run (GPU_IS_LOST, ...), or whose backend
     * call did not answer in time (GP_ERR_TIMEOUT; at 0 s when that was at
     * discovery): the statistics cover the samples before the failure. */
    gp_status device_status;
    char device_error[GP_NOTE_MAX];
    double device_error_at_s; /* seconds into the region */

    /* Appended (GPM): GPM statistics per gp_gpm_metric, valid with
     * GP_M_GPM(i) in `valid`.  Percentages' p95 is the nearest rank over
     * values rounded to 0.1 %; rates' over a log scale of 1/32 octave
     * (within 2.2 % below the true value; docs/concepts.md). */
    double gpm_mean[GP_GPM_COUNT];
    double gpm_p95[GP_GPM_COUNT];
    double gpm_max[GP_GPM_COUNT];

    /* Appended: the seconds the energy figure covers (first to last
     * counter reading, or first to last power reading), valid with
     * energy_source != NONE: a figure that covers less than duration_s
     * (nvidia-smi's first row comes late, a device lost mid-run) says so. */
    double energy_span_s;
    /* Appended (per-process): proc_requested is 1 when the monitor was
     * given processes (gp_options.pids); the rest is valid with
     * GP_M_PROC_MEM (memory, process counts) or GP_M_PROC_UTIL
     * (utilisation) in `valid`.  "ours" and "all" as in gp_device_sample. */
    uint32_t proc_requested;
    uint32_t proc_count_max;              /* most of ours seen at once on the device */
    double proc_mem_used_mean_bytes;      /* ours */
    uint64_t proc_mem_used_max_bytes;     /* ours */
    uint64_t proc_all_mem_used_max_bytes; /* every process */
    double proc_sm_mean_pct;              /* ours */
    uint32_t proc_sm_max_pct;             /* ours */
    double proc_mem_mean_pct;             /* ours */
    uint32_t proc_mem_max_pct;            /* ours */
    double proc_all_sm_mean_pct;          /* every process */

    /* Appended (MIG): the device's MIG identity (gp_device_info.mig). */
    gp_mig_info mig;

    /* Appended (more of the distribution, as profgpu 0.3 gives it).
     * util.gpu's, valid with GP_M_UTIL_GPU: min and the exact nearest-rank
     * p5 / p99 (as p50 / p95); the population standard deviation (NaN with
     * fewer than 2 readings: one reading says nothing of the spread); the
     * share of readings under 5 % (idle) and at 50 % or more (active). */
    uint32_t util_gpu_min;
    uint32_t util_gpu_p5;
    uint32_t util_gpu_p99;
    double util_gpu_std;
    double util_gpu_idle_pct;   /* % of the readings with util.gpu < 5 % */
    double util_gpu_active_pct; /* % of the readings with util.gpu >= 50 % */
    double mem_used_mean_bytes; /* valid with GP_M_MEM_USED */
    double temp_mean_c;         /* valid with GP_M_TEMP */
    uint32_t clock_sm_max_mhz;  /* valid with GP_M_CLOCK_SM */

    /* Appended ("busy but stuck", docs/concepts.md): gp_stuck_feed's
     * default rule over every sample, its stretch gp_options.stuck_after_s
     * turned into samples at interval_s.  stuck_known 0: no sample had
     * util.gpu, GPM SM activity and power (the others are then 0). */
    uint32_t stuck_known;
    uint32_t stuck_episodes; /* stretches that reached the rule */
    double stuck_longest_s;  /* the longest matching run, samples x interval_s */

    /* Appended (health, NVML only; docs/concepts.md "Health"): what the
     * health figures did over the region, warmup samples included (an
     * error then is still one).  Each valid with its GP_H_* bit in
     * health_valid (some sample had it; GP_H_ECC_AGG never), else 0 and
     * unknown.  *_increase: the counter's rises between consecutive
     * readings, summed (a driver reload that resets it adds nothing). */
    uint32_t health_valid;
    uint64_t xid_count;                   /* GP_H_XID: XID events seen */
    uint32_t xid_last;                    /* GP_H_XID: the newest code; 0: none */
    uint64_t ecc_sbe_volatile_increase;   /* GP_H_ECC_VOL */
    uint64_t ecc_dbe_volatile_increase;   /* GP_H_ECC_VOL */
    uint64_t retired_pages_sbe_increase;  /* GP_H_RETIRED */
    uint64_t retired_pages_dbe_increase;  /* GP_H_RETIRED */
    uint64_t remapped_rows_corr_increase; /* GP_H_REMAP */
    uint64_t remapped_rows_unc_increase;  /* GP_H_REMAP */
    uint32_t remap_pending;               /* GP_H_REMAP: 1: some sample had one pending */
    uint32_t remap_failure;               /* GP_H_REMAP: 1: some sample had one failed */
    uint64_t pcie_replay_increase;        /* GP_H_PCIE_REPLAY */
    uint64_t nvlink_crc_flit_increase;    /* GP_H_NVLINK */
    uint64_t nvlink_recovery_increase;    /* GP_H_NVLINK */
    uint32_t fan_max_pct;                 /* GP_H_FAN */
    int32_t mem_temp_max_c;               /* GP_H_MEM_TEMP */
    double enc_util_mean_pct;             /* GP_H_ENC */
    uint32_t enc_util_max_pct;            /* GP_H_ENC */
    double dec_util_mean_pct;             /* GP_H_DEC */
    uint32_t dec_util_max_pct;            /* GP_H_DEC */
} gp_summary;

enum {
    GP_FMT_ASCII = 1u << 0, /* ASCII sparkline instead of Unicode blocks */
    GP_FMT_PRETTY = 1u << 1 /* JSON: indented, one field per line */
};

/* JSON rendering schema (see docs/json-schema.md). */
#define GP_SUMMARY_SCHEMA "gpu-profile.summary"
#define GP_SUMMARY_SCHEMA_VERSION 1

/* snprintf-style renderings: write at most cap bytes (NUL included) to buf
 * and return the length the full text needs (excluding the NUL). */
GP_API size_t gp_summary_format(const gp_summary *s, unsigned flags, char *buf, size_t cap);
GP_API size_t gp_summary_to_json(const gp_summary *s, unsigned flags, char *buf, size_t cap);
GP_API size_t gp_summary_sparkline(const gp_summary *s, unsigned flags, char *buf, size_t cap);
/* Writes gp_summary_format() to f. */
GP_API gp_status gp_summary_print(const gp_summary *s, FILE *f, unsigned flags, gp_error *err);

/* ------------------------------------------------------ across runs */

/*
 * One metric over several runs of a workload (gpu-profile --repeats; the
 * multi-run API): each run's figure is one value.  A value that is not
 * finite (NaN: the run did not measure it) is left out and counted in
 * n_unknown.  std is the sample standard deviation (n - 1, as profgpu's
 * RunStats): NaN with fewer than 2 values; mean, min and max are NaN with
 * none.  docs/concepts.md, "Repeated runs".
 */
typedef struct gp_run_stats {
    uint64_t n;         /* values counted */
    uint64_t n_unknown; /* values left out (not finite) */
    double mean;
    double std;
    double min;
    double max;
} gp_run_stats;

/* Fills out from values[0..n).  GP_ERR_INVALID_ARG when out is NULL, or
 * values is NULL while n > 0. */
GP_API gp_status gp_run_stats_compute(const double *values, size_t n, gp_run_stats *out,
                                      gp_error *err);

/* ------------------------------------------------------- busy but stuck */

/*
 * "Busy but stuck" (docs/concepts.md): a GPU the driver calls busy
 * (util.gpu >= util_min_pct) whose SMs do almost nothing (GPM SM activity
 * <= sm_active_max_pct) at near-idle power (<= power_idle_ratio x the
 * lowest power this detector has seen on the device) for after_samples
 * samples in a row: the signature of a hung collective (NCCL spinning on
 * a flag that never flips).  Decided on sample counts, so the same
 * samples give the same answer at any pace.
 */
typedef struct gp_stuck_rule {
    double util_min_pct;      /* default 90 */
    double sm_active_max_pct; /* default 5 */
    double power_idle_ratio;  /* default 1.25 */
    uint32_t after_samples;   /* default 60 (60 s at a 1 s interval) */
} gp_stuck_rule;

typedef struct gp_stuck_state {
    uint32_t min_power_mw;  /* the lowest power seen; 0: none yet */
    uint32_t run;           /* matching samples in a row */
    int known;              /* the last sample had all three metrics */
    int stuck;              /* run >= after_samples */
    uint64_t episodes;      /* stretches that reached after_samples */
    uint64_t longest_run;   /* the longest run of matching samples */
    uint64_t known_samples; /* samples that had all three metrics */
} gp_stuck_state;

GP_API void gp_stuck_rule_init(gp_stuck_rule *rule);
/* Adds one sample; returns 1 while stuck, 0 when not, -1 when unknown
 * (util.gpu, GPM SM activity or power missing from this sample: the run
 * is broken, never counted as healthy or stuck). */
GP_API int gp_stuck_feed(gp_stuck_state *st, const gp_stuck_rule *rule,
                         const gp_device_sample *sample);

/* ---------------------------------------------------------------- options */

typedef void (*gp_sync_fn)(void *user);
typedef void (*gp_report_fn)(const gp_summary *summary, void *user);
typedef void (*gp_sample_fn)(const gp_sample *sample, void *user);

typedef enum gp_report_mode {
    GP_REPORT_PRINT = 0,   /* gp_summary_format() to report_file (NULL: stderr) */
    GP_REPORT_NONE = 1,    /* nothing */
    GP_REPORT_CALLBACK = 2 /* report_fn(summary, report_user), once per device */
} gp_report_mode;

#define GP_ALL_DEVICES (-1)

typedef struct gp_options {
    /* Which devices: `device` (default 0, GP_ALL_DEVICES for every one),
     * or a list when n_devices > 0. */
    int device;
    const unsigned *devices;
    size_t n_devices;

    double interval_s;       /* sampling period, >= 0.001; default 0.2 */
    gp_backend_kind backend; /* default GP_BACKEND_AUTO */
    int strict;              /* default 1: a backend failure is an error;
                                0: a backend that does not open or sees no
                                GPU is passed over (auto: nvml, smi), then
                                none, and the note says why */
    gp_sync_fn sync_fn;      /* called before and after the region */
    void *sync_user;
    double warmup_s;  /* samples in the first warmup_s are not in the stats */
    int keep_samples; /* monitor: keep every raw sample */
    int sample_pcie;  /* also read PCIe TX/RX throughput (NVML only); off by
                         default because NVML blocks ~20 ms per reading */

    /* gp_profile_call() only. */
    gp_report_mode report;
    FILE *report_file;
    unsigned report_flags; /* GP_FMT_* for GP_REPORT_PRINT */
    gp_report_fn report_fn;
    void *report_user;

    /* Backend locations; NULL for the defaults (dlopen "libnvidia-ml.so.1"
     * then "libnvidia-ml.so"; "nvidia-smi" from PATH). */
    const char *nvml_library;
    const char *smi_path;
    /* How long a backend may take to answer a one-shot query before it is
     * given up on (nvidia-smi discovery); default 5 s.  Every NVML call is
     * bounded by 2 s, or by this when smaller (docs/concepts.md). */
    double backend_timeout_s;

    /* Appended: every sample as it is taken (warmup ones too), on the
     * sampling thread, outside the monitor's lock, before the next round:
     * for writing samples out while the region runs (a profiler killed
     * mid-run keeps what it wrote) without keep_samples' memory.  Keep it
     * short: the next round waits for it.  NULL: none. */
    gp_sample_fn on_sample;
    void *on_sample_user;
    /* Per-process attribution (NVML only; docs/concepts.md): the processes
     * whose GPU memory and SM / memory utilisation are summed per device
     * and sample, beside the whole device's.  n_pids 0 (the default): none
     * is read.  With pid_tree, every sampling round also counts the
     * processes descending from them, read from /proc (children started
     * during the region included; read again when a task was created or
     * reaped on the machine, and every second: docs/concepts.md).  The list is copied at
     * gp_monitor_create; at most GP_PROC_PIDS_MAX processes in all. */
    const int *pids;
    size_t n_pids;
    int pid_tree;
    /* Appended: the ROCm SMI library of the amd backend; NULL: the
     * environment's GPU_PROFILE_ROCM_SMI_LIBRARY, else librocm_smi64.so.7,
     * .so.6, .so.5, .so.1, then /opt/rocm/lib/librocm_smi64.so. */
    const char *rocm_smi_library;
    /* Appended: the "busy but stuck" stretch of the summary
     * (gp_summary.stuck_*), seconds; 0 (the default) or not a positive
     * number: 60. */
    double stuck_after_s;
} gp_options;

#define GP_PROC_PIDS_MAX 256

/* Fills the defaults above. */
GP_API void gp_options_init(gp_options *opts);

/* ---------------------------------------------------------------- monitor */

typedef struct gp_monitor gp_monitor;

/* Validates the options, opens the backend and resolves the devices.
 * With strict and a backend failure: the error lists every backend tried
 * and why it failed.  *out is NULL on failure. */
GP_API gp_status gp_monitor_create(const gp_options *opts, gp_monitor **out, gp_error *err);
/* Calls sync_fn, then starts the sampling thread (first sample at once). */
GP_API gp_status gp_monitor_start(gp_monitor *m, gp_error *err);
/* Calls sync_fn, takes a last sample, stops the thread, computes summaries. */
GP_API gp_status gp_monitor_stop(gp_monitor *m, gp_error *err);
/* Makes a stopped monitor ready for another region (gp_monitor_start
 * again), keeping its backend open and its devices resolved; the previous
 * region's summaries, samples and stats are discarded, a device that failed
 * is tried again.  For callers that profile many short regions (the Python
 * decorator): opening NVML costs far more than a short region.  GP_ERR_STATE
 * unless the monitor is stopped. */
GP_API gp_status gp_monitor_rearm(gp_monitor *m, gp_error *err);
/* Stops if running, releases everything.  NULL is accepted. */
GP_API void gp_monitor_destroy(gp_monitor *m);

GP_API size_t gp_monitor_device_count(const gp_monitor *m);
/* The backend in use ("nvml", "smi", "none"). */
GP_API const char *gp_monitor_backend(const gp_monitor *m);
/* The summary of device `slot`, available after gp_monitor_stop(); NULL before. */
GP_API const gp_summary *gp_monitor_summary(const gp_monitor *m, size_t slot);
/* Every raw sample in time order (keep_samples); valid after stop. */
GP_API const gp_sample *gp_monitor_samples(const gp_monitor *m, size_t *count);
/* The newest sample of device `slot` while running (thread-safe);
 * GP_ERR_STATE when none was taken yet.  Its energy_mj is the counter's
 * newest reading: the counter is slow to read, so it is read at the
 * region's ends and every 30 s in between, not every sample. */
GP_API gp_status gp_monitor_latest(gp_monitor *m, size_t slot, gp_sample *out);
/* While running or after: GP_OK when device `slot` still answers, else the
 * status that ended its sampling (GP_ERR_DEVICE_LOST, GP_ERR_TIMEOUT, ...)
 * with *at_s (may be NULL) the seconds into the region when it did; its
 * gp_monitor_latest sample is then its last, not a current one. */
GP_API gp_status gp_monitor_device_status(gp_monitor *m, size_t slot, double *at_s);

/* Sampler health, for benchmarks and diagnostics. */
typedef struct gp_monitor_stats {
    uint64_t ticks;          /* sampling rounds done */
    uint64_t missed_ticks;   /* deadlines skipped because a round overran */
    uint64_t device_samples; /* device reads that produced a sample */
    uint64_t sampler_cpu_ns; /* CPU time of the sampling thread */
} gp_monitor_stats;
GP_API gp_status gp_monitor_get_stats(const gp_monitor *m, gp_monitor_stats *out);

/* Appended: the processes using each device (`gpu-profile serve
 * --processes`), NVML only.  gp_monitor_list_processes, before
 * gp_monitor_start, asks every sampling round to list them too (two more
 * NVML calls per device and round): GP_ERR_NOT_SUPPORTED from a backend
 * that cannot, GP_ERR_STATE once started.  gp_monitor_processes copies
 * device `slot`'s newest list (at most cap, by the driver's order; *n the
 * number copied); GP_ERR_STATE while no list was read (not asked, not
 * started, or the driver refused the listing).  PIDs are the host's. */
typedef struct gp_process_use {
    int32_t pid;
    int32_t mem_known; /* 0: the driver could not tell the memory */
    uint64_t mem_used_bytes;
    int32_t sm_known; /* 0: no SM share (utilisation sampling refused) */
    uint32_t sm_pct;  /* the process's share of the SMs, its newest sample */
} gp_process_use;
GP_API gp_status gp_monitor_list_processes(gp_monitor *m, gp_error *err);
GP_API gp_status gp_monitor_processes(gp_monitor *m, size_t slot, gp_process_use *out, size_t cap,
                                      size_t *n);

/* ----------------------------------------------------- profile a function */

typedef int (*gp_call_fn)(void *user);

/* The seed's ProfiledResult: the function's own value and the summaries. */
typedef struct gp_profiled_result {
    int value;      /* what fn returned */
    gp_summary gpu; /* the first (or only) device */
    size_t n_gpus;
    gp_summary *gpus; /* every device; free with gp_profiled_result_free() */
} gp_profiled_result;

/*
 * Profiles fn(user) (the decorator).  Reports as opts->report says.  With
 * result != NULL (return_profile) the value and summaries are stored there.
 * On a strict backend failure fn is not called and the error is returned.
 */
GP_API gp_status gp_profile_call(const gp_options *opts, gp_call_fn fn, void *user,
                                 gp_profiled_result *result, gp_error *err);
GP_API void gp_profiled_result_free(gp_profiled_result *result);

/* ---------------------------------------------------------------- devices */

/* Lists the devices the backend sees.  *out is malloc'd (free with
 * gp_devices_free); *backend_used gets the backend's name. */
GP_API gp_status gp_list_devices(const gp_options *opts, gp_device_info **out, size_t *count,
                                 char *driver_version, size_t driver_version_len,
                                 const char **backend_used, gp_error *err);
GP_API void gp_devices_free(gp_device_info *devices);

#ifdef __cplusplus
}
#endif

#endif /* GPU_PROFILE_H */
