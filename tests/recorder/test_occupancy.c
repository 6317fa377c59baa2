/*
 * test_occupancy.c - theoretical occupancy (src/recorder/occupancy.c).
 *
 * Every expected value is worked out by hand in the comment above its
 * case, from NVIDIA's occupancy calculator rules (cuda_occupancy.h):
 *   warps/block = ceil(threads / 32)
 *   warps:      floor(max_warps / warps_per_block)
 *   registers:  regs/warp = roundup(regs * 32, 256); the 64K register file
 *               is 4 sub-partitions of 16384, so warps that fit =
 *               4 * floor(16384 / regs_per_warp); blocks = floor(that / w)
 *   shared mem: per block = roundup(static + dynamic + reserved, unit);
 *               blocks = floor(carve-out / per block)
 *   blocks:     max_blocks_per_sm
 * occupancy = min(limits) * w / max_warps.  The devices are filled from
 * their compute capability alone, so fl_gpu_limits_fill_arch is under test
 * in every case too.
 */
#include "check.h"
#include "abi/trace_abi.h"
#include "recorder/occupancy.h"
#include "wire/records.h"

#define KIB 1024
#define EPS 1e-12

static fl_gpu_limits device(int major, int minor, int sms)
{
    fl_gpu_limits d;
    memset(&d, 0, sizeof d);
    d.cc_major = major;
    d.cc_minor = minor;
    d.sm_count = sms;
    CHECK(fl_gpu_limits_fill_arch(&d));
    return d;
}

static fl_launch launch(int threads, int regs, int static_smem, int dynamic_smem, int config)
{
    fl_launch l = {threads, regs, static_smem, dynamic_smem, config};
    return l;
}

/* Runs one launch that must fit and checks the answer. */
#define EXPECT(dev, l, blocks, occ, lim)                                                           \
    do {                                                                                           \
        fl_launch l_ = (l);                                                                        \
        CHECK(fl_occupancy_compute(&(dev), &l_, &o));                                              \
        CHECK_INT(o.max_active_blocks, (blocks));                                                  \
        CHECK_NEAR(o.occupancy, (occ), EPS);                                                       \
        CHECK_STR(fl_limiter_name(o.limiting), (lim));                                             \
    } while (0)

/* Runs one launch that cannot run: false, and out all zero. */
#define EXPECT_NONE(dev, l)                                                                        \
    do {                                                                                           \
        fl_launch l_ = (l);                                                                        \
        o.max_active_blocks = 99;                                                                  \
        o.occupancy = 0.5;                                                                         \
        CHECK(!fl_occupancy_compute(&(dev), &l_, &o));                                             \
        CHECK_INT(o.max_active_blocks, 0);                                                         \
        CHECK_NEAR(o.occupancy, 0.0, 0.0);                                                         \
        CHECK_NEAR(o.reg_occupancy, 0.0, 0.0);                                                     \
    } while (0)

static void fractions(const fl_occupancy *o, double warps, double regs, double smem, double blocks)
{
    CHECK_NEAR(o->warp_occupancy, warps, EPS);
    CHECK_NEAR(o->reg_occupancy, regs, EPS);
    CHECK_NEAR(o->smem_occupancy, smem, EPS);
    CHECK_NEAR(o->block_occupancy, blocks, EPS);
}

static void test_fill_arch(void)
{
    /* A100: 64 warps, 32 blocks, 164 KiB carve-out, 163 KiB opt-in. */
    fl_gpu_limits d = device(8, 0, 108);
    CHECK_INT(d.sm_count, 108);
    CHECK_INT(d.warp_size, 32);
    CHECK_INT(d.max_threads_per_block, 1024);
    CHECK_INT(d.max_threads_per_sm, 2048);
    CHECK_INT(d.max_blocks_per_sm, 32);
    CHECK_INT(d.regs_per_sm, 65536);
    CHECK_INT(d.max_regs_per_block, 65536);
    CHECK_INT(d.smem_per_sm_bytes, 167936);
    CHECK_INT(d.smem_per_block_bytes, 49152);
    CHECK_INT(d.smem_per_block_optin_bytes, 166912);
    CHECK_INT(d.reserved_smem_per_block_bytes, 1024);
    CHECK_INT(d.reg_alloc_unit, 256);
    CHECK_INT(d.smem_alloc_unit, 128);
    CHECK_INT(d.max_regs_per_thread, 255);

    /* GA10x: 48 warps, 16 blocks, 100 KiB, 99 KiB opt-in. */
    d = device(8, 6, 82);
    CHECK_INT(d.max_threads_per_sm, 1536);
    CHECK_INT(d.max_blocks_per_sm, 16);
    CHECK_INT(d.smem_per_sm_bytes, 102400);
    CHECK_INT(d.smem_per_block_optin_bytes, 101376);
    CHECK_INT(d.reserved_smem_per_block_bytes, 1024);
    CHECK_INT(d.smem_alloc_unit, 128);

    /* Ada: as GA10x but 24 blocks. */
    d = device(8, 9, 128);
    CHECK_INT(d.max_threads_per_sm, 1536);
    CHECK_INT(d.max_blocks_per_sm, 24);
    CHECK_INT(d.smem_per_sm_bytes, 102400);
    CHECK_INT(d.smem_per_block_optin_bytes, 101376);

    /* Hopper: 64 warps, 32 blocks, 228 KiB, 227 KiB opt-in. */
    d = device(9, 0, 132);
    CHECK_INT(d.max_threads_per_sm, 2048);
    CHECK_INT(d.max_blocks_per_sm, 32);
    CHECK_INT(d.smem_per_sm_bytes, 233472);
    CHECK_INT(d.smem_per_block_optin_bytes, 232448);
    CHECK_INT(d.reserved_smem_per_block_bytes, 1024);

    /* Volta: no reserved shared memory, 256-byte shared memory unit. */
    d = device(7, 0, 80);
    CHECK_INT(d.max_threads_per_sm, 2048);
    CHECK_INT(d.max_blocks_per_sm, 32);
    CHECK_INT(d.smem_per_sm_bytes, 98304);
    CHECK_INT(d.reserved_smem_per_block_bytes, 0);
    CHECK_INT(d.smem_alloc_unit, 256);

    /* Turing: 32 warps, 16 blocks, 64 KiB. */
    d = device(7, 5, 72);
    CHECK_INT(d.max_threads_per_sm, 1024);
    CHECK_INT(d.max_blocks_per_sm, 16);
    CHECK_INT(d.smem_per_sm_bytes, 65536);

    /* What the driver reported stays; the granularities are always set. */
    memset(&d, 0, sizeof d);
    d.cc_major = 9;
    d.max_blocks_per_sm = 16;
    d.smem_per_sm_bytes = 100 * KIB;
    d.reg_alloc_unit = 7;
    CHECK(fl_gpu_limits_fill_arch(&d));
    CHECK_INT(d.max_blocks_per_sm, 16);
    CHECK_INT(d.smem_per_sm_bytes, 100 * KIB);
    CHECK_INT(d.max_threads_per_sm, 2048);
    CHECK_INT(d.reg_alloc_unit, 256);

    /* Unknown (Kepler 3.0): false; generic values only, the SM's size stays
     * unknown, so there is no occupancy to compute. */
    memset(&d, 0, sizeof d);
    d.cc_major = 3;
    CHECK(!fl_gpu_limits_fill_arch(&d));
    CHECK_INT(d.warp_size, 32);
    CHECK_INT(d.reg_alloc_unit, 256);
    CHECK_INT(d.smem_alloc_unit, 256);
    CHECK_INT(d.max_regs_per_thread, 255);
    CHECK_INT(d.regs_per_sm, 65536);
    CHECK_INT(d.max_threads_per_sm, 0);
    CHECK_INT(d.max_blocks_per_sm, 0);
    CHECK_INT(d.smem_per_sm_bytes, 0);
    fl_occupancy o;
    fl_launch l = launch(256, 32, 0, 0, 0);
    CHECK(!fl_occupancy_compute(&d, &l, &o));
    CHECK_INT(o.max_active_blocks, 0);

    /* A minor the table lacks is unknown too. */
    memset(&d, 0, sizeof d);
    d.cc_major = 9;
    d.cc_minor = 1;
    CHECK(!fl_gpu_limits_fill_arch(&d));
    CHECK(!fl_gpu_limits_fill_arch(NULL));
}

static void test_names(void)
{
    CHECK_STR(fl_limiter_name(FL_LIMIT_WARPS), "warps");
    CHECK_STR(fl_limiter_name(FL_LIMIT_REGISTERS), "registers");
    CHECK_STR(fl_limiter_name(FL_LIMIT_SHARED_MEM), "shared_mem");
    CHECK_STR(fl_limiter_name(FL_LIMIT_BLOCKS), "blocks");
    CHECK(fl_limiter_name((fl_limiter)4) == NULL);

    CHECK_STR(fl_gpu_arch_name(7, 0), "Volta");
    CHECK_STR(fl_gpu_arch_name(7, 2), "Volta");
    CHECK_STR(fl_gpu_arch_name(7, 5), "Turing");
    CHECK_STR(fl_gpu_arch_name(8, 0), "Ampere");
    CHECK_STR(fl_gpu_arch_name(8, 6), "Ampere");
    CHECK_STR(fl_gpu_arch_name(8, 7), "Ampere");
    CHECK_STR(fl_gpu_arch_name(8, 9), "Ada");
    CHECK_STR(fl_gpu_arch_name(9, 0), "Hopper");
    CHECK_STR(fl_gpu_arch_name(10, 0), "Blackwell");
    CHECK_STR(fl_gpu_arch_name(10, 3), "Blackwell");
    CHECK_STR(fl_gpu_arch_name(12, 0), "Blackwell");
    CHECK(fl_gpu_arch_name(6, 1) == NULL);
    CHECK(fl_gpu_arch_name(7, 1) == NULL);
    CHECK(fl_gpu_arch_name(9, 1) == NULL);
    CHECK(fl_gpu_arch_name(0, 0) == NULL);
}

static void test_a100(void)
{
    fl_gpu_limits d = device(8, 0, 108);
    fl_occupancy o;

    /* 256 threads, 32 regs, no shared memory: w = 8.
     * warps 64/8 = 8; regs/warp 1024, 4*floor(16384/1024) = 64 warps -> 8;
     * smem roundup(0+0+1024) = 1024, 167936/1024 = 164; blocks 32.
     * min 8 (warps and registers tie: warps first) -> 64/64. */
    EXPECT(d, launch(256, 32, 0, 0, 0), 8, 1.0, "warps");
    fractions(&o, 1.0, 1.0, 1.0, 1.0);

    /* 256 threads, 64 regs: regs/warp 2048, 4*floor(16384/2048) = 32 warps
     * -> 4 blocks; warps 8, smem 164, blocks 32.  4*8 = 32/64. */
    EXPECT(d, launch(256, 64, 0, 0, 0), 4, 0.5, "registers");
    fractions(&o, 1.0, 0.5, 1.0, 1.0);

    /* 128 threads, no registers, 48 KiB static: w = 4.
     * smem 49152+1024 = 50176 (a multiple of 128), 167936/50176 = 3.35 -> 3;
     * warps 16, registers none, blocks 32.  3*4 = 12/64 = 0.1875. */
    EXPECT(d, launch(128, 0, 48 * KIB, 0, 0), 3, 0.1875, "shared_mem");
    fractions(&o, 1.0, 1.0, 0.1875, 1.0);

    /* 32 threads, 16 regs: w = 1.  regs/warp 512, 4*floor(16384/512) = 128
     * warps -> 128 blocks; warps 64; smem 164; blocks 32 -> 32/64. */
    EXPECT(d, launch(32, 16, 0, 0, 0), 32, 0.5, "blocks");
    fractions(&o, 1.0, 1.0, 1.0, 0.5);

    /* 96 threads, 40 regs: w = 3.  regs/warp 40*32 = 1280; per
     * sub-partition floor(16384/1280) = 12 warps, 4*12 = 48 warps -> 16
     * blocks.  (The whole file at once, floor(65536/1280) = 51 warps -> 17
     * blocks, is not what the hardware does.)  warps floor(64/3) = 21,
     * smem 164, blocks 32.  16*3 = 48/64 = 0.75.
     * warps alone: 21*3 = 63/64; blocks alone: 32*3 = 96 -> 1. */
    EXPECT(d, launch(96, 40, 0, 0, 0), 16, 0.75, "registers");
    fractions(&o, 63.0 / 64.0, 0.75, 1.0, 1.0);

    /* 32 threads, 255 regs: regs/warp roundup(8160, 256) = 8192;
     * 4*floor(16384/8192) = 8 warps -> 8 blocks -> 8/64. */
    EXPECT(d, launch(32, 255, 0, 0, 0), 8, 0.125, "registers");

    /* Rounding to the 128-byte unit: 128 threads, 54954 dynamic.
     * 54954+1024 = 55978 -> roundup 56064; 167936/56064 = 2.99 -> 2
     * (unrounded 167936/55978 would be 3).  2*4 = 8/64. */
    EXPECT(d, launch(128, 0, 0, 54954, 0), 2, 0.125, "shared_mem");

    /* Tie between warps and shared memory goes to warps: 128 threads,
     * 9472 static: 9472+1024 = 10496 = 82*128, 167936/10496 = 16 = 64/4.
     * One byte more: roundup(10497) = 10624 -> 15 blocks, 60/64. */
    EXPECT(d, launch(128, 0, 9472, 0, 0), 16, 1.0, "warps");
    EXPECT(d, launch(128, 0, 9473, 0, 0), 15, 0.9375, "shared_mem");

    /* The opt-in limit is 163 KiB = 166912 of static + dynamic: exactly
     * that is 166912+1024 = 167936, one block, 4/64. */
    EXPECT(d, launch(128, 0, 0, 166912, 0), 1, 0.0625, "shared_mem");
}

static void test_a100_cannot_launch(void)
{
    fl_gpu_limits d = device(8, 0, 108);
    fl_occupancy o;

    /* 2048 threads > 1024 per block. */
    EXPECT_NONE(d, launch(2048, 32, 0, 0, 0));
    /* 256 registers per thread > 255. */
    EXPECT_NONE(d, launch(32, 256, 0, 0, 0));
    /* One byte over the opt-in limit. */
    EXPECT_NONE(d, launch(128, 0, 0, 166913, 0));
    EXPECT_NONE(d, launch(128, 0, 48 * KIB, 166912 - 48 * KIB + 1, 0));
    /* 1024 threads, 72 regs: 2304 regs/warp * 32 warps = 73728 > 65536. */
    EXPECT_NONE(d, launch(1024, 72, 0, 0, 0));
    /* The hardware's per-block check rounds warps up to 4: 416 threads
     * (13 warps) at 136 regs: 4352 regs/warp, 13*4352 = 56576 fits but
     * 16*4352 = 69632 > 65536. */
    EXPECT_NONE(d, launch(416, 136, 0, 0, 0));
    /* Nonsense launches. */
    EXPECT_NONE(d, launch(0, 32, 0, 0, 0));
    EXPECT_NONE(d, launch(-32, 32, 0, 0, 0));
    EXPECT_NONE(d, launch(32, -1, 0, 0, 0));
    EXPECT_NONE(d, launch(32, 0, -1, 0, 0));
    EXPECT_NONE(d, launch(32, 0, 0, 0, -1));

    /* No device, no launch, or no out. */
    fl_launch l = launch(256, 32, 0, 0, 0);
    CHECK(!fl_occupancy_compute(NULL, &l, &o));
    CHECK(!fl_occupancy_compute(&d, NULL, &o));
    CHECK(!fl_occupancy_compute(&d, &l, NULL));
    /* Limits never filled in. */
    fl_gpu_limits zero;
    memset(&zero, 0, sizeof zero);
    CHECK(!fl_occupancy_compute(&zero, &l, &o));
}

static void test_h100(void)
{
    fl_gpu_limits d = device(9, 0, 132);
    fl_occupancy o;

    /* 1024 threads, 32 regs: w = 32.  warps 64/32 = 2; regs/warp 1024,
     * 64 warps -> 2; smem 233472/1024 = 228; blocks 32.  Tie: warps. */
    EXPECT(d, launch(1024, 32, 0, 0, 0), 2, 1.0, "warps");
    fractions(&o, 1.0, 1.0, 1.0, 1.0);

    /* 1024 threads, 64 regs: 2048 regs/warp * 32 = 65536 fits the block
     * limit exactly; 4*floor(16384/2048) = 32 warps -> 1 block, 32/64. */
    EXPECT(d, launch(1024, 64, 0, 0, 0), 1, 0.5, "registers");
    fractions(&o, 1.0, 0.5, 1.0, 1.0);

    /* 256 threads, 32 regs, 100 KiB dynamic on the full 228 KiB carve-out:
     * smem 102400+1024 = 103424, 233472/103424 = 2.26 -> 2; warps 8,
     * registers 64/8 = 8, blocks 32.  2*8 = 16/64. */
    EXPECT(d, launch(256, 32, 0, 100 * KIB, 233472), 2, 0.25, "shared_mem");
    fractions(&o, 1.0, 1.0, 0.25, 1.0);
    /* The same with the carve-out left to the device: 228 KiB. */
    EXPECT(d, launch(256, 32, 0, 100 * KIB, 0), 2, 0.25, "shared_mem");
    /* A 132 KiB carve-out: 135168/103424 = 1.3 -> 1 block, 8/64. */
    EXPECT(d, launch(256, 32, 0, 100 * KIB, 132 * KIB), 1, 0.125, "shared_mem");
    fractions(&o, 1.0, 1.0, 0.125, 1.0);
    /* A carve-out below one block (64 KiB < 103424): the driver raises it
     * to the next size that holds the block (132 KiB), one block. */
    EXPECT(d, launch(256, 32, 0, 100 * KIB, 64 * KIB), 1, 0.125, "shared_mem");

    /* The opt-in limit is 227 KiB: 232448 fits (one block of 233472),
     * one byte more does not. */
    EXPECT(d, launch(256, 32, 0, 232448, 0), 1, 0.125, "shared_mem");
    EXPECT_NONE(d, launch(256, 32, 0, 232449, 0));
}

static void test_other_archs(void)
{
    fl_occupancy o;

    /* GA10x, 48 warp slots.  512 threads, 32 regs: w = 16; warps 48/16 = 3;
     * regs/warp 1024 -> 64 warps -> 4; smem 102400/1024 = 100; blocks 16.
     * 3*16 = 48/48. */
    fl_gpu_limits d = device(8, 6, 82);
    EXPECT(d, launch(512, 32, 0, 0, 0), 3, 1.0, "warps");
    /* 32 threads: blocks 16 -> 16/48. */
    EXPECT(d, launch(32, 32, 0, 0, 0), 16, 16.0 / 48.0, "blocks");
    fractions(&o, 1.0, 1.0, 1.0, 16.0 / 48.0);

    /* Volta's 256-byte unit: 128 threads, 13900 static (no reserved part).
     * roundup(13900, 256) = 14080, 98304/14080 = 6.98 -> 6 blocks (with a
     * 128-byte unit: 13952 -> 7).  6*4 = 24/64. */
    d = device(7, 0, 80);
    EXPECT(d, launch(128, 0, 13900, 0, 0), 6, 0.375, "shared_mem");
    /* Without shared memory Volta has no shared memory limit at all. */
    EXPECT(d, launch(32, 0, 0, 0, 0), 32, 0.5, "blocks");
    fractions(&o, 1.0, 1.0, 1.0, 0.5);

    /* Turing: 32 warp slots, 16 blocks.  1024 threads, 32 regs: w = 32;
     * warps 32/32 = 1; regs 64 warps -> 2; blocks 16 -> 1 block, 32/32. */
    d = device(7, 5, 72);
    EXPECT(d, launch(1024, 32, 0, 0, 0), 1, 1.0, "warps");
}

int main(void)
{
    test_fill_arch();
    test_names();
    test_a100();
    test_a100_cannot_launch();
    test_h100();
    test_other_archs();
    return check_done("test_occupancy");
}
