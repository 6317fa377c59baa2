/*
 * recorder/files.c - the session's files: <log_path>/<uuid>/{device,scope,
 * system}.log.
 *
 * Promises: we never write through a link someone else made, nor into a
 * file we did not create: log_path is refused when another user could
 * replace what we make in it (util/fs.h's rule), the session directory is
 * new (mkdir, a new uuid while one exists), opened with O_NOFOLLOW and
 * checked to be ours, and its files are created through that descriptor
 * with O_EXCL | O_NOFOLLOW - so a directory swapped for a link or for
 * another user's directory between two steps is refused, never followed.
 * Our descriptors are never 0, 1 or 2.  Every line reaches its file whole
 * or not at all: a short write is continued, a failed one tried once more,
 * and a line cut by a failure is removed (or, when the file cannot be
 * shortened, ended before the next line, so no later line is glued to
 * it); every line lost is counted by type and batch rows (s->loss), and
 * dictionary lines are kept and written again so that the names of later
 * rows are never missing.  A file removed while recording is noticed at
 * the next write: said, made again with job_start and the capabilities,
 * and what it would have received is counted.
 */
#include "files.h"
#include "../util/clock.h"
#include "../util/error.h"
#include "../util/fs.h"
#include "../util/text.h"
#include "../wire/records.h"
#include "capabilities.h"
#include "launcher.h"
#include "rotate.h"
#include "say.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#define DIR_ATTEMPTS 4 /* uuids tried before init gives up */

/* The same generator as a run's ids (run_ident.c), its fallback where
 * the kernel has no entropy to give included. */
void fl_uuid4(char out[37])
{
    fl_run_id_new(out);
}

void fl_files_init(session *s)
{
    s->base_fd = s->dir_fd = -1;
    s->n_ch = FL_CH_WRITTEN;
    for (int ch = 0; ch < FL_CH_COUNT; ch++)
        s->fd[ch] = -1;
}

/* ------------------------------------------------------------- opening */

/* log_path, made if need be, opened, and refused when unsafe. */
static gpufl_status open_base(session *s, gpufl_error *err)
{
    const char *base = s->cfg.log_path;
    if (fl_make_dirs(base) != 0)
        return fl_error_set(err, GPUFL_ERR_IO,
                            "cannot create the log directory \"%s\" (log_path): %s: choose a "
                            "writable log_path",
                            base, strerror(errno));
    s->base_fd = fl_fd_above_stdio(open(base, O_RDONLY | O_DIRECTORY | O_CLOEXEC));
    struct stat st;
    if (s->base_fd < 0 || fstat(s->base_fd, &st) != 0)
        return fl_error_set(err, GPUFL_ERR_IO,
                            "cannot open the log directory \"%s\" (log_path): %s: choose a "
                            "log_path you can read",
                            base, strerror(errno));
    switch (fl_dir_check(&st, geteuid())) {
    case FL_DIR_SAFE:
        return GPUFL_OK;
    case FL_DIR_NOT_DIR:
        return fl_error_set(err, GPUFL_ERR_IO, "log_path \"%s\" is not a directory", base);
    case FL_DIR_WORLD_WRITABLE:
        return fl_error_set(err, GPUFL_ERR_IO,
                            "log_path \"%s\" is writable by every user and has no sticky bit: "
                            "another user could replace the session directory as it is made; "
                            "use a directory only you can write to, or make this one sticky "
                            "(chmod +t \"%s\") or not world-writable (chmod o-w)",
                            base, base);
    case FL_DIR_OTHERS_WRITABLE:
        return fl_error_set(err, GPUFL_ERR_IO,
                            "log_path \"%s\" belongs to user %u and is writable by its group, "
                            "without the sticky bit: another user could replace the session "
                            "directory as it is made; use a directory of your own, or make this "
                            "one sticky (chmod +t \"%s\") or not group-writable (chmod g-w)",
                            base, (unsigned)st.st_uid, base);
    }
    return GPUFL_OK;
}

/* The directory name made under base_fd, opened without following a link
 * and checked to be ours; -1 (errno) when it is not (ELOOP, ENOTDIR,
 * EPERM: replaced since it was made). */
static int open_own_dir(int base_fd, const char *name)
{
    int fd = openat(base_fd, name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
    fd = fl_fd_above_stdio(fd);
    if (fd < 0)
        return -1;
    struct stat st;
    if (fstat(fd, &st) != 0 || !S_ISDIR(st.st_mode) || st.st_uid != geteuid()) {
        close(fd);
        errno = EPERM;
        return -1;
    }
    return fd;
}

/* A new file of the session directory, never through a link (readable
 * too: a retired window is gzipped from its descriptor). */
static int open_channel(int dir_fd, int ch)
{
    char name[32];
    snprintf(name, sizeof name, "%s.log", fl_channel_name(ch));
    int fd =
        openat(dir_fd, name, O_RDWR | O_CREAT | O_EXCL | O_NOFOLLOW | O_APPEND | O_CLOEXEC, 0644);
    return fl_fd_above_stdio(fd);
}

/* A fresh <uuid> directory in log_path: a new uuid while one exists or
 * was replaced before it could be opened. */
static gpufl_status make_session_dir(session *s, gpufl_error *err)
{
    const char *base = s->cfg.log_path;
    int e = 0;
    for (int attempt = 0; attempt < DIR_ATTEMPTS; attempt++) {
        fl_uuid4(s->id);
        if (snprintf(s->dir, sizeof s->dir, "%s/%s", base, s->id) >= (int)sizeof s->dir)
            return fl_error_set(err, GPUFL_ERR_IO, "log_path \"%s\" is too long", base);
        if (mkdirat(s->base_fd, s->id, 0755) != 0) {
            e = errno;
            if (e == EEXIST)
                continue;
            return fl_error_set(err, GPUFL_ERR_IO,
                                "cannot create the session directory \"%s\": %s: choose a "
                                "writable log_path",
                                s->dir, strerror(e));
        }
        s->dir_fd = open_own_dir(s->base_fd, s->id);
        if (s->dir_fd >= 0)
            return GPUFL_OK;
        e = errno; /* replaced between mkdir and open: never used */
    }
    return fl_error_set(err, GPUFL_ERR_IO,
                        "cannot create a session directory in \"%s\": %d names were taken or "
                        "replaced before they could be opened (last: %s): another user may be "
                        "changing log_path; use a directory only you can write to",
                        base, DIR_ATTEMPTS, strerror(e));
}

/* The rollover's limits (config.c checked the sizes). */
static gpufl_status roll_limits(session *s, gpufl_error *err)
{
    char why[256];
    if (gp_parse_size(s->cfg.rotate_size, &s->roll.size_bytes, why, sizeof why) != 0)
        return fl_error_set(err, GPUFL_ERR_INVALID_ARG, "rotate_size: %s", why);
    if (gp_parse_size(s->cfg.max_disk, &s->roll.max_disk_bytes, why, sizeof why) != 0)
        return fl_error_set(err, GPUFL_ERR_INVALID_ARG, "max_disk: %s", why);
    s->roll.interval_ms = s->cfg.rotate_interval_ms > 0 ? (uint64_t)s->cfg.rotate_interval_ms : 0;
    return GPUFL_OK;
}

gpufl_status fl_files_open(session *s, gpufl_error *err)
{
    gpufl_status st = roll_limits(s, err);
    if (st == GPUFL_OK)
        st = open_base(s, err);
    if (st == GPUFL_OK)
        st = make_session_dir(s, err);
    for (int ch = 0; st == GPUFL_OK && ch < s->n_ch; ch++) {
        s->fd[ch] = open_channel(s->dir_fd, ch);
        if (s->fd[ch] < 0)
            st = fl_error_set(err, GPUFL_ERR_IO, "cannot create \"%s/%s.log\": %s", s->dir,
                              fl_channel_name(ch), strerror(errno));
    }
    return st;
}

gpufl_status fl_files_open_sass(session *s, gpufl_error *err)
{
    s->fd[FL_CH_SASS] = open_channel(s->dir_fd, FL_CH_SASS);
    if (s->fd[FL_CH_SASS] < 0)
        return fl_error_set(err, GPUFL_ERR_IO, "cannot create \"%s/%s.log\": %s", s->dir,
                            fl_channel_name(FL_CH_SASS), strerror(errno));
    s->n_ch = FL_CH_COUNT;
    return GPUFL_OK;
}

static bool rotate(session *s, int ch, bool reopen);

void fl_files_close(session *s)
{
    /* The session ended whole: its last windows are published too, as
     * GPUFlight leaves a closed session (no active file). */
    if (s->closing && fl_files_rotating(s))
        for (int ch = 0; ch < FL_CH_COUNT; ch++)
            if (s->fd[ch] >= 0)
                rotate(s, ch, false);
    for (int ch = 0; ch < FL_CH_COUNT; ch++) {
        if (s->fd[ch] >= 0)
            close(s->fd[ch]);
        s->fd[ch] = -1;
        fl_buf_free(&s->redo[ch]);
    }
    if (s->dir_fd >= 0)
        close(s->dir_fd);
    if (s->base_fd >= 0)
        close(s->base_fd);
    s->dir_fd = s->base_fd = -1;
    fl_buf_free(&s->job_start_line);
}

/* ------------------------------------------------------------- losses */

/* Counts the lines of p (whole lines) as lost for cause; a dictionary line
 * lost to a write error is kept to be written again (FL_REDO_MAX). */
static void account(session *s, int ch, const char *p, size_t n, int cause)
{
    const char *end = p + n;
    while (p < end) {
        const char *nl = memchr(p, '\n', (size_t)(end - p));
        size_t len = nl ? (size_t)(nl - p) + 1 : (size_t)(end - p);
        uint64_t rows = 0;
        fl_type t = fl_line_account(p, len, &rows);
        if (cause == FL_LOSS_WRITE && t == FL_T_DICTIONARY_UPDATE &&
            s->redo[ch].len + len <= FL_REDO_MAX) {
            size_t before = s->redo[ch].len;
            fl_buf_put(&s->redo[ch], p, len);
            if (s->redo[ch].len == before + len) {
                p += len;
                continue;
            }
        }
        s->loss.lines[cause][t]++;
        s->loss.rows[cause][t] += rows;
        s->loss.lines_total++;
        s->loss.rows_total += rows;
        p += len;
    }
}

static void note_error(session *s, int ch, int e)
{
    if (s->loss.first_errno)
        return;
    s->loss.first_errno = e;
    s->loss.first_channel = ch;
    FL_DEBUG(s,
             "writing %s/%s.log failed: %s; the lines that cannot be written are counted (the "
             "shutdown record's lines_lost, rows_lost)",
             s->dir, fl_channel_name(ch), strerror(e));
}

/* ------------------------------------------------------------- writing */

/* The cut line's cut bytes at the file's end: removed, else the file is
 * marked so that the next write ends the line first. */
static void remove_cut(session *s, int ch, size_t cut)
{
    struct stat st;
    if (fstat(s->fd[ch], &st) == 0 && (uint64_t)st.st_size >= cut &&
        ftruncate(s->fd[ch], st.st_size - (off_t)cut) == 0)
        return;
    s->fstate[ch] = FL_FILE_TORN;
}

/* Writes p (n bytes, whole lines); true when all of it was written.  A
 * failure costs whole lines only, counted. */
static bool put_lines(session *s, int ch, const char *p, size_t n)
{
    int fd = s->fd[ch];
    if (s->fstate[ch] == FL_FILE_TORN) {
        ssize_t w;
        do
            w = write(fd, "\n", 1);
        while (w < 0 && errno == EINTR);
        if (w != 1) {
            note_error(s, ch, w < 0 ? errno : EIO);
            account(s, ch, p, n, FL_LOSS_WRITE);
            return false;
        }
        s->fstate[ch] = FL_FILE_OK;
    }
    size_t done = 0;
    int e = 0, failures = 0;
    while (done < n) {
        ssize_t w = write(fd, p + done, n - done);
        if (w > 0) {
            done += (size_t)w;
            continue;
        }
        if (w < 0 && errno == EINTR)
            continue;
        e = w < 0 ? errno : EIO;
        if (++failures > 1) /* a failed write is tried once more */
            break;
    }
    if (done == n)
        return true;
    size_t keep = done;
    while (keep > 0 && p[keep - 1] != '\n')
        keep--;
    if (done > keep)
        remove_cut(s, ch, done - keep);
    note_error(s, ch, e);
    account(s, ch, p + keep, n - keep, FL_LOSS_WRITE);
    return false;
}

/* The dictionary lines a failed write lost, first; false when they still
 * cannot be written (they are kept again). */
static bool put_redo(session *s, int ch)
{
    fl_buf r = s->redo[ch];
    memset(&s->redo[ch], 0, sizeof s->redo[ch]);
    bool ok = put_lines(s, ch, r.p, r.len);
    fl_buf_free(&r);
    return ok;
}

/* ------------------------------------------------------------- removal */

/* The session directory again when it was removed: made anew (a fresh
 * directory, checked to be ours) under log_path's descriptor. */
static bool remake_dir(session *s)
{
    struct stat st;
    if (fstat(s->dir_fd, &st) != 0 || st.st_nlink > 0)
        return true;
    if (mkdirat(s->base_fd, s->id, 0755) != 0)
        return false;
    int fd = open_own_dir(s->base_fd, s->id);
    if (fd < 0)
        return false;
    close(s->dir_fd);
    s->dir_fd = fd;
    return true;
}

/* Channel ch's file was removed: a new one in its place that says so
 * (job_start, capture_capabilities now, the closing records later). */
static void remake(session *s, int ch)
{
    if (!s->loss.removed) {
        s->loss.removed = true;
        s->loss.removed_ns = gp_now_wall_ns();
    }
    fl_caps_mark_removed(s, ch);
    int fd = remake_dir(s) ? open_channel(s->dir_fd, ch) : -1;
    int e = errno;
    close(s->fd[ch]);
    s->fd[ch] = fd;
    if (fd < 0) {
        s->fstate[ch] = FL_FILE_DEAD;
        FL_DEBUG(s,
                 "%s/%s.log was removed while recording and cannot be made again (%s): what it "
                 "would have received is counted as lost",
                 s->dir, fl_channel_name(ch), strerror(e));
        return;
    }
    s->fstate[ch] = FL_FILE_GONE;
    FL_DEBUG(s,
             "%s/%s.log was removed while recording: made again with job_start and "
             "capture_capabilities; its later rows are counted as lost, not written",
             s->dir, fl_channel_name(ch));
    fl_buf head = {0};
    fl_buf_put(&head, s->job_start_line.p, s->job_start_line.len);
    fl_caps_put(s, &head, gp_now_wall_ns());
    put_lines(s, ch, head.p, head.len);
    fl_buf_free(&head);
}

/* Whether channel ch's file is still in the session directory. */
static void notice_removal(session *s, int ch)
{
    struct stat st;
    if (fstat(s->fd[ch], &st) == 0 && st.st_nlink == 0)
        remake(s, ch);
}

/* p (n bytes, whole lines) to channel ch's active window, counted in it. */
static void write_lines(session *s, int ch, const char *p, size_t n)
{
    if (n == 0)
        return;
    if (s->fstate[ch] == FL_FILE_OK || s->fstate[ch] == FL_FILE_TORN)
        notice_removal(s, ch);
    fl_file_state fs = s->fstate[ch];
    if (fs == FL_FILE_DEAD || (fs == FL_FILE_GONE && !s->closing)) {
        account(s, ch, p, n, FL_LOSS_REMOVED);
        return;
    }
    if (s->redo[ch].len > 0 && !put_redo(s, ch)) {
        /* The names first or nothing: a batch must not precede them. */
        account(s, ch, p, n, FL_LOSS_WRITE);
        return;
    }
    if (s->roll.win_bytes[ch] == 0)
        s->roll.win_first_ms[ch] = gp_now_mono_ns() / 1000000u;
    if (put_lines(s, ch, p, n))
        s->roll.win_bytes[ch] += n;
    if (s->cfg.flush_logs_always)
        fsync(s->fd[ch]);
}

bool fl_files_rotating(const session *s)
{
    return s->roll.size_bytes > 0 || s->roll.interval_ms > 0;
}

/* Channel ch's active window retired under its number and published; with
 * reopen a new active file takes the next lines. */
static bool rotate(session *s, int ch, bool reopen)
{
    if (s->fd[ch] < 0 || s->fstate[ch] != FL_FILE_OK || s->roll.win_bytes[ch] == 0)
        return false;
    char act[32], win[48];
    unsigned n = s->roll.next_win[ch] + 1;
    snprintf(act, sizeof act, "%s.log", fl_channel_name(ch));
    snprintf(win, sizeof win, "%s.%u.log", fl_channel_name(ch), n);
    /* Never over a name that exists: the reader would read it twice. */
    if (faccessat(s->dir_fd, win, F_OK, AT_SYMLINK_NOFOLLOW) == 0 ||
        renameat(s->dir_fd, act, s->dir_fd, win) != 0) {
        FL_DEBUG(s, "cannot retire %s/%s as window %u (%s): it keeps growing", s->dir, act, n,
                 strerror(errno));
        return false;
    }
    s->roll.next_win[ch] = n;
    s->roll.windows++;
    int old = s->fd[ch];
    s->fd[ch] = reopen ? open_channel(s->dir_fd, ch) : -1;
    if (reopen && s->fd[ch] < 0) {
        note_error(s, ch, errno);
        s->fstate[ch] = FL_FILE_DEAD;
    }
    uint64_t first = s->roll.win_first_ms[ch];
    s->roll.win_bytes[ch] = 0;
    char window_id[37];
    fl_uuid4(window_id);
    fl_roll_publish(s, ch, old, n, window_id, first, gp_now_mono_ns() / 1000000u);
    close(old);
    return true;
}

/* p's lines cut into windows: each published before the line that would
 * take it past rotate_size, or once it has been open rotate_interval_ms. */
static void write_windows(session *s, int ch, const char *p, size_t n)
{
    size_t start = 0, cur = 0;
    uint64_t now = gp_now_mono_ns() / 1000000u;
    while (cur < n) {
        const char *nl = memchr(p + cur, '\n', n - cur);
        size_t len = nl ? (size_t)(nl - (p + cur)) + 1 : n - cur;
        size_t pending = cur - start;
        s->roll.win_bytes[ch] += pending; /* as if written, to decide */
        int why = fl_roll_due(&s->roll, ch, len, now);
        s->roll.win_bytes[ch] -= pending;
        if (why != FL_ROLL_NO) {
            write_lines(s, ch, p + start, pending);
            if (rotate(s, ch, true))
                (*(why == FL_ROLL_SIZE ? &s->roll.by_size : &s->roll.by_time))++;
            start = cur;
        }
        cur += len;
    }
    write_lines(s, ch, p + start, cur - start);
}

/* max_disk reached: b's detail lines counted, not written; the rest kept
 * in order. */
static void drop_detail(session *s, int ch, fl_buf *b)
{
    uint64_t used = fl_roll_disk_bytes(&s->roll);
    size_t keep = 0, at = 0;
    while (at < b->len) {
        const char *nl = memchr(b->p + at, '\n', b->len - at);
        size_t len = nl ? (size_t)(nl - (b->p + at)) + 1 : b->len - at;
        if (!s->roll.disk_full && used + keep + len > s->roll.max_disk_bytes) {
            s->roll.disk_full = true;
            FL_DEBUG(s,
                     "the session's files reached max_disk (%llu bytes): detail (trace rows, "
                     "samples) is counted from now on, not written; telemetry goes on",
                     (unsigned long long)s->roll.max_disk_bytes);
        }
        uint64_t rows = 0;
        if (s->roll.disk_full && fl_roll_is_detail(fl_line_account(b->p + at, len, &rows))) {
            account(s, ch, b->p + at, len, FL_LOSS_MAX_DISK);
        } else {
            memmove(b->p + keep, b->p + at, len);
            keep += len;
        }
        at += len;
    }
    b->len = keep;
}

void fl_files_write(session *s, int ch, fl_buf *b)
{
    if (b->len == 0)
        return;
    if (s->roll.max_disk_bytes > 0)
        drop_detail(s, ch, b);
    if (fl_files_rotating(s))
        write_windows(s, ch, b->p, b->len);
    else
        write_lines(s, ch, b->p, b->len);
    fl_buf_reset(b);
}

void fl_files_tick(session *s)
{
    if (s->roll.interval_ms == 0)
        return;
    uint64_t now = gp_now_mono_ns() / 1000000u;
    for (int ch = 0; ch < s->n_ch; ch++)
        if (fl_roll_due(&s->roll, ch, 0, now) == FL_ROLL_TIME && rotate(s, ch, true))
            s->roll.by_time++;
}
