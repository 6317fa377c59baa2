/* util/clock.c - the three clocks the library reads, in nanoseconds (clock.h). */
#include "clock.h"

#include <time.h>

static uint64_t read_clock(clockid_t id)
{
    struct timespec ts;
    if (clock_gettime(id, &ts) != 0)
        return 0;
    return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

uint64_t gp_now_mono_ns(void)
{
    return read_clock(CLOCK_MONOTONIC);
}

uint64_t gp_now_wall_ns(void)
{
    return read_clock(CLOCK_REALTIME);
}

uint64_t gp_thread_cpu_ns(void)
{
    return read_clock(CLOCK_THREAD_CPUTIME_ID);
}

int gp_cond_init_mono(pthread_cond_t *cv)
{
    pthread_condattr_t ca;
    pthread_condattr_init(&ca);
    pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
    int rc = pthread_cond_init(cv, &ca);
    pthread_condattr_destroy(&ca);
    return rc;
}
