/*
 * sampler/backends/backend.h - the backend interface: one const struct of
 * function pointers per backend file (none.c, nvml.c, smi.c, rocm_smi.c), listed in the
 * explicit table of table.c, which also holds the auto / strict policy.
 * The sampler (monitor.c) is the only caller.
 */
#ifndef GP_SAMPLER_BACKEND_H
#define GP_SAMPLER_BACKEND_H

#include "gpu_profile.h"

#include <stddef.h>
#include <stdint.h>

typedef struct gp_backend_config {
    const char *nvml_library;     /* NULL: default dlopen search */
    const char *smi_path;         /* NULL: "nvidia-smi" from PATH */
    uint64_t timeout_ns;          /* one-shot query limit (smi discovery) */
    int sample_pcie;              /* read PCIe throughput too (slow in NVML) */
    const char *rocm_smi_library; /* NULL: $GPU_PROFILE_ROCM_SMI_LIBRARY, else the defaults */
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
    /* Polled, optional (NULL: read() slot by slot): read() for the n slots
     * of a round at once, so the devices answer in parallel; flags[i] as
     * read()'s, GP_READ_SKIP for a slot not to read (status[i] untouched).
     * Each device keeps its own time limit, counted from its own request. */
    void (*read_round)(void *ctx, size_t n, const unsigned *flags, gp_device_sample *out,
                       gp_status *status, gp_error *errs);
    /* Polled, optional: read_round for the round whose tick is
     * start_mono_ns, called as soon as the previous round is done: the
     * backend's own thread waits for the tick, stamps *t_mono_ns and
     * *t_wall_ns just before its reads, and the caller sleeps once.  GP_OK:
     * read, as read_round's; GP_ERR_STATE: interrupt() came first, nothing
     * read; GP_ERR_NOT_SUPPORTED: not this round (nothing read or waited:
     * the caller waits for the tick and calls read_round). */
    gp_status (*read_round_at)(void *ctx, uint64_t start_mono_ns, size_t n, const unsigned *flags,
                               gp_device_sample *out, gp_status *status, gp_error *errs,
                               uint64_t *t_mono_ns, uint64_t *t_wall_ns);
    /* Self-paced: one round.  out[n] and slot_status[n] per slot (a slot whose
     * device failed gets its status and message in slot_err[slot] if given).
     * Returns GP_OK with a round, GP_ERR_TIMEOUT at the deadline, GP_ERR_STATE
     * when interrupted, or an error when the producer died (message set). */
    gp_status (*wait_tick)(void *ctx, gp_device_sample *out, gp_status *slot_status,
                           gp_error *slot_err, uint64_t deadline_mono_ns, gp_error *err);
    /* Self-paced: make a blocked wait_tick return now; polled with
     * read_round_at: cancel the round posted ahead, not begun (any thread;
     * sticky until the next start). */
    void (*interrupt)(void *ctx);
    /* End sampling; idempotent. */
    void (*stop)(void *ctx);
    /* Optional (NULL: the backend cannot attribute to processes): the
     * processes whose use the next reads sum (per-process fields of
     * gp_device_sample); n == 0: none.  The list is copied. */
    void (*set_pids)(void *ctx, const int *pids, size_t n);
    /* Optional (NULL: the backend cannot list processes): list_processes,
     * before start, makes every read list the processes on its device too;
     * processes copies device index's newest list (any thread), GP_ERR_STATE
     * while none was read. */
    void (*list_processes)(void *ctx);
    gp_status (*processes)(void *ctx, unsigned index, gp_process_use *out, size_t cap, size_t *n);
} gp_backend;

/* Read the energy counter this time.  NVML's nvmlDeviceGetTotalEnergyConsumption
 * costs ~4 ms of CPU on an H100 (measured, docs/performance.md) and the
 * counter moves only every 20-100 ms, so the sampler asks for it at the
 * region's ends and every GP_ENERGY_PERIOD_NS in between. */
#define GP_READ_ENERGY 1u
#define GP_ENERGY_PERIOD_NS 30000000000ull
/* read_round: this slot is not read (failed, or nothing to ask). */
#define GP_READ_SKIP 0x80000000u

extern const gp_backend gp_backend_nvml;
extern const gp_backend gp_backend_smi;
extern const gp_backend gp_backend_none;
extern const gp_backend gp_backend_amd;

/* The backend for a kind (not AUTO); NULL for an unknown kind. */
const gp_backend *gp_backend_for(gp_backend_kind kind);

/*
 * Opens the backend `kind` asks for.  AUTO tries nvml, then smi; when
 * neither opened or the one that did sees no GPU, amd, kept only if it
 * sees a GPU (otherwise the result is nvml / smi's, its words unchanged).  On failure
 * with strict: the error lists every backend tried and why.  Without strict:
 * falls back to none, returns GP_OK and writes why into note.
 */
gp_status gp_backend_open_kind(gp_backend_kind kind, int strict, const gp_backend_config *cfg,
                               const gp_backend **out, void **ctx, char *note, size_t note_len,
                               gp_error *err);

#endif /* GP_SAMPLER_BACKEND_H */
