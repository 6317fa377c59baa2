/*
 * pystack.c - Python frames for the CPU stacks (pystack.h says what each
 * call promises).
 *
 * Why dlsym and no Python.h: the plugin runs in any CUDA process, most of
 * which have no Python, and in a Python of any version; the handful of
 * calls used have had the same signatures since 3.9 (3.8 lacks the frame
 * getters, and its frame struct's first fields are public and fixed).
 *
 * Why code objects are kept alive: a frame's key names its code object by
 * a small id; a code object freed and another allocated at its address
 * would take over the id and lie.  One reference per distinct code object
 * seen at a launch (at most CODE_MAX, then frames say "<unknown>") is what
 * a profiler that names functions by their code costs; they are never
 * released (the GIL cannot be taken safely at a session's end).
 *
 * The code table: open addressing, a slot published (its code pointer
 * stored with release after its names) never changes, so lookups take no
 * lock; inserts take the mutex, never while Python is called.
 */
#include "pystack.h"

#include <dlfcn.h>
#include <link.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define CODE_CAP 32768 /* slots (a power of two, twice CODE_MAX) */
#define CODE_MAX 16384 /* distinct code objects named */
#define CODE_UNKNOWN 0u
#define PY38_F_BACK_OFFSET 24 /* PyFrameObject: PyObject_VAR_HEAD, f_back, f_code */
#define PY38_F_CODE_OFFSET 32

typedef void *pyobj;

/* The public C API calls used, looked up once. */
static struct {
    int minor;
    int (*is_initialized)(void);
    int (*gil_check)(void);
    pyobj (*this_thread_state)(void);
    pyobj (*current_state)(void);
    pyobj (*get_frame)(void);
    pyobj (*frame_back)(pyobj);
    pyobj (*frame_code)(pyobj);
    int (*frame_line)(pyobj);
    int (*frame_lasti)(pyobj); /* 3.11+; NULL: no line cache */
    pyobj (*get_attr)(pyobj, const char *);
    const char *(*utf8)(pyobj);
    void (*incref)(pyobj);
    void (*decref)(pyobj);
    void (*err_fetch)(pyobj *, pyobj *, pyobj *);
    void (*err_restore)(pyobj, pyobj, pyobj);
    int (*gc_disable)(void); /* 3.10+ */
    int (*gc_enable)(void);
    pyobj (*err_take)(void); /* 3.12+: PyErr_Fetch's successor, if it goes */
    void (*err_put)(pyobj);
    const char *(*version)(void);
} api;

/* The interpreter's module and its frame evaluator, as address ranges
 * [lo, hi) (fl_py_fold; 0, 0: unknown). */
static uintptr_t interp_lo, interp_hi, eval_lo, eval_hi;

static pthread_once_t once = PTHREAD_ONCE_INIT;
static bool ready;
static char note[160];
static char cwd[1024];

typedef struct code_slot {
    _Atomic uintptr_t code; /* 0: empty */
    uint32_t id;
} code_slot;

typedef struct code_names {
    char *func; /* co_qualname (3.11+) or co_name */
    char *path; /* co_filename, shortened (shorten_path) */
} code_names;

/* Lines by (code id, instruction offset), direct-mapped: PyFrame_GetLineNumber
 * decodes the code's line table from its start at every call, which was 60 %
 * of a capture.  One word an entry (id 16 bits, offset + 1 24 bits, line 24
 * bits), so a reader never sees half an entry. */
#define LINE_CACHE 65536
static _Atomic uint64_t *lines; /* [LINE_CACHE] */

static code_slot *codes;  /* [CODE_CAP] */
static code_names *names; /* [CODE_MAX + 1], by id */
static uint32_t n_codes;  /* under mu */
static pthread_mutex_t mu = PTHREAD_MUTEX_INITIALIZER;

/* A symbol from the process's global scope or from a libpython loaded
 * RTLD_LOCAL (an embedding program's dlopen). */
static void *sym(void *lib, const char *name)
{
    void *p = dlsym(RTLD_DEFAULT, name);
    return p || !lib ? p : dlsym(lib, name);
}

#define LOOK(field, name) memcpy(&api.field, &(void *){sym(lib, name)}, sizeof(void *))

static void *find_libpython(void)
{
    if (dlsym(RTLD_DEFAULT, "Py_GetVersion"))
        return NULL; /* the executable or a global libpython */
    for (int minor = 8; minor <= 30; minor++) {
        char so[64];
        snprintf(so, sizeof so, "libpython3.%d.so.1.0", minor);
        void *h = dlopen(so, RTLD_NOW | RTLD_NOLOAD);
        if (h)
            return h;
    }
    return NULL;
}

static int module_range(struct dl_phdr_info *info, size_t size, void *data)
{
    (void)size;
    uintptr_t at = *(uintptr_t *)data, lo = UINTPTR_MAX, hi = 0;
    for (int i = 0; i < info->dlpi_phnum; i++) {
        const ElfW(Phdr) *ph = &info->dlpi_phdr[i];
        if (ph->p_type != PT_LOAD)
            continue;
        uintptr_t a = (uintptr_t)info->dlpi_addr + ph->p_vaddr;
        lo = a < lo ? a : lo;
        hi = a + ph->p_memsz > hi ? a + ph->p_memsz : hi;
    }
    if (at < lo || at >= hi)
        return 0;
    interp_lo = lo;
    interp_hi = hi;
    return 1;
}

/* Where the interpreter's code and its evaluator lie (no fold without). */
static void find_ranges(void *lib)
{
    void *eval = sym(lib, "_PyEval_EvalFrameDefault");
    Dl_info info;
    const ElfW(Sym) *es = NULL;
    if (!eval || !dladdr1(eval, &info, (void **)&es, RTLD_DL_SYMENT) || !es || !es->st_size)
        return;
    uintptr_t at = (uintptr_t)eval;
    dl_iterate_phdr(module_range, &at);
    eval_lo = at;
    eval_hi = at + es->st_size;
    if (!interp_lo)
        eval_lo = eval_hi = 0;
}

static void setup_once(void)
{
    void *lib = find_libpython();
    LOOK(version, "Py_GetVersion");
    if (!api.version)
        return; /* no CPython: nothing to say */
    const char *v = api.version();
    int major = 0, minor = 0;
    char shown[32];
    snprintf(shown, sizeof shown, "%.*s", (int)strcspn(v, " "), v);
    if (sscanf(v, "%d.%d", &major, &minor) != 2 || major != 3 || minor < 8) {
        snprintf(note, sizeof note,
                 "CPython %s is not supported (3.8 or later): its stacks show the "
                 "interpreter's C frames",
                 shown);
        return;
    }
    api.minor = minor;
    LOOK(is_initialized, "Py_IsInitialized");
    LOOK(gil_check, "PyGILState_Check");
    LOOK(this_thread_state, "PyGILState_GetThisThreadState");
    LOOK(current_state, "PyThreadState_GetUnchecked"); /* 3.13+ */
    if (!api.current_state)
        LOOK(current_state, "_PyThreadState_UncheckedGet"); /* 3.8 - 3.12 */
    LOOK(get_frame, "PyEval_GetFrame");
    LOOK(frame_back, "PyFrame_GetBack");
    LOOK(frame_code, "PyFrame_GetCode");
    LOOK(frame_line, "PyFrame_GetLineNumber");
    LOOK(frame_lasti, "PyFrame_GetLasti");
    LOOK(get_attr, "PyObject_GetAttrString");
    LOOK(utf8, "PyUnicode_AsUTF8");
    LOOK(incref, "Py_IncRef");
    LOOK(decref, "Py_DecRef");
    LOOK(err_fetch, "PyErr_Fetch");
    LOOK(err_restore, "PyErr_Restore");
    LOOK(gc_disable, "PyGC_Disable");
    LOOK(gc_enable, "PyGC_Enable");
    LOOK(err_take, "PyErr_GetRaisedException");
    LOOK(err_put, "PyErr_SetRaisedException");
    bool errors = (api.err_fetch && api.err_restore) || (api.err_take && api.err_put);
    bool getters = minor >= 9 ? api.frame_back && api.frame_code : true;
    /* 3.8's frame struct moves under Py_TRACE_REFS (a debug build). */
    bool layout = minor >= 9 || !sym(lib, "_Py_PrintReferences");
    if (!api.is_initialized || !api.gil_check || !api.this_thread_state || !api.current_state ||
        !api.get_frame || !api.frame_line || !api.get_attr || !api.utf8 || !api.incref ||
        !api.decref || !errors || !getters || !layout) {
        snprintf(note, sizeof note,
                 "CPython %s lacks a call its frames are read with (a debug or trimmed build): "
                 "its stacks show the interpreter's C frames",
                 shown);
        return;
    }
    codes = calloc(CODE_CAP, sizeof *codes);
    names = calloc(CODE_MAX + 1, sizeof *names);
    lines = api.frame_lasti ? calloc(LINE_CACHE, sizeof *lines) : NULL;
    if (!codes || !names || (api.frame_lasti && !lines)) {
        free(codes);
        free(names);
        free((void *)lines);
        lines = NULL;
        codes = NULL;
        names = NULL;
        snprintf(note, sizeof note, "CPython %s: out of memory for its code table", shown);
        return;
    }
    find_ranges(lib);
    if (!getcwd(cwd, sizeof cwd))
        cwd[0] = '\0';
    snprintf(note, sizeof note, "CPython %s", shown);
    ready = true;
}

bool fl_py_setup(void)
{
    pthread_once(&once, setup_once);
    return ready;
}

const char *fl_py_note(void)
{
    pthread_once(&once, setup_once);
    return note;
}

const void *fl_py_interp_addr(void)
{
    const void *p;
    memcpy(&p, &api.version, sizeof p);
    return fl_py_setup() ? p : NULL;
}

size_t fl_py_fold(uintptr_t *pcs, size_t n)
{
    if (!eval_lo)
        return n;
    uintptr_t glue = (uintptr_t)fl_py_interp_addr() + 1, eval = eval_lo + 1;
    size_t out = 0;
    for (size_t i = 0; i < n; i++) {
        uintptr_t pc = pcs[i];
        if (pc - 1 >= eval_lo && pc - 1 < eval_hi)
            pcs[out++] = eval;
        else if (pc - 1 >= interp_lo && pc - 1 < interp_hi)
            pcs[out++] = glue;
        else
            pcs[out++] = pc;
        if (out >= 2 && pcs[out - 1] == glue && pcs[out - 2] == glue)
            out--;
    }
    return out;
}

bool fl_py_eval_function(const char *name)
{
    static const char eval[] = "_PyEval_EvalFrameDefault";
    return name && strncmp(name, eval, sizeof eval - 1) == 0;
}

/* ------------------------------------------------------------ names */

/* A file as a reader finds it: inside an installed package, from the
 * package's folder ("torch/nn/modules/module.py"); under the directory the
 * program started in, relative to it; else as Python has it. */
static const char *shorten_path(const char *p)
{
    static const char *const roots[] = {"/site-packages/", "/dist-packages/", NULL};
    const char *best = NULL;
    for (size_t i = 0; roots[i]; i++)
        for (const char *q = strstr(p, roots[i]); q; q = strstr(q + 1, roots[i]))
            best = q + strlen(roots[i]);
    if (best && *best)
        return best;
    size_t n = strlen(cwd);
    if (n > 1 && strncmp(p, cwd, n) == 0 && p[n] == '/' && p[n + 1])
        return p + n + 1;
    return p;
}

/* The text of an attribute of obj (a str), malloc'd; NULL when it has none. */
static char *attr_text(pyobj obj, const char *attr)
{
    pyobj v = api.get_attr(obj, attr);
    if (!v)
        return NULL;
    const char *u = api.utf8(v);
    char *r = u ? strdup(u) : NULL;
    api.decref(v);
    return r;
}

static size_t code_hash(uintptr_t code)
{
    return (size_t)(((uint64_t)code * 0x9E3779B97F4A7C15ull) >> 40) & (CODE_CAP - 1);
}

static uint32_t code_find(uintptr_t code)
{
    for (size_t i = code_hash(code);; i = (i + 1) & (CODE_CAP - 1)) {
        uintptr_t c = atomic_load_explicit(&codes[i].code, memory_order_acquire);
        if (c == code)
            return codes[i].id;
        if (c == 0)
            return CODE_UNKNOWN;
    }
}

/* The id of a code object, named and kept alive at its first sight
 * (under the GIL; the program's pending exception put back as it was). */
static uint32_t intern(pyobj code)
{
    uintptr_t key = (uintptr_t)code;
    uint32_t id = code_find(key);
    if (id != CODE_UNKNOWN)
        return id;
    pthread_mutex_lock(&mu);
    bool full = n_codes >= CODE_MAX;
    pthread_mutex_unlock(&mu);
    if (full)
        return CODE_UNKNOWN;
    pyobj et = NULL, ev = NULL, etb = NULL;
    if (api.err_fetch)
        api.err_fetch(&et, &ev, &etb);
    else
        ev = api.err_take();
    char *func = api.minor >= 11 ? attr_text(code, "co_qualname") : NULL;
    if (!func)
        func = attr_text(code, "co_name");
    char *file = attr_text(code, "co_filename");
    if (api.err_fetch) /* also drops what the lookups raised */
        api.err_restore(et, ev, etb);
    else
        api.err_put(ev);
    char *path = file ? strdup(shorten_path(file)) : NULL;
    free(file);
    pthread_mutex_lock(&mu);
    id = code_find(key); /* another thread (a free-threaded build) won */
    if (id == CODE_UNKNOWN && n_codes < CODE_MAX) {
        id = ++n_codes;
        names[id] = (code_names){.func = func, .path = path};
        size_t i = code_hash(key);
        while (atomic_load_explicit(&codes[i].code, memory_order_relaxed))
            i = (i + 1) & (CODE_CAP - 1);
        codes[i].id = id;
        api.incref(code);
        atomic_store_explicit(&codes[i].code, key, memory_order_release);
        func = path = NULL;
    }
    pthread_mutex_unlock(&mu);
    free(func);
    free(path);
    return id;
}

/* ---------------------------------------------------------- capture */

/* Whether this thread holds the GIL: PyGILState_Check alone answers yes
 * whenever the check is off (sub-interpreters), so the thread's own state
 * must also be the one running. */
static bool holds_gil(void)
{
    if (!api.is_initialized() || !api.gil_check())
        return false;
    pyobj ts = api.current_state();
    return ts && ts == api.this_thread_state();
}

/* The line frame f (of code id) is at. */
static int frame_line(pyobj f, uint32_t id)
{
    int lasti = lines && id != CODE_UNKNOWN ? api.frame_lasti(f) : -1;
    if (lasti < 0 || lasti >= (1 << 24) - 1)
        return api.frame_line(f);
    uint64_t tag = ((uint64_t)id << 48) | ((uint64_t)(lasti + 1) << 24);
    size_t i = (size_t)((tag * 0x9E3779B97F4A7C15ull) >> 48) & (LINE_CACHE - 1);
    uint64_t e = atomic_load_explicit(&lines[i], memory_order_relaxed);
    if ((e & ~0xffffffull) == tag)
        return (int)(e & 0xffffff);
    int line = api.frame_line(f);
    if (line >= 0 && line < (1 << 24))
        atomic_store_explicit(&lines[i], tag | (uint64_t)line, memory_order_relaxed);
    return line;
}

/* A frame's f_code or f_back: the 3.9+ getter (a new reference), else the
 * 3.8 field at its offset (borrowed). */
static pyobj frame_field(pyobj f, pyobj (*getter)(pyobj), size_t offset_3_8)
{
    pyobj v;
    if (api.minor >= 9)
        return getter(f);
    memcpy(&v, (char *)f + offset_3_8, sizeof v);
    return v;
}

size_t fl_py_capture(uintptr_t *keys, size_t max)
{
    if (!ready || !holds_gil())
        return 0;
    /* From 3.11 a first look at a frame makes its object; 3.11 may collect
     * garbage right there, running finalizers - the program's code, CUDA
     * calls included - inside CUDA's callback.  Not while we read. */
    int gc_was = api.minor >= 11 && api.gc_disable && api.gc_enable ? api.gc_disable() : 0;
    pyobj f = api.get_frame(); /* borrowed */
    bool owned = false;        /* f is a reference of ours to drop */
    size_t n = 0;
    while (f && n < max) {
        pyobj code = frame_field(f, api.frame_code, PY38_F_CODE_OFFSET);
        uint32_t id = code ? intern(code) : CODE_UNKNOWN;
        int line = frame_line(f, id);
        if (code && api.minor >= 9)
            api.decref(code);
        keys[n++] = ((uintptr_t)id << 32) | (uint32_t)line;
        pyobj back = frame_field(f, api.frame_back, PY38_F_BACK_OFFSET);
        if (owned)
            api.decref(f);
        f = back;
        owned = api.minor >= 9;
    }
    if (f && owned)
        api.decref(f);
    if (gc_was > 0)
        api.gc_enable();
    return n;
}

size_t fl_py_frame_text(uintptr_t key, char *out, size_t cap)
{
    uint32_t id = (uint32_t)(key >> 32);
    int line = (int)(uint32_t)key;
    const code_names *c = id != CODE_UNKNOWN && names ? &names[id] : NULL;
    int r = snprintf(out, cap, "%s (%s:%d)", c && c->func ? c->func : "<unknown>",
                     c && c->path ? c->path : "?", line);
    size_t len = r < 0 ? 0 : (size_t)r >= cap ? cap - 1 : (size_t)r;
    for (size_t i = 0; i < len; i++)
        if (out[i] == '|')
            out[i] = '/';
    return len;
}
