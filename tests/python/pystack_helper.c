/*
 * pystack_helper.c - the CUPTI plugin's stack capture (plugin/stacks.c,
 * plugin/pystack.c) as a library a Python program loads with ctypes, for
 * tests/python/test_pystack.py: a capture from a known Python call chain,
 * the stack's text, the lines of this file's calls.  Built -O0 so its own
 * frames are as written.
 */
#include "pystack.h"
#include "stacks.h"

#include <stdio.h>
#include <string.h>

#define API __attribute__((visibility("default")))
#define NOINLINE __attribute__((noinline))
#define AT(line) (line = __LINE__)
#define KEPT 256

static fl_stacks *S;
static char texts[KEPT][FL_STACK_TEXT_MAX];
static int line_capture, line_call;

/* 0, or 77 (built without libunwind and libdw), or 1 (another failure). */
API int helper_open(void)
{
    fl_stacks_config cfg = {0};
    gp_error err;
    S = fl_stacks_create(&cfg, &err);
    if (!S)
        fprintf(stderr, "fl_stacks_create: %s\n", err.message);
    return S ? 0 : err.status == GP_ERR_NOT_SUPPORTED ? 77 : 1;
}

API NOINLINE unsigned helper_capture(void)
{
    unsigned id = (AT(line_capture), fl_stacks_capture(S, 0));
    return id;
}

/* Calls back into Python from C, as an extension calling a callable does. */
API NOINLINE unsigned helper_call(unsigned (*cb)(void))
{
    unsigned id = (AT(line_call), cb());
    return id;
}

static void keep(void *user, const uint32_t *ids, const char *const *t, size_t n)
{
    (void)user;
    for (size_t i = 0; i < n; i++)
        if (ids[i] < KEPT)
            snprintf(texts[ids[i]], sizeof texts[ids[i]], "%s", t[i]);
}

/* The text of stack id (announcing the new ones first). */
API const char *helper_text(unsigned id)
{
    fl_stacks_announce(S, keep, NULL);
    return id < KEPT ? texts[id] : "";
}

API const char *helper_note(void)
{
    return fl_py_note();
}

API unsigned long long helper_python_captures(void)
{
    fl_stacks_stats st;
    fl_stacks_counts(S, &st);
    return st.python_captures;
}

API int helper_line(int which)
{
    return which == 0 ? line_capture : line_call;
}
