/*
 * stacks.h - CPU call stacks at kernel launch (enable_stack_trace): a
 * cheap capture on the application's thread, de-duplicated by stack, and
 * symbolised once per distinct stack on the core's writer thread.
 *
 * Capture (fl_stacks_capture, any thread, lock-free when the stack was
 * seen before): libunwind's unw_backtrace (the return addresses only, at
 * most FL_STACK_MAX_FRAMES), a 64-bit hash of them, and a lookup in a
 * fixed open-addressing table that compares the addresses themselves, so
 * two stacks that collide on the hash are still two stacks.  A new stack
 * takes a mutex, copies its addresses and gets the next id (1, 2, ...).
 * The table never holds more than max_stacks stacks: a launch whose stack
 * is new once it is full gets id 0 (no stack) and is counted (overflow).
 *
 * Symbolisation (fl_stacks_announce, one thread: the writer): every stack
 * captured since the last call becomes one text through elfutils' libdw
 * (Dwfl over this process's mappings): "outer|...|inner", outermost first
 * as GPUFlight 1.3 writes it, one frame per return address, each
 * "function (file:line)" when debug info has the line, "function" when
 * only the symbol is known, "module+0xoffset" when not even that.  The
 * innermost frames that belong to the tool (modules named in
 * skip_modules: the plugin, libcupti, libcuda, libcudart) or to the CUDA
 * runtime's launch wrappers (functions named __device_stub*, cudaLaunch*,
 * cudaGraphLaunch*, __cudart*, libcudart_static_*) are dropped, so the
 * last frame is the application's; so are the outermost C-library frames
 * (_start, __libc_start_main, __libc_start_call_main, start_thread,
 * clone, clone3).  A '|' inside a name is written as '/'.
 *
 * Python (pystack.h): when the capturing thread runs CPython 3.8+ and
 * holds the GIL, its Python frames are captured too (part of the stack's
 * identity) and replace the interpreter's own frames in the text, each
 * "qualname (path:line)".  Every native frame in CPython's module is the
 * interpreter's and is dropped; each run of them takes, innermost first,
 * as many Python frames as it has frame-evaluator C frames
 * (_PyEval_EvalFrameDefault: one per Python frame up to 3.10, one per
 * entry from C since 3.11, Python-to-Python calls being inlined), and the
 * outermost run that evaluates Python takes all the frames left; a run
 * without an evaluator frame (Py_RunMain, a call's C glue) takes none.
 * C extension frames between runs stay where they are.  Python frames
 * left over (the native walk cut short) go to the outer end.
 *
 * Built without libunwind and libdw (GP_HAVE_STACKS undefined),
 * fl_stacks_create says so and every other call is a harmless no-op.
 */
#ifndef GP_PLUGIN_STACKS_H
#define GP_PLUGIN_STACKS_H

#include "gpu_profile.h"

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define FL_STACK_MAX_FRAMES 64     /* return addresses kept per stack (the innermost) */
#define FL_STACKS_DEFAULT_MAX 4096 /* distinct stacks a session keeps */
#define FL_STACK_TEXT_MAX 4096     /* bytes of one stack's text; outer frames cut first */

typedef struct fl_stacks fl_stacks;

typedef struct fl_stacks_config {
    uint32_t max_stacks; /* distinct stacks kept (0: FL_STACKS_DEFAULT_MAX) */
    /* Substrings of module file names whose innermost frames are the
     * tool's, not the application's (NULL-terminated; NULL: none). */
    const char *const *skip_modules;
    /* A C++ name's demangled form into out (NULL: names as they are). */
    void (*demangle)(const char *name, char *out, size_t cap);
} fl_stacks_config;

/* What fl_stacks_counts returns. */
typedef struct fl_stacks_stats {
    uint64_t distinct;        /* stacks kept (ids handed out) */
    uint64_t overflow;        /* captures refused: the table was full */
    uint64_t captures;        /* captures that returned an id */
    uint64_t python_captures; /* of which with Python frames (pystack.h) */
    uint32_t max_stacks;
} fl_stacks_stats;

/* NULL with err filled (NULL accepted) when it cannot be made:
 * GP_ERR_NO_MEMORY, or GP_ERR_NOT_SUPPORTED when built without libunwind
 * and libdw (the message names the packages to install). */
fl_stacks *fl_stacks_create(const fl_stacks_config *cfg, gp_error *err);
/* After every capture has returned and the last announce. NULL-safe. */
void fl_stacks_destroy(fl_stacks *s);

/* The calling thread's stack: its id (1..max_stacks), 0 when s is NULL,
 * the stack is empty or new while the table is full.  skip_frames: the
 * innermost frames to leave out besides fl_stacks_capture's own. */
uint32_t fl_stacks_capture(fl_stacks *s, unsigned skip_frames);

/* Symbolises every stack captured since the last call and hands them to
 * emit in id order, in arrays of at most 16 (texts valid during the
 * call).  One thread at a time.  Returns how many were announced. */
typedef void (*fl_stacks_emit_fn)(void *user, const uint32_t *ids, const char *const *texts,
                                  size_t n);
size_t fl_stacks_announce(fl_stacks *s, fl_stacks_emit_fn emit, void *user);

void fl_stacks_counts(const fl_stacks *s, fl_stacks_stats *out);

/* Whether a frame (its ELF symbol name, NULL: unknown; its module's path,
 * NULL: unknown) is the process's or a thread's start, which a stack's
 * outer end leaves out: glibc's start functions by name, and any unnamed
 * frame in a libc without symbols. */
bool fl_stacks_start_frame(const char *name, const char *module);

#endif /* GP_PLUGIN_STACKS_H */
