/*
 * reader/files.c - a channel file line by line: plain files by read(),
 * gzipped windows through zlib, both through one growable buffer whose
 * lines are handled in place, never copied, and small reads (RD_READ) so
 * that the lines are still in the cache when they are parsed.
 *
 * A writer writes whole lines, so a last line without '\n' is torn: it is
 * given as EV_TORN (the reader skips it with a warning, even when it
 * happens to be complete JSON).  A line longer than RD_MAX_LINE is given
 * as EV_LONG and skipped.  A broken or truncated gzip stream ends that
 * file with EV_GZERR; the lines before it are kept.  Every line is
 * NUL-terminated and followed by RD_PAD readable bytes (reader/scan.h).
 * A plain file's CRC-32 is taken as it is read (a window's sidecar says
 * it); fl_rd_file_crc reads a file for its CRC alone (a gzipped window's
 * compressed bytes).
 *
 * Only regular files are read: a FIFO, a device (a symlink to /dev/zero),
 * a socket or a directory is refused when it is opened, without blocking
 * (O_NONBLOCK until fstat says what it is), naming what it is.  A file is
 * read up to lb's caps (lbuf: decompressed bytes and lines, RD_MAX_*
 * below by default): past one, EV_CAP, and the lines before it are kept.
 * The session's budget (decompressed bytes over all its files, the gzip
 * streams' ratio) is counted in lb across reads: past it, EV_HALT once and
 * every later read of the session returns at once.  So does a stop signal
 * the caller holds pending (fl_rd_stop_signal), looked for between reads
 * of at most RD_READ bytes: whatever the lines are (blank lines, each a
 * warning, included), a read ends within one such read of the signal.
 */
#include "read_int.h"
#include "../util/fs.h"

#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#include <zlib.h>

#define RD_CHUNK ((size_t)1 << 20)
/* One read() at most: small enough that the lines are still in the cache
 * (L2) when they are parsed. */
#define RD_READ ((size_t)256 << 10)

/* An open channel file: plain (fd), or gzipped (z, over fd). */
typedef struct input {
    int fd;
    gzFile z;
} input;

int fl_rd_open_regular(const char *path, const char **why)
{
    *why = NULL;
    /* O_NONBLOCK: opening a FIFO without a writer does not wait. */
    int fd = open(path, O_RDONLY | O_CLOEXEC | O_NONBLOCK);
    if (fd < 0)
        return -1;
    struct stat st;
    if (fstat(fd, &st) != 0) {
        int e = errno;
        close(fd);
        errno = e;
        return -1;
    }
    if (!S_ISREG(st.st_mode)) {
        close(fd);
        *why = fl_file_kind(st.st_mode);
        errno = EINVAL;
        return -1;
    }
    int fl = fcntl(fd, F_GETFL);
    if (fl >= 0)
        (void)fcntl(fd, F_SETFL, fl & ~O_NONBLOCK);
    return fd;
}

/* -1 if path cannot be opened (errno; lb->why: not a regular file). */
static int open_input(const char *path, bool gz, input *in, lbuf *lb)
{
    in->z = NULL;
    in->fd = fl_rd_open_regular(path, &lb->why);
    if (in->fd < 0)
        return -1;
    if (gz) {
        in->z = gzdopen(in->fd, "rb");
        if (!in->z) {
            close(in->fd);
            errno = ENOMEM;
            return -1;
        }
        gzbuffer(in->z, 256 * 1024);
    } else {
        posix_fadvise(in->fd, 0, 0, POSIX_FADV_SEQUENTIAL);
    }
    return 0;
}

static void close_input(input *in)
{
    if (in->z)
        gzclose_r(in->z);
    else
        close(in->fd);
}

/* Where the reading is in the line buffer: have bytes in it, pos where the
 * current line starts, scanned how far '\n' was looked for; lineno the
 * number of the last line ended; skipping: the rest of a line too long. */
typedef struct lpos {
    size_t have, pos, scanned;
    uint64_t lineno, max_lines;
    bool skipping, capped; /* capped: max_lines lines were given */
} lpos;

/* Every complete line in the buffer to fn.  true: fn said stop. */
static inline bool give_lines(lbuf *lb, lpos *at, line_fn fn, void *ctx)
{
    for (;;) {
        if (__builtin_expect(at->lineno >= at->max_lines, 0)) {
            at->capped = true;
            return true;
        }
        char *nl = memchr(lb->p + at->scanned, '\n', at->have - at->scanned);
        if (!nl) {
            at->scanned = at->have;
            return false;
        }
        size_t end = (size_t)(nl - lb->p);
        at->lineno++;
        bool stop = false;
        if (at->skipping) {
            at->skipping = false; /* the end of a line already reported */
        } else {
            *nl = '\0';
            stop = fn(ctx, EV_LINE, lb->p + at->pos, end - at->pos, at->lineno, NULL);
        }
        at->pos = at->scanned = end + 1;
        if (stop)
            return true;
    }
}

/* A line longer than RD_MAX_LINE so far: reported once, then its bytes
 * are dropped as they come.  true: fn said stop. */
static bool skip_long_line(lpos *at, line_fn fn, void *ctx)
{
    if (!at->skipping) {
        at->skipping = true;
        if (fn(ctx, EV_LONG, NULL, at->have - at->pos, at->lineno + 1, NULL))
            return true;
    }
    at->pos = at->scanned = at->have;
    return false;
}

/* The current line moved to the buffer's start, and room for one more
 * read (up to what the longest line allowed needs, no more).  false: out
 * of memory, told to fn. */
static bool make_room(lbuf *lb, lpos *at, line_fn fn, void *ctx)
{
    if (at->pos > 0) {
        memmove(lb->p, lb->p + at->pos, at->have - at->pos);
        at->have -= at->pos;
        at->scanned -= at->pos;
        at->pos = 0;
    }
    if (lb->cap - at->have >= RD_CHUNK + 1 + RD_PAD)
        return true;
    size_t nc = lb->cap * 2;
    if (nc > RD_MAX_LINE + 2 * RD_CHUNK)
        nc = RD_MAX_LINE + 2 * RD_CHUNK;
    char *n = nc > lb->cap ? realloc(lb->p, nc) : NULL;
    if (!n) {
        fn(ctx, EV_IOERR, NULL, 0, at->lineno + 1, "out of memory for a long line");
        return false;
    }
    lb->p = n;
    lb->cap = nc;
    return true;
}

/* The next bytes of the file after the buffer's: their count, 0 at the
 * end, -1 after an error told to fn (EV_GZERR, EV_IOERR); crc (plain
 * files, if not NULL) takes them in. */
static long read_more(input *in, lbuf *lb, const lpos *at, line_fn fn, void *ctx, rd_crc *crc)
{
    size_t room = lb->cap - at->have - 1 - RD_PAD;
    if (room > RD_READ)
        room = RD_READ;
    char m[300];
    if (in->z) {
        long n = gzread(in->z, lb->p + at->have, (unsigned)room);
        int zerr = Z_OK;
        const char *zmsg = gzerror(in->z, &zerr);
        if (n <= 0 && zerr != Z_OK) {
            /* zlib says "<fd:N>: why"; the warning names the file. */
            if (zmsg && strncmp(zmsg, "<fd:", 4) == 0 && strstr(zmsg, ": "))
                zmsg = strstr(zmsg, ": ") + 2;
            snprintf(m, sizeof m, "gzip stream error: %s%s", zmsg ? zmsg : "?",
                     at->have ? "; the partial line before it is dropped" : "");
            fn(ctx, EV_GZERR, NULL, 0, at->lineno + 1, m);
            return -1;
        }
        return n < 0 ? 0 : n;
    }
    for (;;) {
        long n = (long)read(in->fd, lb->p + at->have, room);
        if (n < 0 && errno == EINTR)
            continue;
        if (n < 0) {
            snprintf(m, sizeof m, "read error: %s", strerror(errno));
            fn(ctx, EV_IOERR, NULL, 0, at->lineno + 1, m);
            return -1;
        }
        if (crc && n > 0) {
            crc->crc = (uint32_t)crc32(crc->crc, (const Bytef *)(lb->p + at->have), (uInt)n);
            crc->bytes += (uint64_t)n;
        }
        return n;
    }
}

/* A file past one of its caps: the lines given so far are kept, the rest
 * is not read (EV_CAP).  Always true: the file's read ends. */
static bool over_cap(lpos *at, line_fn fn, void *ctx, bool gz, uint64_t max_bytes)
{
    char m[300];
    if (at->capped)
        snprintf(m, sizeof m,
                 "more than %llu lines: the rest of the file is not read (the reader's cap per "
                 "file; GPU_PROFILE_MAX_FILE_LINES raises it)",
                 (unsigned long long)at->max_lines);
    else
        snprintf(m, sizeof m,
                 "more than %llu %sbytes: the rest of the file is not read (the reader's cap per "
                 "file; GPU_PROFILE_MAX_FILE_BYTES raises it)",
                 (unsigned long long)max_bytes, gz ? "decompressed " : "");
    fn(ctx, EV_CAP, NULL, 0, at->lineno + 1, m);
    at->pos = at->have; /* no torn line at the cut */
    return true;
}

int fl_rd_stop_signal(void)
{
    static const int stops[] = {SIGINT, SIGTERM, SIGHUP, SIGQUIT};
    sigset_t pending;
    if (sigpending(&pending) != 0)
        return 0;
    for (size_t i = 0; i < sizeof stops / sizeof stops[0]; i++)
        if (sigismember(&pending, stops[i]) == 1)
            return stops[i];
    return 0;
}

/* n more bytes read from in: the session's counts.  prev_off: the
 * compressed offset the last count stopped at. */
static void count_session(lbuf *lb, const input *in, long n, int64_t *prev_off)
{
    lb->session_bytes += (uint64_t)n;
    if (!in->z)
        return;
    lb->gz_out_bytes += (uint64_t)n;
    /* gzoffset: the compressed bytes inflate took, not those buffered. */
    z_off_t off = gzoffset(in->z);
    if (off >= *prev_off) {
        lb->gz_in_bytes += (uint64_t)(off - *prev_off);
        *prev_off = off;
    }
}

/* The session's budget spent (bytes, or the gzip ratio past its floor):
 * lb->halt, EV_HALT naming the bound, and the file's read ends (true). */
static bool session_spent(lbuf *lb, lpos *at, line_fn fn, void *ctx)
{
    uint64_t max = lb->max_session_bytes ? lb->max_session_bytes : RD_MAX_SESSION_BYTES;
    uint64_t ratio = lb->max_gz_ratio ? lb->max_gz_ratio : RD_MAX_GZ_RATIO;
    char m[400];
    if (lb->session_bytes > max)
        snprintf(m, sizeof m,
                 "more than %llu bytes read (decompressed) in this session: the rest of the "
                 "session is not read (the reader's cap per session; "
                 "GPU_PROFILE_MAX_SESSION_BYTES raises it)",
                 (unsigned long long)max);
    else if (lb->gz_out_bytes > RD_GZ_RATIO_FLOOR && lb->gz_out_bytes / ratio > lb->gz_in_bytes)
        snprintf(m, sizeof m,
                 "the session's gzip streams gave %llu bytes from %llu compressed, more than %llu "
                 "times as many (a gzip bomb): the rest of the session is not read (the reader's "
                 "cap on the ratio past %llu MiB; GPU_PROFILE_MAX_GZIP_RATIO raises it)",
                 (unsigned long long)lb->gz_out_bytes, (unsigned long long)lb->gz_in_bytes,
                 (unsigned long long)ratio, (unsigned long long)(RD_GZ_RATIO_FLOOR >> 20));
    else
        return false;
    lb->halt = RD_HALT_BUDGET;
    fn(ctx, EV_HALT, NULL, 0, at->lineno + 1, m);
    at->pos = at->have; /* no torn line at the cut */
    return true;
}

int fl_rd_read_lines(lbuf *lb, const char *path, bool gz, line_fn fn, void *ctx, uint64_t *bytes,
                     rd_crc *crc)
{
    input in;
    if (crc)
        *crc = (rd_crc){.crc = (uint32_t)crc32(0L, Z_NULL, 0)};
    if (gz)
        crc = NULL;
    if (lb->halt)
        return 0;
    if (open_input(path, gz, &in, lb) < 0)
        return -1;
    if (lb->cap < 4 * RD_CHUNK) {
        char *n = realloc(lb->p, 4 * RD_CHUNK);
        if (!n) {
            close_input(&in);
            errno = ENOMEM;
            return -1;
        }
        lb->p = n;
        lb->cap = 4 * RD_CHUNK;
    }
    lpos at = {.max_lines = lb->max_lines ? lb->max_lines : RD_MAX_FILE_LINES};
    bool stop = false, failed = false;
    uint64_t max_bytes = lb->max_bytes ? lb->max_bytes : RD_MAX_FILE_BYTES;
    uint64_t got = 0;
    int64_t gz_off = 0;
    for (;;) {
        stop = give_lines(lb, &at, fn, ctx);
        if (stop && !at.capped)
            break;
        if (at.capped || got >= max_bytes) {
            stop = over_cap(&at, fn, ctx, gz, max_bytes);
            break;
        }
        if ((stop = session_spent(lb, &at, fn, ctx)))
            break;
        if (lb->stop_on_signal && (lb->halt_signal = fl_rd_stop_signal())) {
            lb->halt = RD_HALT_SIGNAL;
            at.pos = at.have;
            stop = true;
            break;
        }
        if (at.skipping || at.have - at.pos > RD_MAX_LINE) {
            stop = skip_long_line(&at, fn, ctx);
            if (stop)
                break;
        }
        if (!make_room(lb, &at, fn, ctx)) {
            failed = true;
            break;
        }
        long n = read_more(&in, lb, &at, fn, ctx, crc);
        failed = n < 0;
        if (n <= 0) {
            if (crc)
                crc->complete = n == 0;
            break;
        }
        at.have += (size_t)n;
        got += (uint64_t)n;
        count_session(lb, &in, n, &gz_off);
        memset(lb->p + at.have, 0, 1 + RD_PAD);
        if (bytes)
            *bytes += (uint64_t)n;
    }
    if (!stop && !failed && !at.skipping && at.have > at.pos) {
        lb->p[at.have] = '\0';
        fn(ctx, EV_TORN, lb->p + at.pos, at.have - at.pos, at.lineno + 1, NULL);
    }
    close_input(&in);
    return 0;
}

int fl_rd_file_crc(const char *path, rd_crc *out)
{
    *out = (rd_crc){.crc = (uint32_t)crc32(0L, Z_NULL, 0)};
    const char *why;
    int fd = fl_rd_open_regular(path, &why);
    if (fd < 0)
        return -1;
    unsigned char buf[64 * 1024];
    for (;;) {
        ssize_t n = read(fd, buf, sizeof buf);
        if (n < 0 && errno == EINTR)
            continue;
        if (n < 0) {
            int e = errno;
            close(fd);
            errno = e;
            return -1;
        }
        if (n == 0)
            break;
        out->crc = (uint32_t)crc32(out->crc, buf, (uInt)n);
        out->bytes += (uint64_t)n;
    }
    close(fd);
    out->complete = true;
    return 0;
}
