/*
 * util/proc.h - a process tree read from /proc: the processes descending
 * from a list of PIDs, for per-process attribution (the sampler).
 *
 * Promises: no allocation, no printing; a process that exits while it is
 * read is simply left out; at most `cap` PIDs are written.  The cached
 * form walks /proc again only when a task was created or reaped since
 * the last walk (/proc/loadavg's last PID and task count), or when it
 * cannot tell, and at least every `refresh_ns` whatever it says; it asks
 * loadavg at most every `check_ns`, so a process started is in the tree
 * at most check_ns after it started.
 */
#ifndef GP_UTIL_PROC_H
#define GP_UTIL_PROC_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* Writes roots (each once) and every live process descending from them to
 * out (at most cap; the roots first) and returns how many.  Children are
 * read from /proc/PID/task/TID/children; on a kernel without those files
 * the parents of every process in /proc are read instead. */
size_t gp_proc_tree(const int *roots, size_t n_roots, int *out, size_t cap);

/* A tree kept between sampling rounds.  Zero it, then set proc_root (NULL:
 * "/proc"; a test points it at a folder of its own), refresh_ns (0:
 * GP_PROC_REFRESH_NS) and check_ns (0: GP_PROC_CHECK_NS; 1: every call);
 * gp_proc_cache_close releases its descriptor. */
typedef struct gp_proc_cache {
    const char *proc_root;
    uint64_t refresh_ns;
    uint64_t check_ns;
    uint64_t walks; /* how many times the tree was read (what the tests count) */
    /* private */
    int loadavg_fd; /* +1: 0 is "not opened yet", -1 "cannot be read" */
    bool have_tree;
    long last_pid, n_tasks;
    uint64_t walked_ns, checked_ns;
    size_t n;
} gp_proc_cache;

#define GP_PROC_REFRESH_NS 1000000000ull /* 1 s */
/* Reading loadavg costs ~15 µs of CPU on a VM (the kernel formats it), a
 * sixth of a 10 ms round's budget: at fast intervals it is asked every
 * few rounds, at the 200 ms default every round. */
#define GP_PROC_CHECK_NS 50000000ull /* 50 ms */

/* gp_proc_tree through the cache: when no task was created or reaped on
 * the system since the last walk (and it is younger than refresh_ns at
 * now_ns), or loadavg was asked less than check_ns before now_ns, out[]
 * is left as the last call filled it and its count is returned.  Pass the
 * same roots and out every call. */
size_t gp_proc_tree_cached(gp_proc_cache *c, uint64_t now_ns, const int *roots, size_t n_roots,
                           int *out, size_t cap);
void gp_proc_cache_close(gp_proc_cache *c);

#endif /* GP_UTIL_PROC_H */
