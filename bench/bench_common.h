/*
 * bench_common.h - what the benchmarks share: a deterministic, cheap
 * random sequence (xorshift64, never part of what is timed), the clocks
 * and the peak RSS.  Benchmark code only.
 */
#ifndef GP_BENCH_COMMON_H
#define GP_BENCH_COMMON_H

#include "abi/trace_abi.h"

#include <math.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdlib.h>
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

/* The shape of a generated kernel trace (bench_kernel_shaped): how long a
 * batch's rows span (the digits of dt_ns), how many digits the
 * correlation ids have, how many kernels, streams and devices, how often
 * a launch has an external id or a detail. */
typedef struct bench_kshape {
    uint64_t span_ns;      /* a batch's time span: starts span / rows apart on average */
    unsigned rows;         /* rows per batch (the recorder's: FL_TRACE_BATCH) */
    unsigned corr_digits;  /* corr_id digits, 1..9 (they wrap around within them) */
    unsigned kernels;      /* distinct kernel ids 1..kernels, uniform unless zipf_s */
    double zipf_s;         /* > 0: kernel k drawn with weight 1 / k^zipf_s (a few hot ones) */
    unsigned streams;      /* stream ids 7.. */
    unsigned devices;      /* device ids 0.. */
    unsigned ext_every;    /* an external id (1..10^6) on one launch in N; 0: none */
    bool details;          /* has_details on each kernel's first launch and, */
    unsigned detail_every; /* then, on one launch in N (a new signature); 0: never */
    uint64_t dur_min_ns, dur_max_ns;
} bench_kshape;

/* The generator's state between rows: the clock, the correlation
 * sequence, which kernels have had a launch. */
typedef struct bench_kgen {
    uint64_t t, corr_seq;
    unsigned char seen[4096]; /* kernel id % 4096 launched before */
    double *zipf_cdf;         /* zipf_s's cumulative weights (bench_kgen_zipf); owned */
} bench_kgen;

/* g's Zipf table for sh (sh->kernels entries); false when out of memory. */
static inline bool bench_kgen_zipf(bench_kgen *g, const bench_kshape *sh)
{
    if (sh->zipf_s <= 0 || g->zipf_cdf)
        return true;
    unsigned n = sh->kernels ? sh->kernels : 1;
    g->zipf_cdf = malloc(n * sizeof *g->zipf_cdf);
    if (!g->zipf_cdf)
        return false;
    double sum = 0;
    for (unsigned k = 0; k < n; k++)
        g->zipf_cdf[k] = sum += pow(k + 1.0, -sh->zipf_s);
    for (unsigned k = 0; k < n; k++)
        g->zipf_cdf[k] /= sum;
    return true;
}

/* A kernel id 1..n by g's Zipf table, for a uniform 53-bit draw u. */
static inline uint32_t bench_zipf_pick(const bench_kgen *g, unsigned n, uint64_t u)
{
    double x = (double)(u >> 11) / 9007199254740992.0;
    unsigned lo = 0, hi = n - 1;
    while (lo < hi) {
        unsigned mid = (lo + hi) / 2;
        if (g->zipf_cdf[mid] < x)
            lo = mid + 1;
        else
            hi = mid;
    }
    return lo + 1;
}

static inline uint64_t bench_pow10(unsigned d)
{
    uint64_t p = 1;
    while (d--)
        p *= 10;
    return p;
}

/* The next kernel row of shape sh into *r, g advancing: starts on average
 * span / rows apart (half to one and a half times that), durations uniform
 * in [dur_min, dur_max], correlation ids of corr_digits digits increasing
 * with gaps of 1-3; a kernel keeps its registers and dynamic shared memory
 * (so that its signature changes only where has_details says). */
static inline void bench_kernel_shaped(fl_kernel_row *r, const bench_kshape *sh, bench_kgen *g)
{
    memset(r, 0, sizeof *r);
    uint64_t x = rng(), y = rng();
    uint64_t step = sh->span_ns / (sh->rows ? sh->rows : 1);
    g->t += step / 2 + x % (step + 1);
    r->t_ns = g->t;
    r->duration_ns = sh->dur_min_ns + (x >> 20) % (sh->dur_max_ns - sh->dur_min_ns + 1);
    unsigned cd = sh->corr_digits ? sh->corr_digits : 1;
    uint64_t lo = cd > 1 ? bench_pow10(cd - 1) : 1, hi = bench_pow10(cd);
    r->corr_id = (uint32_t)(lo + g->corr_seq % (hi - lo));
    g->corr_seq += 1 + y % 3;
    uint32_t k = g->zipf_cdf ? bench_zipf_pick(g, sh->kernels ? sh->kernels : 1, rng())
                             : 1 + (uint32_t)((y >> 8) % (sh->kernels ? sh->kernels : 1));
    r->kernel_id = k;
    r->stream_id = 7 + (uint32_t)((y >> 24) % (sh->streams ? sh->streams : 1));
    r->device_id = (uint32_t)((y >> 36) % (sh->devices ? sh->devices : 1));
    r->dynamic_smem_bytes = k % 8 == 0 ? 4096u * (1 + k % 12) : 0;
    r->num_regs = (uint16_t)(16 + (k * 37u) % 112);
    r->grid[0] = 1 + k % 512;
    r->grid[1] = r->grid[2] = 1;
    r->block[0] = 128u << (k % 3);
    r->block[1] = r->block[2] = 1;
    bool first = !g->seen[k % 4096];
    g->seen[k % 4096] = 1;
    r->has_details =
        sh->details && (first || (sh->detail_every && (y >> 44) % sh->detail_every == 0));
    if (sh->ext_every && (y >> 52) % sh->ext_every == 0) {
        r->external_kind = 1;
        r->external_id = 1 + (x >> 8) % 1000000;
    }
}

#endif /* GP_BENCH_COMMON_H */
