/*
 * recorder/scope.c - the scope hot path.
 *
 * Promises: gpufl_scope_begin/end take no lock and make no system call in
 * the common case (a CLOCK_REALTIME read through the vDSO, a thread-local
 * name cache, a store into the calling thread's own ring); any thread may
 * open scopes at any time, before init and after shutdown included (they
 * are then no-ops); nothing a producer can still touch is ever freed while
 * it may touch it (interned names live as long as the process, a ring is
 * freed only after its thread has exited).  A full ring drops the row and
 * counts it: the application is never blocked by the recorder.  The names
 * are bounded (FL_SCOPE_NAMES_MAX, FL_SCOPE_NAME_BYTES_MAX for the
 * process's life): a scope named beyond them is recorded under
 * FL_SCOPE_OVERFLOW_NAME and counted, so no name costs memory without
 * end.
 */
#include "scope.h"
#include "../abi/trace_abi.h"
#include "../wire/records.h"
#include "gpufl.h"

#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#if defined(__x86_64__)
#include <x86intrin.h>
#endif

/* 16384 rows of 32 bytes: 512 KiB per thread that uses scopes; the writer
 * is kicked at half, so a thread may open ~8000 scopes between two of its
 * cycles before anything is dropped. */
#define RING_CAP 16384u
#define RING_MASK (RING_CAP - 1u)
#define ID_BLOCK 4096u
#define NAME_CACHE 64u

/* A slot is the row itself, 32 bytes (two per cache line); its pad_ byte
 * carries the low bits of the session generation, so a row that a late
 * producer published for an ended session is recognised and dropped. */
typedef fl_scope_row slot;
_Static_assert(sizeof(fl_scope_row) == 32, "two scope rows per cache line");

typedef struct name_cache_entry {
    const char *ptr;  /* the caller's pointer */
    const char *name; /* the interned copy */
    uint32_t id;
    uint32_t gen;
} name_cache_entry;

typedef struct tls_state {
    uint32_t gen; /* the session the fields below belong to */
    struct ring *r;
    uint64_t cached_tail; /* a stale tail is safe: it only underestimates space */
    uint64_t next_id, end_id;
    uint32_t depth;
    uint32_t stack[FL_SCOPE_PATH_MAX]; /* name ids of the open scopes (kernel attribution) */
    name_cache_entry cache[NAME_CACHE];
} tls_state;

typedef struct ring {
    _Alignas(64) _Atomic uint64_t head; /* written by the owner thread */
    /* Outermost scopes begun minus ended on this thread: a plain store by
     * the owner, summed over the rings by the sampler's gate, so no cache
     * line is shared between producers. */
    _Atomic int64_t outer_open;
    _Alignas(64) _Atomic uint64_t tail; /* written by the writer thread */
    _Alignas(64) _Atomic uint64_t dropped;
    _Atomic int dead; /* the owner thread has exited */
    uint32_t tid;     /* the owner's gettid(), set before the ring is shared */
    struct ring *next;
    tls_state owner; /* the owner thread's state, reached through tls */
    slot slots[RING_CAP];
} ring;

/* One pointer of thread-local storage, initial-exec: no __tls_get_addr
 * call on the hot path, and small enough for the static TLS that glibc
 * keeps for libraries loaded with dlopen. */
static _Thread_local ring *tls __attribute__((tls_model("initial-exec")));

/* Read on every scope call: kept on a line of their own, away from the
 * mutex the writer takes. */
static struct {
    _Alignas(64) _Atomic uint32_t gen;
    _Atomic int count_active;
    _Atomic int use_tsc; /* this session's rows carry TSC ticks, not ns */
    /* Wakes the session's writer (fl_scope_session_begin); a callback, so
     * the hot path knows nothing of the session. */
    void (*_Atomic kick)(void);
} g_hot;

static void kick_writer(void)
{
    void (*kick)(void) = atomic_load_explicit(&g_hot.kick, memory_order_relaxed);
    if (kick)
        kick();
}
static _Atomic uint64_t g_next_instance = 1;

/* Registry of rings and the intern table: the slow paths only. */
static pthread_mutex_t g_mu = PTHREAD_MUTEX_INITIALIZER;
static ring *g_rings;
static pthread_key_t g_key;
static pthread_once_t g_key_once = PTHREAD_ONCE_INIT;
static uint64_t g_dropped_base; /* dropped by rings freed this session */
static int64_t g_open_base;     /* outer_open of rings freed this session */

typedef struct intern {
    char *name;
    uint32_t id; /* in session gen */
    uint32_t gen;
} intern;
static intern *g_names; /* open addressing, g_names_cap a power of two */
static size_t g_names_cap, g_names_used;
static size_t g_name_bytes;   /* of the names' text, NULs included */
static uint64_t g_names_over; /* scopes named beyond the limits, this session */
static uint32_t g_next_name_id;
static intern **g_pending; /* interned this session, not yet taken by the writer */
static intern **g_by_id;   /* this session's names by id (user_scope) */
static size_t g_by_id_cap;
static size_t g_pending_n, g_pending_cap;

static void thread_exit(void *p)
{
    ring *r = p;
    if (r)
        atomic_store_explicit(&r->dead, 1, memory_order_release);
}

static void make_key(void)
{
    pthread_key_create(&g_key, thread_exit);
}

static uint64_t wall_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

/* The hot path's clock.  Where the kernel itself keeps time with the TSC
 * (so it is invariant and synchronised across CPUs), one rdtsc is a third
 * of a vDSO clock_gettime; the writer maps ticks onto wall-clock ns
 * between anchors it takes at each drain.  Elsewhere: CLOCK_REALTIME. */
static inline uint64_t now_ticks(void)
{
#if defined(__x86_64__)
    if (atomic_load_explicit(&g_hot.use_tsc, memory_order_relaxed))
        return __rdtsc();
#endif
    return wall_ns();
}

static bool kernel_uses_tsc(void)
{
#if defined(__x86_64__)
    FILE *f = fopen("/sys/devices/system/clocksource/clocksource0/current_clocksource", "re");
    char src[32] = "";
    if (f) {
        if (!fgets(src, sizeof src, f))
            src[0] = '\0';
        fclose(f);
    }
    return strcmp(src, "tsc\n") == 0;
#else
    return false;
#endif
}

/* Ticks -> wall ns, piecewise linear between anchors (writer thread). */
typedef struct anchor {
    uint64_t tsc, wall;
} anchor;
static struct {
    bool tsc;
    anchor prev;
    double slope; /* ns per tick of the last segment; 0 until known */
} g_conv;

/* A (tsc, wall) pair taken close together: the narrowest of three tries. */
static anchor take_anchor(void)
{
    anchor best = {0, 0};
#if defined(__x86_64__)
    uint64_t best_width = UINT64_MAX;
    for (int i = 0; i < 3; i++) {
        uint64_t a = __rdtsc();
        uint64_t w = wall_ns();
        uint64_t b = __rdtsc();
        if (b - a < best_width) {
            best_width = b - a;
            best.tsc = a + (b - a) / 2;
            best.wall = w;
        }
    }
#else
    best.wall = wall_ns();
#endif
    return best;
}

static uint64_t to_wall(const anchor *a, double slope, uint64_t t)
{
    double d = (double)(int64_t)(t - a->tsc) * slope;
    return a->wall + (uint64_t)(int64_t)(d < 0 ? d - 0.5 : d + 0.5);
}

/* First scope of this thread in session gen: a ring (kept across
 * sessions), a fresh depth, cache and id block. */
static tls_state *attach(uint32_t gen)
{
    if (!tls) {
        pthread_once(&g_key_once, make_key);
        /* aligned_alloc: the head, tail and counters sit on their own cache lines. */
        ring *r = aligned_alloc(64, sizeof(ring));
        if (!r)
            return NULL;
        memset(r, 0, sizeof *r);
        /* The thread's id for the rows' tid column: taken once, here, so
         * the hot path does not pay for it. */
        r->tid = (uint32_t)gettid();
        pthread_mutex_lock(&g_mu);
        r->next = g_rings;
        g_rings = r;
        pthread_mutex_unlock(&g_mu);
        pthread_setspecific(g_key, r);
        r->owner.r = r;
        tls = r;
    }
    tls_state *t = &tls->owner;
    t->gen = gen;
    t->depth = 0;
    t->next_id = t->end_id = 0;
    memset(t->cache, 0, sizeof t->cache);
    return t;
}

/* The calling thread's state for session gen, NULL if it cannot have one. */
static inline tls_state *state_for(uint32_t gen)
{
    ring *r = tls;
    if (r && r->owner.gen == gen)
        return &r->owner;
    return attach(gen);
}

static uint64_t hash_str(const char *s)
{
    uint64_t h = 1469598103934665603ull; /* FNV-1a */
    for (; *s; s++)
        h = (h ^ (unsigned char)*s) * 1099511628211ull;
    return h;
}

static bool grow_names(void)
{
    size_t cap = g_names_cap ? g_names_cap * 2 : 256;
    intern *n = calloc(cap, sizeof *n);
    if (!n)
        return false;
    for (size_t i = 0; i < g_names_cap; i++) {
        if (!g_names[i].name)
            continue;
        size_t j = hash_str(g_names[i].name) & (cap - 1);
        while (n[j].name)
            j = (j + 1) & (cap - 1);
        n[j] = g_names[i];
    }
    /* Pending entries point into the old table: re-point them. */
    for (size_t k = 0; k < g_pending_n; k++) {
        size_t j = hash_str(g_pending[k]->name) & (cap - 1);
        while (n[j].name != g_pending[k]->name)
            j = (j + 1) & (cap - 1);
        g_pending[k] = &n[j];
    }
    free(g_names);
    g_names = n;
    g_names_cap = cap;
    return true;
}

/* The entry of name in the table (the table has room: see intern_name). */
static intern *lookup(const char *name)
{
    size_t j = hash_str(name) & (g_names_cap - 1);
    while (g_names[j].name && strcmp(g_names[j].name, name) != 0)
        j = (j + 1) & (g_names_cap - 1);
    return &g_names[j];
}

/* A name not in the table yet: its entry filled, or - beyond the limits -
 * the overflow name's (the last of the FL_SCOPE_NAMES_MAX, kept for it),
 * counted.  NULL when out of memory. */
static intern *add_name(intern *e, const char *name, bool *over)
{
    size_t len = strlen(name) + 1;
    /* g_name_bytes may pass the limit by the overflow name's length. */
    *over = g_names_used + 1 >= FL_SCOPE_NAMES_MAX || g_name_bytes + len > FL_SCOPE_NAME_BYTES_MAX;
    if (*over) {
        g_names_over++;
        e = lookup(FL_SCOPE_OVERFLOW_NAME);
        if (e->name)
            return e;
        name = FL_SCOPE_OVERFLOW_NAME;
        len = sizeof FL_SCOPE_OVERFLOW_NAME;
    }
    e->name = malloc(len);
    if (!e->name)
        return NULL;
    memcpy(e->name, name, len);
    g_names_used++;
    g_name_bytes += len;
    return e;
}

/* Doubles a table of names (from 64), leaving it as it was when memory
 * runs out. */
static bool grow_ptrs(intern ***v, size_t *cap)
{
    size_t c = *cap ? *cap * 2 : 64;
    intern **p = realloc(*v, c * sizeof *p);
    if (!p)
        return false;
    *v = p;
    *cap = c;
    return true;
}

/* The slow path: the global table, under the registry lock.  Returns the
 * name's id in session gen (0 on allocation failure) and its interned copy
 * (NULL when the name was beyond the limits: the overflow name's id). */
static uint32_t intern_name(const char *name, uint32_t gen, const char **interned)
{
    uint32_t id = 0;
    bool over = false;
    *interned = NULL;
    pthread_mutex_lock(&g_mu);
    if (gen != atomic_load_explicit(&g_hot.gen, memory_order_relaxed))
        goto out; /* the session ended meanwhile */
    /* At most FL_SCOPE_NAMES_MAX entries: the table stops growing there. */
    if (g_names_used < FL_SCOPE_NAMES_MAX && (g_names_used + 1) * 2 > g_names_cap && !grow_names())
        goto out;
    intern *e = lookup(name);
    if (!e->name && !(e = add_name(e, name, &over)))
        goto out;
    if (e->gen != gen) {
        if ((g_pending_n == g_pending_cap && !grow_ptrs(&g_pending, &g_pending_cap)) ||
            (g_next_name_id + 1 >= g_by_id_cap && !grow_ptrs(&g_by_id, &g_by_id_cap)))
            goto out;
        e->gen = gen;
        e->id = ++g_next_name_id;
        g_by_id[e->id] = e;
        g_pending[g_pending_n++] = e;
    }
    id = e->id;
    if (!over)
        *interned = e->name;
out:
    pthread_mutex_unlock(&g_mu);
    return id;
}

static uint32_t name_id(tls_state *t, const char *name)
{
    name_cache_entry *c = &t->cache[((uintptr_t)name >> 3) & (NAME_CACHE - 1)];
    /* Same pointer and same text: a pointer alone could be a reused buffer. */
    if (c->ptr == name && c->gen == t->gen && strcmp(c->name, name) == 0)
        return c->id;
    const char *interned = NULL;
    uint32_t id = intern_name(name, t->gen, &interned);
    if (interned) { /* a name beyond the limits is counted at every scope */
        c->ptr = name;
        c->name = interned;
        c->id = id;
        c->gen = t->gen;
    }
    return id;
}

static void push(tls_state *t, const fl_scope_row *row)
{
    ring *r = t->r;
    uint64_t h = atomic_load_explicit(&r->head, memory_order_relaxed);
    if (h - t->cached_tail >= RING_CAP) {
        t->cached_tail = atomic_load_explicit(&r->tail, memory_order_acquire);
        if (h - t->cached_tail >= RING_CAP) {
            atomic_fetch_add_explicit(&r->dropped, 1, memory_order_relaxed);
            kick_writer();
            return;
        }
    }
    /* The line a few rows ahead is still in the writer's cache from its
     * last drain: ask for it now, so the store below does not wait. */
    __builtin_prefetch(&r->slots[(h + 8) & RING_MASK], 1, 3);
    slot *s = &r->slots[h & RING_MASK];
    *s = *row;
    s->pad_ = (uint8_t)t->gen;
    atomic_store_explicit(&r->head, h + 1, memory_order_release);
    if (h - t->cached_tail == RING_CAP / 2)
        kick_writer();
}

/* The range profiler's hooks at outermost scopes (fl_scope_set_range_hooks):
 * NULL unless a RangeProfiler session runs, so the hot path pays one
 * relaxed load per outermost scope. */
static void (*_Atomic g_range_begin)(const char *name);
static void (*_Atomic g_range_end)(void);

void fl_scope_set_range_hooks(void (*begin)(const char *name), void (*end)(void))
{
    atomic_store_explicit(&g_range_end, end, memory_order_release);
    atomic_store_explicit(&g_range_begin, begin, memory_order_release);
}

/* Only the owner thread writes its counter: a load and a store, no
 * locked read-modify-write. */
static void add_open(ring *r, int64_t d)
{
    int64_t v = atomic_load_explicit(&r->outer_open, memory_order_relaxed);
    atomic_store_explicit(&r->outer_open, v + d, memory_order_relaxed);
}

/* A begin row with benchmark metadata (gpufl_scope_begin_bench) carries
 * repeat and warmup where its original_start_ns would be - on a begin row
 * that is its own t_ns, put back when the row is drained - so a row stays
 * 32 bytes; this bit of its event_type says so. */
#define BENCH_ROW 0x80u

static gpufl_scope scope_begin(const char *name, uint32_t repeat, uint32_t warmup)
{
    gpufl_scope s;
    memset(&s, 0, sizeof s);
    uint32_t gen = atomic_load_explicit(&g_hot.gen, memory_order_acquire);
    if (!gen || !name)
        return s;
    tls_state *t = state_for(gen);
    if (!t)
        return s;
    uint32_t nid = name_id(t, name);
    if (!nid)
        return s;
    if (t->next_id == t->end_id) {
        t->next_id = atomic_fetch_add_explicit(&g_next_instance, ID_BLOCK, memory_order_relaxed);
        t->end_id = t->next_id + ID_BLOCK;
    }
    s.instance_id = t->next_id++;
    s.name_id = nid;
    s.generation = gen;
    s.depth = t->depth++;
    if (s.depth < FL_SCOPE_PATH_MAX)
        t->stack[s.depth] = nid;
    s.start_ticks = now_ticks();
    if (s.depth == 0 && atomic_load_explicit(&g_hot.count_active, memory_order_relaxed))
        add_open(t->r, 1);
    bool bench = repeat || warmup;
    fl_scope_row row = {.t_ns = s.start_ticks,
                        .instance_id = s.instance_id,
                        .original_start_ns =
                            bench ? (uint64_t)repeat << 32 | warmup : s.start_ticks,
                        .name_id = nid,
                        .depth = (uint16_t)(s.depth > UINT16_MAX ? UINT16_MAX : s.depth),
                        .event_type = (uint8_t)(FL_SCOPE_BEGIN | (bench ? BENCH_ROW : 0))};
    push(t, &row);
    if (s.depth == 0) {
        void (*rb)(const char *) = atomic_load_explicit(&g_range_begin, memory_order_acquire);
        if (rb)
            rb(name);
    }
    return s;
}

gpufl_scope gpufl_scope_begin(const char *name)
{
    return scope_begin(name, 0, 0);
}

gpufl_scope gpufl_scope_begin_bench(const char *name, uint32_t repeat, uint32_t warmup)
{
    return scope_begin(name, repeat, warmup);
}

void gpufl_scope_end(gpufl_scope *scope)
{
    if (!scope || !scope->instance_id)
        return;
    gpufl_scope s = *scope;
    scope->instance_id = 0;
    uint32_t gen = atomic_load_explicit(&g_hot.gen, memory_order_acquire);
    if (s.generation != gen)
        return; /* begun in another session, or after shutdown */
    tls_state *t = state_for(gen);
    if (!t)
        return;
    if (s.depth == 0) {
        void (*re)(void) = atomic_load_explicit(&g_range_end, memory_order_acquire);
        if (re)
            re();
    }
    uint64_t end = now_ticks();
    /* Ended on the thread that began it, innermost first: the usual case.
     * Anything else keeps this thread's depth as it is. */
    if (t->depth == s.depth + 1)
        t->depth = s.depth;
    if (s.depth == 0 && atomic_load_explicit(&g_hot.count_active, memory_order_relaxed))
        add_open(t->r, -1);
    fl_scope_row row = {.t_ns = end,
                        .instance_id = s.instance_id,
                        .original_start_ns = s.start_ticks,
                        .name_id = s.name_id,
                        .depth = (uint16_t)(s.depth > UINT16_MAX ? UINT16_MAX : s.depth),
                        .event_type = FL_SCOPE_END};
    push(t, &row);
}

void gpufl_monitor(const char *name, void (*fn)(void *user), void *user)
{
    gpufl_scope s = gpufl_scope_begin(name);
    if (fn)
        fn(user);
    gpufl_scope_end(&s);
}

void fl_scope_session_begin(uint32_t gen, bool count_active, bool no_tsc, void (*kick)(void))
{
    pthread_mutex_lock(&g_mu);
    /* Whatever a late producer left from an earlier session is discarded. */
    for (ring *r = g_rings; r; r = r->next) {
        atomic_store_explicit(&r->tail, atomic_load_explicit(&r->head, memory_order_acquire),
                              memory_order_release);
        atomic_store_explicit(&r->dropped, 0, memory_order_relaxed);
        atomic_store_explicit(&r->outer_open, 0, memory_order_relaxed);
    }
    g_pending_n = 0;
    g_next_name_id = 0;
    g_names_over = 0;
    g_dropped_base = 0;
    g_open_base = 0;
    atomic_store_explicit(&g_hot.count_active, count_active ? 1 : 0, memory_order_relaxed);
    atomic_store_explicit(&g_hot.kick, kick, memory_order_relaxed);
    atomic_store_explicit(&g_next_instance, 1, memory_order_relaxed);
    g_conv.tsc = !no_tsc && kernel_uses_tsc();
    g_conv.prev = take_anchor();
    g_conv.slope = 0;
    atomic_store_explicit(&g_hot.use_tsc, g_conv.tsc ? 1 : 0, memory_order_relaxed);
    atomic_store_explicit(&g_hot.gen, gen, memory_order_release);
    pthread_mutex_unlock(&g_mu);
}

void fl_scope_after_fork_child(void)
{
    /* The child has no writer: its scopes are no-ops, and the locks a
     * parent thread may have held at fork() are made usable again. */
    atomic_store_explicit(&g_hot.gen, 0, memory_order_relaxed);
    atomic_store_explicit(&g_hot.count_active, 0, memory_order_relaxed);
    pthread_mutex_init(&g_mu, NULL);
    /* The forking thread's ring came along: it is another thread now. */
    if (tls)
        tls->tid = (uint32_t)gettid();
}

void fl_scope_session_end(void)
{
    pthread_mutex_lock(&g_mu);
    atomic_store_explicit(&g_hot.gen, 0, memory_order_release);
    atomic_store_explicit(&g_hot.count_active, 0, memory_order_relaxed);
    pthread_mutex_unlock(&g_mu);
}

/* Rows drained now were stamped before this anchor (or a hair after):
 * interpolate on the segment from the previous anchor, which makes the
 * mapping exact at every anchor and follows the wall clock's own rate. */
static void convert_ticks(fl_scope_event *rows, size_t n)
{
    anchor now = take_anchor();
    const anchor *a = &g_conv.prev;
    if (now.tsc > a->tsc && now.wall > a->wall)
        g_conv.slope = (double)(now.wall - a->wall) / (double)(now.tsc - a->tsc);
    /* Else (the wall clock was set back): keep the last good rate. */
    double slope = g_conv.slope > 0 ? g_conv.slope : 1.0;
    for (size_t i = 0; i < n; i++) {
        rows[i].row.t_ns = to_wall(a, slope, rows[i].row.t_ns);
        rows[i].row.original_start_ns = to_wall(a, slope, rows[i].row.original_start_ns);
    }
    if (now.wall > a->wall)
        g_conv.prev = now;
}

size_t fl_scope_drain(uint32_t gen, fl_scope_event **rows, size_t n, size_t *cap)
{
    pthread_mutex_lock(&g_mu);
    size_t first = n;
    ring **link = &g_rings;
    while (*link) {
        ring *r = *link;
        /* dead is read before head: a thread's last rows are published
         * before it is marked dead, so they are drained before it is freed. */
        int dead = atomic_load_explicit(&r->dead, memory_order_acquire);
        uint64_t h = atomic_load_explicit(&r->head, memory_order_acquire);
        uint64_t t = atomic_load_explicit(&r->tail, memory_order_relaxed);
        if (h - t > 0 && n + (h - t) > *cap) {
            size_t want = *cap ? *cap : 4096;
            while (want < n + (h - t))
                want *= 2;
            fl_scope_event *p = realloc(*rows, want * sizeof *p);
            if (p) {
                *rows = p;
                *cap = want;
            } else {
                /* Out of memory: count the rows as dropped and move on. */
                atomic_fetch_add_explicit(&r->dropped, h - t, memory_order_relaxed);
                t = h;
            }
        }
        for (; t != h; t++) {
            const slot *s = &r->slots[t & RING_MASK];
            if (s->pad_ == (uint8_t)gen && gen) {
                fl_scope_event *e = &(*rows)[n++];
                e->row = *s;
                e->row.pad_ = 0;
                e->tid = r->tid;
                e->repeat = e->warmup = 0;
                if (e->row.event_type & BENCH_ROW) {
                    e->repeat = (uint32_t)(e->row.original_start_ns >> 32);
                    e->warmup = (uint32_t)e->row.original_start_ns;
                    e->row.original_start_ns = e->row.t_ns;
                    e->row.event_type = FL_SCOPE_BEGIN;
                }
            }
        }
        atomic_store_explicit(&r->tail, h, memory_order_release);
        if (dead) {
            *link = r->next;
            g_dropped_base += atomic_load_explicit(&r->dropped, memory_order_relaxed);
            g_open_base += atomic_load_explicit(&r->outer_open, memory_order_relaxed);
            free(r);
            continue;
        }
        link = &r->next;
    }
    pthread_mutex_unlock(&g_mu);
    if (g_conv.tsc)
        convert_ticks(*rows + first, n - first);
    return n;
}

size_t fl_scope_take_names(fl_dict_entry **out, size_t *cap)
{
    pthread_mutex_lock(&g_mu);
    size_t n = g_pending_n;
    if (n > *cap) {
        fl_dict_entry *p = realloc(*out, n * sizeof *p);
        if (!p) {
            pthread_mutex_unlock(&g_mu);
            return 0; /* kept pending: taken at the next cycle */
        }
        *out = p;
        *cap = n;
    }
    for (size_t i = 0; i < n; i++) {
        (*out)[i].id = g_pending[i]->id;
        (*out)[i].name = g_pending[i]->name;
    }
    g_pending_n = 0;
    pthread_mutex_unlock(&g_mu);
    return n;
}

uint64_t fl_scope_names_over(void)
{
    pthread_mutex_lock(&g_mu);
    uint64_t n = g_names_over;
    pthread_mutex_unlock(&g_mu);
    return n;
}

/* The session's counts over every ring, live and freed, in one walk:
 * the rows dropped, *open the outermost scopes still open. */
static uint64_t ring_totals(int64_t *open)
{
    pthread_mutex_lock(&g_mu);
    uint64_t d = g_dropped_base;
    *open = g_open_base;
    for (ring *r = g_rings; r; r = r->next) {
        d += atomic_load_explicit(&r->dropped, memory_order_relaxed);
        *open += atomic_load_explicit(&r->outer_open, memory_order_relaxed);
    }
    pthread_mutex_unlock(&g_mu);
    return d;
}

uint64_t fl_scope_dropped(void)
{
    int64_t open;
    return ring_totals(&open);
}

bool fl_scope_any_open(void)
{
    int64_t open;
    ring_totals(&open);
    return open > 0;
}

uint32_t fl_scope_intern(uint32_t gen, const char *name)
{
    const char *interned;
    return name ? intern_name(name, gen, &interned) : 0;
}

size_t fl_scope_current_path(uint32_t *ids, size_t cap)
{
    /* The calling thread's own state, read without a lock: only this
     * thread writes it.  No ring yet, or one of another session: none. */
    ring *r = tls;
    uint32_t gen = atomic_load_explicit(&g_hot.gen, memory_order_acquire);
    if (!r || !gen || r->owner.gen != gen)
        return 0;
    size_t n = r->owner.depth;
    if (n > cap)
        n = cap;
    if (n > FL_SCOPE_PATH_MAX)
        n = FL_SCOPE_PATH_MAX;
    memcpy(ids, r->owner.stack, n * sizeof *ids);
    return n;
}

const char *fl_scope_name_of(uint32_t gen, uint32_t id)
{
    const char *name = NULL;
    pthread_mutex_lock(&g_mu);
    if (id >= 1 && id <= g_next_name_id && g_by_id && g_by_id[id]->gen == gen)
        name = g_by_id[id]->name;
    pthread_mutex_unlock(&g_mu);
    return name;
}
