/*
 * sampler/backends/table.c - the explicit table of backends and the auto / strict policy.
 *
 * AUTO tries nvml, then smi.  With strict a failure is an error whose
 * message lists every backend tried and why it failed; without strict the
 * none backend takes over and the note says why.  Where neither opened or
 * the one that did sees no GPU, AUTO asks amd too and takes it only when it
 * sees a GPU: a machine without an AMD GPU gets nvml / smi's answer, words
 * and all, as before amd was a backend.
 */
#include "../../util/error.h"
#include "backend.h"
#include "gpu_profile.h"

#include <stdbool.h>
#include <stdio.h>
#include <string.h>

static const struct {
    gp_backend_kind kind;
    const char *name;
    const gp_backend *backend;
} backend_table[] = {
    {GP_BACKEND_AUTO, "auto", NULL},          {GP_BACKEND_NVML, "nvml", &gp_backend_nvml},
    {GP_BACKEND_SMI, "smi", &gp_backend_smi}, {GP_BACKEND_NONE, "none", &gp_backend_none},
    {GP_BACKEND_AMD, "amd", &gp_backend_amd},
};

#define N_BACKENDS (sizeof backend_table / sizeof backend_table[0])

const char *gp_backend_name(gp_backend_kind kind)
{
    for (size_t i = 0; i < N_BACKENDS; i++)
        if (backend_table[i].kind == kind)
            return backend_table[i].name;
    return NULL;
}

gp_status gp_backend_parse(const char *text, gp_backend_kind *out, gp_error *err)
{
    if (!text || !out)
        return gp_error_set(err, GP_ERR_INVALID_ARG, "backend: no value given");
    for (size_t i = 0; i < N_BACKENDS; i++) {
        if (strcmp(text, backend_table[i].name) == 0) {
            *out = backend_table[i].kind;
            return GP_OK;
        }
    }
    return gp_error_set(err, GP_ERR_INVALID_ARG,
                        "backend '%s' is unknown: use auto, nvml, smi, amd or none", text);
}

const gp_backend *gp_backend_for(gp_backend_kind kind)
{
    for (size_t i = 0; i < N_BACKENDS; i++)
        if (backend_table[i].kind == kind)
            return backend_table[i].backend;
    return NULL;
}

/* AUTO's last try: amd, when it opens and sees a GPU. */
static bool open_amd_with_gpu(const gp_backend_config *cfg, void **ctx)
{
    gp_error e;
    gp_error_clear(&e);
    void *c = NULL;
    unsigned n = 0;
    if (gp_backend_amd.open(cfg, &c, &e) != GP_OK)
        return false;
    if (gp_backend_amd.device_count(c, &n, &e) != GP_OK || n == 0) {
        gp_backend_amd.close(c);
        return false;
    }
    *ctx = c;
    return true;
}

static bool sees_gpu(const gp_backend *b, void *ctx)
{
    unsigned n = 0;
    gp_error ignored;
    return b->device_count(ctx, &n, &ignored) == GP_OK && n > 0;
}

gp_status gp_backend_open_kind(gp_backend_kind kind, int strict, const gp_backend_config *cfg,
                               const gp_backend **out, void **ctx, char *note, size_t note_len,
                               gp_error *err)
{
    static const gp_backend_kind auto_order[] = {GP_BACKEND_NVML, GP_BACKEND_SMI};
    gp_backend_kind single[1] = {kind};
    const gp_backend_kind *tries = single;
    size_t n_tries = 1;
    char why[GP_ERROR_MESSAGE_MAX] = "";
    gp_status first_status = GP_OK;

    if (note && note_len)
        note[0] = '\0';
    if (kind == GP_BACKEND_AUTO) {
        tries = auto_order;
        n_tries = sizeof auto_order / sizeof auto_order[0];
    } else if (!gp_backend_for(kind)) {
        return gp_error_set(err, GP_ERR_INVALID_ARG,
                            "backend %d is unknown: use auto, nvml, smi, amd or none", (int)kind);
    }

    for (size_t i = 0; i < n_tries; i++) {
        const gp_backend *b = gp_backend_for(tries[i]);
        gp_error e;
        gp_error_clear(&e);
        void *c = NULL;
        gp_status st = b->open(cfg, &c, &e);
        if (st == GP_OK) {
            void *amd = NULL;
            if (kind == GP_BACKEND_AUTO && !sees_gpu(b, c) && open_amd_with_gpu(cfg, &amd)) {
                b->close(c);
                *out = &gp_backend_amd;
                *ctx = amd;
                return GP_OK;
            }
            *out = b;
            *ctx = c;
            return GP_OK;
        }
        if (first_status == GP_OK)
            first_status = st;
        size_t used = strlen(why);
        snprintf(why + used, sizeof why - used, "%s%s", used ? "; " : "",
                 e.message[0] ? e.message : gp_strerror(st));
    }

    if (kind == GP_BACKEND_AUTO) {
        void *amd = NULL;
        if (open_amd_with_gpu(cfg, &amd)) {
            *out = &gp_backend_amd;
            *ctx = amd;
            return GP_OK;
        }
    }
    if (strict) {
        if (kind == GP_BACKEND_AUTO)
            return gp_error_set(err, first_status,
                                "no GPU backend could be opened (tried nvml, smi): %s; "
                                "or use backend none for a dry run",
                                why);
        return gp_error_set(err, first_status, "%s", why);
    }
    if (note && note_len)
        snprintf(note, note_len, "no GPU backend, nothing was sampled: %s", why);
    *out = &gp_backend_none;
    return gp_backend_none.open(cfg, ctx, err);
}
