/*
 * recorder/occupancy.h - theoretical occupancy of a kernel launch and the
 * per-architecture constants it needs (occupancy.c), for kernel_detail.
 */
#ifndef GP_RECORDER_OCCUPANCY_H
#define GP_RECORDER_OCCUPANCY_H

#include "../abi/trace_abi.h"
#include "../wire/records.h"

#include <stdbool.h>

/* Sets reg_alloc_unit, smem_alloc_unit, max_regs_per_thread and, where
 * still 0, max_blocks_per_sm / max_threads_per_sm / warp_size /
 * reserved_smem_per_block_bytes from cc_major.cc_minor.  Returns false for
 * a compute capability it does not know (the fields keep safe defaults). */
bool fl_gpu_limits_fill_arch(fl_gpu_limits *l);

/* The architecture's marketing name ("Ampere", "Hopper", ...), NULL if unknown. */
const char *fl_gpu_arch_name(int cc_major, int cc_minor);

typedef struct fl_launch {
    int block_threads;   /* x*y*z */
    int regs_per_thread; /* CUPTI registersPerThread */
    int static_smem_bytes;
    int dynamic_smem_bytes;
    int smem_config_bytes; /* shared memory the SM was configured with for
                              this launch (CUPTI sharedMemoryExecuted);
                              0: the device's smem_per_sm_bytes */
} fl_launch;

/* Theoretical occupancy of a launch on a device (pure).  Returns false
 * when the launch cannot run (block too large, too many registers or too
 * much shared memory) or the limits are unknown; out is then zeroed with
 * max_active_blocks 0. */
bool fl_occupancy_compute(const fl_gpu_limits *dev, const fl_launch *launch, fl_occupancy *out);

#endif /* GP_RECORDER_OCCUPANCY_H */
