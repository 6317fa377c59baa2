/*
 * abi/trace_abi.h - the Trace engine's contract between the core library
 * and the CUPTI plugin (libgpuprofile_cupti.so, plugin/): device limits,
 * the rows, the sink, the options, the statistics and the plugin's table.
 *
 * No CUDA type appears here: the core builds and runs without a toolkit.
 * Core and plugin are built from one tree; FL_TRACE_ABI changes whenever
 * the meaning of a field here changes, and the table carries the size of
 * every struct the two exchange as the plugin was built (fl_trace_layout):
 * the core refuses a plugin of another ABI or of other sizes, naming the
 * mismatch (abi/plugin.h), so a struct edited without the bump is caught
 * at load, not read with the wrong layout.
 *
 * The plugin decodes CUPTI activity buffers into the neutral rows below
 * (times already on the wall clock, kernel names already interned into
 * kernel_dict ids) and hands them, in arrays of at most FL_TRACE_BATCH
 * rows, to the core's sink on the core's writer thread.  The core formats
 * them as the wire format's batches (wire/batches.c) and writes them.
 *
 * PC sampling (profiling_engine PcSampling) adds one row type,
 * fl_sample_row, aggregated per (device, kernel, function, PC offset,
 * stall reason) by the plugin, the dictionaries its rows index (function,
 * stall-reason name, source file), options and one table entry
 * (collect), after the Trace engine's fields.  Every profiling engine's
 * statistics are one slot of fl_trace_stats.engines (FL_ENGINE_*):
 * status, message and its own counters.
 */
#ifndef GP_ABI_TRACE_ABI_H
#define GP_ABI_TRACE_ABI_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "gpu_profile.h"
#include "layout.h"

#define FL_TRACE_ABI 19u
#define FL_TRACE_PLUGIN_SYMBOL "gpufl_cupti_plugin_v1"
#define FL_TRACE_BATCH 1024 /* rows per sink call (and per batch line) */

/* ------------------------------------------------------------ devices */

/*
 * What theoretical occupancy needs to know about a device, and what
 * job_start's cuda_static_devices lists.  The first group comes from the
 * driver API (cuDeviceGetAttribute); the allocation granularities are not
 * device attributes: the core sets them from the compute capability
 * (recorder/occupancy.h, NVIDIA's occupancy calculator rules).  0 / "" = unknown.
 */
typedef struct fl_gpu_limits {
    uint32_t device_id; /* CUDA device ordinal (CUPTI's deviceId) */
    int cc_major, cc_minor;
    int sm_count;
    int warp_size;
    int max_threads_per_block;
    int max_threads_per_sm;
    int max_blocks_per_sm;
    int regs_per_sm;
    int max_regs_per_block;
    int smem_per_sm_bytes;             /* the most an SM can give to blocks */
    int smem_per_block_bytes;          /* default per-block limit (48 KiB) */
    int smem_per_block_optin_bytes;    /* with cudaFuncAttributeMaxDynamicSharedMemorySize */
    int reserved_smem_per_block_bytes; /* taken by the system per block (1 KiB on sm_80+) */
    int64_t l2_cache_bytes;
    /* Granularities (set by the core: recorder/occupancy.h). */
    int reg_alloc_unit;      /* registers are allocated per warp in units of this (256) */
    int smem_alloc_unit;     /* shared memory per block is rounded up to this (128) */
    int max_regs_per_thread; /* 255 */
    char name[256];
    char uuid[48]; /* "GPU-xxxxxxxx-...", "" if unknown */
} fl_gpu_limits;

/* --------------------------------------------------------------- rows */

/* gpufl scopes open at a kernel's launch, outermost first (kernel_detail's
 * user_scope); deeper ones are cut. */
#define FL_SCOPE_PATH_MAX 8
#define FL_SCOPE_UNKNOWN 0xffu /* scope_depth: not attributed */

typedef struct fl_kernel_row {
    uint64_t t_ns; /* start, wall-clock ns */
    uint64_t duration_ns;
    uint64_t external_id; /* 0: none */
    uint64_t local_mem_total_bytes;
    uint32_t kernel_id; /* kernel_dict */
    uint32_t stream_id, corr_id, device_id, context_id;
    uint32_t grid[3], block[3];
    uint32_t static_smem_bytes, dynamic_smem_bytes;
    uint32_t local_mem_per_thread_bytes;
    uint32_t smem_executed_bytes;
    uint32_t graph_id; /* 0: not a graph node */
    uint16_t num_regs;
    uint8_t external_kind; /* CUPTI_EXTERNAL_CORRELATION_KIND_*; 0: none */
    uint8_t cache_requested, cache_executed;
    uint8_t has_details; /* set by the core's sink */
    /* The launching thread's open scopes (scope_name_dict ids): depth 0 is
     * "global"; FL_SCOPE_UNKNOWN when no launch callback saw it. */
    uint8_t scope_depth;
    uint32_t scope_ids[FL_SCOPE_PATH_MAX];
    /* The launching thread's CPU stack (enable_stack_trace): an id the
     * sink's stacks() announced before this row; 0: none. */
    uint32_t stack_id;
} fl_kernel_row;

/* The row enums (copy_kind, memory_kind, sync_type) are the wire
 * format's codes, written as they are into the records (memcpy_event_batch,
 * memset_event, memory_alloc_event_batch, synchronization_event_batch):
 * a tracer maps its vendor's kinds onto them (0: unknown).  They were
 * taken from CUPTI's numbering, which GPUFlight's records use, so the
 * CUPTI plugin copies its values (plugin/decode.c checks they agree). */
enum { /* copy_kind */
       FL_COPY_UNKNOWN = 0,
       FL_COPY_HTOD = 1,
       FL_COPY_DTOH = 2,
       FL_COPY_HTOA = 3,
       FL_COPY_ATOH = 4,
       FL_COPY_ATOA = 5,
       FL_COPY_ATOD = 6,
       FL_COPY_DTOA = 7,
       FL_COPY_DTOD = 8,
       FL_COPY_HTOH = 9,
       FL_COPY_PTOP = 10
};
enum { /* memory_kind, src_kind, dst_kind */
       FL_MEM_UNKNOWN = 0,
       FL_MEM_PAGEABLE = 1,
       FL_MEM_PINNED = 2,
       FL_MEM_DEVICE = 3,
       FL_MEM_ARRAY = 4,
       FL_MEM_MANAGED = 5,
       FL_MEM_DEVICE_STATIC = 6,
       FL_MEM_MANAGED_STATIC = 7
};
enum { /* sync_type */
       FL_SYNC_UNKNOWN = 0,
       FL_SYNC_EVENT = 1,             /* an event's synchronize */
       FL_SYNC_STREAM_WAIT_EVENT = 2, /* a stream waits on an event */
       FL_SYNC_STREAM = 3,            /* a stream's synchronize */
       FL_SYNC_CONTEXT = 4
}; /* a context's (device's) synchronize */

typedef struct fl_memcpy_row {
    uint64_t t_ns, duration_ns, bytes;
    uint32_t stream_id, corr_id, device_id, context_id;
    uint32_t src_device_id, dst_device_id; /* peer-to-peer; else = device_id */
    uint8_t copy_kind;                     /* FL_COPY_* */
    uint8_t src_kind, dst_kind;            /* FL_MEM_* */
    uint8_t peer;                          /* from a MEMCPY2 (peer-to-peer) record */
} fl_memcpy_row;

typedef struct fl_memset_row {
    uint64_t t_ns, duration_ns, bytes;
    uint32_t stream_id, corr_id, device_id, context_id;
    uint32_t value;
    uint8_t memory_kind; /* FL_MEM_* */
} fl_memset_row;

typedef struct fl_sync_row {
    uint64_t t_ns, duration_ns;
    uint32_t sync_type; /* FL_SYNC_* */
    uint32_t stream_id; /* CUPTI's value (0xffffffff: not a stream sync) */
    uint32_t event_id, context_id, corr_id;
    /* The CPU stack of the thread that called the synchronising API
     * (enable_stack_trace; 0: none), an id the sink's stacks announced;
     * FL_TRACE_ABI 5 (the struct's size did not change). */
    uint32_t stack_id;
} fl_sync_row;

typedef struct fl_alloc_row {
    uint64_t t_ns, duration_ns; /* duration 0: CUPTI gives the operation one time stamp */
    uint64_t address, bytes;
    uint32_t device_id, stream_id, corr_id;
    uint8_t memory_op;   /* 1 alloc, 2 free */
    uint8_t memory_kind; /* FL_MEM_* */
} fl_alloc_row;

typedef struct fl_graph_row {
    uint64_t t_ns, duration_ns;
    uint32_t graph_id, stream_id, corr_id, device_id;
    /* FL_TRACE_ABI 16: the executable graph's handle from the launch
     * callback (GPUFlight's graph_exec_key); 0: not known. */
    uint64_t exec_key;
} fl_graph_row;

/* FL_TRACE_ABI 19: one node of an executable graph, as it was defined
 * (graph_node_definition), handed over once, after its graph was
 * instantiated.  node_id is CUPTI's id of the node as built (the one its
 * source graph holds), node_index its place in that graph's creation
 * order; stack_id the CPU stack that created it (stream capture or an
 * explicit cudaGraphAdd*Node; enable_stack_trace), an id the sink's
 * stacks announced, 0: none; kernel_name the name CUPTI's launch callback
 * gave a kernel node made by a captured launch (valid during the call),
 * NULL: not a kernel node, or not known (a node added with
 * cudaGraphAddKernelNode: naming its function is a driver call, which no
 * CUPTI callback may make). */
typedef struct fl_graph_node_row {
    uint64_t exec_key; /* the executable graph's handle (graph_exec_key) */
    uint64_t node_id;
    uint32_t graph_id; /* CUPTI's id of the graph the node was built in */
    uint32_t node_index;
    uint32_t node_type; /* CUgraphNodeType (0 kernel, 1 memcpy, 2 memset, ...) */
    uint32_t dependency_count;
    uint32_t stack_id;
    const char *kernel_name;
} fl_graph_node_row;

/* An NVTX range's begin (name set) or end; an nvtxMark is a begin and an
 * end at the same time. */
typedef struct fl_marker_row {
    uint64_t t_ns;
    uint64_t marker_id; /* CUPTI's id, shared by a range's start and end */
    const char *name;   /* begin only; valid during the sink call */
    uint32_t depth;     /* open NVTX ranges on that thread before this one */
    uint8_t is_end;
    const char *domain; /* begin only, valid during the sink call; NULL: the default domain */
} fl_marker_row;

/* PC sampling: the samples of one (device, kernel launch, function, PC
 * offset, stall reason), summed over a collection (profile_sample_batch,
 * sample_kind 0). */
typedef struct fl_sample_row {
    uint64_t t_ns;           /* the collection's wall-clock time */
    uint64_t pc_offset;      /* from the function's start, bytes */
    uint64_t samples;        /* metric_value */
    uint32_t corr_id;        /* the kernel launch; 0: not known (continuous mode) */
    uint32_t device_id;      /* CUDA device ordinal */
    uint32_t function_id;    /* function_dict ("mangled@source file") */
    uint32_t metric_id;      /* metric_dict: the stall reason's name; 0: none (activity API) */
    uint32_t stall_reason;   /* the device's stall index (PC Sampling API), or
                                CUpti_ActivityPCSamplingStallReason (activity API) */
    uint32_t source_file_id; /* source_file_dict; 0: no line information */
    uint32_t source_line;    /* 0: unknown */
    uint32_t scope_name_id;  /* innermost gpufl scope open at the launch; 0: none known */
    /* FL_TRACE_ABI 8: FL_SAMPLE_KIND_* (profile_sample_batch's sample_kind).
     * A SASS-metric row (1) is one (device, function, PC offset, metric):
     * samples is the metric's value summed over the launches read in a
     * collection, metric_id its metric_dict name, corr_id 0 (CUPTI gives
     * no launch), stall_reason unused (written 0, as GPUFlight does). */
    uint32_t sample_kind;
} fl_sample_row;

/* One instruction of a function's disassembly (fl_trace_sink.disassembly):
 * its offset from the function's start and the disassembler's text
 * ("LDG.E R2, desc[UR4][R2.64]"), valid during the sink call. */
typedef struct fl_sass_entry {
    uint32_t pc_offset;
    const char *sass;
} fl_sass_entry;
/* PM sampling (profiling_engine PmSampling, FL_TRACE_ABI 7): one metric's
 * value in one sample of a device's performance monitors (pm_sample_batch). */
typedef struct fl_pm_row {
    uint64_t t_ns;          /* the sample's midpoint, wall-clock ns */
    double value;           /* finite: a value CUPTI gives as NaN or inf is left out */
    uint32_t sample_index;  /* the device's sample count since its sampling began */
    uint32_t device_id;     /* CUDA device ordinal */
    uint32_t metric_id;     /* metric_dict (sample_names FL_SAMPLE_DICT_METRIC) */
    uint32_t scope_name_id; /* 0: none known */
} fl_pm_row;

/* A device's PM sampling configuration (pm_sampling_config), once per
 * device, before its first row. */
typedef struct fl_pm_config {
    uint64_t t_ns;
    uint32_t device_id;
    uint32_t interval_us;       /* between samples, GPU time */
    uint32_t max_samples;       /* the counter-data image's capacity per decode */
    const char *preset;         /* "default" (the engine's set) or "custom" (pm_metrics) */
    const char *const *metrics; /* valid during the call */
    size_t n_metrics;
} fl_pm_config;

enum { FL_SAMPLE_KIND_PC = 0, FL_SAMPLE_KIND_SASS = 1 };

/* The range profiler (profiling_engine RangeProfiler): the values of one
 * range (fl_trace_sink.perf_ranges).  A scope range is one outermost gpufl
 * scope (perf_metric_event); a kernel range one kernel launch inside such a
 * scope, replayed by CUPTI as often as the metric set needs passes
 * (kernel_perf_metric_event). */
enum { FL_PERF_RANGE_SCOPE = 0, FL_PERF_RANGE_KERNEL = 1 };
/* The metrics GPUFlight's records name, in kernel_perf_metric_event's order
 * (fl_perf_row.known; NaN: not collected). */
enum {
    FL_PV_SM_THROUGHPUT = 0, /* sm__throughput.avg.pct_of_peak_sustained_elapsed */
    FL_PV_L1_HIT,            /* l1tex__t_sector_hit_rate.pct */
    FL_PV_L2_HIT,            /* lts__t_sector_hit_rate.pct */
    FL_PV_DRAM_READ,         /* dram__bytes_read.sum (dram__bytes_op_read.sum) */
    FL_PV_DRAM_WRITE,        /* dram__bytes_write.sum (dram__bytes_op_write.sum) */
    FL_PV_TENSOR,            /* sm__pipe_tensor_cycles_active.avg.pct_of_peak_sustained_active */
    FL_PV_OCCUPANCY,         /* sm__warps_active.avg.pct_of_peak_sustained_active */
    FL_PV_SHARED_LD_CONFLICTS,
    FL_PV_SHARED_ST_CONFLICTS,
    FL_PV_SHARED_CONFLICTS,
    FL_PV_SHARED_WAVEFRONTS,
    FL_PV_COUNT
};
typedef struct fl_perf_row {
    uint64_t start_ns, end_ns; /* wall clock of the range's push and pop (the window's for
                                  kernel ranges) */
    uint32_t kind;             /* FL_PERF_RANGE_* */
    uint32_t device_id;
    uint32_t range_index;    /* CUPTI's index in the counter data (kernel ranges) */
    uint32_t launch_ordinal; /* kernel ranges: 1, 2, ... within the session */
    uint32_t scope_depth;
    const char *name;       /* the scope's name, or the kernel's (CUPTI's range name) */
    const char *user_scope; /* "outer|...|inner" of the scope; "" none */
    double known[FL_PV_COUNT];
    /* Every metric evaluated, by CUPTI's name (NaN: no value). */
    const char *const *metric_names;
    const double *metric_values;
    size_t n_metrics;
    /* FL_TRACE_ABI 12.  Kernel ranges: the demangled name of the launch
     * the range measured (CUPTI names kernel ranges "0", "1", ...); NULL:
     * not known (the record's kernel_name is then the range's name). */
    const char *kernel_name;
} fl_perf_row;

/* The dictionaries sample rows index (fl_trace_sink.sample_names). */
enum { FL_SAMPLE_DICT_FUNCTION = 0, FL_SAMPLE_DICT_METRIC = 1, FL_SAMPLE_DICT_SOURCE_FILE = 2 };

/* The core's side: called on the core's writer thread from drain(), rows
 * in arrays of at most FL_TRACE_BATCH (the sink may modify them). */
typedef struct fl_trace_sink {
    void *user;
    /* New kernel_dict entries (demangled names), before any row using them. */
    void (*kernel_names)(void *user, const uint32_t *ids, const char *const *names, size_t n);
    /* A device's limits, before the first kernel row of that device. */
    void (*device)(void *user, const fl_gpu_limits *lim);
    void (*kernels)(void *user, fl_kernel_row *rows, size_t n);
    void (*memcpys)(void *user, fl_memcpy_row *rows, size_t n);
    void (*memsets)(void *user, fl_memset_row *rows, size_t n);
    void (*syncs)(void *user, fl_sync_row *rows, size_t n);
    void (*allocs)(void *user, fl_alloc_row *rows, size_t n);
    void (*graphs)(void *user, fl_graph_row *rows, size_t n);
    void (*markers)(void *user, fl_marker_row *rows, size_t n);
    /* New CPU stacks (enable_stack_trace), before any row using them: id ->
     * "outer|...|inner", each frame "function (file:line)", "function" or
     * "module+0xoffset" (plugin/stacks.h); texts valid during the call. */
    void (*stacks)(void *user, const uint32_t *ids, const char *const *texts, size_t n);
    /* PC sampling: new entries of dictionary `dict` (FL_SAMPLE_DICT_*),
     * before any row using them; then the rows. */
    void (*sample_names)(void *user, int dict, const uint32_t *ids, const char *const *names,
                         size_t n);
    void (*samples)(void *user, fl_sample_row *rows, size_t n);
    /* The disassembly of one sampled function (fl_trace_options.disassembler)
     * of the cubin whose CRC is cubin_crc: function_id is its function_dict
     * entry (already announced), name its mangled name. */
    void (*disassembly)(void *user, uint64_t cubin_crc, uint32_t function_id, const char *name,
                        const fl_sass_entry *entries, size_t n);
    /* PM sampling: a device's configuration, before its rows; the rows'
     * metric names come through sample_names (FL_SAMPLE_DICT_METRIC). */
    void (*pm_config)(void *user, const fl_pm_config *c);
    void (*pm_samples)(void *user, fl_pm_row *rows, size_t n);
    /* SASS metrics (FL_TRACE_ABI 8): the metrics configured on a device and
     * those CUPTI refused or that were left out (sass_config), once per
     * device before its first row; names valid during the call.  NULL-safe
     * to leave out. */
    void (*sass_config)(void *user, uint32_t device_id, const char *const *configured,
                        size_t n_configured, const char *const *skipped, size_t n_skipped);
    /* The range profiler: ranges evaluated on the writer thread (strings
     * valid during the call). */
    void (*perf_ranges)(void *user, const fl_perf_row *rows, size_t n);
    /* FL_TRACE_ABI 19: graph nodes defined (graph tracking on), after the
     * stacks they name; NULL-safe to leave out. */
    void (*graph_nodes)(void *user, fl_graph_node_row *rows, size_t n);
} fl_trace_sink;

/* ------------------------------------------------------------ plugin */

typedef struct fl_trace_options {
    bool synchronization;      /* CUPTI_ACTIVITY_KIND_SYNCHRONIZATION */
    bool memory;               /* MEMORY2 (alloc/free) */
    bool graphs;               /* GRAPH_TRACE: one record per graph launch */
    bool external_correlation; /* EXTERNAL_CORRELATION */
    bool nvtx;                 /* MARKER (NVTX ranges) */
    size_t buffer_bytes;       /* per CUPTI buffer (0: default 8 MiB) */
    uint32_t max_buffers;      /* the pool's bound (0: default 16) */
    void (*kick)(void);        /* wakes the core's writer: buffers wait */
    /* The calling thread's open gpufl scopes (name ids, outermost first,
     * at most cap); called on the application's thread at every kernel
     * launch, so it must be cheap and lock-free.  NULL: no attribution. */
    size_t (*scope_path)(uint32_t *ids, size_t cap);
    /* CPU stacks at every kernel launch (fl_kernel_row.stack_id), at most
     * max_stacks distinct ones (0: the plugin's default, 4096). */
    bool stack_trace;
    uint32_t max_stacks;
    /* PC sampling (profiling_engine PcSampling): off unless pc_sampling. */
    bool pc_sampling;
    bool source_collection;     /* PC offsets to file:line through the loaded cubins */
    uint8_t pc_collection_mode; /* FL_PC_MODE_* */
    uint32_t pc_period_log2;    /* 2^n cycles between samples (5..31); 0: FL_PC_PERIOD_DEFAULT */
    size_t pc_scratch_bytes;    /* CUPTI's host buffer per context; 0: default 16 MiB */
    size_t pc_hw_buffer_bytes;  /* the device buffer per context; 0: default 256 MiB */
    /* The disassembler (nvdisasm) as an absolute path the core checked, run
     * on the cubins of sampled functions (sink.disassembly); NULL: none. */
    const char *disassembler;
    /* PM sampling (profiling_engine PmSampling): off unless pm_sampling. */
    bool pm_sampling;
    const char *pm_metrics;  /* comma-separated; NULL or "": the engine's default set */
    uint32_t pm_interval_us; /* 0: FL_PM_INTERVAL_DEFAULT_US */
    uint32_t pm_max_samples; /* per decode; 0: FL_PM_MAX_SAMPLES_DEFAULT */
    int64_t clock_offset_ns; /* set by the plugin: wall ns = CUPTI ns + offset */
    /* SASS metrics (profiling_engine SassMetrics, FL_TRACE_ABI 8): off
     * unless sass_metrics; per-instruction counters of every kernel run
     * while enabled, read at the collection points (as PC sampling's);
     * source lines with source_collection. */
    bool sass_metrics;
    bool sass_eager_patching; /* patch every function at enable (default: lazily, at first run) */
    /* The range profiler (profiling_engine RangeProfiler): off unless
     * range_profiler.  perf_metrics: CUPTI metric names separated by commas
     * (NULL or "": the default set, plugin/rangeprof.c); perf_per_kernel:
     * one range per kernel launch (kernel replay: any pass count) instead
     * of one per outermost scope (user replay: one pass). */
    bool range_profiler;
    bool perf_per_kernel;
    const char *perf_metrics;
    /* FL_TRACE_ABI 10: SASS metrics count every kernel (enabled per context
     * from its creation) instead of only those run inside outermost scopes
     * (the default: enabled at the scope's begin, the device synchronised,
     * read and disabled at its end, through range_begin/range_end). */
    bool sass_all_kernels;
    /* FL_TRACE_ABI 15: capture windows (docs/concepts.md).  The plugin
     * reports the edges a window may open or close at on the application's
     * thread, through capture_edge (NULL: none asked): with
     * capture_profiler_api each cuProfilerStart (at its exit) and
     * cuProfilerStop (at its entry), corr the call's own correlation id;
     * with capture_nvtx each NVTX push / pop and range start / end (name
     * the range's message, NULL for pop and end; id the range id of start
     * / end), corr the highest correlation id the plugin's callbacks have
     * seen.  The core decides what opens and closes. */
    bool capture_profiler_api;
    bool capture_nvtx;
    void (*capture_edge)(int edge, const char *name, uint64_t id, uint32_t corr);
} fl_trace_options;

/* capture_edge's edges. */
enum {
    FL_EDGE_PROFILER_START = 1,
    FL_EDGE_PROFILER_STOP = 2,
    FL_EDGE_NVTX_PUSH = 3,
    FL_EDGE_NVTX_POP = 4,
    FL_EDGE_NVTX_START = 5,
    FL_EDGE_NVTX_END = 6
};

#define FL_PM_INTERVAL_DEFAULT_US 100u
#define FL_PM_INTERVAL_MIN_US 1u
#define FL_PM_INTERVAL_MAX_US 1000000u
#define FL_PM_MAX_SAMPLES_DEFAULT 4096u
#define FL_PM_MAX_METRICS 32u

/* 2^18 cycles between samples: about 0.15 ms at 1.75 GHz */
#define FL_PC_PERIOD_DEFAULT 18u
#define FL_PC_PERIOD_MIN 5u
#define FL_PC_PERIOD_MAX 31u
enum {
    FL_PC_MODE_KERNEL = 0,    /* kernels serialised: each sample knows its launch (corr_id) */
    FL_PC_MODE_CONTINUOUS = 1 /* kernels run concurrently; corr_id 0 */
};

/* How an engine went (fl_engine_stats.status). */
enum {
    FL_PC_OFF = 0,           /* not requested */
    FL_PC_ACTIVE = 1,        /* enabled (collected, or waiting for a context) */
    FL_PC_NO_PERMISSION = 2, /* CUPTI_ERROR_INSUFFICIENT_PRIVILEGES */
    FL_PC_NOT_SUPPORTED = 3, /* device, driver or CUPTI without PC sampling */
    FL_PC_VIRTUALIZED = 4,   /* a virtual GPU (vGPU) refuses profiling */
    FL_PC_NO_DRIVER = 5,     /* CUPTI_ERROR_UNKNOWN (999) and the like: no working driver */
    FL_PC_FAILED = 6,        /* any other CUPTI error */
    FL_PC_CONFLICT = 7,      /* another profiling session (Profiler API) holds the device */
    FL_PC_MIG = 8            /* a MIG instance (PM sampling: the whole GPU only) */
};
/* How the range profiler went (its fl_engine_stats.status): FL_PC_*'s
 * codes, and: */
enum {
    FL_RP_LATE_INIT = 8,  /* refused on a context that had run CUDA work before gpufl_init */
    FL_RP_NO_METRICS = 9, /* no metric of the set can be collected on this chip */
    FL_RP_NO_CONTEXT = 10 /* no CUDA context was current at any outermost scope */
};
enum { FL_PC_METHOD_NONE = 0, FL_PC_METHOD_SAMPLING_API = 1, FL_PC_METHOD_ACTIVITY = 2 };

/* Activity kinds start() could not enable (fl_trace_stats.unavailable). */
enum {
    FL_FEAT_MEMCPY = 1u << 0,
    FL_FEAT_MEMSET = 1u << 1,
    FL_FEAT_SYNC = 1u << 2,
    FL_FEAT_MEMORY = 1u << 3,
    FL_FEAT_GRAPHS = 1u << 4,
    FL_FEAT_EXTERNAL = 1u << 5,
    FL_FEAT_NVTX = 1u << 6,
    FL_FEAT_OVERHEAD = 1u << 7,
    FL_FEAT_SCOPES = 1u << 8,  /* launch callbacks for user_scope */
    FL_FEAT_STACKS = 1u << 16, /* CPU stacks: why in fl_trace_stats.stacks_msg */
};

/* The engines' slots of fl_trace_stats.engines (FL_TRACE_ABI 13): a
 * slot's index is its engine; the table's order (plugin/engines/table.c)
 * is another matter. */
enum {
    FL_ENGINE_PC = 0,   /* profiling_engine PcSampling (and Deep's PC half) */
    FL_ENGINE_PM = 1,   /* PmSampling */
    FL_ENGINE_SASS = 2, /* SassMetrics (and Deep's SASS half) */
    FL_ENGINE_RP = 3,   /* RangeProfiler */
    FL_ENGINE_SLOTS
};

/* PC sampling's counts (FL_ENGINE_PC). */
typedef struct fl_pc_counters {
    uint32_t method;           /* FL_PC_METHOD_* */
    uint32_t period_log2;      /* as configured */
    uint32_t stall_reasons;    /* the device's count (the last context's) */
    uint32_t contexts;         /* contexts sampled */
    uint64_t samples;          /* samples in rows (sum of metric_value) */
    uint64_t rows;             /* rows handed to the sink */
    uint64_t collections;      /* reads of CUPTI's buffers (GetData, activity buffers) */
    uint64_t total_samples;    /* CUPTI's totalSamples (all kernels, all reasons) */
    uint64_t dropped_samples;  /* CUPTI's droppedSamples: the hardware buffer overflowed */
    uint64_t non_user_samples; /* in kernels CUPTI gives no PC records for */
    uint64_t hw_buffer_full;   /* reads that found the hardware buffer full */
    uint64_t lost_samples;     /* ours: samples not kept (a table full without a sink) */
    uint64_t no_line_samples;  /* samples whose PC maps to no source line */
} fl_pc_counters;

/* PM sampling's counts (FL_ENGINE_PM). */
typedef struct fl_pm_counters {
    uint32_t interval_us; /* as configured */
    uint32_t metrics;     /* metrics per sample */
    uint32_t devices;     /* devices sampling */
    uint64_t samples;     /* samples decoded */
    uint64_t rows;        /* rows handed to the sink */
    uint64_t decodes;     /* cuptiPmSamplingDecodeData calls that succeeded */
    uint64_t overflows;   /* decodes that found the hardware buffer overflowed */
    uint64_t bad_values;  /* values left out: not finite, or evaluation failed */
    char preset[32];      /* "default" or "custom" */
} fl_pm_counters;

/* SASS metrics' counts (FL_ENGINE_SASS). */
typedef struct fl_sass_counters {
    uint32_t metrics;         /* metrics configured (the last device's) */
    uint32_t metrics_skipped; /* refused by cuptiSassMetricsGetProperties */
    uint32_t contexts;        /* contexts enabled */
    uint64_t rows;            /* rows handed to the sink */
    uint64_t records;         /* CUPTI's patched-instruction records read */
    uint64_t collections;     /* FlushData calls that returned records */
    uint64_t dropped_records; /* cuptiSassMetricsDisable's numOfDroppedRecords */
    uint64_t lost_values;     /* ours: values not kept (table full without a sink) */
    uint64_t no_line_values;  /* (record, instance) values without a source line */
} fl_sass_counters;

/* The range profiler's counts (FL_ENGINE_RP). */
typedef struct fl_rp_counters {
    uint32_t per_kernel; /* 1: kernel ranges (kernel replay) */
    uint32_t passes;     /* passes the scheduled set needs */
    uint32_t metrics;    /* metrics scheduled */
    uint64_t windows;    /* ranges (scope) or windows (kernel) collected */
    uint64_t ranges;     /* rows handed to the sink */
    uint64_t dropped;    /* ranges lost: CUPTI's numOfRangeDropped, our queue full */
    uint64_t skipped;    /* outermost scopes not profiled (another open, another context) */
    uint64_t incomplete; /* windows whose passes were not all submitted */
    uint64_t max_ranges; /* kernel ranges a window holds (its image) */
    char chip[32];       /* the device's chip ("GH100") */
    char scheduled[512]; /* the metrics scheduled, comma separated */
    char left_out[512];  /* metrics of the set not scheduled, each with why */
} fl_rp_counters;

/* One engine's slot: what every engine says (status, and why it is not
 * active with the fix), then its own counts (the member its slot names). */
typedef struct fl_engine_stats {
    uint32_t engine;   /* FL_ENGINE_*: the slot's own index, set by the plugin */
    uint32_t status;   /* FL_PC_* (the range profiler adds FL_RP_*); FL_PC_OFF: not requested */
    char message[512]; /* why the engine is not active, and the fix ("" when it is) */
    union {
        fl_pc_counters pc;
        fl_pm_counters pm;
        fl_sass_counters sass;
        fl_rp_counters rp;
    } counters;
} fl_engine_stats;

/* What the plugin counted; all since start(): the activity trace's and
 * the shared services' counts, then one slot per engine. */
typedef struct fl_trace_stats {
    uint64_t kernels, memcpys, memsets, syncs, allocs, graphs, markers, external;
    /* FL_TRACE_ABI 19: graph node definitions handed to the sink, and
     * those not kept (the plugin's node table or queue full). */
    uint64_t graph_nodes, graph_nodes_lost;
    char graph_nodes_msg[192]; /* why no graph_node_definition is written ("": they are) */
    uint64_t other_records;    /* kinds CUPTI knows that are not decoded (skipped) */
    uint64_t cupti_dropped;    /* cuptiActivityGetNumDroppedRecords */
    uint64_t buffers_refused;  /* requests refused: every pool buffer in use */
    uint64_t bad_buffers;      /* buffers that ended in a record CUPTI could not parse */
    uint64_t buffers;          /* buffers completed */
    uint64_t overhead_records;
    uint64_t overhead_ns;      /* sum of CUPTI overhead records' durations */
    uint64_t pool_bytes;       /* buffer memory allocated (high-water) */
    uint32_t unavailable;      /* FL_FEAT_* bits: requested, refused by CUPTI */
    char unavailable_msg[256]; /* CUPTI's message for the first of them */
    /* CPU stacks (enable_stack_trace). */
    uint64_t stacks;          /* distinct stacks announced to the sink */
    uint64_t stack_captures;  /* launches and synchronizations given a stack */
    uint64_t stacks_overflow; /* launches left without one: max_stacks reached */
    uint32_t stacks_max;
    char stacks_msg[256]; /* why stacks are not collected (FL_FEAT_STACKS) */
    /* FL_TRACE_ABI 17: Python frames (plugin/pystack.h). */
    uint64_t stack_python;   /* of stack_captures, those with Python frames */
    char stacks_python[160]; /* the CPython found, or why its frames are not read; "": none */
    /* The cubin store (plugin/common/cubins.h), for PC sampling's and SASS
     * metrics' source lines. */
    uint32_t cubins;          /* cubins kept for source correlation */
    uint32_t cubins_no_lines; /* of which without line information (no -lineinfo) */
    uint32_t cubins_over;     /* not kept: over the memory bound */
    uint64_t cubin_bytes;     /* kept, bytes */
    /* The disassembler's runs (options.disassembler). */
    uint32_t disasm_runs;      /* runs, one per cubin and collection with new functions */
    uint32_t disasm_failed;    /* runs that failed (exit status, time limit, output) */
    uint32_t disasm_functions; /* functions handed to sink.disassembly */
    uint32_t disasm_skipped;   /* sampled functions left without: bound, no cubin, failure */
    char disasm_msg[512];      /* the first failure, and the fix */
    fl_engine_stats engines[FL_ENGINE_SLOTS];
} fl_trace_stats;

/* The sizes of the structs of this header, as the side that was compiled
 * saw them: X(field, struct). */
#define FL_TRACE_LAYOUT_FIELDS(X)                                                                  \
    X(plugin_table, fl_trace_plugin)                                                               \
    X(options, fl_trace_options)                                                                   \
    X(sink, fl_trace_sink)                                                                         \
    X(stats, fl_trace_stats)                                                                       \
    X(engine_stats, fl_engine_stats)                                                               \
    X(gpu_limits, fl_gpu_limits)                                                                   \
    X(kernel_row, fl_kernel_row)                                                                   \
    X(memcpy_row, fl_memcpy_row)                                                                   \
    X(memset_row, fl_memset_row)                                                                   \
    X(sync_row, fl_sync_row)                                                                       \
    X(alloc_row, fl_alloc_row)                                                                     \
    X(graph_row, fl_graph_row)                                                                     \
    X(graph_node_row, fl_graph_node_row)                                                           \
    X(marker_row, fl_marker_row)                                                                   \
    X(sample_row, fl_sample_row)                                                                   \
    X(sass_entry, fl_sass_entry)                                                                   \
    X(pm_row, fl_pm_row)                                                                           \
    X(pm_config, fl_pm_config)                                                                     \
    X(perf_row, fl_perf_row)                                                                       \
    X(error, gp_error)

typedef struct fl_trace_layout {
    FL_TRACE_LAYOUT_FIELDS(GP_LAYOUT_MEMBER)
} fl_trace_layout;

typedef struct fl_trace_plugin {
    uint32_t abi;                  /* FL_TRACE_ABI */
    const fl_trace_layout *layout; /* FL_TRACE_LAYOUT as the plugin was built */
    const char *version;
    /* Subscribes and enables the activity kinds.  Returns GP_OK, or a
     * gp_status with err's message naming CUPTI's error (GP_ERR_CUPTI),
     * a session already traced (GP_ERR_STATE) or memory (GP_ERR_NO_MEMORY);
     * then nothing stays enabled.  err may be NULL (FL_TRACE_ABI 14). */
    gp_status (*start)(const fl_trace_options *o, gp_error *err);
    /* Devices the driver API reports now (not when injected: start runs
     * inside cuInit); fills at most cap, returns the count. */
    size_t (*devices)(fl_gpu_limits *out, size_t cap);
    /* Writer thread: decodes every completed buffer into sink. */
    void (*drain)(const fl_trace_sink *sink);
    /* Writer thread, about once a second: hands over the buffers whose
     * records are all complete, full or not (cuptiActivityFlushAll(0)), so
     * a quiet program's kernels reach the disk without waiting for a full
     * buffer.  CUPTI's own periodic flush returns full buffers only. */
    void (*flush)(void);
    /* cuptiActivityFlushAll(CUPTI_ACTIVITY_FLAG_FLUSH_FORCED) then disables
     * everything; call drain() once more afterwards. */
    void (*stop)(void);
    void (*stats)(fl_trace_stats *out);
    /* After the last drain() and stats(): frees the buffers and the
     * decoder (start() may be called again later). */
    void (*release)(void);
    /* Any thread: a PC-sampling collection point (a scope window ended).
     * The next drain() stops sampling, reads CUPTI's buffers into sample
     * rows and arms it again; nothing here blocks.  NULL-safe to skip. */
    void (*collect)(void);
    /* The application's thread, at an outermost gpufl scope's begin and end
     * (NULL-safe to skip; installed only for RangeProfiler and for SASS
     * metrics without sass_all_kernels, FL_TRACE_ABI 10): the plugin hands
     * them to each engine that wants scope boundaries - the range
     * profiler's range (or kernel window), SASS metrics' enable and
     * synchronise/read/disable. */
    void (*range_begin)(const char *name);
    void (*range_end)(void);
    /* The application's thread, around a framework op (gpufl_push_external_op,
     * FL_TRACE_ABI 18): cuptiActivityPushExternalCorrelationId(kind, id) /
     * PopExternalCorrelationId(kind), so the launches between carry id in
     * an EXTERNAL_CORRELATION record.  GP_OK, or GP_ERR_CUPTI; no driver
     * call, nothing that blocks.  NULL-safe to skip. */
    gp_status (*push_external)(uint8_t kind, uint64_t id);
    gp_status (*pop_external)(uint8_t kind);
} fl_trace_plugin;

/* This side's fl_trace_layout: the plugin points its table's layout at
 * one of these; the core compares the plugin's with its own. */
#define FL_TRACE_LAYOUT                                                                            \
    {                                                                                              \
        FL_TRACE_LAYOUT_FIELDS(GP_LAYOUT_SIZE)                                                     \
    }

#endif /* GP_ABI_TRACE_ABI_H */
