/*
 * recorder/occupancy.c - theoretical occupancy of a kernel launch, and the
 * per-architecture constants it needs.
 *
 * Promises: the answers are those of NVIDIA's occupancy calculator
 * (cuda_occupancy.h, cudaOccMaxActiveBlocksPerMultiprocessor) for a launch
 * that ran with the shared memory carve-out CUPTI reports, leaving out the
 * inputs CUPTI does not give (partitioned global caching, which only
 * Maxwell/Pascal have; block barriers and virtual resources, which do not
 * bind at one barrier per block).  Everything is integer arithmetic on the
 * arguments: nothing here prints, allocates, or keeps state, so the writer
 * thread can call it for every kernel row.
 *
 * Where the calculator and the programming guide's simple formulas differ,
 * the calculator wins, because it is what the driver does:
 *  - the register file is split between 4 SM sub-partitions and a warp's
 *    registers live in one of them, so the warps that fit are
 *    4 * floor(regs_per_sm / 4 / regs_per_warp), not
 *    floor(regs_per_sm / regs_per_warp);
 *  - a block's registers are checked against the per-block limit as if its
 *    warps were rounded up to a multiple of 4 (the hardware check);
 *  - shared memory is allocated in 256-byte units before Ampere.
 * One place follows the programming guide instead: more than 255 registers
 * per thread cannot launch (the calculator lets 256 through on Volta and
 * later, a count no compiler emits).
 */
#include "occupancy.h"
#include "../abi/trace_abi.h"
#include "../wire/records.h"

#include <stdint.h>
#include <string.h>

/* No limit from a resource the launch does not use. */
#define NO_LIMIT INT64_MAX

/* Per compute capability: what the driver API does not report on every
 * device, or reports as 0 on some (Tegra, MIG, old drivers). */
typedef struct arch_row {
    int major, minor;
    int max_threads_per_sm;
    int max_blocks_per_sm;
    int smem_per_sm_bytes;
    int smem_per_block_optin_bytes;
} arch_row;

#define KIB 1024

static const arch_row ARCH[] = {
    {7, 0, 2048, 32, 96 * KIB, 96 * KIB},    /* V100 */
    {7, 2, 2048, 32, 96 * KIB, 96 * KIB},    /* Xavier */
    {7, 5, 1024, 16, 64 * KIB, 64 * KIB},    /* Turing */
    {8, 0, 2048, 32, 164 * KIB, 163 * KIB},  /* A100 */
    {8, 6, 1536, 16, 100 * KIB, 99 * KIB},   /* GA10x */
    {8, 7, 1536, 16, 164 * KIB, 163 * KIB},  /* Orin */
    {8, 9, 1536, 24, 100 * KIB, 99 * KIB},   /* Ada */
    {9, 0, 2048, 32, 228 * KIB, 227 * KIB},  /* Hopper */
    {10, 0, 2048, 32, 228 * KIB, 227 * KIB}, /* B200 */
    {10, 3, 2048, 32, 228 * KIB, 227 * KIB}, /* B300 */
    {12, 0, 1536, 24, 100 * KIB, 99 * KIB},  /* RTX 50 */
    {12, 1, 1536, 24, 100 * KIB, 99 * KIB},  /* GB10 */
};

static void fill_if_zero(int *field, int value)
{
    if (*field == 0)
        *field = value;
}

bool fl_gpu_limits_fill_arch(fl_gpu_limits *l)
{
    if (!l)
        return false;
    /* The granularities hold for every architecture since Kepler, except
     * that Ampere halved the shared memory unit; so they are set even for
     * an unknown capability, where a guess at them is off by little. */
    l->reg_alloc_unit = 256;
    l->smem_alloc_unit = l->cc_major >= 8 ? 128 : 256;
    l->max_regs_per_thread = 255;
    fill_if_zero(&l->warp_size, 32);
    fill_if_zero(&l->max_threads_per_block, 1024);
    fill_if_zero(&l->regs_per_sm, 65536);
    fill_if_zero(&l->max_regs_per_block, 65536);
    fill_if_zero(&l->smem_per_block_bytes, 48 * KIB);

    const arch_row *a = NULL;
    for (size_t i = 0; i < sizeof ARCH / sizeof ARCH[0]; i++) {
        if (ARCH[i].major == l->cc_major && ARCH[i].minor == l->cc_minor) {
            a = &ARCH[i];
            break;
        }
    }
    /* An unknown architecture keeps 0 in the per-architecture fields: an
     * invented SM size would produce an occupancy figure that looks right. */
    if (!a)
        return false;
    fill_if_zero(&l->max_threads_per_sm, a->max_threads_per_sm);
    fill_if_zero(&l->max_blocks_per_sm, a->max_blocks_per_sm);
    fill_if_zero(&l->smem_per_sm_bytes, a->smem_per_sm_bytes);
    fill_if_zero(&l->smem_per_block_optin_bytes, a->smem_per_block_optin_bytes);
    /* Ampere's driver reserves 1 KiB of every block's shared memory. */
    fill_if_zero(&l->reserved_smem_per_block_bytes, l->cc_major >= 8 ? KIB : 0);
    return true;
}

const char *fl_gpu_arch_name(int cc_major, int cc_minor)
{
    switch (cc_major) {
    case 7:
        if (cc_minor == 0 || cc_minor == 2)
            return "Volta";
        return cc_minor == 5 ? "Turing" : NULL;
    case 8:
        if (cc_minor == 0 || cc_minor == 6 || cc_minor == 7)
            return "Ampere";
        return cc_minor == 9 ? "Ada" : NULL;
    case 9:
        return cc_minor == 0 ? "Hopper" : NULL;
    case 10:
    case 11: /* Jetson Thor, 10.1 before CUDA 13 */
    case 12:
        return "Blackwell";
    default:
        return NULL;
    }
}

static int64_t round_up(int64_t x, int64_t unit)
{
    return (x + unit - 1) / unit * unit;
}

/* Register file sub-partitions per SM (cudaOccSubPartitionsPerMultiprocessor):
 * 4 on everything since Kepler but GP100. */
static int64_t sub_partitions(const fl_gpu_limits *dev)
{
    return dev->cc_major == 6 && dev->cc_minor == 0 ? 2 : 4;
}

/* Blocks the register file holds, NO_LIMIT without registers, 0 when a
 * block does not fit at all. */
static int64_t reg_limit(const fl_gpu_limits *dev, int64_t regs_per_thread, int64_t warps_per_block)
{
    if (regs_per_thread == 0)
        return NO_LIMIT;
    if (dev->max_regs_per_thread > 0 && regs_per_thread > dev->max_regs_per_thread)
        return 0;
    int64_t parts = sub_partitions(dev);
    int64_t per_warp = round_up(regs_per_thread * dev->warp_size, dev->reg_alloc_unit);
    if (per_warp > dev->regs_per_sm) /* also bounds the products below */
        return 0;
    if (dev->max_regs_per_block > 0 &&
        (per_warp * warps_per_block > dev->max_regs_per_block ||
         per_warp * round_up(warps_per_block, parts) > dev->max_regs_per_block))
        return 0;
    int64_t warps_fit = dev->regs_per_sm / parts / per_warp * parts;
    return warps_fit / warps_per_block;
}

/* Blocks the shared memory holds, 0 when a block does not fit at all. */
static int64_t smem_limit(const fl_gpu_limits *dev, const fl_launch *launch)
{
    int64_t reserved = dev->reserved_smem_per_block_bytes;
    int64_t per_block =
        round_up((int64_t)launch->static_smem_bytes + launch->dynamic_smem_bytes + reserved,
                 dev->smem_alloc_unit);
    int64_t block_max = dev->smem_per_block_optin_bytes > 0 ? dev->smem_per_block_optin_bytes
                                                            : dev->smem_per_block_bytes;
    /* The reserved part does not count against the per-block maximum. */
    if (block_max > 0 && per_block > block_max + reserved)
        return 0;
    if (per_block == 0)
        return NO_LIMIT;
    int64_t capacity =
        launch->smem_config_bytes > 0 ? launch->smem_config_bytes : dev->smem_per_sm_bytes;
    if (per_block > dev->smem_per_sm_bytes)
        return 0;
    /* A carve-out smaller than one block is raised by the driver to the
     * next size that holds it; the sizes step by at most 2x, so that is
     * room for exactly one block. */
    if (capacity < per_block)
        return 1;
    return capacity / per_block;
}

/* The fraction of the SM's warp slots that limit blocks would fill. */
static double fraction(int64_t blocks, int64_t warps_per_block, int64_t max_warps)
{
    if (blocks >= max_warps) /* also keeps NO_LIMIT from overflowing */
        return 1.0;
    int64_t warps = blocks * warps_per_block;
    return (double)(warps < max_warps ? warps : max_warps) / (double)max_warps;
}

bool fl_occupancy_compute(const fl_gpu_limits *dev, const fl_launch *launch, fl_occupancy *out)
{
    if (!out)
        return false;
    memset(out, 0, sizeof *out);
    if (!dev || !launch)
        return false;
    if (dev->warp_size <= 0 || dev->max_threads_per_sm < dev->warp_size ||
        dev->max_blocks_per_sm <= 0 || dev->regs_per_sm <= 0 || dev->smem_per_sm_bytes <= 0 ||
        dev->reg_alloc_unit <= 0 || dev->smem_alloc_unit <= 0 ||
        dev->reserved_smem_per_block_bytes < 0)
        return false;
    if (launch->block_threads <= 0 || launch->regs_per_thread < 0 ||
        launch->static_smem_bytes < 0 || launch->dynamic_smem_bytes < 0 ||
        launch->smem_config_bytes < 0)
        return false;
    if (dev->max_threads_per_block > 0 && launch->block_threads > dev->max_threads_per_block)
        return false;

    int64_t max_warps = dev->max_threads_per_sm / dev->warp_size;
    int64_t warps_per_block =
        ((int64_t)launch->block_threads + dev->warp_size - 1) / dev->warp_size;
    int64_t limit[4];
    limit[FL_LIMIT_WARPS] = max_warps / warps_per_block;
    limit[FL_LIMIT_REGISTERS] = reg_limit(dev, launch->regs_per_thread, warps_per_block);
    limit[FL_LIMIT_SHARED_MEM] = smem_limit(dev, launch);
    limit[FL_LIMIT_BLOCKS] = dev->max_blocks_per_sm;

    fl_limiter limiting = FL_LIMIT_WARPS;
    for (int r = FL_LIMIT_REGISTERS; r <= FL_LIMIT_BLOCKS; r++) {
        if (limit[r] < limit[limiting])
            limiting = (fl_limiter)r;
    }
    int64_t blocks = limit[limiting];
    if (blocks <= 0)
        return false;

    out->max_active_blocks = (int)blocks; /* <= max_blocks_per_sm */
    out->limiting = limiting;
    out->occupancy = fraction(blocks, warps_per_block, max_warps);
    out->warp_occupancy = fraction(limit[FL_LIMIT_WARPS], warps_per_block, max_warps);
    out->reg_occupancy = fraction(limit[FL_LIMIT_REGISTERS], warps_per_block, max_warps);
    out->smem_occupancy = fraction(limit[FL_LIMIT_SHARED_MEM], warps_per_block, max_warps);
    out->block_occupancy = fraction(limit[FL_LIMIT_BLOCKS], warps_per_block, max_warps);
    return true;
}
