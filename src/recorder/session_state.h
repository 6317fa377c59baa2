/*
 * recorder/session_state.h - the session as the recorder's session files
 * share it (session.c, writer.c, capabilities.c, trace_engine.c): one
 * struct, so each file reads the same fields under the same rules.  Which
 * thread or lock guards a field is written beside it ("mu" is writer.c's
 * g_mu); the locks themselves stay static in the file that takes them
 * (writer.h says why).
 */
#ifndef GP_RECORDER_SESSION_STATE_H
#define GP_RECORDER_SESSION_STATE_H

#include "../abi/trace_abi.h"
#include "../util/buf.h"
#include "../wire/records.h"
#include "config.h"
#include "host.h"
#include "run_ident.h"
#include "trace_sink.h"
#include "gpu_profile.h"

#include <limits.h>
#include <pthread.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define MAX_CAPS 24
#define MAX_CUDA_DEVICES 16

/* A device whose sampling failed (the monitor does not read it again). */
typedef struct fl_device_failure {
    bool failed;
    gp_status status;
    uint64_t t_ns; /* wall clock */
    char message[GP_ERROR_MESSAGE_MAX];
} fl_device_failure;

/* Rows queued by the sampler thread for the writer: the writer swaps a
 * whole queue out under the lock and gives its old one back, emptied. */
typedef struct rowq {
    void *p;
    size_t n, cap;
} rowq;

/* A channel file's state (files.c). */
typedef enum fl_file_state {
    FL_FILE_OK = 0,
    FL_FILE_TORN, /* a cut line could not be removed: the next write ends it first */
    FL_FILE_GONE, /* removed while recording: fd is the file made in its place, which
                     gets the closing records only */
    FL_FILE_DEAD, /* no file: everything for it is lost (counted) */
} fl_file_state;

/* Why lines were lost (fl_loss's first index). */
enum { FL_LOSS_WRITE = 0, FL_LOSS_REMOVED = 1, FL_LOSS_MAX_DISK = 2, FL_LOSS_CAUSES = 3 };

/* What the session's files lost (files.c): lines and batch rows per record
 * type and cause, and the first write error. */
typedef struct fl_loss {
    uint64_t lines[FL_LOSS_CAUSES][FL_T_COUNT];
    uint64_t rows[FL_LOSS_CAUSES][FL_T_COUNT];
    uint64_t lines_total, rows_total;
    int first_errno;   /* 0: no write failed */
    int first_channel; /* of first_errno */
    bool removed;      /* a channel file (or the directory) was removed */
    uint64_t removed_ns;
} fl_loss;

/* Bounded long runs (rotate.c), the writer thread's (and shutdown's): the
 * limits (0: off), each channel's active window (bytes written, its first
 * write on the monotonic clock, the number the next published window
 * takes), and what was published. */
typedef struct fl_roll {
    uint64_t size_bytes, interval_ms, max_disk_bytes;
    uint64_t win_bytes[FL_CH_COUNT];
    uint64_t win_first_ms[FL_CH_COUNT];
    unsigned next_win[FL_CH_COUNT];
    uint64_t published_bytes; /* published windows and their sidecars, as on disk */
    uint64_t windows, by_size, by_time, not_compressed;
    bool disk_full; /* max_disk reached: detail lines are counted, not written */
} fl_roll;

typedef struct session {
    fl_config cfg;
    uint32_t gen;
    char id[37];
    char dir[PATH_MAX];
    char hostname[256];
    char ip[64];
    fl_ident ident;
    fl_run_ident run; /* job_start's place in the run (run_ident.c); run_id in run_id */
    char run_id[FL_RUN_ID_MAX + 1];

    /* The files (files.c): the writer thread's, and init's and shutdown's
     * while it does not run. */
    int base_fd, dir_fd; /* log_path and the session directory, checked at open */
    /* The channels written: FL_CH_WRITTEN, and the sass channel too when
     * the disassembler runs (set at init, before the writer starts). */
    int n_ch;
    int fd[FL_CH_COUNT];
    fl_file_state fstate[FL_CH_COUNT];
    fl_buf redo[FL_CH_COUNT]; /* dictionary lines a failed write lost, written first next */
    fl_loss loss;
    fl_roll roll;
    bool closing;            /* the closing records are being written */
    fl_buf job_start_line;   /* for a file made again after a removal */
    fl_buf out[FL_CH_COUNT]; /* writer thread (and init/shutdown when it is not running) */

    /* Devices (identity fixed at init). */
    gp_monitor *mon;
    bool mon_borrowed; /* the caller's (the CLI's): never stopped or destroyed here */
    size_t n_dev;
    fl_device_live *live;        /* identity + latest sample, under mu */
    fl_device_failure *failures; /* per device, under mu */
    fl_device_static *statics;
    bool sampling; /* the sampler thread runs */

    /* Shared with the sampler thread and the API, under mu. */
    fl_host host; /* sampler thread after init */
    fl_host_sample host_latest;
    rowq dev_q;                   /* fl_device_row */
    rowq host_q;                  /* fl_host_row */
    uint64_t metric_rows_dropped; /* queue full or out of memory */
    fl_buf sys_q;                 /* system_start / system_stop lines */
    fl_buf op_q;                  /* op_dict lines (gpufl_push_external_op), the device channel's */
    bool first_round;
    uint64_t flush_req, flush_done;
    bool stop;

    /* Writer thread only. */
    pthread_t writer;
    bool writer_started;
    fl_scope_event *scope_rows;
    size_t scope_cap;
    fl_dict_entry *names;
    size_t names_cap;
    rowq dev_w, host_w; /* the queues taken out, reused as the next ones */
    uint64_t batch_scope, batch_dev, batch_host;
    uint32_t dev_cols_seen; /* device_metric_batch columns that have had a value */
    uint64_t rows_scope, rows_dev, rows_host;

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
    /* The disassembler the plugin runs (disasm_tool.c; "": none), or why
     * there is none. */
    char disasm_path[PATH_MAX];
    char disasm_why[768];
    uint64_t last_trace_flush_ns; /* writer thread */
    fl_gpu_limits cuda_limits[MAX_CUDA_DEVICES];
    fl_device_static cuda_static[MAX_CUDA_DEVICES];
    size_t n_cuda;
} session;

#endif /* GP_RECORDER_SESSION_STATE_H */
