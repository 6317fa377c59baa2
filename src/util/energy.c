/*
 * util/energy.c - the one energy rule (energy.h).
 *
 * Promises: the same observation gives the same source and joules whoever
 * asks; nothing is read, allocated or printed.
 */
#include "energy.h"

gp_energy_source gp_energy_pick(const gp_energy_obs *o, double *joules)
{
    *joules = 0.0;
    if (!o)
        return GP_ENERGY_NONE;
    if (o->counter_usable && o->counter_last > o->counter_first) {
        *joules = (double)(o->counter_last - o->counter_first) * o->joules_per_unit;
        return GP_ENERGY_COUNTER;
    }
    if (o->integral_usable) {
        *joules = o->integral_j;
        return GP_ENERGY_POWER_INTEGRAL;
    }
    return GP_ENERGY_NONE;
}
