/* util/clock.h - the three clocks the library reads, in nanoseconds, and
 * the waits on the monotonic one (clock.c). */
#ifndef GP_UTIL_CLOCK_H
#define GP_UTIL_CLOCK_H

#include <pthread.h>
#include <stdint.h>

uint64_t gp_now_mono_ns(void);
uint64_t gp_now_wall_ns(void);
uint64_t gp_thread_cpu_ns(void);

/* A condition variable whose timed waits count on CLOCK_MONOTONIC, the
 * clock gp_now_mono_ns reads (a step of the wall clock neither ends nor
 * stretches a wait): pthread_cond_init's status. */
int gp_cond_init_mono(pthread_cond_t *cv);

#endif /* GP_UTIL_CLOCK_H */
