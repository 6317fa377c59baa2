/*
 * bench_stacks.c - what enable_stack_trace costs (plugin/stacks.c), on one
 * core, without a GPU:
 *
 *  - per launch, on the application's thread: fl_stacks_capture at a
 *    stack of DEPTH frames (libunwind's unw_backtrace + a hash + the
 *    lookup in the table), the stack already known (every launch but the
 *    first of a call site), cycling over DISTINCT call sites; and
 *    unw_backtrace alone at the same depth, for the split;
 *  - per distinct stack, on the writer thread: fl_stacks_announce
 *    (symbolisation with libdw), the first call (which reads the process's
 *    mappings and symbol tables) apart from the others.
 *
 *   bench_stacks [--quick] [--captures N]
 *
 * A stack of DEPTH frames: 12 frames that choose between two functions by
 * the bits of the call site's number (so up to 4096 distinct stacks of the
 * same depth), the rest plain recursion, plus main and the C library's.
 */
#include "../plugin/stacks.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#ifdef GP_HAVE_STACKS
#define UNW_LOCAL_ONLY
#include <libunwind.h>
#endif

#define NOINLINE __attribute__((noinline))

static int levels; /* pattern frames: log2 of the distinct stacks */

static fl_stacks *S;
static int mode; /* 0: fl_stacks_capture, 1: unw_backtrace alone */
static volatile uint32_t sink_;

static double now_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

NOINLINE static uint32_t leaf(void)
{
    if (mode == 0)
        return fl_stacks_capture(S, 0);
#ifdef GP_HAVE_STACKS
    void *pcs[FL_STACK_MAX_FRAMES + 1];
    return (uint32_t)unw_backtrace(pcs, FL_STACK_MAX_FRAMES + 1);
#else
    return 0;
#endif
}

NOINLINE static uint32_t plain(int left)
{
    uint32_t r = left > 0 ? plain(left - 1) : leaf();
    __asm__ volatile("" ::: "memory"); /* no tail call: a frame each */
    return r;
}

static uint32_t pick(unsigned bits, int level, int rest);

NOINLINE static uint32_t side_a(unsigned bits, int level, int rest)
{
    uint32_t r = pick(bits, level + 1, rest);
    __asm__ volatile("" ::: "memory");
    return r;
}

NOINLINE static uint32_t side_b(unsigned bits, int level, int rest)
{
    uint32_t r = pick(bits, level + 1, rest);
    __asm__ volatile("" ::: "memory");
    return r;
}

/* One of 2^levels stacks (by bits), then rest more frames. */
NOINLINE static uint32_t pick(unsigned bits, int level, int rest)
{
    uint32_t r;
    if (level >= levels)
        r = plain(rest);
    else
        r = bits >> level & 1 ? side_b(bits, level, rest) : side_a(bits, level, rest);
    __asm__ volatile("" ::: "memory");
    return r;
}

/* The plain frames that make a stack of depth frames (pick and side_*
 * make two per level, then pick, plain, leaf, run, main and the C
 * library's two); -1 when the pattern alone is deeper. */
static int rest_for(int depth)
{
    int rest = depth - 2 * levels - 7;
    return rest >= 0 ? rest : -1;
}

static void count_emit(void *user, const uint32_t *ids, const char *const *texts, size_t n)
{
    (void)ids;
    size_t *bytes = user;
    for (size_t i = 0; i < n; i++)
        *bytes += strlen(texts[i]);
}

/* ns per capture at depth over distinct call sites; and the symbolisation
 * of the distinct stacks (first call, then per stack). */
NOINLINE static void run(int depth, unsigned distinct, long captures)
{
    gp_error why;
    fl_stacks_config cfg = {.max_stacks = 4096};
    S = fl_stacks_create(&cfg, &why);
    if (!S) {
        printf("stacks unavailable: %s\n", why.message);
        exit(0);
    }
    levels = 0;
    while ((1u << levels) < distinct)
        levels++;
    int rest = rest_for(depth);
    if (rest < 0) {
        fl_stacks_destroy(S);
        return;
    }
    mode = 0;
    for (unsigned i = 0; i < distinct; i++) /* each stack once: the table made */
        sink_ = pick(i, 0, rest);
    double t0 = now_s();
    for (long i = 0; i < captures; i++)
        sink_ = pick((unsigned)i % distinct, 0, rest);
    double cap_ns = (now_s() - t0) * 1e9 / (double)captures;
    mode = 1;
    t0 = now_s();
    for (long i = 0; i < captures; i++)
        sink_ = pick((unsigned)i % distinct, 0, rest);
    double unw_ns = (now_s() - t0) * 1e9 / (double)captures;
    int frames = (int)sink_;

    size_t bytes = 0;
    fl_stacks_destroy(S);
    S = fl_stacks_create(&cfg, &why);
    mode = 0;
    sink_ = pick(0, 0, rest);
    double t_first0 = now_s();
    fl_stacks_announce(S, count_emit, &bytes); /* the first: Dwfl set up */
    double first_ms = (now_s() - t_first0) * 1e3;
    for (unsigned i = 1; i < distinct; i++)
        sink_ = pick(i, 0, rest);
    t0 = now_s();
    size_t n = fl_stacks_announce(S, count_emit, &bytes);
    double sym_us = n ? (now_s() - t0) * 1e6 / (double)n : 0;
    printf("%6d %9u %12.0f %12.0f %12.0f %12.2f %12.1f %8zu\n", frames, distinct, cap_ns, unw_ns,
           cap_ns - unw_ns, first_ms, sym_us, bytes / (n + 1));
    fl_stacks_destroy(S);
    S = NULL;
}

int main(int argc, char **argv)
{
    long captures = 200000;
    for (int i = 1; i < argc; i++) {
        if (strcmp(argv[i], "--quick") == 0)
            captures = 20000;
        else if (strcmp(argv[i], "--captures") == 0 && i + 1 < argc)
            captures = atol(argv[++i]);
    }
    printf("CPU stack at launch (plugin/stacks.c), thread CPU time, %ld captures a row\n",
           captures);
    printf("%6s %9s %12s %12s %12s %12s %12s %8s\n", "frames", "distinct", "capture ns",
           "unwind ns", "hash+find ns", "1st sym ms", "sym us/stack", "bytes");
    static const int depths[] = {8, 20, 32, 60};
    static const unsigned distincts[] = {1, 64, 4096};
    for (size_t d = 0; d < sizeof depths / sizeof depths[0]; d++)
        for (size_t k = 0; k < sizeof distincts / sizeof distincts[0]; k++)
            run(depths[d], distincts[k], captures);
    return 0;
}
