/*
 * sampler/backends/nvml_ctx.h - the NVML backend's context, shared by
 * nvml.c (calls, devices, start / stop) and nvml_round.c (a sampling
 * round's reads).  Internal to the backend: nothing outside these files
 * includes it.
 */
#ifndef GP_SAMPLER_NVML_CTX_H
#define GP_SAMPLER_NVML_CTX_H

#include "nvml_dev.h"
#include "runner.h"
#include "gpu_profile.h"

#include <pthread.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define NVML_CALL_TIMEOUT_NS 2000000000ull
#define NVML_MAX_INDEX 65536u /* device indices past this get no thread */

typedef struct nvml_devref {
    gp_runner *r; /* NULL until the device is first asked */
    /* A round runner given up while it read this device (read_round): kept
     * until its read returns, as this device's stuck call. */
    gp_runner *held_by;
    char name[GP_NAME_MAX]; /* for messages, copied from the jobs' answers */
    /* A call of device_count's MIG listing that missed its deadline: the
     * device's next device_info reports it as its own call would have. */
    gp_status count_st;
    gp_error count_err;
    /* The newest list of its processes (list_procs), under plist_mu of
     * the context: NULL until one was read. */
    gp_process_use *plist;
    size_t n_plist;
    bool plist_ok;
} nvml_devref;

typedef struct nvml_ctx {
    nvml_lib *lib;
    bool sample_pcie;
    uint64_t call_ns; /* the bound of one call */
    gp_runner *sys;
    nvml_devref *devs; /* by device index */
    size_t n_devs;
    unsigned *slot_index; /* slot -> device index, while sampling */
    size_t n_slots;
    bool slots_repeat;          /* a device in two slots: read_round reads one by one */
    uint64_t gen;               /* sampling runs started */
    int pids[GP_PROC_PIDS_MAX]; /* set_pids: copied into each read job */
    size_t n_pids;
    /* MIG instances, listed by device_count: device index n_gpus + i is
     * MIG slot mig[i].slot of the GPU at NVML index mig[i].parent. */
    unsigned n_gpus;
    struct nvml_mig_ref {
        unsigned parent, slot;
    } * mig;
    size_t n_mig;
    nvml_xid *xid;                     /* the run's XID watcher (nvml_xid.c); NULL: none */
    bool list_procs;                   /* every read lists its device's processes too */
    pthread_mutex_t plist_mu;          /* the devices' plist (scrapes read them) */
    gp_runner *round_r;                /* read_round's runner: every device of a round in turn */
    size_t round_cap;                  /* devices its job area holds */
    struct nvml_round_dev *round_list; /* the round being read, round_cap of them */
    gp_runner_batch *batch;            /* parallel_read's: one sleep of ours for all */
    uint64_t interval_ns;              /* start's: a paced round's next is one later */
    /* A round posted ahead (read_round_at) and interrupt(): interrupted
     * stays set until the next start, so a stop that comes before the
     * post still cancels it; pacing is the runner holding the posted
     * round until its wait ends. */
    pthread_mutex_t pace_mu;
    bool interrupted;
    gp_runner *pacing;
} nvml_ctx;

/* nvml_runners.c: the registry of stuck calls (a runner's hooks). */
void gp_nvml_on_abandon(void *job, const char *what, uint64_t since_ns);
void gp_nvml_on_late_done(void *job);
void gp_nvml_on_free(void *job);
/* A runner whose job area starts with an nvml_key for device index (with
 * the registry's hooks, or h); NULL when out of memory. */
gp_runner *gp_nvml_new_runner_with(nvml_ctx *c, unsigned index, size_t job_size,
                                   const gp_runner_hooks *h);
gp_runner *gp_nvml_new_runner(nvml_ctx *c, unsigned index, size_t job_size);
/* What a runner said about a job that did not complete, as an error. */
gp_status gp_nvml_runner_error(nvml_ctx *c, unsigned index, gp_status st,
                               const gp_runner_stuck *why, gp_error *err);
/* Runs fn on r (whose job area is set up) and maps what did not complete. */
gp_status gp_nvml_run(nvml_ctx *c, gp_runner *r, unsigned index, gp_runner_fn fn, const char *what,
                      gp_error *err);
/* The idle job area of device index's runner (made on first use), or NULL
 * with *st and err set: a call on it still stuck, no memory. */
nvml_dev *gp_nvml_dev_ready(nvml_ctx *c, unsigned index, gp_status *st, gp_error *err);
/* GP_OK when a call that names no device may be made now; else
 * GP_ERR_TIMEOUT, err saying which call of NVML is stuck and since when. */
gp_status gp_nvml_sys_stuck(nvml_ctx *c, gp_error *err);

/* nvml_round.c: one device read now (the backend's read), the round
 * runner (NULL when out of memory), and the backend's read_round,
 * read_round_at and interrupt. */
gp_status gp_nvml_read(void *ctx, size_t slot, unsigned flags, gp_device_sample *out,
                       gp_error *err);
gp_runner *gp_nvml_round_runner(nvml_ctx *c, size_t n);
void gp_nvml_read_round(void *ctx, size_t n, const unsigned *flags, gp_device_sample *out,
                        gp_status *status, gp_error *errs);
gp_status gp_nvml_read_round_at(void *ctx, uint64_t start_mono_ns, size_t n, const unsigned *flags,
                                gp_device_sample *out, gp_status *status, gp_error *errs,
                                uint64_t *t_mono_ns, uint64_t *t_wall_ns);
void gp_nvml_interrupt(void *ctx);

#endif /* GP_SAMPLER_NVML_CTX_H */
