/*
 * pystack.h - Python frames in the CPU stacks of launches and
 * synchronizations (plugin/stacks.c), from a CPython 3.8+ found in the
 * process at run time: never linked, looked up with dlsym.
 *
 * Promises: fl_py_capture is called on the application's thread inside a
 * launch or sync callback; it reads the thread's Python frames only when
 * the thread holds the GIL (its thread state is the current one), calls
 * only CPython's public C API (3.9+: PyEval_GetFrame, PyFrame_GetBack,
 * PyFrame_GetCode, PyFrame_GetLineNumber; 3.8: the public frame struct's
 * f_back and f_code), never raises or clears a Python exception of the
 * program, takes no lock while it calls Python, and costs a hash lookup
 * per frame once a code object was seen (its file and function names are
 * interned once, the code object kept alive so its address names it for
 * good).  A version it does not know (not 3.8 or later, a 3.8 debug build,
 * a symbol missing) gives no Python frame, and fl_py_note says why.
 *
 * A frame is a key (code id << 32 | line), so stacks that differ only by
 * a line are different stacks and equal ones share an id; fl_py_frame_text
 * spells it "qualname (path:line)" on any thread.
 */
#ifndef GP_PLUGIN_PYSTACK_H
#define GP_PLUGIN_PYSTACK_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define FL_PY_MAX_FRAMES 64 /* Python frames kept per stack (the innermost) */

/* Looks CPython up once per process (later calls return the first
 * answer): true when Python frames can be captured. */
bool fl_py_setup(void);

/* What the session's capabilities say of Python ("" when the process has
 * no CPython): its version, or why its frames are not read. */
const char *fl_py_note(void);

/* The calling thread's Python frames, innermost first, at most max keys
 * (0: no CPython, not set up, or the thread does not hold the GIL). */
size_t fl_py_capture(uintptr_t *keys, size_t max);

/* One key's text into out (cap > 0): "forward (model.py:88)"; returns its
 * length. */
size_t fl_py_frame_text(uintptr_t key, char *out, size_t cap);

/* An address inside the interpreter's module (libpython or the python
 * executable), NULL without CPython: the native frames in that module are
 * the interpreter's, which Python frames replace. */
const void *fl_py_interp_addr(void);

/* A native stack (return addresses, innermost first) with Python frames:
 * each return address into the frame evaluator becomes one address (the
 * evaluator's start + 1), each run of other return addresses into the
 * interpreter one address (fl_py_interp_addr() + 1), so that the same
 * Python and C extension frames are one stack whatever path the
 * interpreter took between them (its specialising evaluator takes another
 * on a call site's first calls).  Returns the new count; pcs unchanged
 * when the evaluator's extent is unknown. */
size_t fl_py_fold(uintptr_t *pcs, size_t n);

/* Whether a native frame's function is the interpreter's frame evaluator
 * (one C frame per Python frame up to 3.10, per entry from C from 3.11). */
bool fl_py_eval_function(const char *name);

#endif /* GP_PLUGIN_PYSTACK_H */
