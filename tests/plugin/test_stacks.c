/*
 * test_stacks.c - plugin/stacks.c on this very program (built with -g -O0):
 * stacks captured in known functions (main -> frames -> a -> b -> c) are
 * symbolised to those functions with this file's lines, outermost first;
 * the same stack is one id and another call site another; the table's cap
 * refuses new stacks and counts them; the CUDA runtime's launch wrappers
 * are dropped; several threads capture at once while the writer announces
 * (run under TSan by scripts/test.sh thread).  Skips (77) when the plugin
 * is built without libunwind and libdw.
 */
#include "check.h"
#include "stacks.h"

#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <string.h>

#define NOINLINE __attribute__((noinline))

static fl_stacks *S;
static int line_frames, line_a, line_b, line_b2, line_c, line_wrap, line_w;
static _Atomic int sink_; /* keeps each frame (no tail call); threads share it */

/* Texts announced, by id. */
#define MAX_IDS 64
static char texts[MAX_IDS + 1][FL_STACK_TEXT_MAX];
static size_t announced;

static void emit(void *user, const uint32_t *ids, const char *const *t, size_t n)
{
    (void)user;
    for (size_t i = 0; i < n; i++) {
        if (ids[i] <= MAX_IDS)
            snprintf(texts[ids[i]], sizeof texts[ids[i]], "%s", t[i]);
        announced++;
    }
}

/* AT(line) records the line of the call it is written on. */
#define AT(line) (line = __LINE__)

NOINLINE static uint32_t c(void)
{
    uint32_t id = (AT(line_c), fl_stacks_capture(S, 0));
    sink_++;
    return id;
}

NOINLINE static uint32_t b(void)
{
    uint32_t id = (AT(line_b), c());
    sink_++;
    return id;
}

NOINLINE static uint32_t b2(void)
{
    uint32_t id = (AT(line_b2), c());
    sink_++;
    return id;
}

NOINLINE static uint32_t a(int which)
{
    uint32_t id = which ? (AT(line_a), b2()) : (AT(line_a), b());
    sink_++;
    return id;
}

/* Named as the CUDA runtime's launch wrappers are: dropped from the text. */
NOINLINE uint32_t cudaLaunchKernel_test_wrapper(void)
{
    uint32_t id = (AT(line_wrap), fl_stacks_capture(S, 0));
    sink_++;
    return id;
}

NOINLINE static uint32_t w(void)
{
    uint32_t id = (AT(line_w), cudaLaunchKernel_test_wrapper());
    sink_++;
    return id;
}

NOINLINE static uint32_t frames(int which)
{
    uint32_t id = (AT(line_frames), a(which));
    sink_++;
    return id;
}

NOINLINE static uint32_t recurse(int depth)
{
    uint32_t id = depth > 0 ? recurse(depth - 1) : fl_stacks_capture(S, 0);
    sink_++;
    return id;
}

static int line_test, line_main;

static void test_frames(void)
{
    uint32_t ids[2];
    for (int i = 0; i < 2; i++)
        ids[i] = (AT(line_test), frames(0));
    uint32_t other = frames(1);
    CHECK_INT(ids[0], 1);
    CHECK_INT(ids[1], 1); /* the same stack: the same id */
    CHECK_INT(other, 2);  /* another call site */
    size_t before = announced;
    CHECK_INT(fl_stacks_announce(S, emit, NULL), 2);
    CHECK_INT(announced - before, 2);
    CHECK_INT(fl_stacks_announce(S, emit, NULL), 0);

    char want[1024];
    snprintf(want, sizeof want,
             "main (test_stacks.c:%d)|test_frames (test_stacks.c:%d)|frames (test_stacks.c:%d)|"
             "a (test_stacks.c:%d)|b (test_stacks.c:%d)|c (test_stacks.c:%d)",
             line_main, line_test, line_frames, line_a, line_b, line_c);
    CHECK_STR(texts[1], want);
    snprintf(want, sizeof want, "|a (test_stacks.c:%d)|b2 (test_stacks.c:%d)|c (test_stacks.c:%d)",
             line_a, line_b2, line_c);
    size_t tl = strlen(texts[2]), wl = strlen(want);
    CHECK(tl > wl && strcmp(texts[2] + tl - wl, want) == 0);
    if (!(tl > wl && strcmp(texts[2] + tl - wl, want) == 0))
        fprintf(stderr, "got  %s\nwant ...%s\n", texts[2], want);
}

static void test_wrapper_dropped(void)
{
    uint32_t id = w();
    CHECK(id > 0 && id <= MAX_IDS);
    fl_stacks_announce(S, emit, NULL);
    char want[128];
    snprintf(want, sizeof want, "|w (test_stacks.c:%d)", line_w);
    const char *t = id <= MAX_IDS ? texts[id] : "";
    size_t tl = strlen(t), wl = strlen(want);
    CHECK(tl > wl && strcmp(t + tl - wl, want) == 0); /* the wrapper's frame is gone */
    if (!(tl > wl && strcmp(t + tl - wl, want) == 0))
        fprintf(stderr, "got  %s\nwant ...%s\n", t, want);
    (void)line_wrap;
}

static void test_cap(void)
{
    gp_error why;
    fl_stacks_config cfg = {.max_stacks = 3};
    fl_stacks *saved = S;
    S = fl_stacks_create(&cfg, &why);
    CHECK(S != NULL);
    uint32_t ids[6], again = 0;
    for (int round = 0; round < 2; round++)
        for (int d = 0; d < 6; d++) {
            uint32_t id = recurse(d);
            if (round == 0)
                ids[d] = id;
            else if (d == 1)
                again = id;
        }
    CHECK_INT(ids[0], 1);
    CHECK_INT(ids[1], 2);
    CHECK_INT(ids[2], 3);
    CHECK_INT(ids[3], 0);
    CHECK_INT(ids[4], 0);
    CHECK_INT(ids[5], 0);
    CHECK_INT(again, 2); /* a known stack still has its id */
    fl_stacks_stats st;
    fl_stacks_counts(S, &st);
    CHECK_U64(st.distinct, 3);
    CHECK_U64(st.overflow, 6); /* depths 3, 4, 5, twice */
    CHECK_U64(st.captures, 6);
    CHECK_U64(st.max_stacks, 3);
    fl_stacks_destroy(S);
    S = saved;
}

/* Threads: each captures the stacks of depths 0..7, 200 times, while the
 * main thread announces; every thread sees the same id for a depth. */
#define THREADS 4
#define DEPTHS 8
static uint32_t thread_ids[THREADS][DEPTHS];

static void *worker(void *arg)
{
    int t = (int)(intptr_t)arg;
    for (int round = 0; round < 200; round++)
        for (int d = 0; d < DEPTHS; d++) {
            uint32_t id = recurse(d);
            if (round == 0)
                thread_ids[t][d] = id;
            else if (id != thread_ids[t][d])
                thread_ids[t][d] = 0xffffffffu;
        }
    return NULL;
}

static void test_threads(void)
{
    gp_error why;
    fl_stacks_config cfg = {0};
    fl_stacks *saved = S;
    S = fl_stacks_create(&cfg, &why);
    pthread_t th[THREADS];
    for (int t = 0; t < THREADS; t++)
        pthread_create(&th[t], NULL, worker, (void *)(intptr_t)t);
    size_t n = 0;
    for (int i = 0; i < 50; i++)
        n += fl_stacks_announce(S, emit, NULL);
    for (int t = 0; t < THREADS; t++)
        pthread_join(th[t], NULL);
    n += fl_stacks_announce(S, emit, NULL);
    fl_stacks_stats st;
    fl_stacks_counts(S, &st);
    CHECK_U64(st.distinct, DEPTHS);
    CHECK_U64(st.overflow, 0);
    CHECK_U64(st.captures, (uint64_t)THREADS * 200 * DEPTHS);
    CHECK_INT(n, DEPTHS);
    for (int t = 0; t < THREADS; t++)
        for (int d = 0; d < DEPTHS; d++)
            CHECK_INT(thread_ids[t][d], thread_ids[0][d]);
    for (int d = 1; d < DEPTHS; d++)
        CHECK(thread_ids[0][d] != thread_ids[0][d - 1] && thread_ids[0][d] != 0);
    fl_stacks_destroy(S);
    S = saved;
}

int main(void)
{
    gp_error why;
    fl_stacks_config cfg = {0};
    S = fl_stacks_create(&cfg, &why);
    if (!S) {
        printf("SKIP: %s\n", why.message);
        return 77;
    }
    CHECK_INT(fl_stacks_capture(NULL, 0), 0);
    (AT(line_main), test_frames());
    test_wrapper_dropped();
    fl_stacks_destroy(S);
    test_cap();
    test_threads();
    return check_done("test_stacks");
}
