/*
 * util/energy.h - the one energy rule (energy.c), shared by the sampler's
 * run summary (sampler/stats.c) and the report of a session's logs
 * (report/figures.c), so that the same samples give the same joules in
 * both: the driver's cumulative counter when it moved, else the
 * trapezoidal integral of the power readings, else nothing.
 */
#ifndef GP_UTIL_ENERGY_H
#define GP_UTIL_ENERGY_H

#include "gpu_profile.h"

#include <stdbool.h>
#include <stdint.h>

/* What a caller saw of one device over its span. */
typedef struct gp_energy_obs {
    /* The counter can be trusted over the span: read at both of its ends
     * (as far as the caller can tell) and never seen going backwards (a
     * driver reload resets it). */
    bool counter_usable;
    uint64_t counter_first, counter_last; /* in counter units */
    double joules_per_unit;               /* 1e-3 for mJ, 1e-6 for uJ */
    /* Two or more power readings with time between them: integral_j is
     * their trapezoidal integral. */
    bool integral_usable;
    double integral_j;
} gp_energy_obs;

/* The rule: the counter when it is usable and moved (last > first; a flat
 * counter - it ticks only every 20-100 ms, so a short span may not see it
 * move - is not evidence of zero energy), else the power integral when
 * usable, else GP_ENERGY_NONE.  *joules gets the figure (0 for none). */
gp_energy_source gp_energy_pick(const gp_energy_obs *o, double *joules);

#endif /* GP_UTIL_ENERGY_H */
