/*
 * sampler/options.h - what the monitor and the device listing share about
 * gp_options (options.c), so both judge and apply them the same way.
 */
#ifndef GP_SAMPLER_OPTIONS_H
#define GP_SAMPLER_OPTIONS_H

#include "backends/backend.h"
#include "gpu_profile.h"

#include <stddef.h>

/* A NULL options pointer means "the defaults" everywhere: storage is
 * filled with them and returned. */
const gp_options *gp_options_or_defaults(const gp_options *opts, gp_options *storage);
/* Every option checked, the message naming the field and what is accepted. */
gp_status gp_options_validate(const gp_options *o, gp_error *err);
/* Opens the backend the options ask for, applying the strict policy. */
gp_status gp_options_open_backend(const gp_options *o, const gp_backend **be, void **ctx,
                                  char *note, size_t note_len, gp_error *err);

#endif /* GP_SAMPLER_OPTIONS_H */
