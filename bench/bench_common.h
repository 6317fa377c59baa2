/*
 * bench_common.h - what the benchmarks share: a deterministic, cheap
 * random sequence (xorshift64, never part of what is timed), the clocks
 * and the peak RSS.  Benchmark code only.
 */
#ifndef GP_BENCH_COMMON_H
#define GP_BENCH_COMMON_H

#include <stdint.h>
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

#endif /* GP_BENCH_COMMON_H */
