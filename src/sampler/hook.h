/*
 * sampler/hook.h - what the flight recorder may use of a monitor beyond
 * gpu_profile.h: a hook on its sampling thread, and the identity and
 * fall-back note of its devices (monitor.c).
 */
#ifndef GP_SAMPLER_HOOK_H
#define GP_SAMPLER_HOOK_H

#include "gpu_profile.h"

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/*
 * What the flight recorder needs from a monitor's sampling thread (called on
 * that thread).  gate(user) is asked before every round but the first; a
 * false answer skips the round: nothing is read.  on_round gets every round
 * that was read: one sample, status and error per slot (GP_OK: the sample
 * is valid; GP_ERR_STATE: the slot was not read - a failed device, or the
 * none backend; GP_ERR_TIMEOUT from a self-paced backend: no value this
 * tick; any other: the slot failed this round, errors[slot] says how, and
 * it is not read again).  With a hook the thread runs even for the none
 * backend, so the hook still ticks.
 */
typedef struct gp_round_hook {
    bool (*gate)(void *user);
    void (*on_round)(void *user, uint64_t t_mono_ns, uint64_t t_wall_ns,
                     const gp_device_sample *samples, const gp_status *status,
                     const gp_error *errors, size_t n);
    void *user;
} gp_round_hook;

/* Sets the hook; before gp_monitor_start only (GP_ERR_STATE after). */
gp_status gp_monitor_set_hook(gp_monitor *m, const gp_round_hook *hook, gp_error *err);
/* Why the backend fell back to none ("" if it did not). */
const char *gp_monitor_note(const gp_monitor *m);
/* Sleeps of sampling threads until a tick in this process so far (a
 * count, for tests and the bench: a round posted ahead has none). */
uint64_t gp_monitor_tick_sleeps(void);
/* Identity of slot `slot` (name, uuid, index) as the backend reported it. */
const gp_device_info *gp_monitor_device_info(const gp_monitor *m, size_t slot);

#endif /* GP_SAMPLER_HOOK_H */
