/*
 * fake_nvml.c - a fake libnvidia-ml.so.1 for the tests (never installed).
 *
 * Promises: it answers the NVML functions the backend uses from a scenario
 * file ($FAKE_NVML_SCENARIO, format in docs/test-doubles.md, "Fake NVML"),
 * read again at every nvmlInit that takes the reference count from 0 to 1,
 * so one test process can run several scenarios one after another.  Without
 * a scenario it shows one device with constant, plausible values.  Values
 * are deterministic: the Nth successful read of a metric on a device gets
 * the Nth value of its sequence, and the last value repeats.  Versioned
 * structs are checked like NVML checks them (a wrong version word gets
 * ARGUMENT_VERSION_MISMATCH), and its struct declarations are its own, made
 * from the spec independently of src/nvml_abi.h, so a layout mistake on
 * either side fails a test.  All state is behind one mutex; "slow" and
 * "hang" calls sleep outside it (a hung call blocks its caller only, like
 * a driver call on a GPU that fell off the bus).  With $FAKE_NVML_STATS set, the final nvmlShutdown
 * writes how often each function was called to that file.
 *
 * Built twice: FAKE_NVML_OLD=1 leaves out every _v2 / V symbol,
 * nvmlDeviceGetCurrentClocksEventReasons and
 * nvmlDeviceGetTotalEnergyConsumption and the MIG calls, like a driver
 * from before them.
 */
#include <errno.h>
#include <pthread.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#ifndef FAKE_NVML_OLD
#define FAKE_NVML_OLD 0
#endif

#define FAKE_API __attribute__((visibility("default")))

/* ------------------------------------------------------------- ABI (spec) */

enum {
    R_SUCCESS = 0,
    R_UNINITIALIZED = 1,
    R_INVALID_ARGUMENT = 2,
    R_NOT_SUPPORTED = 3,
    R_NOT_FOUND = 6,
    R_INSUFFICIENT_SIZE = 7,
    R_GPU_IS_LOST = 15,
    R_ARGUMENT_VERSION_MISMATCH = 25,
    R_UNKNOWN = 999
};

struct fake_utilization {
    unsigned gpu;
    unsigned memory;
};
struct fake_memory_v1 {
    unsigned long long total, free, used;
};
struct fake_memory_v2 {
    unsigned version;
    unsigned long long total, reserved, free, used;
};
struct fake_temperature {
    unsigned version;
    int sensor_type;
    int temperature;
};

_Static_assert(sizeof(struct fake_utilization) == 8, "nvmlUtilization_t is 8 bytes");
_Static_assert(sizeof(struct fake_memory_v1) == 24, "nvmlMemory_t is 24 bytes");
_Static_assert(offsetof(struct fake_memory_v1, used) == 16, "nvmlMemory_t.used at 16");
_Static_assert(sizeof(struct fake_memory_v2) == 40, "nvmlMemory_v2_t is 40 bytes");
_Static_assert(offsetof(struct fake_memory_v2, total) == 8, "nvmlMemory_v2_t.total at 8");
_Static_assert(offsetof(struct fake_memory_v2, reserved) == 16, "nvmlMemory_v2_t.reserved at 16");
_Static_assert(offsetof(struct fake_memory_v2, free) == 24, "nvmlMemory_v2_t.free at 24");
_Static_assert(offsetof(struct fake_memory_v2, used) == 32, "nvmlMemory_v2_t.used at 32");
_Static_assert(sizeof(struct fake_temperature) == 12, "nvmlTemperature_t is 12 bytes");
_Static_assert(offsetof(struct fake_temperature, temperature) == 8, "temperature at 8");

/* The spec's version words, written out rather than computed, so that a
 * wrong sizeof on the backend's side cannot agree with a wrong one here. */
#define MEMORY_V2_VERSION 0x02000028u
#define TEMPERATURE_VERSION 0x0100000cu

/* ----------------------------------------------------------------- model */

#define MAX_DEVICES 16
#define MAX_RULES 64
#define TEXT_MAX 96

/* Metrics with a value sequence. */
enum metric {
    M_UTIL_GPU,
    M_UTIL_MEM,
    M_MEM_USED,
    M_MEM_TOTAL,
    M_MEM_RESERVED,
    M_POWER_MW,
    M_ENERGY_MJ,
    M_TEMP_C,
    M_CLOCK_SM,
    M_CLOCK_MEM,
    M_THROTTLE,
    M_PCIE_TX,
    M_PCIE_RX,
    M_GPM_FIRST, /* the GPM metrics, in the backend's gp_gpm_metric order */
    M_GPM_LAST = M_GPM_FIRST + 13,
    /* Health: answered only where the scenario gives a sequence (a GPU
     * without ECC, fans or NVLink answers NOT_SUPPORTED). */
    M_ECC_SBE_VOL,
    M_ECC_DBE_VOL,
    M_ECC_SBE_AGG,
    M_ECC_DBE_AGG,
    M_RETIRED_SBE,
    M_RETIRED_DBE,
    M_REMAP_CORR,
    M_REMAP_UNC,
    M_REMAP_PENDING,
    M_REMAP_FAILURE,
    M_PCIE_REPLAY,
    M_NVLINK_CRC,
    M_NVLINK_RECOVERY,
    M_FAN,
    M_MEM_TEMP,
    M_ENC,
    M_DEC,
    N_METRICS
};

static const struct {
    const char *name;
    long long fallback; /* the value without a scenario sequence */
} metric_info[N_METRICS] = {
    [M_UTIL_GPU] = {"util_gpu", 42},
    [M_UTIL_MEM] = {"util_mem", 17},
    [M_MEM_USED] = {"mem_used", 1073741824LL},        /* 1 GiB */
    [M_MEM_TOTAL] = {"mem_total", 85899345920LL},     /* 80 GiB */
    [M_MEM_RESERVED] = {"mem_reserved", 536870912LL}, /* 512 MiB */
    [M_POWER_MW] = {"power_mw", 75000},
    [M_ENERGY_MJ] = {"energy_mj", 123456789},
    [M_TEMP_C] = {"temp_c", 35},
    [M_CLOCK_SM] = {"clock_sm", 1980},
    [M_CLOCK_MEM] = {"clock_mem", 2619},
    [M_THROTTLE] = {"throttle", 0x1},
    [M_PCIE_TX] = {"pcie_tx", 1000},
    [M_PCIE_RX] = {"pcie_rx", 2000},
    [M_GPM_FIRST + 0] = {"gpm_sm_active", 38},
    [M_GPM_FIRST + 1] = {"gpm_sm_occupancy", 25},
    [M_GPM_FIRST + 2] = {"gpm_tensor", 12},
    [M_GPM_FIRST + 3] = {"gpm_tensor_dfma", 0},
    [M_GPM_FIRST + 4] = {"gpm_tensor_hmma", 12},
    [M_GPM_FIRST + 5] = {"gpm_tensor_imma", 0},
    [M_GPM_FIRST + 6] = {"gpm_dram", 61},
    [M_GPM_FIRST + 7] = {"gpm_fp64", 1},
    [M_GPM_FIRST + 8] = {"gpm_fp32", 20},
    [M_GPM_FIRST + 9] = {"gpm_fp16", 5},
    [M_GPM_FIRST + 10] = {"gpm_pcie_tx", 1000},
    [M_GPM_FIRST + 11] = {"gpm_pcie_rx", 2000},
    [M_GPM_FIRST + 12] = {"gpm_nvlink_tx", 0},
    [M_GPM_FIRST + 13] = {"gpm_nvlink_rx", 0},
    [M_ECC_SBE_VOL] = {"ecc_sbe_vol", 0},
    [M_ECC_DBE_VOL] = {"ecc_dbe_vol", 0},
    [M_ECC_SBE_AGG] = {"ecc_sbe_agg", 0},
    [M_ECC_DBE_AGG] = {"ecc_dbe_agg", 0},
    [M_RETIRED_SBE] = {"retired_sbe", 0},
    [M_RETIRED_DBE] = {"retired_dbe", 0},
    [M_REMAP_CORR] = {"remap_corr", 0},
    [M_REMAP_UNC] = {"remap_unc", 0},
    [M_REMAP_PENDING] = {"remap_pending", 0},
    [M_REMAP_FAILURE] = {"remap_failure", 0},
    [M_PCIE_REPLAY] = {"pcie_replay", 0},
    [M_NVLINK_CRC] = {"nvlink_crc", 0},
    [M_NVLINK_RECOVERY] = {"nvlink_recovery", 0},
    [M_FAN] = {"fan", 0},
    [M_MEM_TEMP] = {"mem_temp", 0},
    [M_ENC] = {"enc_util", 0},
    [M_DEC] = {"dec_util", 0},
};

/* The NVML metric id of each GPM metric above (the spec's numbers). */
__attribute__((unused)) static const unsigned gpm_metric_ids[14] = {2,  3,  5,  6,  7,  9,  10,
                                                                    11, 12, 13, 20, 21, 61, 60};

/* Device functions, as the targets of error / unsupported / slow rules. */
enum key {
    K_HANDLE,
    K_NAME,
    K_UUID,
    K_UTIL,
    K_MEM_V1,
    K_MEM_V2,
    K_POWER,
    K_ENERGY,
    K_TEMP_V1,
    K_TEMP_V,
    K_CLOCK_SM,
    K_CLOCK_MEM,
    K_THROTTLE,
    K_PCIE_TX,
    K_PCIE_RX,
    K_GPM_QUERY,
    K_GPM_SAMPLE,
    K_GPM_METRICS,
    K_PROCS,
    K_PROC_UTIL,
    K_FIELDS,
    K_MIG,    /* the MIG calls: mode, max count, handle by index, instance ids */
    K_HEALTH, /* the health calls (ECC, pages, rows, replay, NVLink, fan, codecs) */
    K_EVENTS, /* nvmlDeviceRegisterEvents */
    K_PCI,    /* nvmlDeviceGetPciInfo_v3 */
    N_KEYS
};

static const char *const key_names[] = {
    "handle",  "name",      "uuid",       "util",        "mem_v1",    "mem_v2",    "power",
    "energy",  "temp_v1",   "temp_v",     "clock_sm",    "clock_mem", "throttle",  "pcie_tx",
    "pcie_rx", "gpm_query", "gpm_sample", "gpm_metrics", "procs",     "proc_util", "fields",
    "mig",     "health",    "events",     "pci",
};
_Static_assert(sizeof key_names / sizeof key_names[0] == N_KEYS, "a name for every key");

/* Names that stand for several functions (either API generation). */
static const struct {
    const char *name;
    unsigned mask;
} key_aliases[] = {
    {"mem", (1u << K_MEM_V1) | (1u << K_MEM_V2)},
    {"temp", (1u << K_TEMP_V1) | (1u << K_TEMP_V)},
    {"clock", (1u << K_CLOCK_SM) | (1u << K_CLOCK_MEM)},
    {"pcie", (1u << K_PCIE_TX) | (1u << K_PCIE_RX)},
    {"gpm", (1u << K_GPM_QUERY) | (1u << K_GPM_SAMPLE) | (1u << K_GPM_METRICS)},
};

/* Exported functions, for the call counts. */
#define FAKE_FUNCTIONS(X)                                                                          \
    X(nvmlInit)                                                                                    \
    X(nvmlInit_v2)                                                                                 \
    X(nvmlShutdown)                                                                                \
    X(nvmlErrorString)                                                                             \
    X(nvmlSystemGetDriverVersion)                                                                  \
    X(nvmlDeviceGetCount)                                                                          \
    X(nvmlDeviceGetCount_v2)                                                                       \
    X(nvmlDeviceGetHandleByIndex)                                                                  \
    X(nvmlDeviceGetHandleByIndex_v2)                                                               \
    X(nvmlDeviceGetName)                                                                           \
    X(nvmlDeviceGetUUID)                                                                           \
    X(nvmlDeviceGetUtilizationRates)                                                               \
    X(nvmlDeviceGetMemoryInfo)                                                                     \
    X(nvmlDeviceGetMemoryInfo_v2)                                                                  \
    X(nvmlDeviceGetPowerUsage)                                                                     \
    X(nvmlDeviceGetTotalEnergyConsumption)                                                         \
    X(nvmlDeviceGetTemperature)                                                                    \
    X(nvmlDeviceGetTemperatureV)                                                                   \
    X(nvmlDeviceGetClockInfo)                                                                      \
    X(nvmlDeviceGetCurrentClocksEventReasons)                                                      \
    X(nvmlDeviceGetCurrentClocksThrottleReasons)                                                   \
    X(nvmlDeviceGetPcieThroughput)                                                                 \
    X(nvmlGpmQueryDeviceSupport)                                                                   \
    X(nvmlGpmSampleAlloc)                                                                          \
    X(nvmlGpmSampleFree)                                                                           \
    X(nvmlGpmSampleGet)                                                                            \
    X(nvmlGpmMetricsGet)                                                                           \
    X(nvmlDeviceGetComputeRunningProcesses_v3)                                                     \
    X(nvmlDeviceGetProcessUtilization)                                                             \
    X(nvmlDeviceGetFieldValues)                                                                    \
    X(nvmlDeviceGetMigMode)                                                                        \
    X(nvmlDeviceGetMaxMigDeviceCount)                                                              \
    X(nvmlDeviceGetMigDeviceHandleByIndex)                                                         \
    X(nvmlDeviceGetGpuInstanceId)                                                                  \
    X(nvmlDeviceGetComputeInstanceId)                                                              \
    X(nvmlGpmMigSampleGet)                                                                         \
    X(nvmlDeviceGetTotalEccErrors)                                                                 \
    X(nvmlDeviceGetRetiredPages)                                                                   \
    X(nvmlDeviceGetRemappedRows)                                                                   \
    X(nvmlDeviceGetPcieReplayCounter)                                                              \
    X(nvmlDeviceGetNvLinkErrorCounter)                                                             \
    X(nvmlDeviceGetFanSpeed)                                                                       \
    X(nvmlDeviceGetEncoderUtilization)                                                             \
    X(nvmlDeviceGetDecoderUtilization)                                                             \
    X(nvmlEventSetCreate)                                                                          \
    X(nvmlDeviceRegisterEvents)                                                                    \
    X(nvmlEventSetWait_v2)                                                                         \
    X(nvmlEventSetFree)                                                                            \
    X(nvmlDeviceGetPciInfo_v3)

#define AS_ENUM(f) F_##f,
#define AS_NAME(f) #f,
enum fn { FAKE_FUNCTIONS(AS_ENUM) N_FNS };
static const char *const fn_names[N_FNS] = {FAKE_FUNCTIONS(AS_NAME)};

typedef struct seq {
    long long *v;
    size_t n;
    size_t next; /* successful reads so far */
} seq;

/* A compute process on a device (`proc` lines): its PID, or the file the
 * PID is read from at each call (absent or empty: not running yet); its
 * memory and utilisation sequences, one step per call that lists it. */
#define MAX_PROCS 8
typedef struct fake_proc {
    unsigned pid;
    char pid_file[512];
    seq mem, sm, memutil;
} fake_proc;

typedef struct device {
    bool declared;
    fake_proc procs[MAX_PROCS];
    unsigned n_procs;
    unsigned long long util_ts; /* the newest utilisation sample time, us */
    unsigned nofield[8];        /* `nofield D ID`: entries answering NOT_SUPPORTED */
    unsigned n_nofield;
    char name[TEXT_MAX];
    char uuid[TEXT_MAX];
    seq seqs[N_METRICS];
    unsigned long long calls[N_KEYS];
    bool has_lost_after;
    unsigned long long lost_after; /* utilization calls that still succeed */
    unsigned long long util_calls;
    bool lost;
    bool gpm;                     /* a `gpm D` line: the device has GPM */
    bool gpm_no[14];              /* `gpm D no METRIC`: that metric is NOT_SUPPORTED */
    unsigned long long gpm_taken; /* nvmlGpmSampleGet calls that succeeded */
    /* MIG: a GPU with MIG (`mig D on|off`, or an instance naming it) and
     * its mode; a MIG instance (`mig_of P slot S gi G ci C`). */
    bool mig_capable, mig_on;
    bool is_mig;
    unsigned mig_parent, mig_slot, gi, ci;
    /* XID events: `events D` (the device takes registrations) and `xid D
     * CODE after N` (an event due once D's utilisation was read N times)
     * or `xid D CODE file PATH` (due once PATH exists: on the test's
     * demand); delivered in the order given. */
    bool events, registered;
    unsigned n_xid, xid_sent;
    unsigned xid_code[8];
    unsigned long long xid_after[8];
    char xid_file[8][256];
} device;

/* MIG device handles per GPU (an H100's most). */
#define FAKE_MIG_MAX 7

/* Calls that name no device, as the targets of hang rules. */
enum sys_fn { S_NONE, S_INIT, S_COUNT, S_DRIVER, S_SHUTDOWN };
static const char *const sys_fn_names[] = {"", "init", "count", "driver_version", "shutdown"};

typedef struct rule {
    unsigned dev;
    unsigned mask; /* 1 << key */
    int code;      /* 0: a slow or hang rule */
    unsigned long long after, times, seen, fired;
    unsigned delay_us;
    unsigned long long hang_ms; /* a hang rule: from its (after+1)th call, `times` times */
    enum sys_fn sys;            /* a hang rule on a call that names no device */
} rule;

typedef struct state {
    int refcount;
    unsigned n_devices;
    long long count_override; /* -1: the number of devices */
    int init_error, count_error, driver_error;
    char driver_version[TEXT_MAX];
    device devs[MAX_DEVICES];
    rule rules[MAX_RULES];
    size_t n_rules;
    unsigned long long fn_calls[N_FNS];
    long long gpm_live; /* GPM samples allocated and not freed */
} state;

static pthread_mutex_t mu = PTHREAD_MUTEX_INITIALIZER;
static state st;

static void free_scenario(void)
{
    for (size_t d = 0; d < MAX_DEVICES; d++)
        for (size_t m = 0; m < N_METRICS; m++)
            free(st.devs[d].seqs[m].v);
    for (size_t d = 0; d < MAX_DEVICES; d++)
        for (size_t i = 0; i < st.devs[d].n_procs; i++) {
            free(st.devs[d].procs[i].mem.v);
            free(st.devs[d].procs[i].sm.v);
            free(st.devs[d].procs[i].memutil.v);
        }
    memset(&st, 0, sizeof st);
}

/* The library may be unloaded without a final nvmlShutdown. */
__attribute__((destructor)) static void fake_unload(void)
{
    pthread_mutex_lock(&mu);
    free_scenario();
    pthread_mutex_unlock(&mu);
}

static void default_device(device *d, unsigned index)
{
    d->declared = true;
    snprintf(d->name, sizeof d->name, "Fake NVIDIA GPU");
    snprintf(d->uuid, sizeof d->uuid, "GPU-fa4e0000-0000-0000-0000-%012u", index);
}

static void reset_defaults(void)
{
    free_scenario();
    st.count_override = -1;
    snprintf(st.driver_version, sizeof st.driver_version, "999.99.99");
}

/* ------------------------------------------------------------ the parser */

#define MAX_TOKENS 520

typedef struct parser {
    const char *path;
    unsigned line_no;
    const char *line; /* the original text, for messages */
    char *tok[MAX_TOKENS];
    size_t n;
} parser;

static int parse_error(const parser *p, const char *what)
{
    fprintf(stderr, "fake_nvml: %s:%u: %s: %s\n", p->path, p->line_no, what, p->line);
    return -1;
}

/* Splits buf in place: words, "quoted text", '#' to the end is a comment. */
static int tokenize(parser *p, char *buf)
{
    p->n = 0;
    char *s = buf;
    for (;;) {
        while (*s == ' ' || *s == '\t' || *s == '\r' || *s == '\n')
            s++;
        if (!*s || *s == '#')
            return 0;
        if (p->n == MAX_TOKENS)
            return parse_error(p, "too many words");
        if (*s == '"') {
            char *end = strchr(s + 1, '"');
            if (!end)
                return parse_error(p, "unterminated quote");
            *end = '\0';
            p->tok[p->n++] = s + 1;
            s = end + 1;
            continue;
        }
        p->tok[p->n++] = s;
        while (*s && *s != ' ' && *s != '\t' && *s != '\r' && *s != '\n')
            s++;
        if (*s)
            *s++ = '\0';
    }
}

static bool parse_ll(const char *t, long long *out)
{
    char *end;
    errno = 0;
    if (t[0] == '-') {
        *out = strtoll(t, &end, 0);
    } else {
        unsigned long long u = strtoull(t, &end, 0);
        *out = (long long)u; /* throttle masks may use the top bit */
    }
    return errno == 0 && end != t && *end == '\0';
}

static bool parse_uint(const char *t, unsigned long long max, unsigned long long *out)
{
    long long v;
    if (!parse_ll(t, &v) || t[0] == '-' || (unsigned long long)v > max)
        return false;
    *out = (unsigned long long)v;
    return true;
}

static int parse_code(const parser *p, const char *t, int *out)
{
    long long v;
    if (!parse_ll(t, &v) || v < 0 || v > 100000)
        return parse_error(p, "bad NVML return code");
    *out = (int)v;
    return 0;
}

/* A declared device index. */
static int parse_dev(const parser *p, const char *t, unsigned *out)
{
    unsigned long long v;
    if (!parse_uint(t, MAX_DEVICES - 1, &v))
        return parse_error(p, "bad device index (0-15)");
    if (!st.devs[v].declared)
        return parse_error(p, "device not declared above (add a 'device N' line first)");
    *out = (unsigned)v;
    return 0;
}

static int parse_key(const parser *p, const char *t, unsigned *mask)
{
    for (unsigned k = 0; k < N_KEYS; k++) {
        if (strcmp(t, key_names[k]) == 0) {
            *mask = 1u << k;
            return 0;
        }
    }
    for (size_t i = 0; i < sizeof key_aliases / sizeof key_aliases[0]; i++) {
        if (strcmp(t, key_aliases[i].name) == 0) {
            *mask = key_aliases[i].mask;
            return 0;
        }
    }
    return parse_error(p, "unknown function name");
}

static rule *new_rule(const parser *p)
{
    if (st.n_rules == MAX_RULES) {
        parse_error(p, "too many error/slow rules");
        return NULL;
    }
    return &st.rules[st.n_rules++];
}

/* "after N" / "times M" pairs from t[i] on into r; 0 or -1. */
static int parse_counts(const parser *p, size_t i, rule *r)
{
    for (; i < p->n; i += 2) {
        unsigned long long v;
        if (i + 1 >= p->n || !parse_uint(p->tok[i + 1], ~0ull, &v))
            return parse_error(p, "expected a count after 'after' / 'times'");
        if (strcmp(p->tok[i], "after") == 0)
            r->after = v;
        else if (strcmp(p->tok[i], "times") == 0)
            r->times = v;
        else
            return parse_error(p, "unknown option (after, times)");
    }
    return 0;
}

/* hang DEVICE FUNCTION MS [after N] [times M] | hang SYSFN MS [after N] [times M] */
static int parse_hang(parser *p)
{
    char **t = p->tok;
    if (p->n < 3)
        return parse_error(p, "expected: hang DEVICE FUNCTION MILLISECONDS [after N] [times M] | "
                              "hang init|count|driver_version|shutdown MILLISECONDS ...");
    rule r = {0};
    size_t ms_at = 2;
    for (int f = S_INIT; f <= S_SHUTDOWN; f++)
        if (strcmp(t[1], sys_fn_names[f]) == 0)
            r.sys = (enum sys_fn)f;
    if (r.sys == S_NONE) {
        if (p->n < 4 || parse_dev(p, t[1], &r.dev) != 0 || parse_key(p, t[2], &r.mask) != 0)
            return p->n < 4 ? parse_error(p, "expected: hang DEVICE FUNCTION MILLISECONDS") : -1;
        ms_at = 3;
    }
    if (!parse_uint(t[ms_at], 3600000, &r.hang_ms) || r.hang_ms == 0)
        return parse_error(p, "bad milliseconds (1 to 3600000)");
    if (parse_counts(p, ms_at + 1, &r) != 0)
        return -1;
    rule *slot = new_rule(p);
    if (!slot)
        return -1;
    *slot = r;
    return 0;
}

/* "V[,V...]" into a sequence. */
static int parse_csv_seq(const parser *p, const char *t, seq *s)
{
    size_t n = 1;
    for (const char *c = t; *c; c++)
        n += *c == ',';
    free(s->v);
    s->n = 0;
    s->v = malloc(n * sizeof *s->v);
    if (!s->v)
        return parse_error(p, "out of memory");
    char buf[512];
    snprintf(buf, sizeof buf, "%s", t);
    for (char *save = NULL, *tok = strtok_r(buf, ",", &save); tok; tok = strtok_r(NULL, ",", &save))
        if (!parse_ll(tok, &s->v[s->n++]))
            return parse_error(p, "bad value in a comma list");
    return 0;
}

/* proc DEVICE PID|file:PATH [mem V,..] [sm V,..] [memutil V,..] */
static int parse_proc(parser *p)
{
    char **t = p->tok;
    unsigned dev;
    if (p->n < 3 || (p->n - 3) % 2 != 0)
        return parse_error(p, "expected: proc DEVICE PID|file:PATH [mem V,..] [sm V,..] "
                              "[memutil V,..]");
    if (parse_dev(p, t[1], &dev) != 0)
        return -1;
    device *d = &st.devs[dev];
    if (d->n_procs == MAX_PROCS)
        return parse_error(p, "too many processes on one device (8)");
    fake_proc *f = &d->procs[d->n_procs++];
    unsigned long long pid;
    if (strncmp(t[2], "file:", 5) == 0)
        snprintf(f->pid_file, sizeof f->pid_file, "%s", t[2] + 5);
    else if (parse_uint(t[2], 0x7fffffff, &pid) && pid > 0)
        f->pid = (unsigned)pid;
    else
        return parse_error(p, "bad PID (a number, or file:PATH)");
    for (size_t i = 3; i < p->n; i += 2) {
        seq *s = strcmp(t[i], "mem") == 0       ? &f->mem
                 : strcmp(t[i], "sm") == 0      ? &f->sm
                 : strcmp(t[i], "memutil") == 0 ? &f->memutil
                                                : NULL;
        if (!s)
            return parse_error(p, "unknown process attribute (mem, sm, memutil)");
        if (parse_csv_seq(p, t[i + 1], s) != 0)
            return -1;
    }
    return 0;
}

/* A MIG instance's attribute of a device line: mig_of PARENT, slot S,
 * gi G, ci C (0 or -1). */
static int parse_mig_attr(const parser *p, device *d, const char *key, const char *val)
{
    unsigned long long v;
    if (strcmp(key, "mig_of") == 0) {
        unsigned parent;
        if (parse_dev(p, val, &parent) != 0)
            return -1;
        if (st.devs[parent].is_mig)
            return parse_error(p, "a MIG instance cannot be a parent");
        d->is_mig = true;
        d->mig_parent = parent;
        st.devs[parent].mig_capable = st.devs[parent].mig_on = true;
        return 0;
    }
    unsigned *dst = strcmp(key, "slot") == 0 ? &d->mig_slot
                    : strcmp(key, "gi") == 0 ? &d->gi
                    : strcmp(key, "ci") == 0 ? &d->ci
                                             : NULL;
    if (!dst)
        return parse_error(p, "unknown device attribute (name, uuid, mig_of, slot, gi, ci)");
    if (!parse_uint(val, strcmp(key, "slot") == 0 ? FAKE_MIG_MAX - 1 : 1000, &v))
        return parse_error(p, "bad MIG slot / instance id");
    *dst = (unsigned)v;
    return 0;
}

static int parse_line(parser *p)
{
    char **t = p->tok;
    size_t n = p->n;
    if (n == 0)
        return 0;
    const char *cmd = t[0];

    if (strcmp(cmd, "device") == 0) {
        unsigned long long idx;
        if (n < 2 || !parse_uint(t[1], MAX_DEVICES - 1, &idx))
            return parse_error(p, "expected: device INDEX [name \"TEXT\"] [uuid TEXT]");
        device *d = &st.devs[idx];
        if (d->declared)
            return parse_error(p, "device declared twice");
        default_device(d, (unsigned)idx);
        for (size_t i = 2; i < n; i += 2) {
            if (i + 1 >= n)
                return parse_error(p, "a value is missing");
            if (strcmp(t[i], "name") == 0)
                snprintf(d->name, sizeof d->name, "%s", t[i + 1]);
            else if (strcmp(t[i], "uuid") == 0)
                snprintf(d->uuid, sizeof d->uuid, "%s", t[i + 1]);
            else if (parse_mig_attr(p, d, t[i], t[i + 1]) != 0)
                return -1;
        }
        return 0;
    }
    if (strcmp(cmd, "count") == 0) {
        unsigned long long v;
        if (n != 2 || !parse_uint(t[1], 1000, &v))
            return parse_error(p, "expected: count N");
        st.count_override = (long long)v;
        return 0;
    }
    if (strcmp(cmd, "driver_version") == 0) {
        if (n != 2)
            return parse_error(p, "expected: driver_version TEXT");
        snprintf(st.driver_version, sizeof st.driver_version, "%s", t[1]);
        return 0;
    }
    if (strcmp(cmd, "init_error") == 0 || strcmp(cmd, "count_error") == 0 ||
        strcmp(cmd, "driver_error") == 0) {
        if (n != 2)
            return parse_error(p, "expected: init_error|count_error|driver_error CODE");
        int *dst = cmd[0] == 'i'   ? &st.init_error
                   : cmd[0] == 'c' ? &st.count_error
                                   : &st.driver_error;
        return parse_code(p, t[1], dst);
    }
    if (strcmp(cmd, "seq") == 0) {
        unsigned dev;
        if (n < 4)
            return parse_error(p, "expected: seq DEVICE METRIC VALUE...");
        if (parse_dev(p, t[1], &dev) != 0)
            return -1;
        int m = -1;
        for (int i = 0; i < N_METRICS; i++)
            if (strcmp(t[2], metric_info[i].name) == 0)
                m = i;
        if (m < 0)
            return parse_error(p, "unknown metric");
        seq *s = &st.devs[dev].seqs[m];
        free(s->v);
        s->n = 0;
        s->v = malloc((n - 3) * sizeof *s->v);
        if (!s->v)
            return parse_error(p, "out of memory");
        for (size_t i = 3; i < n; i++)
            if (!parse_ll(t[i], &s->v[s->n++]))
                return parse_error(p, "bad value");
        return 0;
    }
    if (strcmp(cmd, "unsupported") == 0) {
        unsigned dev, mask;
        if (n != 3)
            return parse_error(p, "expected: unsupported DEVICE FUNCTION");
        if (parse_dev(p, t[1], &dev) != 0 || parse_key(p, t[2], &mask) != 0)
            return -1;
        rule *r = new_rule(p);
        if (!r)
            return -1;
        *r = (rule){.dev = dev, .mask = mask, .code = R_NOT_SUPPORTED};
        return 0;
    }
    if (strcmp(cmd, "error") == 0) {
        unsigned dev, mask;
        if (n < 3)
            return parse_error(p, "expected: error DEVICE FUNCTION CODE [after N] [times N] | "
                                  "error DEVICE lost_after N");
        if (parse_dev(p, t[1], &dev) != 0)
            return -1;
        if (strcmp(t[2], "lost_after") == 0) {
            device *d = &st.devs[dev];
            if (n != 4 || !parse_uint(t[3], ~0ull, &d->lost_after))
                return parse_error(p, "expected: error DEVICE lost_after N");
            d->has_lost_after = true;
            return 0;
        }
        if (n < 4 || parse_key(p, t[2], &mask) != 0)
            return n < 4 ? parse_error(p, "expected: error DEVICE FUNCTION CODE") : -1;
        rule *r = new_rule(p);
        if (!r)
            return -1;
        *r = (rule){.dev = dev, .mask = mask};
        if (parse_code(p, t[3], &r->code) != 0)
            return -1;
        if (r->code == R_SUCCESS)
            return parse_error(p, "an error rule needs a non-zero code");
        for (size_t i = 4; i < n; i += 2) {
            unsigned long long v;
            if (i + 1 >= n || !parse_uint(t[i + 1], ~0ull, &v))
                return parse_error(p, "expected a count after 'after' / 'times'");
            if (strcmp(t[i], "after") == 0)
                r->after = v;
            else if (strcmp(t[i], "times") == 0)
                r->times = v;
            else
                return parse_error(p, "unknown error option (after, times)");
        }
        return 0;
    }
    if (strcmp(cmd, "slow") == 0) {
        unsigned dev, mask;
        unsigned long long us;
        if (n != 4)
            return parse_error(p, "expected: slow DEVICE FUNCTION MICROSECONDS");
        if (parse_dev(p, t[1], &dev) != 0 || parse_key(p, t[2], &mask) != 0)
            return -1;
        if (!parse_uint(t[3], 10000000, &us))
            return parse_error(p, "bad microseconds (at most 10 s)");
        rule *r = new_rule(p);
        if (!r)
            return -1;
        *r = (rule){.dev = dev, .mask = mask, .delay_us = (unsigned)us};
        return 0;
    }
    if (strcmp(cmd, "gpm") == 0) {
        unsigned dev;
        if (n < 2 || parse_dev(p, t[1], &dev) != 0)
            return n < 2 ? parse_error(p, "expected: gpm DEVICE [no METRIC...]") : -1;
        st.devs[dev].gpm = true;
        if (n > 2 && strcmp(t[2], "no") != 0)
            return parse_error(p, "expected: gpm DEVICE [no METRIC...]");
        for (size_t i = 3; i < n; i++) {
            int m = -1;
            for (int k = M_GPM_FIRST; k <= M_GPM_LAST; k++)
                if (strcmp(t[i], metric_info[k].name) == 0)
                    m = k - M_GPM_FIRST;
            if (m < 0)
                return parse_error(p, "unknown GPM metric (gpm_sm_active, ...)");
            st.devs[dev].gpm_no[m] = true;
        }
        return 0;
    }
    if (strcmp(cmd, "hang") == 0)
        return parse_hang(p);
    if (strcmp(cmd, "proc") == 0)
        return parse_proc(p);
    if (strcmp(cmd, "nofield") == 0) {
        unsigned dev;
        unsigned long long id;
        if (n != 3 || parse_dev(p, t[1], &dev) != 0 || !parse_uint(t[2], 100000, &id))
            return parse_error(p, "expected: nofield DEVICE FIELD_ID");
        device *d = &st.devs[dev];
        if (d->n_nofield == 8)
            return parse_error(p, "too many nofield lines for one device (8)");
        d->nofield[d->n_nofield++] = (unsigned)id;
        return 0;
    }
    if (strcmp(cmd, "events") == 0 || strcmp(cmd, "xid") == 0) {
        unsigned dev;
        unsigned long long code = 0, after = 0;
        bool xid = cmd[0] == 'x';
        bool by_file = xid && n == 5 && strcmp(t[3], "file") == 0;
        if ((xid ? n != 5 : n != 2) || parse_dev(p, t[1], &dev) != 0 ||
            (xid &&
             (!parse_uint(t[2], 100000, &code) ||
              (!by_file && (strcmp(t[3], "after") != 0 || !parse_uint(t[4], ~0ull, &after))) ||
              (by_file && strlen(t[4]) >= sizeof st.devs[0].xid_file[0]))))
            return parse_error(p, "expected: events DEVICE | xid DEVICE CODE after UTIL_READS | "
                                  "xid DEVICE CODE file PATH");
        device *d = &st.devs[dev];
        d->events = true;
        if (xid && d->n_xid == 8)
            return parse_error(p, "too many xid lines for one device (8)");
        if (xid) {
            d->xid_code[d->n_xid] = (unsigned)code;
            snprintf(d->xid_file[d->n_xid], sizeof d->xid_file[0], "%s", by_file ? t[4] : "");
            d->xid_after[d->n_xid++] = after;
        }
        return 0;
    }
    if (strcmp(cmd, "mig") == 0) {
        unsigned dev;
        if (n != 3 || (strcmp(t[2], "on") != 0 && strcmp(t[2], "off") != 0))
            return parse_error(p, "expected: mig DEVICE on|off");
        if (parse_dev(p, t[1], &dev) != 0)
            return -1;
        st.devs[dev].mig_capable = true;
        st.devs[dev].mig_on = strcmp(t[2], "on") == 0;
        return 0;
    }
    return parse_error(p, "unknown line");
}

/* Loads $FAKE_NVML_SCENARIO (or the default device); 0 or -1. */
static int load_scenario(void)
{
    reset_defaults();
    const char *path = getenv("FAKE_NVML_SCENARIO");
    if (!path || !*path) {
        default_device(&st.devs[0], 0);
        st.n_devices = 1;
        return 0;
    }
    FILE *f = fopen(path, "r");
    if (!f) {
        fprintf(stderr, "fake_nvml: cannot open scenario %s: %s\n", path, strerror(errno));
        return -1;
    }
    parser p = {.path = path};
    char buf[8192], copy[8192];
    int rc = 0;
    while (rc == 0 && fgets(buf, sizeof buf, f)) {
        p.line_no++;
        buf[strcspn(buf, "\n")] = '\0';
        memcpy(copy, buf, sizeof copy);
        p.line = copy;
        rc = tokenize(&p, buf);
        if (rc == 0)
            rc = parse_line(&p);
    }
    fclose(f);
    if (rc != 0)
        return -1;
    /* Whole GPUs are 0..N-1; MIG instances (not counted) after them. */
    while (st.n_devices < MAX_DEVICES && st.devs[st.n_devices].declared &&
           !st.devs[st.n_devices].is_mig)
        st.n_devices++;
    for (unsigned d = st.n_devices; d < MAX_DEVICES; d++) {
        if (st.devs[d].declared && !st.devs[d].is_mig) {
            fprintf(stderr, "fake_nvml: %s: devices must be numbered 0..N-1 without a gap\n", path);
            return -1;
        }
    }
    return 0;
}

static void write_stats(void)
{
    const char *path = getenv("FAKE_NVML_STATS");
    if (!path || !*path)
        return;
    FILE *f = fopen(path, "w");
    if (!f) {
        fprintf(stderr, "fake_nvml: cannot write stats %s: %s\n", path, strerror(errno));
        return;
    }
    fprintf(f, "# fake_nvml call counts\n");
    for (int i = 0; i < N_FNS; i++)
        if (st.fn_calls[i])
            fprintf(f, "%s %llu\n", fn_names[i], st.fn_calls[i]);
    if (st.fn_calls[F_nvmlGpmSampleAlloc])
        fprintf(f, "gpm_samples_live %lld\n", st.gpm_live);
    for (unsigned d = 0; d < MAX_DEVICES; d++)
        for (int k = 0; k < N_KEYS; k++)
            if (st.devs[d].calls[k])
                fprintf(f, "device %u %s %llu\n", d, key_names[k], st.devs[d].calls[k]);
    fclose(f);
}

/* ---------------------------------------------------------------- calls */

/* One device call in progress: the lock is held between begin and finish. */
typedef struct call {
    device *d;
    unsigned long long delay_us;
} call;

static device *device_of(const void *handle)
{
    /* Compared as integers: a foreign pointer is not part of st.devs. */
    uintptr_t p = (uintptr_t)handle, base = (uintptr_t)st.devs;
    if (p < base || p >= base + MAX_DEVICES * sizeof(device) || (p - base) % sizeof(device))
        return NULL;
    device *d = &st.devs[(p - base) / sizeof(device)];
    return (d - st.devs) < (ptrdiff_t)st.n_devices || d->is_mig ? d : NULL;
}

/* begin()'s handle for a call that names its device by index. */
static const char by_index_tag;
#define BY_INDEX ((const void *)&by_index_tag)

/* The error / slow / hang rules of device d's function k (lock held):
 * the code the call must return; delays added to *delay_us. */
static int apply_rules(device *d, enum key k, unsigned long long *delay_us)
{
    unsigned dev = (unsigned)(d - st.devs);
    int code = R_SUCCESS;
    for (size_t i = 0; i < st.n_rules; i++) {
        rule *r = &st.rules[i];
        if (r->dev != dev || !(r->mask & (1u << k)))
            continue;
        if (r->hang_ms) {
            if (++r->seen > r->after && (r->times == 0 || r->fired < r->times)) {
                r->fired++;
                *delay_us += r->hang_ms * 1000ull;
            }
            continue;
        }
        if (r->code == 0) {
            *delay_us += r->delay_us;
            continue;
        }
        r->seen++;
        if (r->seen > r->after && (r->times == 0 || r->fired < r->times) && code == R_SUCCESS) {
            r->fired++;
            code = r->code;
        }
    }
    return code;
}

/* Locks; resolves the device (by handle, or by index with BY_INDEX);
 * counts; applies the lost / error / slow rules.  Returns the code the call
 * must return (R_SUCCESS: go on and fill the values, then finish()). */
static int begin(enum fn f, const void *handle, unsigned index, enum key k, call *c)
{
    pthread_mutex_lock(&mu);
    st.fn_calls[f]++;
    c->delay_us = 0;
    if (handle == BY_INDEX)
        c->d = index < st.n_devices ? &st.devs[index] : NULL;
    else
        c->d = device_of(handle);
    if (st.refcount == 0)
        return R_UNINITIALIZED;
    device *d = c->d;
    if (!d)
        return R_INVALID_ARGUMENT;
    d->calls[k]++;
    int code = apply_rules(d, k, &c->delay_us);
    if (k == K_UTIL && d->has_lost_after && !d->lost && ++d->util_calls > d->lost_after)
        d->lost = true;
    if (d->lost)
        return R_GPU_IS_LOST;
    /* A MIG handle answers its name, UUID, memory and ids; the rest
     * (utilisation included) is NOT_SUPPORTED, as on a real driver. */
    if (d->is_mig && code == R_SUCCESS && k != K_NAME && k != K_UUID && k != K_MEM_V1 &&
        k != K_MEM_V2 && k != K_MIG && k != K_GPM_METRICS)
        code = R_NOT_SUPPORTED;
    return code;
}

static void sleep_us(unsigned long long us)
{
    if (!us)
        return;
    struct timespec ts = {(time_t)(us / 1000000u), (long)(us % 1000000u) * 1000L};
    while (nanosleep(&ts, &ts) != 0 && errno == EINTR) {
    }
}

/* The delay of the hang rules on a call that names no device (lock held). */
static unsigned long long sys_delay_us(enum sys_fn f)
{
    unsigned long long us = 0;
    for (size_t i = 0; i < st.n_rules; i++) {
        rule *r = &st.rules[i];
        if (r->sys != f)
            continue;
        if (++r->seen > r->after && (r->times == 0 || r->fired < r->times)) {
            r->fired++;
            us += r->hang_ms * 1000ull;
        }
    }
    return us;
}

/* Unlocks, then sleeps for a slow rule (outside the lock, like a driver
 * call blocking its own caller only). */
static int finish(call *c, int code)
{
    unsigned long long us = c->delay_us;
    pthread_mutex_unlock(&mu);
    sleep_us(us);
    return code;
}

/* The next value of a metric's sequence (the last one repeats). */
static long long take(device *d, enum metric m)
{
    seq *s = &d->seqs[m];
    if (s->n == 0)
        return metric_info[m].fallback;
    long long v = s->v[s->next < s->n ? s->next : s->n - 1];
    s->next++;
    return v;
}

static int init_common(enum fn f)
{
    pthread_mutex_lock(&mu);
    st.fn_calls[f]++;
    int code = R_SUCCESS;
    if (st.refcount == 0) {
        if (load_scenario() != 0)
            code = R_UNKNOWN;
        else if (st.init_error)
            code = st.init_error;
        /* Counts cover one init..final shutdown session, this call included. */
        memset(st.fn_calls, 0, sizeof st.fn_calls);
        st.fn_calls[f] = 1;
        if (code != R_SUCCESS)
            free_scenario();
    }
    unsigned long long us = 0;
    if (code == R_SUCCESS) {
        st.refcount++;
        us = sys_delay_us(S_INIT);
    }
    pthread_mutex_unlock(&mu);
    sleep_us(us);
    return code;
}

FAKE_API int nvmlInit(void)
{
    return init_common(F_nvmlInit);
}

FAKE_API int nvmlShutdown(void)
{
    pthread_mutex_lock(&mu);
    st.fn_calls[F_nvmlShutdown]++;
    int code = R_SUCCESS;
    unsigned long long us = 0;
    if (st.refcount == 0) {
        code = R_UNINITIALIZED;
    } else {
        us = sys_delay_us(S_SHUTDOWN);
        if (--st.refcount == 0) {
            write_stats();
            free_scenario();
        }
    }
    pthread_mutex_unlock(&mu);
    sleep_us(us);
    return code;
}

/* The fake's own wording of NVML's error strings. */
FAKE_API const char *nvmlErrorString(int code)
{
    pthread_mutex_lock(&mu);
    st.fn_calls[F_nvmlErrorString]++;
    pthread_mutex_unlock(&mu);
    switch (code) {
    case 0:
        return "Success";
    case 1:
        return "Uninitialized";
    case 2:
        return "Invalid Argument";
    case 3:
        return "Not Supported";
    case 4:
        return "Insufficient Permissions";
    case 5:
        return "Already Initialized";
    case 6:
        return "Not Found";
    case 7:
        return "Insufficient Size";
    case 9:
        return "Driver Not Loaded";
    case 12:
        return "NVML Shared Library Not Found";
    case 13:
        return "Function Not Found";
    case 15:
        return "GPU is lost";
    case 18:
        return "RM has detected an NVML/RM version mismatch";
    case 21:
        return "No data";
    case 25:
        return "Argument version mismatch";
    case 26:
        return "Deprecated";
    case 27:
        return "Not Ready";
    case 28:
        return "GPU not found";
    default:
        return "Unknown Error";
    }
}

FAKE_API int nvmlSystemGetDriverVersion(char *buf, unsigned len)
{
    pthread_mutex_lock(&mu);
    st.fn_calls[F_nvmlSystemGetDriverVersion]++;
    int code = R_SUCCESS;
    unsigned long long us = st.refcount ? sys_delay_us(S_DRIVER) : 0;
    if (st.refcount == 0)
        code = R_UNINITIALIZED;
    else if (st.driver_error)
        code = st.driver_error;
    else if (!buf)
        code = R_INVALID_ARGUMENT;
    else if (strlen(st.driver_version) + 1 > len)
        code = R_INSUFFICIENT_SIZE;
    else
        memcpy(buf, st.driver_version, strlen(st.driver_version) + 1);
    pthread_mutex_unlock(&mu);
    sleep_us(us);
    return code;
}

static int count_common(enum fn f, unsigned *count)
{
    pthread_mutex_lock(&mu);
    st.fn_calls[f]++;
    int code = R_SUCCESS;
    unsigned long long us = st.refcount ? sys_delay_us(S_COUNT) : 0;
    if (st.refcount == 0)
        code = R_UNINITIALIZED;
    else if (st.count_error)
        code = st.count_error;
    else if (!count)
        code = R_INVALID_ARGUMENT;
    else
        *count = st.count_override >= 0 ? (unsigned)st.count_override : st.n_devices;
    pthread_mutex_unlock(&mu);
    sleep_us(us);
    return code;
}

FAKE_API int nvmlDeviceGetCount(unsigned *count)
{
    return count_common(F_nvmlDeviceGetCount, count);
}

static int handle_common(enum fn f, unsigned index, void **out)
{
    call c;
    int code = begin(f, BY_INDEX, index, K_HANDLE, &c);
    if (code == R_SUCCESS && !out)
        code = R_INVALID_ARGUMENT;
    if (code == R_SUCCESS)
        *out = c.d;
    return finish(&c, code);
}

FAKE_API int nvmlDeviceGetHandleByIndex(unsigned index, void **out)
{
    return handle_common(F_nvmlDeviceGetHandleByIndex, index, out);
}

static int text_common(enum fn f, enum key k, void *handle, char *buf, unsigned len)
{
    call c;
    int code = begin(f, handle, 0, k, &c);
    if (code == R_SUCCESS) {
        const char *text = k == K_NAME ? c.d->name : c.d->uuid;
        if (!buf)
            code = R_INVALID_ARGUMENT;
        else if (strlen(text) + 1 > len)
            code = R_INSUFFICIENT_SIZE;
        else
            memcpy(buf, text, strlen(text) + 1);
    }
    return finish(&c, code);
}

FAKE_API int nvmlDeviceGetName(void *dev, char *buf, unsigned len)
{
    return text_common(F_nvmlDeviceGetName, K_NAME, dev, buf, len);
}

FAKE_API int nvmlDeviceGetUUID(void *dev, char *buf, unsigned len)
{
    return text_common(F_nvmlDeviceGetUUID, K_UUID, dev, buf, len);
}

#define BEGIN(fname, key, handle, c) begin(F_##fname, (handle), 0, key, c)

FAKE_API int nvmlDeviceGetUtilizationRates(void *dev, struct fake_utilization *u)
{
    call c;
    int code = BEGIN(nvmlDeviceGetUtilizationRates, K_UTIL, dev, &c);
    if (code == R_SUCCESS && !u)
        code = R_INVALID_ARGUMENT;
    if (code == R_SUCCESS) {
        u->gpu = (unsigned)take(c.d, M_UTIL_GPU);
        u->memory = (unsigned)take(c.d, M_UTIL_MEM);
    }
    return finish(&c, code);
}

/* v1's `used` includes the reserved memory; v2 reports it apart. */
FAKE_API int nvmlDeviceGetMemoryInfo(void *dev, struct fake_memory_v1 *m)
{
    call c;
    int code = BEGIN(nvmlDeviceGetMemoryInfo, K_MEM_V1, dev, &c);
    if (code == R_SUCCESS && !m)
        code = R_INVALID_ARGUMENT;
    if (code == R_SUCCESS) {
        unsigned long long used = (unsigned long long)take(c.d, M_MEM_USED);
        unsigned long long total = (unsigned long long)take(c.d, M_MEM_TOTAL);
        unsigned long long reserved = (unsigned long long)take(c.d, M_MEM_RESERVED);
        m->total = total;
        m->used = used + reserved;
        m->free = total > m->used ? total - m->used : 0;
    }
    return finish(&c, code);
}

FAKE_API int nvmlDeviceGetPowerUsage(void *dev, unsigned *power_mw)
{
    call c;
    int code = BEGIN(nvmlDeviceGetPowerUsage, K_POWER, dev, &c);
    if (code == R_SUCCESS && !power_mw)
        code = R_INVALID_ARGUMENT;
    if (code == R_SUCCESS)
        *power_mw = (unsigned)take(c.d, M_POWER_MW);
    return finish(&c, code);
}

/* The deprecated call: unsigned, so a negative reading reads as 0. */
FAKE_API int nvmlDeviceGetTemperature(void *dev, int sensor, unsigned *temp_c)
{
    call c;
    int code = BEGIN(nvmlDeviceGetTemperature, K_TEMP_V1, dev, &c);
    if (code == R_SUCCESS && (!temp_c || sensor != 0))
        code = R_INVALID_ARGUMENT;
    if (code == R_SUCCESS) {
        long long t = take(c.d, M_TEMP_C);
        *temp_c = t < 0 ? 0u : (unsigned)t;
    }
    return finish(&c, code);
}

/* Type 0 (graphics) and 1 (SM) share the SM sequence; 2 is memory. */
FAKE_API int nvmlDeviceGetClockInfo(void *dev, int type, unsigned *mhz)
{
    call c;
    enum key k = type == 2 ? K_CLOCK_MEM : K_CLOCK_SM;
    int code = BEGIN(nvmlDeviceGetClockInfo, k, dev, &c);
    if (code == R_SUCCESS && (!mhz || type < 0 || type > 2))
        code = R_INVALID_ARGUMENT;
    if (code == R_SUCCESS)
        *mhz = (unsigned)take(c.d, type == 2 ? M_CLOCK_MEM : M_CLOCK_SM);
    return finish(&c, code);
}

static int reasons_common(enum fn f, void *dev, unsigned long long *mask)
{
    call c;
    int code = begin(f, dev, 0, K_THROTTLE, &c);
    if (code == R_SUCCESS && !mask)
        code = R_INVALID_ARGUMENT;
    if (code == R_SUCCESS)
        *mask = (unsigned long long)take(c.d, M_THROTTLE);
    return finish(&c, code);
}

FAKE_API int nvmlDeviceGetCurrentClocksThrottleReasons(void *dev, unsigned long long *mask)
{
    return reasons_common(F_nvmlDeviceGetCurrentClocksThrottleReasons, dev, mask);
}

FAKE_API int nvmlDeviceGetPcieThroughput(void *dev, int counter, unsigned *kb_per_s)
{
    call c;
    enum key k = counter == 1 ? K_PCIE_RX : K_PCIE_TX;
    int code = BEGIN(nvmlDeviceGetPcieThroughput, k, dev, &c);
    if (code == R_SUCCESS && (!kb_per_s || counter < 0 || counter > 1))
        code = R_INVALID_ARGUMENT;
    if (code == R_SUCCESS)
        *kb_per_s = (unsigned)take(c.d, counter == 1 ? M_PCIE_RX : M_PCIE_TX);
    return finish(&c, code);
}

/* ----------------------------------------------------- processes */

struct fake_process_util {
    unsigned pid;
    unsigned long long ts;
    unsigned sm, mem, enc, dec;
};
_Static_assert(sizeof(struct fake_process_util) == 32, "nvmlProcessUtilizationSample_t is 32");

/* The PID of a process now (its file read again), 0: not running. */
static unsigned proc_pid(const fake_proc *f)
{
    if (!f->pid_file[0])
        return f->pid;
    FILE *fp = fopen(f->pid_file, "r");
    if (!fp)
        return 0;
    unsigned pid = 0;
    if (fscanf(fp, "%u", &pid) != 1)
        pid = 0;
    fclose(fp);
    return pid;
}

/* A process sequence's next value (empty: fallback). */
static long long proc_take(seq *s, long long fallback)
{
    if (s->n == 0)
        return fallback;
    long long v = s->v[s->next < s->n ? s->next : s->n - 1];
    s->next++;
    return v;
}

/* One sample per running process, stamped 1 ms after the previous call's,
 * and only when newer than last_seen (else NOT_FOUND, as NVML). */
FAKE_API int nvmlDeviceGetProcessUtilization(void *dev, struct fake_process_util *out,
                                             unsigned *count, unsigned long long last_seen)
{
    call c;
    int code = BEGIN(nvmlDeviceGetProcessUtilization, K_PROC_UTIL, dev, &c);
    if (code == R_SUCCESS && !count)
        code = R_INVALID_ARGUMENT;
    unsigned pids[MAX_PROCS], n = 0;
    for (unsigned i = 0; code == R_SUCCESS && i < c.d->n_procs; i++)
        if ((pids[i] = proc_pid(&c.d->procs[i])) != 0)
            n++;
    if (code == R_SUCCESS && (!out || *count < n)) {
        *count = n;
        code = R_INSUFFICIENT_SIZE;
    }
    unsigned long long ts = c.d->util_ts ? c.d->util_ts + 1000 : 1000000;
    if (code == R_SUCCESS && (n == 0 || ts <= last_seen))
        code = R_NOT_FOUND;
    if (code == R_SUCCESS) {
        c.d->util_ts = ts;
        unsigned k = 0;
        for (unsigned i = 0; i < c.d->n_procs; i++) {
            if (!pids[i])
                continue;
            fake_proc *f = &c.d->procs[i];
            out[k++] = (struct fake_process_util){
                pids[i], ts, (unsigned)proc_take(&f->sm, 0), (unsigned)proc_take(&f->memutil, 0),
                0,       0};
        }
        *count = n;
    }
    return finish(&c, code);
}

/* ------------------------------------------------ newer symbols (not OLD) */

#if !FAKE_NVML_OLD

FAKE_API int nvmlInit_v2(void)
{
    return init_common(F_nvmlInit_v2);
}

FAKE_API int nvmlDeviceGetCount_v2(unsigned *count)
{
    return count_common(F_nvmlDeviceGetCount_v2, count);
}

FAKE_API int nvmlDeviceGetHandleByIndex_v2(unsigned index, void **out)
{
    return handle_common(F_nvmlDeviceGetHandleByIndex_v2, index, out);
}

FAKE_API int nvmlDeviceGetMemoryInfo_v2(void *dev, struct fake_memory_v2 *m)
{
    call c;
    int code = BEGIN(nvmlDeviceGetMemoryInfo_v2, K_MEM_V2, dev, &c);
    if (code == R_SUCCESS && !m)
        code = R_INVALID_ARGUMENT;
    if (code == R_SUCCESS && m->version != MEMORY_V2_VERSION)
        code = R_ARGUMENT_VERSION_MISMATCH;
    if (code == R_SUCCESS) {
        unsigned long long used = (unsigned long long)take(c.d, M_MEM_USED);
        unsigned long long total = (unsigned long long)take(c.d, M_MEM_TOTAL);
        unsigned long long reserved = (unsigned long long)take(c.d, M_MEM_RESERVED);
        m->total = total;
        m->reserved = reserved;
        m->used = used;
        m->free = total > used + reserved ? total - used - reserved : 0;
    }
    return finish(&c, code);
}

FAKE_API int nvmlDeviceGetTotalEnergyConsumption(void *dev, unsigned long long *energy_mj)
{
    call c;
    int code = BEGIN(nvmlDeviceGetTotalEnergyConsumption, K_ENERGY, dev, &c);
    if (code == R_SUCCESS && !energy_mj)
        code = R_INVALID_ARGUMENT;
    if (code == R_SUCCESS)
        *energy_mj = (unsigned long long)take(c.d, M_ENERGY_MJ);
    return finish(&c, code);
}

FAKE_API int nvmlDeviceGetTemperatureV(void *dev, struct fake_temperature *t)
{
    call c;
    int code = BEGIN(nvmlDeviceGetTemperatureV, K_TEMP_V, dev, &c);
    if (code == R_SUCCESS && !t)
        code = R_INVALID_ARGUMENT;
    if (code == R_SUCCESS && t->version != TEMPERATURE_VERSION)
        code = R_ARGUMENT_VERSION_MISMATCH;
    if (code == R_SUCCESS && t->sensor_type != 0)
        code = R_INVALID_ARGUMENT;
    if (code == R_SUCCESS)
        t->temperature = (int)take(c.d, M_TEMP_C);
    return finish(&c, code);
}

FAKE_API int nvmlDeviceGetCurrentClocksEventReasons(void *dev, unsigned long long *mask)
{
    return reasons_common(F_nvmlDeviceGetCurrentClocksEventReasons, dev, mask);
}

/* GPM (Hopper and later).  Structs in the fake's own words, sized for
 * NVML 13.0 (210 metrics): the backend's larger struct (333) must work,
 * and only the first numMetrics entries are written. */
struct fake_gpm_support {
    unsigned version;
    unsigned is_supported;
};
struct fake_gpm_metric {
    unsigned id;
    int ret;
    double value;
    const char *short_name, *long_name, *unit;
};
struct fake_gpm_metrics_get {
    unsigned version;
    unsigned num;
    void *sample1, *sample2;
    struct fake_gpm_metric metrics[210];
};
_Static_assert(sizeof(struct fake_gpm_support) == 8, "nvmlGpmSupport_t is 8 bytes");
_Static_assert(sizeof(struct fake_gpm_metric) == 40, "nvmlGpmMetric_t is 40 bytes");
_Static_assert(offsetof(struct fake_gpm_metrics_get, metrics) == 24, "metrics at 24");

#define GPM_MAGIC 0x67706d73u
typedef struct fake_gpm_sample {
    unsigned magic;
    device *d;                /* NULL until a SampleGet succeeds */
    unsigned long long taken; /* the device's gpm_taken at that get */
} fake_gpm_sample;

FAKE_API int nvmlGpmQueryDeviceSupport(void *dev, struct fake_gpm_support *sup)
{
    call c;
    int code = BEGIN(nvmlGpmQueryDeviceSupport, K_GPM_QUERY, dev, &c);
    if (code == R_SUCCESS && !sup)
        code = R_INVALID_ARGUMENT;
    if (code == R_SUCCESS && sup->version != 1)
        code = R_ARGUMENT_VERSION_MISMATCH;
    if (code == R_SUCCESS)
        sup->is_supported = c.d->gpm ? 1u : 0u;
    return finish(&c, code);
}

FAKE_API int nvmlGpmSampleAlloc(void **out)
{
    pthread_mutex_lock(&mu);
    st.fn_calls[F_nvmlGpmSampleAlloc]++;
    int code = st.refcount == 0 ? R_UNINITIALIZED : !out ? R_INVALID_ARGUMENT : R_SUCCESS;
    if (code == R_SUCCESS) {
        fake_gpm_sample *g = calloc(1, sizeof *g);
        if (!g) {
            code = R_UNKNOWN;
        } else {
            g->magic = GPM_MAGIC;
            *out = g;
            st.gpm_live++;
        }
    }
    pthread_mutex_unlock(&mu);
    return code;
}

FAKE_API int nvmlGpmSampleFree(void *sample)
{
    pthread_mutex_lock(&mu);
    st.fn_calls[F_nvmlGpmSampleFree]++;
    fake_gpm_sample *g = sample;
    int code = R_SUCCESS;
    if (!g || g->magic != GPM_MAGIC) {
        code = R_INVALID_ARGUMENT;
    } else {
        g->magic = 0;
        free(g);
        st.gpm_live--;
    }
    pthread_mutex_unlock(&mu);
    return code;
}

FAKE_API int nvmlGpmSampleGet(void *dev, void *sample)
{
    call c;
    int code = BEGIN(nvmlGpmSampleGet, K_GPM_SAMPLE, dev, &c);
    fake_gpm_sample *g = sample;
    if (code == R_SUCCESS && (!g || g->magic != GPM_MAGIC))
        code = R_INVALID_ARGUMENT;
    if (code == R_SUCCESS && !c.d->gpm)
        code = R_NOT_SUPPORTED;
    if (code == R_SUCCESS) {
        g->d = c.d;
        g->taken = ++c.d->gpm_taken;
    }
    return finish(&c, code);
}

/* One value per metric asked for (its sequence's next), computed "between"
 * two samples of one device taken in that order. */
FAKE_API int nvmlGpmMetricsGet(struct fake_gpm_metrics_get *m)
{
    const fake_gpm_sample *s1 = m ? m->sample1 : NULL, *s2 = m ? m->sample2 : NULL;
    bool ok = s1 && s2 && s1->magic == GPM_MAGIC && s2->magic == GPM_MAGIC && s1->d &&
              s1->d == s2->d && s2->taken > s1->taken;
    call c;
    int code = BEGIN(nvmlGpmMetricsGet, K_GPM_METRICS, ok ? (void *)s1->d : NULL, &c);
    if (code == R_SUCCESS && m->version != 1)
        code = R_ARGUMENT_VERSION_MISMATCH;
    if (code == R_SUCCESS && (m->num == 0 || m->num > 210))
        code = R_INVALID_ARGUMENT;
    for (unsigned k = 0; code == R_SUCCESS && k < m->num; k++) {
        struct fake_gpm_metric *e = &m->metrics[k];
        int idx = -1;
        for (int i = 0; i < 14; i++)
            if (gpm_metric_ids[i] == e->id)
                idx = i;
        e->value = 0.0;
        e->short_name = e->long_name = e->unit = NULL;
        if (idx < 0 || c.d->gpm_no[idx]) {
            e->ret = R_NOT_SUPPORTED;
            continue;
        }
        e->ret = R_SUCCESS;
        e->value = (double)take(c.d, (enum metric)(M_GPM_FIRST + idx));
        e->short_name = metric_info[M_GPM_FIRST + idx].name + 4;
        e->long_name = metric_info[M_GPM_FIRST + idx].name;
        e->unit = idx >= 10 ? "MiB/s" : "%"; /* NVML's units */
    }
    return finish(&c, code);
}

/* nvmlFieldValue_t in the fake's words. */
struct fake_field_value {
    unsigned id, scope;
    long long ts, latency_us;
    int type, ret;
    union {
        double d;
        unsigned ui;
        unsigned long long ull;
    } v;
};
_Static_assert(sizeof(struct fake_field_value) == 40, "nvmlFieldValue_t is 40 bytes");

/* The fields the fake answers: 83 (TOTAL_ENERGY_CONSUMPTION) takes the
 * energy sequence like nvmlDeviceGetTotalEnergyConsumption, 185
 * (POWER_AVERAGE, GPU scope) the power sequence like
 * nvmlDeviceGetPowerUsage, each entry under its function's own rules. */
static bool field_key(unsigned id, enum key *k, enum metric *m, int *type)
{
    if (id == 83) {
        *k = K_ENERGY, *m = M_ENERGY_MJ, *type = 3; /* unsigned long long */
        return true;
    }
    if (id == 185) {
        *k = K_POWER, *m = M_POWER_MW, *type = 1; /* unsigned int */
        return true;
    }
    if (id == 82) { /* NVML_FI_DEV_MEMORY_TEMP: where the scenario has mem_temp */
        *k = K_HEALTH, *m = M_MEM_TEMP, *type = 1;
        return true;
    }
    return false;
}

/* Any other id, one of a `nofield` line (a GA100 or older GPU answers 185
 * so), or 185 asked for another scope than the GPU's, answers
 * NOT_SUPPORTED in its entry.  $FAKE_NVML_NO_FIELD_VALUES set: the whole
 * call answers NOT_SUPPORTED (a driver without them). */
FAKE_API int nvmlDeviceGetFieldValues(void *dev, int count, struct fake_field_value *v)
{
    call c;
    int code = BEGIN(nvmlDeviceGetFieldValues, K_FIELDS, dev, &c);
    const char *off = getenv("FAKE_NVML_NO_FIELD_VALUES");
    if (code == R_SUCCESS && off && *off)
        code = R_NOT_SUPPORTED;
    if (code == R_SUCCESS && (count <= 0 || !v))
        code = R_INVALID_ARGUMENT;
    for (int k = 0; code == R_SUCCESS && k < count; k++) {
        enum key key = K_ENERGY;
        enum metric m = M_ENERGY_MJ;
        int type = 3;
        bool no = !field_key(v[k].id, &key, &m, &type) || (v[k].id == 185 && v[k].scope != 0) ||
                  (v[k].id == 82 && c.d->seqs[M_MEM_TEMP].n == 0);
        for (unsigned i = 0; i < c.d->n_nofield; i++)
            no = no || c.d->nofield[i] == v[k].id;
        v[k].ts = 1000000;
        v[k].latency_us = 0;
        v[k].v.ull = 0;
        v[k].type = type;
        v[k].ret = no ? R_NOT_SUPPORTED : R_SUCCESS;
        if (!no) {
            /* The function's own rules apply to its field. */
            c.d->calls[key]++;
            int rc = c.d->lost ? R_GPU_IS_LOST : apply_rules(c.d, key, &c.delay_us);
            v[k].ret = rc;
            if (rc == R_SUCCESS && type == 1)
                v[k].v.ui = (unsigned)take(c.d, m);
            else if (rc == R_SUCCESS)
                v[k].v.ull = (unsigned long long)take(c.d, m);
        }
    }
    return finish(&c, code);
}

struct fake_process_info {
    unsigned pid;
    unsigned long long used;
    unsigned gpu_instance, compute_instance;
};
_Static_assert(sizeof(struct fake_process_info) == 24, "nvmlProcessInfo_t is 24 bytes");

FAKE_API int nvmlDeviceGetComputeRunningProcesses_v3(void *dev, unsigned *count,
                                                     struct fake_process_info *out)
{
    call c;
    int code = BEGIN(nvmlDeviceGetComputeRunningProcesses_v3, K_PROCS, dev, &c);
    if (code == R_SUCCESS && !count)
        code = R_INVALID_ARGUMENT;
    unsigned pids[MAX_PROCS], n = 0;
    for (unsigned i = 0; code == R_SUCCESS && i < c.d->n_procs; i++)
        if ((pids[i] = proc_pid(&c.d->procs[i])) != 0)
            n++;
    if (code == R_SUCCESS && (*count < n || (n && !out))) {
        *count = n;
        code = R_INSUFFICIENT_SIZE;
    }
    if (code == R_SUCCESS) {
        unsigned k = 0;
        for (unsigned i = 0; i < c.d->n_procs; i++) {
            if (!pids[i])
                continue;
            long long used = proc_take(&c.d->procs[i].mem, 1 << 20);
            out[k++] = (struct fake_process_info){
                pids[i], used < 0 ? ~0ull : (unsigned long long)used, 0xffffffffu, 0xffffffffu};
        }
        *count = n;
    }
    return finish(&c, code);
}

#endif /* !FAKE_NVML_OLD */

/* ------------------------------------------------------------------- MIG */

/* The old build has none of these: a library without MIG calls. */
#if !FAKE_NVML_OLD

FAKE_API int nvmlDeviceGetMigMode(void *dev, unsigned *current, unsigned *pending)
{
    call c;
    int code = BEGIN(nvmlDeviceGetMigMode, K_MIG, dev, &c);
    if (code == R_SUCCESS && (!current || !pending))
        code = R_INVALID_ARGUMENT;
    if (code == R_SUCCESS && (c.d->is_mig || !c.d->mig_capable))
        code = R_NOT_SUPPORTED;
    if (code == R_SUCCESS)
        *current = *pending = c.d->mig_on ? 1u : 0u;
    return finish(&c, code);
}

FAKE_API int nvmlDeviceGetMaxMigDeviceCount(void *dev, unsigned *count)
{
    call c;
    int code = BEGIN(nvmlDeviceGetMaxMigDeviceCount, K_MIG, dev, &c);
    if (code == R_SUCCESS && !count)
        code = R_INVALID_ARGUMENT;
    if (code == R_SUCCESS && (c.d->is_mig || !c.d->mig_capable))
        code = R_NOT_SUPPORTED;
    if (code == R_SUCCESS)
        *count = FAKE_MIG_MAX;
    return finish(&c, code);
}

FAKE_API int nvmlDeviceGetMigDeviceHandleByIndex(void *dev, unsigned index, void **out)
{
    call c;
    int code = BEGIN(nvmlDeviceGetMigDeviceHandleByIndex, K_MIG, dev, &c);
    if (code == R_SUCCESS && (!out || index >= FAKE_MIG_MAX))
        code = R_INVALID_ARGUMENT;
    if (code == R_SUCCESS && (c.d->is_mig || !c.d->mig_on))
        code = R_NOT_SUPPORTED;
    if (code == R_SUCCESS) {
        unsigned parent = (unsigned)(c.d - st.devs);
        code = R_NOT_FOUND;
        for (unsigned i = 0; i < MAX_DEVICES; i++) {
            const device *m = &st.devs[i];
            if (m->declared && m->is_mig && m->mig_parent == parent && m->mig_slot == index) {
                *out = &st.devs[i];
                code = R_SUCCESS;
            }
        }
    }
    return finish(&c, code);
}

static int instance_id_common(enum fn f, void *dev, unsigned *id, bool gpu_instance)
{
    call c;
    int code = begin(f, dev, 0, K_MIG, &c);
    if (code == R_SUCCESS && !id)
        code = R_INVALID_ARGUMENT;
    if (code == R_SUCCESS && !c.d->is_mig)
        code = R_INVALID_ARGUMENT; /* a whole GPU has no instance id */
    if (code == R_SUCCESS)
        *id = gpu_instance ? c.d->gi : c.d->ci;
    return finish(&c, code);
}

FAKE_API int nvmlDeviceGetGpuInstanceId(void *dev, unsigned *id)
{
    return instance_id_common(F_nvmlDeviceGetGpuInstanceId, dev, id, true);
}

FAKE_API int nvmlDeviceGetComputeInstanceId(void *dev, unsigned *id)
{
    return instance_id_common(F_nvmlDeviceGetComputeInstanceId, dev, id, false);
}

/* A GPM sample of GPU instance gi of the parent dev: the instance of dev
 * with that GI id (INVALID_ARGUMENT when none), which must have GPM, like
 * its parent (NOT_SUPPORTED otherwise).  The parent's gpm_sample rules
 * apply; the metrics between two such samples are the instance's. */
FAKE_API int nvmlGpmMigSampleGet(void *dev, unsigned gi, void *sample)
{
    call c;
    int code = BEGIN(nvmlGpmMigSampleGet, K_GPM_SAMPLE, dev, &c);
    fake_gpm_sample *g = sample;
    if (code == R_SUCCESS && (!g || g->magic != GPM_MAGIC || c.d->is_mig))
        code = R_INVALID_ARGUMENT;
    device *inst = NULL;
    for (unsigned i = 0; code == R_SUCCESS && i < MAX_DEVICES; i++) {
        device *m = &st.devs[i];
        if (m->declared && m->is_mig && &st.devs[m->mig_parent] == c.d && m->gi == gi)
            inst = m;
    }
    if (code == R_SUCCESS && !inst)
        code = R_INVALID_ARGUMENT;
    if (code == R_SUCCESS && (!c.d->gpm || !inst->gpm))
        code = R_NOT_SUPPORTED;
    if (code == R_SUCCESS) {
        inst->calls[K_GPM_SAMPLE]++;
        g->d = inst;
        g->taken = ++inst->gpm_taken;
    }
    return finish(&c, code);
}
#endif /* !FAKE_NVML_OLD */

/* ---------------------------------------------------------------- health */

#if !FAKE_NVML_OLD

/* A health value: the metric's next value where the scenario has a
 * sequence, else NOT_SUPPORTED (lock held, after begin). */
static int health_take(call *c, int code, enum metric m, unsigned long long *out)
{
    if (code != R_SUCCESS)
        return code;
    if (c->d->seqs[m].n == 0)
        return R_NOT_SUPPORTED;
    *out = (unsigned long long)take(c->d, m);
    return R_SUCCESS;
}

FAKE_API int nvmlDeviceGetTotalEccErrors(void *dev, int type, int counter, unsigned long long *v)
{
    call c;
    int code = BEGIN(nvmlDeviceGetTotalEccErrors, K_HEALTH, dev, &c);
    if (code == R_SUCCESS && (!v || type < 0 || type > 1 || counter < 0 || counter > 1))
        code = R_INVALID_ARGUMENT;
    static const enum metric which[2][2] = {{M_ECC_SBE_VOL, M_ECC_SBE_AGG},
                                            {M_ECC_DBE_VOL, M_ECC_DBE_AGG}};
    unsigned long long x = 0;
    code = health_take(&c, code, code == R_SUCCESS ? which[type][counter] : M_ECC_SBE_VOL, &x);
    if (code == R_SUCCESS)
        *v = x;
    return finish(&c, code);
}

/* The count alone is asked (count 0, no buffer): INSUFFICIENT_SIZE with the
 * count when there are pages, as NVML answers. */
FAKE_API int nvmlDeviceGetRetiredPages(void *dev, int cause, unsigned *count,
                                       unsigned long long *addresses)
{
    call c;
    int code = BEGIN(nvmlDeviceGetRetiredPages, K_HEALTH, dev, &c);
    if (code == R_SUCCESS && (!count || cause < 0 || cause > 1))
        code = R_INVALID_ARGUMENT;
    unsigned long long x = 0;
    code = health_take(&c, code, cause == 1 ? M_RETIRED_DBE : M_RETIRED_SBE, &x);
    if (code == R_SUCCESS) {
        if (x > *count || (x && !addresses))
            code = R_INSUFFICIENT_SIZE;
        for (unsigned i = 0; code == R_SUCCESS && i < x; i++)
            addresses[i] = 0x1000ull * (i + 1);
        *count = (unsigned)x;
    }
    return finish(&c, code);
}

FAKE_API int nvmlDeviceGetRemappedRows(void *dev, unsigned *corr, unsigned *unc, unsigned *pending,
                                       unsigned *failed)
{
    call c;
    int code = BEGIN(nvmlDeviceGetRemappedRows, K_HEALTH, dev, &c);
    if (code == R_SUCCESS && (!corr || !unc || !pending || !failed))
        code = R_INVALID_ARGUMENT;
    unsigned long long a = 0, b = 0, p = 0, f = 0;
    code = health_take(&c, code, M_REMAP_CORR, &a);
    if (code == R_SUCCESS) {
        b = (unsigned long long)take(c.d, M_REMAP_UNC);
        p = (unsigned long long)take(c.d, M_REMAP_PENDING);
        f = (unsigned long long)take(c.d, M_REMAP_FAILURE);
        *corr = (unsigned)a, *unc = (unsigned)b, *pending = (unsigned)p, *failed = (unsigned)f;
    }
    return finish(&c, code);
}

static int health_uint(enum fn f, void *dev, enum metric m, unsigned *v)
{
    call c;
    int code = begin(f, dev, 0, K_HEALTH, &c);
    if (code == R_SUCCESS && !v)
        code = R_INVALID_ARGUMENT;
    unsigned long long x = 0;
    code = health_take(&c, code, m, &x);
    if (code == R_SUCCESS)
        *v = (unsigned)x;
    return finish(&c, code);
}

FAKE_API int nvmlDeviceGetPcieReplayCounter(void *dev, unsigned *v)
{
    return health_uint(F_nvmlDeviceGetPcieReplayCounter, dev, M_PCIE_REPLAY, v);
}

FAKE_API int nvmlDeviceGetFanSpeed(void *dev, unsigned *v)
{
    return health_uint(F_nvmlDeviceGetFanSpeed, dev, M_FAN, v);
}

FAKE_API int nvmlDeviceGetEncoderUtilization(void *dev, unsigned *v, unsigned *period_us)
{
    if (period_us)
        *period_us = 167000;
    return health_uint(F_nvmlDeviceGetEncoderUtilization, dev, M_ENC, v);
}

FAKE_API int nvmlDeviceGetDecoderUtilization(void *dev, unsigned *v, unsigned *period_us)
{
    if (period_us)
        *period_us = 167000;
    return health_uint(F_nvmlDeviceGetDecoderUtilization, dev, M_DEC, v);
}

/* One NVLink (link 0) answers the sequences; every other link is absent
 * (INVALID_ARGUMENT, as for a link the GPU does not have). */
FAKE_API int nvmlDeviceGetNvLinkErrorCounter(void *dev, unsigned link, int counter,
                                             unsigned long long *v)
{
    call c;
    int code = BEGIN(nvmlDeviceGetNvLinkErrorCounter, K_HEALTH, dev, &c);
    if (code == R_SUCCESS && (!v || link > 0 || counter < 0 || counter > 4))
        code = R_INVALID_ARGUMENT;
    unsigned long long x = 0;
    if (code == R_SUCCESS && counter != 1 && counter != 2)
        code = R_NOT_SUPPORTED;
    code = health_take(&c, code, counter == 1 ? M_NVLINK_RECOVERY : M_NVLINK_CRC, &x);
    if (code == R_SUCCESS)
        *v = x;
    return finish(&c, code);
}

/* The memory temperature is field 82 (nvmlDeviceGetFieldValues above asks
 * for it through field_key). */

/* ---------------------------------------------------------------- events */

struct fake_event_data {
    void *device;
    unsigned long long type, data;
    unsigned gpu_instance, compute_instance;
};
_Static_assert(sizeof(struct fake_event_data) == 32, "nvmlEventData_t is 32 bytes");

static char event_set_tag; /* the one event set's handle */

FAKE_API int nvmlEventSetCreate(void **set)
{
    pthread_mutex_lock(&mu);
    st.fn_calls[F_nvmlEventSetCreate]++;
    int code = st.refcount == 0 ? R_UNINITIALIZED : !set ? R_INVALID_ARGUMENT : R_SUCCESS;
    if (code == R_SUCCESS)
        *set = &event_set_tag;
    pthread_mutex_unlock(&mu);
    return code;
}

FAKE_API int nvmlEventSetFree(void *set)
{
    pthread_mutex_lock(&mu);
    st.fn_calls[F_nvmlEventSetFree]++;
    for (unsigned i = 0; i < MAX_DEVICES; i++)
        st.devs[i].registered = false;
    pthread_mutex_unlock(&mu);
    return set == &event_set_tag ? R_SUCCESS : R_INVALID_ARGUMENT;
}

FAKE_API int nvmlDeviceRegisterEvents(void *dev, unsigned long long types, void *set)
{
    call c;
    int code = BEGIN(nvmlDeviceRegisterEvents, K_EVENTS, dev, &c);
    if (code == R_SUCCESS && (set != &event_set_tag || !(types & 0x8ull)))
        code = R_INVALID_ARGUMENT;
    if (code == R_SUCCESS && !c.d->events)
        code = R_NOT_SUPPORTED;
    if (code == R_SUCCESS)
        c.d->registered = true;
    return finish(&c, code);
}

/* An XID that is due (lock held): its device and code, marked sent. */
static bool xid_due(struct fake_event_data *e)
{
    for (unsigned i = 0; i < st.n_devices; i++) {
        device *d = &st.devs[i];
        if (!d->registered || d->xid_sent >= d->n_xid)
            continue;
        const char *file = d->xid_file[d->xid_sent];
        if (file[0] ? access(file, F_OK) != 0 : d->calls[K_UTIL] < d->xid_after[d->xid_sent])
            continue;
        *e = (struct fake_event_data){d, 0x8ull, d->xid_code[d->xid_sent++], 0xffffffffu,
                                      0xffffffffu};
        return true;
    }
    return false;
}

/* Blocks until an XID is due or timeout_ms passed (TIMEOUT, 10). */
FAKE_API int nvmlEventSetWait_v2(void *set, struct fake_event_data *e, unsigned timeout_ms)
{
    pthread_mutex_lock(&mu);
    st.fn_calls[F_nvmlEventSetWait_v2]++;
    pthread_mutex_unlock(&mu);
    if (set != &event_set_tag || !e)
        return R_INVALID_ARGUMENT;
    for (unsigned waited_ms = 0;; waited_ms += 5) {
        pthread_mutex_lock(&mu);
        int code = st.refcount == 0 ? R_UNINITIALIZED : xid_due(e) ? R_SUCCESS : 10;
        pthread_mutex_unlock(&mu);
        if (code != 10 || waited_ms >= timeout_ms)
            return code;
        sleep_us(5000);
    }
}

/* ------------------------------------------------------------------- PCI */

struct fake_pci_info {
    char bus_id_legacy[16];
    unsigned domain, bus, device, device_id, subsystem_id;
    char bus_id[32];
};
_Static_assert(sizeof(struct fake_pci_info) == 68, "nvmlPciInfo_t is 68 bytes");

/* Device D sits on bus D+7 of domain 0 (a GPU's bus id as NVML writes it). */
FAKE_API int nvmlDeviceGetPciInfo_v3(void *dev, struct fake_pci_info *pci)
{
    call c;
    int code = BEGIN(nvmlDeviceGetPciInfo_v3, K_PCI, dev, &c);
    if (code == R_SUCCESS && !pci)
        code = R_INVALID_ARGUMENT;
    if (code == R_SUCCESS) {
        unsigned bus = (unsigned)(c.d - st.devs) + 7;
        memset(pci, 0, sizeof *pci);
        pci->bus = bus;
        pci->device_id = 0x233010deu;
        snprintf(pci->bus_id_legacy, sizeof pci->bus_id_legacy, "0000:%02X:00.0", bus);
        snprintf(pci->bus_id, sizeof pci->bus_id, "00000000:%02X:00.0", bus);
    }
    return finish(&c, code);
}

#endif /* !FAKE_NVML_OLD */
