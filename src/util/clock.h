/* util/clock.h - the three clocks the library reads, in nanoseconds (clock.c). */
#ifndef GP_UTIL_CLOCK_H
#define GP_UTIL_CLOCK_H

#include <stdint.h>

uint64_t gp_now_mono_ns(void);
uint64_t gp_now_wall_ns(void);
uint64_t gp_thread_cpu_ns(void);

#endif /* GP_UTIL_CLOCK_H */
