/*
 * test_read_bounds.c - the reader's bounds on what it opens and how much of
 * a file it reads (src/reader/files.c, issue 16 point 7):
 *   - a FIFO as device.log, and device.log a symlink to /dev/zero, are
 *     refused at once, naming the file and what it is (before, the FIFO
 *     blocked the read and /dev/zero was read for ever); with another
 *     channel file readable the read goes on with a warning;
 *   - a gzip bomb (a window of a few records and then a million empty
 *     lines, or 8 MiB without a newline, each a few KiB compressed) is
 *     read up to the caps of fl_read_opts (lines, decompressed bytes) and
 *     no further: a warning naming the file and the cap, capped_files, and
 *     the records before the cap kept;
 *   - the caps from the environment (GPU_PROFILE_MAX_FILE_LINES), and a
 *     value there that is not a whole number from 1 refused naming it
 *     (issue 32, point 5);
 *   - a record of more than 2^20 values (its Jansson tree would take
 *     gigabytes) skipped with a warning, commas inside strings not
 *     counted (issue 32, point 1);
 *   - SIGINT pending (blocked by the caller) ends a read of blank lines
 *     within one read of 256 KiB (issue 32 point 3);
 *   - a directory of random bytes is an error, nothing read (point 10).
 * An alarm fails the test if a read blocks or runs on.
 */
#include "check.h"
#include "fl_log.h"
#include "reader/read.h"
#include "util/fs.h"

#include <signal.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>
#include <zlib.h>

#define SID "aaaaaaaa-0000-4000-8000-00000000b0b0"

static char root[256];

typedef struct got {
    int records, batches, warnings;
    char warns[4096];
} got;

static void on_rec(void *user, int channel, fl_type t, const char *type, json_t *rec)
{
    (void)channel, (void)t, (void)type, (void)rec;
    ((got *)user)->records++;
}

static void on_batch(void *user, const fl_batch *b)
{
    (void)b;
    ((got *)user)->batches++;
}

static void on_warn(void *user, const char *file, uint64_t line, const char *msg)
{
    got *g = user;
    g->warnings++;
    if (strncmp(msg, "not JSON", 8) == 0)
        return; /* the bombs' empty lines */
    size_t n = strlen(g->warns);
    snprintf(g->warns + n, sizeof g->warns - n, "%s:%llu: %s\n", file ? file : "?",
             (unsigned long long)line, msg);
}

static void on_alarm(int sig)
{
    (void)sig;
    static const char m[] = "test_read_bounds: a read blocked or ran on (alarm)\n";
    if (write(2, m, sizeof m - 1) < 0)
        _exit(3);
    _exit(3);
}

static gp_status read_dir(const char *dir, const fl_read_opts *o, got *g, fl_read_result *res,
                          gp_error *err)
{
    memset(g, 0, sizeof *g);
    fl_read_cb cb = {.user = g, .record = on_rec, .batch = on_batch, .warning = on_warn};
    alarm(30);
    gp_status st = fl_read_session(dir, o, &cb, res, err);
    alarm(0);
    return st;
}

static char *path_in(const char *dir, const char *name)
{
    static char buf[4][512];
    static int k;
    char *p = buf[k++ & 3];
    snprintf(p, sizeof buf[0], "%s/%s", dir, name);
    return p;
}

static void put_file(const char *path, const char *text)
{
    FILE *f = fopen(path, "wb");
    CHECK(f != NULL);
    if (f) {
        fputs(text, f);
        fclose(f);
    }
}

static const char job_start[] = "{\"version\":1,\"type\":\"job_start\",\"pid\":1,\"app\":\"a\","
                                "\"session_id\":\"" SID "\",\"ts_ns\":1760000000000000000}\n";
static const char kbatch[] =
    "{\"version\":1,\"type\":\"kernel_event_batch\",\"session_id\":\"" SID "\",\"batch_id\":1,"
    "\"base_time_ns\":5,\"columns\":[\"dt_ns\",\"duration_ns\"],\"rows\":[[0,7],[5,6]]}\n";

static void test_not_regular(void)
{
    char dir[512];
    snprintf(dir, sizeof dir, "%s", path_in(root, "fifo"));
    CHECK(fl_make_dirs(dir) == 0);
    char fifo[512];
    snprintf(fifo, sizeof fifo, "%s", path_in(dir, "device.log"));
    CHECK_INT(mkfifo(fifo, 0600), 0);
    got g;
    fl_read_result res;
    gp_error err;
    /* The FIFO alone: an error naming it. */
    CHECK_INT(read_dir(dir, NULL, &g, &res, &err), GP_ERR_IO);
    CHECK_CONTAINS(err.message, fifo);
    CHECK_CONTAINS(err.message, "it is a FIFO, not a regular file");
    /* Beside a readable channel file: a warning, the rest is read. */
    put_file(path_in(dir, "scope.log"), job_start);
    CHECK_INT(read_dir(dir, NULL, &g, &res, &err), GP_OK);
    CHECK_INT(g.records, 1);
    CHECK_U64(res.files, 1);
    CHECK_CONTAINS(g.warns, fifo);
    CHECK_CONTAINS(g.warns, "it is a FIFO, not a regular file");
    unlink(fifo);

    /* device.log -> /dev/zero (and a window -> /dev/zero, gzipped). */
    CHECK_INT(symlink("/dev/zero", fifo), 0);
    CHECK_INT(symlink("/dev/zero", path_in(dir, "device.1.log.gz")), 0);
    CHECK_INT(read_dir(dir, NULL, &g, &res, &err), GP_OK);
    CHECK_U64(res.files, 1);
    CHECK_CONTAINS(g.warns, "device.log: it is a character device, not a regular file");
    CHECK_CONTAINS(g.warns, "device.1.log.gz: it is a character device, not a regular file");
    unlink(path_in(dir, "scope.log"));
    CHECK_INT(read_dir(dir, NULL, &g, &res, &err), GP_ERR_IO);
    CHECK_CONTAINS(err.message, "a character device, not a regular file");
    fl_rmtree(dir);
}

/* A gzipped window: head, then n copies of fill (a few KiB compressed). */
static void put_bomb(const char *path, const char *head, const char *fill, size_t n)
{
    gzFile z = gzopen(path, "wb9");
    CHECK(z != NULL);
    if (!z)
        return;
    gzputs(z, head);
    char block[65536];
    size_t fl = strlen(fill), per = sizeof block / fl;
    for (size_t i = 0; i < per; i++)
        memcpy(block + i * fl, fill, fl);
    for (size_t done = 0; done < n; done += per) {
        size_t k = n - done < per ? n - done : per;
        CHECK(gzwrite(z, block, (unsigned)(k * fl)) == (int)(k * fl));
    }
    gzclose(z);
}

static void test_bombs(void)
{
    char dir[512];
    snprintf(dir, sizeof dir, "%s", path_in(root, "bomb"));
    CHECK(fl_make_dirs(dir) == 0);
    char head[1024];
    snprintf(head, sizeof head, "%s%s", job_start, kbatch);
    char lines_gz[512];
    snprintf(lines_gz, sizeof lines_gz, "%s", path_in(dir, "device.1.log.gz"));
    put_bomb(lines_gz, head, "\n", 1000000);
    struct stat st;
    CHECK(stat(lines_gz, &st) == 0 && st.st_size < 64 * 1024);

    got g;
    fl_read_result res;
    gp_error err;
    fl_read_opts o;
    fl_read_opts_init(&o);
    o.max_file_lines = 1000;
    CHECK_INT(read_dir(dir, &o, &g, &res, &err), GP_OK);
    CHECK_INT(g.records, 1); /* job_start and the batch before the cap */
    CHECK_INT(g.batches, 1);
    CHECK_U64(res.lines, 1000);
    CHECK_U64(res.capped_files, 1);
    CHECK_CONTAINS(g.warns, "device.1.log.gz:1001: more than 1000 lines: the rest of the file is "
                            "not read (the reader's cap per file; GPU_PROFILE_MAX_FILE_LINES "
                            "raises it)");

    /* The same cap from the environment. */
    setenv("GPU_PROFILE_MAX_FILE_LINES", "5000", 1);
    CHECK_INT(read_dir(dir, NULL, &g, &res, &err), GP_OK);
    unsetenv("GPU_PROFILE_MAX_FILE_LINES");
    CHECK_U64(res.lines, 5000);
    CHECK_U64(res.capped_files, 1);
    CHECK_CONTAINS(g.warns, "more than 5000 lines");

    /* A bad value is refused naming the variable, never read as the
     * default (issue 32, point 5); a cap in the options needs none. */
    static const char *const bad[] = {
        "abc", "-1", "0", "4M", "100 ", " 100", "+5", "0x10", "18446744073709551616"};
    static const char *const vars[] = {"GPU_PROFILE_MAX_FILE_LINES", "GPU_PROFILE_MAX_FILE_BYTES"};
    for (size_t v = 0; v < 2; v++) {
        for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
            setenv(vars[v], bad[i], 1);
            char want[200];
            snprintf(want, sizeof want,
                     "%s='%s': use a whole number from 1 (decimal digits only), or unset it for "
                     "the default",
                     vars[v], bad[i]);
            CHECK_INT(read_dir(dir, NULL, &g, &res, &err), GP_ERR_INVALID_ARG);
            CHECK_STR(err.message, want);
            CHECK_INT(fl_read_env_check(&err), GP_ERR_INVALID_ARG);
            CHECK_STR(err.message, want);
        }
        fl_read_opts_init(&o);
        o.max_file_lines = 1000000;
        o.max_file_bytes = 1ull << 40;
        CHECK_INT(read_dir(dir, &o, &g, &res, &err), GP_OK);
        setenv(vars[v], "", 1); /* set but empty: the default */
        CHECK_INT(fl_read_env_check(&err), GP_OK);
        CHECK_INT(read_dir(dir, NULL, &g, &res, &err), GP_OK);
        unsetenv(vars[v]);
    }

    /* 8 MiB without a newline after the records, capped at 1 MiB. */
    unlink(lines_gz);
    put_bomb(path_in(dir, "scope.1.log.gz"), head, "x", 8u << 20);
    fl_read_opts_init(&o);
    o.max_file_bytes = 1u << 20;
    CHECK_INT(read_dir(dir, &o, &g, &res, &err), GP_OK);
    CHECK_INT(g.records, 1);
    CHECK_INT(g.batches, 1);
    CHECK_U64(res.capped_files, 1);
    CHECK(res.bytes < (2u << 20));
    CHECK_CONTAINS(g.warns, "scope.1.log.gz:3: more than 1048576 decompressed bytes: the rest of "
                            "the file is not read");

    /* Within the caps: read whole, no warning. */
    CHECK_INT(read_dir(dir, NULL, &g, &res, &err), GP_OK);
    CHECK_U64(res.capped_files, 0);
    CHECK(res.bytes > (8u << 20));
    fl_rmtree(dir);
}

/* A record line: head, then n copies of item joined by sep, then tail. */
static char *repeat_line(const char *head, const char *item, const char *sep, size_t n,
                         const char *tail, size_t *len)
{
    size_t hl = strlen(head), il = strlen(item), sl = strlen(sep), tl = strlen(tail);
    char *s = malloc(hl + n * (il + sl) + tl + 1);
    if (!s)
        return NULL;
    char *p = s;
    memcpy(p, head, hl);
    p += hl;
    for (size_t i = 0; i < n; i++) {
        if (i) {
            memcpy(p, sep, sl);
            p += sl;
        }
        memcpy(p, item, il);
        p += il;
    }
    memcpy(p, tail, tl + 1);
    *len = (size_t)(p - s) + tl;
    return s;
}

static void test_many_values(void)
{
    size_t len;
    got g;
    memset(&g, 0, sizeof g);
    fl_read_cb cb = {.user = &g, .record = on_rec, .batch = on_batch, .warning = on_warn};
    fl_read_result res;
    memset(&res, 0, sizeof res);
    char *line = repeat_line("{\"version\":1,\"type\":\"dictionary_update\",\"session_id\":\"" SID
                             "\",\"x\":[",
                             "1", ",", ((size_t)1 << 20) + 1, "]}", &len);
    CHECK(line != NULL);
    if (!line)
        return;
    CHECK_U64(fl_read_lines(line, len, 0, NULL, &cb, &res, "device.log"), 1);
    free(line);
    CHECK_INT(g.records, 0);
    CHECK_U64(res.bad_records, 1);
    CHECK_STR(g.warns, "device.log:1: bad dictionary_update: more than 1048576 values in one "
                       "record (the reader's cap); skipped\n");
    /* As many commas in a string are one value. */
    memset(&g, 0, sizeof g);
    memset(&res, 0, sizeof res);
    line = repeat_line("{\"version\":1,\"type\":\"dictionary_update\",\"session_id\":\"" SID
                       "\",\"kernel_dict\":{\"1\":\"f(",
                       "int\\\"", ",", (size_t)3 << 20, ")\"}}", &len);
    CHECK(line != NULL);
    if (!line)
        return;
    CHECK_U64(fl_read_lines(line, len, 0, NULL, &cb, &res, "device.log"), 0);
    free(line);
    CHECK_INT(g.records, 1);
    CHECK_U64(res.bad_records, 0);
    CHECK_STR(g.warns, "");
}

/* The child of test_interrupt: at its 1000th warning it tells the parent
 * (up) and waits for the parent's word (down) that SIGINT was sent. */
typedef struct intr_child {
    int up, down;
    uint64_t warnings;
} intr_child;

static void on_intr_warn(void *user, const char *file, uint64_t line, const char *msg)
{
    (void)file, (void)line, (void)msg;
    intr_child *c = user;
    if (++c->warnings != 1000)
        return;
    char b = 'w';
    if (write(c->up, &b, 1) != 1 || read(c->down, &b, 1) != 1)
        _exit(4);
}

/* A reader whose caller blocks SIGINT (gpufl's Python report does) ends
 * its read once SIGINT is pending, whatever the lines are - here a window
 * of 16 Mi blank lines, each a warning (issue 32 point 3: before, the read
 * ran to its end and ^C waited for it). */
static void test_interrupt(void)
{
    char dir[512];
    snprintf(dir, sizeof dir, "%s", path_in(root, "intr"));
    CHECK(fl_make_dirs(dir) == 0);
    put_bomb(path_in(dir, "device.1.log.gz"), job_start, "\n", 16u << 20);
    int up[2], down[2];
    CHECK(pipe(up) == 0 && pipe(down) == 0);
    struct {
        gp_status st;
        fl_read_result res;
        char msg[512];
    } *out = mmap(NULL, sizeof *out, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
    CHECK(out != MAP_FAILED);
    fflush(NULL);
    pid_t pid = fork();
    if (pid == 0) {
        sigset_t s, old;
        sigemptyset(&s);
        sigaddset(&s, SIGINT);
        sigprocmask(SIG_BLOCK, &s, &old);
        signal(SIGINT, SIG_DFL);
        intr_child c = {.up = up[1], .down = down[0]};
        fl_read_cb cb = {.user = &c, .warning = on_intr_warn};
        gp_error err;
        out->st = fl_read_session(dir, NULL, &cb, &out->res, &err);
        snprintf(out->msg, sizeof out->msg, "%s", out->st ? err.message : "");
        /* Still pending: unblocked, it ends the child as ^C would. */
        sigprocmask(SIG_SETMASK, &old, NULL);
        _exit(0);
    }
    char b;
    CHECK_INT(read(up[0], &b, 1), 1);
    CHECK_INT(kill(pid, SIGINT), 0);
    CHECK_INT(write(down[1], "k", 1), 1);
    int status = 0;
    alarm(60);
    CHECK(waitpid(pid, &status, 0) == pid);
    alarm(0);
    CHECK(WIFSIGNALED(status) && WTERMSIG(status) == SIGINT);
    CHECK_INT(out->st, GP_ERR_IO);
    CHECK_CONTAINS(out->msg, "device.1.log.gz:");
    CHECK_CONTAINS(out->msg, ": the read was interrupted (SIGINT)");
    /* Within the read of 256 KiB that was under way (256 Ki blank lines). */
    CHECK(out->res.lines >= 1000 && out->res.lines < 1001 + (2u << 18));
    /* Pending before the read: it ends while the session is looked for. */
    fflush(NULL);
    pid = fork();
    if (pid == 0) {
        sigset_t s;
        sigemptyset(&s);
        sigaddset(&s, SIGTERM);
        sigprocmask(SIG_BLOCK, &s, NULL);
        raise(SIGTERM);
        fl_read_cb cb = {0};
        gp_error err;
        out->st = fl_read_session(dir, NULL, &cb, &out->res, &err);
        snprintf(out->msg, sizeof out->msg, "%s", out->st ? err.message : "");
        _exit(0);
    }
    CHECK(waitpid(pid, &status, 0) == pid);
    CHECK(WIFEXITED(status) && WEXITSTATUS(status) == 0);
    CHECK_INT(out->st, GP_ERR_IO);
    char want[600];
    snprintf(want, sizeof want, "%s: the read was interrupted (SIGTERM)", dir);
    CHECK_STR(out->msg, want);
    CHECK_U64(out->res.lines, 0);
    munmap(out, sizeof *out);
    close(up[0]), close(up[1]), close(down[0]), close(down[1]);
    fl_rmtree(dir);
}

/* A session directory of random bytes: not one line is a record, so
 * nothing was read (issue 32 point 10: was an empty report, exit 2). */
static void test_random_bytes(void)
{
    char dir[512];
    snprintf(dir, sizeof dir, "%s", path_in(root, "random"));
    CHECK(fl_make_dirs(dir) == 0);
    char buf[8192];
    uint64_t x = 0x2545f4914f6cdd1dull;
    for (size_t i = 0; i < sizeof buf - 1; i++) {
        x ^= x << 13, x ^= x >> 7, x ^= x << 17;
        buf[i] = (char)(x % 255 + 1);
    }
    buf[sizeof buf - 1] = '\0';
    put_file(path_in(dir, "device.log"), buf);
    put_file(path_in(dir, "scope.1.log.gz"), buf + 77); /* not gzip: read as it is */
    got g;
    fl_read_result res;
    gp_error err;
    CHECK_INT(read_dir(dir, NULL, &g, &res, &err), GP_ERR_IO);
    CHECK_INT(g.records, 0);
    CHECK_U64(res.files, 2);
    char want[700];
    snprintf(want, sizeof want,
             "%s: nothing was read: none of the %llu lines of its 2 files is a GPUFlight record "
             "(the warnings say what each is); name a session's log directory",
             dir, (unsigned long long)res.lines);
    CHECK_STR(err.message, want);
    CHECK(res.lines > 2);
    /* One record after them: read (a partial read). */
    FILE *f = fopen(path_in(dir, "device.log"), "ab");
    CHECK(f != NULL);
    if (f) {
        fprintf(f, "\n%s", job_start);
        fclose(f);
    }
    CHECK_INT(read_dir(dir, NULL, &g, &res, &err), GP_OK);
    CHECK_INT(g.records, 1);
    CHECK(res.bad_lines > 0);
    fl_rmtree(dir);
}

int main(void)
{
    signal(SIGALRM, on_alarm);
    unsetenv("GPU_PROFILE_MAX_FILE_LINES");
    unsetenv("GPU_PROFILE_MAX_FILE_BYTES");
    const char *base = getenv("TMPDIR");
    snprintf(root, sizeof root, "%s/gp_read_bounds_XXXXXX", base && *base ? base : "/tmp");
    if (!mkdtemp(root)) {
        perror("mkdtemp");
        return 2;
    }
    test_not_regular();
    test_bombs();
    test_many_values();
    test_interrupt();
    test_random_bytes();
    fl_rmtree(root);
    return check_done("test_read_bounds");
}
