/*
 * test_proc.c - the process tree the sampler attributes to (util/proc.h,
 * issue 39): the cached form reads the tree again only when /proc/loadavg
 * says a task was created or reaped, or when its refresh period is over,
 * and then finds the new child; loadavg is asked at most every check_ns; checked on a fake /proc
 * whose files the test writes (exact walk counts, whatever else runs on the machine), and on the
 * real /proc with a child and a grandchild of this process.
 */
#include "check.h"
#include "util/proc.h"

#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdint.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

static char g_tmp[256];

static void put(const char *rel, const char *text)
{
    char path[512];
    snprintf(path, sizeof path, "%s/%s", g_tmp, rel);
    FILE *f = fopen(path, "w");
    CHECK(f != NULL);
    if (!f)
        return;
    fputs(text, f);
    fclose(f);
}

static void dir(const char *rel)
{
    char path[512];
    snprintf(path, sizeof path, "%s/%s", g_tmp, rel);
    CHECK(mkdir(path, 0700) == 0 || errno == EEXIST);
}

/* Process 100 (one task) whose children file lists `kids`. */
static void fake_tree(const char *kids)
{
    put("100/task/100/children", kids);
}

static int has(const int *v, size_t n, int pid)
{
    for (size_t i = 0; i < n; i++)
        if (v[i] == pid)
            return 1;
    return 0;
}

static void test_fake_proc(void)
{
    dir("100");
    dir("100/task");
    dir("100/task/100");
    dir("200");
    dir("200/task");
    dir("200/task/200");
    dir("300");
    dir("300/task");
    dir("300/task/300");
    put("200/task/200/children", "");
    put("300/task/300/children", "");
    fake_tree("200 ");
    put("loadavg", "0.10 0.20 0.30 1/150 4000\n");

    gp_proc_cache c = {.proc_root = g_tmp, .refresh_ns = 10000000000ull, .check_ns = 1};
    int roots[] = {100}, out[16];
    uint64_t t = 1000;
    size_t n = gp_proc_tree_cached(&c, t, roots, 1, out, 16);
    CHECK_INT(n, 2);
    CHECK_INT(out[0], 100);
    CHECK_INT(out[1], 200);
    CHECK_U64(c.walks, 1);

    /* Nothing created or reaped: three rounds, no walk, the same tree. */
    for (int round = 0; round < 3; round++) {
        t += 10000000;
        n = gp_proc_tree_cached(&c, t, roots, 1, out, 16);
        CHECK_INT(n, 2);
        CHECK(has(out, n, 200));
    }
    CHECK_U64(c.walks, 1);

    /* Another load figure, the same tasks: still no walk. */
    put("loadavg", "2.50 1.20 0.30 3/150 4000\n");
    n = gp_proc_tree_cached(&c, t += 10000000, roots, 1, out, 16);
    CHECK_U64(c.walks, 1);

    /* A child started (the newest PID moved): walked once, found. */
    fake_tree("200 300 ");
    put("loadavg", "0.10 0.20 0.30 1/151 4001\n");
    n = gp_proc_tree_cached(&c, t += 10000000, roots, 1, out, 16);
    CHECK_U64(c.walks, 2);
    CHECK_INT(n, 3);
    CHECK(has(out, n, 300));
    n = gp_proc_tree_cached(&c, t += 10000000, roots, 1, out, 16);
    CHECK_U64(c.walks, 2);
    CHECK_INT(n, 3);

    /* A child reaped (fewer tasks, the same newest PID): walked, gone. */
    fake_tree("300 ");
    put("loadavg", "0.10 0.20 0.30 1/150 4001\n");
    n = gp_proc_tree_cached(&c, t += 10000000, roots, 1, out, 16);
    CHECK_U64(c.walks, 3);
    CHECK_INT(n, 2);
    CHECK(!has(out, n, 200));
    CHECK(has(out, n, 300));

    /* The refresh period over: walked whatever loadavg says. */
    fake_tree("200 300 ");
    n = gp_proc_tree_cached(&c, t + c.refresh_ns, roots, 1, out, 16);
    CHECK_U64(c.walks, 4);
    CHECK_INT(n, 3);
    gp_proc_cache_close(&c);

    /* loadavg unreadable: every call walks. */
    gp_proc_cache u = {.proc_root = g_tmp, .refresh_ns = 10000000000ull, .check_ns = 1};
    char path[512];
    snprintf(path, sizeof path, "%s/loadavg", g_tmp);
    CHECK_INT(unlink(path), 0);
    for (int round = 0; round < 3; round++)
        n = gp_proc_tree_cached(&u, 1000 + (uint64_t)round, roots, 1, out, 16);
    CHECK_U64(u.walks, 3);
    CHECK_INT(n, 3);

    /* loadavg that does not parse: the same. */
    put("loadavg", "not a load average\n");
    gp_proc_cache_close(&u);
    for (int round = 0; round < 2; round++)
        n = gp_proc_tree_cached(&u, 2000 + (uint64_t)round, roots, 1, out, 16);
    CHECK_U64(u.walks, 5);
    gp_proc_cache_close(&u);
}

/* loadavg asked at most every check_ns (GP_PROC_CHECK_NS by default): a
 * child started is found at the first call check_ns after the last
 * question, not before; an unreadable loadavg still walks every call. */
static void test_check_period(void)
{
    fake_tree("200 ");
    put("loadavg", "0.10 0.20 0.30 1/150 5000\n");
    gp_proc_cache c = {.proc_root = g_tmp, .refresh_ns = 10000000000ull};
    int roots[] = {100}, out[16];
    uint64_t t = 1000;
    size_t n = gp_proc_tree_cached(&c, t, roots, 1, out, 16);
    CHECK_U64(c.walks, 1);
    CHECK_INT(n, 2);

    fake_tree("200 300 ");
    put("loadavg", "0.10 0.20 0.30 1/151 5001\n");
    for (int round = 1; round <= 4; round++) { /* 10 ms rounds: not asked yet */
        n = gp_proc_tree_cached(&c, t + (uint64_t)round * 10000000ull, roots, 1, out, 16);
        CHECK_INT(n, 2);
    }
    CHECK_U64(c.walks, 1);
    n = gp_proc_tree_cached(&c, t + GP_PROC_CHECK_NS, roots, 1, out, 16);
    CHECK_U64(c.walks, 2);
    CHECK_INT(n, 3);
    CHECK(has(out, n, 300));
    /* Asked again only check_ns after that question. */
    fake_tree("300 ");
    put("loadavg", "0.10 0.20 0.30 1/150 5001\n");
    n = gp_proc_tree_cached(&c, t + 2 * GP_PROC_CHECK_NS - 1, roots, 1, out, 16);
    CHECK_U64(c.walks, 2);
    n = gp_proc_tree_cached(&c, t + 2 * GP_PROC_CHECK_NS, roots, 1, out, 16);
    CHECK_U64(c.walks, 3);
    CHECK_INT(n, 2);
    CHECK(!has(out, n, 200));
    gp_proc_cache_close(&c);

    char path[512];
    snprintf(path, sizeof path, "%s/loadavg", g_tmp);
    CHECK_INT(unlink(path), 0);
    gp_proc_cache u = {.proc_root = g_tmp, .refresh_ns = 10000000000ull};
    for (int round = 0; round < 3; round++)
        gp_proc_tree_cached(&u, 1000 + (uint64_t)round, roots, 1, out, 16);
    CHECK_U64(u.walks, 3);
    gp_proc_cache_close(&u);
}

/* The real /proc: a child whose own child appears between two calls is
 * found by the second (something was created: the walk runs). */
static void test_real_proc(void)
{
    int go[2], ready[2];
    CHECK_INT(pipe(go), 0);
    CHECK_INT(pipe(ready), 0);
    pid_t kid = fork();
    if (kid == 0) {
        char b;
        close(go[1]);
        close(ready[0]);
        if (read(go[0], &b, 1) != 1)
            _exit(1);
        pid_t g = fork();
        if (g == 0) {
            pause();
            _exit(0);
        }
        if (write(ready[1], &g, sizeof g) != (ssize_t)sizeof g)
            _exit(1);
        pause();
        _exit(0);
    }
    close(go[0]);
    close(ready[1]);
    gp_proc_cache c = {0};
    int roots[] = {(int)kid}, out[16];
    size_t n = gp_proc_tree_cached(&c, 1, roots, 1, out, 16);
    CHECK_INT(n, 1);
    CHECK_INT(out[0], kid);
    CHECK(write(go[1], "g", 1) == 1);
    pid_t grand = 0;
    CHECK(read(ready[0], &grand, sizeof grand) == (ssize_t)sizeof grand);
    n = gp_proc_tree_cached(&c, 2 + GP_PROC_CHECK_NS, roots, 1, out, 16);
    CHECK_INT(n, 2);
    CHECK(has(out, n, (int)grand));
    CHECK(c.walks >= 2);
    gp_proc_cache_close(&c);
    kill(grand, SIGKILL);
    kill(kid, SIGKILL);
    waitpid(kid, NULL, 0);
    close(go[1]);
    close(ready[0]);
}

int main(void)
{
    snprintf(g_tmp, sizeof g_tmp, "/tmp/gp_proc_XXXXXX");
    if (!mkdtemp(g_tmp)) {
        perror("mkdtemp");
        return 1;
    }
    test_fake_proc();
    test_check_period();
    test_real_proc();
    char cmd[300];
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", g_tmp);
    if (system(cmd) != 0)
        fprintf(stderr, "cannot remove %s\n", g_tmp);
    return check_done("test_proc");
}
