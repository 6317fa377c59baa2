/*
 * test_report_hist.c - the report's duration histogram (src/report/maps.h):
 * a bucket counts in a low byte and a 64-bit counter that takes 256 when
 * the byte wraps; every bucket's count (c[i] + low[i]) must equal a plain
 * count of the same values, through wraps and through the array growing
 * down and up (which moves both parts), and the percentiles must be those
 * of the plain counts.  And the budget of bytes the containers count
 * against (issue 32, point 1): a pool's strings and table, a map's table
 * and a histogram's octaves charged exactly, and refused past the cap
 * (over_bytes set, nothing charged).
 */
#include "check.h"
#include "report/maps.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#define NBUCKETS (60 * FL_HIST_SUB)

/* The nearest-rank percentile of the plain counts, as fl_hist_pct gives it. */
static uint64_t ref_pct(const uint64_t *ref, uint64_t n, double p, uint64_t lo, uint64_t hi)
{
    uint64_t rank = (uint64_t)ceil(p / 100.0 * (double)n);
    if (rank <= 1)
        return lo;
    if (rank >= n)
        return hi;
    uint64_t seen = 0;
    for (size_t b = 0; b < NBUCKETS; b++) {
        seen += ref[b];
        if (seen < rank)
            continue;
        size_t o = b / FL_HIST_SUB, s = b % FL_HIST_SUB;
        uint64_t v = s;
        if (o) {
            int shift = (int)o - 1;
            v = ((uint64_t)(FL_HIST_SUB + s) << shift) + (shift ? (1ull << shift) / 2 : 0);
        }
        return v < lo ? lo : v > hi ? hi : v;
    }
    return hi;
}

static uint64_t rnd(uint64_t *s)
{
    *s ^= *s << 13;
    *s ^= *s >> 7;
    *s ^= *s << 17;
    return *s;
}

static void check_same(const fl_hist *h, const uint64_t *ref, const char *what)
{
    const uint8_t *low = fl_hist_low(h);
    int bad = 0;
    for (size_t b = 0; b < NBUCKETS; b++) {
        size_t o = b / FL_HIST_SUB;
        uint64_t got = 0;
        if (h->n && o >= h->lo && o < (size_t)h->lo + h->n) {
            size_t i = b - (size_t)h->lo * FL_HIST_SUB;
            got = h->c[i] + low[i];
        }
        bad += got != ref[b];
    }
    if (bad)
        fprintf(stderr, "%s: %d buckets differ\n", what, bad);
    CHECK_INT(bad, 0);
}

static void run(uint64_t seed, uint64_t lo_v, uint64_t span, uint64_t n, const char *what)
{
    static uint64_t ref[NBUCKETS];
    memset(ref, 0, sizeof ref);
    fl_hist h = {0};
    uint64_t s = seed, mn = UINT64_MAX, mx = 0;
    for (uint64_t k = 0; k < n; k++) {
        /* Now and then a value far below or above: the array grows both
         * ways after the bytes have wrapped. */
        uint64_t v = lo_v + rnd(&s) % span;
        if (k % 4099 == 4098)
            v = rnd(&s) % (k % 2 ? 40 : (uint64_t)1 << 40);
        CHECK(fl_hist_add(&h, v, NULL));
        ref[fl_hist_index(v)]++;
        mn = v < mn ? v : mn;
        mx = v > mx ? v : mx;
    }
    check_same(&h, ref, what);
    static const double ps[] = {1, 10, 50, 90, 99, 99.9, 100};
    for (size_t i = 0; i < sizeof ps / sizeof ps[0]; i++)
        CHECK(fl_hist_pct(&h, n, ps[i], mn, mx) == ref_pct(ref, n, ps[i], mn, mx));
    CHECK(fl_hist_bytes(&h) == (size_t)h.n * FL_HIST_SUB * 9);
    fl_hist_free(&h);
}

static void test_budget(void)
{
    fl_keys k = {.max_bytes = 2000};
    fl_strpool p = {.budget = &k};
    const char *abc = fl_pool_intern(&p, "abc");
    CHECK(abc != NULL);
    CHECK_U64(k.bytes, 64 * sizeof(char *) + 4 + FL_MALLOC_OVERHEAD_BYTES); /* 532 */
    CHECK(fl_pool_intern(&p, "abc") == abc);
    CHECK_U64(k.bytes, 532);
    char *big = malloc(1501);
    CHECK(big != NULL);
    if (!big)
        return;
    memset(big, 'x', 1500);
    big[1500] = '\0';
    CHECK(fl_pool_intern(&p, big) == NULL); /* 532 + 1517 > 2000 */
    CHECK(k.over_bytes);
    CHECK_U64(k.bytes, 532);
    CHECK_U64(k.n, 1);
    free(big);

    k.over_bytes = false;
    fl_u64map m = {.budget = &k};
    CHECK(fl_map_put(&m, 7, NULL) != NULL);
    CHECK_U64(k.bytes, 532 + 16 * (8 + 16 + 1) + 3 * FL_MALLOC_OVERHEAD_BYTES); /* 980 */
    fl_hist h = {0};
    CHECK(fl_hist_add(&h, 100, &k));
    CHECK_U64(k.bytes, 980 + FL_HIST_SUB * 9 + FL_MALLOC_OVERHEAD_BYTES); /* 1284 */
    CHECK(!k.over_bytes);
    /* 2^40 ns too: 34 more octaves (9,792 bytes), past the cap. */
    CHECK(!fl_hist_add(&h, (uint64_t)1 << 40, &k));
    CHECK(k.over_bytes);
    CHECK_U64(k.bytes, 1284);
    CHECK(fl_hist_add(&h, 101, &k)); /* its octave is there: nothing to charge */
    CHECK_U64(k.bytes, 1284);
    fl_hist_free(&h);
    fl_map_free(&m);
    fl_pool_free(&p);
}

int main(void)
{
    test_budget();
    run(1, 10000, 1000, 200000, "narrow (each byte wraps hundreds of times)");
    run(2, 1000, 99000, 300000, "1-100 us");
    run(3, 0, 32, 70000, "below 32 (octave 0)");
    run(4, 5, 1, 1000, "one value, 1000 times");
    run(5, 5, 1, 256, "one value, 256 times (exactly one wrap)");
    run(6, 5, 1, 255, "one value, 255 times");
    return check_done("test_report_hist");
}
