/*
 * test_gpufl_files.c - the session's files under trouble (issue 16):
 *
 *  - a log_path every user may write without the sticky bit is refused,
 *    naming it and the fix; with the sticky bit (as /tmp) it is used;
 *  - a disk that fills, then frees space: write() is interposed here to
 *    cut a batch line short and then fail with ENOSPC; the cut line never
 *    stays glued to the next one (removed, or - when ftruncate fails too -
 *    ended before the next line), the lost batch's rows are counted in the
 *    shutdown record (lines_lost, rows_lost) and in capture_capabilities
 *    (scope_events partial, write_failed), and a dictionary line the
 *    failure cost is written again before the rows that use its names;
 *  - a session directory removed while recording is noticed, said in a
 *    debug line, and made again with job_start, capture_capabilities
 *    (log_dir_removed) and shutdown counting what was not written;
 *  - a program started with descriptors 0, 1 and 2 closed: neither its own
 *    output nor the recorder's debug lines end up in the session's files.
 */
#include "recorder/writer.h"
#include "fl_log.h"
#include "gpufl.h"

#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdatomic.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

static char g_tmp[256];

/* ------------------------------------------------------ the interposers */

/* The library's write() and ftruncate() land here: on the armed
 * descriptor, the next write may be cut to half its length, and writes may
 * fail with ENOSPC (the disk is full) until disarmed. */
static _Atomic int fail_fd = -1;
static _Atomic int fail_short_next, fail_enospc, fail_truncate;

ssize_t write(int fd, const void *p, size_t n)
{
    if (fd >= 0 && fd == atomic_load(&fail_fd)) {
        if (atomic_exchange(&fail_short_next, 0) && n > 1)
            return (ssize_t)syscall(SYS_write, fd, p, n / 2);
        if (atomic_load(&fail_enospc)) {
            errno = ENOSPC;
            return -1;
        }
    }
    return (ssize_t)syscall(SYS_write, fd, p, n);
}

int ftruncate(int fd, off_t len)
{
    if (fd >= 0 && fd == atomic_load(&fail_fd) && atomic_load(&fail_truncate)) {
        errno = EIO;
        return -1;
    }
    return (int)syscall(SYS_ftruncate, fd, len);
}

/* ------------------------------------------------------------- helpers */

static char captured[64][1400];
static int n_captured;
static pthread_mutex_t cap_mu = PTHREAD_MUTEX_INITIALIZER;
static void capture_line(const char *line, void *user)
{
    (void)user;
    pthread_mutex_lock(&cap_mu);
    if (n_captured < 64)
        snprintf(captured[n_captured++], sizeof captured[0], "%s", line);
    pthread_mutex_unlock(&cap_mu);
}

static bool said(const char *needle)
{
    bool found = false;
    pthread_mutex_lock(&cap_mu);
    for (int i = 0; i < n_captured; i++)
        found = found || strstr(captured[i], needle) != NULL;
    pthread_mutex_unlock(&cap_mu);
    return found;
}

static gpufl_init_options base_opts(const char *sub)
{
    static char path[512];
    snprintf(path, sizeof path, "%s/%s", g_tmp, sub);
    gpufl_init_options o;
    gpufl_init_options_init(&o);
    o.app_name = "files";
    o.log_path = path;
    return o;
}

/* The descriptor this process has open on <dir>/<name>; -1 if none. */
static int fd_of(const char *dir, const char *name)
{
    char want[700];
    snprintf(want, sizeof want, "%s/%s", dir, name);
    for (int fd = 3; fd < 1024; fd++) {
        char link[64], target[700];
        snprintf(link, sizeof link, "/proc/self/fd/%d", fd);
        ssize_t n = readlink(link, target, sizeof target - 1);
        if (n <= 0)
            continue;
        target[n] = '\0';
        if (strcmp(target, want) == 0)
            return fd;
    }
    return -1;
}

/* n scope pairs named name, recorded while the writer waits, then written
 * in one cycle (one write() of the scope channel). */
static void scopes(const char *name, int n)
{
    fl_session_hold_writer(true);
    for (int i = 0; i < n; i++) {
        gpufl_scope s = gpufl_scope_begin(name);
        gpufl_scope_end(&s);
    }
    fl_session_hold_writer(false);
    gpufl_flush();
}

static json_t *find_cap(json_t *caps, const char *feature)
{
    size_t i;
    json_t *c;
    json_array_foreach(json_object_get(caps, "capabilities"), i, c)
    {
        if (strcmp(json_string_value(json_object_get(c, "feature")), feature) == 0)
            return c;
    }
    return NULL;
}

static json_t *last_of(const fl_log *log, const char *type)
{
    json_t *r = NULL;
    for (size_t i = 0; i < log->n; i++)
        if (strcmp(log_type(log->lines[i]), type) == 0)
            r = log->lines[i];
    return r;
}

/* Rows of every scope_event_batch, and whether each batch's names were
 * defined by an earlier dictionary_update of the file. */
static size_t scope_rows(const fl_log *log, bool *names_first)
{
    bool defined[64] = {false};
    size_t rows = 0;
    *names_first = true;
    for (size_t i = 0; i < log->n; i++) {
        json_t *r = log->lines[i];
        if (strcmp(log_type(r), "dictionary_update") == 0) {
            const char *k;
            json_t *v;
            json_object_foreach(json_object_get(r, "scope_name_dict"), k, v)
            {
                int id = atoi(k);
                if (id > 0 && id < 64)
                    defined[id] = true;
            }
        }
        if (strcmp(log_type(r), "scope_event_batch") != 0)
            continue;
        size_t ri;
        json_t *row;
        json_array_foreach(json_object_get(r, "rows"), ri, row)
        {
            json_int_t id = json_integer_value(json_array_get(row, 2));
            if (id <= 0 || id >= 64 || !defined[id])
                *names_first = false;
            rows++;
        }
    }
    return rows;
}

static void check_shutdown_loss(const fl_log *log, long long lines, long long rows)
{
    json_t *sd = last_of(log, "shutdown");
    CHECK(sd != NULL);
    if (!sd)
        return;
    CHECK(json_is_integer(json_object_get(sd, "lines_lost")));
    CHECK_INT(fl_int(sd, "lines_lost"), lines);
    CHECK_INT(fl_int(sd, "rows_lost"), rows);
}

/* ------------------------------------------------------------- log_path */

static void test_unsafe_base(void)
{
    gpufl_init_options o = base_opts("open");
    CHECK_INT(mkdir(o.log_path, 0777), 0);
    CHECK_INT(chmod(o.log_path, 0777), 0); /* whatever the umask */
    gpufl_error err;
    CHECK_INT(gpufl_init(&o, &err), GPUFL_ERR_IO);
    CHECK_CONTAINS(err.message, o.log_path);
    CHECK_CONTAINS(err.message, "writable by every user and has no sticky bit");
    CHECK_CONTAINS(err.message, "chmod +t");
    CHECK(!gpufl_is_active());
    bool nothing = true;
    char dir[600];
    nothing = fl_only_session(o.log_path, dir, sizeof dir) != 0;
    CHECK(nothing);

    /* Sticky, as /tmp: nobody may move another user's entries. */
    CHECK_INT(chmod(o.log_path, 01777), 0);
    CHECK_INT(gpufl_init(&o, &err), GPUFL_OK);
    gpufl_shutdown();
    CHECK_INT(fl_only_session(o.log_path, dir, sizeof dir), 0);
    struct stat st;
    CHECK_INT(stat(dir, &st), 0);
    CHECK_INT(st.st_mode & 0022, 0); /* ours: 0755 less the umask */
}

/* ------------------------------------------------------------ disk full */

/* Batch "b" is cut half way, then the disk is full; space comes back
 * before "c".  truncate_fails: the cut cannot be removed either. */
static void test_disk_full(bool truncate_fails)
{
    gpufl_init_options o = base_opts(truncate_fails ? "full_torn" : "full");
    gpufl_error err;
    CHECK_INT(gpufl_init(&o, &err), GPUFL_OK);
    char dir[600];
    gpufl_session_dir(dir, sizeof dir);
    scopes("a", 10);
    int fd = fd_of(dir, "scope.log");
    CHECK(fd >= 0);
    atomic_store(&fail_truncate, truncate_fails);
    atomic_store(&fail_short_next, 1);
    atomic_store(&fail_enospc, 1);
    atomic_store(&fail_fd, fd);
    scopes("a", 10); /* 20 rows, one batch line: lost */
    CHECK_INT(atomic_load(&fail_short_next), 0);
    atomic_store(&fail_enospc, 0); /* space freed */
    scopes("c", 10);
    atomic_store(&fail_fd, -1);
    atomic_store(&fail_truncate, 0);
    gpufl_shutdown();

    fl_log log;
    CHECK_INT(fl_log_read(&log, dir, "scope"), 0);
    /* The cut half line: gone, or alone on its line. */
    CHECK_INT(log.bad, truncate_fails ? 1 : 0);
    CHECK_INT(log.last_partial, 0);
    bool names_first;
    CHECK_U64(scope_rows(&log, &names_first), 40); /* "a" and "c", not the lost batch */
    CHECK(names_first);
    CHECK_INT(fl_count(&log, "scope_event_batch"), 2);
    check_shutdown_loss(&log, 1, 20);
    json_t *caps = last_of(&log, "capture_capabilities");
    json_t *c = caps ? find_cap(caps, "scope_events") : NULL;
    CHECK(c != NULL);
    if (c) {
        CHECK_STR(json_string_value(json_object_get(c, "status")), "partial");
        CHECK_STR(json_string_value(json_object_get(c, "reason_code")), "write_failed");
        const char *m = json_string_value(json_object_get(c, "message"));
        CHECK_CONTAINS(m, "20 rows in 1 lines lost");
        CHECK_CONTAINS(m, "scope.log failed: No space left on device");
    }
    fl_log_free(&log);
    /* The other channels lost nothing and say so. */
    CHECK_INT(fl_log_read(&log, dir, "system"), 0);
    CHECK_INT(log.bad, 0);
    check_shutdown_loss(&log, 1, 20); /* the session's count, on every channel */
    fl_log_free(&log);
}

/* The cycle that introduces name "d" fails whole: its dictionary line is
 * written again, before the next rows that use "d". */
static void test_dictionary_again(void)
{
    gpufl_init_options o = base_opts("full_dict");
    gpufl_error err;
    CHECK_INT(gpufl_init(&o, &err), GPUFL_OK);
    char dir[600];
    gpufl_session_dir(dir, sizeof dir);
    scopes("a", 5);
    atomic_store(&fail_enospc, 1);
    atomic_store(&fail_fd, fd_of(dir, "scope.log"));
    scopes("d", 10); /* the dictionary line and the batch */
    atomic_store(&fail_enospc, 0);
    scopes("d", 7);
    atomic_store(&fail_fd, -1);
    gpufl_shutdown();

    fl_log log;
    CHECK_INT(fl_log_read(&log, dir, "scope"), 0);
    CHECK_INT(log.bad, 0);
    bool names_first;
    CHECK_U64(scope_rows(&log, &names_first), 24);
    CHECK(names_first);
    check_shutdown_loss(&log, 1, 20); /* the batch; the names were written later */
    fl_log_free(&log);
}

/* ---------------------------------------------------- directory removed */

static void test_dir_removed(void)
{
    gpufl_init_options o = base_opts("removed");
    o.enable_debug_output = true;
    o.log_fn = capture_line;
    n_captured = 0;
    gpufl_error err;
    CHECK_INT(gpufl_init(&o, &err), GPUFL_OK);
    char dir[600];
    gpufl_session_dir(dir, sizeof dir);
    scopes("a", 5);
    fl_rmtree(dir);
    scopes("a", 10); /* noticed here: 20 rows not written */
    gpufl_shutdown();
    CHECK(said("scope.log was removed while recording"));

    const char *chans[] = {"device", "scope", "system"};
    for (int c = 0; c < 3; c++) {
        fl_log log;
        CHECK_INT(fl_log_read(&log, dir, chans[c]), 0);
        CHECK_INT(log.bad, 0);
        CHECK(log.n >= 3);
        if (log.n < 3) {
            fl_log_free(&log);
            continue;
        }
        CHECK_STR(log_type(log.lines[0]), "job_start");
        CHECK_STR(log_type(log.lines[1]), "capture_capabilities");
        CHECK_INT(fl_count(&log, "scope_event_batch"), 0);
        check_shutdown_loss(&log, 1, 20);
        json_t *caps = last_of(&log, "capture_capabilities");
        json_t *sc = caps ? find_cap(caps, "scope_events") : NULL;
        CHECK(sc != NULL);
        if (sc) {
            CHECK_STR(json_string_value(json_object_get(sc, "status")), "partial");
            CHECK_STR(json_string_value(json_object_get(sc, "reason_code")), "log_dir_removed");
            CHECK_CONTAINS(json_string_value(json_object_get(sc, "message")),
                           "20 rows in 1 lines not written");
        }
        fl_log_free(&log);
    }
}

/* ------------------------------------------------ stdin/out/err closed */

static void test_closed_stdio(void)
{
    char base[400];
    snprintf(base, sizeof base, "%s/stdio", g_tmp);
    fflush(NULL);
    pid_t pid = fork();
    if (pid == 0) {
        close(0);
        close(1);
        close(2);
        gpufl_init_options o;
        gpufl_init_options_init(&o);
        o.log_path = base;
        o.enable_debug_output = true; /* to stderr: no log_fn */
        if (gpufl_init(&o, NULL) != GPUFL_OK)
            _exit(3);
        printf("APP-STDOUT-MARKER\n");
        fflush(stdout);
        ssize_t w = write(1, "APP-FD1-MARKER\n", 15);
        w += write(2, "APP-FD2-MARKER\n", 15);
        (void)w;
        GPUFL_SCOPE("s") {}
        gpufl_system_start("p"); /* a debug line */
        gpufl_system_stop("p");
        gpufl_shutdown();
        _exit(0);
    }
    int status = 0;
    waitpid(pid, &status, 0);
    CHECK(WIFEXITED(status) && WEXITSTATUS(status) == 0);
    char dir[600];
    CHECK_INT(fl_only_session(base, dir, sizeof dir), 0);
    const char *chans[] = {"device", "scope", "system"};
    for (int c = 0; c < 3; c++) {
        char path[700];
        snprintf(path, sizeof path, "%s/%s.log", dir, chans[c]);
        char *text = check_read_file(path, NULL);
        CHECK(text != NULL);
        CHECK(text && !strstr(text, "MARKER"));
        CHECK(text && !strstr(text, "[gpufl]"));
        free(text);
        fl_log log;
        CHECK_INT(fl_log_read(&log, dir, chans[c]), 0);
        CHECK_INT(log.bad, 0);
        CHECK_INT(fl_count(&log, "shutdown"), 1);
        fl_log_free(&log);
    }
}

int main(void)
{
    unsetenv("GPUFL_CONFIG_FILE");
    unsetenv("GPUFL_DISABLED");
    snprintf(g_tmp, sizeof g_tmp, "/tmp/gpufl_files_XXXXXX");
    if (!mkdtemp(g_tmp)) {
        perror("mkdtemp");
        return 1;
    }
    test_unsafe_base();
    test_disk_full(false);
    test_disk_full(true);
    test_dictionary_again();
    test_dir_removed();
    test_closed_stdio();
    fl_rmtree(g_tmp);
    return check_done("test_gpufl_files");
}
