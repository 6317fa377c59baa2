/*
 * recorder/ops.h - framework ops around their launches (ops.c): the id of
 * an op's name, the plugin's external-correlation push and pop as the
 * application's threads call them (no lock), and which ids this session
 * has named in op_dict already.
 */
#ifndef GP_RECORDER_OPS_H
#define GP_RECORDER_OPS_H

#include "gpu_profile.h"

#include <stdbool.h>
#include <stdint.h>

/* CUPTI_EXTERNAL_CORRELATION_KIND_CUSTOM1: GPUFlight's gpufl.torch kind
 * (PyTorch's own profiler pushes CUSTOM0), kept so both tools agree. */
#define FL_OP_EXTERNAL_KIND 4u

/* FNV-1a 64 of name's bytes, 1 for a hash of 0 (0 says "no op"). */
uint64_t fl_op_id(const char *name);

/* The plugin's push and pop (trace_engine.c: set at start when the session
 * correlates external ids, NULL at stop); a new push hook forgets the
 * names the last session was given. */
void fl_ops_set_hooks(gp_status (*push)(uint8_t kind, uint64_t id), gp_status (*pop)(uint8_t kind));

/* Pushes id for the calling thread; false when no hook is set or CUPTI
 * refused (the matching fl_ops_pop then pops nothing). */
bool fl_ops_push(uint64_t id);
/* Pops the calling thread's innermost push (nothing when it was not
 * pushed, or when none is open). */
void fl_ops_pop(void);

/* True the first time this session sees id (its name is to be written);
 * false after, and when the table of names is full. */
bool fl_ops_first_sight(uint64_t id);

#endif /* GP_RECORDER_OPS_H */
