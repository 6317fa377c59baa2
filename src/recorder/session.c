/*
 * recorder/session.c - gpufl_init / gpufl_shutdown, the session's life and
 * the calls that ask about it.
 *
 * Promises: the kill switch returns before anything is created, opened,
 * loaded or started; one session at a time, whose init either succeeds
 * whole or leaves nothing behind; the API key is never written anywhere;
 * init and shutdown may be called from any thread, and every other call
 * is a no-op without a session.  g_life serialises init, shutdown, system
 * phases and the queries; it is always taken before writer.c's g_mu.
 */
#include "session.h"
#include "../sampler/hook.h"
#include "../util/clock.h"
#include "../util/error.h"
#include "../util/fs.h"
#include "capabilities.h"
#include "capture.h"
#include "files.h"
#include "launcher.h"
#include "ops.h"
#include "say.h"
#include "scope.h"
#include "session_state.h"
#include "trace_engine.h"
#include "trace_sink.h"
#include "writer.h"
#include "gpu_profile.h"
#include "gpufl.h"

#include <errno.h>
#include <limits.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

/* init / shutdown / system phases: one at a time. */
static pthread_mutex_t g_life = PTHREAD_MUTEX_INITIALIZER;
static session *g_s;
static _Atomic int g_active;
static uint32_t g_gen_counter;
static bool g_atexit_done;
static char g_last_dir[PATH_MAX]; /* the last session shut down, under g_life */

static void session_free(session *s)
{
    if (!s)
        return;
    fl_trace_engine_free(s);
    fl_capture_remove(); /* after the plugin: no edge comes any more */
    if (s->mon_borrowed && s->sampling)
        gp_monitor_stop(s->mon, NULL); /* its hook points here; already stopped normally */
    else if (!s->mon_borrowed)
        gp_monitor_destroy(s->mon);
    fl_writer_free(s);
    free(s->live);
    free(s->statics);
    free(s->failures);
    fl_config_free(&s->cfg);
    free(s);
}

/* ---------------------------------------------------------------- devices */

static gpufl_status list_devices(session *s, char *note, size_t note_len, gpufl_error *err);

/* Opens the device backend the options ask for.  Auto degrades to no
 * device metrics (and says why); Nvidia and Amd are strict, Nvidia never
 * AMD's (auto's last try). */
static gpufl_status open_devices(session *s, char *note, size_t note_len, gpufl_error *err)
{
    const fl_config *c = &s->cfg;
    note[0] = '\0';
    if (s->mon_borrowed)
        return list_devices(s, note, note_len, err);
    bool sample = c->system_sample_rate_ms > 0;
    if (c->backend == GPUFL_BACKEND_NONE && !sample)
        return GPUFL_OK;
    gp_options o;
    gp_options_init(&o);
    o.device = GP_ALL_DEVICES;
    o.interval_s = sample ? c->system_sample_rate_ms / 1000.0 : 1.0;
    o.backend = c->backend == GPUFL_BACKEND_NONE  ? GP_BACKEND_NONE
                : c->backend == GPUFL_BACKEND_AMD ? GP_BACKEND_AMD
                                                  : GP_BACKEND_AUTO;
    o.strict = c->backend == GPUFL_BACKEND_NVIDIA || c->backend == GPUFL_BACKEND_AMD;
    if (o.interval_s < 0.001)
        o.interval_s = 0.001;
    gp_error ge;
    gp_status st = gp_monitor_create(&o, &s->mon, &ge);
    if (st == GP_OK && c->backend == GPUFL_BACKEND_NVIDIA &&
        strcmp(gp_monitor_backend(s->mon), "amd") == 0) {
        gp_monitor_destroy(s->mon);
        s->mon = NULL;
        return fl_error_set(err, GPUFL_ERR_BACKEND,
                            "backend Nvidia: no NVIDIA GPU answers (NVML, nvidia-smi), an AMD "
                            "one does: use backend Amd or Auto");
    }
    if (st != GP_OK) {
        if (c->backend == GPUFL_BACKEND_NVIDIA)
            return fl_error_from_gp(err, &ge, "backend Nvidia");
        if (c->backend == GPUFL_BACKEND_AMD)
            return fl_error_from_gp(err, &ge, "backend Amd");
        /* Auto: no devices (e.g. the driver lists none); say why. */
        snprintf(note, note_len, "%s", ge.message);
        s->mon = NULL;
        if (!sample)
            return GPUFL_OK;
        o.backend = GP_BACKEND_NONE;
        st = gp_monitor_create(&o, &s->mon, &ge);
        if (st != GP_OK)
            return fl_error_from_gp(err, &ge, NULL);
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
        s->failures = calloc(s->n_dev, sizeof *s->failures);
        if (!s->live || !s->statics || !s->failures)
            return fl_error_set(err, GPUFL_ERR_NO_MEMORY, "out of memory for %zu devices",
                                s->n_dev);
    }
    const char *vendor = strcmp(gp_monitor_backend(s->mon), "amd") == 0 ? "AMD" : "NVIDIA";
    for (size_t i = 0; i < s->n_dev; i++) {
        const gp_device_info *di = gp_monitor_device_info(s->mon, i);
        s->live[i] = (fl_device_live){.id = di->index,
                                      .name = di->name,
                                      .uuid = di->uuid[0] ? di->uuid : NULL,
                                      .vendor = vendor,
                                      .pci_bus = di->pci_bus_id[0] ? di->pci_bus_id : NULL};
        /* NVML gives identity only; the CUDA-level limits come with the
         * Trace engine, which talks to the driver API. */
        s->statics[i] = (fl_device_static){.id = di->index,
                                           .name = di->name,
                                           .uuid = di->uuid[0] ? di->uuid : NULL,
                                           .vendor = vendor,
                                           .architecture = NULL,
                                           .compute_major = -1,
                                           .compute_minor = -1,
                                           .l2_cache_size_bytes = -1,
                                           .shared_mem_per_block_bytes = -1,
                                           .regs_per_block = -1,
                                           .multi_processor_count = -1,
                                           .warp_size = -1,
                                           .mig = &di->mig};
    }
    return GPUFL_OK;
}

/* ---------------------------------------------------------------- init */

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
    fl_writer_after_fork_child();
    g_s = NULL;
    atomic_store_explicit(&g_active, 0, memory_order_relaxed);
}

/* Step 1 (g_life held): a new session, refused while one is active; the
 * options resolved and their warnings said; the host named. */
static gpufl_status session_new(const gpufl_init_options *opts, gp_monitor *borrowed, session **out,
                                gpufl_error *err)
{
    /* Under gpu-profile's injection the active session is most likely
     * the injected one: say the way out (docs/gpufl.md, the order). */
    const char *inj = getenv("CUDA_INJECTION64_PATH");
    if (g_s && inj && *inj)
        return fl_error_set(err, GPUFL_ERR_STATE,
                            "a session is already active (%s): this process is traced through "
                            "CUDA_INJECTION64_PATH (gpu-profile --engine), whose session started "
                            "first - one session per process: drop this gpufl_init(), call it "
                            "before CUDA starts, or run without --engine",
                            g_s->dir);
    if (g_s)
        return fl_error_set(err, GPUFL_ERR_STATE,
                            "a session is already active (%s): call gpufl_shutdown() "
                            "before a second gpufl_init()",
                            g_s->dir);
    fl_config cfg;
    gpufl_status st = fl_config_resolve(opts, &cfg, err);
    if (st != GPUFL_OK) {
        fl_config_free(&cfg);
        return st;
    }
    for (int i = 0; i < cfg.n_warnings; i++)
        fl_say(&cfg, "%s", cfg.warnings[i]);

    session *s = calloc(1, sizeof *s);
    if (!s) {
        fl_config_free(&cfg);
        return fl_error_set(err, GPUFL_ERR_NO_MEMORY, "out of memory for a session");
    }
    s->cfg = cfg;
    s->mon = borrowed;
    s->mon_borrowed = borrowed != NULL;
    fl_writer_init(s);
    fl_host_init(&s->host, "/proc");
    fl_host_name(s->hostname, sizeof s->hostname);
    fl_host_ip(s->ip, sizeof s->ip);
    char warn[512];
    fl_run_ident_read(&s->run, s->run_id, warn, sizeof warn);
    if (warn[0])
        fl_say(&s->cfg, "%s", warn);
    *out = s;
    return GPUFL_OK;
}

/* After the Trace engine's start: the sass channel's file when PC sampling
 * is on and a disassembler was found (s->disasm_path), so that the opening
 * records go to it too; a file that cannot be made leaves the reason in
 * s->disasm_why. */
static void open_sass(session *s)
{
    fl_trace_stats st;
    fl_trace_engine_stats(s, &st);
    if (!s->disasm_path[0] || st.engines[FL_ENGINE_PC].status != FL_PC_ACTIVE)
        return;
    gpufl_error err = {0};
    if (fl_files_open_sass(s, &err) != GPUFL_OK) {
        snprintf(s->disasm_why, sizeof s->disasm_why, "%s", err.message);
        s->disasm_path[0] = '\0';
        return;
    }
    fl_trace_writer_set_sass(s->tw, &s->out[FL_CH_SASS]);
}

/* The capture windows' gate, before the plugin can report an edge.  The
 * timed window counts from GPUFL_CAPTURE_ORIGIN_NS (gpu-profile's
 * command's start, wall-clock ns) when set, else from now. */
static gpufl_status install_capture(session *s, gpufl_error *err)
{
    fl_capture_spec spec;
    char why[512];
    if (fl_capture_parse(s->cfg.capture_range, s->cfg.capture_range_end, s->cfg.capture_delay_ms,
                         s->cfg.capture_duration_ms, &spec, why, sizeof why) != 0)
        return fl_error_set(err, GPUFL_ERR_INVALID_ARG, "%s", why); /* config.c checked it */
    uint64_t origin = gp_now_wall_ns();
    const char *o = getenv("GPUFL_CAPTURE_ORIGIN_NS");
    char *end = NULL;
    unsigned long long v = o && *o ? strtoull(o, &end, 10) : 0;
    if (v && end && !*end && v <= origin)
        origin = (uint64_t)v;
    fl_capture_install(&spec, origin);
    return GPUFL_OK;
}

/* Step 2: the devices, the session directory and the engine, and so what
 * the session will capture. */
static gpufl_status open_session(session *s, gpufl_error *err)
{
    /* Before any descriptor of ours (NVML's, the files): a program started
     * with its standard streams closed must not print into a log file. */
    if (fl_fd_reserve_stdio() < 0)
        FL_DEBUG(s, "cannot open /dev/null for a closed stdin, stdout or stderr: %s",
                 strerror(errno));
    char note[GP_NOTE_MAX];
    gpufl_status st = open_devices(s, note, sizeof note, err);
    if (st == GPUFL_OK)
        st = fl_files_open(s, err);
    if (st != GPUFL_OK)
        return st;
    s->ident = (fl_ident){.pid = getpid(), .app = s->cfg.app_name, .session_id = s->id};
    s->gen = ++g_gen_counter ? g_gen_counter : ++g_gen_counter;
    st = install_capture(s, err);
    if (st != GPUFL_OK)
        return st;
    gp_error why = {0};
    bool tracing = s->cfg.profiling_engine > GPUFL_ENGINE_MONITOR &&
                   fl_trace_engine_start(s, fl_session_kick, fl_writer_spill, &why) == GP_OK;
    if (tracing)
        open_sass(s);
    fl_caps_build(s, tracing, why.message, note);
    if (note[0])
        FL_DEBUG(s, "device metrics: %s", note);
    return GPUFL_OK;
}

/* job_start (with the first round's live values) and the first
 * capture_capabilities, on disk before init returns. */
static gpufl_status write_job_start(session *s, gpufl_error *err)
{
    fl_host_sample host = fl_writer_host_latest(s);
    s->run.mono_ns = gp_now_mono_ns(); /* beside ts_ns: the wall clock's offset, as recorded */
    bool amd = s->mon && strcmp(gp_monitor_backend(s->mon), "amd") == 0;
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
                       .rocm_static = amd ? s->statics : NULL,
                       .n_rocm_static = amd ? s->n_dev : 0,
                       .session_kind = s->plugin ? FL_SESSION_KIND_TRACE : FL_SESSION_KIND_MONITOR,
                       .profiling_engine = s->plugin ? s->selected_engine : NULL,
                       .run = s->run};
    fl_writer_put_job_start(s, &js);
    fl_caps_write(s, js.ts_ns);
    fl_writer_write_all(s);
    if (s->loss.first_errno)
        return fl_error_set(err, GPUFL_ERR_IO, "cannot write %s/%s.log: %s", s->dir,
                            fl_channel_name(s->loss.first_channel), strerror(s->loss.first_errno));
    return GPUFL_OK;
}

/* Step 3: sampling, the opening records, then the writer thread. */
static gpufl_status start_recording(session *s, gpufl_error *err)
{
    fl_host_sample h0;
    fl_host_read(&s->host, &h0);
    s->host_latest = h0;
    gpufl_status st = fl_writer_start_sampler(s, err);
    if (st == GPUFL_OK)
        st = write_job_start(s, err);
    if (st == GPUFL_OK)
        st = fl_writer_start(s, err);
    return st;
}

/* Step 4: the session becomes the process's: seen by every call, shut
 * down at exit, forgotten by a fork's child. */
static void publish(session *s)
{
    g_s = s;
    atomic_store_explicit(&g_active, 1, memory_order_release);
    if (!g_atexit_done) {
        /* Whatever the application forgets, the last rows reach the disk. */
        g_atexit_done = atexit(at_exit) == 0;
        pthread_atfork(NULL, NULL, after_fork_child);
    }
    FL_DEBUG(s, "session %s recording to %s (app %s, engine %s, backend %s, %zu device(s))", s->id,
             s->dir, s->cfg.app_name, s->selected_engine,
             s->mon ? gp_monitor_backend(s->mon) : "none", s->n_dev);
    if (s->cfg.provenance && *s->cfg.provenance)
        FL_DEBUG(s, "options not at their defaults:\n%s", s->cfg.provenance);
}

static gpufl_status session_init(const gpufl_init_options *opts, gp_monitor *borrowed,
                                 gpufl_error *err)
{
    fl_error_clear(err);
    pthread_mutex_lock(&g_life);
    session *s = NULL;
    gpufl_status st = session_new(opts, borrowed, &s, err);
    if (st == GPUFL_OK)
        st = open_session(s, err);
    if (st == GPUFL_OK)
        st = start_recording(s, err);
    if (st != GPUFL_OK) {
        session_free(s);
        pthread_mutex_unlock(&g_life);
        return st;
    }
    publish(s);
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

/* Every producer stopped: the sampler, the Trace engine (every CUPTI
 * buffer out before the writer's last cycle, which decodes them), the
 * writer thread; the session no longer the process's. */
static void stop_recording(session *s)
{
    if (s->sampling && !s->mon_borrowed)
        gp_monitor_stop(s->mon, NULL);
    fl_trace_engine_stop(s);
    fl_writer_stop(s);
    atomic_store_explicit(&g_active, 0, memory_order_release);
    g_s = NULL;
}

/* device_metrics partial for each device whose sampling failed. */
static bool mark_failed_devices(session *s)
{
    if (s->n_dev == 0)
        return false;
    fl_device_failure *f = calloc(s->n_dev, sizeof *f);
    if (!f)
        return false;
    fl_writer_failures(s, f);
    bool any = fl_caps_mark_failed_devices(s, f);
    free(f);
    return any;
}

/* The closing records: capture_capabilities again when a feature lost
 * data or the Trace engine has its counts, then shutdown (with what the
 * files lost, and a launcher's child's end) on every channel.  The last
 * data is written first, so that the counts are final.  Returns the scope
 * rows dropped. */
static uint64_t write_closing(session *s)
{
    uint64_t ts = gp_now_wall_ns();
    uint64_t dropped = fl_scope_dropped();
    uint64_t metric_dropped = s->metric_rows_dropped; /* the sampler has stopped */
    bool again = fl_caps_mark_lost_rows(s, dropped, fl_scope_names_over(), metric_dropped);
    again = mark_failed_devices(s) || again;
    if (s->plugin) {
        fl_trace_stats st;
        fl_trace_counts n;
        fl_trace_engine_close(s, ts, &st, &n);
        fl_caps_trace_final(s, &st, &n);
        again = true;
    }
    fl_capture_write(&s->out[FL_CH_SCOPE], &s->ident, true, ts);
    fl_writer_write_all(s);
    again = fl_caps_mark_losses(s) || again;
    s->closing = true;
    if (again)
        fl_caps_write(s, ts);
    fl_shutdown sd = {.ts_ns = ts,
                      .child = s->child_set,
                      .exit_code = s->child_exit,
                      .signal = s->child_signal,
                      .crashed = s->child_crashed,
                      .lines_lost = s->loss.lines_total,
                      .rows_lost = s->loss.rows_total};
    for (int ch = 0; ch < s->n_ch; ch++)
        fl_rec_shutdown_session(&s->out[ch], &s->ident, &sd);
    fl_writer_write_all(s);
    return dropped;
}

void gpufl_shutdown(void)
{
    pthread_mutex_lock(&g_life);
    session *s = g_s;
    if (!s) {
        pthread_mutex_unlock(&g_life);
        return;
    }
    stop_recording(s);
    /* Whatever arrived after the writer's last cycle (rows queued by a
     * system phase racing shutdown). */
    fl_writer_cycle(s);
    uint64_t dropped = write_closing(s);
    if (fl_capture_active()) {
        fl_capture_counts cc;
        fl_capture_counts_get(&cc);
        FL_DEBUG(s, "capture windows: %u opened, %u not opened (over %u), %llu trace rows outside",
                 cc.windows, cc.windows_refused, FL_CAPTURE_MAX_WINDOWS,
                 (unsigned long long)cc.rows_left_out);
    }
    fl_capture_remove();
    FL_DEBUG(s,
             "session %s closed: %llu scope rows, %llu device rows, %llu host rows, %llu scope "
             "rows dropped",
             s->id, (unsigned long long)s->rows_scope, (unsigned long long)s->rows_dev,
             (unsigned long long)s->rows_host, (unsigned long long)dropped);
    if (s->loss.first_errno || s->loss.lines_total)
        FL_DEBUG(s, "session %s lost %llu lines (%llu rows) it could not write%s%s", s->id,
                 (unsigned long long)s->loss.lines_total, (unsigned long long)s->loss.rows_total,
                 s->loss.first_errno ? ": " : "",
                 s->loss.first_errno ? strerror(s->loss.first_errno) : "");
    snprintf(g_last_dir, sizeof g_last_dir, "%s", s->dir);
    session_free(s);
    pthread_mutex_unlock(&g_life);
}

/* ---------------------------------------------------------------- queries */

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
    if (g_s)
        fl_writer_flush(g_s);
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
    fl_writer_queue_phase(s, name, start);
    FL_DEBUG(s, "%s %s", fl_type_name(start ? FL_T_SYSTEM_START : FL_T_SYSTEM_STOP), name);
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

gpufl_status gpufl_push_external_op(const char *name, uint64_t *id)
{
    if (id)
        *id = 0;
    if (!name || !name[0]) {
        fl_ops_push(0); /* the caller's pop still pairs with it */
        return GPUFL_ERR_INVALID_ARG;
    }
    uint64_t op = fl_op_id(name);
    if (id)
        *id = op;
    if (!fl_ops_push(op))
        return GPUFL_ERR_STATE;
    if (fl_ops_first_sight(op)) {
        pthread_mutex_lock(&g_life);
        if (g_s)
            fl_writer_queue_dict(g_s, FL_DICT_OP, op, name);
        pthread_mutex_unlock(&g_life);
    }
    return GPUFL_OK;
}

void gpufl_pop_external_op(void)
{
    fl_ops_pop();
}

uint64_t gpufl_op_id(const char *name)
{
    return name && name[0] ? fl_op_id(name) : 0;
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
