/*
 * sampler/stuck.c - the "busy but stuck" detector (gpu_profile.h,
 * gp_stuck_feed): util.gpu high, GPM SM activity near 0 and power near the
 * device's idle for a number of samples in a row.
 *
 * Promises: pure (no clock, no I/O): the same samples give the same
 * answer; a sample without one of the three metrics breaks the run and
 * answers unknown (-1), never "healthy"; the idle power is the lowest power
 * fed so far (a GPU stuck from its first sample counts its own power as
 * idle, which is what a spinning collective draws).
 */
#include "gpu_profile.h"

#include <stdbool.h>
#include <stddef.h>

void gp_stuck_rule_init(gp_stuck_rule *rule)
{
    if (!rule)
        return;
    rule->util_min_pct = 90.0;
    rule->sm_active_max_pct = 5.0;
    rule->power_idle_ratio = 1.25;
    rule->after_samples = 60;
}

int gp_stuck_feed(gp_stuck_state *st, const gp_stuck_rule *rule, const gp_device_sample *m)
{
    if (!st || !rule || !m)
        return -1;
    uint32_t need = GP_M_UTIL_GPU | GP_M_POWER | GP_M_GPM(GP_GPM_SM_ACTIVE);
    if (m->valid & GP_M_POWER && m->power_mw > 0 &&
        (st->min_power_mw == 0 || m->power_mw < st->min_power_mw))
        st->min_power_mw = m->power_mw;
    if ((m->valid & need) != need) {
        st->known = 0;
        st->stuck = 0;
        st->run = 0;
        return -1;
    }
    st->known = 1;
    st->known_samples++;
    bool match = (double)m->util_gpu_pct >= rule->util_min_pct &&
                 m->gpm[GP_GPM_SM_ACTIVE] <= rule->sm_active_max_pct &&
                 (double)m->power_mw <= rule->power_idle_ratio * (double)st->min_power_mw;
    st->run = match ? st->run + 1 : 0;
    if (st->run > st->longest_run)
        st->longest_run = st->run;
    uint32_t after = rule->after_samples ? rule->after_samples : 1;
    if (st->run == after)
        st->episodes++;
    st->stuck = st->run >= after;
    return st->stuck;
}
