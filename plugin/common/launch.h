/*
 * launch.h - what each kernel launch had open, keyed by its correlation id
 * (launch.c): written on the launching threads by CUPTI's launch callback,
 * read on the writer thread by the activity decoder and the sample
 * aggregator.
 */
#ifndef GP_PLUGIN_COMMON_LAUNCH_H
#define GP_PLUGIN_COMMON_LAUNCH_H

#include "../../src/abi/trace_abi.h"

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* At a kernel launch, on the launching thread: the scopes it had open
 * (ids outermost first, n <= FL_SCOPE_PATH_MAX), keyed by the launch's
 * correlation id, for the decoder to attach to the kernel's row.  A
 * fixed, direct-mapped table shared by every thread: a launch whose entry
 * was overwritten before its kernel was decoded (more than 65536 launches
 * in between) is left unattributed, never given another launch's scopes.
 * Lock-free for the launching threads but for a per-slot flag. */
void fl_launch_scope_put(uint32_t corr_id, const uint32_t *ids, size_t n);
/* The same with the launch's CPU stack id (0: none), which the decoder
 * puts in the kernel row's stack_id. */
void fl_launch_put(uint32_t corr_id, const uint32_t *ids, size_t n, uint32_t stack_id);
/* The scopes launch corr_id had open (at most cap, outermost first);
 * 0 when not known (launch.c). */
size_t fl_launch_scope_get(uint32_t corr_id, uint32_t *ids, size_t cap);
/* The same, telling "not known" (false) from "no scope open" (true, *n 0). */
bool fl_launch_scope_find(uint32_t corr_id, uint32_t *ids, size_t cap, uint8_t *n);
/* The same with the launch's CPU stack id (0: none). */
bool fl_launch_find(uint32_t corr_id, uint32_t *ids, size_t cap, uint8_t *n, uint32_t *stack_id);
/* Empties the table (a new session). */
void fl_launch_scope_reset(void);
/* At the entry of a synchronising call (cudaDeviceSynchronize, ...), on
 * the calling thread: its CPU stack id (0: none), in the same table under
 * the call's correlation id, for the decoder to put in the
 * SYNCHRONIZATION row's stack_id (fl_launch_find).  No-op for 0. */
void fl_sync_put(uint32_t corr_id, uint32_t stack_id);

#endif /* GP_PLUGIN_COMMON_LAUNCH_H */
