/*
 * sampler/options.c - gp_options: their defaults, the one validation every
 * entry point runs before it opens anything, and opening the backend they
 * name; gp_list_devices is that and nothing more, so it lives here too.
 */
#include "../util/error.h"
#include "backends/backend.h"
#include "options.h"
#include "gpu_profile.h"

#include <math.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

void gp_options_init(gp_options *opts)
{
    if (!opts)
        return;
    memset(opts, 0, sizeof *opts);
    opts->device = 0;
    opts->interval_s = 0.2;
    opts->backend = GP_BACKEND_AUTO;
    opts->strict = 1;
    opts->report = GP_REPORT_PRINT;
    opts->backend_timeout_s = 5.0;
}

const gp_options *gp_options_or_defaults(const gp_options *opts, gp_options *storage)
{
    if (opts)
        return opts;
    gp_options_init(storage);
    return storage;
}

gp_status gp_options_validate(const gp_options *o, gp_error *err)
{
    if (!isfinite(o->interval_s) || o->interval_s < 0.001 || o->interval_s > 86400.0)
        return gp_error_set(err, GP_ERR_INVALID_ARG,
                            "interval_s = %g is out of range: use 0.001 to 86400 seconds",
                            o->interval_s);
    if (!isfinite(o->warmup_s) || o->warmup_s < 0.0)
        return gp_error_set(err, GP_ERR_INVALID_ARG,
                            "warmup_s = %g is invalid: use 0 or a positive number of seconds",
                            o->warmup_s);
    if (!isfinite(o->backend_timeout_s) || o->backend_timeout_s <= 0.0 ||
        o->backend_timeout_s > 3600.0)
        return gp_error_set(err, GP_ERR_INVALID_ARG,
                            "backend_timeout_s = %g is out of range: use more than 0 and at "
                            "most 3600 seconds",
                            o->backend_timeout_s);
    if (!gp_backend_name(o->backend))
        return gp_error_set(
            err, GP_ERR_INVALID_ARG,
            "backend %d is unknown: use GP_BACKEND_AUTO, _NVML, _SMI, _AMD or _NONE",
            (int)o->backend);
    if (o->n_devices > 0) {
        if (!o->devices)
            return gp_error_set(err, GP_ERR_INVALID_ARG,
                                "n_devices is %zu but devices is NULL: pass the list or set "
                                "n_devices to 0",
                                o->n_devices);
        for (size_t i = 0; i < o->n_devices; i++)
            for (size_t j = 0; j < i; j++)
                if (o->devices[i] == o->devices[j])
                    return gp_error_set(err, GP_ERR_INVALID_ARG,
                                        "device %u is listed twice: list each device once",
                                        o->devices[i]);
    } else if (o->device < 0 && o->device != GP_ALL_DEVICES) {
        return gp_error_set(err, GP_ERR_INVALID_ARG,
                            "device %d is invalid: use an index from 0, or GP_ALL_DEVICES",
                            o->device);
    }
    if (o->report != GP_REPORT_PRINT && o->report != GP_REPORT_NONE &&
        o->report != GP_REPORT_CALLBACK)
        return gp_error_set(err, GP_ERR_INVALID_ARG,
                            "report mode %d is unknown: use GP_REPORT_PRINT, _NONE or _CALLBACK",
                            (int)o->report);
    if (o->report == GP_REPORT_CALLBACK && !o->report_fn)
        return gp_error_set(err, GP_ERR_INVALID_ARG,
                            "report is GP_REPORT_CALLBACK but report_fn is NULL: set report_fn");
    if (o->n_pids > 0 && !o->pids)
        return gp_error_set(err, GP_ERR_INVALID_ARG,
                            "n_pids is %zu but pids is NULL: pass the list or set n_pids to 0",
                            o->n_pids);
    if (o->n_pids > GP_PROC_PIDS_MAX)
        return gp_error_set(err, GP_ERR_INVALID_ARG,
                            "n_pids = %zu is too many: at most %d processes (GP_PROC_PIDS_MAX); "
                            "list their parents with pid_tree instead",
                            o->n_pids, GP_PROC_PIDS_MAX);
    for (size_t i = 0; i < o->n_pids; i++)
        if (o->pids[i] <= 0)
            return gp_error_set(err, GP_ERR_INVALID_ARG,
                                "pids[%zu] = %d is not a process id: use PIDs from 1", i,
                                o->pids[i]);
    return GP_OK;
}

static gp_backend_config backend_config(const gp_options *o)
{
    gp_backend_config cfg;
    memset(&cfg, 0, sizeof cfg);
    cfg.nvml_library = o->nvml_library;
    cfg.smi_path = o->smi_path;
    cfg.timeout_ns = (uint64_t)(o->backend_timeout_s * 1e9);
    cfg.sample_pcie = o->sample_pcie;
    cfg.rocm_smi_library = o->rocm_smi_library;
    return cfg;
}

/* Whether an opened backend counts no GPU (a count that fails is left to
 * the caller's device checks, which report it). */
static bool sees_no_gpu(const gp_backend *be, void *ctx)
{
    unsigned count = 0;
    gp_error ignored;
    return be->device_count(ctx, &count, &ignored) == GP_OK && count == 0;
}

gp_status gp_options_open_backend(const gp_options *o, const gp_backend **be, void **ctx,
                                  char *note, size_t note_len, gp_error *err)
{
    gp_backend_config cfg = backend_config(o);
    gp_status st = gp_backend_open_kind(o->backend, o->strict, &cfg, be, ctx, note, note_len, err);
    if (st != GP_OK || o->strict || *be == &gp_backend_none || !sees_no_gpu(*be, *ctx))
        return st;
    /* Not strict: a backend that opened but sees no GPU (a driver without
     * a visible device) is passed over like one that did not open, so the
     * region runs unsampled instead of failing: auto tries smi next, then
     * none, and the note says why. */
    char why[GP_NOTE_MAX];
    snprintf(why, sizeof why, "%s sees no GPU", (*be)->name);
    bool try_smi = o->backend == GP_BACKEND_AUTO && *be == &gp_backend_nvml;
    (*be)->close(*ctx);
    *ctx = NULL;
    if (try_smi) {
        gp_error e;
        gp_error_clear(&e);
        size_t used = strlen(why);
        if (gp_backend_open_kind(GP_BACKEND_SMI, 1, &cfg, be, ctx, NULL, 0, &e) != GP_OK) {
            snprintf(why + used, sizeof why - used, "; %s", e.message);
        } else if (sees_no_gpu(*be, *ctx)) {
            snprintf(why + used, sizeof why - used, "; smi sees no GPU");
            (*be)->close(*ctx);
            *ctx = NULL;
        } else {
            if (note && note_len)
                snprintf(note, note_len, "%s: sampled with smi", why);
            return GP_OK;
        }
    }
    if (note && note_len)
        snprintf(note, note_len, "no GPU backend, nothing was sampled: %s", why);
    *be = &gp_backend_none;
    return gp_backend_none.open(&cfg, ctx, err);
}

/* ------------------------------------------------------------ devices */

gp_status gp_list_devices(const gp_options *opts, gp_device_info **out, size_t *count,
                          char *driver_version, size_t driver_version_len,
                          const char **backend_used, gp_error *err)
{
    gp_error_clear(err);
    if (!out || !count)
        return gp_error_set(err, GP_ERR_INVALID_ARG, "gp_list_devices: out and count are required");
    *out = NULL;
    *count = 0;
    if (driver_version && driver_version_len)
        driver_version[0] = '\0';
    gp_options defaults;
    opts = gp_options_or_defaults(opts, &defaults);
    gp_status st = gp_options_validate(opts, err);
    if (st != GP_OK)
        return st;
    const gp_backend *be = NULL;
    void *ctx = NULL;
    char note[GP_NOTE_MAX];
    st = gp_options_open_backend(opts, &be, &ctx, note, sizeof note, err);
    if (st != GP_OK)
        return st;
    if (backend_used)
        *backend_used = be->name;
    unsigned n = 0;
    st = be->device_count(ctx, &n, err);
    gp_device_info *list = NULL;
    if (st == GP_OK && n > 0) {
        list = calloc(n, sizeof *list);
        if (!list)
            st = gp_error_set(err, GP_ERR_NO_MEMORY, "out of memory for %u devices", n);
    }
    for (unsigned i = 0; st == GP_OK && i < n; i++)
        st = be->device_info(ctx, i, &list[i], err);
    if (st == GP_OK && driver_version && driver_version_len && be->driver_version) {
        gp_error ignored;
        if (be->driver_version(ctx, driver_version, driver_version_len, &ignored) != GP_OK)
            driver_version[0] = '\0';
    }
    be->close(ctx);
    if (st != GP_OK) {
        free(list);
        return st;
    }
    *out = list;
    *count = n;
    return GP_OK;
}

void gp_devices_free(gp_device_info *devices)
{
    free(devices);
}
