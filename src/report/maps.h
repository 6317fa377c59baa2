/*
 * report/maps.h - the containers the report and the exports keep a session
 * in (report/maps.c), so that their memory follows what is distinct in it,
 * never the number of events: a uint64 hash map, a pool of interned
 * strings (one stable pointer per text, so names compare by address), and
 * a log-linear histogram of durations whose percentiles are estimates
 * within FL_HIST_PCT_ERROR %.
 *
 * The histogram's add is inline here: the report calls it for every
 * kernel row.  Not exported; nothing here prints.
 */
#ifndef FL_REPORT_MAPS_H
#define FL_REPORT_MAPS_H

#include "gpu_profile.h"

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* ------------------------------------------------ distinct keys, bytes */

/*
 * The budget of a report or an export, in two caps:
 *   - distinct keys: every entry of its maps and string pools (kernel ids,
 *     dictionary ids and names, scope names and open scope instances,
 *     kernel details by kernel id and correlation id, devices, ...) is
 *     one key;
 *   - bytes kept: what those entries hold whatever their number - the
 *     strings (names, stacks, scopes: a 1 MiB stack is 1 MiB), the maps'
 *     and pools' tables, the histograms, the kernel details, the entries
 *     of the report's tables and the records it keeps whole.
 * Past either a map, pool or histogram refuses what it was asked to keep
 * (as when out of memory) and sets over / over_bytes; the consumer then
 * stops the read (fl_read_cb.stop) and says which.  The bytes counted are
 * what the process keeps besides the one line being read; with malloc's
 * own overhead the defaults hold a report to about 0.5 GiB resident
 * (docs/report.md, "Bounds", measured by tests/cli/test_cli_memory.c).
 */
#define FL_MAX_DISTINCT_DEFAULT ((uint64_t)1 << 20)
#define FL_MAX_DISTINCT_ENV "GPU_PROFILE_MAX_DISTINCT"
#define FL_MAX_MEMORY_DEFAULT ((uint64_t)384 << 20)
#define FL_MAX_MEMORY_ENV "GPU_PROFILE_MAX_MEMORY"
/* What malloc keeps beside each block it gives (its header, alignment):
 * counted with every string and entry, so many small names cost what
 * they do. */
#define FL_MALLOC_OVERHEAD_BYTES 16u
typedef struct fl_keys {
    uint64_t n, max;           /* keys; max 0: no cap */
    uint64_t bytes, max_bytes; /* bytes kept; max_bytes 0: no cap */
    bool over, over_bytes;
} fl_keys;
/* One more key; false (over set) past the cap. */
static inline bool fl_keys_take(fl_keys *k)
{
    if (!k)
        return true;
    if (k->max && k->n >= k->max) {
        k->over = true;
        return false;
    }
    k->n++;
    return true;
}
/* bytes more kept; false (over_bytes set, nothing counted) past the cap. */
static inline bool fl_keys_charge(fl_keys *k, size_t bytes)
{
    if (!k)
        return true;
    if (k->max_bytes && (k->bytes + bytes > k->max_bytes || bytes > k->max_bytes)) {
        k->over_bytes = true;
        return false;
    }
    k->bytes += bytes;
    return true;
}
/* bytes no longer kept (given back as fl_keys_charge took them). */
static inline void fl_keys_refund(fl_keys *k, size_t bytes)
{
    if (k)
        k->bytes -= bytes < k->bytes ? bytes : k->bytes;
}
/* Both caps from the environment: GPU_PROFILE_MAX_DISTINCT and
 * GPU_PROFILE_MAX_MEMORY when set (whole numbers from 1), else the
 * defaults; nothing else counted.  A bad value keeps the default and
 * fails (GP_ERR_INVALID_ARG, naming the variable: fl_env_count). */
gp_status fl_keys_from_env(fl_keys *k, gp_error *err);
/* Why a read must stop for k, said for cmd ("report", "export": whose
 * limit, and the option that raises it) into buf: past the bytes, past
 * the keys (what - the kinds of keys cmd keeps), or out of memory (oom);
 * false (buf untouched) when none of these. */
bool fl_keys_why(const fl_keys *k, bool oom, const char *cmd, const char *what, char *buf,
                 size_t cap);

/* ------------------------------------------------------------ hash map */

/* uint64 -> two uint64 (a hash map; entries move when it grows).  Its
 * table's growth is charged to the budget's bytes. */
typedef struct fl_mval {
    uint64_t a, b;
} fl_mval;
typedef struct fl_u64map {
    uint64_t *keys;
    fl_mval *vals;
    uint8_t *used;   /* used[i]: slot i holds keys[i] / vals[i] */
    size_t cap, n;   /* cap: 0 or a power of two */
    fl_keys *budget; /* NULL: none; else every entry is one of its keys */
} fl_u64map;
/* The value of key; NULL if absent. */
fl_mval *fl_map_find(const fl_u64map *m, uint64_t key);
/* The value of key, inserted zeroed (*fresh = true) if absent; NULL when
 * out of memory or past the budget's cap.  Pointers into the map are valid
 * until the next put. */
fl_mval *fl_map_put(fl_u64map *m, uint64_t key, bool *fresh);
void fl_map_del(fl_u64map *m, uint64_t key);
void fl_map_clear(fl_u64map *m);
/* At the owner's end: frees the map, its budget untouched (and dropped). */
void fl_map_free(fl_u64map *m);
size_t fl_map_bytes(const fl_u64map *m);

/* -------------------------------------------------------- string pool */

/* Strings kept once for the life of their owner; stable pointers.  Each
 * string and the table's growth are charged to the budget's bytes. */
typedef struct fl_strpool {
    char **slots;
    size_t cap, n, bytes;
    fl_keys *budget; /* NULL: none; else every string is one of its keys */
} fl_strpool;
/* The pool's copy of s (NULL: s is NULL, out of memory, or past the
 * budget's cap). */
const char *fl_pool_intern(fl_strpool *p, const char *s);
/* At the owner's end, as fl_map_free. */
void fl_pool_free(fl_strpool *p);
/* A copy of s of its own (not interned: its owner frees it), NULL for
 * NULL; out of memory, NULL and *oom set. */
char *fl_dup_str(const char *s, bool *oom);
size_t fl_pool_bytes(const fl_strpool *p);

/* ---------------------------------------------------------- histogram */

/*
 * Durations in ns, log-linear: values below 32 exactly, each power of two
 * above in 32 equal sub-buckets.  A bucket [lo, lo + w) has w <= lo / 32,
 * and a percentile is given as the bucket's middle, so it is within
 * w / 2 / lo <= 1/64 = 1.5625 % of the true nearest-rank value (and then
 * clamped into [min, max]).  The range of octaves reached is allocated,
 * in one array grown as needed: 288 bytes an octave, a few per kernel
 * (durations seldom span more than 2^10).  A bucket's count is in two
 * counters: a byte, which a value counts in, and a 64-bit counter, which
 * takes 256 whenever the byte wraps - so that the bytes a run of values
 * touches (an eighth of the footprint: 256 bytes a kernel for 1-100 us)
 * stay in the cache with many kernels.
 */
#define FL_HIST_SUB 32
#define FL_HIST_PCT_ERROR 1.6 /* what the report says of its percentiles */

typedef struct fl_hist {
    /* The counters of octaves lo .. lo + n - 1, FL_HIST_SUB each, in one
     * array (one load from the owner to the counter): n * FL_HIST_SUB
     * 64-bit counters, then as many bytes (fl_hist_low; a bucket counts
     * c[i] + low[i]); grown to take in an octave outside. */
    uint64_t *c;
    uint8_t lo, n;
} fl_hist;

/* fl_hist_add's rare path: octave o is outside the array (its growth
 * charged to budget's bytes; NULL: none). */
bool fl_hist_add_grow(fl_hist *h, size_t o, size_t sub, fl_keys *budget);

/* v's counter among all octaves' (octave * FL_HIST_SUB + sub-bucket): v
 * < 32: octave 0, sub-bucket v; else octave e - 4, the 5 bits below the
 * top one (e = floor(log2 v)).  Both are 32 s + (v >> s) for s = e - 5
 * (0 below 32), without a branch. */
static inline __attribute__((always_inline)) size_t fl_hist_index(uint64_t v)
{
    /* 63 ^ clz is the top bit's index (one bsr, whatever the caller) */
    unsigned s = (unsigned)(63 ^ __builtin_clzll(v | FL_HIST_SUB)) - 5u; /* 0..58 */
    return ((size_t)s * FL_HIST_SUB) + (size_t)(v >> s);
}

/* The low bytes of the counters (after the 64-bit ones). */
static inline __attribute__((always_inline)) uint8_t *fl_hist_low(const fl_hist *h)
{
    return (uint8_t *)(h->c + (size_t)h->n * FL_HIST_SUB);
}

/* Counts one in the bucket whose low byte is at low and 64-bit counter at
 * c. */
static inline __attribute__((always_inline)) void fl_hist_count(uint8_t *low, uint64_t *c)
{
    if (__builtin_expect(!++*low, 0))
        *c += 256;
}

/* Counts v; false when out of memory or past budget's bytes (the growth
 * of the array is charged to budget; NULL: none). */
static inline __attribute__((always_inline)) bool fl_hist_add(fl_hist *h, uint64_t v,
                                                              fl_keys *budget)
{
    size_t b = fl_hist_index(v);
    size_t i = b - (size_t)h->lo * FL_HIST_SUB; /* wraps when below lo */
    if (__builtin_expect(i >= (size_t)h->n * FL_HIST_SUB, 0))
        return fl_hist_add_grow(h, b / FL_HIST_SUB, b % FL_HIST_SUB, budget);
    fl_hist_count(fl_hist_low(h) + i, h->c + i);
    return true;
}

/* v's bucket among h's counters (h->c[i], fl_hist_low(h)[i]), to be
 * counted later (fl_hist_count); SIZE_MAX when it is not allocated yet
 * (then fl_hist_add allocates it).  Valid until h grows. */
static inline __attribute__((always_inline)) size_t fl_hist_slot(const fl_hist *h, uint64_t v)
{
    size_t i = fl_hist_index(v) - (size_t)h->lo * FL_HIST_SUB;
    return i < (size_t)h->n * FL_HIST_SUB ? i : SIZE_MAX;
}

void fl_hist_free(fl_hist *h);
size_t fl_hist_bytes(const fl_hist *h);
/* The nearest-rank p-th percentile (0 < p <= 100) of n values, estimated;
 * clamped into [lo, hi]. */
uint64_t fl_hist_pct(const fl_hist *h, uint64_t n, double p, uint64_t lo, uint64_t hi);

#endif /* FL_REPORT_MAPS_H */
