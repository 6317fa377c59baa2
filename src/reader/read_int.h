/*
 * reader/read_int.h - what the reader's files share behind reader/read.h:
 * the state of one read and the steps each piece of a read takes, so that
 * each file holds one of them.  A session read (read.c) finds the session
 * (discover.c, over the names of layout.c), reads its files line by line
 * (files.c) and hands each line to the parser (line.c), which gives batch
 * lines to the batch scanner (batch.c, its rows: rows.c), kernel_detail
 * lines to theirs (detail.c) and the others to jansson; every part reports through the read's state
 * (state.c).  The JSON primitives are in scan.h.
 */
#ifndef FL_READER_READ_INT_H
#define FL_READER_READ_INT_H

#include "read.h"
#include "scan.h"
#include "gpu_profile.h"
#include "../util/text.h" /* gp_concat3 */

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* A longer line is skipped with a warning (and bounds the line buffer). */
#define RD_MAX_LINE ((size_t)256 << 20)

/* A record handed to Jansson holds at most this many values: its tree
 * costs about 40 to 100 bytes a value whatever their size, so a 100 MiB
 * line of "1,1,1,..." would take 2 GiB and half a minute to parse; below
 * the cap, about 100 MiB at most (docs/report.md, "Bounds").  The
 * writer's records hold a few hundred; a dictionary of a million names
 * would be a million of the report's keys. */
#define RD_MAX_RECORD_VALUES ((size_t)1 << 20)
/* Whether line has more than RD_MAX_RECORD_VALUES values (its commas
 * outside strings; only a line of over two bytes a value can): then it is
 * not given to Jansson (line.c: a warning; discover.c: not a first line). */
bool fl_rd_too_many_values(const char *line, size_t len);

/* ---------------------------------------- one read (state.c, line.c) */

/* One read: callbacks, counters, the session filter and the scratch
 * buffers reused from batch to batch. */
typedef struct rd {
    const fl_read_cb *cb;
    fl_read_result *res;
    const char *want; /* session filter; NULL: none */
    bool dedupe;
    bool saw_shutdown;
    const char *stop_why; /* cb->stop's answer: the read stops */
    uint64_t records;     /* lines that were usable records (fl_rd_handle_line 0) */
    const char *file;
    uint64_t line;
    int channel;
    fl_cell *cells;
    size_t cell_cap;
    bool any_kind;      /* the batch has a cell that is not an FL_CELL_INT */
    sbuf str;           /* a batch's type, session_id, hostname and column names */
    sbuf key;           /* an escaped key */
    struct rd_dtpl *dt; /* the kernel_detail lines' scan (detail.c) */
    size_t *col_off;
    const char **cols;
    size_t col_cap;
    uint64_t *set; /* dedupe: hashes of the common records' lines */
    size_t set_cap, set_n;
    /* Record types not in wire/vocab.h, each warned about once (up to
     * RD_MAX_UNKNOWN names; then one warning that says so). */
    char **unknown;
    size_t n_unknown, cap_unknown;
} rd;

#define RD_MAX_UNKNOWN 256

void fl_rd_free(rd *r);
/* A warning about the current line (file and line from r). */
void fl_rd_warn(rd *r, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
/* A line that is no record: counted in bad_lines, and a warning. */
void fl_rd_bad_line(rd *r, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
/* The same with msg as it is (no formatting: the cheap path). */
void fl_rd_bad_line_text(rd *r, const char *msg);
/* One line, NUL at line[len] and RD_PAD readable bytes after it.  0: a
 * usable record (given, or a duplicate of one given). */
int fl_rd_handle_line(rd *r, const char *line, size_t len);

/* ---------------------------------------------- kernel_detail (detail.c) */

/* A kernel_detail line (as fl_rd_handle_line's) read straight into the
 * detail callback (which must be set): 0 delivered, 1 of another session
 * (counted), -1 not taken - jansson's path reads it. */
int fl_rd_fast_detail(rd *r, const char *line, size_t len);
/* Whether the line starts as the last one fl_rd_fast_detail took, through
 * its "type" member: a kernel_detail by fl_probe_type, without asking it. */
bool fl_rd_detail_like_last(const rd *r, const char *line, size_t len);
void fl_rd_detail_free(rd *r);

/* ---------------------------------------------- batches (batch.c, rows.c) */

/* A `*_batch` line (as fl_rd_handle_line's).  0: delivered. */
int fl_rd_parse_batch(rd *r, const char *line, size_t len);

/*
 * p at the value of "rows" in line.  Cells go to r->cells; expect: the row
 * length (the number of columns, or SIZE_MAX while not known: then the
 * first row's length is expected of the others).  Sets *nrows, *ncells;
 * errors of shape go to s->rec (cells are then no longer kept).
 */
const char *fl_rd_scan_rows(rd *r, scan *s, const char *line, const char *p, size_t expect,
                            size_t *nrows, size_t *ncells);

/* The row scanners at SIMD speed (rows_simd.c).  Which one batches take:
 * 3 AVX2, 2 SSSE3, 1 SSE2, 0 none (byte by byte), by what the build and
 * the CPU have; GP_READ_SIMD=ssse3, =sse2 or =off caps it. */
int fl_rd_simd_level(void);

/*
 * The writer's rows, as many as come in a row, by the scanner of that
 * level: p at a row's '['; each row = expect non-negative integers of at
 * most 15 digits without leading zeros, separated by ',' without spaces,
 * rows separated by ','.  Cells go to *cpp (advanced, not past cend), *done
 * the rows read; returns where it stopped: at the '[' of a row it does not
 * take (the byte path then reads that one, and reports any error), or
 * (*after) just after a row's ']' that is not followed by ",[".  Reads 128
 * bytes from p (within the line's NUL + RD_PAD) and, at a level above 1,
 * the 16 bytes before p (the caller makes sure they are the line's).
 */
const char *fl_rd_fast_rows(int level, const char *p, fl_cell **cpp, const fl_cell *cend,
                            size_t expect, size_t *done, bool *after);

/* Eight digits, one per byte (0..9, the first in the lowest byte): their
 * value (fast_float's parse_eight_digits_unrolled). */
static inline uint64_t rd_swar8(uint64_t d)
{
    d = d * 10 + (d >> 8);
    return (((d & 0x000000FF000000FFull) * 0x000F424000000064ull) +
            (((d >> 16) & 0x000000FF000000FFull) * 0x0000271000000001ull)) >>
           32;
}

/* ------------------------------------------------- reading lines (files.c) */

/* A file's read stops (a warning, EV_CAP; the lines before are kept) past
 * this many lines or (decompressed) bytes, unless fl_read_opts (or the
 * environment: GPU_PROFILE_MAX_FILE_LINES, GPU_PROFILE_MAX_FILE_BYTES)
 * says otherwise. */
#define RD_MAX_FILE_LINES ((uint64_t)1 << 26)
#define RD_MAX_FILE_BYTES ((uint64_t)16 << 30)

/* A session's read stops (a warning, EV_HALT; what was read is kept)
 * past this many bytes read (decompressed) over all its files, or once
 * its gzip streams have given more than RD_GZ_RATIO_FLOOR bytes and more
 * than RD_MAX_GZ_RATIO times the compressed bytes they took: gzip bombs
 * spread over windows, each under the caps per file, cost CPU in
 * proportion to the session's size on disk, no more (writer's windows
 * stay far below: ~10-25x; deflate's own limit is ~1032x). */
#define RD_MAX_SESSION_BYTES ((uint64_t)64 << 30)
#define RD_MAX_GZ_RATIO ((uint64_t)200)
#define RD_GZ_RATIO_FLOOR ((uint64_t)64 << 20)

/* Why every further read of a session stops at once (lbuf.halt). */
enum { RD_HALT_NONE, RD_HALT_BUDGET, RD_HALT_SIGNAL };

/* The line buffer, reused from file to file, and the caps of a file's
 * read (0: RD_MAX_FILE_*); why: after an open that failed because the
 * path is not a regular file, what it is ("a FIFO", ...), else NULL.
 * The session's budget runs over every file read through it (0 caps:
 * RD_MAX_SESSION_BYTES, RD_MAX_GZ_RATIO); halt (RD_HALT_*) once set makes
 * every later read return at once, so discovery, every channel and every
 * warning path stop with it; halt_signal: the signal that stopped it. */
typedef struct lbuf {
    char *p;
    size_t cap;
    uint64_t max_bytes, max_lines;
    const char *why;
    uint64_t max_session_bytes, max_gz_ratio;
    uint64_t session_bytes, gz_in_bytes, gz_out_bytes;
    int halt, halt_signal;
    bool stop_on_signal; /* fl_read_opts.stop_on_signal */
} lbuf;

/* Opens path to read: a regular file only (a FIFO, a device, a socket or
 * a directory is refused without blocking: -1, errno EINVAL, *why what it
 * is).  -1 with errno (*why NULL) when it cannot be opened. */
int fl_rd_open_regular(const char *path, const char **why);

/* EV_HALT: the session's budget is spent (lbuf.halt), the message says
 * which bound; the rest of the session is not read. */
enum { EV_LINE, EV_TORN, EV_LONG, EV_GZERR, EV_IOERR, EV_CAP, EV_HALT };
/* A line (NUL-terminated at len), or an event; returns true to stop. */
typedef bool (*line_fn)(void *ctx, int ev, char *line, size_t len, uint64_t lineno,
                        const char *msg);

/* The CRC-32 (zlib's) and size of a file's bytes as read: complete when
 * the whole file was read without an error. */
typedef struct rd_crc {
    uint32_t crc;
    uint64_t bytes;
    bool complete;
} rd_crc;

/* Reads path line by line (gz: through zlib), adding the bytes read to
 * *bytes (if not NULL); crc (if not NULL, plain files only): the CRC of
 * the file's bytes.  -1 if it cannot be opened (errno; lb->why when it is
 * not a regular file), else 0.  Between two reads of at most 256 KiB it
 * looks for a stop signal pending (fl_rd_stop_signal, when
 * lb->stop_on_signal): then lb->halt is
 * RD_HALT_SIGNAL and it returns 0; with lb->halt already set it returns 0
 * without opening path. */
int fl_rd_read_lines(lbuf *lb, const char *path, bool gz, line_fn fn, void *ctx, uint64_t *bytes,
                     rd_crc *crc);
/* A stop signal (SIGINT, SIGTERM, SIGHUP, SIGQUIT) pending for this
 * thread or the process, else 0.  Pending means blocked: a caller that
 * wants a long read to end at ^C blocks them around it (the Python
 * package does; the command keeps their default action, which ends it
 * anyway).  No handler is installed: the signal stays pending for the
 * caller to take once it unblocks it. */
int fl_rd_stop_signal(void);
/* The CRC-32 and size of a whole file; -1 if it cannot be read (errno). */
int fl_rd_file_crc(const char *path, rd_crc *out);

/* ---------------------------------------- a session's files (layout.c) */

/* A live or crashed GPUFlight session's directory of unpublished files,
 * inside the session directory. */
#define RD_TMP_DIR ".tmp"
/* A published window's sidecar: <session>/.gpufl-window.<channel>.<N>.json. */
#define RD_SIDECAR_PREFIX ".gpufl-window."
/* GPUFlight's marker of a window lost in transport:
 * <session>/.gpufl-transport-loss.<channel>.<N>.json. */
#define RD_LOSS_PREFIX ".gpufl-transport-loss."

/* One file of a session, as the reader reads it. */
typedef struct rd_file {
    char *path; /* NULL: the end of a list */
    int channel;
    unsigned long window; /* N of <channel>.<N>.log[.gz]; 0: the plain file */
    bool gz, in_tmp;      /* in_tmp: in the session's .tmp/ */
    bool zero;            /* the flat layout's window 0 (window is 0 then) */
} rd_file;

/* v (NULL-path-terminated) cut to one file per channel, GPUFlight's
 * analyzer's light read: the plain file (the session root's, else .tmp/'s),
 * else the flat layout's window 0, else the lowest window; the others
 * freed. */
void fl_rd_one_per_channel(rd_file *v);

bool fl_rd_ends_with(const char *s, const char *suf);
/* A session directory: holds a channel file, itself or in its .tmp/.
 * *newest (if not NULL): the latest mtime of the directory and its channel
 * files. */
bool fl_rd_session_dir(const char *dir, int64_t *newest);
/* The files of channel ch in reading order (a session directory's: the
 * windows by number, then the plain file, then .tmp/'s active file; the
 * flat prefix's the same way), one per window.  Terminated by a NULL
 * path, malloc'd; NULL when out of memory. */
rd_file *fl_rd_channel_files(const char *where, bool flat, int ch);
/* Every channel's files, in channel order. */
rd_file *fl_rd_all_files(const char *where, bool flat);
void fl_rd_free_files(rd_file *v);
/* A flat prefix of name ("<prefix>.<channel>[.<N>].log[.gz]"), or false;
 * *chan (if not NULL): the channel. */
bool fl_rd_flat_name(const char *name, char *prefix, size_t cap, int *chan);
/* Whether name's last component is a session directory's channel file
 * ("<channel>.log", "<channel>.<N>.log[.gz]"). */
bool fl_rd_channel_file_name(const char *name);
/* Whether the flat prefix has a channel file; *newest (if not NULL): the
 * latest mtime of its files. */
bool fl_rd_flat_exists(const char *prefix, int64_t *newest);

/* ------------------------------------------------- sidecars (sidecar.c) */

/* Whether window f of the session directory dir has a sidecar. */
bool fl_rd_has_sidecar(const char *dir, const rd_file *f);
/* Checks the sidecar of window f of the session directory dir, if it has
 * one, against its payload file (crc: the file's CRC as read, when f is
 * that file): a sidecar that is not valid or does not match is a warning
 * naming it, counted in bad_windows. */
void fl_rd_check_sidecar(rd *r, const char *dir, const rd_file *f, const rd_crc *crc);
/* The windows GPUFlight marked lost in transport in the session directory
 * dir: a warning each (by channel, then window), counted in lost_windows. */
void fl_rd_check_losses(rd *r, const char *dir);

/* ------------------------------------------ finding a session (discover.c) */

/* The session a path names. */
typedef struct target {
    char *where; /* directory or flat prefix (malloc'd) */
    bool flat;
    char id[256];
} target;

/* The session at path: with want, the one of that id; with app, of that
 * app.  GP_ERR_IO when there is none (err says why and names the path),
 * GP_ERR_NO_MEMORY.  lb: the line buffer, for the first lines it reads. */
gp_status fl_rd_find_session(const char *path, const char *want, const char *app, target *t,
                             lbuf *lb, gp_error *err);

#endif /* FL_READER_READ_INT_H */
