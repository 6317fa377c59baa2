/*
 * reader/rows.c - the "rows" of a batch into cells: nearly all of a
 * trace's bytes go through here, so the writer's rows take a SIMD path
 * (reader/rows_simd.c: AVX2, SSSE3 or SSE2, chosen at run time) and
 * everything else JSON allows a byte-by-byte one with the same answers
 * (spaces, null, negative and real numbers, longer rows, rows before
 * "columns", errors, GP_READ_SIMD=off): scan_row, integers still 8 digits
 * at a time (SWAR), the rest through fl_scan_num.
 *
 * Everything a row's values go through on the byte path is in this file
 * or static inline, so that the per-value loops call nothing but the rare
 * paths.
 */
#include "read_int.h"

#include <math.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>

/* A batch holding more cells than this is a bad record (the writer's
 * batches have at most 1024 rows of ~20 columns); bounds the memory of one
 * batch to 64 MiB whatever the line. */
#define RD_MAX_CELLS ((size_t)1 << 22)

/* The byte path's SWAR (little-endian). */
#if defined(__BYTE_ORDER__) && __BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__
#define RD_SWAR 1
#endif

#ifdef RD_SWAR
/* d: 8 bytes XOR '0'.  0x80 in each byte that is not a digit. */
static inline uint64_t nondigits(uint64_t d)
{
    return (((d & 0x7f7f7f7f7f7f7f7full) + 0x7676767676767676ull) | d) & 0x8080808080808080ull;
}

/* p at a digit, d/nd its 8 bytes and their non-digit mask: the value of
 * a run of at most 15 digits into *v and its end; NULL when longer.  Reads
 * 16 bytes from p, never past the line's NUL + RD_PAD. */
static inline const char *swar_uint(const char *p, uint64_t d, uint64_t nd, uint64_t *v)
{
    static const uint64_t p10[8] = {1, 10, 100, 1000, 10000, 100000, 1000000, 10000000};
    if (nd) {
        unsigned k = (unsigned)__builtin_ctzll(nd) >> 3;
        *v = rd_swar8(d << (64 - 8 * k));
        return p + k;
    }
    uint64_t w2;
    memcpy(&w2, p + 8, 8);
    uint64_t d2 = w2 ^ 0x3030303030303030ull, nd2 = nondigits(d2);
    if (nd2 & 0x80) {
        *v = rd_swar8(d);
        return p + 8;
    }
    if (!nd2)
        return NULL;
    unsigned k = (unsigned)__builtin_ctzll(nd2) >> 3;
    *v = rd_swar8(d) * p10[k] + rd_swar8(d2 << (64 - 8 * k));
    return p + 8 + k;
}
#endif

static bool grow_cells(rd *r, size_t need)
{
    size_t c = r->cell_cap ? r->cell_cap : 16384;
    while (c < need)
        c *= 2;
    if (c > RD_MAX_CELLS)
        c = RD_MAX_CELLS;
    if (c < need)
        return false;
    fl_cell *n = realloc(r->cells, c * sizeof *n);
    if (!n)
        return false;
    r->cells = n;
    r->cell_cap = c;
    return true;
}

/* Where the rows of a batch are in r->cells: cells its start, cp the next
 * cell, cend the end of the buffer (it grows). */
typedef struct cellpos {
    fl_cell *cells, *cp, *cend;
} cellpos;

/* The rows fast_rows_ssse3 or fast_rows take from p on (none when the row
 * length is not known yet or the batch is bad already), added to *nrows;
 * *after: it stopped just after a row's ']'. */
static inline const char *take_fast_rows(scan *s, const char *line, const char *p, int simd,
                                         size_t expect, cellpos *at, size_t *nrows, bool *after)
{
    *after = false;
    if (simd && expect != SIZE_MAX && !s->rec[0] && *p == '[') {
        size_t nfast;
        fl_cell *cp = at->cp;
        /* Above SSE2 they read the 16 bytes before p. */
        p = fl_rd_fast_rows(p - line >= 16 ? simd : 1, p, &cp, at->cend, expect, &nfast, after);
        at->cp = cp;
        *nrows += nfast;
    }
    return p;
}

/* The cells are full: they grow (up to RD_MAX_CELLS), or, when the batch
 * is bad already or cannot grow, its cells are dropped from here on (it
 * will not be delivered).  *row0: the current row's first cell.  false:
 * no room at all. */
static inline bool room_for_cell(rd *r, scan *s, cellpos *at, fl_cell **row0)
{
    size_t used = (size_t)(at->cp - at->cells), r0 = (size_t)(*row0 - at->cells);
    if (s->rec[0]) {
        /* Nothing of this batch is delivered any more. */
        at->cp = *row0 = at->cells;
    } else if (!grow_cells(r, used + 1)) {
        fl_scan_rec_err(s, "more than %zu values in one batch (or out of memory)", r->cell_cap);
        at->cp = *row0 = at->cells;
    } else {
        at->cells = r->cells;
        at->cend = at->cells + r->cell_cap;
        at->cp = at->cells + used;
        *row0 = at->cells + r0;
    }
    return at->cp != at->cend;
}

/* A number the integer paths do not take (negative, real, too long, a
 * leading zero): by fl_scan_num. */
static inline const char *num_cell(rd *r, scan *s, const char *p, fl_cell *cp, size_t nrows)
{
    p = fl_scan_num(s, p, cp);
    if (!p)
        return NULL;
    if (cp->kind == FL_CELL_REAL && !isfinite(cp->d))
        fl_scan_rec_err(s, "row %zu: a number out of range", nrows + 1);
    r->any_kind |= cp->kind != FL_CELL_INT;
    return p;
}

/* p at a value of row nrows + 1 (spaces before it are skipped): it goes to
 * *cp (row0: the row's first cell).  Returns the byte after it, NULL when
 * the line is not JSON. */
static inline const char *scan_cell(rd *r, scan *s, const char *p, fl_cell *cp, const fl_cell *row0,
                                    size_t nrows)
{
    for (;;) {
#ifdef RD_SWAR
        uint64_t w;
        memcpy(&w, p, 8);
        uint64_t dd = w ^ 0x3030303030303030ull, nd = nondigits(dd);
        if (!(nd & 0x80)) {
            /* A non-negative integer, 8 bytes at a time (in the rows
             * fast_rows does not take). */
            const char *s0 = p;
            uint64_t v = 0;
            p = swar_uint(p, dd, nd, &v);
            if (!p || ((dd & 0xff) == 0 && p - s0 > 1) || *p == '.' || (*p | 0x20) == 'e')
                return num_cell(r, s, s0, cp, nrows);
            cp->kind = FL_CELL_INT; /* < 10^15 */
            cp->i = (int64_t)v;
            return p;
        }
#else
        unsigned d0 = (unsigned)((unsigned char)*p - '0');
        if (d0 < 10) {
            /* The hot path: a non-negative integer. */
            const char *s0 = p++;
            uint64_t v = d0;
            unsigned d;
            while ((d = (unsigned)((unsigned char)*p - '0')) < 10) {
                v = v * 10 + d;
                p++;
            }
            if (p - s0 > 19 || (d0 == 0 && p - s0 > 1) || *p == '.' || (*p | 0x20) == 'e')
                return num_cell(r, s, s0, cp, nrows);
            cp->kind = v > (uint64_t)INT64_MAX ? FL_CELL_UINT : FL_CELL_INT;
            cp->u = v;
            r->any_kind |= cp->kind != FL_CELL_INT;
            return p;
        }
#endif
        if (*p == '-')
            return num_cell(r, s, p, cp, nrows);
        if (*p == 'n' && p[1] == 'u' && p[2] == 'l' && p[3] == 'l') {
            r->any_kind = true;
            cp->kind = FL_CELL_NULL;
            cp->u = 0;
            return p + 4;
        }
        if (is_ws(*p)) {
            p = skip_ws(p);
            continue;
        }
        const char *v0 = p;
        p = fl_skip_value(s, p);
        if (!p)
            return NULL;
        fl_scan_rec_err(s, "row %zu, value %zu is not a number or null (%.*s)", nrows + 1,
                        (size_t)(cp - row0) + 1, (int)(p - v0 > 24 ? 24 : p - v0), v0);
        cp->kind = FL_CELL_NULL;
        r->any_kind = true;
        return p;
    }
}

/* p at row nrows + 1, byte by byte: its values into cells from at->cp on,
 * their count checked against *expect (SIZE_MAX: this row sets it).
 * Returns the byte after the row, NULL when the line is not JSON. */
static inline const char *scan_row(rd *r, scan *s, const char *p, cellpos *at, size_t *expect,
                                   size_t nrows)
{
    if (*p != '[') {
        fl_scan_rec_err(s, "row %zu is not an array", nrows + 1);
        return fl_skip_value(s, p);
    }
    p++;
    fl_cell *row0 = at->cp;
    if (is_ws(*p))
        p = skip_ws(p);
    if (*p == ']') {
        p++;
    } else {
        for (;;) {
            if (at->cp == at->cend && !room_for_cell(r, s, at, &row0))
                return scan_fail(s, p, "out of memory");
            p = scan_cell(r, s, p, at->cp, row0, nrows);
            if (!p)
                return NULL;
            at->cp++;
            char c = *p;
            if (is_ws(c)) {
                p = skip_ws(p);
                c = *p;
            }
            if (c == ',') {
                p++;
                continue;
            }
            if (c == ']') {
                p++;
                break;
            }
            return scan_fail(s, p, c ? "expected ',' or ']' in a row" : "unexpected end of line");
        }
    }
    size_t len = (size_t)(at->cp - row0);
    if (*expect == SIZE_MAX)
        *expect = len;
    else if (len != *expect && !s->rec[0])
        fl_scan_rec_err(s, "row %zu has %zu values, expected %zu", nrows + 1, len, *expect);
    if (s->rec[0])
        at->cp = at->cells; /* bounded memory: nothing will be delivered */
    return p;
}

const char *fl_rd_scan_rows(rd *r, scan *s, const char *line, const char *p, size_t expect,
                            size_t *nrows_out, size_t *ncells_out)
{
    size_t nrows = 0;
    /* A batch whose rows the SIMD scanners keep refusing (PM samples:
     * every row has a real) stops asking them after a few rows. */
    int simd = fl_rd_simd_level(), refused = 0;
    if (*p != '[') {
        fl_scan_rec_err(s, "\"rows\" is not an array");
        return fl_skip_value(s, p);
    }
    p = skip_ws(p + 1);
    if (!r->cell_cap && !grow_cells(r, 1))
        return scan_fail(s, p, "out of memory");
    cellpos at = {.cells = r->cells, .cp = r->cells, .cend = r->cells + r->cell_cap};
    r->any_kind = false;
    if (*p == ']') {
        p++;
    } else {
        for (;;) {
            bool after;
            size_t before = nrows;
            p = take_fast_rows(s, line, p, simd, expect, &at, &nrows, &after);
            if (simd && nrows == before && !after && ++refused == 4)
                simd = 0;
            if (!after) {
                p = scan_row(r, s, p, &at, &expect, nrows);
                if (!p)
                    return NULL;
                nrows++;
            }
            int next = scan_next(&p, ']');
            if (next > 0)
                continue;
            if (next == 0)
                break;
            return scan_fail(s, p,
                             *p ? "expected ',' or ']' after a row" : "unexpected end of line");
        }
    }
    *nrows_out = nrows;
    *ncells_out = (size_t)(at.cp - at.cells);
    return p;
}
