/*
 * reader/read.h - reading GPUFlight session logs back, streaming
 * (reader/read.c and the files of reader/read_int.h).
 *
 * Finds a session under a path (a log directory, a session directory, or
 * the older flat layout <prefix>.<channel>[.<N>].log[.gz]), reads every
 * channel file - the windows <channel>.<N>.log[.gz] in window order, the
 * plain <channel>.log, a live or crashed GPUFlight session's
 * .tmp/<channel>.log (reader/layout.c) - line by line, checks each
 * window's sidecar, and hands each record to callbacks:
 * columnar batches already split into cells (a specialised scanner: the
 * batches are nearly all of a trace's bytes), every other record as a
 * parsed JSON object (jansson).  Memory is one line and one batch at a
 * time, whatever the file's size.  Bad input never stops the read: a torn
 * last line, a line that is not JSON, an unknown type, a batch whose rows
 * do not match its columns, a broken gzip stream - each is one warning
 * with file and line, and the rest is still read.
 *
 * Not exported; the report (report/report.c), the exports and the CLI use it.
 */
#ifndef FL_READ_H
#define FL_READ_H

#include "../wire/vocab.h"
#include "cell.h"
#include "gpu_profile.h"

#include <jansson.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* The value as a double (null: NaN) / as an int64 (null: def; real:
 * truncated; uint above INT64_MAX: INT64_MAX). */
double fl_cell_real(const fl_cell *c);
int64_t fl_cell_int(const fl_cell *c, int64_t def);

/* A columnar batch (`*_batch` records): rows x ncols cells, row-major.
 * Valid only during the callback. */
typedef struct fl_batch {
    const char *type; /* "kernel_event_batch", ... */
    fl_type type_id;  /* FL_T_UNKNOWN: a batch type wire/vocab.h does not know */
    int channel;      /* FL_CH_*: the file it came from */
    uint64_t batch_id;
    uint64_t base_time_ns;
    size_t ncols;
    const char *const *cols; /* column names */
    size_t nrows;
    const fl_cell *cells; /* nrows * ncols */
    /* Every cell is an FL_CELL_INT (the writer's batches: a consumer may
     * read cells[i].i without looking at the kind); false: not known. */
    bool all_ints;
    /* The envelope had a base_time_ns (absent: base_time_ns is 0 and
     * unknown, not the epoch). */
    bool has_base;
    /* host_metric_batch only: the envelope's hostname (NULL if absent). */
    const char *hostname;
    const char *file; /* for messages */
    uint64_t line;
    /* Known types: the index in cols of each of the type's columns in
     * wire/vocab.h's order (FL_COL_<BATCH>_<COLUMN>), -1 when the batch
     * does not have it; read through fl_batch_colid. */
    int16_t col[FL_MAX_COLS];
} fl_batch;

/* Sets type_id and col from type, cols and ncols (the reader does it for
 * every batch it gives; code that builds a batch itself calls it). */
void fl_batch_map_columns(fl_batch *b);
/* The index of column name, -1 if the batch has none. */
int fl_batch_col(const fl_batch *b, const char *name);
/* The index of a batch's dt_ns (duration false) or duration_ns column,
 * whatever its type; -1 if it has none. */
int fl_batch_time_col(const fl_batch *b, bool duration);
/* The index of the type's column id (FL_COL_<BATCH>_*: of b's own type),
 * -1 if the batch has none. */
static inline int fl_batch_colid(const fl_batch *b, int id)
{
    return id >= 0 && id < FL_MAX_COLS ? b->col[id] : -1;
}
/* Cell (row, col); a NULL-kind cell when col < 0. */
const fl_cell *fl_batch_cell(const fl_batch *b, size_t row, int col);

/* One member of a record as jansson reads it (JSON_REJECT_DUPLICATES; an
 * integer beyond int64 makes every number of its record a real). */
typedef enum fl_jkind {
    FL_J_ABSENT = 0, /* no such key */
    FL_J_NULL,
    FL_J_TRUE,
    FL_J_FALSE,
    FL_J_INT,    /* i */
    FL_J_REAL,   /* d */
    FL_J_STRING, /* s: unescaped, NUL-terminated (JSON has no \u0000) */
    FL_J_OTHER   /* an object or an array */
} fl_jkind;
typedef struct fl_jval {
    uint8_t kind; /* fl_jkind */
    union {
        int64_t i;
        double d;
        const char *s;
    };
} fl_jval;
/* A member as an fl_jval (v NULL: FL_J_ABSENT); s borrowed from v. */
fl_jval fl_jval_of(const json_t *v);

/* The members of a kernel_detail its readers use (the report's model:
 * report/model.c), in fl_detail.v by these indexes. */
typedef enum fl_detail_key {
    FL_KD_CORR_ID,
    FL_KD_GRID,
    FL_KD_BLOCK,
    FL_KD_STATIC_SHARED,
    FL_KD_OCCUPANCY,
    FL_KD_LIMITING_RESOURCE,
    FL_KD_USER_SCOPE,
    FL_KD_STACK_TRACE,
    FL_KD_COUNT
} fl_detail_key;
typedef struct fl_detail {
    fl_jval v[FL_KD_COUNT];
} fl_detail;
/* A kernel_detail record's members, as the detail callback gets them
 * (strings borrowed from rec). */
void fl_detail_of_json(const json_t *rec, fl_detail *d);

typedef struct fl_read_cb {
    void *user;
    /* Every record that is not a batch (job_start, shutdown,
     * dictionary_update, capture_capabilities, kernel_detail unless
     * detail is set, memset_event, system_start/stop, and types this
     * reader does not know: t FL_T_UNKNOWN), parsed; borrowed for the
     * call. */
    void (*record)(void *user, int channel, fl_type t, const char *type, json_t *rec);
    /* When set, every kernel_detail record (of the session read) comes
     * here instead, its members read straight from the line - the
     * writer's one per launch, at the batches' speed - or through jansson
     * when the line is anything else; the same members either way (what
     * fl_detail_of_json gives), borrowed for the call. */
    void (*detail)(void *user, int channel, const fl_detail *d);
    void (*batch)(void *user, const fl_batch *b);
    /* A problem with the input; the read goes on. */
    void (*warning)(void *user, const char *file, uint64_t line, const char *msg);
    /* Optional, asked after every line: NULL to go on, else why the read
     * must stop (the consumer is out of memory or past its limit): then
     * fl_read_session stops and fails with GP_ERR_NO_MEMORY, its message
     * naming the file and line, then why.  (With
     * fl_read_opts.stop_on_signal, a stop signal - SIGINT, SIGTERM,
     * SIGHUP, SIGQUIT - that the calling thread blocks and that is pending
     * also stops the read, within 256 KiB of input, and it fails with
     * GP_ERR_IO naming the signal; the signal stays pending.) */
    const char *(*stop)(void *user);
} fl_read_cb;

typedef struct fl_read_opts {
    const char *session_id; /* NULL or "": the latest session */
    /* NULL or "": any app.  Else only a session whose job_start "app" is
     * this: in a log directory the latest such session directory (its app
     * read from the first line of its channel files) or flat prefix, in a
     * flat layout the last job_start of that app; a session directory
     * given directly must be of that app.  Otherwise the read fails. */
    const char *app;
    /* Records go to every channel (job_start, dictionary_update,
     * capture_capabilities, shutdown): give each only once, from the first
     * channel file that has it (device, scope, system).  Default true. */
    bool dedupe_common;
    /* Each file is read up to this many lines and (decompressed) bytes: the
     * rest of it is skipped with a warning naming the file and the cap
     * (res.capped_files), the lines before are kept.  0: the environment's
     * GPU_PROFILE_MAX_FILE_LINES / GPU_PROFILE_MAX_FILE_BYTES, else 2^26
     * (67108864) lines and 16 GiB. */
    uint64_t max_file_lines, max_file_bytes;
    /* The session's read stops (a warning; the rest of the session is not
     * read, res.session_capped) past this many bytes read (decompressed)
     * over all its files, or once its gzip streams have given more than 64
     * MiB and more than max_gzip_ratio times the compressed bytes they took
     * (gzip bombs spread over windows).  0: the environment's
     * GPU_PROFILE_MAX_SESSION_BYTES / GPU_PROFILE_MAX_GZIP_RATIO, else 64
     * GiB and 200. */
    uint64_t max_session_bytes, max_gzip_ratio;
    /* A stop signal (SIGINT, SIGTERM, SIGHUP, SIGQUIT) pending for the
     * caller, which blocks it, ends the read (fl_read_cb.stop says how).
     * Default true; false for a caller that takes its signals itself
     * (signalfd) and reads on after them. */
    bool stop_on_signal;
    /* GPUFlight's analyzer's light read (load_all_rotated=False): per
     * channel one file only - the plain file (the session root's, else
     * .tmp/'s), else the flat layout's window 0, else the lowest window.
     * Default false: every file. */
    bool one_file_per_channel;
} fl_read_opts;

void fl_read_opts_init(fl_read_opts *o);

/* Variable name (one of our GPU_PROFILE_MAX_* bounds) as a count: unset
 * or "" -> *out = 0 (the default); a whole number from 1, digits only
 * (gp_parse_count) -> it; anything else ("abc", "-1", "0", "4M", " 100")
 * -> GP_ERR_INVALID_ARG, the message naming the variable, its value and
 * the fix, so that a typo is never read as the default. */
gp_status fl_env_count(const char *name, uint64_t *out, gp_error *err);
/* The reader's variables (GPU_PROFILE_MAX_FILE_LINES, _BYTES) checked as
 * fl_env_count does; fl_read_session fails the same way. */
gp_status fl_read_env_check(gp_error *err);

/* What the read found. */
typedef struct fl_read_result {
    char session_id[64];     /* the session read ("" if none was found) */
    char session_dir[4096];  /* its directory, or the flat prefix */
    bool flat;               /* the older flat layout */
    bool crashed;            /* no shutdown record on any channel */
    uint64_t lines;          /* lines read */
    uint64_t bytes;          /* uncompressed bytes read */
    uint64_t bad_lines;      /* not JSON / torn / not an object */
    uint64_t bad_records;    /* parsed, but unusable (missing fields, rows not matching) */
    uint64_t other_session;  /* records of another session_id, dropped */
    uint64_t unknown_types;  /* records of a type this reader does not know (still given;
                                one warning per type) */
    uint64_t details_direct; /* kernel_detail lines read without jansson (the detail
                                callback's direct path) */
    uint64_t files;          /* files read */
    uint64_t gz_errors;      /* gzip streams that ended in an error */
    /* Windows whose sidecar (.gpufl-window.<channel>.<N>.json) is not valid
     * or does not match its payload file's size or CRC-32 (a warning each;
     * the window is read all the same). */
    uint64_t bad_windows;
    /* Files read from the session's .tmp/: GPUFlight had not published
     * them, so the session was still recording or crashed. */
    uint64_t tmp_files;
    /* Files not read to their end: past a cap of fl_read_opts (a warning
     * each). */
    uint64_t capped_files;
    /* Entries by a channel file's name that could not be opened (a
     * dangling symlink, a symlink loop, a directory, a FIFO, no
     * permission: a warning each, naming it and why). */
    uint64_t unreadable_files;
    /* Windows GPUFlight lost in transport: its marker
     * .gpufl-transport-loss.<channel>.<N>.json in the session directory
     * (a warning each); their events are missing. */
    uint64_t lost_windows;
    /* The session's budget (fl_read_opts.max_session_bytes, max_gzip_ratio)
     * was spent: a warning, and the files after the one it ended in were
     * not read; session_capped_why: that warning, after its file:line. */
    bool session_capped;
    char session_capped_why[640];
} fl_read_result;

/*
 * Reads the session at path.  Returns GP_OK when a session was found and
 * read (warnings or not: see res to tell a clean read from a partial one;
 * err is cleared).  Else err says why, naming the path: GP_ERR_IO when no
 * session could be found there, none of its files opened (a file that
 * is not a regular file - a FIFO, a device, a socket - is not opened),
 * its files had lines and not one of them a record (random bytes), or a
 * stop signal ended the read (fl_read_cb.stop says which), GP_ERR_INVALID_ARG for a NULL or empty
 * path, GP_ERR_NO_MEMORY (also when cb->stop stopped the read).  The session: with session_id, the
 * one of that id; else the session directory path itself, or in a log directory the most recently
 * modified session directory, or in a flat layout the last job_start - each of opts->app when set.
 * err may be NULL.
 */
gp_status fl_read_session(const char *path, const fl_read_opts *opts, const fl_read_cb *cb,
                          fl_read_result *res, gp_error *err);

/*
 * GPUFlight's analyzer names a session by a log directory and a log_prefix
 * (the app name, or its files' prefix).  With log_prefix NULL or "" this is
 * fl_read_session(log_dir, ...).  Else the first that matches is read:
 *   (a) flat files <log_dir>/<log_prefix>.<channel>.log: that flat prefix;
 *   (b) <log_dir>/<log_prefix> is a directory (an app's default log_path is
 *       its app_name): that path, as fl_read_session reads any path;
 *   (c) log_dir itself with opts->app = log_prefix: the latest session of
 *       that app.
 * The statuses are fl_read_session's; when none matches, GP_ERR_IO with
 * err naming log_dir, log_prefix and the three places looked at.
 */
gp_status fl_read_session_prefixed(const char *log_dir, const char *log_prefix,
                                   const fl_read_opts *opts, const fl_read_cb *cb,
                                   fl_read_result *res, gp_error *err);

/* The sessions of a run (reader/list.c).  The session directories at
 * path: path itself when it is one, else its subdirectories that are
 * (by name), into *dirs (malloc'd; fl_read_free_list); none found is
 * GP_OK with *n 0.  GP_ERR_IO naming path when it cannot be read. */
gp_status fl_read_list_sessions(const char *path, char ***dirs, size_t *n, gp_error *err);
void fl_read_free_list(char **dirs, size_t n);
/* When a session directory was last written: the latest mtime of it and
 * its channel files (what picks "the latest session"); 0: not one. */
int64_t fl_read_session_mtime(const char *session_dir);
/* A session directory's job_start (the first line of its first channel
 * file that has one), parsed; the caller's reference.  NULL: none. */
json_t *fl_read_job_start(const char *session_dir);

/* Parses one NDJSON line (no '\n') as the reader does: for the fuzz
 * target and the tests.  Calls cb like fl_read_session; returns 0 if the
 * line was a usable record. */
int fl_read_line(const char *line, size_t len, int channel, const char *want_session,
                 const fl_read_cb *cb, fl_read_result *res, const char *file, uint64_t lineno);

/* Parses text, NDJSON lines separated by '\n', through one reader as the
 * lines of one file (what a line's reading learns of the lines before,
 * such as reader/detail.c's template, carries on): for the fuzz target and
 * the tests.  Returns how many lines were not usable records. */
size_t fl_read_lines(const char *text, size_t len, int channel, const char *want_session,
                     const fl_read_cb *cb, fl_read_result *res, const char *file);

#endif /* FL_READ_H */
