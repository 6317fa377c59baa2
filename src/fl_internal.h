/*
 * fl_internal.h - what the flight recorder's modules promise each other.
 *
 *   fl_config.c   options: defaults, config_file (JSON, jansson), GPUFL_*
 *                 environment, precedence and validation -> fl_config
 *   fl_buf.c      the growable text buffer the others write into
 *   fl_record.c   one JSON line per record of the GPUFlight wire format v1,
 *                 keys and columns in the spec's order (pure functions)
 *   fl_host.c     host metrics from /proc (CPU %, RAM), hostname, address
 *   fl_scope.c    the scope hot path: per-thread rings, name interning
 *   fl_session.c  gpufl_init/shutdown, the writer thread, the session files
 *   fl_plugin.c   finding and opening the CUPTI plugin (recorder, metrics)
 *
 * Nothing here is exported.
 */
#ifndef FL_INTERNAL_H
#define FL_INTERNAL_H

#include "gpufl.h"
#include "gp_internal.h"
#include "fl_trace.h"

#include <stdbool.h>
#include <stdint.h>

/* err (optional) reset to GPUFL_OK with an empty message. */
void fl_error_clear(gpufl_error *err);
/* Sets err (if non-NULL) to status and a printf-style message; returns status. */
gpufl_status fl_error_set(gpufl_error *err, gpufl_status status, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

/* ---------------------------------------------------------------- config */

#define FL_MAX_WARNINGS 8
#define FL_CUPTI_MAX_BUFFERS 256
#define FL_CUPTI_MAX_BUFFER_KIB 1048576

/* The options after defaults, config file, environment and code were
 * applied (docs/gpufl.md).  Strings are malloc'd and never NULL. */
typedef struct fl_config {
    char *app_name;
    char *log_path; /* resolved base directory: app_name if empty, ".log" dropped */
    char *backend_url;
    char *api_key;
    char *api_path; /* "/api/v1" if empty */
    bool remote_upload;
    bool enable_stack_trace;
    bool enable_source_collection;
    bool enable_external_correlation;
    bool enable_synchronization;
    bool enable_memory_tracking;
    bool enable_cuda_graphs_tracking;
    int system_sample_rate_ms;
    int kernel_sample_rate_ms;
    bool continuous_system_sampling;
    gpufl_backend_kind backend;
    gpufl_engine profiling_engine;
    char *config_file; /* the file that was applied, "" if none */
    bool flush_logs_always;
    bool enable_debug_output;
    int cupti_buffer_kib;  /* 0: the plugin's default */
    int cupti_max_buffers; /* 0: the plugin's default */
    gpufl_log_fn log_fn;
    void *log_user;

    /* Lines to emit at init (deprecations), without the "[gpufl] " prefix. */
    char *warnings[FL_MAX_WARNINGS];
    int n_warnings;
    /* For debug output: where each value came from ("default", "code",
     * "env GPUFL_API_PATH", "config <file>"), one line per non-default field. */
    char *provenance;
} fl_config;

/*
 * Resolves opts (NULL = defaults) into out.  Order of the checks:
 *  1. GPUFL_DISABLED (1/true/yes/on, any case: disabled; 0/false/no/off or
 *     empty: not; anything else: GPUFL_ERR_ENV naming the variable and the
 *     accepted values) - before any file is read;
 *  2. opts->enabled == false -> GPUFL_DISABLED, nothing read;
 *  3. config file (code's config_file, else GPUFL_CONFIG_FILE): applied over
 *     the defaults; its "enabled": false -> GPUFL_DISABLED (if code left
 *     enabled at its default);
 *  4. environment over config, code over environment, field by field;
 *  5. validation (rates >= 0, enum ranges, app_name usable in a path).
 * Returns GPUFL_OK, GPUFL_DISABLED (out is then empty but safe to free) or
 * an error with a message naming the input and the fix.
 */
gpufl_status fl_config_resolve(const gpufl_init_options *opts, fl_config *out, gpufl_error *err);
void fl_config_free(fl_config *c); /* NULL-safe, idempotent */

/* "1/true/yes/on" -> 1, "0/false/no/off" -> 0 (any case), else -1. */
int fl_parse_bool(const char *text);

/* ---------------------------------------------------------------- buffers */

/* A growable text buffer for record lines.  Appends never fail loudly: on
 * an allocation failure oom is set and later appends do nothing. */
typedef struct fl_buf {
    char *p;
    size_t len, cap;
    bool oom;
} fl_buf;

void fl_buf_free(fl_buf *b);
void fl_buf_reset(fl_buf *b); /* len = 0, keeps the memory */
void fl_buf_put(fl_buf *b, const char *s, size_t n);
void fl_buf_puts(fl_buf *b, const char *s);
void fl_buf_printf(fl_buf *b, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
void fl_buf_u64(fl_buf *b, uint64_t v);
void fl_buf_i64(fl_buf *b, int64_t v);
void fl_buf_str(fl_buf *b, const char *s); /* JSON string literal; NULL -> null */
void fl_buf_double(fl_buf *b, double v);   /* fixed, <= 6 decimals; null if not finite */
/* The value, or null when !ok (a metric that was not reported). */
void fl_buf_opt_u64(fl_buf *b, bool ok, uint64_t v);
void fl_buf_opt_i64(fl_buf *b, bool ok, int64_t v);
void fl_buf_opt_double(fl_buf *b, bool ok, double v);
/* Room for n more bytes (and a NUL) at the end; NULL once oom.  Write
 * there, then fl_buf_commit(b, end) with the end of what was written. */
char *fl_buf_reserve(fl_buf *b, size_t n);
void fl_buf_commit(fl_buf *b, char *end);
/* The text, malloc'd, handed to the caller (b is left empty); NULL after an
 * allocation failure. */
char *fl_buf_take(fl_buf *b);

/* An array *p of *cap elements of size bytes grown (doubling, from 16) to
 * hold at least need; 0, or -1 when out of memory (*p unchanged). */
int fl_grow(void **p, size_t *cap, size_t need, size_t size);

/* ---------------------------------------------------------------- records */

/* Host metrics; a field whose bit is clear is written as null. */
enum { FL_HOST_CPU = 1u << 0, FL_HOST_RAM = 1u << 1 };
typedef struct fl_host_sample {
    unsigned valid;
    double cpu_pct; /* 0..100, whole machine, since the previous reading */
    uint64_t ram_used_mib;
    uint64_t ram_total_mib;
} fl_host_sample;

/* A device as job_start / system_start list it: identity from the backend,
 * live fields from the newest sample (have_sample = false: all null). */
typedef struct fl_device_live {
    uint32_t id;
    const char *name, *uuid, *vendor, *pci_bus; /* NULL -> null */
    bool have_sample;
    gp_device_sample s;
} fl_device_live;

/* gpu_static_devices / cuda_static_devices entries; a negative number or a
 * NULL string is written as null. */
typedef struct fl_device_static {
    uint32_t id;
    const char *name, *uuid, *vendor, *architecture;
    int compute_major, compute_minor;
    int64_t l2_cache_size_bytes, shared_mem_per_block_bytes, regs_per_block;
    int multi_processor_count, warp_size;
} fl_device_static;

/* Fields every lifecycle record of a session shares. */
typedef struct fl_ident {
    int64_t pid;
    const char *app;
    const char *session_id;
} fl_ident;

typedef struct fl_job_start {
    const char *log_path;
    uint64_t ts_ns;
    const char *hostname, *ip_addr;
    fl_host_sample host;
    const fl_device_live *devices;
    size_t n_devices;
    const fl_device_static *gpu_static;
    size_t n_gpu_static;
    const fl_device_static *cuda_static;
    size_t n_cuda_static;
    const char *session_kind;     /* "monitor" | "trace" */
    const char *profiling_engine; /* "nvidia.trace", ...; NULL: key left out */
} fl_job_start;

/* Each function appends exactly one line, '\n' included. */
void fl_rec_job_start(fl_buf *b, const fl_ident *id, const fl_job_start *js);
void fl_rec_shutdown(fl_buf *b, const fl_ident *id, uint64_t ts_ns);
/* A launcher's shutdown for a child it saw end: exit_code (or -1 = null),
 * signal (0 = null), crashed. */
void fl_rec_shutdown_child(fl_buf *b, const fl_ident *id, uint64_t ts_ns, int exit_code, int signal,
                           bool crashed);
/* type: "system_start" | "system_stop". */
void fl_rec_system(fl_buf *b, const fl_ident *id, const char *type, const char *name,
                   uint64_t ts_ns, const fl_host_sample *host, const fl_device_live *devices,
                   size_t n_devices);

typedef struct fl_dict_entry {
    uint32_t id;
    const char *name;
} fl_dict_entry;
/* dict: "kernel_dict", "scope_name_dict", ... (one dictionary per line). */
void fl_rec_dictionary(fl_buf *b, const char *session_id, const char *dict,
                       const fl_dict_entry *entries, size_t n);

typedef struct fl_capability {
    const char *feature;
    bool requested;
    const char *status; /* collected | fallback | partial | skipped | enabled_no_data |
                           not_requested */
    const char *mode, *reason_code, *message;
} fl_capability;
void fl_rec_capabilities(fl_buf *b, const char *session_id, uint64_t ts_ns,
                         const char *requested_engine, const char *selected_engine,
                         const fl_capability *caps, size_t n);

/* Rows of the batches.  t_ns is absolute; the writer turns it into dt_ns
 * from base_time_ns = the first row's time (rows come sorted by time). */
typedef struct fl_device_row {
    uint64_t t_ns;
    uint32_t device_id;
    gp_device_sample s; /* invalid metrics are written as null */
} fl_device_row;

typedef struct fl_host_row {
    uint64_t t_ns;
    fl_host_sample h;
} fl_host_row;

enum { FL_SCOPE_BEGIN = 0, FL_SCOPE_END = 1 };
typedef struct fl_scope_row {
    uint64_t t_ns;
    uint64_t instance_id;
    uint64_t original_start_ns;
    uint32_t name_id;
    uint16_t depth;
    uint8_t event_type; /* FL_SCOPE_* */
    uint8_t pad_;
} fl_scope_row;

/* device_metric_batch: the nine base columns, then each optional column
 * (energy_uj from GP_M_ENERGY, clock_mem from GP_M_CLOCK_MEM, pcie_bw_bps
 * from GP_M_PCIE_*) only when some row has a non-zero value for it. */
void fl_rec_device_batch(fl_buf *b, const char *session_id, uint64_t batch_id,
                         const fl_device_row *rows, size_t n);
void fl_rec_host_batch(fl_buf *b, const char *session_id, const char *hostname, const char *ip_addr,
                       uint64_t batch_id, const fl_host_row *rows, size_t n);
void fl_rec_scope_batch(fl_buf *b, const char *session_id, uint64_t batch_id,
                        const fl_scope_row *rows, size_t n);

/* The Trace engine's records (fl_trace.h rows).  Batches: base_time_ns is
 * the first row's t_ns, n == 0 appends nothing; channel device unless
 * noted. */
void fl_rec_kernel_batch(fl_buf *b, const char *session_id, uint64_t batch_id,
                         const fl_kernel_row *rows, size_t n);
/* memcpy_event_batch: the spec's six columns, then src_device_id and
 * dst_device_id only when some row is peer-to-peer (row.peer != 0). */
void fl_rec_memcpy_batch(fl_buf *b, const char *session_id, uint64_t batch_id,
                         const fl_memcpy_row *rows, size_t n);
/* memset_event: one record per memset (our definition of the spec's name). */
void fl_rec_memset_event(fl_buf *b, const fl_ident *id, const fl_memset_row *r);
/* synchronization_event_batch (channel scope). */
void fl_rec_sync_batch(fl_buf *b, const char *session_id, uint64_t batch_id,
                       const fl_sync_row *rows, size_t n);
/* memory_alloc_event_batch (channel scope). */
void fl_rec_alloc_batch(fl_buf *b, const char *session_id, uint64_t batch_id,
                        const fl_alloc_row *rows, size_t n);
/* graph_event_batch: our extension (channel device). */
void fl_rec_graph_batch(fl_buf *b, const char *session_id, uint64_t batch_id,
                        const fl_graph_row *rows, size_t n);
/* kernel_detail: occ NULL (device limits unknown) writes the occupancy
 * fields as null; user_scope / stack_trace NULL are null. */
void fl_rec_kernel_detail(fl_buf *b, const fl_ident *id, const fl_kernel_row *k,
                          const fl_occupancy *occ, const char *user_scope, const char *stack_trace);

/* ---------------------------------------------------------------- host */

typedef struct fl_host {
    const char *proc_root; /* "/proc" unless a test points elsewhere */
    bool have_prev;
    uint64_t prev_busy, prev_total;
} fl_host;

void fl_host_init(fl_host *h, const char *proc_root);
/* Reads /proc/stat and /proc/meminfo.  cpu_pct is valid from the second
 * reading on (it is a difference); RAM is MemTotal - MemAvailable. */
void fl_host_read(fl_host *h, fl_host_sample *out);
/* gethostname(); "" on failure. */
void fl_host_name(char *buf, size_t cap);
/* The first non-loopback IPv4 address of an interface that is up, else
 * "127.0.0.1". */
void fl_host_ip(char *buf, size_t cap);

/* ---------------------------------------------------------------- session */

/* mkdir -p: path and its parents (0755); 0, or -1 with errno (ENOTDIR when
 * path exists and is not a directory). */
int fl_make_dirs(const char *path);

/* A random RFC 4122 version 4 UUID, lower-case, 36 characters + NUL. */
void fl_uuid4(char out[37]);

/* Tests only: while held, the writer thread writes nothing (so a ring can
 * be filled deterministically). */
void fl_session_hold_writer(bool hold);

/* For the CLI: a session whose device metrics come from the caller's
 * monitor (created, not started): the session sets its round hook and
 * starts it (system_sample_rate_ms > 0); the caller stops it before
 * gpufl_shutdown() and destroys it after.  One sampler for the summary and
 * the log.  Same statuses as gpufl_init(). */
gpufl_status fl_init_with_monitor(const gpufl_init_options *opts, gp_monitor *mon,
                                  gpufl_error *err);

/* For the CLI (a launcher): append a shutdown with the child's end to every
 * channel at gpufl_shutdown() instead of the plain one.  Call before
 * gpufl_shutdown(); no-op without a session. */
void fl_session_set_child_exit(int exit_code, int signal, bool crashed);

/* The directory of this process's session: the active one (flushed
 * first; *live true) or the last one shut down; false (and "") when
 * there was none. */
bool fl_session_report_dir(char *buf, size_t cap, bool *live);

/* fl_plugin.c: opens the CUPTI plugin ($GPUFL_CUPTI_PLUGIN, else
 * libgpuprofile_cupti.so beside the library or the program it is linked
 * into) and returns its exported `symbol`.  NULL with why ("build
 * gpu-profile with a CUDA toolkit, or point GPUFL_CUPTI_PLUGIN at ...")
 * when it cannot be loaded or has no such symbol.  path receives the file
 * tried.  A loaded plugin stays open for the process's life. */
const void *fl_plugin_symbol(const char *symbol, char *path, size_t path_len, char *why,
                             size_t len);

#endif /* FL_INTERNAL_H */

/* ---------------------------------------------------------------- scopes */

/* fl_scope.c: the hot path writes into a per-thread single-producer ring
 * (no lock, no syscall); the writer thread drains every ring. */

/* Begins accepting scopes for session generation gen (non-zero).
 * count_active: keep the count of open outermost scopes that
 * fl_scope_any_open() reads (continuous_system_sampling = false). */
void fl_scope_session_begin(uint32_t gen, bool count_active);
/* In a child after fork(): no session, usable locks. */
void fl_scope_after_fork_child(void);
/* Stops accepting scopes (later begin/end calls are no-ops). */
void fl_scope_session_end(void);
/* Writer thread: appends every published row of session gen to *rows
 * (grown as needed; *cap its capacity) from index n, returns the new count.
 * Frees the rings of threads that have exited once they are empty. */
size_t fl_scope_drain(uint32_t gen, fl_scope_row **rows, size_t n, size_t *cap);
/* Writer thread: the scope names interned since the last call, in id
 * order, into *out (grown as needed); returns their count.  The names
 * live as long as the process. */
size_t fl_scope_take_names(fl_dict_entry **out, size_t *cap);
/* The scope_name_dict id of name in session gen (0: session over or out
 * of memory); the name goes out with the writer's next dictionary.  For
 * names that do not come from gpufl_scope_begin (NVTX ranges). */
uint32_t fl_scope_intern(uint32_t gen, const char *name);
/* The calling thread's open scopes: name ids, outermost first, at most
 * min(cap, FL_SCOPE_PATH_MAX).  Lock-free (the thread's own state): called
 * at every kernel launch by the Trace engine. */
size_t fl_scope_current_path(uint32_t *ids, size_t cap);
/* The name of scope_name_dict id in session gen; NULL if unknown.  The
 * text lives as long as the process. */
const char *fl_scope_name_of(uint32_t gen, uint32_t id);
/* Rows dropped because a thread's ring was full, this session. */
uint64_t fl_scope_dropped(void);
/* Whether some thread is inside an outermost scope now. */
bool fl_scope_any_open(void);

/* fl_session.c: asks the writer thread to run a cycle soon (any thread;
 * cheap, used when a ring is half full). */
void fl_session_kick(void);
