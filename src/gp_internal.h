/*
 * gp_internal.h - what the library's modules promise each other.
 *
 * The backend interface (one const struct per backend file, listed in the
 * explicit table of backend.c), the statistics accumulator the sampler feeds,
 * and small helpers for errors and clocks.  Nothing here is exported.
 */
#ifndef GP_INTERNAL_H
#define GP_INTERNAL_H

#include "gpu_profile.h"

#include <stdarg.h>
#include <stdbool.h>

/* ---------------------------------------------------------------- errors */

/* Sets err (if non-NULL) to status and a printf-style message; returns status. */
gp_status gp_error_set(gp_error *err, gp_status status, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
/* Prefixes an existing message: "<prefix>: <old message>". */
void gp_error_prefix(gp_error *err, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
void gp_error_clear(gp_error *err);

/* ------------------------------------------------------------------ text */

/* Length of the well-formed UTF-8 sequence at s (1..4, 1 for ASCII), 0 if
 * ill-formed (stray continuation, overlong, surrogate, > U+10FFFF, cut). */
size_t gp_utf8_len(const unsigned char *s, size_t n);

typedef void (*gp_emit_fn)(void *ctx, const char *p, size_t n);
/* Writes s (n bytes) as a JSON string literal, quotes included, through
 * emit: escapes quotes, backslashes and control characters; an ill-formed
 * UTF-8 byte becomes \ufffd.  Used by every JSON writer of the project. */
void gp_json_quote(const char *s, size_t n, gp_emit_fn emit, void *ctx);
/* A finite double in fixed point with `decimals` (0..6) digits, '.' whatever
 * the locale, trailing zeros dropped with trim.  JSON numbers use (6, 1). */
void gp_format_fixed(double v, int decimals, int trim, gp_emit_fn emit, void *ctx);

/* ---------------------------------------------------------------- clocks */

uint64_t gp_now_mono_ns(void);
uint64_t gp_now_wall_ns(void);
uint64_t gp_thread_cpu_ns(void);

/* ---------------------------------------------------------------- backends */

typedef struct gp_backend_config {
    const char *nvml_library; /* NULL: default dlopen search */
    const char *smi_path;     /* NULL: "nvidia-smi" from PATH */
    uint64_t timeout_ns;      /* one-shot query limit (smi discovery) */
    int sample_pcie;          /* read PCIe throughput too (slow in NVML) */
} gp_backend_config;

/*
 * A backend.  Call order: open -> (device_count | device_info |
 * driver_version)* -> start -> (read | wait_tick)* -> stop -> close.
 * Every function that can fail fills err with a message naming the cause
 * (the library or binary, the NVML error string, nvidia-smi's own text).
 *
 * Polled backends (self_paced == 0) implement read(): one device, now; the
 * sampler schedules the rounds.  Self-paced backends (nvidia-smi, which
 * ticks by itself with -lms) implement wait_tick(): block until the next
 * round for every slot, an absolute CLOCK_MONOTONIC deadline, or
 * interrupt() from another thread.
 *
 * Per-metric "not supported / no permission / no data" clears the metric's
 * valid bit and is not an error.  Any other failure of a device is returned
 * (GP_ERR_DEVICE_LOST for GPU_IS_LOST): the sampler stops that device and
 * keeps the message for its summary; other devices go on.
 */
typedef struct gp_backend {
    const char *name;
    int self_paced;

    gp_status (*open)(const gp_backend_config *cfg, void **ctx, gp_error *err);
    void (*close)(void *ctx); /* NULL-safe */

    gp_status (*device_count)(void *ctx, unsigned *count, gp_error *err);
    gp_status (*device_info)(void *ctx, unsigned index, gp_device_info *out, gp_error *err);
    gp_status (*driver_version)(void *ctx, char *buf, size_t len, gp_error *err);

    /* Begin sampling `indices` (validated by the caller); slot i is indices[i]. */
    gp_status (*start)(void *ctx, const unsigned *indices, size_t n, uint64_t interval_ns,
                       gp_error *err);
    /* Polled: read slot now.  flags: GP_READ_* (metrics the sampler asks
     * for only now and then because they are slow to read). */
    gp_status (*read)(void *ctx, size_t slot, unsigned flags, gp_device_sample *out, gp_error *err);
    /* Self-paced: one round.  out[n] and slot_status[n] per slot (a slot whose
     * device failed gets its status and message in slot_err[slot] if given).
     * Returns GP_OK with a round, GP_ERR_TIMEOUT at the deadline, GP_ERR_STATE
     * when interrupted, or an error when the producer died (message set). */
    gp_status (*wait_tick)(void *ctx, gp_device_sample *out, gp_status *slot_status,
                           gp_error *slot_err, uint64_t deadline_mono_ns, gp_error *err);
    /* Self-paced: make a blocked wait_tick return now (any thread). */
    void (*interrupt)(void *ctx);
    /* End sampling; idempotent. */
    void (*stop)(void *ctx);
} gp_backend;

/* Read the energy counter this time.  NVML's nvmlDeviceGetTotalEnergyConsumption
 * costs ~4 ms of CPU on an H100 (measured, docs/performance.md) and the
 * counter moves only every 20-100 ms, so the sampler asks for it at the
 * region's ends and every GP_ENERGY_PERIOD_NS in between. */
#define GP_READ_ENERGY 1u
#define GP_ENERGY_PERIOD_NS 30000000000ull

extern const gp_backend gp_backend_nvml;
extern const gp_backend gp_backend_smi;
extern const gp_backend gp_backend_none;

/* The backend for a kind (not AUTO); NULL for an unknown kind. */
const gp_backend *gp_backend_for(gp_backend_kind kind);

/*
 * Opens the backend `kind` asks for.  AUTO tries nvml, then smi.  On failure
 * with strict: the error lists every backend tried and why.  Without strict:
 * falls back to none, returns GP_OK and writes why into note.
 */
gp_status gp_backend_open_kind(gp_backend_kind kind, int strict, const gp_backend_config *cfg,
                               const gp_backend **out, void **ctx, char *note, size_t note_len,
                               gp_error *err);

/* ------------------------------------------------------------ round hook */

/*
 * What the flight recorder needs from a monitor's sampling thread (called on
 * that thread).  gate(user) is asked before every round but the first; a
 * false answer skips the round: nothing is read.  on_round gets every round
 * that was read: one sample and status per slot (GP_OK: the sample is
 * valid; GP_ERR_STATE: the slot was not read - a failed device, or the
 * none backend).  With a hook the thread runs even for the none backend,
 * so the hook still ticks.
 */
typedef struct gp_round_hook {
    bool (*gate)(void *user);
    void (*on_round)(void *user, uint64_t t_mono_ns, uint64_t t_wall_ns,
                     const gp_device_sample *samples, const gp_status *status, size_t n);
    void *user;
} gp_round_hook;

/* Sets the hook; before gp_monitor_start only (GP_ERR_STATE after). */
gp_status gp_monitor_set_hook(gp_monitor *m, const gp_round_hook *hook, gp_error *err);
/* Why the backend fell back to none ("" if it did not). */
const char *gp_monitor_note(const gp_monitor *m);
/* Identity of slot `slot` (name, uuid, index) as the backend reported it. */
const gp_device_info *gp_monitor_device_info(const gp_monitor *m, size_t slot);

/* ------------------------------------------------------------- statistics */

#define GP_SPARK_BUCKETS (2 * GP_SPARK_WIDTH)

/* Per-device running statistics in O(1) memory. */
typedef struct gp_acc {
    uint64_t t0_ns;     /* region start (monotonic) */
    uint64_t warmup_ns; /* samples with t - t0 < warmup_ns are dropped */
    uint64_t n;         /* samples in the stats */
    uint64_t n_warmup;  /* samples dropped */
    uint64_t first_t_ns, last_t_ns;
    uint32_t valid; /* OR of sample validity in the stats */

    /* Utilizations are clamped to 100 before they are counted. */
    uint64_t n_util_gpu, sum_util_gpu;
    uint64_t hist_util_gpu[101];
    uint32_t max_util_gpu;
    uint64_t n_util_mem, sum_util_mem;
    uint32_t max_util_mem;
    uint64_t mem_used_max, mem_total;
    uint64_t n_power, sum_power_mw;
    uint32_t max_power_mw;
    int32_t temp_max;
    uint64_t n_clock_sm, sum_clock_sm;
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

    /* Sparkline: GP_SPARK_BUCKETS buckets of spark_span samples each (the
     * last one holds spark_fill); when all are full, neighbours merge
     * pairwise and the span doubles.  sum/cnt cover valid util.gpu only. */
    uint64_t spark_sum[GP_SPARK_BUCKETS];
    uint64_t spark_cnt[GP_SPARK_BUCKETS];
    uint32_t spark_used; /* buckets in use */
    uint64_t spark_span; /* samples per bucket */
    uint64_t spark_fill; /* samples in the last bucket */
} gp_acc;

void gp_acc_init(gp_acc *a, uint64_t t0_ns, uint64_t warmup_ns);
/* Adds one sample taken at monotonic t_ns. */
void gp_acc_add(gp_acc *a, uint64_t t_ns, const gp_device_sample *s);
/* Fills the statistics fields of out (valid, util_*, mem_*, power_*,
 * energy_*, temp_*, clock_*, throttle_*, spark*, sample_count,
 * samples_warmup, interval_mean_s, busy_time_est_s from out->duration_s,
 * which the caller sets first).  Identity fields are left alone. */
void gp_acc_summarize(const gp_acc *a, gp_summary *out);

#endif /* GP_INTERNAL_H */
