/*
 * test_stats.c - gp_acc against brute force.
 *
 * Random regions (seeded, so a failure reproduces) go through gp_acc and
 * through a reference that keeps every sample, sorts for the nearest-rank
 * percentiles and computes means, maxima, the energy rule and the
 * sparkline resampling directly.  Integer statistics must match exactly,
 * doubles to a tight tolerance.  Hand-made cases pin the energy source
 * selection, warmup, and the edges (no sample, one sample, all invalid).
 */
#include "check.h"
#include "sampler/stats.h"
#include "gpu_profile.h"

#include <math.h>

/* --------------------------------------------------------------- PRNG */

static uint64_t rng_state;

static uint64_t rng(void)
{
    /* splitmix64: small, seedable, good enough for test data. */
    uint64_t z = (rng_state += 0x9E3779B97F4A7C15ull);
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
    return z ^ (z >> 31);
}

/* Uniform in [lo, hi]. */
static uint64_t rng_range(uint64_t lo, uint64_t hi)
{
    return lo + rng() % (hi - lo + 1);
}

/* True with probability pct/100. */
static int rng_pct(unsigned pct)
{
    return rng() % 100 < pct;
}

/* ---------------------------------------------------------- reference */

typedef struct timed {
    uint64_t t_ns;
    gp_device_sample s;
} timed;

static int cmp_u32(const void *a, const void *b)
{
    uint32_t x = *(const uint32_t *)a, y = *(const uint32_t *)b;
    return (x > y) - (x < y);
}

static uint32_t clamp100(uint32_t v)
{
    return v > 100 ? 100 : v;
}

/* The nearest-rank percentile of sorted v[0..n): the first element whose
 * rank k satisfies 100 k >= p n. */
static uint32_t ref_percentile(const uint32_t *sorted, size_t n, unsigned p)
{
    for (size_t k = 1; k <= n; k++)
        if (100 * (uint64_t)k >= (uint64_t)p * n)
            return sorted[k - 1];
    return sorted[n - 1];
}

static uint8_t ref_cell(const timed *x, size_t from, size_t to)
{
    uint64_t sum = 0, cnt = 0;
    for (size_t i = from; i < to; i++) {
        if (x[i].s.valid & GP_M_UTIL_GPU) {
            sum += clamp100(x[i].s.util_gpu_pct);
            cnt++;
        }
    }
    if (!cnt)
        return GP_SPARK_NONE;
    return (uint8_t)floor((double)sum / (double)cnt + 0.5);
}

/* What the summary should hold, from every sample.  Statistics fields
 * only; identity fields stay as the caller set them. */
static void reference(const timed *all, size_t n_all, uint64_t t0, uint64_t warmup_ns,
                      gp_summary *r)
{
    timed *x = malloc((n_all ? n_all : 1) * sizeof *x);
    uint32_t *ug = malloc((n_all ? n_all : 1) * sizeof *ug);
    size_t n = 0, n_ug = 0;
    uint64_t dropped = 0;
    for (size_t i = 0; i < n_all; i++) {
        uint64_t since = all[i].t_ns > t0 ? all[i].t_ns - t0 : 0;
        if (since < warmup_ns)
            dropped++;
        else
            x[n++] = all[i];
    }
    r->sample_count = n;
    r->samples_warmup = dropped;
    r->interval_mean_s = n >= 2 ? (double)(x[n - 1].t_ns - x[0].t_ns) / 1e9 / (double)(n - 1) : 0;

    uint32_t valid = 0;
    uint64_t sum_um = 0, n_um = 0, sum_pw = 0, n_pw = 0, sum_cs = 0, n_cs = 0, sum_cm = 0, n_cm = 0;
    uint64_t sum_ug = 0;
    uint32_t max_um = 0, max_pw = 0;
    uint64_t mem_used_max = 0, mem_total = 0, thr = 0;
    int32_t temp_max = INT32_MIN;
    double sum_mem_used = 0, n_mem_used = 0, sum_temp = 0, n_temp = 0;
    uint32_t max_cs = 0;
    for (size_t i = 0; i < n; i++) {
        const gp_device_sample *s = &x[i].s;
        valid |= s->valid;
        if (s->valid & GP_M_UTIL_GPU) {
            ug[n_ug++] = clamp100(s->util_gpu_pct);
            sum_ug += clamp100(s->util_gpu_pct);
        }
        if (s->valid & GP_M_UTIL_MEM) {
            sum_um += clamp100(s->util_mem_pct);
            n_um++;
            if (clamp100(s->util_mem_pct) > max_um)
                max_um = clamp100(s->util_mem_pct);
        }
        if ((s->valid & GP_M_MEM_USED) && s->mem_used_bytes > mem_used_max)
            mem_used_max = s->mem_used_bytes;
        if (s->valid & GP_M_MEM_USED) {
            sum_mem_used += (double)s->mem_used_bytes;
            n_mem_used++;
        }
        if (s->valid & GP_M_TEMP) {
            sum_temp += s->temp_c;
            n_temp++;
        }
        if ((s->valid & GP_M_CLOCK_SM) && s->clock_sm_mhz > max_cs)
            max_cs = s->clock_sm_mhz;
        if (s->valid & GP_M_MEM_TOTAL)
            mem_total = s->mem_total_bytes;
        if (s->valid & GP_M_POWER) {
            sum_pw += s->power_mw;
            n_pw++;
            if (s->power_mw > max_pw)
                max_pw = s->power_mw;
        }
        if ((s->valid & GP_M_TEMP) && s->temp_c > temp_max)
            temp_max = s->temp_c;
        if (s->valid & GP_M_CLOCK_SM) {
            sum_cs += s->clock_sm_mhz;
            n_cs++;
        }
        if (s->valid & GP_M_CLOCK_MEM) {
            sum_cm += s->clock_mem_mhz;
            n_cm++;
        }
        if (s->valid & GP_M_THROTTLE)
            thr |= s->throttle_reasons;
    }
    qsort(ug, n_ug, sizeof *ug, cmp_u32);
    r->util_gpu_mean = n_ug ? (double)sum_ug / (double)n_ug : 0;
    r->util_gpu_p50 = n_ug ? ref_percentile(ug, n_ug, 50) : 0;
    r->util_gpu_p95 = n_ug ? ref_percentile(ug, n_ug, 95) : 0;
    r->util_gpu_max = n_ug ? ug[n_ug - 1] : 0;
    r->util_gpu_min = n_ug ? ug[0] : 0;
    r->util_gpu_p5 = n_ug ? ref_percentile(ug, n_ug, 5) : 0;
    r->util_gpu_p99 = n_ug ? ref_percentile(ug, n_ug, 99) : 0;
    double sq = 0;
    uint64_t idle = 0, active = 0;
    for (size_t i = 0; i < n_ug; i++) {
        sq += (ug[i] - r->util_gpu_mean) * (ug[i] - r->util_gpu_mean);
        idle += ug[i] < 5;
        active += ug[i] >= 50;
    }
    r->util_gpu_std = n_ug >= 2 ? sqrt(sq / (double)n_ug) : NAN;
    r->util_gpu_idle_pct = n_ug ? 100.0 * (double)idle / (double)n_ug : 0;
    r->util_gpu_active_pct = n_ug ? 100.0 * (double)active / (double)n_ug : 0;
    r->mem_used_mean_bytes = n_mem_used ? sum_mem_used / n_mem_used : 0;
    r->temp_mean_c = n_temp ? sum_temp / n_temp : 0;
    r->clock_sm_max_mhz = max_cs;
    r->busy_time_est_s = n_ug ? r->duration_s * r->util_gpu_mean / 100 : 0;
    r->util_mem_mean = n_um ? (double)sum_um / (double)n_um : 0;
    r->util_mem_max = max_um;
    r->mem_used_max_bytes = mem_used_max;
    r->mem_total_bytes = mem_total;
    r->power_mean_mw = n_pw ? (double)sum_pw / (double)n_pw : 0;
    r->power_max_mw = max_pw;
    r->temp_max_c = (valid & GP_M_TEMP) ? temp_max : 0;
    r->clock_sm_mean_mhz = n_cs ? (double)sum_cs / (double)n_cs : 0;
    r->clock_mem_mean_mhz = n_cm ? (double)sum_cm / (double)n_cm : 0;
    r->throttle_reasons_seen = thr;

    /* Energy: the counter when the first and last samples have it, no
     * reading goes backwards and it advanced, else the trapezoid over
     * consecutive valid power samples. */
    int counter_ok = n > 0 && (x[0].s.valid & GP_M_ENERGY) && (x[n - 1].s.valid & GP_M_ENERGY);
    for (size_t i = 0, prev = SIZE_MAX; counter_ok && i < n; i++) {
        if (!(x[i].s.valid & GP_M_ENERGY))
            continue;
        if (prev != SIZE_MAX && x[i].s.energy_mj < x[prev].s.energy_mj)
            counter_ok = 0;
        prev = i;
    }
    r->energy_source = GP_ENERGY_NONE;
    r->energy_j = 0;
    if (counter_ok && x[n - 1].s.energy_mj > x[0].s.energy_mj) {
        r->energy_source = GP_ENERGY_COUNTER;
        r->energy_j = (double)(x[n - 1].s.energy_mj - x[0].s.energy_mj) / 1000.0;
    } else {
        double mj = 0;
        size_t prev = SIZE_MAX, first = SIZE_MAX;
        for (size_t i = 0; i < n; i++) {
            if (!(x[i].s.valid & GP_M_POWER))
                continue;
            if (prev != SIZE_MAX)
                mj += 0.5 * ((double)x[prev].s.power_mw + (double)x[i].s.power_mw) *
                      ((double)(x[i].t_ns - x[prev].t_ns) / 1e9);
            else
                first = i;
            prev = i;
        }
        if (n_pw >= 2 && x[prev].t_ns > x[first].t_ns) {
            r->energy_source = GP_ENERGY_POWER_INTEGRAL;
            r->energy_j = mj / 1000.0;
        }
    }
    valid &= ~(uint32_t)(GP_M_ENERGY | GP_M_PCIE_TX | GP_M_PCIE_RX);
    if (r->energy_source != GP_ENERGY_NONE)
        valid |= GP_M_ENERGY;
    r->valid = valid;

    /* Sparkline: the buckets gp_acc would hold, rebuilt from the samples:
     * the smallest power-of-two span that fits n samples in
     * GP_SPARK_BUCKETS buckets, then each cell takes whole buckets. */
    memset(r->spark, GP_SPARK_NONE, sizeof r->spark);
    if (n < GP_SPARK_WIDTH) {
        for (size_t i = 0; i < n; i++)
            r->spark[i] = ref_cell(x, i, i + 1);
        r->spark_len = (uint32_t)n;
    } else {
        uint64_t span = 1;
        while ((n + span - 1) / span > GP_SPARK_BUCKETS)
            span *= 2;
        uint64_t used = (n + span - 1) / span;
        for (uint64_t c = 0; c < GP_SPARK_WIDTH; c++) {
            uint64_t b0 = c * used / GP_SPARK_WIDTH, b1 = (c + 1) * used / GP_SPARK_WIDTH;
            uint64_t from = b0 * span, to = b1 * span < n ? b1 * span : n;
            r->spark[c] = ref_cell(x, from, to);
        }
        r->spark_len = GP_SPARK_WIDTH;
    }
    free(x);
    free(ug);
}

/* Relative-and-absolute closeness for doubles summed in another order. */
static int close_enough(double a, double b)
{
    return fabs(a - b) <= 1e-9 * (fabs(a) > fabs(b) ? fabs(a) : fabs(b)) + 1e-9;
}

/* Compares every statistics field; returns the number of mismatches so a
 * random run can print its seed once. */
static int compare(const gp_summary *got, const gp_summary *want)
{
    int before = check_failed_;
    CHECK_U64(got->sample_count, want->sample_count);
    CHECK_U64(got->samples_warmup, want->samples_warmup);
    CHECK(close_enough(got->interval_mean_s, want->interval_mean_s));
    CHECK_U64(got->valid, want->valid);
    CHECK_NEAR(got->util_gpu_mean, want->util_gpu_mean, 1e-12);
    CHECK_U64(got->util_gpu_p50, want->util_gpu_p50);
    CHECK_U64(got->util_gpu_p95, want->util_gpu_p95);
    CHECK_U64(got->util_gpu_max, want->util_gpu_max);
    CHECK_U64(got->util_gpu_min, want->util_gpu_min);
    CHECK_U64(got->util_gpu_p5, want->util_gpu_p5);
    CHECK_U64(got->util_gpu_p99, want->util_gpu_p99);
    CHECK(isnan(got->util_gpu_std) == isnan(want->util_gpu_std));
    if (!isnan(want->util_gpu_std))
        CHECK(close_enough(got->util_gpu_std, want->util_gpu_std));
    CHECK(close_enough(got->util_gpu_idle_pct, want->util_gpu_idle_pct));
    CHECK(close_enough(got->util_gpu_active_pct, want->util_gpu_active_pct));
    CHECK(close_enough(got->mem_used_mean_bytes, want->mem_used_mean_bytes));
    CHECK(close_enough(got->temp_mean_c, want->temp_mean_c));
    CHECK_U64(got->clock_sm_max_mhz, want->clock_sm_max_mhz);
    CHECK(close_enough(got->busy_time_est_s, want->busy_time_est_s));
    CHECK_NEAR(got->util_mem_mean, want->util_mem_mean, 1e-12);
    CHECK_U64(got->util_mem_max, want->util_mem_max);
    CHECK_U64(got->mem_used_max_bytes, want->mem_used_max_bytes);
    CHECK_U64(got->mem_total_bytes, want->mem_total_bytes);
    CHECK(close_enough(got->power_mean_mw, want->power_mean_mw));
    CHECK_U64(got->power_max_mw, want->power_max_mw);
    CHECK_INT(got->energy_source, want->energy_source);
    if (!close_enough(got->energy_j, want->energy_j))
        CHECK_NEAR(got->energy_j, want->energy_j, 0);
    CHECK_INT(got->temp_max_c, want->temp_max_c);
    CHECK(close_enough(got->clock_sm_mean_mhz, want->clock_sm_mean_mhz));
    CHECK(close_enough(got->clock_mem_mean_mhz, want->clock_mem_mean_mhz));
    CHECK_U64(got->throttle_reasons_seen, want->throttle_reasons_seen);
    CHECK_U64(got->spark_len, want->spark_len);
    for (uint32_t i = 0; i < GP_SPARK_WIDTH; i++) {
        if (i < want->spark_len && got->spark[i] != want->spark[i]) {
            CHECK_INT(got->spark[i], want->spark[i]);
            fprintf(stderr, "  (sparkline cell %u)\n", i);
        }
    }
    return check_failed_ - before;
}

static void run_acc(const timed *x, size_t n, uint64_t t0, uint64_t warmup_ns, double duration_s,
                    gp_summary *got, gp_summary *want)
{
    gp_acc *a = malloc(sizeof *a);
    gp_acc_init(a, t0, warmup_ns);
    for (size_t i = 0; i < n; i++)
        gp_acc_add(a, x[i].t_ns, &x[i].s);
    memset(got, 0, sizeof *got);
    memset(want, 0, sizeof *want);
    got->duration_s = want->duration_s = duration_s;
    gp_acc_summarize(a, got);
    reference(x, n, t0, warmup_ns, want);
    free(a);
}

/* ------------------------------------------------------- random runs */

static void random_sample(gp_device_sample *s, const unsigned bit_pct[12], uint64_t *energy,
                          uint64_t dt_ns, unsigned backwards_pct)
{
    memset(s, 0, sizeof *s);
    for (unsigned b = 0; b < 12; b++)
        if (rng_pct(bit_pct[b]))
            s->valid |= 1u << b;
    s->util_gpu_pct = (uint32_t)(rng_pct(5) ? rng_range(101, 300) : rng_range(0, 100));
    s->util_mem_pct = (uint32_t)(rng_pct(3) ? rng_range(101, 150) : rng_range(0, 100));
    s->mem_used_bytes = rng_range(0, 85899345920ull);
    s->mem_total_bytes = rng_pct(80) ? 85899345920ull : rng_range(1, 1ull << 40);
    s->power_mw = (uint32_t)rng_range(20000, 700000);
    /* The counter advances by about power x dt, sometimes not at all (the
     * driver updates it every 20-100 ms), rarely backwards (a reload). */
    if (rng_pct(backwards_pct))
        *energy = *energy > 5000 ? *energy - rng_range(1, 5000) : 0;
    else if (!rng_pct(30))
        *energy += (uint64_t)s->power_mw * dt_ns / 1000000000ull;
    s->energy_mj = *energy;
    s->temp_c = (int32_t)rng_range(0, 140) - 40;
    s->clock_sm_mhz = (uint32_t)rng_range(0, 2100);
    s->clock_mem_mhz = (uint32_t)rng_range(0, 3000);
    s->throttle_reasons = rng_pct(70) ? 0 : (rng() & rng() & rng());
    s->pcie_tx_kbps = (uint32_t)rng();
    s->pcie_rx_kbps = (uint32_t)rng();
}

static void random_runs(void)
{
    static const unsigned pct_choices[] = {0, 10, 50, 90, 100, 100, 100};
    const int runs = 1000;
    size_t cap = 0;
    timed *x = NULL;
    for (int run = 0; run < runs; run++) {
        uint64_t seed = 0x5eed0000ull + (uint64_t)run;
        rng_state = seed;
        size_t n;
        uint64_t kind = rng() % 100;
        if (kind < 60)
            n = (size_t)rng_range(0, 80);
        else if (kind < 95)
            n = (size_t)rng_range(80, 2000);
        else
            n = (size_t)rng_range(2000, 20000);
        if (n > cap) {
            cap = n;
            x = realloc(x, cap * sizeof *x);
        }
        unsigned bit_pct[12];
        for (unsigned b = 0; b < 12; b++)
            bit_pct[b] = pct_choices[rng() % (sizeof pct_choices / sizeof pct_choices[0])];
        unsigned backwards_pct = rng_pct(20) ? 2 : 0;
        uint64_t interval_ns = rng_range(1000000, 500000000);
        uint64_t t0 = rng_range(0, 1000000000000ull);
        uint64_t t = t0 + rng_range(0, 50000000);
        uint64_t energy = rng_range(0, 1ull << 40);
        for (size_t i = 0; i < n; i++) {
            /* Jittered steps, some zero (two readings in one tick). */
            uint64_t dt = rng_pct(3) ? 0 : rng_range(interval_ns / 2, interval_ns * 3 / 2);
            t += dt;
            x[i].t_ns = t;
            random_sample(&x[i].s, bit_pct, &energy, dt, backwards_pct);
        }
        uint64_t span = n ? t - t0 : 1;
        uint64_t warmup_ns = rng_pct(50) ? 0 : rng_range(0, span);
        double duration_s = (double)(span + rng_range(0, interval_ns)) / 1e9;
        gp_summary got, want;
        run_acc(x, n, t0, warmup_ns, duration_s, &got, &want);
        if (compare(&got, &want))
            fprintf(stderr, "  random run %d (seed 0x%llx, %zu samples) failed\n", run,
                    (unsigned long long)seed, n);
    }
    free(x);
}

/* ---------------------------------------------------- sparkline shape */

/* Every sample count around the merge points, with util.gpu missing in a
 * stretch so gaps must show. */
static void sparkline_counts(void)
{
    static const size_t counts[] = {0,   1,   2,   31,  32,  33,  63,   64,   65,   66,  127,
                                    128, 129, 130, 255, 256, 257, 1000, 4095, 4096, 4097};
    for (size_t k = 0; k < sizeof counts / sizeof counts[0]; k++) {
        size_t n = counts[k];
        timed *x = calloc(n ? n : 1, sizeof *x);
        for (size_t i = 0; i < n; i++) {
            x[i].t_ns = 1000 + i * 100000000ull;
            x[i].s.util_gpu_pct = (uint32_t)((i * 37) % 101);
            /* The middle fifth has no util.gpu. */
            if (!(i * 5 >= n * 2 && i * 5 < n * 3))
                x[i].s.valid = GP_M_UTIL_GPU;
        }
        gp_summary got, want;
        run_acc(x, n, 1000, 0, 1.0, &got, &want);
        if (compare(&got, &want))
            fprintf(stderr, "  sparkline with %zu samples failed\n", n);
        CHECK_U64(got.spark_len, n < GP_SPARK_WIDTH ? n : GP_SPARK_WIDTH);
        if (n >= 100) {
            /* The gap is in the middle of the trace. */
            CHECK_INT(got.spark[GP_SPARK_WIDTH / 2], GP_SPARK_NONE);
            CHECK(got.spark[0] != GP_SPARK_NONE);
            CHECK(got.spark[GP_SPARK_WIDTH - 1] != GP_SPARK_NONE);
        }
        free(x);
    }

    /* A constant load is constant in every cell, however many merges. */
    gp_acc a;
    gp_acc_init(&a, 0, 0);
    gp_device_sample s = {.valid = GP_M_UTIL_GPU, .util_gpu_pct = 73};
    for (uint64_t i = 0; i < 100003; i++)
        gp_acc_add(&a, i * 1000, &s);
    gp_summary out = {0};
    gp_acc_summarize(&a, &out);
    CHECK_U64(out.spark_len, GP_SPARK_WIDTH);
    for (int i = 0; i < GP_SPARK_WIDTH; i++)
        CHECK_INT(out.spark[i], 73);

    /* A step from 0 to 100 halfway shows as a step. */
    gp_acc_init(&a, 0, 0);
    for (uint64_t i = 0; i < 512; i++) {
        s.util_gpu_pct = i < 256 ? 0 : 100;
        gp_acc_add(&a, i * 1000, &s);
    }
    gp_acc_summarize(&a, &out);
    for (int i = 0; i < GP_SPARK_WIDTH; i++)
        CHECK_INT(out.spark[i], i < GP_SPARK_WIDTH / 2 ? 0 : 100);

    /* Rounding: 1 and 2 in one cell average to 1.5, shown as 2. */
    gp_acc_init(&a, 0, 0);
    for (uint64_t i = 0; i < 128; i++) {
        s.util_gpu_pct = 1 + (uint32_t)(i % 2);
        gp_acc_add(&a, i * 1000, &s);
    }
    gp_acc_summarize(&a, &out);
    CHECK_INT(out.spark[0], 2);
}

/* ------------------------------------------------------------- energy */

typedef struct energy_case {
    const char *what;
    size_t n;
    uint64_t energy_mj[8];
    uint32_t energy_valid_mask; /* bit i: sample i has the counter */
    uint32_t power_valid_mask;  /* bit i: sample i has power */
    gp_energy_source want;
    double want_j;
} energy_case;

static void energy_cases(void)
{
    /* Samples every 100 ms at 200 W: the power integral over n samples is
     * 200 W x (n-1) x 0.1 s. */
    static const energy_case cases[] = {
        {"counter valid and advancing",
         5,
         {1000, 1020, 1045, 1070, 1100},
         0x1f,
         0x1f,
         GP_ENERGY_COUNTER,
         0.1},
        {"counter flat (short window)",
         5,
         {5000, 5000, 5000, 5000, 5000},
         0x1f,
         0x1f,
         GP_ENERGY_POWER_INTEGRAL,
         80.0},
        {"counter backwards (reload)",
         4,
         {9000, 9500, 10, 20},
         0x0f,
         0x0f,
         GP_ENERGY_POWER_INTEGRAL,
         60.0},
        /* Read less often on purpose: gaps between the ends are fine. */
        {"counter missing in a middle sample",
         5,
         {1000, 1020, 0, 1070, 1100},
         0x1b,
         0x1f,
         GP_ENERGY_COUNTER,
         0.1},
        {"counter missing in the last sample",
         4,
         {1000, 1020, 1045, 0},
         0x07,
         0x0f,
         GP_ENERGY_POWER_INTEGRAL,
         60.0},
        {"counter backwards across a gap",
         4,
         {9000, 0, 10, 9500},
         0x0d,
         0x0f,
         GP_ENERGY_POWER_INTEGRAL,
         60.0},
        {"counter missing in the first sample",
         3,
         {0, 1020, 1045},
         0x06,
         0x07,
         GP_ENERGY_POWER_INTEGRAL,
         40.0},
        {"counter without power", 3, {100, 200, 400}, 0x07, 0x00, GP_ENERGY_COUNTER, 0.3},
        {"counter flat, no power", 3, {100, 100, 100}, 0x07, 0x00, GP_ENERGY_NONE, 0},
        {"no counter, no power", 4, {0}, 0x00, 0x00, GP_ENERGY_NONE, 0},
        {"one power sample", 3, {0}, 0x00, 0x02, GP_ENERGY_NONE, 0},
        /* A missing power reading is bridged: samples 0 and 3 span 0.3 s. */
        {"power with a gap", 4, {0}, 0x00, 0x09, GP_ENERGY_POWER_INTEGRAL, 60.0},
        {"one sample with counter and power", 1, {100}, 0x01, 0x01, GP_ENERGY_NONE, 0},
    };
    for (size_t k = 0; k < sizeof cases / sizeof cases[0]; k++) {
        const energy_case *c = &cases[k];
        gp_acc a;
        gp_acc_init(&a, 0, 0);
        for (size_t i = 0; i < c->n; i++) {
            gp_device_sample s = {0};
            if (c->energy_valid_mask & (1u << i)) {
                s.valid |= GP_M_ENERGY;
                s.energy_mj = c->energy_mj[i];
            }
            if (c->power_valid_mask & (1u << i)) {
                s.valid |= GP_M_POWER;
                s.power_mw = 200000;
            }
            gp_acc_add(&a, i * 100000000ull, &s);
        }
        gp_summary out = {0};
        gp_acc_summarize(&a, &out);
        int before = check_failed_;
        CHECK_INT(out.energy_source, c->want);
        CHECK_NEAR(out.energy_j, c->want_j, 1e-9);
        CHECK_INT((out.valid & GP_M_ENERGY) != 0, c->want != GP_ENERGY_NONE);
        if (check_failed_ != before)
            fprintf(stderr, "  energy case: %s\n", c->what);
    }

    /* A ramp 100 W -> 300 W over 2 s integrates exactly to 400 J. */
    gp_acc a;
    gp_acc_init(&a, 0, 0);
    for (int i = 0; i <= 20; i++) {
        gp_device_sample s = {.valid = GP_M_POWER, .power_mw = (uint32_t)(100000 + i * 10000)};
        gp_acc_add(&a, (uint64_t)i * 100000000ull, &s);
    }
    gp_summary out = {0};
    gp_acc_summarize(&a, &out);
    CHECK_INT(out.energy_source, GP_ENERGY_POWER_INTEGRAL);
    CHECK_NEAR(out.energy_j, 400.0, 1e-9);
    CHECK_NEAR(out.power_mean_mw, 200000.0, 1e-9);
    CHECK_U64(out.power_max_mw, 300000);

    /* Warmup samples do not count towards the counter difference. */
    gp_acc_init(&a, 0, 250000000ull);
    for (int i = 0; i < 6; i++) {
        gp_device_sample s = {.valid = GP_M_ENERGY, .energy_mj = (uint64_t)(1000 * (i + 1))};
        gp_acc_add(&a, (uint64_t)i * 100000000ull, &s);
    }
    gp_acc_summarize(&a, &out);
    CHECK_U64(out.samples_warmup, 3);
    CHECK_U64(out.sample_count, 3);
    CHECK_INT(out.energy_source, GP_ENERGY_COUNTER);
    CHECK_NEAR(out.energy_j, 2.0, 1e-12);
}

/* -------------------------------------------------- percentiles, warmup */

static void percentiles(void)
{
    static const struct {
        size_t n;
        uint32_t v[20];
        uint32_t p50, p95, max;
    } cases[] = {
        {1, {42}, 42, 42, 42},
        {2, {0, 100}, 0, 100, 100},
        {4, {10, 20, 30, 40}, 20, 40, 40},
        {20, {1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16, 17, 18, 19, 20}, 10, 19, 20},
        {3, {250, 7, 101}, 100, 100, 100}, /* > 100 clamps to 100 */
        {5, {5, 5, 5, 5, 99}, 5, 99, 99},
    };
    for (size_t k = 0; k < sizeof cases / sizeof cases[0]; k++) {
        gp_acc a;
        gp_acc_init(&a, 0, 0);
        for (size_t i = 0; i < cases[k].n; i++) {
            gp_device_sample s = {.valid = GP_M_UTIL_GPU, .util_gpu_pct = cases[k].v[i]};
            gp_acc_add(&a, i, &s);
        }
        gp_summary out = {0};
        gp_acc_summarize(&a, &out);
        CHECK_U64(out.util_gpu_p50, cases[k].p50);
        CHECK_U64(out.util_gpu_p95, cases[k].p95);
        CHECK_U64(out.util_gpu_max, cases[k].max);
    }
}

/* util.gpu's spread, memory, temperature and the SM clock's maximum on
 * hand-made regions (the random runs compare them with brute force). */
static void spread(void)
{
    static const uint32_t u[10] = {0, 4, 5, 49, 50, 100, 100, 30, 60, 2};
    gp_acc a;
    gp_acc_init(&a, 0, 0);
    for (uint32_t i = 0; i < 10; i++) {
        gp_device_sample s = {.valid = GP_M_UTIL_GPU | GP_M_MEM_USED | GP_M_TEMP | GP_M_CLOCK_SM,
                              .util_gpu_pct = u[i],
                              .mem_used_bytes = (i + 1) * 1000000000ull,
                              .temp_c = i < 5 ? -3 : 40,
                              .clock_sm_mhz = 1000 + 97 * (i % 4)};
        if (i == 9)
            s.valid &= ~(uint32_t)GP_M_TEMP; /* a temperature not read is not a 0 */
        gp_acc_add(&a, i, &s);
    }
    gp_summary out = {0};
    gp_acc_summarize(&a, &out);
    CHECK_U64(out.util_gpu_min, 0);
    CHECK_U64(out.util_gpu_p5, 0);    /* rank ceil(0.5) = 1 */
    CHECK_U64(out.util_gpu_p99, 100); /* rank 10 */
    /* mean 40; squares 1600+1296+1225+81+100+3600+3600+100+400+1444 = 13446 */
    CHECK_NEAR(out.util_gpu_std, sqrt(1344.6), 1e-12);
    CHECK_NEAR(out.util_gpu_idle_pct, 30.0, 1e-12);   /* 0, 4, 2 */
    CHECK_NEAR(out.util_gpu_active_pct, 40.0, 1e-12); /* 50, 100, 100, 60 */
    CHECK_NEAR(out.mem_used_mean_bytes, 5.5e9, 1e-3);
    CHECK_NEAR(out.temp_mean_c, (5 * -3 + 4 * 40) / 9.0, 1e-12);
    CHECK_U64(out.clock_sm_max_mhz, 1291);

    /* One reading: its spread is unknown (NaN), its shares are known. */
    gp_acc_init(&a, 0, 0);
    gp_device_sample one = {.valid = GP_M_UTIL_GPU, .util_gpu_pct = 3};
    gp_acc_add(&a, 0, &one);
    gp_acc_summarize(&a, &out);
    CHECK(isnan(out.util_gpu_std));
    CHECK_U64(out.util_gpu_min, 3);
    CHECK_U64(out.util_gpu_p99, 3);
    CHECK_NEAR(out.util_gpu_idle_pct, 100.0, 0);
    CHECK_NEAR(out.util_gpu_active_pct, 0.0, 0);
    /* Two equal readings: a spread of exactly 0. */
    gp_acc_add(&a, 1, &one);
    gp_acc_summarize(&a, &out);
    CHECK_NEAR(out.util_gpu_std, 0.0, 0);
}

/* gp_run_stats_compute: the sample standard deviation, unknowns left out. */
static void run_stats(void)
{
    gp_run_stats r;
    gp_error err;
    const double v[5] = {2, 4, NAN, 4, 6};
    CHECK_INT(gp_run_stats_compute(v, 5, &r, &err), GP_OK);
    CHECK_U64(r.n, 4);
    CHECK_U64(r.n_unknown, 1);
    CHECK_NEAR(r.mean, 4.0, 1e-12);
    CHECK_NEAR(r.std, sqrt(8.0 / 3.0), 1e-12); /* (4+0+0+4) / (4-1) */
    CHECK_NEAR(r.min, 2.0, 0);
    CHECK_NEAR(r.max, 6.0, 0);

    const double one[1] = {7.5};
    CHECK_INT(gp_run_stats_compute(one, 1, &r, &err), GP_OK);
    CHECK_U64(r.n, 1);
    CHECK_NEAR(r.mean, 7.5, 0);
    CHECK(isnan(r.std));
    CHECK_NEAR(r.min, 7.5, 0);

    const double none[2] = {NAN, INFINITY};
    CHECK_INT(gp_run_stats_compute(none, 2, &r, &err), GP_OK);
    CHECK_U64(r.n, 0);
    CHECK_U64(r.n_unknown, 2);
    CHECK(isnan(r.mean) && isnan(r.std) && isnan(r.min) && isnan(r.max));
    CHECK_INT(gp_run_stats_compute(NULL, 0, &r, &err), GP_OK);
    CHECK(isnan(r.mean));

    CHECK_INT(gp_run_stats_compute(NULL, 3, &r, &err), GP_ERR_INVALID_ARG);
    CHECK(strstr(err.message, "values is NULL") != NULL);
    CHECK_INT(gp_run_stats_compute(v, 5, NULL, &err), GP_ERR_INVALID_ARG);
    CHECK(strstr(err.message, "out is NULL") != NULL);
}

static void warmup(void)
{
    /* Samples at 0, 100, ..., 900 ms after t0 with a 300 ms warmup: 0,
     * 100 and 200 are dropped; 300 (exactly at the boundary) is kept. */
    gp_acc a;
    uint64_t t0 = 5000000000ull;
    gp_acc_init(&a, t0, 300000000ull);
    for (int i = 0; i < 10; i++) {
        gp_device_sample s = {.valid = GP_M_UTIL_GPU, .util_gpu_pct = i < 3 ? 100 : 10};
        gp_acc_add(&a, t0 + (uint64_t)i * 100000000ull, &s);
    }
    gp_summary out = {0};
    out.duration_s = 1.0;
    gp_acc_summarize(&a, &out);
    CHECK_U64(out.samples_warmup, 3);
    CHECK_U64(out.sample_count, 7);
    CHECK_NEAR(out.util_gpu_mean, 10.0, 0);
    CHECK_U64(out.util_gpu_max, 10);
    CHECK_NEAR(out.interval_mean_s, 0.1, 1e-12);
    CHECK_NEAR(out.busy_time_est_s, 0.1, 1e-12);
    CHECK_U64(out.spark_len, 7);

    /* A sample stamped before t0 is inside the warmup. */
    gp_acc_init(&a, t0, 1);
    gp_device_sample s = {.valid = GP_M_UTIL_GPU, .util_gpu_pct = 50};
    gp_acc_add(&a, t0 - 10, &s);
    gp_acc_summarize(&a, &out);
    CHECK_U64(out.samples_warmup, 1);
    CHECK_U64(out.sample_count, 0);

    /* A warmup longer than the region drops everything. */
    gp_acc_init(&a, 0, 10000000000ull);
    for (int i = 0; i < 5; i++)
        gp_acc_add(&a, (uint64_t)i * 1000, &s);
    gp_acc_summarize(&a, &out);
    CHECK_U64(out.samples_warmup, 5);
    CHECK_U64(out.sample_count, 0);
    CHECK_U64(out.valid, 0);
    CHECK_U64(out.spark_len, 0);
}

/* --------------------------------------------------------------- edges */

static void edges(void)
{
    gp_acc a;
    gp_summary out;

    /* No sample: nothing valid, identity fields untouched. */
    gp_acc_init(&a, 0, 0);
    memset(&out, 0x5A, sizeof out);
    snprintf(out.name, sizeof out.name, "keep me");
    out.device_index = 7;
    out.interval_s = 0.2;
    out.duration_s = 3.0;
    gp_acc_summarize(&a, &out);
    CHECK_U64(out.sample_count, 0);
    CHECK_U64(out.samples_warmup, 0);
    CHECK_U64(out.valid, 0);
    CHECK_INT(out.energy_source, GP_ENERGY_NONE);
    CHECK_NEAR(out.energy_j, 0, 0);
    CHECK_NEAR(out.interval_mean_s, 0, 0);
    CHECK_NEAR(out.busy_time_est_s, 0, 0);
    CHECK_U64(out.util_gpu_p50, 0);
    CHECK_U64(out.spark_len, 0);
    CHECK_STR(out.name, "keep me");
    CHECK_U64(out.device_index, 7);
    CHECK_NEAR(out.interval_s, 0.2, 0);
    CHECK_NEAR(out.duration_s, 3.0, 0);

    /* One sample: its own percentiles, no interval, no energy. */
    gp_acc_init(&a, 0, 0);
    gp_device_sample one = {.valid = GP_M_UTIL_GPU | GP_M_POWER | GP_M_ENERGY | GP_M_TEMP,
                            .util_gpu_pct = 64,
                            .power_mw = 123456,
                            .energy_mj = 999,
                            .temp_c = -5};
    gp_acc_add(&a, 42, &one);
    memset(&out, 0, sizeof out);
    out.duration_s = 2.0;
    gp_acc_summarize(&a, &out);
    CHECK_U64(out.sample_count, 1);
    CHECK_U64(out.util_gpu_p50, 64);
    CHECK_U64(out.util_gpu_p95, 64);
    CHECK_NEAR(out.interval_mean_s, 0, 0);
    CHECK_NEAR(out.busy_time_est_s, 1.28, 1e-12);
    CHECK_INT(out.energy_source, GP_ENERGY_NONE);
    CHECK_U64(out.valid, GP_M_UTIL_GPU | GP_M_POWER | GP_M_TEMP);
    CHECK_INT(out.temp_max_c, -5); /* a negative maximum is still the maximum */
    CHECK_U64(out.spark_len, 1);
    CHECK_INT(out.spark[0], 64);

    /* All invalid: samples counted, nothing valid, the trace all gaps. */
    gp_acc_init(&a, 0, 0);
    gp_device_sample none = {.valid = 0, .util_gpu_pct = 99, .power_mw = 5};
    for (int i = 0; i < 40; i++)
        gp_acc_add(&a, (uint64_t)i * 1000000, &none);
    memset(&out, 0, sizeof out);
    gp_acc_summarize(&a, &out);
    CHECK_U64(out.sample_count, 40);
    CHECK_U64(out.valid, 0);
    CHECK_U64(out.util_gpu_max, 0);
    CHECK_NEAR(out.power_mean_mw, 0, 0);
    CHECK_U64(out.spark_len, GP_SPARK_WIDTH);
    for (int i = 0; i < GP_SPARK_WIDTH; i++)
        CHECK_INT(out.spark[i], GP_SPARK_NONE);

    /* PCIe bits are not summarised. */
    gp_acc_init(&a, 0, 0);
    gp_device_sample pcie = {.valid = GP_M_PCIE_TX | GP_M_PCIE_RX};
    gp_acc_add(&a, 0, &pcie);
    gp_acc_summarize(&a, &out);
    CHECK_U64(out.valid, 0);

    /* NULLs are ignored, not dereferenced. */
    gp_acc_add(NULL, 0, &one);
    gp_acc_add(&a, 0, NULL);
    gp_acc_summarize(NULL, &out);
    gp_acc_summarize(&a, NULL);
    CHECK_U64(a.n, 1);
}

/* GPM: mean, p95 (0.1 % bins; 1/32-octave bins for bytes/s) and max over
 * the samples that carry each metric; a metric no sample carries keeps its
 * bit clear. */
static void gpm_stats(void)
{
    static gp_acc a; /* ~150 KB of histograms */
    gp_acc_init(&a, 0, 0);
    for (int i = 0; i < 100; i++) {
        gp_device_sample s;
        memset(&s, 0, sizeof s);
        s.valid = GP_M_UTIL_GPU | GP_M_GPM(GP_GPM_SM_ACTIVE) | GP_M_GPM(GP_GPM_PCIE_TX);
        s.util_gpu_pct = 50;
        s.gpm[GP_GPM_SM_ACTIVE] = 99.04 - i; /* 99.04 .. 0.04, in falling order */
        s.gpm[GP_GPM_PCIE_TX] = 1e9;
        if (i == 7) { /* DRAM in one sample only, above 100: clamped */
            s.valid |= GP_M_GPM(GP_GPM_DRAM_ACTIVE);
            s.gpm[GP_GPM_DRAM_ACTIVE] = 100.5;
        }
        gp_acc_add(&a, (uint64_t)i * 1000000ull, &s);
        s.valid = GP_M_UTIL_GPU; /* a sample with no GPM: counts for nothing GPM */
        s.gpm[GP_GPM_SM_ACTIVE] = 1000;
        gp_acc_add(&a, (uint64_t)i * 1000000ull + 1, &s);
    }
    gp_summary out;
    memset(&out, 0, sizeof out);
    out.duration_s = 1.0;
    gp_acc_summarize(&a, &out);
    CHECK_INT(out.valid & GP_M_GPM_ALL,
              GP_M_GPM(GP_GPM_SM_ACTIVE) | GP_M_GPM(GP_GPM_PCIE_TX) | GP_M_GPM(GP_GPM_DRAM_ACTIVE));
    CHECK_NEAR(out.gpm_mean[GP_GPM_SM_ACTIVE], 49.54, 1e-9);
    CHECK_NEAR(out.gpm_p95[GP_GPM_SM_ACTIVE], 94.0, 1e-12); /* rank 95: 94.04, its bin 94.0 */
    CHECK_NEAR(out.gpm_max[GP_GPM_SM_ACTIVE], 99.04, 1e-12);
    CHECK_NEAR(out.gpm_mean[GP_GPM_DRAM_ACTIVE], 100.0, 0);
    CHECK_NEAR(out.gpm_p95[GP_GPM_DRAM_ACTIVE], 100.0, 0);
    CHECK_NEAR(out.gpm_mean[GP_GPM_PCIE_TX], 1e9, 0);
    CHECK_NEAR(out.gpm_max[GP_GPM_PCIE_TX], 1e9, 0);
    /* 1e9 B/s is in the bin from 2^(956/32) = 984.6 MB/s: 1.5 % below. */
    CHECK_NEAR(out.gpm_p95[GP_GPM_PCIE_TX], 984625593.97, 1.0);
    CHECK_NEAR(out.gpm_mean[GP_GPM_FP32_ACTIVE], 0, 0);
}

int main(void)
{
    gpm_stats();
    percentiles();
    spread();
    run_stats();
    warmup();
    edges();
    energy_cases();
    sparkline_counts();
    random_runs();
    return check_done("test_stats");
}
