/*
 * recorder/scope.h - the scope hot path (scope.c): per-thread
 * single-producer rings (no lock, no syscall) that the session's writer
 * thread drains, and the scope-name dictionary.
 */
#ifndef GP_RECORDER_SCOPE_H
#define GP_RECORDER_SCOPE_H

#include "../wire/records.h"

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* The scope names the process keeps (they live as long as it does, shared
 * by its sessions): at most FL_SCOPE_NAMES_MAX distinct names, the last of
 * them kept for FL_SCOPE_OVERFLOW_NAME, and FL_SCOPE_NAME_BYTES_MAX bytes
 * of text.  A scope (or NVTX range) whose name is new once either is
 * reached is recorded under FL_SCOPE_OVERFLOW_NAME and counted
 * (fl_scope_names_over).  About 8 MiB at most in all (docs/gpufl.md). */
#define FL_SCOPE_NAMES_MAX 65536u
#define FL_SCOPE_NAME_BYTES_MAX (4u << 20)
#define FL_SCOPE_OVERFLOW_NAME "(other scope names)"

/* Begins accepting scopes for session generation gen (non-zero).
 * count_active: keep the count of open outermost scopes that
 * fl_scope_any_open() reads (continuous_system_sampling = false).  no_tsc:
 * time rows with CLOCK_REALTIME even where the TSC would do (GPUFL_NO_TSC).  kick
 * wakes the session's writer (any thread, cheap); the hot path calls it
 * when a thread's ring is half full. */
void fl_scope_session_begin(uint32_t gen, bool count_active, bool no_tsc, void (*kick)(void));
/* In a child after fork(): no session, usable locks. */
void fl_scope_after_fork_child(void);
/* Stops accepting scopes (later begin/end calls are no-ops). */
void fl_scope_session_end(void);
/* Writer thread: appends every published row of session gen to *rows
 * (grown as needed; *cap its capacity) from index n, each with the thread
 * of the ring that held it; returns the new count.  Frees the rings of
 * threads that have exited once they are empty. */
size_t fl_scope_drain(uint32_t gen, fl_scope_event **rows, size_t n, size_t *cap);
/* Writer thread: the scope names interned since the last call, in id
 * order, into *out (grown as needed); returns their count.  The names
 * live as long as the process. */
size_t fl_scope_take_names(fl_dict_entry **out, size_t *cap);
/* The scope_name_dict id of name in session gen (0: session over or out
 * of memory); the name goes out with the writer's next dictionary.  For
 * names that do not come from gpufl_scope_begin (NVTX ranges). */
uint32_t fl_scope_intern(uint32_t gen, const char *name);
/* The calling thread's open scopes: name ids, outermost first, at most
 * min(cap, FL_SCOPE_PATH_MAX).  Lock-free (the thread's own state): called
 * at every kernel launch by the Trace engine. */
size_t fl_scope_current_path(uint32_t *ids, size_t cap);
/* The name of scope_name_dict id in session gen; NULL if unknown.  The
 * text lives as long as the process. */
const char *fl_scope_name_of(uint32_t gen, uint32_t id);
/* Scopes (and NVTX ranges) of this session recorded under
 * FL_SCOPE_OVERFLOW_NAME because their name was beyond the limits. */
uint64_t fl_scope_names_over(void);
/* Rows dropped because a thread's ring was full, this session. */
uint64_t fl_scope_dropped(void);
/* Whether some thread is inside an outermost scope now. */
bool fl_scope_any_open(void);
/* The range profiler's hooks, called on the application's thread at each
 * outermost scope's begin (after its row) and end (before its row); NULL,
 * NULL: none.  Any thread. */
void fl_scope_set_range_hooks(void (*begin)(const char *name), void (*end)(void));

#endif /* GP_RECORDER_SCOPE_H */
