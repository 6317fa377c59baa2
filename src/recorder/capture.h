/*
 * recorder/capture.h - capture windows: which stretches of a session keep
 * their trace rows (docs/concepts.md "Capture windows").
 *
 * Promises: a spec is parsed strictly, with a message naming the option
 * and the fix; at most one window is open at a time; the edges come from
 * the application's threads (the plugin's callbacks, through
 * fl_capture_edge) and cost a compare and, at a window's edge, one short
 * lock; the writer thread asks which rows to keep and writes each window
 * once, as a capture_window record, when it has closed (or, still open,
 * at the session's end).  Without a window spec every row is kept.
 */
#ifndef GP_RECORDER_CAPTURE_H
#define GP_RECORDER_CAPTURE_H

#include "../util/buf.h"
#include "../wire/records.h"

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

enum {
    FL_CAPTURE_ALWAYS = 0,   /* no trigger: the whole session (or the timed window) */
    FL_CAPTURE_PROFILER_API, /* between cuProfilerStart and cuProfilerStop */
    FL_CAPTURE_NVTX          /* inside the NVTX ranges named nvtx_name */
};

#define FL_CAPTURE_NAME_MAX 256
/* Windows remembered for the rows still to come; later ones are not
 * opened (counted in windows_refused). */
#define FL_CAPTURE_MAX_WINDOWS 65536u

typedef struct fl_capture_spec {
    int trigger;                         /* FL_CAPTURE_* */
    char nvtx_name[FL_CAPTURE_NAME_MAX]; /* FL_CAPTURE_NVTX: the range's name */
    uint32_t max_windows;                /* 0: every window (repeat); 1: stop; N: repeat:N */
    uint64_t delay_ns;                   /* the timed window: from the origin ... */
    uint64_t duration_ns;                /* ... this long (0: to the end) */
    bool timed;                          /* delay or duration given */
} fl_capture_spec;

/* range: "" (none), "cudaProfilerApi" or "nvtx:NAME" (any case for the
 * words); end: "" or "stop", "repeat", "repeat:N" (N >= 1); delay_ms and
 * duration_ms >= 0 (0: none).  0, or -1 with why naming the field. */
int fl_capture_parse(const char *range, const char *end, int delay_ms, int duration_ms,
                     fl_capture_spec *out, char *why, size_t len);
/* Whether spec asks for any window at all. */
bool fl_capture_wanted(const fl_capture_spec *spec);

/* The session's gate, installed at init (origin_ns: the wall clock the
 * timed window counts from; GPUFL_CAPTURE_ORIGIN_NS, which gpu-profile
 * sets to its command's start, else now) and removed at shutdown.  The
 * windows' list grows at their edges (a window that finds no memory is not
 * opened, counted in windows_refused). */
void fl_capture_install(const fl_capture_spec *spec, uint64_t origin_ns);
void fl_capture_remove(void);
bool fl_capture_active(void);

/* The plugin's edges (fl_trace_options.capture_edge's signature). */
void fl_capture_edge(int edge, const char *name, uint64_t id, uint32_t corr);

/* Writer thread: whether a row of correlation id corr (0: none) starting
 * at t_ns is kept, under fl_capture_lock / fl_capture_unlock around a
 * batch. */
void fl_capture_lock(void);
void fl_capture_unlock(void);
bool fl_capture_keeps(uint32_t corr, uint64_t t_ns);

/* Writer thread: the windows not written yet that have closed (final:
 * every one, an open one with open_at_shutdown ending at end_ns), as
 * capture_window records into b. */
void fl_capture_write(fl_buf *b, const fl_ident *id, bool final, uint64_t end_ns);

/* The kinds of trace rows the gate drops, counted apart so that the
 * session says what it did not write (capture_capabilities). */
enum {
    FL_CAPTURE_ROW_KERNEL = 0,
    FL_CAPTURE_ROW_MEMCPY,
    FL_CAPTURE_ROW_MEMSET,
    FL_CAPTURE_ROW_SYNC,
    FL_CAPTURE_ROW_GRAPH,
    FL_CAPTURE_ROW_KINDS
};

/* The counts for capture_capabilities and the debug line. */
typedef struct fl_capture_counts {
    uint32_t windows;                        /* opened */
    uint32_t windows_refused;                /* over FL_CAPTURE_MAX_WINDOWS */
    uint64_t rows_left_out;                  /* trace rows outside every window */
    uint64_t left_out[FL_CAPTURE_ROW_KINDS]; /* the same by kind (FL_CAPTURE_ROW_*) */
    char trigger[16 + FL_CAPTURE_NAME_MAX];  /* "cudaProfilerApi", "nvtx:NAME", "time" */
} fl_capture_counts;
void fl_capture_counts_get(fl_capture_counts *out);
/* n rows of kind (FL_CAPTURE_ROW_*) left out by the gate. */
void fl_capture_count_left_out(int kind, uint64_t n);

#endif /* GP_RECORDER_CAPTURE_H */
