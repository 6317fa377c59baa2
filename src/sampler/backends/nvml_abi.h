/*
 * sampler/backends/nvml_abi.h - our own declarations of the subset of NVML's C ABI that the
 * NVML backend loads with dlopen (no nvml.h is needed or used).
 *
 * Source: the project's spec of NVML's ABI (NVML 13.x).  Every struct's
 * size and the offsets the backend relies on are checked at compile time
 * for x86-64, so a layout mistake fails the build instead of reading the
 * wrong bytes at run time.  Private to src/: never installed.
 */
#ifndef GP_NVML_ABI_H
#define GP_NVML_ABI_H

#include <stddef.h>

/* ------------------------------------------------------------ return codes */

/* NVML's return type is an int-sized enum; an int keeps the ABI exact. */
typedef int nvmlReturn_t;

enum {
    NVML_SUCCESS = 0,
    NVML_ERROR_UNINITIALIZED = 1,
    NVML_ERROR_INVALID_ARGUMENT = 2,
    NVML_ERROR_NOT_SUPPORTED = 3,
    NVML_ERROR_NO_PERMISSION = 4,
    NVML_ERROR_ALREADY_INITIALIZED = 5,
    NVML_ERROR_NOT_FOUND = 6,
    NVML_ERROR_INSUFFICIENT_SIZE = 7,
    NVML_ERROR_DRIVER_NOT_LOADED = 9,
    NVML_ERROR_LIBRARY_NOT_FOUND = 12,
    NVML_ERROR_FUNCTION_NOT_FOUND = 13,
    NVML_ERROR_GPU_IS_LOST = 15,
    NVML_ERROR_LIB_RM_VERSION_MISMATCH = 18,
    NVML_ERROR_NO_DATA = 21,
    NVML_ERROR_ARGUMENT_VERSION_MISMATCH = 25,
    NVML_ERROR_DEPRECATED = 26,
    NVML_ERROR_NOT_READY = 27,
    NVML_ERROR_GPU_NOT_FOUND = 28,
    NVML_ERROR_UNKNOWN = 999
};

/* --------------------------------------------------------------- handles */

/* Opaque: only ever passed back to the library that returned them. */
typedef struct nvml_device_opaque *nvmlDevice_t;
typedef struct nvml_gpm_sample_opaque *nvmlGpmSample_t;

/* ------------------------------------------------------- argument values */

/* Buffer sizes NVML documents for names and UUIDs (NUL included). */
#define NVML_DEVICE_NAME_BUFFER_SIZE 96
#define NVML_DEVICE_UUID_BUFFER_SIZE 96
#define NVML_DRIVER_VERSION_BUFFER_SIZE 80

enum { NVML_TEMPERATURE_GPU = 0 };

enum { NVML_CLOCK_GRAPHICS = 0, NVML_CLOCK_SM = 1, NVML_CLOCK_MEM = 2, NVML_CLOCK_VIDEO = 3 };

enum { NVML_PCIE_UTIL_TX_BYTES = 0, NVML_PCIE_UTIL_RX_BYTES = 1 };

/* nvmlDeviceGetSamples: what to sample, and how the value union is filled. */
enum {
    NVML_SAMPLE_TOTAL_POWER = 0,
    NVML_SAMPLE_GPU_UTIL = 1,
    NVML_SAMPLE_MEM_UTIL = 2,
    NVML_SAMPLE_ENC_UTIL = 3,
    NVML_SAMPLE_DEC_UTIL = 4,
    NVML_SAMPLE_PROCESSOR_CLK = 5,
    NVML_SAMPLE_MEMORY_CLK = 6
};
enum {
    NVML_VALUE_DOUBLE = 0,
    NVML_VALUE_UINT = 1,
    NVML_VALUE_ULONG = 2,
    NVML_VALUE_ULL = 3,
    NVML_VALUE_SLL = 4,
    NVML_VALUE_SINT = 5,
    NVML_VALUE_USHORT = 6
};

/* Clock event ("throttle") reasons; the public GP_THROTTLE_* bits are the
 * same numbers (checked below), so a mask is passed through unchanged. */
enum {
    NVML_CLOCKS_EVENT_GPU_IDLE = 0x1,
    NVML_CLOCKS_EVENT_APP_CLOCKS = 0x2,
    NVML_CLOCKS_EVENT_SW_POWER_CAP = 0x4,
    NVML_CLOCKS_EVENT_HW_SLOWDOWN = 0x8,
    NVML_CLOCKS_EVENT_SYNC_BOOST = 0x10,
    NVML_CLOCKS_EVENT_SW_THERMAL = 0x20,
    NVML_CLOCKS_EVENT_HW_THERMAL = 0x40,
    NVML_CLOCKS_EVENT_HW_POWER_BRAKE = 0x80,
    NVML_CLOCKS_EVENT_DISPLAY_CLOCK = 0x100
};

/* GPM metric ids (Hopper and later). */
enum {
    NVML_GPM_METRIC_GRAPHICS_UTIL = 1,
    NVML_GPM_METRIC_SM_UTIL = 2,
    NVML_GPM_METRIC_SM_OCCUPANCY = 3,
    NVML_GPM_METRIC_INTEGER_UTIL = 4,
    NVML_GPM_METRIC_ANY_TENSOR_UTIL = 5,
    NVML_GPM_METRIC_DFMA_TENSOR_UTIL = 6,
    NVML_GPM_METRIC_HMMA_TENSOR_UTIL = 7,
    NVML_GPM_METRIC_IMMA_TENSOR_UTIL = 9,
    NVML_GPM_METRIC_DRAM_BW_UTIL = 10,
    NVML_GPM_METRIC_FP64_UTIL = 11,
    NVML_GPM_METRIC_FP32_UTIL = 12,
    NVML_GPM_METRIC_FP16_UTIL = 13,
    NVML_GPM_METRIC_PCIE_TX_PER_SEC = 20,
    NVML_GPM_METRIC_PCIE_RX_PER_SEC = 21,
    NVML_GPM_METRIC_NVLINK_TOTAL_RX_PER_SEC = 60,
    NVML_GPM_METRIC_NVLINK_TOTAL_TX_PER_SEC = 61
};

/* ----------------------------------------------------------------- structs */

/* A versioned struct's first word: its size in the low bits, the struct
 * version in the top byte.  A wrong word gets ARGUMENT_VERSION_MISMATCH
 * (driver 580 answers FUNCTION_NOT_FOUND for nvmlMemory_v2_t instead). */
#define NVML_STRUCT_VERSION(type, ver) ((unsigned int)(sizeof(type) | ((unsigned int)(ver) << 24)))

/* Percent, averaged over the driver's sample period (1/6 s to 1 s). */
typedef struct nvmlUtilization_t {
    unsigned int gpu;
    unsigned int memory;
} nvmlUtilization_t;

/* Bytes; v1's `used` includes the memory the driver reserves. */
typedef struct nvmlMemory_t {
    unsigned long long total;
    unsigned long long free;
    unsigned long long used;
} nvmlMemory_t;

/* Bytes; `used` excludes `reserved`.  The 4-byte version word is followed
 * by 4 bytes of padding before the first 8-byte field. */
typedef struct nvmlMemory_v2_t {
    unsigned int version;
    unsigned long long total;
    unsigned long long reserved;
    unsigned long long free;
    unsigned long long used;
} nvmlMemory_v2_t;
#define NVML_MEMORY_V2_VERSION NVML_STRUCT_VERSION(nvmlMemory_v2_t, 2)

/* nvmlDeviceGetTemperatureV: the caller sets version and sensorType. */
typedef struct nvmlTemperature_t {
    unsigned int version;
    int sensorType;
    int temperature; /* degrees C */
} nvmlTemperature_t;
#define NVML_TEMPERATURE_V1_VERSION NVML_STRUCT_VERSION(nvmlTemperature_t, 1)

typedef union nvmlValue_t {
    double dVal;
    unsigned int uiVal;
    unsigned long ulVal;
    unsigned long long ullVal;
    long long sllVal;
    int siVal;
    unsigned short usVal;
} nvmlValue_t;

typedef struct nvmlSample_t {
    unsigned long long timeStamp; /* CPU microseconds */
    nvmlValue_t sampleValue;
} nvmlSample_t;

/* nvmlDeviceGetFieldValues: one entry per field asked (fieldId and
 * scopeId in, the rest out; nvmlReturn says whether that field answered).
 * valueType: NVML_VALUE_TYPE_* (DOUBLE 0, UNSIGNED_INT 1, UNSIGNED_LONG 2,
 * UNSIGNED_LONG_LONG 3, SIGNED_LONG_LONG 4, SIGNED_INT 5). */
typedef struct nvmlFieldValue_t {
    unsigned int fieldId;
    unsigned int scopeId;
    long long timestamp;   /* CPU microseconds */
    long long latencyUsec; /* how old the value is */
    int valueType;
    nvmlReturn_t nvmlReturn;
    nvmlValue_t value;
} nvmlFieldValue_t;
#define NVML_VALUE_TYPE_UNSIGNED_INT 1
#define NVML_VALUE_TYPE_UNSIGNED_LONG_LONG 3
/* The energy counter since the driver loaded, mJ: the same counter as
 * nvmlDeviceGetTotalEnergyConsumption (NVML 12's nvml.h). */
#define NVML_FI_DEV_TOTAL_ENERGY_CONSUMPTION 83
/* Power in mW averaged over 1 s, "supported on Ampere (except GA100) or
 * newer" (later NVML 12 headers on; scopeId 0: the GPU alone, 1: the
 * module).  On exactly those GPUs nvmlDeviceGetPowerUsage documents the
 * same 1 s average, so where this field answers it is that call's value. */
#define NVML_FI_DEV_POWER_AVERAGE 185
#define NVML_FI_SCOPE_GPU 0
#define NVML_VALUE_TYPE_SIGNED_LONG_LONG 4
#define NVML_VALUE_TYPE_SIGNED_INT 5

typedef struct nvmlProcessUtilizationSample_t {
    unsigned int pid;
    unsigned long long timeStamp; /* CPU microseconds */
    unsigned int smUtil;
    unsigned int memUtil;
    unsigned int encUtil;
    unsigned int decUtil;
} nvmlProcessUtilizationSample_t;

typedef struct nvmlProcessInfo_t {
    unsigned int pid;
    unsigned long long usedGpuMemory; /* bytes */
    unsigned int gpuInstanceId;
    unsigned int computeInstanceId;
} nvmlProcessInfo_t;

typedef struct nvmlGpmSupport_t {
    unsigned int version; /* NVML_GPM_SUPPORT_VERSION */
    unsigned int isSupportedDevice;
} nvmlGpmSupport_t;
#define NVML_GPM_SUPPORT_VERSION 1u

typedef struct nvmlGpmMetric_t {
    unsigned int metricId;
    nvmlReturn_t nvmlReturn;
    double value;
    struct {
        char *shortName;
        char *longName;
        char *unit;
    } metricInfo;
} nvmlGpmMetric_t;

/* The metric array grew (210 in 13.0, 333 in 13.3) while the version stayed
 * 1: size it for the larger count and read no further than numMetrics. */
#define NVML_GPM_METRIC_MAX 333
typedef struct nvmlGpmMetricsGet_t {
    unsigned int version; /* NVML_GPM_METRICS_GET_VERSION */
    unsigned int numMetrics;
    nvmlGpmSample_t sample1;
    nvmlGpmSample_t sample2;
    nvmlGpmMetric_t metrics[NVML_GPM_METRIC_MAX];
} nvmlGpmMetricsGet_t;
#define NVML_GPM_METRICS_GET_VERSION 1u

/* ------------------------------------------------------------ layout checks */

#if defined(__x86_64__) || defined(__aarch64__)
_Static_assert(sizeof(nvmlReturn_t) == 4, "nvmlReturn_t is int-sized");
_Static_assert(sizeof(nvmlUtilization_t) == 8, "nvmlUtilization_t size");
_Static_assert(offsetof(nvmlUtilization_t, memory) == 4, "nvmlUtilization_t.memory");
_Static_assert(sizeof(nvmlMemory_t) == 24, "nvmlMemory_t size");
_Static_assert(offsetof(nvmlMemory_t, free) == 8, "nvmlMemory_t.free");
_Static_assert(offsetof(nvmlMemory_t, used) == 16, "nvmlMemory_t.used");
_Static_assert(sizeof(nvmlMemory_v2_t) == 40, "nvmlMemory_v2_t size");
_Static_assert(offsetof(nvmlMemory_v2_t, total) == 8, "nvmlMemory_v2_t.total");
_Static_assert(offsetof(nvmlMemory_v2_t, reserved) == 16, "nvmlMemory_v2_t.reserved");
_Static_assert(offsetof(nvmlMemory_v2_t, free) == 24, "nvmlMemory_v2_t.free");
_Static_assert(offsetof(nvmlMemory_v2_t, used) == 32, "nvmlMemory_v2_t.used");
_Static_assert(NVML_MEMORY_V2_VERSION == 0x02000028u, "nvmlMemory_v2_t version word");
_Static_assert(sizeof(nvmlTemperature_t) == 12, "nvmlTemperature_t size");
_Static_assert(offsetof(nvmlTemperature_t, sensorType) == 4, "nvmlTemperature_t.sensorType");
_Static_assert(offsetof(nvmlTemperature_t, temperature) == 8, "nvmlTemperature_t.temperature");
_Static_assert(NVML_TEMPERATURE_V1_VERSION == 0x0100000cu, "nvmlTemperature_t version word");
_Static_assert(sizeof(nvmlValue_t) == 8, "nvmlValue_t size");
_Static_assert(sizeof(nvmlSample_t) == 16, "nvmlSample_t size");
_Static_assert(sizeof(nvmlFieldValue_t) == 40, "nvmlFieldValue_t size");
_Static_assert(offsetof(nvmlFieldValue_t, timestamp) == 8, "nvmlFieldValue_t.timestamp");
_Static_assert(offsetof(nvmlFieldValue_t, valueType) == 24, "nvmlFieldValue_t.valueType");
_Static_assert(offsetof(nvmlFieldValue_t, nvmlReturn) == 28, "nvmlFieldValue_t.nvmlReturn");
_Static_assert(offsetof(nvmlFieldValue_t, value) == 32, "nvmlFieldValue_t.value");
_Static_assert(offsetof(nvmlSample_t, sampleValue) == 8, "nvmlSample_t.sampleValue");
_Static_assert(sizeof(nvmlProcessUtilizationSample_t) == 32, "nvmlProcessUtilizationSample_t");
_Static_assert(offsetof(nvmlProcessUtilizationSample_t, timeStamp) == 8,
               "nvmlProcessUtilizationSample_t.timeStamp");
_Static_assert(offsetof(nvmlProcessUtilizationSample_t, smUtil) == 16,
               "nvmlProcessUtilizationSample_t.smUtil");
_Static_assert(offsetof(nvmlProcessUtilizationSample_t, decUtil) == 28,
               "nvmlProcessUtilizationSample_t.decUtil");
_Static_assert(sizeof(nvmlProcessInfo_t) == 24, "nvmlProcessInfo_t size");
_Static_assert(offsetof(nvmlProcessInfo_t, usedGpuMemory) == 8, "nvmlProcessInfo_t.usedGpuMemory");
_Static_assert(offsetof(nvmlProcessInfo_t, gpuInstanceId) == 16, "nvmlProcessInfo_t.gpuInstanceId");
_Static_assert(offsetof(nvmlProcessInfo_t, computeInstanceId) == 20,
               "nvmlProcessInfo_t.computeInstanceId");
_Static_assert(sizeof(nvmlGpmSupport_t) == 8, "nvmlGpmSupport_t size");
_Static_assert(sizeof(nvmlGpmMetric_t) == 40, "nvmlGpmMetric_t size");
_Static_assert(offsetof(nvmlGpmMetric_t, value) == 8, "nvmlGpmMetric_t.value");
_Static_assert(offsetof(nvmlGpmMetric_t, metricInfo) == 16, "nvmlGpmMetric_t.metricInfo");
_Static_assert(offsetof(nvmlGpmMetricsGet_t, sample1) == 8, "nvmlGpmMetricsGet_t.sample1");
_Static_assert(offsetof(nvmlGpmMetricsGet_t, metrics) == 24, "nvmlGpmMetricsGet_t.metrics");
_Static_assert(sizeof(nvmlGpmMetricsGet_t) == 24 + 40 * NVML_GPM_METRIC_MAX,
               "nvmlGpmMetricsGet_t size");
#else
#error "nvml_abi.h: struct layouts are checked for 64-bit Linux (x86-64, aarch64) only"
#endif

/* ------------------------------------------------------ function pointers */

typedef nvmlReturn_t (*nvml_init_fn)(void); /* nvmlInit_v2, nvmlInit */
typedef nvmlReturn_t (*nvml_shutdown_fn)(void);
typedef const char *(*nvml_error_string_fn)(nvmlReturn_t result);
typedef nvmlReturn_t (*nvml_system_get_driver_version_fn)(char *version, unsigned int length);
typedef nvmlReturn_t (*nvml_device_get_count_fn)(unsigned int *count);
typedef nvmlReturn_t (*nvml_device_get_handle_by_index_fn)(unsigned int index,
                                                           nvmlDevice_t *device);
typedef nvmlReturn_t (*nvml_device_get_name_fn)(nvmlDevice_t device, char *name,
                                                unsigned int length);
typedef nvmlReturn_t (*nvml_device_get_uuid_fn)(nvmlDevice_t device, char *uuid,
                                                unsigned int length);
typedef nvmlReturn_t (*nvml_device_get_utilization_rates_fn)(nvmlDevice_t device,
                                                             nvmlUtilization_t *utilization);
typedef nvmlReturn_t (*nvml_device_get_memory_info_fn)(nvmlDevice_t device, nvmlMemory_t *memory);
typedef nvmlReturn_t (*nvml_device_get_memory_info_v2_fn)(nvmlDevice_t device,
                                                          nvmlMemory_v2_t *memory);
typedef nvmlReturn_t (*nvml_device_get_power_usage_fn)(nvmlDevice_t device, unsigned int *power_mw);
typedef nvmlReturn_t (*nvml_device_get_total_energy_consumption_fn)(nvmlDevice_t device,
                                                                    unsigned long long *energy_mj);
typedef nvmlReturn_t (*nvml_device_get_temperature_fn)(nvmlDevice_t device, int sensor,
                                                       unsigned int *temp_c);
typedef nvmlReturn_t (*nvml_device_get_temperature_v_fn)(nvmlDevice_t device,
                                                         nvmlTemperature_t *temperature);
typedef nvmlReturn_t (*nvml_device_get_clock_info_fn)(nvmlDevice_t device, int type,
                                                      unsigned int *clock_mhz);
/* nvmlDeviceGetCurrentClocksEventReasons, nvmlDeviceGetCurrentClocksThrottleReasons */
typedef nvmlReturn_t (*nvml_device_get_clocks_event_reasons_fn)(nvmlDevice_t device,
                                                                unsigned long long *reasons);
typedef nvmlReturn_t (*nvml_device_get_pcie_throughput_fn)(nvmlDevice_t device, int counter,
                                                           unsigned int *kb_per_s);
typedef nvmlReturn_t (*nvml_device_get_samples_fn)(nvmlDevice_t device, int type,
                                                   unsigned long long last_seen_us, int *value_type,
                                                   unsigned int *count, nvmlSample_t *samples);
typedef nvmlReturn_t (*nvml_device_get_process_utilization_fn)(
    nvmlDevice_t device, nvmlProcessUtilizationSample_t *samples, unsigned int *count,
    unsigned long long last_seen_us);
typedef nvmlReturn_t (*nvml_device_get_compute_running_processes_fn)(nvmlDevice_t device,
                                                                     unsigned int *count,
                                                                     nvmlProcessInfo_t *infos);
typedef nvmlReturn_t (*nvml_device_get_field_values_fn)(nvmlDevice_t device, int count,
                                                        nvmlFieldValue_t *values);
typedef nvmlReturn_t (*nvml_gpm_query_device_support_fn)(nvmlDevice_t device,
                                                         nvmlGpmSupport_t *support);
typedef nvmlReturn_t (*nvml_gpm_sample_alloc_fn)(nvmlGpmSample_t *sample);
typedef nvmlReturn_t (*nvml_gpm_sample_free_fn)(nvmlGpmSample_t sample);
typedef nvmlReturn_t (*nvml_gpm_sample_get_fn)(nvmlDevice_t device, nvmlGpmSample_t sample);
typedef nvmlReturn_t (*nvml_gpm_metrics_get_fn)(nvmlGpmMetricsGet_t *metrics);

/* MIG.  A GPU's MIG mode: current and pending, 1 (NVML_DEVICE_MIG_ENABLE)
 * when on.  A parent handle has up to nvmlDeviceGetMaxMigDeviceCount MIG
 * device handles, by index; an empty index answers NOT_FOUND.  A MIG
 * handle answers name, UUID ("MIG-..."), memory and its GPU / compute
 * instance ids; utilisation NOT_SUPPORTED. */
#define NVML_DEVICE_MIG_ENABLE 1u
typedef nvmlReturn_t (*nvml_device_get_mig_mode_fn)(nvmlDevice_t device, unsigned int *current,
                                                    unsigned int *pending);
typedef nvmlReturn_t (*nvml_device_get_max_mig_device_count_fn)(nvmlDevice_t device,
                                                                unsigned int *count);
typedef nvmlReturn_t (*nvml_device_get_mig_device_handle_by_index_fn)(nvmlDevice_t device,
                                                                      unsigned int index,
                                                                      nvmlDevice_t *mig_device);
/* nvmlDeviceGetGpuInstanceId, nvmlDeviceGetComputeInstanceId */
typedef nvmlReturn_t (*nvml_device_get_instance_id_fn)(nvmlDevice_t device, unsigned int *id);
/* GPM of one MIG GPU instance: nvmlGpmMigSampleGet(parent, gpuInstanceId,
 * sample) takes the sample on the PARENT GPU's handle, naming the instance
 * by its GPU instance id (nvmlDeviceGetGpuInstanceId of the MIG handle);
 * GPM support is asked of the parent (nvmlGpmQueryDeviceSupport), and the
 * pair of samples goes to nvmlGpmMetricsGet as for a whole GPU.  NVML
 * 12.x+ (driver 520+); sources: nvml.h as NVIDIA's go-nvml binds it
 * (pkg/nvml/gpm.go: GpmMigSampleGet(Device, GpuInstanceId, GpmSample)) and
 * DCGM's GPM manager, which calls it with the parent's handle and the GI's
 * NVML id.  Optional: absent, an instance's GPM is n/a. */
typedef nvmlReturn_t (*nvml_gpm_mig_sample_get_fn)(nvmlDevice_t parent,
                                                   unsigned int gpu_instance_id,
                                                   nvmlGpmSample_t sample);

/* ------------------------------------------------------------------ health
 * Sources: NVIDIA's nvml.h (NVML 12.x/13.x, as DCGM and go-nvml bind it)
 * and the NVML API reference.  Every call is optional: an absent symbol or
 * an "unavailable" code leaves the metric's health bit clear. */

/* nvmlDeviceGetTotalEccErrors(dev, errorType, counterType, unsigned long long *count) */
enum { NVML_MEMORY_ERROR_TYPE_CORRECTED = 0, NVML_MEMORY_ERROR_TYPE_UNCORRECTED = 1 };
enum { NVML_VOLATILE_ECC = 0, NVML_AGGREGATE_ECC = 1 };
typedef nvmlReturn_t (*nvml_device_get_total_ecc_errors_fn)(nvmlDevice_t device, int error_type,
                                                            int counter_type,
                                                            unsigned long long *count);
/* nvmlDeviceGetRetiredPages(dev, cause, unsigned *pageCount, unsigned long long *addresses):
 * pageCount 0 and addresses NULL asks the count alone (SUCCESS with 0, or
 * INSUFFICIENT_SIZE with the count written). */
enum {
    NVML_PAGE_RETIREMENT_CAUSE_MULTIPLE_SINGLE_BIT_ECC_ERRORS = 0,
    NVML_PAGE_RETIREMENT_CAUSE_DOUBLE_BIT_ECC_ERROR = 1
};
typedef nvmlReturn_t (*nvml_device_get_retired_pages_fn)(nvmlDevice_t device, int cause,
                                                         unsigned int *page_count,
                                                         unsigned long long *addresses);
/* nvmlDeviceGetRemappedRows(dev, corrRows, uncRows, isPending, failureOccurred): Ampere+. */
typedef nvmlReturn_t (*nvml_device_get_remapped_rows_fn)(nvmlDevice_t device,
                                                         unsigned int *corr_rows,
                                                         unsigned int *unc_rows,
                                                         unsigned int *is_pending,
                                                         unsigned int *failure_occurred);
/* nvmlDeviceGetPcieReplayCounter, nvmlDeviceGetFanSpeed (percent). */
typedef nvmlReturn_t (*nvml_device_get_uint_fn)(nvmlDevice_t device, unsigned int *value);
/* nvmlDeviceGetNvLinkErrorCounter(dev, link, counter, unsigned long long *value);
 * links 0..NVML_NVLINK_MAX_LINKS-1, an absent link answers an error. */
#define NVML_NVLINK_MAX_LINKS 18
enum {
    NVML_NVLINK_ERROR_DL_REPLAY = 0,
    NVML_NVLINK_ERROR_DL_RECOVERY = 1,
    NVML_NVLINK_ERROR_DL_CRC_FLIT = 2
};
typedef nvmlReturn_t (*nvml_device_get_nvlink_error_counter_fn)(nvmlDevice_t device,
                                                                unsigned int link, int counter,
                                                                unsigned long long *value);
/* nvmlDeviceGetEncoderUtilization / DecoderUtilization(dev, unsigned *util, unsigned *period_us).
 */
typedef nvmlReturn_t (*nvml_device_get_codec_util_fn)(nvmlDevice_t device, unsigned int *util_pct,
                                                      unsigned int *sampling_period_us);
/* The HBM temperature, a field value (degrees C, NVML_VALUE_TYPE_UNSIGNED_INT). */
#define NVML_FI_DEV_MEMORY_TEMP 82

/* nvmlDeviceGetPciInfo_v3(dev, nvmlPciInfo_t *): busId is the
 * "domain:bus:device.function" text (NUL-terminated). */
typedef struct nvmlPciInfo_t {
    char busIdLegacy[16];
    unsigned int domain;
    unsigned int bus;
    unsigned int device;
    unsigned int pciDeviceId;
    unsigned int pciSubSystemId;
    char busId[32];
} nvmlPciInfo_t;
typedef nvmlReturn_t (*nvml_device_get_pci_info_fn)(nvmlDevice_t device, nvmlPciInfo_t *pci);

/* Events.  nvmlEventSetWait_v2(set, data, timeout_ms) blocks up to the
 * timeout and answers NVML_ERROR_TIMEOUT without an event.  eventData is
 * the XID for nvmlEventTypeXidCriticalError (999: an unknown one).  The
 * two instance ids came with NVML 11 (MIG): the struct is sized for them,
 * which an older driver simply does not fill. */
#define NVML_ERROR_TIMEOUT 10
#define nvmlEventTypeXidCriticalError 0x0000000000000008ULL
typedef struct nvml_event_set_opaque *nvmlEventSet_t;
typedef struct nvmlEventData_t {
    nvmlDevice_t device;
    unsigned long long eventType;
    unsigned long long eventData;
    unsigned int gpuInstanceId;
    unsigned int computeInstanceId;
} nvmlEventData_t;
typedef nvmlReturn_t (*nvml_event_set_create_fn)(nvmlEventSet_t *set);
typedef nvmlReturn_t (*nvml_device_register_events_fn)(nvmlDevice_t device,
                                                       unsigned long long event_types,
                                                       nvmlEventSet_t set);
typedef nvmlReturn_t (*nvml_event_set_wait_fn)(nvmlEventSet_t set, nvmlEventData_t *data,
                                               unsigned int timeout_ms);
typedef nvmlReturn_t (*nvml_event_set_free_fn)(nvmlEventSet_t set);

#if defined(__x86_64__) || defined(__aarch64__)
_Static_assert(sizeof(nvmlEventData_t) == 32, "nvmlEventData_t size");
_Static_assert(sizeof(nvmlPciInfo_t) == 68, "nvmlPciInfo_t size");
_Static_assert(offsetof(nvmlPciInfo_t, busId) == 36, "nvmlPciInfo_t.busId");
_Static_assert(offsetof(nvmlEventData_t, eventData) == 16, "nvmlEventData_t.eventData");
_Static_assert(offsetof(nvmlEventData_t, gpuInstanceId) == 24, "nvmlEventData_t.gpuInstanceId");
#endif

#endif /* GP_NVML_ABI_H */
