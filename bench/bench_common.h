/*
 * bench_common.h - what the benchmarks share: a deterministic, cheap
 * random sequence (xorshift64, never part of what is timed), the clocks
 * and the peak RSS.  Benchmark code only.
 */
#ifndef GP_BENCH_COMMON_H
#define GP_BENCH_COMMON_H

#include "abi/trace_abi.h"

#include <stdint.h>
#include <string.h>
#include <sys/resource.h>
#include <time.h>

static uint64_t bench_rng_state = 0x9e3779b97f4a7c15ull;

static inline uint64_t rng(void)
{
    uint64_t x = bench_rng_state;
    x ^= x << 13;
    x ^= x >> 7;
    x ^= x << 17;
    return bench_rng_state = x;
}

/* Seconds on clock c (CLOCK_MONOTONIC, CLOCK_THREAD_CPUTIME_ID, ...). */
static inline double bench_now(clockid_t c)
{
    struct timespec ts;
    clock_gettime(c, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

/* The process's peak resident set, KiB. */
static inline long bench_peak_rss_kib(void)
{
    struct rusage ru;
    getrusage(RUSAGE_SELF, &ru);
    return ru.ru_maxrss;
}

/* The next kernel row of a realistic trace into *r: starts ~5 us apart
 * (*t advances), durations 1-100 us, correlation ids increasing with gaps
 * (*corr advances), 50 kernels on 4 streams, some dynamic shared memory,
 * a detail on one launch in ten, an external id on one in sixteen. */
static inline void bench_kernel_row(fl_kernel_row *r, uint64_t *t, uint32_t *corr)
{
    memset(r, 0, sizeof *r);
    uint64_t x = rng();
    *t += 4000 + x % 2001;
    r->t_ns = *t;
    r->duration_ns = 1000 + (x >> 12) % 99001;
    r->corr_id = *corr;
    *corr += 1 + (uint32_t)((x >> 30) % 3); /* memcpys etc. in between */
    r->kernel_id = 1 + (uint32_t)((x >> 40) % 50);
    r->stream_id = 7 + (uint32_t)((x >> 50) % 4);
    r->dynamic_smem_bytes = (x >> 20) % 8 == 0 ? 4096u * (1 + (uint32_t)((x >> 24) % 12)) : 0;
    r->num_regs = (uint16_t)(16 + (x >> 33) % 112);
    r->has_details = (x >> 45) % 10 == 0;
    if ((x >> 55) % 16 == 0) {
        r->external_kind = 1;
        r->external_id = 1 + (x >> 8) % 100000;
    }
}

#endif /* GP_BENCH_COMMON_H */
