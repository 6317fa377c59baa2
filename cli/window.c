/*
 * window.c - the capture window of a run with CMD: `--delay S` and
 * `--duration S` (sample and trace only from S after CMD's start, for S),
 * `--capture-range` / `--capture-range-end` (trace only between
 * cudaProfilerStart/Stop or inside NVTX ranges, nsys's spelling).
 *
 * Promises: CMD itself is never touched - no signal, no change to its
 * streams or its exit status; the window reaches CMD's CUDA processes as
 * the GPUFL_CAPTURE_* variables their injected recorder reads (its
 * origin, GPUFL_CAPTURE_ORIGIN_NS, is CMD's start on the wall clock); the
 * device statistics leave out the samples before the window (as
 * --warmup does) and the sampling stops when it ends, from a thread that
 * only waits on a condition variable and never outlives the run.
 */
#include "cli.h"

#include <limits.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <time.h>

#define ORIGIN_VAR "GPUFL_CAPTURE_ORIGIN_NS"

/* Seconds as the recorder's milliseconds (at most INT_MAX: 24 days). */
static void put_ms(const char *name, double s, int *bad)
{
    char v[32];
    double ms = s * 1000.0 + 0.5;
    snprintf(v, sizeof v, "%d", ms >= (double)INT_MAX ? INT_MAX : (int)ms);
    if (setenv(name, v, 1) != 0)
        *bad = 1;
}

int cli_window_env(const cli_opts *o)
{
    int bad = 0;
    if (o->capture_range && setenv("GPUFL_CAPTURE_RANGE", o->capture_range, 1) != 0)
        bad = 1;
    if (o->capture_range_end && setenv("GPUFL_CAPTURE_RANGE_END", o->capture_range_end, 1) != 0)
        bad = 1;
    if (cli_timed_window(o)) {
        put_ms("GPUFL_CAPTURE_DELAY_MS", o->delay_s, &bad);
        put_ms("GPUFL_CAPTURE_DURATION_MS", o->duration_s, &bad);
        /* A place for the origin, written when CMD starts. */
        if (setenv(ORIGIN_VAR, "0", 1) != 0)
            bad = 1;
    }
    return bad ? -1 : 0;
}

void cli_window_origin(const cli_opts *o, char **env)
{
    if (!cli_timed_window(o) || !env)
        return;
    const size_t k = sizeof ORIGIN_VAR - 1;
    for (size_t i = 0; env[i]; i++) {
        if (strncmp(env[i], ORIGIN_VAR "=", k + 1) != 0)
            continue;
        char *v = malloc(k + 32);
        if (!v)
            return; /* the recorder's own start stays the origin */
        snprintf(v, k + 32, ORIGIN_VAR "=%llu", (unsigned long long)gp_now_wall_ns());
        free(env[i]);
        env[i] = v;
        return;
    }
}

static void *window_main(void *arg)
{
    cli_window *w = arg;
    pthread_mutex_lock(&w->mu);
    while (!w->quit) {
        uint64_t now = gp_now_mono_ns();
        if (now >= w->end_mono_ns)
            break;
        uint64_t at = w->end_mono_ns;
        struct timespec ts = {(time_t)(at / 1000000000ull), (long)(at % 1000000000ull)};
        pthread_cond_timedwait(&w->cv, &w->mu, &ts);
    }
    int quit = w->quit;
    pthread_mutex_unlock(&w->mu);
    if (!quit) {
        gp_monitor_stop(w->mon, NULL); /* the window's end: the statistics stop here */
        w->stopped = 1;
    }
    return NULL;
}

void cli_window_start(cli_window *w, const cli_opts *o, gp_monitor *mon)
{
    memset(w, 0, sizeof *w);
    if (!cli_timed_window(o) || o->duration_s <= 0)
        return;
    w->mon = mon;
    w->end_mono_ns = gp_now_mono_ns() + (uint64_t)((o->delay_s + o->duration_s) * 1e9);
    gp_cond_init_mono(&w->cv);
    pthread_mutex_init(&w->mu, NULL);
    /* No thread: the statistics run to CMD's end, which the report says. */
    w->started = pthread_create(&w->th, NULL, window_main, w) == 0;
    if (!w->started) {
        pthread_cond_destroy(&w->cv);
        pthread_mutex_destroy(&w->mu);
    }
}

int cli_window_finish(cli_window *w)
{
    if (!w->started)
        return 0;
    pthread_mutex_lock(&w->mu);
    w->quit = 1;
    pthread_cond_signal(&w->cv);
    pthread_mutex_unlock(&w->mu);
    pthread_join(w->th, NULL);
    pthread_cond_destroy(&w->cv);
    pthread_mutex_destroy(&w->mu);
    w->started = 0;
    return w->stopped;
}

/* "the first window" / "every window" / "the first N windows". */
static void end_words(const cli_opts *o, char *buf, size_t len)
{
    const char *e = o->capture_range_end;
    if (!e || strcasecmp(e, "stop") == 0)
        snprintf(buf, len, "the first window");
    else if (strcasecmp(e, "repeat") == 0)
        snprintf(buf, len, "every window");
    else
        snprintf(buf, len, "the first %s windows", e + 7);
}

void cli_window_text(const cli_opts *o, FILE *f)
{
    if (cli_timed_window(o)) {
        char len[64] = "to its end";
        if (o->duration_s > 0)
            snprintf(len, sizeof len, "for %.3f s", o->duration_s);
        cli_fsay(f,
                 "capture window: from %.3f s after the command's start, %s (device statistics "
                 "and trace rows inside it only; the command ran on untouched)",
                 o->delay_s, len);
    }
    if (o->capture_range) {
        char ends[64];
        end_words(o, ends, sizeof ends);
        cli_fsay(f,
                 "capture range: trace rows only inside %s (%s; gpu-profile report lists "
                 "the windows)",
                 o->capture_range, ends);
    }
}

void cli_window_json(const cli_opts *o, fl_buf *b)
{
    fl_buf_puts(b, ",\"capture\":");
    if (!cli_timed_window(o) && !o->capture_range) {
        fl_buf_puts(b, "null");
        return;
    }
    fl_buf_puts(b, "{\"delay_s\":");
    if (cli_timed_window(o))
        fl_buf_double(b, o->delay_s);
    else
        fl_buf_puts(b, "null");
    fl_buf_puts(b, ",\"duration_s\":");
    if (cli_timed_window(o) && o->duration_s > 0)
        fl_buf_double(b, o->duration_s);
    else
        fl_buf_puts(b, "null");
    fl_buf_puts(b, ",\"capture_range\":");
    fl_buf_str(b, o->capture_range);
    fl_buf_puts(b, ",\"capture_range_end\":");
    fl_buf_str(b, o->capture_range ? (o->capture_range_end ? o->capture_range_end : "stop") : NULL);
    fl_buf_puts(b, "}");
}
