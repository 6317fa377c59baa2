/*
 * recorder/capture.c - capture windows (capture.h): the spec's parser,
 * the gate the plugin's edges open and close, and what the trace sink
 * asks of it.
 *
 * A row is judged by its correlation id where it has one: a window spans
 * the ids after its opening call and before its closing one, so a kernel
 * launched inside a window is kept even when the GPU runs it after the
 * window closed, and one launched before it is left out even when it runs
 * inside.  A row without an id, and the timed window (--delay /
 * --duration), go by the row's start time.  One session at a time, so the
 * gate is this file's state; its lock is held only at an edge that opens
 * or closes a window and by the writer around a batch.
 */
#include "capture.h"
#include "../abi/trace_abi.h"
#include "../util/clock.h"
#include "../util/error.h"
#include "launcher.h"

#include <ctype.h>
#include <errno.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

typedef struct window {
    uint64_t start_ns, end_ns; /* wall clock; end 0 while open */
    uint32_t corr_lo;          /* rows with corr_lo < corr ... */
    uint32_t corr_hi;          /* ... < corr_hi (while open: any above corr_lo) */
    bool open, written;
} window;

static pthread_mutex_t mu = PTHREAD_MUTEX_INITIALIZER;
static _Atomic bool installed;
static fl_capture_spec spec;
static uint64_t t_lo_ns, t_hi_ns; /* the timed window; hi UINT64_MAX: no end */
static bool timed_written;
static window *wins;
static size_t n_wins, cap_wins;
static uint32_t closed;         /* windows closed (stop / repeat:N count them) */
static uint64_t nvtx_range_id;  /* the open window's range (start / end) */
static const void *nvtx_thread; /* the thread whose push opened it (push / pop) */
static int nvtx_depth_at_open;  /* its push depth then */
static _Thread_local int nvtx_depth
    __attribute__((tls_model("initial-exec"))); /* pushes not popped */
static _Thread_local char nvtx_me __attribute__((tls_model("initial-exec"))); /* names the thread */
static fl_capture_counts counts;
static _Atomic uint64_t left_out[FL_CAPTURE_ROW_KINDS];

/* ------------------------------------------------------------- parsing */

static int fail(char *why, size_t len, const char *fmt, const char *arg)
{
    snprintf(why, len, fmt, arg);
    return -1;
}

static int parse_end(const char *end, fl_capture_spec *out, char *why, size_t len)
{
    if (!end || !*end || strcasecmp(end, "stop") == 0) {
        out->max_windows = 1;
        return 0;
    }
    if (strcasecmp(end, "repeat") == 0) {
        out->max_windows = 0;
        return 0;
    }
    if (strncasecmp(end, "repeat:", 7) == 0) {
        const char *n = end + 7;
        char *stop = NULL;
        errno = 0;
        unsigned long v = isdigit((unsigned char)*n) ? strtoul(n, &stop, 10) : 0;
        if (v >= 1 && v <= FL_CAPTURE_MAX_WINDOWS && stop && !*stop && !errno) {
            out->max_windows = (uint32_t)v;
            return 0;
        }
    }
    snprintf(why, len,
             "capture_range_end \"%s\" is not a choice: use stop (the first window only), repeat "
             "(every window) or repeat:N (the first N windows, N from 1 to %u)",
             end, FL_CAPTURE_MAX_WINDOWS);
    return -1;
}

int fl_capture_parse(const char *range, const char *end, int delay_ms, int duration_ms,
                     fl_capture_spec *out, char *why, size_t len)
{
    memset(out, 0, sizeof *out);
    if (!range || !*range) {
        out->trigger = FL_CAPTURE_ALWAYS;
    } else if (strcasecmp(range, "cudaProfilerApi") == 0) {
        out->trigger = FL_CAPTURE_PROFILER_API;
    } else if (strncasecmp(range, "nvtx:", 5) == 0) {
        const char *name = range + 5;
        if (!*name)
            return fail(why, len,
                        "capture_range \"%s\" names no NVTX range: use nvtx:NAME, NAME the "
                        "message of the range (e.g. nvtx:train_step)",
                        range);
        if (strlen(name) >= FL_CAPTURE_NAME_MAX)
            return fail(why, len,
                        "capture_range \"%.64s...\" is too long: an NVTX name of at "
                        "most 255 bytes",
                        range);
        out->trigger = FL_CAPTURE_NVTX;
        snprintf(out->nvtx_name, sizeof out->nvtx_name, "%s", name);
    } else {
        return fail(why, len,
                    "capture_range \"%s\" is not a trigger: use cudaProfilerApi (between "
                    "cudaProfilerStart and cudaProfilerStop) or nvtx:NAME (inside the NVTX "
                    "ranges named NAME)",
                    range);
    }
    if (end && *end && out->trigger == FL_CAPTURE_ALWAYS)
        return fail(why, len,
                    "capture_range_end \"%s\" needs capture_range: give cudaProfilerApi or "
                    "nvtx:NAME too",
                    end);
    if (parse_end(end, out, why, len) < 0)
        return -1;
    if (delay_ms < 0 || duration_ms < 0) {
        snprintf(why, len, "capture_%s_ms = %d is negative: use 0 (none) or milliseconds",
                 delay_ms < 0 ? "delay" : "duration", delay_ms < 0 ? delay_ms : duration_ms);
        return -1;
    }
    out->delay_ns = (uint64_t)delay_ms * 1000000ull;
    out->duration_ns = (uint64_t)duration_ms * 1000000ull;
    out->timed = delay_ms > 0 || duration_ms > 0;
    return 0;
}

gp_status fl_capture_check(const char *range, const char *end, gp_error *err)
{
    fl_capture_spec s;
    char why[sizeof err->message];
    if (fl_capture_parse(range, end, 0, 0, &s, why, sizeof why) == 0) {
        gp_error_clear(err);
        return GP_OK;
    }
    return gp_error_set(err, GP_ERR_INVALID_ARG, "%s", why);
}

bool fl_capture_wanted(const fl_capture_spec *s)
{
    return s->trigger != FL_CAPTURE_ALWAYS || s->timed;
}

/* ------------------------------------------------------------ the gate */

void fl_capture_install(const fl_capture_spec *s, uint64_t origin_ns)
{
    pthread_mutex_lock(&mu);
    free(wins);
    wins = NULL;
    n_wins = cap_wins = 0;
    closed = 0;
    nvtx_thread = NULL;
    memset(&counts, 0, sizeof counts);
    for (int k = 0; k < FL_CAPTURE_ROW_KINDS; k++)
        atomic_store(&left_out[k], 0);
    spec = *s;
    t_lo_ns = origin_ns + s->delay_ns;
    t_hi_ns = s->duration_ns ? t_lo_ns + s->duration_ns : UINT64_MAX;
    timed_written = false;
    atomic_store(&installed, fl_capture_wanted(s));
    pthread_mutex_unlock(&mu);
}

void fl_capture_remove(void)
{
    pthread_mutex_lock(&mu);
    atomic_store(&installed, false);
    free(wins);
    wins = NULL;
    n_wins = cap_wins = 0;
    pthread_mutex_unlock(&mu);
}

bool fl_capture_active(void)
{
    return atomic_load(&installed);
}

/* Under mu. */
static window *open_window(uint32_t corr_lo)
{
    if (n_wins && wins[n_wins - 1].open)
        return NULL;
    if (spec.max_windows && closed >= spec.max_windows)
        return NULL;
    if (n_wins == cap_wins) {
        size_t cap = cap_wins ? cap_wins * 2 : 16;
        window *w = cap <= FL_CAPTURE_MAX_WINDOWS ? realloc(wins, cap * sizeof *w) : NULL;
        if (!w) {
            counts.windows_refused++;
            return NULL;
        }
        wins = w;
        cap_wins = cap;
    }
    window *w = &wins[n_wins++];
    *w = (window){.start_ns = gp_now_wall_ns(), .corr_lo = corr_lo, .open = true};
    counts.windows++;
    return w;
}

/* Under mu: the open window, or NULL. */
static window *open_one(void)
{
    return n_wins && wins[n_wins - 1].open ? &wins[n_wins - 1] : NULL;
}

static void close_window(window *w, uint32_t corr_hi)
{
    w->open = false;
    w->end_ns = gp_now_wall_ns();
    w->corr_hi = corr_hi > w->corr_lo ? corr_hi : w->corr_lo + 1;
    closed++;
}

static void nvtx_edge(int edge, const char *name, uint64_t id, uint32_t corr)
{
    int depth = edge == FL_EDGE_NVTX_PUSH ? ++nvtx_depth : nvtx_depth;
    if (edge == FL_EDGE_NVTX_POP && nvtx_depth > 0)
        nvtx_depth--;
    bool named = name && strcmp(name, spec.nvtx_name) == 0;
    bool opens = named && (edge == FL_EDGE_NVTX_PUSH || edge == FL_EDGE_NVTX_START);
    bool may_close = edge == FL_EDGE_NVTX_POP || edge == FL_EDGE_NVTX_END;
    if (!opens && !may_close)
        return;
    pthread_mutex_lock(&mu);
    window *w = open_one();
    if (opens && !w) {
        w = open_window(corr);
        if (w) {
            nvtx_thread = edge == FL_EDGE_NVTX_PUSH ? (const void *)&nvtx_me : NULL;
            nvtx_depth_at_open = depth;
            nvtx_range_id = edge == FL_EDGE_NVTX_START ? id : 0;
        }
    } else if (w && edge == FL_EDGE_NVTX_POP && nvtx_thread == (const void *)&nvtx_me &&
               depth == nvtx_depth_at_open) {
        close_window(w, corr + 1); /* corr: the last id seen inside */
    } else if (w && edge == FL_EDGE_NVTX_END && !nvtx_thread && id == nvtx_range_id) {
        close_window(w, corr + 1);
    }
    pthread_mutex_unlock(&mu);
}

void fl_capture_edge(int edge, const char *name, uint64_t id, uint32_t corr)
{
    if (!atomic_load_explicit(&installed, memory_order_acquire))
        return;
    if (spec.trigger == FL_CAPTURE_NVTX && edge >= FL_EDGE_NVTX_PUSH) {
        nvtx_edge(edge, name, id, corr);
        return;
    }
    if (spec.trigger != FL_CAPTURE_PROFILER_API ||
        (edge != FL_EDGE_PROFILER_START && edge != FL_EDGE_PROFILER_STOP))
        return;
    pthread_mutex_lock(&mu);
    window *w = open_one();
    if (edge == FL_EDGE_PROFILER_START && !w)
        open_window(corr);
    else if (edge == FL_EDGE_PROFILER_STOP && w)
        close_window(w, corr);
    pthread_mutex_unlock(&mu);
}

/* ------------------------------------------------------- the writer's */

void fl_capture_lock(void)
{
    pthread_mutex_lock(&mu);
}

void fl_capture_unlock(void)
{
    pthread_mutex_unlock(&mu);
}

static bool in_window(const window *w, uint32_t corr, uint64_t t_ns)
{
    if (corr)
        return corr > w->corr_lo && (w->open || corr < w->corr_hi);
    return t_ns >= w->start_ns && (w->open || t_ns <= w->end_ns);
}

bool fl_capture_keeps(uint32_t corr, uint64_t t_ns)
{
    if (!atomic_load_explicit(&installed, memory_order_relaxed))
        return true;
    if (spec.timed && (t_ns < t_lo_ns || t_ns >= t_hi_ns))
        return false;
    if (spec.trigger == FL_CAPTURE_ALWAYS)
        return true;
    /* The last window opened at or before the row: they open in order of
     * both time and id. */
    size_t lo = 0, hi = n_wins;
    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;
        bool before = corr ? wins[mid].corr_lo < corr : wins[mid].start_ns <= t_ns;
        if (before)
            lo = mid + 1;
        else
            hi = mid;
    }
    return lo > 0 && in_window(&wins[lo - 1], corr, t_ns);
}

static const char *trigger_name(void)
{
    return spec.trigger == FL_CAPTURE_PROFILER_API ? "cudaProfilerApi"
           : spec.trigger == FL_CAPTURE_NVTX       ? "nvtx"
                                                   : "time";
}

/* The timed window, once it has ended (final: the session ended). */
static void write_timed(fl_buf *b, const fl_ident *id, bool final, uint64_t end_ns)
{
    if (timed_written || !spec.timed || spec.trigger != FL_CAPTURE_ALWAYS)
        return;
    uint64_t now = final ? end_ns : gp_now_wall_ns();
    bool ended = t_hi_ns != UINT64_MAX && now >= t_hi_ns;
    if ((!ended && !final) || t_lo_ns > now)
        return; /* still open, or never opened: the session ended before the delay */
    fl_capture_window_rec r = {.index = 0,
                               .trigger = "time",
                               .start_ns = t_lo_ns,
                               .end_ns = ended ? t_hi_ns : now,
                               .open_at_shutdown = !ended && t_hi_ns != UINT64_MAX};
    fl_rec_capture_window(b, id, &r);
    timed_written = true;
}

void fl_capture_write(fl_buf *b, const fl_ident *id, bool final, uint64_t end_ns)
{
    if (!atomic_load(&installed))
        return;
    pthread_mutex_lock(&mu);
    write_timed(b, id, final, end_ns);
    for (size_t i = 0; i < n_wins; i++) {
        window *w = &wins[i];
        if (w->written || (w->open && !final))
            continue;
        fl_capture_window_rec r = {.index = (uint32_t)i,
                                   .trigger = trigger_name(),
                                   .name = spec.trigger == FL_CAPTURE_NVTX ? spec.nvtx_name : NULL,
                                   .start_ns = w->start_ns,
                                   .end_ns = w->open ? end_ns : w->end_ns,
                                   .open_at_shutdown = w->open};
        fl_rec_capture_window(b, id, &r);
        w->written = true;
    }
    pthread_mutex_unlock(&mu);
}

void fl_capture_counts_get(fl_capture_counts *out)
{
    pthread_mutex_lock(&mu);
    *out = counts;
    /* The timed window alone: opened once its delay has passed. */
    if (spec.timed && spec.trigger == FL_CAPTURE_ALWAYS)
        out->windows = gp_now_wall_ns() >= t_lo_ns ? 1 : 0;
    snprintf(out->trigger, sizeof out->trigger, "%s%s%s", trigger_name(),
             spec.trigger == FL_CAPTURE_NVTX ? ":" : "",
             spec.trigger == FL_CAPTURE_NVTX ? spec.nvtx_name : "");
    pthread_mutex_unlock(&mu);
    out->rows_left_out = 0;
    for (int k = 0; k < FL_CAPTURE_ROW_KINDS; k++) {
        out->left_out[k] = atomic_load(&left_out[k]);
        out->rows_left_out += out->left_out[k];
    }
}

void fl_capture_count_left_out(int kind, uint64_t n)
{
    if (kind >= 0 && kind < FL_CAPTURE_ROW_KINDS)
        atomic_fetch_add(&left_out[kind], n);
}
