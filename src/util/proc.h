/*
 * util/proc.h - a process tree read from /proc: the processes descending
 * from a list of PIDs, for per-process attribution (the sampler).
 *
 * Promises: no allocation, no printing; a process that exits while it is
 * read is simply left out; at most `cap` PIDs are written.
 */
#ifndef GP_UTIL_PROC_H
#define GP_UTIL_PROC_H

#include <stddef.h>

/* Writes roots (each once) and every live process descending from them to
 * out (at most cap; the roots first) and returns how many.  Children are
 * read from /proc/PID/task/TID/children; on a kernel without those files
 * the parents of every process in /proc are read instead. */
size_t gp_proc_tree(const int *roots, size_t n_roots, int *out, size_t cap);

#endif /* GP_UTIL_PROC_H */
