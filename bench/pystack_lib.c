/*
 * pystack_lib.c - the C side of bench/bench_pystack.py: the plugin's stack
 * capture (plugin/stacks.c, plugin/pystack.c) called in a loop from the
 * innermost frame of a Python call chain, timed in thread CPU time.
 */
#include "pystack.h"
#include "stacks.h"

#include <stdint.h>
#include <time.h>

#define API __attribute__((visibility("default")))

static fl_stacks *S;
static volatile uint32_t sink_;

static uint64_t cpu_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
    return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

/* 0, or 77 without libunwind and libdw. */
API int bench_open(void)
{
    fl_stacks_config cfg = {0};
    gp_error err;
    S = fl_stacks_create(&cfg, &err);
    return S ? 0 : 77;
}

/* The Python frames one capture sees from here. */
API unsigned bench_depth(void)
{
    uintptr_t keys[FL_PY_MAX_FRAMES];
    return (unsigned)fl_py_capture(keys, FL_PY_MAX_FRAMES);
}

/* Thread CPU ns of n calls: mode 0 fl_py_capture alone, 1 the whole
 * fl_stacks_capture (native walk, Python frames, hash, lookup). */
API unsigned long long bench_loop(unsigned n, int mode)
{
    uintptr_t keys[FL_PY_MAX_FRAMES];
    uint64_t t0 = cpu_ns();
    for (unsigned i = 0; i < n; i++)
        sink_ +=
            mode == 0 ? (uint32_t)fl_py_capture(keys, FL_PY_MAX_FRAMES) : fl_stacks_capture(S, 0);
    return cpu_ns() - t0;
}

/* One capture (the Python loop's figure: frames new each time). */
API unsigned bench_once(void)
{
    return fl_stacks_capture(S, 0);
}

/* The same call without a capture (the loop's baseline). */
API unsigned bench_nothing(void)
{
    return sink_;
}
