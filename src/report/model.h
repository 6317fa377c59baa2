/*
 * report/model.h - what the report and the exports both need to know about
 * a session besides its events (report/model.c), so that they read it
 * alike: the job_start identity, the dictionaries, the last
 * capture_capabilities, the shutdown, the session's time span - and the
 * join of kernel rows with their kernel_detail by the has_details rule
 * (docs/gpufl.md).
 *
 * Memory grows with the distinct kernels and names, never with the events.
 * Not exported; nothing here prints or exits.
 */
#ifndef FL_REPORT_MODEL_H
#define FL_REPORT_MODEL_H

#include "../reader/read.h"
#include "fields.h"
#include "maps.h"

#include <jansson.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* A kernel_detail as the report and exports use it. */
typedef struct fl_kdetail {
    uint64_t seq; /* from 1, distinct per detail record read */
    uint32_t corr_id;
    bool have_grid, have_block;
    uint32_t grid[3], block[3];
    int64_t static_shared;   /* bytes; -1: not recorded */
    double occupancy;        /* 0..1; NaN: null */
    const char *limiting;    /* "warps", ...; NULL: null */
    const char *user_scope;  /* "outer|inner", "global"; NULL: null */
    const char *stack_trace; /* CPU stack at launch, "outer|...|inner"; NULL or "": none */
} fl_kdetail;

/* One kernel_event_batch row with its detail resolved by the has_details
 * rule (docs/gpufl.md): a row with has_details = 1 has the kernel_detail
 * of its corr_id, a row with has_details = 0 the detail of the nearest
 * earlier row of its kernel_id that had one. */
typedef struct fl_krow {
    uint64_t start_ns, duration_ns;
    int64_t device_id; /* -1: not recorded (see fl_model.default_device) */
    uint32_t kernel_id, stream_id, corr_id;
    int64_t dyn_shared, num_regs; /* -1: not recorded */
    int64_t external_kind;        /* 0: none */
    uint64_t external_id;
    bool has_details;
    const fl_kdetail *detail; /* NULL: none known; valid during the call */
} fl_krow;

/* One device of job_start's lists, joined by uuid: gpu_static_devices and
 * devices number it as NVML does (what device_metric_batch rows carry),
 * cuda_static_devices as CUDA does (kernel, memcpy and PM rows), and the
 * two differ when CUDA sees fewer devices (CUDA_VISIBLE_DEVICES). */
typedef struct fl_model_device {
    /* The device's number in the report: NVML's; CUDA's ordinal for a
     * device only cuda_static_devices lists. */
    int64_t id;
    int64_t cuda_id;   /* CUDA's ordinal; -1: CUDA did not list it */
    char *name, *uuid; /* NULL: unknown */
    /* Ours: a MIG instance's identity (its gpu_static_devices entry's
     * "mig" object); is_mig false for a whole GPU.  NULL / -1: unknown. */
    bool is_mig;
    char *mig_profile, *mig_parent_uuid, *mig_parent_name;
    int64_t mig_gi, mig_ci, mig_parent_id;
} fl_model_device;

typedef struct fl_model_priv fl_model_priv;

typedef struct fl_model {
    /* job_start (the first one read); NULL / false when none was read. */
    char *app, *session_id, *hostname, *session_kind, *engine;
    int64_t pid;
    bool have_pid;
    uint64_t start_ns; /* job_start's ts_ns */
    bool have_start;
    uint64_t shutdown_ns;
    bool have_shutdown;
    json_t *shutdown;         /* the shutdown record (owned), NULL if none */
    fl_model_device *devices; /* job_start's devices, *_static_devices */
    size_t n_devices;
    /* The device of the rows that do not say theirs (kernel and memcpy
     * rows have no device_id column in the format): the only device
     * job_start lists (its CUDA ordinal, as those rows would say), else
     * -1. */
    int64_t default_device;
    /* The earliest and latest time of any record or row (a row's end
     * included); have_time false when none had a time. */
    uint64_t first_ns, last_ns;
    bool have_time;
    json_t *caps; /* the last capture_capabilities (owned), NULL if none */
    /* Kernel rows whose has_details = 1 found no kernel_detail; details
     * that no row claimed; rows or batches that could not be used. */
    uint64_t details_missing, details_orphan, bad_rows;
    /* Sessions after the first read into this model (a run's, read one
     * after another: report/runs_read.c); its owner ends what is per
     * session when it grows. */
    uint64_t next_sessions;
    bool oom;
    /* The distinct keys of the model's maps and pool, and of its owner's
     * (the report's, the export's), against one cap (maps.h; max from
     * fl_keys_default_max at creation). */
    fl_keys keys;
    fl_model_priv *priv;
} fl_model;

/* fn gets every kernel row, in file order, once its detail is known (a
 * kernel batch written before its details is held until the next record
 * that is not a kernel_detail, or fl_model_finish). */
typedef void (*fl_model_kernel_fn)(void *user, const fl_krow *k);

fl_model *fl_model_create(fl_model_kernel_fn fn, void *user);
void fl_model_destroy(fl_model *m); /* NULL-safe */
/* Feed every record / batch to the model first; it calls fn from these. */
void fl_model_record(fl_model *m, int channel, fl_type t, const char *type, json_t *rec);
void fl_model_batch(fl_model *m, const fl_batch *b);
/* A kernel_detail from the reader's detail callback (fl_model_record
 * takes one as a record the same way). */
void fl_model_detail(fl_model *m, const fl_detail *d);
void fl_model_finish(fl_model *m);
/* A dictionary key's id: true when key is a decimal number and nothing
 * else (the model counts any other key bad; the run's merge leaves it so). */
bool fl_model_dict_key(const char *key, uint64_t *id);
/* Dictionary names; NULL when the id is not in the dictionary. */
const char *fl_model_kernel_name(const fl_model *m, uint64_t id);
const char *fl_model_scope_name(const fl_model *m, uint64_t id);
const char *fl_model_metric_name(const fl_model *m, uint64_t id);
const char *fl_model_function_name(const fl_model *m, uint64_t id);
const char *fl_model_source_file_name(const fl_model *m, uint64_t id);
/* Our stack_dict: a CPU stack's text ("outer|...|inner", interned). */
const char *fl_model_stack_text(const fl_model *m, uint64_t id);
/* Framework ops (external correlation): the op_dict name of a kernel's
 * (external_kind, external_id) when kind is ours (FL_OP_KIND, gpufl.torch's
 * and gpufl_push_external_op's), else NULL; the label a report shows
 * (the name, else "<kind>#<id>", e.g. "custom0#4242" for PyTorch's
 * profiler's ids) into buf, snprintf's count. */
#define FL_OP_KIND 4 /* CUPTI_EXTERNAL_CORRELATION_KIND_CUSTOM1 */
const char *fl_model_op_name(const fl_model *m, int64_t kind, uint64_t id);
int fl_model_op_label(const fl_model *m, int64_t kind, uint64_t id, char *buf, size_t cap);
/* CUPTI's name of an external kind ("custom0", ...), "external" else. */
const char *fl_external_kind_name(int64_t kind);
/* The session's time origin: job_start's ts_ns, else the first time seen. */
uint64_t fl_model_origin(const fl_model *m);
/* The bytes the model's structures hold. */
size_t fl_model_mem_bytes(const fl_model *m);
/* The report's number (fl_model_device.id) of the device CUDA numbers
 * cuda_id; cuda_id itself when job_start did not list it (or < 0). */
int64_t fl_model_gpu_of_cuda(const fl_model *m, int64_t cuda_id);
/* The name job_start gives device id; NULL: none. */
const char *fl_model_device_name(const fl_model *m, int64_t id);
/* Device id's entry; NULL when job_start did not list it. */
const fl_model_device *fl_model_device_of(const fl_model *m, int64_t id);
/* A MIG instance's title, "MIG 1g.10gb (GI 9 CI 0) of GPU 0 <parent's
 * name>" (an unknown part n/a) into buf; false (buf "") for a whole GPU
 * or a device job_start did not list. */
bool fl_model_mig_title(const fl_model *m, int64_t id, char *buf, size_t cap);

#endif /* FL_REPORT_MODEL_H */
