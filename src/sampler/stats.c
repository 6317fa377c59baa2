/*
 * sampler/stats.c - per-device running statistics in O(1) memory.
 *
 * gp_acc keeps sums, maxima, a 101-bin util.gpu histogram (so p50/p95 are
 * exact nearest-rank percentiles without keeping samples), per GPM metric
 * a histogram (0.1 % steps; 1/32 octave for bytes/s, so a rate's p95 is
 * at most 2.2 % below the true nearest rank), the energy
 * counter's endpoints, a trapezoidal power integral and a fixed number of
 * sparkline buckets.  Samples taken during the warmup are only counted.
 * Nothing here allocates, locks or fails; the caller serialises access.
 */
#include "stats.h"
#include "../util/energy.h"
#include "../util/error.h"
#include "gpu_profile.h"

#include <math.h>
#include <string.h>

/* Bits the summary can say something about; PCIe is not summarised, and
 * GP_M_ENERGY depends on the energy rule, not on the samples alone. */
#define SUMMARY_BITS                                                                               \
    (GP_M_UTIL_GPU | GP_M_UTIL_MEM | GP_M_MEM_USED | GP_M_MEM_TOTAL | GP_M_POWER | GP_M_TEMP |     \
     GP_M_CLOCK_SM | GP_M_CLOCK_MEM | GP_M_THROTTLE | GP_M_GPM_ALL | GP_M_PROC_MEM |               \
     GP_M_PROC_UTIL)

static void proc_add(gp_acc *a, const gp_device_sample *s);

void gp_acc_init(gp_acc *a, uint64_t t0_ns, uint64_t warmup_ns)
{
    memset(a, 0, sizeof *a);
    a->t0_ns = t0_ns;
    a->warmup_ns = warmup_ns;
    a->spark_span = 1;
}

static void spark_add(gp_acc *a, int has_util, uint32_t util)
{
    if (a->spark_used == 0) {
        a->spark_used = 1;
        a->spark_fill = 0;
    } else if (a->spark_fill == a->spark_span) {
        if (a->spark_used == GP_SPARK_BUCKETS) {
            /* Every bucket is full: halve the resolution rather than grow. */
            for (uint32_t i = 0; i < GP_SPARK_BUCKETS / 2; i++) {
                a->spark_sum[i] = a->spark_sum[2 * i] + a->spark_sum[2 * i + 1];
                a->spark_cnt[i] = a->spark_cnt[2 * i] + a->spark_cnt[2 * i + 1];
            }
            for (uint32_t i = GP_SPARK_BUCKETS / 2; i < GP_SPARK_BUCKETS; i++) {
                a->spark_sum[i] = 0;
                a->spark_cnt[i] = 0;
            }
            a->spark_used = GP_SPARK_BUCKETS / 2;
            a->spark_span *= 2;
        }
        a->spark_used++;
        a->spark_fill = 0;
    }
    uint32_t b = a->spark_used - 1;
    a->spark_fill++;
    /* An invalid reading still takes its place in time, so gaps show. */
    if (has_util) {
        a->spark_sum[b] += util;
        a->spark_cnt[b]++;
    }
}

/* A rate's bin: 0 below 1 B/s, else 1 + floor(32 log2 v), capped. */
static uint32_t rate_bin(double v)
{
    if (!(v >= 1.0))
        return 0;
    double b = 1.0 + floor(32.0 * log2(v));
    return b >= GP_GPM_RATE_BINS - 1 ? GP_GPM_RATE_BINS - 1 : (uint32_t)b;
}

/* The lowest value of a rate bin. */
static double rate_bin_value(uint32_t b)
{
    return b == 0 ? 0.0 : exp2((double)(b - 1) / 32.0);
}

static void gpm_add(gp_acc *a, const gp_device_sample *s)
{
    for (unsigned i = 0; i < GP_GPM_COUNT; i++) {
        if (!(s->valid & GP_M_GPM(i)))
            continue;
        double v = s->gpm[i];
        if (!(v >= 0.0) || !isfinite(v))
            continue; /* backends give none of these; never a bin */
        if (i < GP_GPM_PCT_METRICS) {
            if (v > 100.0)
                v = 100.0;
            a->gpm_hist_pct[i][(uint32_t)(v * 10.0 + 0.5)]++;
        } else {
            a->gpm_hist_rate[i - GP_GPM_PCT_METRICS][rate_bin(v)]++;
        }
        if (a->gpm_n[i] == 0 || v > a->gpm_max[i])
            a->gpm_max[i] = v;
        a->gpm_n[i]++;
        a->gpm_sum[i] += v;
    }
}

void gp_acc_add(gp_acc *a, uint64_t t_ns, const gp_device_sample *s)
{
    if (!a || !s)
        return;
    gp_health_add(&a->health, s);
    uint64_t since_start_ns = t_ns > a->t0_ns ? t_ns - a->t0_ns : 0;
    if (since_start_ns < a->warmup_ns) {
        a->n_warmup++;
        return;
    }

    uint32_t v = s->valid;
    int first = a->n == 0;
    if (first)
        a->first_t_ns = t_ns;
    a->last_t_ns = t_ns;
    a->n++;
    uint32_t seen_before = a->valid;
    a->valid |= v;

    if (v & GP_M_UTIL_GPU) {
        uint32_t u = gp_pct_clamp(s->util_gpu_pct);
        gp_gauge_add(&a->util_gpu, u);
        a->hist_util_gpu[u]++;
    }
    if (v & GP_M_UTIL_MEM)
        gp_gauge_add(&a->util_mem, gp_pct_clamp(s->util_mem_pct));
    if (v & GP_M_MEM_USED) {
        if (s->mem_used_bytes > a->mem_used_max)
            a->mem_used_max = s->mem_used_bytes;
        a->n_mem_used++;
        a->sum_mem_used += (double)s->mem_used_bytes;
    }
    if (v & GP_M_MEM_TOTAL)
        a->mem_total = s->mem_total_bytes;
    if (v & GP_M_POWER) {
        if (a->power_mw.n == 0) {
            a->power_first_t_ns = t_ns;
        } else {
            double dt_s =
                t_ns > a->power_prev_t_ns ? (double)(t_ns - a->power_prev_t_ns) / 1e9 : 0.0;
            a->power_integral_mj += 0.5 * ((double)a->power_prev_mw + (double)s->power_mw) * dt_s;
        }
        a->power_prev_t_ns = t_ns;
        a->power_prev_mw = s->power_mw;
        gp_gauge_add(&a->power_mw, s->power_mw);
    }
    if (v & GP_M_TEMP) {
        if (!(seen_before & GP_M_TEMP) || s->temp_c > a->temp_max)
            a->temp_max = s->temp_c;
        a->n_temp++;
        a->sum_temp += s->temp_c;
    }
    if (v & GP_M_CLOCK_SM)
        gp_gauge_add(&a->clock_sm_mhz, s->clock_sm_mhz);
    if (v & GP_M_CLOCK_MEM) {
        a->n_clock_mem++;
        a->sum_clock_mem += s->clock_mem_mhz;
    }
    if (v & GP_M_THROTTLE)
        a->throttle_seen |= s->throttle_reasons;
    if (v & GP_M_GPM_ALL)
        gpm_add(a, s);
    if (v & (GP_M_PROC_MEM | GP_M_PROC_UTIL))
        proc_add(a, s);

    /* The counter is read less often than the other metrics (it is slow in
     * NVML and updates only every 20-100 ms), so gaps between readings are
     * expected.  It is trusted when the first and the last stats samples
     * carry it and no reading goes backwards (a driver reload resets it). */
    int has_energy = (v & GP_M_ENERGY) != 0;
    if (first) {
        a->energy_first_valid = has_energy;
        a->energy_monotonic = true;
        a->energy_first_mj = s->energy_mj;
        a->energy_last_mj = s->energy_mj;
    } else if (has_energy) {
        if (a->energy_seen && s->energy_mj < a->energy_last_mj)
            a->energy_monotonic = false;
        a->energy_last_mj = s->energy_mj;
    }
    if (has_energy)
        a->energy_seen = true;
    a->energy_last_valid = has_energy;

    spark_add(a, (v & GP_M_UTIL_GPU) != 0, gp_pct_clamp(s->util_gpu_pct));
}

/* Sums of percentages over several processes are not clamped: two
 * processes at 60 % each read 120 %, as NVML reports them. */
static void proc_add(gp_acc *a, const gp_device_sample *s)
{
    if (s->valid & GP_M_PROC_MEM) {
        a->proc_n_mem++;
        a->proc_mem_sum += s->proc_mem_used_bytes;
        if (s->proc_mem_used_bytes > a->proc_mem_max)
            a->proc_mem_max = s->proc_mem_used_bytes;
        if (s->proc_all_mem_used_bytes > a->proc_all_mem_max)
            a->proc_all_mem_max = s->proc_all_mem_used_bytes;
        if (s->proc_count > a->proc_count_max)
            a->proc_count_max = s->proc_count;
    }
    if (s->valid & GP_M_PROC_UTIL) {
        a->proc_n_util++;
        a->proc_sm_sum += s->proc_sm_pct;
        a->proc_mem_pct_sum += s->proc_mem_pct;
        a->proc_all_sm_sum += s->proc_all_sm_pct;
        if (s->proc_sm_pct > a->proc_sm_max)
            a->proc_sm_max = s->proc_sm_pct;
        if (s->proc_mem_pct > a->proc_mem_pct_max)
            a->proc_mem_pct_max = s->proc_mem_pct;
    }
}

static void summarize_proc(const gp_acc *a, gp_summary *out)
{
    out->proc_count_max = (uint32_t)(a->proc_n_mem ? a->proc_count_max : 0);
    out->proc_mem_used_mean_bytes =
        a->proc_n_mem ? (double)a->proc_mem_sum / (double)a->proc_n_mem : 0.0;
    out->proc_mem_used_max_bytes = a->proc_n_mem ? a->proc_mem_max : 0;
    out->proc_all_mem_used_max_bytes = a->proc_n_mem ? a->proc_all_mem_max : 0;
    double n = (double)a->proc_n_util;
    out->proc_sm_mean_pct = a->proc_n_util ? (double)a->proc_sm_sum / n : 0.0;
    out->proc_sm_max_pct = a->proc_n_util ? a->proc_sm_max : 0;
    out->proc_mem_mean_pct = a->proc_n_util ? (double)a->proc_mem_pct_sum / n : 0.0;
    out->proc_mem_max_pct = a->proc_n_util ? a->proc_mem_pct_max : 0;
    out->proc_all_sm_mean_pct = a->proc_n_util ? (double)a->proc_all_sm_sum / n : 0.0;
}

/* Nearest rank: the smallest v with count(<= v) >= ceil(p/100 * n). */
static uint32_t hist_percentile(const uint64_t hist[101], uint64_t n, uint32_t p)
{
    uint64_t rank = (p * n + 99) / 100;
    if (rank == 0)
        rank = 1;
    uint64_t seen = 0;
    for (uint32_t v = 0; v <= 100; v++) {
        seen += hist[v];
        if (seen >= rank)
            return v;
    }
    return 100;
}

/* Nearest rank over a histogram of `bins` bins: the bin index. */
static uint32_t bin_percentile(const uint64_t *hist, uint32_t bins, uint64_t n, uint32_t p)
{
    uint64_t rank = (p * n + 99) / 100;
    if (rank == 0)
        rank = 1;
    uint64_t seen = 0;
    for (uint32_t b = 0; b < bins; b++) {
        seen += hist[b];
        if (seen >= rank)
            return b;
    }
    return bins - 1;
}

/* util.gpu's spread from the same histogram as its percentiles, so the
 * figures are exact and need no more state: min, p5, p99, the population
 * standard deviation (two passes over 101 bins, no cancellation), and the
 * shares idle (< 5 %) and active (>= 50 %), profgpu 0.3's thresholds. */
static void summarize_util_spread(const gp_acc *a, gp_summary *out)
{
    out->util_gpu_min = out->util_gpu_p5 = out->util_gpu_p99 = 0;
    out->util_gpu_std = NAN;
    out->util_gpu_idle_pct = out->util_gpu_active_pct = 0.0;
    uint64_t n = a->util_gpu.n;
    if (n == 0)
        return;
    const uint64_t *h = a->hist_util_gpu;
    out->util_gpu_min = hist_percentile(h, n, 0);
    out->util_gpu_p5 = hist_percentile(h, n, 5);
    out->util_gpu_p99 = hist_percentile(h, n, 99);
    double mean = gp_gauge_mean(&a->util_gpu), sq = 0.0;
    uint64_t idle = 0, active = 0;
    for (uint32_t v = 0; v <= 100; v++) {
        double d = (double)v - mean;
        sq += (double)h[v] * d * d;
        if (v < 5)
            idle += h[v];
        else if (v >= 50)
            active += h[v];
    }
    if (n >= 2)
        out->util_gpu_std = sqrt(sq / (double)n);
    out->util_gpu_idle_pct = 100.0 * (double)idle / (double)n;
    out->util_gpu_active_pct = 100.0 * (double)active / (double)n;
}

/* mean, p95, max of each GPM metric; a metric with no valid sample keeps
 * its bit clear in *valid and its fields 0. */
static void summarize_gpm(const gp_acc *a, gp_summary *out, uint32_t *valid)
{
    for (unsigned i = 0; i < GP_GPM_COUNT; i++) {
        out->gpm_mean[i] = out->gpm_p95[i] = out->gpm_max[i] = 0.0;
        uint64_t n = a->gpm_n[i];
        if (n == 0) {
            *valid &= ~GP_M_GPM(i);
            continue;
        }
        out->gpm_mean[i] = a->gpm_sum[i] / (double)n;
        out->gpm_max[i] = a->gpm_max[i];
        if (i < GP_GPM_PCT_METRICS) {
            uint32_t b = bin_percentile(a->gpm_hist_pct[i], GP_GPM_PCT_BINS, n, 95);
            out->gpm_p95[i] = (double)b / 10.0;
        } else {
            uint32_t b =
                bin_percentile(a->gpm_hist_rate[i - GP_GPM_PCT_METRICS], GP_GPM_RATE_BINS, n, 95);
            out->gpm_p95[i] = rate_bin_value(b);
        }
        if (out->gpm_p95[i] > out->gpm_max[i])
            out->gpm_p95[i] = out->gpm_max[i]; /* rounding up to the bin passed the maximum */
    }
}

/* Mean of integers, rounded half up, in integers so the cell is exact. */
static uint8_t spark_cell(uint64_t sum, uint64_t cnt)
{
    if (cnt == 0)
        return GP_SPARK_NONE;
    return (uint8_t)((2 * sum + cnt) / (2 * cnt));
}

static void summarize_spark(const gp_acc *a, gp_summary *out)
{
    memset(out->spark, GP_SPARK_NONE, sizeof out->spark);
    out->spark_len = 0;
    if (a->n == 0 || a->spark_used == 0)
        return;
    if (a->n < GP_SPARK_WIDTH) {
        /* Fewer samples than cells: the span is still 1, one cell each. */
        for (uint32_t i = 0; i < a->spark_used; i++)
            out->spark[i] = spark_cell(a->spark_sum[i], a->spark_cnt[i]);
        out->spark_len = a->spark_used;
        return;
    }
    /* spark_used >= GP_SPARK_WIDTH here (a merge leaves exactly half of
     * the buckets), so every cell gets at least one whole bucket. */
    uint64_t used = a->spark_used;
    for (uint32_t c = 0; c < GP_SPARK_WIDTH; c++) {
        uint64_t b0 = c * used / GP_SPARK_WIDTH;
        uint64_t b1 = (c + 1) * used / GP_SPARK_WIDTH;
        uint64_t sum = 0, cnt = 0;
        for (uint64_t b = b0; b < b1; b++) {
            sum += a->spark_sum[b];
            cnt += a->spark_cnt[b];
        }
        out->spark[c] = spark_cell(sum, cnt);
    }
    out->spark_len = GP_SPARK_WIDTH;
}

void gp_acc_summarize(const gp_acc *a, gp_summary *out)
{
    if (!a || !out)
        return;
    out->sample_count = a->n;
    out->samples_warmup = a->n_warmup;
    out->interval_mean_s = 0.0;
    if (a->n >= 2 && a->last_t_ns >= a->first_t_ns)
        out->interval_mean_s = (double)(a->last_t_ns - a->first_t_ns) / 1e9 / (double)(a->n - 1);

    uint32_t valid = a->valid & SUMMARY_BITS;

    out->util_gpu_mean = 0.0;
    out->util_gpu_p50 = out->util_gpu_p95 = out->util_gpu_max = 0;
    out->busy_time_est_s = 0.0;
    if (a->util_gpu.n) {
        out->util_gpu_mean = gp_gauge_mean(&a->util_gpu);
        out->util_gpu_p50 = hist_percentile(a->hist_util_gpu, a->util_gpu.n, 50);
        out->util_gpu_p95 = hist_percentile(a->hist_util_gpu, a->util_gpu.n, 95);
        out->util_gpu_max = a->util_gpu.max;
        out->busy_time_est_s = out->duration_s * out->util_gpu_mean / 100.0;
    }
    summarize_util_spread(a, out);
    out->mem_used_mean_bytes = a->n_mem_used ? a->sum_mem_used / (double)a->n_mem_used : 0.0;
    out->temp_mean_c = a->n_temp ? (double)a->sum_temp / (double)a->n_temp : 0.0;
    out->clock_sm_max_mhz = a->clock_sm_mhz.max;
    out->util_mem_mean = gp_gauge_mean(&a->util_mem);
    out->util_mem_max = a->util_mem.max;
    out->mem_used_max_bytes = (valid & GP_M_MEM_USED) ? a->mem_used_max : 0;
    out->mem_total_bytes = (valid & GP_M_MEM_TOTAL) ? a->mem_total : 0;
    out->power_mean_mw = gp_gauge_mean(&a->power_mw);
    out->power_max_mw = a->power_mw.max;
    out->temp_max_c = (valid & GP_M_TEMP) ? a->temp_max : 0;
    out->clock_sm_mean_mhz = gp_gauge_mean(&a->clock_sm_mhz);
    out->clock_mem_mean_mhz =
        a->n_clock_mem ? (double)a->sum_clock_mem / (double)a->n_clock_mem : 0.0;
    out->throttle_reasons_seen = (valid & GP_M_THROTTLE) ? a->throttle_seen : 0;

    /* The driver's counter is exact when it can be used; it ticks only
     * every 20-100 ms, so a short region may see it flat, and a reload
     * makes it go backwards: then integrate the power readings instead
     * (util/energy.h, the rule the report of a session's logs follows). */
    gp_energy_obs eo = {.counter_usable = a->n > 0 && a->energy_first_valid &&
                                          a->energy_last_valid && a->energy_monotonic,
                        .counter_first = a->energy_first_mj,
                        .counter_last = a->energy_last_mj,
                        .joules_per_unit = 1e-3,
                        .integral_usable =
                            a->power_mw.n >= 2 && a->power_prev_t_ns > a->power_first_t_ns,
                        .integral_j = a->power_integral_mj / 1000.0};
    summarize_gpm(a, out, &valid);
    summarize_proc(a, out);
    out->energy_source = gp_energy_pick(&eo, &out->energy_j);
    out->energy_span_s = 0.0;
    if (out->energy_source == GP_ENERGY_COUNTER)
        out->energy_span_s = (double)(a->last_t_ns - a->first_t_ns) / 1e9;
    else if (out->energy_source == GP_ENERGY_POWER_INTEGRAL)
        out->energy_span_s = (double)(a->power_prev_t_ns - a->power_first_t_ns) / 1e9;
    if (out->energy_source != GP_ENERGY_NONE)
        valid |= GP_M_ENERGY;
    out->valid = valid;

    summarize_spark(a, out);
    gp_health_summarize(&a->health, out);
}

gp_status gp_run_stats_compute(const double *values, size_t n, gp_run_stats *out, gp_error *err)
{
    gp_error_clear(err);
    if (!out)
        return gp_error_set(err, GP_ERR_INVALID_ARG, "gp_run_stats_compute: out is NULL");
    if (!values && n > 0)
        return gp_error_set(err, GP_ERR_INVALID_ARG,
                            "gp_run_stats_compute: values is NULL but n is %zu: pass the "
                            "array of n values (or n = 0)",
                            n);
    *out = (gp_run_stats){0, 0, NAN, NAN, NAN, NAN};
    double sum = 0.0;
    for (size_t i = 0; i < n; i++) {
        double v = values[i];
        if (!isfinite(v)) {
            out->n_unknown++;
            continue;
        }
        if (out->n == 0 || v < out->min)
            out->min = v;
        if (out->n == 0 || v > out->max)
            out->max = v;
        out->n++;
        sum += v;
    }
    if (out->n == 0)
        return GP_OK;
    out->mean = sum / (double)out->n;
    if (out->n >= 2) {
        /* Two passes: the deviations from the mean, no cancellation. */
        double sq = 0.0;
        for (size_t i = 0; i < n; i++)
            if (isfinite(values[i]))
                sq += (values[i] - out->mean) * (values[i] - out->mean);
        out->std = sqrt(sq / (double)(out->n - 1));
    }
    return GP_OK;
}
