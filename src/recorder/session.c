/*
 * recorder/session.c - gpufl_init / gpufl_shutdown, the session files and the
 * writer thread.
 *
 * Promises: the kill switch returns before anything is created, opened,
 * loaded or started; a session writes <log_path>/<session_id>/{device,
 * scope,system}.log, each line by one write() of whole lines, so a process
 * killed at any moment leaves every line written before its last flush
 * readable; the writer thread formats and writes everything (scope rows
 * from the per-thread rings, device and host rows from the sampler's
 * thread, system phases) every FLUSH_PERIOD_NS or sooner when a buffer
 * fills, so the files are at most about a second behind; dictionary
 * entries are written before the first batch that uses them; the API key
 * is never written anywhere; init and shutdown may be called from any
 * thread, and every other call is a no-op without a session.
 */
#include "session.h"
#include "../abi/plugin.h"
#include "../abi/trace.h"
#include "../sampler/hook.h"
#include "../util/buf.h"
#include "../util/clock.h"
#include "../util/error.h"
#include "../util/fs.h"
#include "../wire/records.h"
#include "config.h"
#include "host.h"
#include "launcher.h"
#include "occupancy.h"
#include "scope.h"
#include "trace_sink.h"
#include "gpu_profile.h"
#include "gpufl.h"

#include <dlfcn.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <pthread.h>
#include <signal.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <sys/stat.h>
#include <unistd.h>

#define FLUSH_PERIOD_NS 250000000ull /* the files lag at most ~0.25 s + a cycle */
#define BATCH_ROWS 1024              /* rows per batch line */
#define QUEUE_KICK_ROWS 4096         /* sampler rows that wake the writer early */
#define QUEUE_MAX_ROWS                                                                             \
    65536 /* per queue: a writer stuck on a slow disk                                              \
             costs rows, not the process's memory */
#define FIRST_ROUND_WAIT_NS 2000000000ull
#define TRACE_FLUSH_PERIOD_NS 1000000000ull /* CUPTI's partly filled buffers, once a second */
#define FLUSH_WAIT_NS 2000000000ull

#define MAX_CAPS 24
#define MAX_CUDA_DEVICES 16

/* Rows queued by the sampler thread for the writer: the writer swaps a
 * whole queue out under the lock and gives its old one back, emptied. */
typedef struct rowq {
    void *p;
    size_t n, cap;
} rowq;

typedef struct session {
    fl_config cfg;
    uint32_t gen;
    char id[37];
    char dir[PATH_MAX];
    char hostname[256];
    char ip[64];
    fl_ident ident;
    int fd[FL_CH_COUNT];
    fl_buf out[FL_CH_COUNT]; /* writer thread (and init/shutdown when it is not running) */

    /* Devices (identity fixed at init). */
    gp_monitor *mon;
    bool mon_borrowed; /* the caller's (the CLI's): never stopped or destroyed here */
    size_t n_dev;
    fl_device_live *live; /* identity + latest sample, under mu */
    fl_device_static *statics;
    bool sampling; /* the sampler thread runs */

    /* Shared with the sampler thread and the API, under mu. */
    fl_host host; /* sampler thread after init */
    fl_host_sample host_latest;
    rowq dev_q;                   /* fl_device_row */
    rowq host_q;                  /* fl_host_row */
    uint64_t metric_rows_dropped; /* queue full or out of memory */
    fl_buf sys_q;                 /* system_start / system_stop lines */
    bool first_round;
    uint64_t flush_req, flush_done;
    bool stop;

    /* Writer thread only. */
    pthread_t writer;
    bool writer_started;
    fl_scope_row *scope_rows;
    size_t scope_cap;
    fl_dict_entry *names;
    size_t names_cap;
    rowq dev_w, host_w; /* the queues taken out, reused as the next ones */
    uint64_t batch_scope, batch_dev, batch_host;
    uint64_t rows_scope, rows_dev, rows_host;
    int io_errno;
    int io_channel;

    /* capture_capabilities */
    fl_capability caps[MAX_CAPS];
    char cap_msg[MAX_CAPS][512];
    size_t n_caps;
    const char *requested_engine, *selected_engine;

    bool child_set;
    int child_exit, child_signal;
    bool child_crashed;

    /* The Trace engine (plugin != NULL while it runs).  The plugin's
     * handle is never closed: CUPTI keeps pointers into it. */
    const fl_trace_plugin *plugin;
    fl_trace_writer *tw; /* writer thread while it runs */
    fl_trace_sink sink;
    uint64_t last_trace_flush_ns; /* writer thread */
    fl_gpu_limits cuda_limits[MAX_CUDA_DEVICES];
    fl_device_static cuda_static[MAX_CUDA_DEVICES];
    size_t n_cuda;
} session;

/* The writer's wake-up, and everything the API shares with the writer and
 * the sampler: static, so a late kick from a producer never touches freed
 * memory. */
static pthread_mutex_t g_mu = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t g_cv;      /* wakes the writer */
static pthread_cond_t g_done_cv; /* flush done, first round done */
static pthread_once_t g_cv_once = PTHREAD_ONCE_INIT;
static _Atomic int g_kicked;
static _Atomic int g_phases; /* open system phases */
static _Atomic int g_hold;   /* tests: the writer skips its cycles */

/* init / shutdown / system phases: one at a time. */
static pthread_mutex_t g_life = PTHREAD_MUTEX_INITIALIZER;
static session *g_s;
static _Atomic int g_active;
static uint32_t g_gen_counter;
static bool g_atexit_done;
static char g_last_dir[PATH_MAX]; /* the last session shut down, under g_life */

static void init_cvs(void)
{
    pthread_condattr_t ca;
    pthread_condattr_init(&ca);
    pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
    pthread_cond_init(&g_cv, &ca);
    pthread_cond_init(&g_done_cv, &ca);
    pthread_condattr_destroy(&ca);
}

static struct timespec deadline_in(uint64_t ns)
{
    uint64_t t = gp_now_mono_ns() + ns;
    struct timespec ts = {(time_t)(t / 1000000000ull), (long)(t % 1000000000ull)};
    return ts;
}

/* ------------------------------------------------------------- messages */

static void say(const fl_config *cfg, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void say(const fl_config *cfg, const char *fmt, ...)
{
    char line[1200];
    int k = snprintf(line, sizeof line, "[gpufl] ");
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(line + k, sizeof line - (size_t)k, fmt, ap);
    va_end(ap);
    if (cfg->log_fn) {
        cfg->log_fn(line, cfg->log_user);
    } else {
        /* One fputs of the whole line so concurrent lines do not interleave. */
        size_t n = strlen(line);
        if (n + 1 < sizeof line) {
            line[n] = '\n';
            line[n + 1] = '\0';
        }
        fputs(line, stderr);
    }
}

#define DEBUG(s, ...)                                                                              \
    do {                                                                                           \
        if ((s)->cfg.enable_debug_output)                                                          \
            say(&(s)->cfg, __VA_ARGS__);                                                           \
    } while (0)

void fl_uuid4(char out[37])
{
    unsigned char b[16];
    size_t got = 0;
    while (got < sizeof b) {
        ssize_t r = getrandom(b + got, sizeof b - got, 0);
        if (r > 0) {
            got += (size_t)r;
            continue;
        }
        if (r < 0 && errno == EINTR)
            continue;
        /* No entropy source: the clock and the pid still make ids that do
         * not collide on one machine. */
        uint64_t t = gp_now_wall_ns() ^ ((uint64_t)getpid() << 32) ^ gp_now_mono_ns();
        for (size_t i = got; i < sizeof b;
             i++, t = t * 6364136223846793005ull + 1442695040888963407ull)
            b[i] = (unsigned char)(t >> 56);
        break;
    }
    b[6] = (unsigned char)((b[6] & 0x0f) | 0x40); /* version 4 */
    b[8] = (unsigned char)((b[8] & 0x3f) | 0x80); /* RFC 4122 variant */
    static const char hex[] = "0123456789abcdef";
    size_t k = 0;
    for (size_t i = 0; i < 16; i++) {
        if (i == 4 || i == 6 || i == 8 || i == 10)
            out[k++] = '-';
        out[k++] = hex[b[i] >> 4];
        out[k++] = hex[b[i] & 15];
    }
    out[k] = '\0';
}

/* ---------------------------------------------------------------- files */

/* Writes a whole buffer; remembers the first error (disk full, ...) and
 * goes on, so a later cycle may still succeed. */
static void write_channel(session *s, int ch, fl_buf *b)
{
    if (b->len == 0 || s->fd[ch] < 0)
        return;
    const char *p = b->p;
    size_t left = b->len;
    while (left > 0) {
        ssize_t w = write(s->fd[ch], p, left);
        if (w < 0 && errno == EINTR)
            continue;
        if (w <= 0) {
            if (!s->io_errno) {
                s->io_errno = w < 0 ? errno : EIO;
                s->io_channel = ch;
            }
            break;
        }
        p += w;
        left -= (size_t)w;
    }
    if (s->cfg.flush_logs_always)
        fsync(s->fd[ch]);
    fl_buf_reset(b);
}

static void write_all_channels(session *s)
{
    for (int ch = 0; ch < FL_CH_COUNT; ch++)
        write_channel(s, ch, &s->out[ch]);
}

static gpufl_status open_session_dir(session *s, gpufl_error *err)
{
    const char *base = s->cfg.log_path;
    if (fl_make_dirs(base) != 0)
        return fl_error_set(err, GPUFL_ERR_IO,
                            "cannot create the log directory \"%s\" (log_path): %s: choose a "
                            "writable log_path",
                            base, strerror(errno));
    for (int attempt = 0;; attempt++) {
        fl_uuid4(s->id);
        if (snprintf(s->dir, sizeof s->dir, "%s/%s", base, s->id) >= (int)sizeof s->dir)
            return fl_error_set(err, GPUFL_ERR_IO, "log_path \"%s\" is too long", base);
        if (mkdir(s->dir, 0755) == 0)
            break;
        if (errno != EEXIST || attempt == 3)
            return fl_error_set(err, GPUFL_ERR_IO,
                                "cannot create the session directory \"%s\": %s: choose a "
                                "writable log_path",
                                s->dir, strerror(errno));
    }
    for (int ch = 0; ch < FL_CH_COUNT; ch++) {
        char path[PATH_MAX + 16];
        snprintf(path, sizeof path, "%s/%s.log", s->dir, fl_channel_name(ch));
        s->fd[ch] = open(path, O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0644);
        if (s->fd[ch] < 0)
            return fl_error_set(err, GPUFL_ERR_IO, "cannot create \"%s\": %s", path,
                                strerror(errno));
    }
    return GPUFL_OK;
}

/* ---------------------------------------------------------------- sampler */

static bool gate_open(void)
{
    return fl_scope_any_open() || atomic_load_explicit(&g_phases, memory_order_relaxed) > 0;
}

static bool hook_gate(void *user)
{
    session *s = user;
    return s->cfg.continuous_system_sampling || gate_open();
}

static bool rowq_push(rowq *q, const void *row, size_t size)
{
    if (q->n >= QUEUE_MAX_ROWS)
        return false;
    if (q->n == q->cap) {
        size_t c = q->cap ? q->cap * 2 : 256;
        void *p = realloc(q->p, c * size);
        if (!p)
            return false; /* the row is lost, the run goes on */
        q->p = p;
        q->cap = c;
    }
    memcpy((char *)q->p + q->n * size, row, size);
    q->n++;
    return true;
}

/* Takes the live queue's rows into *taken; the live one restarts empty
 * with taken's old memory. */
static void rowq_swap(rowq *live, rowq *taken)
{
    rowq old = *taken;
    *taken = *live;
    *live = old;
    live->n = 0;
}

static size_t batch_len(size_t n, size_t i)
{
    return n - i < BATCH_ROWS ? n - i : BATCH_ROWS;
}

/* The sampler thread's round: keep the newest values for system_start and
 * job_start, queue rows while the gate is open. */
static void hook_round(void *user, uint64_t t_mono, uint64_t t_wall,
                       const gp_device_sample *samples, const gp_status *status, size_t n)
{
    (void)t_mono;
    session *s = user;
    fl_host_sample h;
    fl_host_read(&s->host, &h);
    bool emit = s->cfg.continuous_system_sampling || gate_open();
    bool kick = false;
    pthread_mutex_lock(&g_mu);
    bool first = !s->first_round;
    s->host_latest = h;
    for (size_t i = 0; i < n && i < s->n_dev; i++)
        if (status[i] == GP_OK) {
            s->live[i].s = samples[i];
            s->live[i].have_sample = true;
        }
    if (emit) {
        fl_host_row hr = {.t_ns = t_wall, .h = h};
        s->metric_rows_dropped += !rowq_push(&s->host_q, &hr, sizeof hr);
        for (size_t i = 0; i < n && i < s->n_dev; i++) {
            if (status[i] != GP_OK)
                continue;
            fl_device_row dr = {.t_ns = t_wall, .device_id = s->live[i].id, .s = samples[i]};
            s->metric_rows_dropped += !rowq_push(&s->dev_q, &dr, sizeof dr);
        }
        kick = s->dev_q.n + s->host_q.n >= QUEUE_KICK_ROWS;
    }
    if (first) {
        s->first_round = true;
        pthread_cond_broadcast(&g_done_cv);
    }
    pthread_mutex_unlock(&g_mu);
    if (kick)
        fl_session_kick();
}

/* ---------------------------------------------------------------- writer */

void fl_session_kick(void)
{
    if (!atomic_exchange_explicit(&g_kicked, 1, memory_order_acq_rel)) {
        pthread_once(&g_cv_once, init_cvs);
        pthread_cond_signal(&g_cv);
    }
}

static int cmp_scope_row(const void *a, const void *b)
{
    const fl_scope_row *x = a, *y = b;
    if (x->t_ns != y->t_ns)
        return x->t_ns < y->t_ns ? -1 : 1;
    /* A begin and an end at the same ns: the begin first. */
    return (int)x->event_type - (int)y->event_type;
}

/* One cycle: everything recorded so far, formatted and written. */
static void writer_cycle(session *s)
{
    if (atomic_load_explicit(&g_hold, memory_order_acquire))
        return;
    /* Rows first, then names: a name is interned before any row that uses
     * it is published, so every row drained here has its name taken. */
    size_t n_scope = fl_scope_drain(s->gen, &s->scope_rows, 0, &s->scope_cap);
    if (s->plugin) {
        uint64_t now = gp_now_mono_ns();
        if (now - s->last_trace_flush_ns >= TRACE_FLUSH_PERIOD_NS) {
            s->last_trace_flush_ns = now;
            s->plugin->flush();
        }
        /* Kernel dictionaries and trace batches go straight into the
         * channel buffers; NVTX ranges join the scope rows. */
        s->plugin->drain(&s->sink);
        n_scope = fl_trace_writer_take_scope_rows(s->tw, &s->scope_rows, n_scope, &s->scope_cap);
    }
    size_t n_names = fl_scope_take_names(&s->names, &s->names_cap);

    pthread_mutex_lock(&g_mu);
    rowq_swap(&s->dev_q, &s->dev_w);
    rowq_swap(&s->host_q, &s->host_w);
    /* Phase lines are few and short: copied out under the lock. */
    fl_buf_put(&s->out[FL_CH_SYSTEM], s->sys_q.p, s->sys_q.len);
    fl_buf_reset(&s->sys_q);
    pthread_mutex_unlock(&g_mu);

    if (n_names > 0)
        for (int ch = 0; ch < FL_CH_COUNT; ch++)
            fl_rec_dictionary(&s->out[ch], s->id, FL_DICT_SCOPE_NAME, s->names, n_names);

    /* Each thread's rows come in time order; one thread (the common case)
     * needs no sort at all. */
    bool sorted = true;
    for (size_t i = 1; i < n_scope && sorted; i++)
        sorted = cmp_scope_row(&s->scope_rows[i - 1], &s->scope_rows[i]) <= 0;
    if (!sorted)
        qsort(s->scope_rows, n_scope, sizeof *s->scope_rows, cmp_scope_row);
    const fl_device_row *dev = s->dev_w.p;
    const fl_host_row *host = s->host_w.p;
    size_t dn = s->dev_w.n, hn = s->host_w.n;
    for (size_t i = 0; i < n_scope; i += BATCH_ROWS)
        fl_rec_scope_batch(&s->out[FL_CH_SCOPE], s->id, ++s->batch_scope, s->scope_rows + i,
                           batch_len(n_scope, i));
    for (size_t i = 0; i < dn; i += BATCH_ROWS)
        fl_rec_device_batch(&s->out[FL_CH_SYSTEM], s->id, ++s->batch_dev, dev + i,
                            batch_len(dn, i));
    for (size_t i = 0; i < hn; i += BATCH_ROWS)
        fl_rec_host_batch(&s->out[FL_CH_SYSTEM], s->id, s->hostname, s->ip, ++s->batch_host,
                          host + i, batch_len(hn, i));
    s->rows_scope += n_scope;
    s->rows_dev += dn;
    s->rows_host += hn;
    write_all_channels(s);
}

static void *writer_main(void *arg)
{
    session *s = arg;
    pthread_mutex_lock(&g_mu);
    for (;;) {
        if (!atomic_load_explicit(&g_kicked, memory_order_acquire) && !s->stop &&
            s->flush_done == s->flush_req) {
            struct timespec ts = deadline_in(FLUSH_PERIOD_NS);
            pthread_cond_timedwait(&g_cv, &g_mu, &ts);
        }
        atomic_store_explicit(&g_kicked, 0, memory_order_release);
        bool stop = s->stop;
        uint64_t target = s->flush_req;
        pthread_mutex_unlock(&g_mu);
        writer_cycle(s);
        pthread_mutex_lock(&g_mu);
        s->flush_done = target;
        pthread_cond_broadcast(&g_done_cv);
        if (stop)
            break;
    }
    pthread_mutex_unlock(&g_mu);
    return NULL;
}

/* ---------------------------------------------------------- capabilities */

static void add_cap(session *s, const char *feature, bool requested, fl_cap_status status,
                    const char *reason_code, const char *fmt, ...)
    __attribute__((format(printf, 6, 7)));
static void add_cap(session *s, const char *feature, bool requested, fl_cap_status status,
                    const char *reason_code, const char *fmt, ...)
{
    if (s->n_caps == MAX_CAPS)
        return;
    size_t i = s->n_caps++;
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(s->cap_msg[i], sizeof s->cap_msg[i], fmt, ap);
    va_end(ap);
    s->caps[i] = (fl_capability){.feature = feature,
                                 .requested = requested,
                                 .status = status,
                                 .mode = "",
                                 .reason_code = reason_code,
                                 .message = s->cap_msg[i]};
}

/* Starts the Trace engine for an engine above Monitor.  False with why
 * (the plugin's or CUPTI's message) when the session must run Monitor. */
static bool start_trace(session *s, char *why, size_t len)
{
    const fl_trace_plugin *p = fl_trace_plugin_load(why, len);
    if (!p)
        return false;
    s->tw = fl_trace_writer_create(&s->ident, s->gen, &s->out[FL_CH_DEVICE], &s->out[FL_CH_SCOPE],
                                   &s->out[FL_CH_SYSTEM]);
    if (!s->tw) {
        snprintf(why, len, "out of memory for the trace writer");
        return false;
    }
    const fl_config *c = &s->cfg;
    fl_trace_options o = {.synchronization = c->enable_synchronization,
                          .memory = c->enable_memory_tracking,
                          .graphs = c->enable_cuda_graphs_tracking,
                          .external_correlation = c->enable_external_correlation,
                          .nvtx = true,
                          .buffer_bytes = (size_t)c->cupti_buffer_kib * 1024u,
                          .max_buffers = (uint32_t)c->cupti_max_buffers,
                          .kick = fl_session_kick,
                          .scope_path = fl_scope_current_path};
    if (p->start(&o, why, len) != 0) {
        fl_trace_writer_destroy(s->tw);
        s->tw = NULL;
        return false;
    }
    s->plugin = p;
    fl_trace_writer_sink(s->tw, &s->sink);
    s->n_cuda = p->devices(s->cuda_limits, MAX_CUDA_DEVICES);
    for (size_t i = 0; i < s->n_cuda; i++) {
        fl_gpu_limits *l = &s->cuda_limits[i];
        fl_trace_writer_add_limits(s->tw, l);
        s->cuda_static[i] =
            (fl_device_static){.id = l->device_id,
                               .name = l->name,
                               .uuid = l->uuid[0] ? l->uuid : NULL,
                               .vendor = "NVIDIA",
                               .architecture = fl_gpu_arch_name(l->cc_major, l->cc_minor),
                               .compute_major = l->cc_major,
                               .compute_minor = l->cc_minor,
                               .l2_cache_size_bytes = l->l2_cache_bytes,
                               .shared_mem_per_block_bytes = l->smem_per_block_bytes,
                               .regs_per_block = l->max_regs_per_block,
                               .multi_processor_count = l->sm_count,
                               .warp_size = l->warp_size};
    }
    return true;
}

/* The capability of a Trace feature the plugin runs: collected, or
 * fallback with CUPTI's refusal. */
static void add_trace_cap(session *s, const char *feature, uint32_t feat_bit,
                          const fl_trace_stats *st, const char *what)
{
    if (st->unavailable & feat_bit)
        add_cap(s, feature, true, FL_CAP_FALLBACK, "cupti_refused", "%s", st->unavailable_msg);
    else
        add_cap(s, feature, true, FL_CAP_COLLECTED, "", "%s", what);
}

static void build_capabilities(session *s, const char *device_note)
{
    const fl_config *c = &s->cfg;
    gpufl_engine req = c->profiling_engine;
    s->requested_engine = fl_engine_wire_name(req);
    s->selected_engine = fl_engine_wire_name(GPUFL_ENGINE_MONITOR);
    char why[768] = "";
    bool tracing = req > GPUFL_ENGINE_MONITOR && start_trace(s, why, sizeof why);
    if (tracing)
        s->selected_engine = fl_engine_wire_name(GPUFL_ENGINE_TRACE);

    bool sample = c->system_sample_rate_ms > 0;
    if (!sample)
        add_cap(s, "device_metrics", false, FL_CAP_NOT_REQUESTED, "", "system_sample_rate_ms is 0");
    else if (c->backend == GPUFL_BACKEND_NONE)
        add_cap(s, "device_metrics", true, FL_CAP_SKIPPED, "backend_none", "backend is None");
    else if (s->n_dev == 0)
        add_cap(s, "device_metrics", true, FL_CAP_FALLBACK, "no_backend", "%s",
                *device_note ? device_note : "no NVIDIA device was found");
    else
        add_cap(s, "device_metrics", true, FL_CAP_COLLECTED, "", "%s every %d ms (%s)",
                gp_monitor_backend(s->mon), c->system_sample_rate_ms,
                c->continuous_system_sampling ? "continuous" : "inside scopes and system phases");
    if (sample)
        add_cap(s, "host_metrics", true, FL_CAP_COLLECTED, "", "/proc every %d ms",
                c->system_sample_rate_ms);
    else
        add_cap(s, "host_metrics", false, FL_CAP_NOT_REQUESTED, "", "system_sample_rate_ms is 0");
    add_cap(s, "scope_events", true, FL_CAP_COLLECTED, "", "%s", "");

    /* Trace-level features: requested when the engine and the flag ask.  An
     * opt-in flag set under Monitor is reported as skipped, so the user
     * learns that the flag alone does nothing. */
    bool trace = req >= GPUFL_ENGINE_TRACE;
    fl_trace_stats st;
    memset(&st, 0, sizeof st);
    if (tracing)
        s->plugin->stats(&st);
    const struct {
        const char *feature;
        bool flag, opt_in;
        uint32_t bit;
        const char *what;
    } tf[] = {{"kernel_events", true, false, 0, "CUPTI concurrent kernel activity"},
              {"memcpy_events", true, false, FL_FEAT_MEMCPY, "CUPTI memcpy and peer-to-peer"},
              {"memset_events", true, false, FL_FEAT_MEMSET, "CUPTI memset activity"},
              {"synchronization", c->enable_synchronization, false, FL_FEAT_SYNC,
               "CUPTI synchronization activity"},
              {"memory_tracking", c->enable_memory_tracking, true, FL_FEAT_MEMORY,
               "CUPTI MEMORY2 (allocations and frees), timed by API callbacks"},
              {"cuda_graphs", c->enable_cuda_graphs_tracking, true, FL_FEAT_GRAPHS,
               "CUPTI graph trace (one row per graph launch)"},
              {"external_correlation", c->enable_external_correlation, false, FL_FEAT_EXTERNAL,
               "CUPTI external correlation (framework ids on kernel rows)"},
              {"nvtx_ranges", true, false, FL_FEAT_NVTX,
               "NVTX ranges as scopes (needs NVTX_INJECTION64_PATH, set by gpu-profile)"},
              {"user_scope", true, false, FL_FEAT_SCOPES,
               "CUPTI launch callbacks: the gpufl scopes open at each launch in kernel_detail"},
              {"stack_trace", c->enable_stack_trace, true, 0, ""}};
    for (size_t i = 0; i < sizeof tf / sizeof tf[0]; i++) {
        bool stack = strcmp(tf[i].feature, "stack_trace") == 0;
        if (trace && tf[i].flag && tracing && stack)
            add_cap(s, tf[i].feature, true, FL_CAP_SKIPPED, "not_implemented",
                    "CPU stacks at launch are not collected by this version");
        else if (trace && tf[i].flag && tracing)
            add_trace_cap(s, tf[i].feature, tf[i].bit, &st, tf[i].what);
        else if (trace && tf[i].flag)
            add_cap(s, tf[i].feature, true, FL_CAP_FALLBACK, "cupti_unavailable", "%s", why);
        else if (tf[i].flag && tf[i].opt_in)
            add_cap(s, tf[i].feature, true, FL_CAP_SKIPPED, "engine_monitor",
                    "needs profiling_engine Trace or above; this session runs Monitor");
        else
            add_cap(s, tf[i].feature, false, FL_CAP_NOT_REQUESTED, "", "%s", "");
    }
    /* The rungs above Trace are later work: with the plugin running they
     * fall back to Trace, without it to Monitor. */
    const char *above = tracing ? "not_implemented" : "cupti_unavailable";
    char above_why[800];
    snprintf(above_why, sizeof above_why, "%s",
             tracing ? "not implemented by this version; the session runs Trace" : why);
    bool pc = req == GPUFL_ENGINE_PC_SAMPLING || req == GPUFL_ENGINE_DEEP;
    bool sass = req == GPUFL_ENGINE_SASS_METRICS || req == GPUFL_ENGINE_DEEP;
    bool range = req == GPUFL_ENGINE_RANGE_PROFILER;
    add_cap(s, "pc_sampling", pc, pc ? FL_CAP_FALLBACK : FL_CAP_NOT_REQUESTED, pc ? above : "",
            "%s", pc ? above_why : "");
    add_cap(s, "sass_metrics", sass, sass ? FL_CAP_FALLBACK : FL_CAP_NOT_REQUESTED,
            sass ? above : "", "%s", sass ? above_why : "");
    add_cap(s, "range_profiler", range, range ? FL_CAP_FALLBACK : FL_CAP_NOT_REQUESTED,
            range ? above : "", "%s", range ? above_why : "");
    bool src = c->enable_source_collection && (pc || sass);
    add_cap(s, "source_collection", src, src ? FL_CAP_FALLBACK : FL_CAP_NOT_REQUESTED,
            src ? above : "", "%s", src ? above_why : "");
    if (req > GPUFL_ENGINE_MONITOR && !tracing)
        DEBUG(s, "profiling_engine %s requested, running Monitor: %s", gpufl_engine_name(req), why);
    else if (req > GPUFL_ENGINE_TRACE)
        DEBUG(s, "profiling_engine %s requested, running Trace: %s", gpufl_engine_name(req),
              above_why);
}

/* The final word on a feature that lost data. */
static void mark_partial(session *s, const char *feature, const char *reason, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));
static void mark_partial(session *s, const char *feature, const char *reason, const char *fmt, ...)
{
    for (size_t i = 0; i < s->n_caps; i++) {
        if (strcmp(s->caps[i].feature, feature) != 0)
            continue;
        s->caps[i].status = FL_CAP_PARTIAL;
        s->caps[i].reason_code = reason;
        va_list ap;
        va_start(ap, fmt);
        vsnprintf(s->cap_msg[i], sizeof s->cap_msg[i], fmt, ap);
        va_end(ap);
    }
}

static void write_capabilities(session *s, uint64_t ts)
{
    for (int ch = 0; ch < FL_CH_COUNT; ch++)
        fl_rec_capabilities(&s->out[ch], s->id, ts, s->requested_engine, s->selected_engine,
                            s->caps, s->n_caps);
}

/* ---------------------------------------------------------------- init */

static void session_free(session *s)
{
    if (!s)
        return;
    if (s->plugin) {
        /* A session that failed after the engine started. */
        s->plugin->stop();
        s->plugin->release();
    }
    fl_trace_writer_destroy(s->tw);
    if (s->mon_borrowed && s->sampling)
        gp_monitor_stop(s->mon, NULL); /* its hook points here; already stopped normally */
    else if (!s->mon_borrowed)
        gp_monitor_destroy(s->mon);
    for (int ch = 0; ch < FL_CH_COUNT; ch++) {
        if (s->fd[ch] >= 0)
            close(s->fd[ch]);
        fl_buf_free(&s->out[ch]);
    }
    fl_buf_free(&s->sys_q);
    free(s->live);
    free(s->statics);
    free(s->dev_q.p);
    free(s->dev_w.p);
    free(s->host_q.p);
    free(s->host_w.p);
    free(s->scope_rows);
    free(s->names);
    fl_config_free(&s->cfg);
    free(s);
}

static gpufl_status list_devices(session *s, char *note, size_t note_len, gpufl_error *err);

/* Opens the device backend the options ask for.  Auto degrades to no
 * device metrics (and says why); Nvidia is strict. */
static gpufl_status open_devices(session *s, char *note, size_t note_len, gpufl_error *err)
{
    const fl_config *c = &s->cfg;
    note[0] = '\0';
    if (s->mon_borrowed)
        return list_devices(s, note, note_len, err);
    if (c->backend == GPUFL_BACKEND_AMD)
        return fl_error_set(err, GPUFL_ERR_NOT_SUPPORTED,
                            "backend Amd is not supported by this build (NVIDIA only): use "
                            "backend Auto, Nvidia or None");
    bool sample = c->system_sample_rate_ms > 0;
    if (c->backend == GPUFL_BACKEND_NONE && !sample)
        return GPUFL_OK;
    gp_options o;
    gp_options_init(&o);
    o.device = GP_ALL_DEVICES;
    o.interval_s = sample ? c->system_sample_rate_ms / 1000.0 : 1.0;
    o.backend = c->backend == GPUFL_BACKEND_NONE ? GP_BACKEND_NONE : GP_BACKEND_AUTO;
    o.strict = c->backend == GPUFL_BACKEND_NVIDIA;
    if (o.interval_s < 0.001)
        o.interval_s = 0.001;
    gp_error ge;
    gp_status st = gp_monitor_create(&o, &s->mon, &ge);
    if (st != GP_OK) {
        if (c->backend == GPUFL_BACKEND_NVIDIA)
            return fl_error_set(err,
                                st == GP_ERR_NO_MEMORY ? GPUFL_ERR_NO_MEMORY : GPUFL_ERR_BACKEND,
                                "backend Nvidia: %s", ge.message);
        /* Auto: no devices (e.g. the driver lists none); say why. */
        snprintf(note, note_len, "%s", ge.message);
        s->mon = NULL;
        if (!sample)
            return GPUFL_OK;
        o.backend = GP_BACKEND_NONE;
        st = gp_monitor_create(&o, &s->mon, &ge);
        if (st != GP_OK)
            return fl_error_set(err, GPUFL_ERR_NO_MEMORY, "%s", ge.message);
    }
    return list_devices(s, note, note_len, err);
}

/* The monitor's devices as job_start and system phases show them. */
static gpufl_status list_devices(session *s, char *note, size_t note_len, gpufl_error *err)
{
    const fl_config *c = &s->cfg;
    if (strcmp(gp_monitor_backend(s->mon), "none") != 0) {
        s->n_dev = gp_monitor_device_count(s->mon);
    } else if (!note[0] && c->backend != GPUFL_BACKEND_NONE) {
        snprintf(note, note_len, "%s", gp_monitor_note(s->mon));
    }
    if (s->n_dev > 0) {
        s->live = calloc(s->n_dev, sizeof *s->live);
        s->statics = calloc(s->n_dev, sizeof *s->statics);
        if (!s->live || !s->statics)
            return fl_error_set(err, GPUFL_ERR_NO_MEMORY, "out of memory for %zu devices",
                                s->n_dev);
    }
    for (size_t i = 0; i < s->n_dev; i++) {
        const gp_device_info *di = gp_monitor_device_info(s->mon, i);
        s->live[i] = (fl_device_live){.id = di->index,
                                      .name = di->name,
                                      .uuid = di->uuid,
                                      .vendor = "NVIDIA",
                                      .pci_bus = NULL};
        /* NVML gives identity only; the CUDA-level limits come with the
         * Trace engine, which talks to the driver API. */
        s->statics[i] = (fl_device_static){.id = di->index,
                                           .name = di->name,
                                           .uuid = di->uuid,
                                           .vendor = "NVIDIA",
                                           .architecture = NULL,
                                           .compute_major = -1,
                                           .compute_minor = -1,
                                           .l2_cache_size_bytes = -1,
                                           .shared_mem_per_block_bytes = -1,
                                           .regs_per_block = -1,
                                           .multi_processor_count = -1,
                                           .warp_size = -1};
    }
    return GPUFL_OK;
}

static gpufl_status start_sampler(session *s, gpufl_error *err)
{
    if (!s->mon || s->cfg.system_sample_rate_ms <= 0)
        return GPUFL_OK;
    gp_round_hook hook = {.gate = hook_gate, .on_round = hook_round, .user = s};
    gp_error ge;
    if (gp_monitor_set_hook(s->mon, &hook, &ge) != GP_OK || gp_monitor_start(s->mon, &ge) != GP_OK)
        return fl_error_set(err, GPUFL_ERR_BACKEND, "cannot start the sampler: %s", ge.message);
    s->sampling = true;
    /* job_start shows the devices' live values: wait for the first round
     * (a few ms with NVML), but never long. */
    struct timespec ts = deadline_in(FIRST_ROUND_WAIT_NS);
    pthread_mutex_lock(&g_mu);
    while (!s->first_round)
        if (pthread_cond_timedwait(&g_done_cv, &g_mu, &ts) == ETIMEDOUT)
            break;
    pthread_mutex_unlock(&g_mu);
    return GPUFL_OK;
}

static gpufl_status start_writer(session *s, gpufl_error *err)
{
    sigset_t all, old;
    sigfillset(&all);
    pthread_sigmask(SIG_SETMASK, &all, &old);
    int rc = pthread_create(&s->writer, NULL, writer_main, s);
    pthread_sigmask(SIG_SETMASK, &old, NULL);
    if (rc != 0)
        return fl_error_set(err, GPUFL_ERR_THREAD, "cannot start the writer thread: %s",
                            strerror(rc));
    s->writer_started = true;
    return GPUFL_OK;
}

static void at_exit(void)
{
    gpufl_shutdown();
}

/* A child of fork() inherits the session but not its threads: it records
 * nothing (the parent's session goes on), and its exit must not wait for a
 * writer that does not exist there.  The session's memory is left to the
 * child's exit; its files are the parent's. */
static void after_fork_child(void)
{
    fl_scope_after_fork_child();
    pthread_mutex_init(&g_life, NULL);
    pthread_mutex_init(&g_mu, NULL);
    g_s = NULL;
    atomic_store_explicit(&g_active, 0, memory_order_relaxed);
    atomic_store_explicit(&g_phases, 0, memory_order_relaxed);
}

static gpufl_status session_init(const gpufl_init_options *opts, gp_monitor *borrowed,
                                 gpufl_error *err)
{
    fl_error_clear(err);
    pthread_mutex_lock(&g_life);
    if (g_s) {
        gpufl_status st = fl_error_set(err, GPUFL_ERR_STATE,
                                       "a session is already active (%s): call gpufl_shutdown() "
                                       "before a second gpufl_init()",
                                       g_s->dir);
        pthread_mutex_unlock(&g_life);
        return st;
    }
    fl_config cfg;
    gpufl_status st = fl_config_resolve(opts, &cfg, err);
    if (st != GPUFL_OK) {
        fl_config_free(&cfg);
        pthread_mutex_unlock(&g_life);
        return st;
    }
    for (int i = 0; i < cfg.n_warnings; i++)
        say(&cfg, "%s", cfg.warnings[i]);

    session *s = calloc(1, sizeof *s);
    if (!s) {
        fl_config_free(&cfg);
        pthread_mutex_unlock(&g_life);
        return fl_error_set(err, GPUFL_ERR_NO_MEMORY, "out of memory for a session");
    }
    s->cfg = cfg;
    s->mon = borrowed;
    s->mon_borrowed = borrowed != NULL;
    for (int ch = 0; ch < FL_CH_COUNT; ch++)
        s->fd[ch] = -1;
    pthread_once(&g_cv_once, init_cvs);
    fl_host_init(&s->host, "/proc");
    fl_host_name(s->hostname, sizeof s->hostname);
    fl_host_ip(s->ip, sizeof s->ip);

    char note[GP_NOTE_MAX];
    st = open_devices(s, note, sizeof note, err);
    if (st == GPUFL_OK)
        st = open_session_dir(s, err);
    if (st != GPUFL_OK) {
        session_free(s);
        pthread_mutex_unlock(&g_life);
        return st;
    }
    s->ident = (fl_ident){.pid = getpid(), .app = s->cfg.app_name, .session_id = s->id};
    s->gen = ++g_gen_counter ? g_gen_counter : ++g_gen_counter;
    build_capabilities(s, note);
    if (note[0])
        DEBUG(s, "device metrics: %s", note);

    fl_host_sample h0;
    fl_host_read(&s->host, &h0);
    s->host_latest = h0;
    st = start_sampler(s, err);
    if (st == GPUFL_OK) {
        pthread_mutex_lock(&g_mu);
        fl_host_sample host = s->host_latest;
        pthread_mutex_unlock(&g_mu);
        fl_job_start js = {.log_path = s->cfg.log_path,
                           .ts_ns = gp_now_wall_ns(),
                           .hostname = s->hostname,
                           .ip_addr = s->ip,
                           .host = host,
                           .devices = s->live,
                           .n_devices = s->n_dev,
                           .gpu_static = s->statics,
                           .n_gpu_static = s->n_dev,
                           .cuda_static = s->cuda_static,
                           .n_cuda_static = s->n_cuda,
                           .session_kind =
                               s->plugin ? FL_SESSION_KIND_TRACE : FL_SESSION_KIND_MONITOR,
                           .profiling_engine = s->plugin ? s->selected_engine : NULL};
        pthread_mutex_lock(&g_mu);
        for (int ch = 0; ch < FL_CH_COUNT; ch++)
            fl_rec_job_start(&s->out[ch], &s->ident, &js);
        pthread_mutex_unlock(&g_mu);
        write_capabilities(s, js.ts_ns);
        write_all_channels(s);
        if (s->io_errno)
            st = fl_error_set(err, GPUFL_ERR_IO, "cannot write %s/%s.log: %s", s->dir,
                              fl_channel_name(s->io_channel), strerror(s->io_errno));
    }
    if (st == GPUFL_OK) {
        atomic_store_explicit(&g_phases, 0, memory_order_relaxed);
        fl_scope_session_begin(s->gen, !s->cfg.continuous_system_sampling, fl_session_kick);
        st = start_writer(s, err);
        if (st != GPUFL_OK)
            fl_scope_session_end();
    }
    if (st != GPUFL_OK) {
        session_free(s);
        pthread_mutex_unlock(&g_life);
        return st;
    }
    g_s = s;
    atomic_store_explicit(&g_active, 1, memory_order_release);
    if (!g_atexit_done) {
        /* Whatever the application forgets, the last rows reach the disk. */
        g_atexit_done = atexit(at_exit) == 0;
        pthread_atfork(NULL, NULL, after_fork_child);
    }
    DEBUG(s, "session %s recording to %s (app %s, engine %s, backend %s, %zu device(s))", s->id,
          s->dir, s->cfg.app_name, s->selected_engine, s->mon ? gp_monitor_backend(s->mon) : "none",
          s->n_dev);
    if (s->cfg.provenance && *s->cfg.provenance)
        DEBUG(s, "options not at their defaults:\n%s", s->cfg.provenance);
    pthread_mutex_unlock(&g_life);
    return GPUFL_OK;
}

gpufl_status gpufl_init(const gpufl_init_options *opts, gpufl_error *err)
{
    return session_init(opts, NULL, err);
}

gpufl_status fl_init_with_monitor(const gpufl_init_options *opts, gp_monitor *mon, gpufl_error *err)
{
    if (!mon)
        return fl_error_set(err, GPUFL_ERR_INVALID_ARG, "fl_init_with_monitor: monitor is NULL");
    return session_init(opts, mon, err);
}

/* ---------------------------------------------------------------- shutdown */

/* The Trace engine's last word: what was written, what CUPTI dropped, what
 * it cost; the plugin's memory released.  Returns true (the closing
 * capture_capabilities carries the counts). */
static bool close_trace(session *s)
{
    fl_trace_stats st;
    s->plugin->stats(&st);
    fl_trace_counts n;
    fl_trace_writer_counts(s->tw, &n);
    s->plugin->release();
    s->plugin = NULL;
    for (size_t i = 0; i < s->n_caps; i++) {
        if (strcmp(s->caps[i].feature, "kernel_events") != 0 ||
            s->caps[i].status != FL_CAP_COLLECTED)
            continue;
        snprintf(s->cap_msg[i], sizeof s->cap_msg[i],
                 "%llu kernels (%llu details), %llu memcpy, %llu memset, %llu sync, %llu "
                 "alloc/free, %llu graph launches, %llu NVTX records; %llu CUPTI buffers, "
                 "%llu other records skipped; CUPTI overhead %.3f ms in %llu records",
                 (unsigned long long)n.kernels, (unsigned long long)n.details,
                 (unsigned long long)n.memcpys, (unsigned long long)n.memsets,
                 (unsigned long long)n.syncs, (unsigned long long)n.allocs,
                 (unsigned long long)n.graphs, (unsigned long long)n.markers,
                 (unsigned long long)st.buffers, (unsigned long long)st.other_records,
                 st.overhead_ns / 1e6, (unsigned long long)st.overhead_records);
    }
    if (st.cupti_dropped > 0 || st.buffers_refused > 0 || st.bad_buffers > 0 ||
        n.markers_lost > 0) {
        const char *feats[] = {"kernel_events",   "memcpy_events",   "memset_events",
                               "synchronization", "memory_tracking", "cuda_graphs"};
        for (size_t f = 0; f < sizeof feats / sizeof feats[0]; f++) {
            bool collected = false;
            for (size_t i = 0; i < s->n_caps; i++)
                collected |= strcmp(s->caps[i].feature, feats[f]) == 0 &&
                             s->caps[i].status == FL_CAP_COLLECTED;
            if (!collected)
                continue;
            mark_partial(s, feats[f], "records_dropped",
                         "%llu activity records dropped by CUPTI, %llu buffer requests refused "
                         "(every buffer of the pool in use: raise cupti_max_buffers or "
                         "cupti_buffer_kib), %llu buffers cut short by an unreadable record",
                         (unsigned long long)st.cupti_dropped,
                         (unsigned long long)st.buffers_refused,
                         (unsigned long long)st.bad_buffers);
        }
    }
    if (n.markers_lost > 0)
        mark_partial(s, "nvtx_ranges", "out_of_memory", "%llu NVTX records lost",
                     (unsigned long long)n.markers_lost);
    DEBUG(s, "trace: %llu kernels, %llu records dropped, %llu buffers refused, pool %llu bytes",
          (unsigned long long)n.kernels, (unsigned long long)st.cupti_dropped,
          (unsigned long long)st.buffers_refused, (unsigned long long)st.pool_bytes);
    return true;
}

void gpufl_shutdown(void)
{
    pthread_mutex_lock(&g_life);
    session *s = g_s;
    if (!s) {
        pthread_mutex_unlock(&g_life);
        return;
    }
    if (s->sampling && !s->mon_borrowed)
        gp_monitor_stop(s->mon, NULL);
    /* Every CUPTI buffer out (forced flush) before the writer's last
     * cycle, which decodes them. */
    if (s->plugin)
        s->plugin->stop();
    pthread_mutex_lock(&g_mu);
    s->stop = true;
    pthread_cond_broadcast(&g_cv);
    pthread_mutex_unlock(&g_mu);
    pthread_join(s->writer, NULL);
    fl_scope_session_end();
    atomic_store_explicit(&g_active, 0, memory_order_release);
    g_s = NULL;

    /* Whatever arrived after the writer's last cycle (rows queued by a
     * system phase racing shutdown). */
    writer_cycle(s);
    uint64_t ts = gp_now_wall_ns();
    uint64_t dropped = fl_scope_dropped();
    uint64_t metric_dropped = s->metric_rows_dropped; /* the sampler has stopped */
    if (dropped > 0)
        mark_partial(s, "scope_events", "ring_full",
                     "%llu scope events dropped: a thread opened scopes faster than the writer "
                     "drained them",
                     (unsigned long long)dropped);
    if (metric_dropped > 0)
        mark_partial(s, "device_metrics", "queue_full",
                     "%llu metric rows dropped: the writer fell behind (a slow disk?)",
                     (unsigned long long)metric_dropped);
    bool trace_final = s->plugin && close_trace(s);
    if (dropped > 0 || metric_dropped > 0 || trace_final)
        write_capabilities(s, ts);
    for (int ch = 0; ch < FL_CH_COUNT; ch++) {
        if (s->child_set)
            fl_rec_shutdown_child(&s->out[ch], &s->ident, ts, s->child_exit, s->child_signal,
                                  s->child_crashed);
        else
            fl_rec_shutdown(&s->out[ch], &s->ident, ts);
    }
    write_all_channels(s);
    DEBUG(s,
          "session %s closed: %llu scope rows, %llu device rows, %llu host rows, %llu scope "
          "rows dropped",
          s->id, (unsigned long long)s->rows_scope, (unsigned long long)s->rows_dev,
          (unsigned long long)s->rows_host, (unsigned long long)dropped);
    if (s->io_errno)
        DEBUG(s, "writing %s/%s.log failed: %s", s->dir, fl_channel_name(s->io_channel),
              strerror(s->io_errno));
    snprintf(g_last_dir, sizeof g_last_dir, "%s", s->dir);
    session_free(s);
    pthread_mutex_unlock(&g_life);
}

bool fl_session_report_dir(char *buf, size_t cap, bool *live)
{
    gpufl_flush();
    pthread_mutex_lock(&g_life);
    const char *d = g_s ? g_s->dir : g_last_dir;
    *live = g_s != NULL;
    snprintf(buf, cap, "%s", d);
    bool ok = d[0] != '\0';
    pthread_mutex_unlock(&g_life);
    return ok;
}

bool gpufl_is_active(void)
{
    return atomic_load_explicit(&g_active, memory_order_acquire) != 0;
}

static size_t copy_out(char *buf, size_t cap, const char *text)
{
    size_t n = strlen(text);
    if (cap > 0)
        snprintf(buf, cap, "%s", text);
    return n;
}

size_t gpufl_session_id(char *buf, size_t cap)
{
    pthread_mutex_lock(&g_life);
    size_t n = copy_out(buf, cap, g_s ? g_s->id : "");
    pthread_mutex_unlock(&g_life);
    return n;
}

size_t gpufl_session_dir(char *buf, size_t cap)
{
    pthread_mutex_lock(&g_life);
    size_t n = copy_out(buf, cap, g_s ? g_s->dir : "");
    pthread_mutex_unlock(&g_life);
    return n;
}

void gpufl_flush(void)
{
    pthread_mutex_lock(&g_life);
    session *s = g_s;
    if (!s) {
        pthread_mutex_unlock(&g_life);
        return;
    }
    pthread_mutex_lock(&g_mu);
    uint64_t want = ++s->flush_req;
    pthread_cond_broadcast(&g_cv);
    struct timespec ts = deadline_in(FLUSH_WAIT_NS);
    while (s->flush_done < want)
        if (pthread_cond_timedwait(&g_done_cv, &g_mu, &ts) == ETIMEDOUT)
            break;
    pthread_mutex_unlock(&g_mu);
    pthread_mutex_unlock(&g_life);
}

/* ---------------------------------------------------------------- phases */

static void system_phase(const char *name, bool start)
{
    pthread_mutex_lock(&g_life);
    session *s = g_s;
    if (!s || !name) {
        pthread_mutex_unlock(&g_life);
        return;
    }
    if (start) {
        atomic_fetch_add_explicit(&g_phases, 1, memory_order_relaxed);
    } else {
        int v = atomic_load_explicit(&g_phases, memory_order_relaxed);
        while (v > 0 && !atomic_compare_exchange_weak_explicit(
                            &g_phases, &v, v - 1, memory_order_relaxed, memory_order_relaxed))
            ;
    }
    pthread_mutex_lock(&g_mu);
    fl_host_sample host = s->host_latest;
    fl_rec_system(&s->sys_q, &s->ident, start, name, gp_now_wall_ns(), &host, s->live, s->n_dev);
    pthread_mutex_unlock(&g_mu);
    fl_session_kick();
    DEBUG(s, "%s %s", fl_type_name(start ? FL_T_SYSTEM_START : FL_T_SYSTEM_STOP), name);
    pthread_mutex_unlock(&g_life);
}

void gpufl_system_start(const char *name)
{
    system_phase(name, true);
}

void gpufl_system_stop(const char *name)
{
    system_phase(name, false);
}

void fl_session_hold_writer(bool hold)
{
    atomic_store_explicit(&g_hold, hold ? 1 : 0, memory_order_release);
    if (!hold)
        fl_session_kick();
}

void fl_session_set_child_exit(int exit_code, int signal, bool crashed)
{
    pthread_mutex_lock(&g_life);
    if (g_s) {
        g_s->child_set = true;
        g_s->child_exit = exit_code;
        g_s->child_signal = signal;
        g_s->child_crashed = crashed;
    }
    pthread_mutex_unlock(&g_life);
}
