/*
 * gpufl.h - the flight recorder (the seed's GPUFlight client API, in C).
 *
 * An application calls gpufl_init() once, annotates its work with scopes
 * and system phases, and calls gpufl_shutdown() at the end.  The recorder
 * writes a session of NDJSON logs in the GPUFlight wire format v1
 * (<log_path>/<session_id>/{device,scope,system}.log) that GPUFlight's
 * analyzer, agent and backend read unchanged.
 *
 * Options come, field by field, from (highest first): a value set in code
 * (different from the default), a GPUFL_* environment variable, the JSON
 * config_file, the built-in default.  GPUFL_DISABLED wins over all of them.
 * See docs/gpufl.md.
 *
 * Errors are values: gpufl_init() returns a gpufl_status and fills an
 * optional gpufl_error.  Scopes and system phases never fail loudly: before
 * init, after shutdown or with the kill switch on they do nothing.  The
 * library prints nothing unless enable_debug_output is set (lines prefixed
 * "[gpufl]" on stderr, or to log_fn) - except the one deprecation line that
 * remote_upload = true earns at init, sent the same way.
 */
#ifndef GPUFL_H
#define GPUFL_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

#if defined(_WIN32)
#define GPUFL_API
#elif defined(__GNUC__) || defined(__clang__)
#define GPUFL_API __attribute__((visibility("default")))
#else
#define GPUFL_API
#endif

#define GPUFL_VERSION_MAJOR 0
#define GPUFL_VERSION_MINOR 1
#define GPUFL_VERSION_PATCH 0
#define GPUFL_VERSION_STRING "0.1.0"
#define GPUFL_VERSION_NUMBER                                                                       \
    (GPUFL_VERSION_MAJOR * 10000 + GPUFL_VERSION_MINOR * 100 + GPUFL_VERSION_PATCH)
/* The GPUFlight wire format the session logs are written in. */
#define GPUFL_WIRE_VERSION 1

/* Runtime version of the library actually loaded, "MAJOR.MINOR.PATCH". */
GPUFL_API const char *gpufl_version(void);

/* ------------------------------------------------------------------ errors */

typedef enum gpufl_status {
    GPUFL_OK = 0,
    GPUFL_DISABLED = 1,           /* the kill switch is on: nothing was started */
    GPUFL_ERR_INVALID_ARG = 2,    /* an option value out of range */
    GPUFL_ERR_ENV = 3,            /* a GPUFL_* environment variable has a bad value */
    GPUFL_ERR_CONFIG = 4,         /* config_file unreadable, malformed or invalid */
    GPUFL_ERR_STATE = 5,          /* init while a session is active */
    GPUFL_ERR_IO = 6,             /* the session directory or a log file */
    GPUFL_ERR_NO_MEMORY = 7,      /* an allocation failed */
    GPUFL_ERR_THREAD = 8,         /* a thread could not be created */
    GPUFL_ERR_BACKEND = 9,        /* backend = Nvidia and no NVIDIA backend answered */
    GPUFL_ERR_NOT_SUPPORTED = 10, /* libcurl absent (upload) */
    GPUFL_ERR_UPLOAD = 11 /* gpufl_upload_logs: the backend refused or could not be reached */
} gpufl_status;

#define GPUFL_ERROR_MESSAGE_MAX 1024

typedef struct gpufl_error {
    gpufl_status status;
    char message[GPUFL_ERROR_MESSAGE_MAX];
} gpufl_error;

/* A short static description of a status. */
GPUFL_API const char *gpufl_strerror(gpufl_status status);

/* ----------------------------------------------------------------- options */

typedef enum gpufl_backend_kind {
    GPUFL_BACKEND_AUTO = 0, /* NVIDIA (NVML, else nvidia-smi) if present, else none */
    GPUFL_BACKEND_NVIDIA = 1,
    GPUFL_BACKEND_AMD = 2, /* ROCm SMI; strict: no AMD GPU fails init (BACKEND) */
    GPUFL_BACKEND_NONE = 3 /* no device metrics: stub / test sessions */
} gpufl_backend_kind;

/* The engine ladder; each level adds to the one below. */
typedef enum gpufl_engine {
    GPUFL_ENGINE_MONITOR = 0, /* NVML + host telemetry, no CUPTI (default) */
    GPUFL_ENGINE_TRACE = 1,   /* + CUPTI activity trace */
    GPUFL_ENGINE_PC_SAMPLING = 2,
    GPUFL_ENGINE_SASS_METRICS = 3,
    GPUFL_ENGINE_RANGE_PROFILER = 4,
    GPUFL_ENGINE_DEEP = 5,
    GPUFL_ENGINE_PM_SAMPLING = 6 /* Trace + a timeline of hardware counters (PM sampling) */
} gpufl_engine;

/* "Auto", "Nvidia", "Amd", "None" / "Monitor", "Trace", "PcSampling",
 * "SassMetrics", "RangeProfiler", "Deep", "PmSampling"; NULL for an unknown
 * value. */
GPUFL_API const char *gpufl_backend_name(gpufl_backend_kind kind);
GPUFL_API const char *gpufl_engine_name(gpufl_engine engine);
/* Case-insensitive parse of the names above; GPUFL_ERR_INVALID_ARG if unknown. */
GPUFL_API gpufl_status gpufl_engine_parse(const char *text, gpufl_engine *out);
GPUFL_API gpufl_status gpufl_backend_parse(const char *text, gpufl_backend_kind *out);

/* Where the recorder's own lines go (debug output, the deprecation line):
 * one line, "[gpufl] ..." without the newline. */
typedef void (*gpufl_log_fn)(const char *line, void *user);

/*
 * Every InitOptions field of the seed, with its default.  Strings: NULL or
 * "" means "left at default".  A field equal to its default is "left at
 * default": an environment variable or the config file may set it.
 */
typedef struct gpufl_init_options {
    /* Identity */
    const char *app_name; /* "gpufl" */
    const char *log_path; /* "" = app_name; a trailing ".log" is dropped */

    /* Cloud upload (stored, reported; the upload itself is a later command) */
    const char *backend_url; /* "" ; host only, without /api/v1 */
    const char *api_key;     /* "" ; never written to a log or debug output */
    const char *api_path;    /* "" = "/api/v1" */
    bool remote_upload;      /* false; deprecated: one line at init, no effect */

    /* What to capture (Trace engine and above) */
    bool enable_stack_trace;          /* false */
    bool enable_source_collection;    /* true */
    bool enable_external_correlation; /* true */
    bool enable_synchronization;      /* true */
    bool enable_memory_tracking;      /* false */
    bool enable_cuda_graphs_tracking; /* false */

    /* Sampling */
    int system_sample_rate_ms;       /* 0 = no device/host metric batches */
    int kernel_sample_rate_ms;       /* 0; deprecated: accepted, no effect */
    bool continuous_system_sampling; /* false: sample only inside scopes and
                                        system phases */

    /* Profiling engine */
    gpufl_backend_kind backend;    /* GPUFL_BACKEND_AUTO */
    gpufl_engine profiling_engine; /* GPUFL_ENGINE_MONITOR */

    /* Advanced */
    const char *config_file;  /* "" ; JSON object of these fields */
    bool flush_logs_always;   /* false: fsync after every write */
    bool enable_debug_output; /* false */
    bool enabled;             /* true: false makes init and every call a no-op */

    /* Not in the seed: where the recorder's lines go (NULL: stderr). */
    gpufl_log_fn log_fn;
    void *log_user;

    /* Not in the seed: the Trace engine's CUPTI activity buffers.  Their
     * memory is bounded by cupti_buffer_kib x cupti_max_buffers whatever
     * the run's length; when all are in use CUPTI drops records (counted in
     * capture_capabilities).  0 = defaults (8192 KiB, 16 buffers); at most
     * 1048576 KiB and 256 buffers.  Env: GPUFL_CUPTI_BUFFER_KIB,
     * GPUFL_CUPTI_MAX_BUFFERS. */
    int cupti_buffer_kib;
    int cupti_max_buffers;

    /* Not in the seed: the Trace engine's kernel_detail records.  false
     * (default): one per kernel launch, as GPUFlight writes them (its
     * analyzer joins kernels to details by corr_id); true: one per launch
     * configuration of a kernel, has_details = 1 on that launch only - a
     * tenth of the bytes on disk for a long training loop, which
     * GPUFlight's analyzer attributes only partly.  Env:
     * GPUFL_COMPACT_KERNEL_DETAILS. */
    bool compact_kernel_details;

    /* Not in the seed: PC sampling (profiling_engine PcSampling) samples
     * each SM sub-partition's warps every 2^pc_sampling_period cycles;
     * 5..31, 0 = the default (18: 2^18 = 262144 cycles, about 0.15 ms at
     * 1.75 GHz).  Smaller periods sample more (and drop more when CUPTI's
     * buffers overflow).  Env: GPUFL_PC_SAMPLING_PERIOD. */
    int pc_sampling_period;

    /* Not in the seed: PM sampling (profiling_engine PmSampling) reads
     * the device's performance monitors every pm_sampling_interval_us of
     * GPU time (0 = 100 us; at most 1000000) into a timeline of single-pass
     * metrics.  pm_sampling_metrics: comma-separated metric names ("" =
     * the engine's default: SM active, tensor pipes active, DRAM
     * throughput, graphics engine active, as the chip has them in one
     * pass).  pm_sampling_max_samples: the samples one decode holds (0 =
     * 4096).  Env: GPUFL_PM_SAMPLING_METRICS, GPUFL_PM_SAMPLING_INTERVAL_US,
     * GPUFL_PM_SAMPLING_MAX_SAMPLES. */
    const char *pm_sampling_metrics;
    int pm_sampling_interval_us;
    int pm_sampling_max_samples;
    /* Not in the seed's C API: the range profiler's metrics
     * (profiling_engine RangeProfiler), CUPTI metric names separated by
     * commas ("dram__throughput.avg.pct_of_peak_sustained_elapsed,..."); ""
     * = the default set (achieved occupancy, DRAM throughput and bytes,
     * L1/L2 hit rates, tensor-pipe activity, SM throughput: docs/gpufl.md),
     * cut to what the chip holds in one pass for scope ranges.  `gpu-profile
     * metrics list|passes` shows a chip's names and pass counts.  Env:
     * GPUFL_METRICS. */
    const char *metrics;
    /* Not in the seed: the range profiler measures each kernel launch inside
     * an outermost scope (kernel replay: CUPTI re-runs each kernel once per
     * pass the set needs, so every metric of the set is kept) instead of the
     * scope as one range (one pass).  Env: GPUFL_RANGE_PER_KERNEL. */
    bool range_per_kernel;
    /* Not in the seed: SassMetrics counts every kernel of the session
     * instead of only those run inside outermost scopes (the default, as
     * GPUFlight: enabled at the scope's begin; synchronised, read and
     * disabled at its end).  Env: GPUFL_SASS_ALL_KERNELS. */
    bool sass_all_kernels;
    /* Not in the seed: capture windows (Trace engine and above; docs/gpufl.md
     * "Capture windows").  capture_range: "" (default: the whole session),
     * "cudaProfilerApi" (between cudaProfilerStart and cudaProfilerStop,
     * which torch.cuda.profiler.start/stop call) or "nvtx:NAME" (inside the
     * NVTX ranges whose message is NAME); capture_range_end: "" or "stop"
     * (the first window only), "repeat" (every window), "repeat:N" (the
     * first N), as Nsight Systems spells them.  capture_delay_ms /
     * capture_duration_ms: trace rows only from delay_ms after the session
     * started (after GPUFL_CAPTURE_ORIGIN_NS, which gpu-profile sets to its
     * command's start), for duration_ms (0 = to the end).  Outside every
     * window no kernel, copy, memset, synchronization or graph-launch row is
     * written; each window is a capture_window record.  Env:
     * GPUFL_CAPTURE_RANGE, GPUFL_CAPTURE_RANGE_END, GPUFL_CAPTURE_DELAY_MS,
     * GPUFL_CAPTURE_DURATION_MS. */
    const char *capture_range;
    const char *capture_range_end;
    int capture_delay_ms;
    int capture_duration_ms;
    /* Not in the seed's C API: bounded long runs (docs/gpufl.md "Rotation
     * and max_disk"), GPUFlight 1.3's rollover.  rotate_size: a channel's
     * window is published as <channel>.<N>.log.gz (with its sidecar
     * .gpufl-window.<channel>.<N>.json) before the line that would take it
     * past this size ("" or "0" = off, the default; bytes, or K/M/G/T:
     * "64M").  rotate_interval_ms: also once a window has been open this
     * long (0 = off).  max_disk: once the session's files reach this size,
     * detail (trace rows, scope rows, samples, per-event records) is counted
     * (capture_capabilities "max_disk", shutdown's lines_lost / rows_lost)
     * instead of written; telemetry (device and host samples) goes on ("" =
     * no limit).  Env: GPUFL_LOG_ROTATE_BYTES, GPUFL_LOG_ROTATE_AFTER_MS
     * (GPUFlight's names), GPUFL_MAX_DISK. */
    const char *rotate_size;
    int rotate_interval_ms;
    const char *max_disk;
} gpufl_init_options;

/* Fills the defaults above. */
GPUFL_API void gpufl_init_options_init(gpufl_init_options *opts);

/* ---------------------------------------------------------------- session */

/*
 * Starts a session: resolves the options, creates <log_path>/<session_id>/,
 * writes job_start and capture_capabilities, starts the writer (and, with
 * system_sample_rate_ms > 0, the sampler).  opts may be NULL (defaults).
 * Returns GPUFL_DISABLED, having done nothing, when the kill switch is on.
 */
GPUFL_API gpufl_status gpufl_init(const gpufl_init_options *opts, gpufl_error *err);
/* Flushes everything, writes shutdown, stops the threads.  Idempotent; a
 * no-op without an active session. */
GPUFL_API void gpufl_shutdown(void);
/* Whether a session is recording. */
GPUFL_API bool gpufl_is_active(void);
/* The active session's id / directory, copied into buf (snprintf-style:
 * returns the full length); 0 and "" without an active session. */
GPUFL_API size_t gpufl_session_id(char *buf, size_t cap);
GPUFL_API size_t gpufl_session_dir(char *buf, size_t cap);
/* Asks the writer to write out everything recorded so far and waits for it
 * (at most about a second). */
GPUFL_API void gpufl_flush(void);

/*
 * Writes the text report of this process's session - `gpu-profile report`
 * on its logs: summary, scopes, kernel hotspots, copies, device and host
 * metrics, what was captured - to output_path (created or truncated), or
 * to standard output when output_path is NULL or "".  The session is the
 * active one (flushed first: the report covers what is on disk, and says
 * the run has not shut down) or else the last one shut down in this
 * process.  GPUFL_ERR_STATE when this process recorded none; GPUFL_ERR_IO
 * when the logs cannot be read or the report not written (err says
 * which); GPUFL_OK also after a partial read, which the report states.
 */
GPUFL_API gpufl_status gpufl_generate_report(const char *output_path, gpufl_error *err);

/* The report of any session's logs (any process's, any GPUFlight
 * producer's), rendered into memory: gpufl.report.generate_report() and
 * the analyzer's print_summary() / inspect_*() build on it. */
typedef enum gpufl_report_format {
    GPUFL_REPORT_TEXT = 0, /* aligned text, as `gpu-profile report` prints */
    GPUFL_REPORT_JSON = 1, /* one object, schema "gpu-profile.report" v1 (docs/report.md) */
    GPUFL_REPORT_HTML = 2  /* one self-contained HTML page (docs/report.md, "The HTML report") */
} gpufl_report_format;

/* Sections of the text report (a mask; 0 = all).  The whole text is the
 * concatenation of its sections in this order, so a mask gives exactly
 * those sections' part of it (each but the summary starts with a blank
 * line; host, stalls and read are empty when there is nothing to say). */
enum {
    GPUFL_SECTION_SUMMARY = 1u << 0,  /* app, session, times, totals, busy %, energy */
    GPUFL_SECTION_SCOPES = 1u << 1,   /* scopes and NVTX ranges */
    GPUFL_SECTION_HOTSPOTS = 1u << 2, /* the top_n kernels by GPU time */
    GPUFL_SECTION_MEMORY = 1u << 3,   /* memcpy per direction, memset */
    GPUFL_SECTION_DEVICES = 1u << 4,  /* device metrics per GPU */
    GPUFL_SECTION_HOST = 1u << 5,     /* host CPU and RAM */
    GPUFL_SECTION_STALLS = 1u << 6,   /* PC-sampling stalls, SASS metric rows */
    GPUFL_SECTION_CAPTURE = 1u << 7,  /* capture_capabilities: what was captured */
    GPUFL_SECTION_READ = 1u << 8,     /* what the reader had to skip */
    GPUFL_SECTION_PERF = 1u << 9,     /* perf metrics (printed after the stalls) */
    GPUFL_SECTION_RUN = 1u << 10,     /* the run: every process (rank), stragglers, clocks */
    GPUFL_SECTION_OPS = 1u << 11,     /* framework ops (external correlation): their kernels */
    GPUFL_SECTION_ALL = 0xfffu
};

/* Layout (kept for bindings): pointer, pointer, int, int, unsigned. */
typedef struct gpufl_report_options {
    /* NULL or "": the latest session (of log_prefix's app when that picks
     * by app); else the session of that id. */
    const char *session_id;
    /* NULL or "": none.  GPUFlight's analyzer argument (the app name or
     * the files' prefix); see gpufl_report_logs. */
    const char *log_prefix;
    int top_n;                  /* kernels in the hotspots; < 1: 10 */
    gpufl_report_format format; /* GPUFL_REPORT_TEXT */
    unsigned sections;          /* text only, GPUFL_SECTION_* mask; 0: all */
} gpufl_report_options;

/* Fills the defaults: no session_id or log_prefix, top_n 10, text, all
 * sections. */
GPUFL_API void gpufl_report_options_init(gpufl_report_options *opts);

/*
 * Reads the session found from log_dir - whatever `gpu-profile report
 * PATH` accepts: a session directory, a log directory (its latest session,
 * or opts->session_id's), a flat-layout prefix (<prefix>.<channel>.log),
 * a path ending in ".log" - and renders its report into *out: malloc'd,
 * NUL-terminated, to be freed with gpufl_free(); *out_len (out_len may be
 * NULL) is its length without the NUL.  opts NULL: the defaults.
 *
 * With opts->log_prefix set, the first of these that exists is read:
 *   1. <log_dir>/<log_prefix>.{device,scope,system}.log: that flat prefix;
 *   2. the directory <log_dir>/<log_prefix> (an app's default log_path is
 *      its app_name), read like log_dir above;
 *   3. log_dir, taking only sessions whose job_start "app" is log_prefix:
 *      the latest of them (or opts->session_id's).
 * When none does: GPUFL_ERR_IO, err naming log_dir, log_prefix and the
 * three places looked at.
 *
 * Text honours opts->sections; JSON is always the whole object, HTML the
 * whole page.  Returns
 * GPUFL_ERR_INVALID_ARG for a NULL log_dir or out, an unknown format or
 * section bits outside GPUFL_SECTION_ALL; GPUFL_ERR_IO when no session
 * could be read (err has the reader's reason; also when a stop signal -
 * SIGINT, SIGTERM, SIGHUP, SIGQUIT - that the calling thread blocks became
 * pending: the read ends at once, the signal stays pending for the
 * caller); GPUFL_ERR_NO_MEMORY.  *out
 * is NULL after an error.  GPUFL_OK also after a partial read (lines or
 * records skipped), which the report states.  A session still being
 * recorded by this process is reported as still recording.
 */
GPUFL_API gpufl_status gpufl_report_logs(const char *log_dir, const gpufl_report_options *opts,
                                         char **out, size_t *out_len, gpufl_error *err);

/* Frees what gpufl_report_logs() returned; NULL is accepted. */
GPUFL_API void gpufl_free(void *p);

/* A session's batches as columns, for bindings that build data frames
 * (gpufl.analyzer) without an object per row: one set per batch type read
 * ("kernel_event_batch", ...) and one per dictionary ("kernel_dict", ...:
 * columns "id" and "name").  A batch set's columns are the union of its
 * batches' columns in first-seen order, dt_ns replaced by "ts_ns"
 * (base_time_ns + dt_ns; base_time_ns when dt_ns is not an integer), its
 * rows in read order (the reader's: windows by number, then the plain
 * file, then .tmp/).  A null or absent cell is invalid (valid[r] 0, data
 * 0): never a 0 that claims to be known.  The kernel set has one more
 * column, GPUFL_COLUMNS_DETAIL: codes into the distinct kernel_detail
 * records (compact JSON, sorted keys, corr_id left out) each launch takes
 * (docs/gpufl.md: a launch with has_details takes its corr_id's detail,
 * which stays in force for its kernel's later launches); invalid for a
 * launch with none. */
#define GPUFL_COLUMNS_DETAIL ".detail"

typedef enum gpufl_column_kind {
    GPUFL_COLUMN_INT64 = 0, /* data: int64_t[nrows] */
    GPUFL_COLUMN_DOUBLE =
        1,                 /* data: double[nrows] (a column with a real: its integers converted) */
    GPUFL_COLUMN_CODES = 2 /* data: int32_t[nrows], indexes into strings[nstrings] */
} gpufl_column_kind;

typedef struct gpufl_column {
    const char *name;
    gpufl_column_kind kind;
    const void *data;
    const uint8_t *valid;       /* nrows bytes: 1 known, 0 unknown */
    const char *const *strings; /* GPUFL_COLUMN_CODES: each distinct string once */
    size_t nstrings;
} gpufl_column;

typedef struct gpufl_column_set {
    const char *name;
    size_t nrows;
    size_t ncols;
    const gpufl_column *cols;
    /* false: a value of this set has no exact column form (an integer above
     * INT64_MAX, a time past int64, a dictionary key that is not a plain
     * decimal integer or a name that is not a string, a real kernel_id or
     * corr_id, more than 1024 columns): read that table another way. */
    bool exact;
} gpufl_column_set;

/* What the read skipped (gpufl.analyzer's read_problems). */
typedef struct gpufl_columns_counts {
    char session_id[64]; /* the session read */
    uint64_t files, lines, bad_lines, bad_records, other_session_records, gz_errors,
        unreadable_files, bad_windows, unknown_types, unpublished_files, lost_windows, capped_files;
    bool session_capped;
} gpufl_columns_counts;

typedef struct gpufl_columns_options {
    const char *session_id; /* NULL or "": the latest */
    const char *log_prefix; /* NULL or "": none (as gpufl_report_options') */
    /* NULL: every batch type; else the batch types to keep, comma-separated
     * ("kernel_event_batch,memcpy_event_batch"); dictionaries and details
     * are always kept. */
    const char *batches;
    /* GPUFlight's analyzer's light read (load_all_rotated=False): per
     * channel one file - the plain file (the session root's, else .tmp/'s),
     * else the flat layout's window 0, else the lowest window.  false: every
     * file, windows in order. */
    bool one_file_per_channel;
} gpufl_columns_options;

typedef struct gpufl_columns gpufl_columns; /* opaque */

/* Zeroes: the latest session, no prefix, every batch type. */
GPUFL_API void gpufl_columns_options_init(gpufl_columns_options *opts);
/* Reads the session found from path (as gpufl_report_logs finds it) into
 * *out (gpufl_columns_free).  GPUFL_ERR_INVALID_ARG for a NULL or empty
 * path or a NULL out; GPUFL_ERR_IO when no session could be read there
 * (err names the path and why); GPUFL_ERR_NO_MEMORY.  GPUFL_OK after a
 * partial read too: gpufl_columns_counts_of says what was skipped. */
GPUFL_API gpufl_status gpufl_columns_read(const char *path, const gpufl_columns_options *opts,
                                          gpufl_columns **out, gpufl_error *err);
GPUFL_API size_t gpufl_columns_count(const gpufl_columns *c);
/* The i-th set (read order of first appearance), NULL past the end. */
GPUFL_API const gpufl_column_set *gpufl_columns_at(const gpufl_columns *c, size_t i);
/* The set of that batch type or dictionary, NULL when the session had none. */
GPUFL_API const gpufl_column_set *gpufl_columns_find(const gpufl_columns *c, const char *name);
GPUFL_API const gpufl_columns_counts *gpufl_columns_counts_of(const gpufl_columns *c);
/* Frees c and every array it gave; NULL is accepted. */
GPUFL_API void gpufl_columns_free(gpufl_columns *c);

/* ----------------------------------------------------------------- scopes */

/* A scope in progress, returned by gpufl_scope_begin() (a value: no
 * allocation).  gpufl_scope_end() closes it once; a zeroed one is inert. */
typedef struct gpufl_scope {
    uint64_t instance_id; /* 0: inert */
    uint64_t start_ticks; /* the recorder's clock (TSC or ns), not wall time */
    uint32_t name_id;
    uint32_t generation; /* the session it belongs to */
    uint32_t depth;      /* nesting depth on the thread that began it */
    uint32_t reserved_;
} gpufl_scope;

/* Opens a scope on the calling thread (any thread; scopes nest per thread). */
GPUFL_API gpufl_scope gpufl_scope_begin(const char *name);
/* The same with GPUFlight's benchmark metadata, written on the scope's
 * begin row (scope_event_batch's repeat and warmup columns): repeat, the
 * measured iterations the scope brackets; warmup, those run before it
 * (outside it).  0 and 0 is gpufl_scope_begin. */
GPUFL_API gpufl_scope gpufl_scope_begin_bench(const char *name, uint32_t repeat, uint32_t warmup);
/* Closes it; NULL and an inert or already-closed scope are accepted. */
GPUFL_API void gpufl_scope_end(gpufl_scope *scope);
/* The callback form: fn(user) inside a scope named name. */
GPUFL_API void gpufl_monitor(const char *name, void (*fn)(void *user), void *user);

/* System phases: system_start / system_stop records; with
 * continuous_system_sampling = false the sampler runs between them. */
GPUFL_API void gpufl_system_start(const char *name);
GPUFL_API void gpufl_system_stop(const char *name);

/* Framework ops (PyTorch's aten::mm, ...; gpufl.torch calls these around
 * each op).  Push names an op on the calling thread until its pop: the
 * kernels the thread launches in between carry the op's id through CUPTI
 * external correlation (kind 4, CUSTOM1), and the session's op_dict names
 * the id (once).  The id is gpufl_op_id(name): FNV-1a 64 of the name, the
 * same in every session and process.  GPUFL_OK; GPUFL_ERR_INVALID_ARG
 * for a NULL or empty name; GPUFL_ERR_STATE when no Trace session with
 * enable_external_correlation runs (nothing pushed: the program goes on).
 * Every push, whatever it returned, is paired with one pop. */
GPUFL_API gpufl_status gpufl_push_external_op(const char *name, uint64_t *id);
GPUFL_API void gpufl_pop_external_op(void);
/* An op name's id (0 for NULL or ""). */
GPUFL_API uint64_t gpufl_op_id(const char *name);

/* GPUFL_SCOPE("name") { ... }: the block runs once inside a scope, closed
 * when the block is left by any way out - falling through, return, break,
 * goto (GCC/Clang cleanup attribute).  Note that a break inside the block
 * leaves the scope block itself, as in any loop. */
#if defined(__GNUC__) || defined(__clang__)
typedef struct gpufl_scope_guard_ {
    gpufl_scope scope;
    int once;
} gpufl_scope_guard_;
static inline void gpufl_scope_guard_end_(gpufl_scope_guard_ *g)
{
    gpufl_scope_end(&g->scope);
}
static inline gpufl_scope_guard_ gpufl_scope_guard_begin_(const char *name)
{
    gpufl_scope_guard_ g;
    g.scope = gpufl_scope_begin(name);
    g.once = 1;
    return g;
}
#define GPUFL_CAT2_(a, b) a##b
#define GPUFL_CAT_(a, b) GPUFL_CAT2_(a, b)
#define GPUFL_SCOPE(name)                                                                          \
    for (gpufl_scope_guard_ GPUFL_CAT_(gpufl_guard_, __LINE__)                                     \
             __attribute__((cleanup(gpufl_scope_guard_end_))) = gpufl_scope_guard_begin_(name);    \
         GPUFL_CAT_(gpufl_guard_, __LINE__).once; GPUFL_CAT_(gpufl_guard_, __LINE__).once = 0)
#endif

/* ----------------------------------------------------------------- upload */

/*
 * Uploading finished sessions to a GPUFlight backend (the seed's
 * uploadLogs; protocol: shared/spec/session-log-format.md, "Upload
 * protocol"; docs/gpufl.md, "Upload").  HTTP goes through libcurl, loaded
 * with dlopen("libcurl.so.4") at the first upload: the library works
 * without it, and an upload then fails with GPUFL_ERR_NOT_SUPPORTED saying
 * how to install it.  The API key is sent only in the Authorization header:
 * never in a message, a log line, a session file or the cursor file.
 */
typedef struct gpufl_upload_options {
    /* A session directory (<log_path>/<session_id>) or a log directory
     * (every session in it).  Required. */
    const char *log_path;
    /* NULL or "": GPUFL_BACKEND_URL.  http:// or https://, host only
     * (no /api/v1). */
    const char *backend_url;
    /* NULL or "": GPUFL_API_KEY.  Sent as "Authorization: Bearer <key>". */
    const char *api_key;
    /* NULL or "": GPUFL_API_PATH, else "/api/v1". */
    const char *api_path;
    /* NULL or "": every session under log_path; else only this one. */
    const char *session_id;
    /* Also upload sessions not finished: still recording or crashed (no
     * shutdown record, or GPUFlight's .tmp/ still there). */
    bool force;
    /* false: the kill switch (as GPUFL_DISABLED): nothing read or sent. */
    bool enabled;
    double timeout_s;         /* per request, > 0; default 60 */
    double connect_timeout_s; /* per request, > 0; default 10 */
    /* Retries of one request after a 5xx answer, a timeout or a dropped
     * connection (0..10; default 2), the first after retry_delay_ms
     * (0..60000; default 500), each next one after twice as long. */
    int max_retries;
    int retry_delay_ms;
} gpufl_upload_options;

/* Fills the defaults above (enabled, 60 s, 10 s, 2 retries, 500 ms). */
GPUFL_API void gpufl_upload_options_init(gpufl_upload_options *opts);

typedef struct gpufl_upload_result {
    bool success;             /* every file of every session taken went through */
    uint64_t events_uploaded; /* lines the backend accepted (its "accepted"; else lines sent) */
    uint64_t events_rejected; /* lines the backend rejected (its "rejected") */
    uint64_t files_processed; /* channel files looked at, sent or skipped by the cursor */
    uint64_t files_skipped_by_cursor; /* already sent by an earlier run */
    uint64_t bytes_uploaded;          /* uncompressed NDJSON bytes of the files sent */
    uint64_t sessions_uploaded;       /* sessions completed (session-complete sent) */
    uint64_t sessions_skipped;        /* not finished (without force), or already complete */
    /* The HTTP status of the request that failed; -1 when none failed or
     * no HTTP answer came (a connection or TLS failure: see message). */
    int http_status;
    /* What happened, one line (the failure, or what was skipped). */
    char message[GPUFL_ERROR_MESSAGE_MAX];
} gpufl_upload_result;

/*
 * Uploads the sessions found at opts->log_path: per session, one POST
 * {backend_url}{api_path}/events/stream per channel file (gzipped), then
 * POST .../events/session-complete.  Progress is kept in
 * <session>/.gpufl-upload-cursor.json: a re-run after a failure resumes
 * with the files not yet sent, and a completed session is not sent again.
 * Returns GPUFL_OK (result->success); GPUFL_DISABLED with result->success
 * true and nothing read or sent when the kill switch is on (opts->enabled
 * false or GPUFL_DISABLED); GPUFL_ERR_ENV (GPUFL_DISABLED not a boolean);
 * GPUFL_ERR_INVALID_ARG (no log_path, backend URL or key, a bad value);
 * GPUFL_ERR_IO (no session there, a file unreadable); GPUFL_ERR_STATE (only
 * unfinished sessions, without force); GPUFL_ERR_NOT_SUPPORTED (libcurl
 * absent); GPUFL_ERR_UPLOAD (the backend answered 4xx, or 5xx / no answer
 * after the retries); GPUFL_ERR_NO_MEMORY.  err and result->message say
 * what, naming the URL (never the key) and the HTTP status.  opts NULL:
 * defaults (then log_path is missing).  result may be NULL.
 */
GPUFL_API gpufl_status gpufl_upload_logs(const gpufl_upload_options *opts,
                                         gpufl_upload_result *result, gpufl_error *err);

#ifdef __cplusplus
}
#endif

#endif /* GPUFL_H */
