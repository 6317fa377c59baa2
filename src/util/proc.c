/*
 * util/proc.c - the processes descending from a PID list, read from /proc.
 *
 * Promises: as util/proc.h.  The children files cost a read per task of
 * the tree only; the fallback (a kernel built without
 * CONFIG_PROC_CHILDREN) reads /proc/N/stat of every process, so it is
 * taken only when the first root's children file is missing.  The cache's
 * check is one pread of /proc/loadavg ("... R/T LAST"): T tasks exist and
 * LAST is the newest PID; a task created moves LAST (TIDs and PIDs share
 * one counter), and with LAST unchanged a task reaped lowers T, so both
 * unchanged means the same tasks, hence the same parents, as at the walk.
 */
#include "proc.h"

#include <ctype.h>
#include <dirent.h>
#include <fcntl.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static bool has(const int *list, size_t n, int pid)
{
    for (size_t i = 0; i < n; i++)
        if (list[i] == pid)
            return true;
    return false;
}

static size_t add(int *out, size_t n, size_t cap, int pid)
{
    if (pid > 0 && n < cap && !has(out, n, pid))
        out[n++] = pid;
    return n;
}

/* Reads a small file into buf (NUL-terminated); its length or -1. */
static long read_small(const char *path, char *buf, size_t cap)
{
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0)
        return -1;
    size_t n = 0;
    while (n + 1 < cap) {
        ssize_t r = read(fd, buf + n, cap - 1 - n);
        if (r <= 0)
            break;
        n += (size_t)r;
    }
    close(fd);
    buf[n] = '\0';
    return (long)n;
}

/* Adds the children of every task of pid; false when pid's own task has no
 * children file (the kernel lacks them, or pid is gone). */
static bool add_children(const char *root, int pid, int *out, size_t *n, size_t cap)
{
    char path[512], buf[4096];
    snprintf(path, sizeof path, "%s/%d/task", root, pid);
    DIR *d = opendir(path);
    if (!d)
        return false;
    bool any_file = false;
    struct dirent *e;
    while ((e = readdir(d)) != NULL) {
        if (!isdigit((unsigned char)e->d_name[0]))
            continue;
        snprintf(path, sizeof path, "%s/%d/task/%.16s/children", root, pid, e->d_name);
        if (read_small(path, buf, sizeof buf) < 0)
            continue;
        any_file = true;
        for (char *p = buf, *end; *p; p = end) {
            long c = strtol(p, &end, 10);
            if (end == p)
                break;
            *n = add(out, *n, cap, (int)c);
        }
    }
    closedir(d);
    return any_file;
}

/* The parent of pid from /proc/pid/stat (after the command's last ')'). */
static int parent_of(const char *root, const char *pid_text)
{
    char path[512], buf[1024];
    snprintf(path, sizeof path, "%s/%.16s/stat", root, pid_text);
    if (read_small(path, buf, sizeof buf) <= 0)
        return -1;
    const char *p = strrchr(buf, ')');
    int ppid = -1;
    if (!p || sscanf(p + 1, " %*c %d", &ppid) != 1)
        return -1;
    return ppid;
}

/* The fallback: passes over every process's parent until none is added. */
static size_t scan_all(const char *root, int *out, size_t n, size_t cap)
{
    for (bool grew = true; grew && n < cap;) {
        grew = false;
        DIR *d = opendir(root);
        if (!d)
            return n;
        struct dirent *e;
        while ((e = readdir(d)) != NULL && n < cap) {
            if (!isdigit((unsigned char)e->d_name[0]))
                continue;
            int pid = atoi(e->d_name);
            if (has(out, n, pid))
                continue;
            int ppid = parent_of(root, e->d_name);
            if (ppid > 0 && has(out, n, ppid)) {
                out[n++] = pid;
                grew = true;
            }
        }
        closedir(d);
    }
    return n;
}

static size_t walk(const char *root, const int *roots, size_t n_roots, int *out, size_t cap)
{
    size_t n = 0;
    for (size_t i = 0; i < n_roots; i++)
        n = add(out, n, cap, roots[i]);
    size_t n_roots_kept = n;
    /* Breadth first: out[] is the queue, each entry visited once. */
    for (size_t i = 0; i < n; i++) {
        if (!add_children(root, out[i], out, &n, cap) && i == 0 && n == n_roots_kept) {
            char probe[512];
            snprintf(probe, sizeof probe, "%s/%d", root, out[0]);
            if (access(probe, F_OK) == 0)
                return scan_all(root, out, n, cap); /* alive, yet no children file */
        }
    }
    return n;
}

size_t gp_proc_tree(const int *roots, size_t n_roots, int *out, size_t cap)
{
    return walk("/proc", roots, n_roots, out, cap);
}

/* LAST and T of loadavg; false when it cannot be read or parsed. */
static bool generation(gp_proc_cache *c, const char *root, long *last_pid, long *n_tasks)
{
    if (c->loadavg_fd == 0) {
        char path[512];
        snprintf(path, sizeof path, "%s/loadavg", root);
        c->loadavg_fd = open(path, O_RDONLY | O_CLOEXEC) + 1;
        if (c->loadavg_fd == 0)
            c->loadavg_fd = -1;
    }
    if (c->loadavg_fd <= 0)
        return false;
    char buf[256];
    ssize_t r = pread(c->loadavg_fd - 1, buf, sizeof buf - 1, 0);
    if (r <= 0)
        return false;
    buf[r] = '\0';
    /* By hand, not sscanf: its set-up cost more than the read (perf, the
     * rounds of bench_sampler --tree tree). */
    char *p = buf, *end;
    for (int field = 0; field < 3; field++) { /* the three load averages */
        p = strchr(p, ' ');
        if (!p)
            return false;
        p++;
    }
    p = strchr(p, '/'); /* past R, the tasks running */
    if (!p)
        return false;
    *n_tasks = strtol(p + 1, &end, 10);
    if (end == p + 1 || *end != ' ')
        return false;
    *last_pid = strtol(end + 1, &p, 10);
    return p != end + 1;
}

size_t gp_proc_tree_cached(gp_proc_cache *c, uint64_t now_ns, const int *roots, size_t n_roots,
                           int *out, size_t cap)
{
    const char *root = c->proc_root ? c->proc_root : "/proc";
    uint64_t refresh = c->refresh_ns ? c->refresh_ns : GP_PROC_REFRESH_NS;
    uint64_t check = c->check_ns ? c->check_ns : GP_PROC_CHECK_NS;
    bool young = c->have_tree && now_ns >= c->walked_ns && now_ns - c->walked_ns < refresh;
    if (young && now_ns >= c->checked_ns && now_ns - c->checked_ns < check)
        return c->n;
    c->checked_ns = now_ns;
    long last_pid = 0, n_tasks = 0;
    bool known = generation(c, root, &last_pid, &n_tasks);
    if (known && young && last_pid == c->last_pid && n_tasks == c->n_tasks)
        return c->n;
    /* The generation kept is the one read before the walk: a task created
     * while it ran costs one more walk next round, never a miss. */
    c->n = walk(root, roots, n_roots, out, cap);
    c->walks++;
    c->walked_ns = now_ns;
    c->have_tree = known;
    c->last_pid = last_pid;
    c->n_tasks = n_tasks;
    return c->n;
}

void gp_proc_cache_close(gp_proc_cache *c)
{
    if (c->loadavg_fd > 0)
        close(c->loadavg_fd - 1);
    c->loadavg_fd = 0;
    c->have_tree = false;
}
