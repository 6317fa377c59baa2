/*
 * stacks.c - CPU call stacks at kernel launch: capture and de-duplication
 * on the application's thread, symbolisation on the writer thread
 * (stacks.h says what each call promises).
 *
 * Why two libraries: libunwind's unw_backtrace walks the stack from the
 * callers' unwind tables with a per-thread cache and no lock and no
 * allocation, which is what a launch callback may afford; elfutils'
 * libdw (Dwfl) reads the symbol tables and DWARF line tables of every
 * mapped module, which gives file:line where glibc's backtrace_symbols
 * gives only exported names, and it runs once per distinct stack, on the
 * writer thread.  Both are kept by Debian (libunwind-dev, libdw-dev).
 *
 * The table: capacity a power of two at least twice max_stacks, so a probe
 * always ends; a slot, once published (its hash stored with release after
 * its addresses), never changes until fl_stacks_destroy, so lookups read
 * it without a lock.  Inserts take the mutex and probe again under it.
 */
#include "stacks.h"
#include "pystack.h"
#include "../src/util/error.h"

#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#if defined(__has_feature)
#if __has_feature(thread_sanitizer)
#define GP_TSAN_CLANG 1
#endif
#endif

#ifdef GP_HAVE_STACKS
#define UNW_LOCAL_ONLY
#include <elfutils/libdwfl.h>
#include <libunwind.h>
#include <unistd.h>
#endif

#define ANNOUNCE_CHUNK 16
#define FRAME_CACHE 16384  /* resolved return addresses kept (a power of two) */
#define FRAME_TEXT_MAX 256 /* bytes of one frame's text */

/* A return address, resolved once: its frame's text and where it stands. */
typedef struct frame_res {
    uintptr_t pc; /* 0: empty */
    char *text;
    uint16_t len;
    bool tool, libc_start;
    bool interp, eval; /* in CPython's module; its frame evaluator */
} frame_res;

typedef struct stack_slot {
    _Atomic uint64_t hash; /* 0: empty */
    uint32_t id;
    uint32_t n, npy;
    uintptr_t *pcs; /* n return addresses then npy Python frames, innermost first */
} stack_slot;

struct fl_stacks {
    fl_stacks_config cfg;
    stack_slot *slots;
    size_t mask;
    stack_slot **by_id; /* [id]: 1..max_stacks */
    pthread_mutex_t mu; /* inserts */
    _Atomic uint32_t published;
    _Atomic uint64_t overflow, captures, python_captures;
    bool python;                      /* CPython's frames are read (pystack.h) */
    uint32_t announced;               /* writer thread */
    char (*texts)[FL_STACK_TEXT_MAX]; /* [ANNOUNCE_CHUNK], writer thread */
    /* Resolved frames by return address (writer thread), and the room for
     * the frames of one stack the cache does not keep. */
    struct frame_res *frames; /* [FRAME_CACHE] */
    size_t n_frames;
    struct frame_res *tmp;            /* [FL_STACK_MAX_FRAMES] */
    char (*tmp_text)[FRAME_TEXT_MAX]; /* [FL_STACK_MAX_FRAMES] */
    char (*py_text)[FRAME_TEXT_MAX];  /* [FL_PY_MAX_FRAMES] */
#ifdef GP_HAVE_STACKS
    Dwfl *dwfl;             /* writer thread */
    Dwfl_Module *py_module; /* CPython's, in dwfl */
#endif
};

static const char *base_name(const char *p)
{
    const char *b = p ? strrchr(p, '/') : NULL;
    return b ? b + 1 : p;
}

static bool starts(const char *s, const char *prefix)
{
    return s && strncmp(s, prefix, strlen(prefix)) == 0;
}

bool fl_stacks_start_frame(const char *name, const char *module)
{
    static const char *const names[] = {
        "_start", "__libc_start_main", "__libc_start_call_main", "start_thread", "clone", "clone3",
        NULL};
    /* A libc without symbols (an H200 machine's): its unnamed frames
     * outermost are the process's or thread's start all the same. */
    if (!name && module)
        return starts(base_name(module), "libc.so") || starts(base_name(module), "libc-");
    size_t len = name ? strcspn(name, "@") : 0;
    for (size_t i = 0; name && names[i]; i++)
        if (strlen(names[i]) == len && strncmp(name, names[i], len) == 0)
            return true;
    return false;
}

#ifndef GP_HAVE_STACKS

fl_stacks *fl_stacks_create(const fl_stacks_config *cfg, gp_error *err)
{
    (void)cfg;
    gp_error_set(
        err, GP_ERR_NOT_SUPPORTED,
        "this CUPTI plugin was built without libunwind and libdw: install libunwind-dev and "
        "libdw-dev (scripts/install-deps.sh) and rebuild");
    return NULL;
}

void fl_stacks_destroy(fl_stacks *s)
{
    (void)s;
}

uint32_t fl_stacks_capture(fl_stacks *s, unsigned skip_frames)
{
    (void)s;
    (void)skip_frames;
    return 0;
}

size_t fl_stacks_announce(fl_stacks *s, fl_stacks_emit_fn emit, void *user)
{
    (void)s;
    (void)emit;
    (void)user;
    return 0;
}

void fl_stacks_counts(const fl_stacks *s, fl_stacks_stats *out)
{
    (void)s;
    memset(out, 0, sizeof *out);
}

#else /* GP_HAVE_STACKS */

/* ----------------------------------------------------------- lifetime */

fl_stacks *fl_stacks_create(const fl_stacks_config *cfg, gp_error *err)
{
    fl_stacks *s = calloc(1, sizeof *s);
    if (!s) {
        gp_error_set(err, GP_ERR_NO_MEMORY, "out of memory for the stack table");
        return NULL;
    }
    s->cfg = *cfg;
    if (!s->cfg.max_stacks)
        s->cfg.max_stacks = FL_STACKS_DEFAULT_MAX;
    size_t cap = 16;
    while (cap < 2 * (size_t)s->cfg.max_stacks)
        cap *= 2;
    s->slots = calloc(cap, sizeof *s->slots);
    s->by_id = calloc((size_t)s->cfg.max_stacks + 1, sizeof *s->by_id);
    if (!s->slots || !s->by_id) {
        free(s->slots);
        free(s->by_id);
        free(s);
        gp_error_set(err, GP_ERR_NO_MEMORY, "out of memory for the stack table");
        return NULL;
    }
    s->mask = cap - 1;
    s->python = fl_py_setup();
    pthread_mutex_init(&s->mu, NULL);
    return s;
}

void fl_stacks_destroy(fl_stacks *s)
{
    if (!s)
        return;
    for (size_t i = 0; i <= s->mask; i++)
        free(s->slots[i].pcs);
    free(s->slots);
    free(s->by_id);
    free(s->texts);
    for (size_t i = 0; s->frames && i < FRAME_CACHE; i++)
        free(s->frames[i].text);
    free(s->frames);
    free(s->tmp);
    free(s->tmp_text);
    free(s->py_text);
    if (s->dwfl)
        dwfl_end(s->dwfl);
    pthread_mutex_destroy(&s->mu);
    free(s);
}

/* ------------------------------------------------------------ capture */

static uint64_t hash_pcs(const uintptr_t *pcs, size_t n, size_t npy)
{
    uint64_t h = 0xcbf29ce484222325ull ^ n ^ ((uint64_t)npy << 32);
    for (size_t i = 0; i < n + npy; i++) {
        h ^= (uint64_t)pcs[i];
        h *= 0x100000001b3ull;
        h ^= h >> 29;
    }
    h ^= h >> 33;
    h *= 0xff51afd7ed558ccdull;
    h ^= h >> 33;
    return h ? h : 1;
}

/* The id of the published stack (h, pcs, n, npy); 0 when not there. */
static uint32_t find(const fl_stacks *s, uint64_t h, const uintptr_t *pcs, size_t n, size_t npy)
{
    for (size_t i = h & s->mask;; i = (i + 1) & s->mask) {
        stack_slot *t = &s->slots[i];
        uint64_t th = atomic_load_explicit(&t->hash, memory_order_acquire);
        if (th == 0)
            return 0;
        if (th == h && t->n == n && t->npy == npy &&
            memcmp(t->pcs, pcs, (n + npy) * sizeof *pcs) == 0)
            return t->id;
    }
}

static uint32_t insert(fl_stacks *s, uint64_t h, const uintptr_t *pcs, size_t n, size_t npy)
{
    pthread_mutex_lock(&s->mu);
    uint32_t id = find(s, h, pcs, n, npy); /* another thread may have won */
    uint32_t count = atomic_load_explicit(&s->published, memory_order_relaxed);
    if (id || count >= s->cfg.max_stacks) {
        pthread_mutex_unlock(&s->mu);
        if (!id)
            atomic_fetch_add_explicit(&s->overflow, 1, memory_order_relaxed);
        return id;
    }
    uintptr_t *copy = malloc((n + npy) * sizeof *copy);
    if (!copy) {
        pthread_mutex_unlock(&s->mu);
        atomic_fetch_add_explicit(&s->overflow, 1, memory_order_relaxed);
        return 0;
    }
    memcpy(copy, pcs, (n + npy) * sizeof *pcs);
    size_t i = h & s->mask;
    while (atomic_load_explicit(&s->slots[i].hash, memory_order_relaxed))
        i = (i + 1) & s->mask;
    stack_slot *t = &s->slots[i];
    id = count + 1;
    t->id = id;
    t->n = (uint32_t)n;
    t->npy = (uint32_t)npy;
    t->pcs = copy;
    s->by_id[id] = t;
    atomic_store_explicit(&t->hash, h, memory_order_release);
    atomic_store_explicit(&s->published, id, memory_order_release);
    pthread_mutex_unlock(&s->mu);
    return id;
}

/* The return addresses from the caller's own frame outwards, at most max.
 * unw_backtrace, but in ThreadSanitizer builds: libunwind frees its
 * per-thread trace cache in a thread-specific destructor that re-arms
 * itself until the last round, after TSan has retired the thread (a crash
 * in TSan's mutex interceptor at thread exit); there the same walk with
 * unw_step, which keeps no per-thread state (unw_backtrace's own fallback). */
static inline __attribute__((always_inline)) int walk(void **out, int max)
{
#if defined(__SANITIZE_THREAD__) || defined(GP_TSAN_CLANG)
    unw_context_t ctx;
    unw_cursor_t cur;
    int n = 0;
    if (unw_getcontext(&ctx) != 0 || unw_init_local(&cur, &ctx) != 0)
        return 0;
    do {
        unw_word_t ip;
        if (unw_get_reg(&cur, UNW_REG_IP, &ip) != 0)
            break;
        out[n++] = (void *)(uintptr_t)ip;
    } while (n < max && unw_step(&cur) > 0);
    return n;
#else
    return unw_backtrace(out, max);
#endif
}

__attribute__((noinline)) uint32_t fl_stacks_capture(fl_stacks *s, unsigned skip_frames)
{
    if (!s)
        return 0;
    void *raw[FL_STACK_MAX_FRAMES + 8];
    size_t skip = (size_t)skip_frames + 1; /* + this function */
    if (skip > 8)
        skip = 8;
    int got = walk(raw, (int)(FL_STACK_MAX_FRAMES + skip));
    if (got <= (int)skip)
        return 0;
    size_t n = (size_t)got - skip;
    uintptr_t pcs[FL_STACK_MAX_FRAMES + FL_PY_MAX_FRAMES];
    for (size_t i = 0; i < n; i++)
        pcs[i] = (uintptr_t)raw[skip + i];
    /* The thread's Python frames, when it runs Python and holds the GIL;
     * then the interpreter's own frames they replace are folded. */
    uintptr_t py[FL_PY_MAX_FRAMES];
    size_t npy = s->python ? fl_py_capture(py, FL_PY_MAX_FRAMES) : 0;
    if (npy) {
        n = fl_py_fold(pcs, n);
        memcpy(pcs + n, py, npy * sizeof *py);
    }
    uint64_t h = hash_pcs(pcs, n, npy);
    uint32_t id = find(s, h, pcs, n, npy);
    if (!id)
        id = insert(s, h, pcs, n, npy);
    if (id)
        atomic_fetch_add_explicit(&s->captures, 1, memory_order_relaxed);
    if (id && npy)
        atomic_fetch_add_explicit(&s->python_captures, 1, memory_order_relaxed);
    return id;
}

void fl_stacks_counts(const fl_stacks *s, fl_stacks_stats *out)
{
    memset(out, 0, sizeof *out);
    if (!s)
        return;
    out->distinct = atomic_load_explicit(&((fl_stacks *)s)->published, memory_order_acquire);
    out->overflow = atomic_load_explicit(&((fl_stacks *)s)->overflow, memory_order_relaxed);
    out->captures = atomic_load_explicit(&((fl_stacks *)s)->captures, memory_order_relaxed);
    out->python_captures =
        atomic_load_explicit(&((fl_stacks *)s)->python_captures, memory_order_relaxed);
    out->max_stacks = s->cfg.max_stacks;
}

/* ------------------------------------------------------- symbolisation */

/* One frame, resolved. */
typedef struct frame_info {
    const char *module; /* file name of the module, NULL: unknown */
    const char *name;   /* ELF symbol, NULL: unknown */
    const char *file;   /* source file, NULL: no line info */
    int line;
    uintptr_t offset; /* from the module's start */
    bool interp;      /* in CPython's module */
} frame_info;

static const Dwfl_Callbacks dwfl_callbacks = {
    .find_elf = dwfl_linux_proc_find_elf,
    .find_debuginfo = dwfl_standard_find_debuginfo,
};

/* (Re)reads the process's mappings: modules loaded since are found. */
static bool dwfl_refresh(fl_stacks *s)
{
    if (!s->dwfl) {
        s->dwfl = dwfl_begin(&dwfl_callbacks);
        if (!s->dwfl)
            return false;
    }
    dwfl_report_begin(s->dwfl);
    int r = dwfl_linux_proc_report(s->dwfl, getpid());
    dwfl_report_end(s->dwfl, NULL, NULL);
    const void *py = s->python ? fl_py_interp_addr() : NULL;
    s->py_module = py ? dwfl_addrmodule(s->dwfl, (Dwarf_Addr)(uintptr_t)py) : NULL;
    return r == 0;
}

static void resolve(fl_stacks *s, uintptr_t pc, bool *refreshed, frame_info *f)
{
    memset(f, 0, sizeof *f);
    /* A return address: the call is the byte before it. */
    Dwarf_Addr a = pc ? (Dwarf_Addr)pc - 1 : 0;
    Dwfl_Module *m = s->dwfl ? dwfl_addrmodule(s->dwfl, a) : NULL;
    if (!m && !*refreshed) {
        *refreshed = true;
        if (dwfl_refresh(s))
            m = dwfl_addrmodule(s->dwfl, a);
    }
    f->offset = pc;
    if (!m)
        return;
    Dwarf_Addr start = 0;
    f->interp = s->py_module && m == s->py_module;
    f->module = dwfl_module_info(m, NULL, &start, NULL, NULL, NULL, NULL, NULL);
    f->offset = (uintptr_t)(a + 1 - start);
    f->name = dwfl_module_addrname(m, a);
    Dwfl_Line *l = dwfl_module_getsrc(m, a);
    if (l)
        f->file = dwfl_lineinfo(l, NULL, &f->line, NULL, NULL, NULL);
}

/* The tool's frames: our modules, or the CUDA runtime's launch and
 * synchronisation paths (a static libcudart is linked into the program). */
static bool tool_frame(const fl_stacks *s, const frame_info *f)
{
    static const char *const wrappers[] = {"__device_stub",
                                           "cudaLaunch",
                                           "cudaGraphLaunch",
                                           "__cudart",
                                           "libcudart_static_",
                                           "__cudaLaunch",
                                           "cudaDeviceSynchronize",
                                           "cudaThreadSynchronize",
                                           "cudaStreamSynchronize",
                                           "cudaEventSynchronize",
                                           NULL};
    for (size_t i = 0; f->name && wrappers[i]; i++)
        if (starts(f->name, wrappers[i]))
            return true;
    const char *mod = base_name(f->module);
    for (size_t i = 0; mod && s->cfg.skip_modules && s->cfg.skip_modules[i]; i++)
        if (strstr(mod, s->cfg.skip_modules[i]))
            return true;
    return false;
}

/* One frame's text into out (cap > 0); returns its length. */
static size_t frame_text(const fl_stacks *s, const frame_info *f, char *out, size_t cap)
{
    char name[512];
    int r;
    if (f->name) {
        /* "memcpy@@GLIBC_2.14": the name without its version. */
        char plain[512];
        snprintf(plain, sizeof plain, "%.*s", (int)strcspn(f->name, "@"), f->name);
        if (s->cfg.demangle)
            s->cfg.demangle(plain, name, sizeof name);
        else
            snprintf(name, sizeof name, "%s", plain);
        if (f->file)
            r = snprintf(out, cap, "%s (%s:%d)", name, base_name(f->file), f->line);
        else
            r = snprintf(out, cap, "%s", name);
    } else {
        r = snprintf(out, cap, "%s+0x%llx", f->module ? base_name(f->module) : "?",
                     (unsigned long long)f->offset);
    }
    size_t len = r < 0 ? 0 : (size_t)r >= cap ? cap - 1 : (size_t)r;
    for (size_t i = 0; i < len; i++)
        if (out[i] == '|')
            out[i] = '/';
    return len;
}

/* pc's frame from the cache, resolved and kept there on a miss (into
 * *tmp, not kept, once the cache is 3/4 full or out of memory). */
static const frame_res *frame_of(fl_stacks *s, uintptr_t pc, bool *refreshed, frame_res *tmp,
                                 char *tmp_text)
{
    size_t mask = FRAME_CACHE - 1, i = (size_t)((pc * 0x9E3779B97F4A7C15ull) >> 40) & mask;
    if (!s->frames && !(s->frames = calloc(FRAME_CACHE, sizeof *s->frames)))
        s->n_frames = FRAME_CACHE; /* no cache: every frame resolved */
    for (; s->frames && s->frames[i].pc; i = (i + 1) & mask)
        if (s->frames[i].pc == pc)
            return &s->frames[i];
    frame_info f;
    resolve(s, pc, refreshed, &f);
    size_t len = frame_text(s, &f, tmp_text, FRAME_TEXT_MAX);
    *tmp = (frame_res){.pc = pc,
                       .text = tmp_text,
                       .len = (uint16_t)len,
                       .tool = tool_frame(s, &f),
                       .libc_start = fl_stacks_start_frame(f.name, f.module),
                       .interp = f.interp,
                       .eval = f.interp && fl_py_eval_function(f.name)};
    if (!s->frames || s->n_frames >= FRAME_CACHE / 4 * 3)
        return tmp;
    char *keep = malloc(len + 1);
    if (!keep)
        return tmp;
    memcpy(keep, tmp_text, len + 1);
    s->frames[i] = *tmp;
    s->frames[i].text = keep;
    s->n_frames++;
    return &s->frames[i];
}

/* The frames of a stack to write, innermost first. */
typedef struct frame_list {
    const char *text[FL_STACK_MAX_FRAMES + FL_PY_MAX_FRAMES];
    uint16_t len[FL_STACK_MAX_FRAMES + FL_PY_MAX_FRAMES];
    size_t n;
} frame_list;

static void list_put(frame_list *l, const char *text, size_t len)
{
    l->text[l->n] = text;
    l->len[l->n++] = (uint16_t)len;
}

static void list_put_python(fl_stacks *s, const stack_slot *t, size_t k, frame_list *l)
{
    size_t len = fl_py_frame_text(t->pcs[t->n + k], s->py_text[k], FRAME_TEXT_MAX);
    list_put(l, s->py_text[k], len);
}

/* The native frames f[lo, hi) with the stack's Python frames in place of
 * the interpreter's (stacks.h says how runs take them). */
static void merge_python(fl_stacks *s, const stack_slot *t, const frame_res *const *f, size_t lo,
                         size_t hi, frame_list *l)
{
    size_t next = 0, outer_eval = hi; /* the outermost evaluator frame */
    for (size_t i = lo; i < hi; i++)
        if (f[i]->eval)
            outer_eval = i;
    for (size_t i = lo; i < hi;) {
        if (!f[i]->interp) {
            list_put(l, f[i]->text, f[i]->len);
            i++;
            continue;
        }
        size_t j = i, evals = 0;
        for (; j < hi && f[j]->interp; j++)
            evals += f[j]->eval;
        size_t left = t->npy - next;
        bool outermost = outer_eval < hi && outer_eval >= i && outer_eval < j;
        size_t take = outermost || evals > left ? left : evals;
        for (; take; take--)
            list_put_python(s, t, next++, l);
        i = j;
    }
    while (next < t->npy)
        list_put_python(s, t, next++, l);
}

/* The text of a stack into out (FL_STACK_TEXT_MAX bytes). */
static void symbolise(fl_stacks *s, const stack_slot *t, bool *refreshed, char *out)
{
    const frame_res *f[FL_STACK_MAX_FRAMES];
    frame_res *tmp = s->tmp;
    size_t n = t->n < FL_STACK_MAX_FRAMES ? t->n : FL_STACK_MAX_FRAMES;
    for (size_t i = 0; i < n; i++)
        f[i] = frame_of(s, t->pcs[i], refreshed, &tmp[i], s->tmp_text[i]);
    size_t lo = 0, hi = n; /* innermost first: [lo, hi) kept */
    while (lo < hi && f[lo]->tool)
        lo++;
    /* With Python frames the interpreter's outermost frames go as well: a
     * stripped python executable's _start takes the name of the exported
     * symbol before it. */
    while (hi > lo && (f[hi - 1]->libc_start || (t->npy && f[hi - 1]->interp && !f[hi - 1]->eval)))
        hi--;
    frame_list l = {.n = 0};
    if (t->npy)
        merge_python(s, t, f, lo, hi, &l);
    else
        for (size_t i = lo; i < hi; i++)
            list_put(&l, f[i]->text, f[i]->len);
    /* Which frames fit, from the innermost out. */
    size_t total = 0, top = 0;
    for (size_t i = 0; i < l.n && total + l.len[i] + 1 < FL_STACK_TEXT_MAX; i++) {
        total += l.len[i] + 1;
        top = i + 1;
    }
    size_t used = 0;
    for (size_t i = top; i-- > 0;) {
        if (used)
            out[used++] = '|';
        memcpy(out + used, l.text[i], l.len[i]);
        used += l.len[i];
    }
    out[used] = '\0';
}

size_t fl_stacks_announce(fl_stacks *s, fl_stacks_emit_fn emit, void *user)
{
    if (!s || !emit)
        return 0;
    uint32_t pub = atomic_load_explicit(&s->published, memory_order_acquire);
    if (pub == s->announced)
        return 0;
    bool refreshed = false;
    if (!s->dwfl) {
        refreshed = true;
        dwfl_refresh(s);
    }
    if (!s->texts)
        s->texts = malloc(ANNOUNCE_CHUNK * sizeof *s->texts);
    if (!s->tmp)
        s->tmp = malloc(FL_STACK_MAX_FRAMES * sizeof *s->tmp);
    if (!s->tmp_text)
        s->tmp_text = malloc(FL_STACK_MAX_FRAMES * sizeof *s->tmp_text);
    if (!s->py_text)
        s->py_text = malloc(FL_PY_MAX_FRAMES * sizeof *s->py_text);
    if (!s->texts || !s->tmp || !s->tmp_text || !s->py_text)
        return 0; /* announced at the next call */
    char(*texts)[FL_STACK_TEXT_MAX] = s->texts;
    const char *ptrs[ANNOUNCE_CHUNK];
    uint32_t ids[ANNOUNCE_CHUNK];
    size_t done = 0;
    while (s->announced < pub) {
        size_t k = 0;
        for (; k < ANNOUNCE_CHUNK && s->announced < pub; k++) {
            uint32_t id = ++s->announced;
            symbolise(s, s->by_id[id], &refreshed, texts[k]);
            ids[k] = id;
            ptrs[k] = texts[k];
        }
        emit(user, ids, ptrs, k);
        done += k;
    }
    return done;
}

#endif /* GP_HAVE_STACKS */
