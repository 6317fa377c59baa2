/*
 * test_read_hostile.c - hostile sessions read back within a bounded CPU
 * (issue 32 points 2 and 10; label slow: each reads up to 64 MiB of
 * decompressed bombs, generated here at run time from one compressed block
 * written many times, under 20 MiB on disk):
 *   - gzip bombs spread over windows, each window under the caps per file:
 *     64 windows of repeated memset_event records (4 GiB decompressed) and
 *     16 windows of blank lines (1 GiB) stop at the session's gzip ratio
 *     (200 past 64 MiB) with a warning naming GPU_PROFILE_MAX_GZIP_RATIO,
 *     the records before it kept; through `gpu-profile report` and
 *     `export`: exit 2, the warning, the output written.  The CPU of each
 *     read (a child's ru_utime + ru_stime, never wall time) stays under a
 *     bound scaled for sanitizer builds, where before the fix it ran past
 *     the child's RLIMIT_CPU;
 *   - the session's cap on decompressed bytes (GPU_PROFILE_MAX_SESSION_BYTES,
 *     fl_read_opts.max_session_bytes): the windows after it are not read;
 *   - GPU_PROFILE_MAX_GZIP_RATIO raised: the same kind of bomb read whole;
 *   - a directory of random bytes (point 10): nothing was read, an error
 *     (`report` exit 1, nothing on stdout) instead of an empty report.
 */
#include "check.h"
#include "fl_log.h"
#include "reader/read.h"
#include "util/fs.h"

#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <sys/mman.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>
#include <zlib.h>

#define SID "aaaaaaaa-0000-4000-8000-00000000b0b1"

#if defined(__SANITIZE_ADDRESS__) || defined(__SANITIZE_THREAD__)
#define CPU_SCALE 6
#else
#define CPU_SCALE 1
#endif
/* What one read may cost, in CPU seconds: the fix reads at most 64 MiB of
 * each bomb (about 1 s plain); unbounded, each took minutes. */
#define CPU_BOUND_S (12.0 * CPU_SCALE)

static char root[256];

static const char job_start[] = "{\"version\":1,\"type\":\"job_start\",\"pid\":1,\"app\":\"a\","
                                "\"session_id\":\"" SID "\",\"ts_ns\":1760000000000000000}\n";
static const char memset_line[] =
    "{\"version\":1,\"type\":\"memset_event\",\"session_id\":\"" SID "\",\"device_id\":0,"
    "\"stream_id\":7,\"bytes\":4096,\"start_ns\":1760000000000000100,\"duration_ns\":900}\n";

static char *path_in(const char *dir, const char *name)
{
    static char buf[4][512];
    static int k;
    char *p = buf[k++ & 3];
    snprintf(p, sizeof buf[0], "%s/%s", dir, name);
    return p;
}

static char *make_dir(const char *name)
{
    static char buf[2][512];
    static int k;
    char *p = buf[k++ & 1];
    snprintf(p, sizeof buf[0], "%s/%s", root, name);
    CHECK(fl_make_dirs(p) == 0);
    return p;
}

/* One gzip member holding n_bytes of fill repeated (malloc'd, *len). */
static unsigned char *gz_member(const char *fill, size_t n_bytes, size_t *len)
{
    size_t fl = strlen(fill), blk = 1 << 20;
    n_bytes = n_bytes / fl * fl; /* whole lines: members end at a line's end */
    char *in = malloc(blk);
    unsigned char *out = malloc(n_bytes / 64 + 4096);
    CHECK(in && out);
    for (size_t i = 0; i + fl <= blk; i += fl)
        memcpy(in + i, fill, fl);
    size_t per = blk / fl * fl;
    z_stream z;
    memset(&z, 0, sizeof z);
    CHECK_INT(deflateInit2(&z, 9, Z_DEFLATED, 31, 9, Z_DEFAULT_STRATEGY), Z_OK);
    z.next_out = out;
    z.avail_out = (uInt)(n_bytes / 64 + 4096);
    bool ok = true;
    for (size_t done = 0; done < n_bytes; done += per) {
        z.next_in = (Bytef *)in;
        z.avail_in = (uInt)(n_bytes - done < per ? n_bytes - done : per);
        ok &= deflate(&z, Z_NO_FLUSH) == Z_OK;
    }
    CHECK(ok);
    CHECK_INT(deflate(&z, Z_FINISH), Z_STREAM_END);
    *len = z.total_out;
    deflateEnd(&z);
    free(in);
    return out;
}

static void put_bytes(const char *path, const void *p, size_t n, const char *mode)
{
    FILE *f = fopen(path, mode);
    CHECK(f != NULL);
    if (f) {
        CHECK(fwrite(p, 1, n, f) == n);
        fclose(f);
    }
}

/* Windows device.1..n.log.gz, each `members` copies of member (gzip
 * members read as one stream); the first starts with a job_start. */
static void put_windows(const char *dir, int n, int members, const unsigned char *member,
                        size_t len)
{
    size_t hl;
    unsigned char *head = gz_member(job_start, strlen(job_start), &hl);
    for (int w = 1; w <= n; w++) {
        char name[64];
        snprintf(name, sizeof name, "device.%d.log.gz", w);
        const char *p = path_in(dir, name);
        put_bytes(p, "", 0, "wb");
        if (w == 1)
            put_bytes(p, head, hl, "ab");
        for (int m = 0; m < members; m++)
            put_bytes(p, member, len, "ab");
    }
    free(head);
}

/* ------------------------------------------------ a read in a child */

/* What a read in a child found (shared memory: the parent reads it). */
typedef struct outcome {
    gp_status st;
    fl_read_result res;
    uint64_t records, warnings;
    char err[512];
    char warn[1024]; /* the warnings not about one line's content */
} outcome;

static void on_rec(void *user, int channel, fl_type t, const char *type, json_t *rec)
{
    (void)channel, (void)t, (void)type, (void)rec;
    ((outcome *)user)->records++;
}

static void on_warn(void *user, const char *file, uint64_t line, const char *msg)
{
    (void)file, (void)line;
    outcome *o = user;
    o->warnings++;
    if (strncmp(msg, "not JSON", 8) == 0)
        return;
    size_t n = strlen(o->warn);
    snprintf(o->warn + n, sizeof o->warn - n, "%s\n", msg);
}

/* The child's CPU: past this it dies of SIGXCPU (the unbounded read). */
static void cpu_limit(void)
{
    rlim_t s = (rlim_t)(CPU_BOUND_S * 3);
    struct rlimit rl = {s, s + 5};
    setrlimit(RLIMIT_CPU, &rl);
}

static double cpu_s(const struct rusage *ru)
{
    return (double)ru->ru_utime.tv_sec + ru->ru_utime.tv_usec / 1e6 + ru->ru_stime.tv_sec +
           ru->ru_stime.tv_usec / 1e6;
}

/* fl_read_session(dir, o) in a child; *o_out what it found, returns the
 * child's CPU seconds (-1 when it did not exit normally). */
static double read_in_child(const char *dir, const fl_read_opts *opts, outcome *out)
{
    outcome *o = mmap(NULL, sizeof *o, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
    CHECK(o != MAP_FAILED);
    memset(o, 0, sizeof *o);
    fflush(NULL);
    pid_t pid = fork();
    if (pid == 0) {
        cpu_limit();
        fl_read_cb cb = {.user = o, .record = on_rec, .warning = on_warn};
        gp_error err;
        o->st = fl_read_session(dir, opts, &cb, &o->res, &err);
        if (o->st != GP_OK)
            snprintf(o->err, sizeof o->err, "%s", err.message);
        _exit(0);
    }
    int status = 0;
    struct rusage ru;
    CHECK(wait4(pid, &status, 0, &ru) == pid);
    *out = *o;
    munmap(o, sizeof *o);
    bool ok = WIFEXITED(status) && WEXITSTATUS(status) == 0;
    if (!ok)
        fprintf(stderr, "the read's child ended with status 0x%x after %.1f s of CPU\n", status,
                cpu_s(&ru));
    return ok ? cpu_s(&ru) : -1;
}

/* gpu-profile with args, stdout and stderr into files under root; its exit
 * code (-1: killed), *cpu its CPU seconds. */
static int run_cli(const char *const *args, double *cpu)
{
    const char *cli = check_env("GP_TEST_CLI");
    fflush(NULL);
    pid_t pid = fork();
    if (pid == 0) {
        cpu_limit();
        int o = open(path_in(root, "out.txt"), O_WRONLY | O_CREAT | O_TRUNC, 0600);
        int e = open(path_in(root, "err.txt"), O_WRONLY | O_CREAT | O_TRUNC, 0600);
        if (o < 0 || e < 0 || dup2(o, 1) < 0 || dup2(e, 2) < 0)
            _exit(126);
        const char *argv[16] = {cli};
        for (int i = 0; args[i] && i < 14; i++)
            argv[i + 1] = args[i];
        execv(cli, (char *const *)argv);
        _exit(127);
    }
    int status = 0;
    struct rusage ru;
    CHECK(wait4(pid, &status, 0, &ru) == pid);
    *cpu = cpu_s(&ru);
    if (!WIFEXITED(status))
        fprintf(stderr, "gpu-profile %s ended with status 0x%x after %.1f s of CPU\n", args[0],
                status, *cpu);
    return WIFEXITED(status) ? WEXITSTATUS(status) : -1;
}

static char *slurp(const char *path)
{
    static char buf[1 << 16];
    buf[0] = '\0';
    FILE *f = fopen(path, "rb");
    if (f) {
        size_t n = fread(buf, 1, sizeof buf - 1, f);
        buf[n] = '\0';
        fclose(f);
    }
    return buf;
}

static const char ratio_warning[] =
    "(a gzip bomb): the rest of the session is not read (the reader's cap on the ratio past 64 "
    "MiB; GPU_PROFILE_MAX_GZIP_RATIO raises it)";

/* ------------------------------------------------------------ the cases */

/* 64 windows of 8 x 8 MiB of memset_event lines (4 GiB, ~17 MB on disk). */
static void test_memset_windows(void)
{
    char *dir = make_dir("memset");
    size_t len;
    unsigned char *m = gz_member(memset_line, 8u << 20, &len);
    put_windows(dir, 64, 8, m, len);
    free(m);

    outcome o;
    double cpu = read_in_child(dir, NULL, &o);
    CHECK(cpu >= 0 && cpu < CPU_BOUND_S);
    CHECK_INT(o.st, GP_OK);
    CHECK(o.res.session_capped);
    CHECK_U64(o.res.capped_files, 1);
    CHECK(o.res.files < 64);
    /* Stopped at the floor: 64 MiB and at most the reads of a chunk more. */
    CHECK(o.res.bytes > (64u << 20) && o.res.bytes < (66u << 20));
    CHECK(o.records > 300000); /* the job_start and the memsets before the stop */
    CHECK_CONTAINS(o.warn, ratio_warning);
    CHECK_CONTAINS(o.warn, "the session's gzip streams gave ");
    CHECK_U64(o.res.bad_lines, 0);
    CHECK_U64(o.warnings, 1);

    /* The command: the report and the export are written, exit 2. */
    const char *report[] = {"report", dir, NULL};
    CHECK_INT(run_cli(report, &cpu), 2);
    CHECK(cpu < CPU_BOUND_S);
    CHECK_CONTAINS(slurp(path_in(root, "err.txt")), ratio_warning);
    CHECK_CONTAINS(slurp(path_in(root, "err.txt")),
                   "1 files past a cap not read to their end (the session's cap: the files "
                   "after them not read)");
    CHECK_CONTAINS(slurp(path_in(root, "out.txt")), "report");
    const char *trace[] = {"export", "--format", "chrome-trace", "-o", path_in(root, "t.json"),
                           dir,      NULL};
    CHECK_INT(run_cli(trace, &cpu), 2);
    CHECK(cpu < CPU_BOUND_S);
    CHECK_CONTAINS(slurp(path_in(root, "err.txt")), ratio_warning);
    struct stat st;
    CHECK(stat(path_in(root, "t.json"), &st) == 0 && st.st_size > 0 && st.st_size < (256 << 20));
    unlink(path_in(root, "t.json"));
    fl_rmtree(dir);
}

/* 16 windows of 64 MiB of blank lines (1 GiB, ~1 MiB on disk); then with
 * the ratio raised, 2 of them read whole. */
static void test_blank_windows(void)
{
    char *dir = make_dir("blank");
    size_t len;
    unsigned char *m = gz_member("\n", 64u << 20, &len);
    put_windows(dir, 16, 1, m, len);

    outcome o;
    double cpu = read_in_child(dir, NULL, &o);
    CHECK(cpu >= 0 && cpu < CPU_BOUND_S);
    CHECK_INT(o.st, GP_OK);
    CHECK(o.res.session_capped);
    CHECK_U64(o.records, 1);
    CHECK(o.res.bad_lines >= (64u << 20) - 1 && o.res.bad_lines < (66u << 20));
    CHECK_CONTAINS(o.warn, ratio_warning);
    const char *report[] = {"report", dir, NULL};
    CHECK_INT(run_cli(report, &cpu), 2);
    CHECK(cpu < CPU_BOUND_S);
    CHECK_CONTAINS(slurp(path_in(root, "err.txt")), "not JSON: a blank line");
    CHECK_CONTAINS(slurp(path_in(root, "err.txt")), ratio_warning);

    /* Raised: two windows of 48 MiB read to their ends, no stop. */
    fl_rmtree(dir);
    dir = make_dir("blank2");
    free(m);
    m = gz_member("\n", 48u << 20, &len);
    put_windows(dir, 2, 1, m, len);
    free(m);
    setenv("GPU_PROFILE_MAX_GZIP_RATIO", "5000", 1);
    cpu = read_in_child(dir, NULL, &o);
    unsetenv("GPU_PROFILE_MAX_GZIP_RATIO");
    CHECK(cpu >= 0 && cpu < CPU_BOUND_S);
    CHECK_INT(o.st, GP_OK);
    CHECK(!o.res.session_capped);
    CHECK_U64(o.res.capped_files, 0);
    CHECK_U64(o.res.bad_lines, 2 * (48u << 20));
    CHECK_U64(o.res.files, 2);
    fl_rmtree(dir);
}

/* Three plain windows of ~120 KB: the session's cap at 100000 bytes stops
 * the read in the first; the others are not read. */
static void test_session_bytes(void)
{
    char *dir = make_dir("plain");
    char line[256];
    snprintf(line, sizeof line,
             "{\"version\":1,\"type\":\"kernel_event_batch\",\"session_id\":\"" SID "\","
             "\"batch_id\":1,\"base_time_ns\":5,\"columns\":[\"dt_ns\",\"duration_ns\"],"
             "\"rows\":[[0,7],[5,6]]}\n");
    for (int w = 1; w <= 3; w++) {
        char name[64];
        snprintf(name, sizeof name, "device.%d.log", w);
        const char *p = path_in(dir, name);
        put_bytes(p, job_start, strlen(job_start), "wb");
        for (int i = 0; i < 600; i++)
            put_bytes(p, line, strlen(line), "ab");
    }
    outcome o;
    fl_read_opts opts;
    fl_read_opts_init(&opts);
    opts.max_session_bytes = 100000;
    CHECK(read_in_child(dir, &opts, &o) >= 0);
    CHECK_INT(o.st, GP_OK);
    CHECK(o.res.session_capped);
    CHECK_U64(o.res.files, 1);
    CHECK_CONTAINS(o.warn, "more than 100000 bytes read (decompressed) in this session: the "
                           "rest of the session is not read (the reader's cap per session; "
                           "GPU_PROFILE_MAX_SESSION_BYTES raises it)");
    setenv("GPU_PROFILE_MAX_SESSION_BYTES", "300000", 1);
    CHECK(read_in_child(dir, NULL, &o) >= 0);
    CHECK(o.res.session_capped);
    CHECK_U64(o.res.files, 3);
    CHECK_CONTAINS(o.warn, "more than 300000 bytes");
    double cpu;
    const char *report[] = {"report", dir, NULL};
    CHECK_INT(run_cli(report, &cpu), 2);
    CHECK_CONTAINS(slurp(path_in(root, "err.txt")), "GPU_PROFILE_MAX_SESSION_BYTES raises it");
    unsetenv("GPU_PROFILE_MAX_SESSION_BYTES");
    CHECK(read_in_child(dir, NULL, &o) >= 0);
    CHECK(!o.res.session_capped);
    CHECK_U64(o.res.files, 3);
    fl_rmtree(dir);
}

/* A session directory of random bytes: nothing read, an error. */
static void test_random_bytes(void)
{
    char *dir = make_dir("random");
    unsigned char buf[65536];
    uint64_t x = 0x9e3779b97f4a7c15ull;
    for (size_t i = 0; i < sizeof buf; i++) {
        x ^= x << 13, x ^= x >> 7, x ^= x << 17;
        buf[i] = (unsigned char)x;
    }
    put_bytes(path_in(dir, "device.log"), buf, sizeof buf, "wb");
    put_bytes(path_in(dir, "scope.1.log.gz"), buf + 100, sizeof buf - 100, "wb");
    outcome o;
    CHECK(read_in_child(dir, NULL, &o) >= 0);
    CHECK_INT(o.st, GP_ERR_IO);
    CHECK_U64(o.records, 0);
    CHECK(o.res.lines > 0);
    CHECK_CONTAINS(o.err, "random: nothing was read: none of the ");
    CHECK_CONTAINS(o.err, " lines of its 2 files is a GPUFlight record (the warnings say what "
                          "each is); name a session's log directory");
    double cpu;
    const char *report[] = {"report", dir, NULL};
    CHECK_INT(run_cli(report, &cpu), 1);
    CHECK_STR(slurp(path_in(root, "out.txt")), "");
    CHECK_CONTAINS(slurp(path_in(root, "err.txt")), "nothing was read");
    const char *csv[] = {"export", "--format", "csv", dir, NULL};
    CHECK_INT(run_cli(csv, &cpu), 1);
    CHECK_CONTAINS(slurp(path_in(root, "err.txt")), "nothing was read");
    /* One record among the bytes: read, partial (exit 2). */
    put_bytes(path_in(dir, "device.log"), "\n", 1, "ab");
    put_bytes(path_in(dir, "device.log"), job_start, strlen(job_start), "ab");
    CHECK_INT(run_cli(report, &cpu), 2);
    fl_rmtree(dir);
}

int main(void)
{
    unsetenv("GPU_PROFILE_MAX_FILE_LINES");
    unsetenv("GPU_PROFILE_MAX_FILE_BYTES");
    unsetenv("GPU_PROFILE_MAX_SESSION_BYTES");
    unsetenv("GPU_PROFILE_MAX_GZIP_RATIO");
    const char *base = getenv("TMPDIR");
    snprintf(root, sizeof root, "%s/gp_read_hostile_XXXXXX", base && *base ? base : "/tmp");
    if (!mkdtemp(root)) {
        perror("mkdtemp");
        return 2;
    }
    test_random_bytes();
    test_session_bytes();
    test_memset_windows();
    test_blank_windows();
    fl_rmtree(root);
    return check_done("test_read_hostile");
}
