/*
 * report/maps.c - the report's containers (maps.h): a hash map, a string
 * pool and a histogram, each grown on demand and freed whole, so a
 * session's memory is bounded by what is distinct in it.
 */
#include "maps.h"

#include "../reader/read.h"

#include <inttypes.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* ======================================================= distinct keys */

gp_status fl_keys_from_env(fl_keys *k, gp_error *err)
{
    uint64_t n = 0, bytes = 0;
    gp_status st = fl_env_count(FL_MAX_DISTINCT_ENV, &n, err);
    if (st == GP_OK)
        st = fl_env_count(FL_MAX_MEMORY_ENV, &bytes, err);
    k->max = n ? n : FL_MAX_DISTINCT_DEFAULT;
    k->max_bytes = bytes ? bytes : FL_MAX_MEMORY_DEFAULT;
    return st;
}

bool fl_keys_why(const fl_keys *k, bool oom, const char *cmd, const char *what, char *buf,
                 size_t cap)
{
    if (k->over_bytes)
        snprintf(buf, cap,
                 "more than %" PRIu64 " bytes kept (names, stacks, scopes, kernel details, "
                 "tables: the %s's limit of memory); raise it with " FL_MAX_MEMORY_ENV
                 "=N (gpu-profile %s --max-memory N)",
                 k->max_bytes, cmd, cmd);
    else if (k->over)
        snprintf(buf, cap,
                 "more than %" PRIu64
                 " distinct keys (%s: the %s's limit); raise it with " FL_MAX_DISTINCT_ENV
                 "=N (gpu-profile %s --max-distinct N)",
                 k->max, what, cmd, cmd);
    else if (oom)
        snprintf(buf, cap,
                 "out of memory with %" PRIu64 " distinct keys and %" PRIu64
                 " bytes kept; lower " FL_MAX_MEMORY_ENV
                 " (--max-memory N) below that to be stopped at a limit "
                 "instead, or give the process more memory",
                 k->n, k->bytes);
    return k->over_bytes || k->over || oom;
}

/* ============================================================ hash map */

/* Linear probing with backward-shift deletion. */

static size_t map_slot(uint64_t k, size_t cap)
{
    k ^= k >> 33;
    k *= 0xff51afd7ed558ccdull;
    k ^= k >> 33;
    return (size_t)k & (cap - 1);
}

fl_mval *fl_map_find(const fl_u64map *m, uint64_t key)
{
    if (!m->cap)
        return NULL;
    for (size_t i = map_slot(key, m->cap);; i = (i + 1) & (m->cap - 1)) {
        if (!m->used[i])
            return NULL;
        if (m->keys[i] == key)
            return &m->vals[i];
    }
}

#define MAP_SLOT_BYTES (sizeof(uint64_t) + sizeof(fl_mval) + 1)

static int map_grow(fl_u64map *m)
{
    size_t cap = m->cap ? m->cap * 2 : 16;
    size_t more = (cap - m->cap) * MAP_SLOT_BYTES + (m->cap ? 0 : 3 * FL_MALLOC_OVERHEAD_BYTES);
    if (!fl_keys_charge(m->budget, more))
        return -1;
    uint64_t *keys = malloc(cap * sizeof *keys);
    fl_mval *vals = malloc(cap * sizeof *vals);
    uint8_t *used = calloc(cap, 1);
    if (!keys || !vals || !used) {
        free(keys);
        free(vals);
        free(used);
        fl_keys_refund(m->budget, more);
        return -1;
    }
    for (size_t i = 0; i < m->cap; i++) {
        if (!m->used[i])
            continue;
        size_t k = map_slot(m->keys[i], cap);
        while (used[k])
            k = (k + 1) & (cap - 1);
        used[k] = 1;
        keys[k] = m->keys[i];
        vals[k] = m->vals[i];
    }
    free(m->keys);
    free(m->vals);
    free(m->used);
    m->keys = keys;
    m->vals = vals;
    m->used = used;
    m->cap = cap;
    return 0;
}

/* The value of key, inserted zeroed (*fresh = true) if absent; NULL when
 * out of memory. */
fl_mval *fl_map_put(fl_u64map *m, uint64_t key, bool *fresh)
{
    fl_mval *v = fl_map_find(m, key);
    if (fresh)
        *fresh = v == NULL;
    if (v)
        return v;
    if ((m->n + 1) * 4 > m->cap * 3 && map_grow(m) != 0)
        return NULL;
    if (!fl_keys_take(m->budget))
        return NULL;
    size_t i = map_slot(key, m->cap);
    while (m->used[i])
        i = (i + 1) & (m->cap - 1);
    m->used[i] = 1;
    m->keys[i] = key;
    m->vals[i] = (fl_mval){0, 0};
    m->n++;
    return &m->vals[i];
}

void fl_map_del(fl_u64map *m, uint64_t key)
{
    if (!m->cap)
        return;
    size_t i = map_slot(key, m->cap);
    while (m->used[i] && m->keys[i] != key)
        i = (i + 1) & (m->cap - 1);
    if (!m->used[i])
        return;
    m->used[i] = 0;
    m->n--;
    if (m->budget)
        m->budget->n--;
    /* Backward shift: move up every later entry of the run that may sit
     * before its home slot. */
    size_t j = i;
    for (;;) {
        j = (j + 1) & (m->cap - 1);
        if (!m->used[j])
            return;
        size_t home = map_slot(m->keys[j], m->cap);
        /* j's entry may move to i when home is not in (i, j] (cyclically). */
        bool in = i <= j ? (home > i && home <= j) : (home > i || home <= j);
        if (in)
            continue;
        m->keys[i] = m->keys[j];
        m->vals[i] = m->vals[j];
        m->used[i] = 1;
        m->used[j] = 0;
        i = j;
    }
}

void fl_map_clear(fl_u64map *m)
{
    if (m->cap)
        memset(m->used, 0, m->cap);
    if (m->budget)
        m->budget->n -= m->n;
    m->n = 0;
}

/* At the owner's end: the budget (which may be gone already) is not
 * touched, and the map no longer has one. */
void fl_map_free(fl_u64map *m)
{
    free(m->keys);
    free(m->vals);
    free(m->used);
    memset(m, 0, sizeof *m);
}

size_t fl_map_bytes(const fl_u64map *m)
{
    return m->cap * MAP_SLOT_BYTES;
}

/* ========================================================= string pool */

static uint64_t str_hash(const char *s, size_t len)
{
    uint64_t h = 1469598103934665603ull;
    for (size_t i = 0; i < len; i++) {
        h ^= (unsigned char)s[i];
        h *= 1099511628211ull;
    }
    return h;
}

const char *fl_pool_intern(fl_strpool *p, const char *s)
{
    if (!s)
        return NULL;
    size_t len = strlen(s);
    if ((p->n + 1) * 2 > p->cap) {
        size_t cap = p->cap ? p->cap * 2 : 64;
        size_t more = (cap - p->cap) * sizeof(char *);
        if (!fl_keys_charge(p->budget, more))
            return NULL;
        char **slots = calloc(cap, sizeof *slots);
        if (!slots) {
            fl_keys_refund(p->budget, more);
            return NULL;
        }
        for (size_t i = 0; i < p->cap; i++) {
            if (!p->slots[i])
                continue;
            size_t k = (size_t)str_hash(p->slots[i], strlen(p->slots[i])) & (cap - 1);
            while (slots[k])
                k = (k + 1) & (cap - 1);
            slots[k] = p->slots[i];
        }
        free(p->slots);
        p->slots = slots;
        p->cap = cap;
    }
    size_t k = (size_t)str_hash(s, len) & (p->cap - 1);
    while (p->slots[k]) {
        if (strcmp(p->slots[k], s) == 0)
            return p->slots[k];
        k = (k + 1) & (p->cap - 1);
    }
    if (!fl_keys_charge(p->budget, len + 1 + FL_MALLOC_OVERHEAD_BYTES))
        return NULL;
    if (!fl_keys_take(p->budget)) {
        fl_keys_refund(p->budget, len + 1 + FL_MALLOC_OVERHEAD_BYTES);
        return NULL;
    }
    char *d = malloc(len + 1);
    if (!d) {
        if (p->budget)
            p->budget->n--;
        fl_keys_refund(p->budget, len + 1 + FL_MALLOC_OVERHEAD_BYTES);
        return NULL;
    }
    memcpy(d, s, len + 1);
    p->slots[k] = d;
    p->n++;
    p->bytes += len + 1;
    return d;
}

void fl_pool_free(fl_strpool *p)
{
    for (size_t i = 0; i < p->cap; i++)
        free(p->slots[i]);
    free(p->slots);
    memset(p, 0, sizeof *p);
}

char *fl_dup_str(const char *s, bool *oom)
{
    if (!s)
        return NULL;
    char *d = strdup(s);
    if (!d)
        *oom = true;
    return d;
}

size_t fl_pool_bytes(const fl_strpool *p)
{
    return p->cap * sizeof(char *) + p->bytes;
}

/* =========================================================== histogram */

/* Octave 0 holds 0..31, octave o >= 1 [2^(o+4), 2^(o+5)): 60 octaves reach
 * 2^64. */

static bool hist_grow(fl_hist *h, size_t o, fl_keys *budget)
{
    size_t lo = h->n && h->lo < o ? h->lo : o;
    size_t hi = h->n && (size_t)h->lo + h->n - 1 > o ? (size_t)h->lo + h->n - 1 : o;
    size_t n = (hi - lo + 1) * FL_HIST_SUB;
    size_t more = (n - (size_t)h->n * FL_HIST_SUB) * (sizeof(uint64_t) + 1) +
                  (h->n ? 0 : FL_MALLOC_OVERHEAD_BYTES);
    if (!fl_keys_charge(budget, more))
        return false;
    uint64_t *c = calloc(n, sizeof *c + 1); /* the 64-bit counters, then the low bytes */
    if (!c) {
        fl_keys_refund(budget, more);
        return false;
    }
    if (h->n) {
        size_t at = (h->lo - lo) * FL_HIST_SUB, had = (size_t)h->n * FL_HIST_SUB;
        memcpy(c + at, h->c, had * sizeof *c);
        memcpy((uint8_t *)(c + n) + at, fl_hist_low(h), had);
    }
    free(h->c);
    h->c = c;
    h->lo = (uint8_t)lo;
    h->n = (uint8_t)(hi - lo + 1);
    return true;
}

bool fl_hist_add_grow(fl_hist *h, size_t o, size_t sub, fl_keys *budget)
{
    if (!hist_grow(h, o, budget))
        return false;
    size_t i = (o - h->lo) * FL_HIST_SUB + sub;
    fl_hist_count(fl_hist_low(h) + i, h->c + i);
    return true;
}

void fl_hist_free(fl_hist *h)
{
    free(h->c);
    memset(h, 0, sizeof *h);
}

size_t fl_hist_bytes(const fl_hist *h)
{
    return (size_t)h->n * FL_HIST_SUB * (sizeof(uint64_t) + 1);
}

/* The nearest-rank p-th percentile (0 < p <= 100) of n values, estimated;
 * clamped into [lo, hi]. */
uint64_t fl_hist_pct(const fl_hist *h, uint64_t n, double p, uint64_t lo, uint64_t hi)
{
    if (n == 0)
        return 0;
    uint64_t rank = (uint64_t)ceil(p / 100.0 * (double)n);
    if (rank <= 1)
        return lo; /* the smallest and the largest are known exactly */
    if (rank >= n)
        return hi;
    uint64_t seen = 0;
    const uint8_t *low = fl_hist_low(h);
    for (size_t o = h->lo; o < (size_t)h->lo + h->n; o++) {
        for (size_t s = 0; s < FL_HIST_SUB; s++) {
            size_t i = (o - h->lo) * FL_HIST_SUB + s;
            seen += h->c[i] + low[i];
            if (seen < rank)
                continue;
            uint64_t v;
            if (o == 0) {
                v = s;
            } else {
                int shift = (int)o - 1; /* width 2^(o-1) */
                uint64_t b = ((uint64_t)(FL_HIST_SUB + s)) << shift;
                v = b + (shift ? (1ull << shift) / 2 : 0);
            }
            return v < lo ? lo : v > hi ? hi : v;
        }
    }
    return hi;
}
