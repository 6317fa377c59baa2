/*
 * sampler/stats.h - per-device running statistics in O(1) memory (stats.c),
 * fed by the sampling thread and turned into a gp_summary.
 */
#ifndef GP_SAMPLER_STATS_H
#define GP_SAMPLER_STATS_H

#include "gpu_profile.h"

#include <stdbool.h>
#include <stdint.h>

#define GP_SPARK_BUCKETS (2 * GP_SPARK_WIDTH)

/* GPM histograms: percentages in 0.1 % steps; rates (bytes/s) on a log
 * scale of 1/32 octave, bin 0 for < 1 B/s (stats.c). */
#define GP_GPM_PCT_METRICS GP_GPM_PCIE_TX /* the first GP_GPM_PCT_METRICS are % */
#define GP_GPM_PCT_BINS 1001
#define GP_GPM_RATE_BINS 2049

/* A gauge over a region in O(1): its readings' count, sum and maximum (0
 * before any reading), what a summary's mean and max are taken from. */
typedef struct gp_gauge {
    uint64_t n, sum;
    uint32_t max;
} gp_gauge;

static inline void gp_gauge_add(gp_gauge *g, uint32_t v)
{
    g->n++;
    g->sum += v;
    if (v > g->max)
        g->max = v;
}

/* The readings' mean; 0 before any. */
static inline double gp_gauge_mean(const gp_gauge *g)
{
    return g->n ? (double)g->sum / (double)g->n : 0.0;
}

/* A utilisation is a percent of time: above 100 is rounding noise (and
 * would fall outside util.gpu's histogram). */
static inline uint32_t gp_pct_clamp(uint32_t v)
{
    return v > 100 ? 100 : v;
}

/* The health figures over a region (health_stats.c): the OR of the
 * samples' GP_H_* bits, the last reading of each counter group (prev,
 * valid by prev_valid) the next rise is taken from, the rises, maxima and
 * sums. */
typedef struct gp_health_acc {
    uint32_t valid, prev_valid;
    gp_device_sample prev;
    uint64_t ecc_sbe, ecc_dbe, retired_sbe, retired_dbe, remap_corr, remap_unc;
    uint64_t pcie_replay, nvlink_crc, nvlink_recovery;
    uint32_t remap_pending, remap_failure;
    uint64_t n_fan, n_mem_temp;
    uint32_t fan_max;
    int32_t mem_temp_max;
    gp_gauge enc, dec; /* percent, clamped */
    uint64_t xid_count;
    uint32_t xid_last;
} gp_health_acc;

/* Adds one sample (every one: warmup samples too). */
void gp_health_add(gp_health_acc *h, const gp_device_sample *s);
/* Fills out's health_* fields. */
void gp_health_summarize(const gp_health_acc *h, gp_summary *out);

/* Per-device running statistics in O(1) memory. */
typedef struct gp_acc {
    uint64_t t0_ns;     /* region start (monotonic) */
    uint64_t warmup_ns; /* samples with t - t0 < warmup_ns are dropped */
    uint64_t n;         /* samples in the stats */
    uint64_t n_warmup;  /* samples dropped */
    uint64_t first_t_ns, last_t_ns;
    uint32_t valid; /* OR of sample validity in the stats */

    /* Utilizations are clamped to 100 before they are counted. */
    gp_gauge util_gpu;
    uint64_t hist_util_gpu[101];
    gp_gauge util_mem;
    uint64_t mem_used_max, mem_total;
    uint64_t n_mem_used;
    double sum_mem_used; /* bytes: a double, as a u64 sum could wrap */
    uint64_t n_temp;
    int64_t sum_temp;
    gp_gauge power_mw;
    int32_t temp_max;
    gp_gauge clock_sm_mhz;
    uint64_t n_clock_mem, sum_clock_mem;
    uint64_t throttle_seen;

    /* Energy: the counter at the first stats sample and at the last reading,
     * whether the first and the last stats samples had it, whether the
     * readings never went backwards, and the trapezoidal integral over
     * consecutive valid power samples (power_first_t_ns to power_prev_t_ns). */
    bool energy_first_valid, energy_last_valid, energy_monotonic, energy_seen;
    uint64_t energy_first_mj, energy_last_mj;
    uint64_t power_first_t_ns;
    uint64_t power_prev_t_ns;
    uint32_t power_prev_mw;
    double power_integral_mj;

    /* GPM: per metric, valid samples, their sum and maximum, and the
     * histogram p95 is read from. */
    uint64_t gpm_n[GP_GPM_COUNT];
    double gpm_sum[GP_GPM_COUNT], gpm_max[GP_GPM_COUNT];
    uint64_t gpm_hist_pct[GP_GPM_PCT_METRICS][GP_GPM_PCT_BINS];
    uint64_t gpm_hist_rate[GP_GPM_COUNT - GP_GPM_PCT_METRICS][GP_GPM_RATE_BINS];

    /* Per-process attribution: samples with GP_M_PROC_MEM and with
     * GP_M_PROC_UTIL, their sums and maxima (ours, and every process). */
    uint64_t proc_n_mem, proc_mem_sum, proc_mem_max, proc_all_mem_max;
    uint32_t proc_count_max;
    uint64_t proc_n_util, proc_sm_sum, proc_mem_pct_sum, proc_all_sm_sum;
    uint32_t proc_sm_max, proc_mem_pct_max;

    /* Sparkline: GP_SPARK_BUCKETS buckets of spark_span samples each (the
     * last one holds spark_fill); when all are full, neighbours merge
     * pairwise and the span doubles.  sum/cnt cover valid util.gpu only. */
    uint64_t spark_sum[GP_SPARK_BUCKETS];
    uint64_t spark_cnt[GP_SPARK_BUCKETS];
    uint32_t spark_used; /* buckets in use */
    uint64_t spark_span; /* samples per bucket */
    uint64_t spark_fill; /* samples in the last bucket */

    gp_health_acc health; /* every sample, warmup ones too */
} gp_acc;

void gp_acc_init(gp_acc *a, uint64_t t0_ns, uint64_t warmup_ns);
/* Adds one sample taken at monotonic t_ns. */
void gp_acc_add(gp_acc *a, uint64_t t_ns, const gp_device_sample *s);
/* Fills the statistics fields of out (valid, util_*, mem_*, power_*,
 * energy_*, temp_*, clock_*, throttle_*, spark*, sample_count,
 * the distribution's extras (util_gpu_min/p5/p99/std/idle/active,
 * mem_used_mean_bytes, temp_mean_c, clock_sm_max_mhz),
 * samples_warmup, interval_mean_s, busy_time_est_s from out->duration_s,
 * which the caller sets first).  Identity fields are left alone. */
void gp_acc_summarize(const gp_acc *a, gp_summary *out);

#endif /* GP_SAMPLER_STATS_H */
