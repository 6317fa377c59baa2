/*
 * sampler/backends/table.c - the explicit table of backends and the auto / strict policy.
 *
 * AUTO tries nvml, then smi.  With strict a failure is an error whose
 * message lists every backend tried and why it failed; without strict the
 * none backend takes over and the note says why.
 */
#include "../../util/error.h"
#include "backend.h"
#include "gpu_profile.h"

#include <stdio.h>
#include <string.h>

static const struct {
    gp_backend_kind kind;
    const char *name;
    const gp_backend *backend;
} backend_table[] = {
    {GP_BACKEND_AUTO, "auto", NULL},
    {GP_BACKEND_NVML, "nvml", &gp_backend_nvml},
    {GP_BACKEND_SMI, "smi", &gp_backend_smi},
    {GP_BACKEND_NONE, "none", &gp_backend_none},
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
                        "backend '%s' is unknown: use auto, nvml, smi or none", text);
}

const gp_backend *gp_backend_for(gp_backend_kind kind)
{
    for (size_t i = 0; i < N_BACKENDS; i++)
        if (backend_table[i].kind == kind)
            return backend_table[i].backend;
    return NULL;
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
                            "backend %d is unknown: use auto, nvml, smi or none", (int)kind);
    }

    for (size_t i = 0; i < n_tries; i++) {
        const gp_backend *b = gp_backend_for(tries[i]);
        gp_error e;
        gp_error_clear(&e);
        void *c = NULL;
        gp_status st = b->open(cfg, &c, &e);
        if (st == GP_OK) {
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
