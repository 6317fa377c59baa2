/*
 * sampler/backends/smi_parse.c - nvidia-smi csv cells and rows to samples and device info.
 *
 * Numbers are parsed by hand, digit by digit: watts become milliwatts
 * exactly ("631.95" is 631950, not 631949 from a double), and every overflow
 * or stray character is caught instead of being silently truncated by strtoul.
 */
#include "smi_parse.h"
#include "gpu_profile.h"

#include <stdio.h>
#include <string.h>

#define MIB_BYTES (1024ull * 1024ull)

static bool is_blank(char c)
{
    return c == ' ' || c == '\t' || c == '\r' || c == '\n';
}

static bool is_digit(char c)
{
    return c >= '0' && c <= '9';
}

bool gp_smi_cell_is_missing(const char *cell)
{
    /* The bracketed forms are what current drivers print ([N/A], [Not
     * Supported], [Insufficient Permissions], [Unknown Error], [Requested
     * functionality has been deprecated], ...); the bare ones come from
     * older drivers and from a few fields that never had brackets. */
    static const char *const bare[] = {"N/A", "Not Supported", "Insufficient Permissions",
                                       "Unknown Error", "Unknown"};
    size_t n = strlen(cell);
    if (n == 0)
        return true;
    if (cell[0] == '[' && cell[n - 1] == ']')
        return true;
    for (size_t i = 0; i < sizeof bare / sizeof bare[0]; i++)
        if (strcmp(cell, bare[i]) == 0)
            return true;
    return false;
}

/* After a number: nothing, or blanks and then exactly the unit. */
static bool tail_ok(const char *p, const char *unit)
{
    while (is_blank(*p))
        p++;
    if (*p == '\0')
        return true;
    if (!unit)
        return false;
    size_t n = strlen(unit);
    if (strncmp(p, unit, n) != 0)
        return false;
    p += n;
    while (is_blank(*p))
        p++;
    return *p == '\0';
}

/* Accumulates decimal digits into *v; false on overflow past max. */
static bool take_digits(const char **pp, uint64_t max, uint64_t *v, int *ndigits)
{
    const char *p = *pp;
    uint64_t acc = *v;
    int n = 0;
    while (is_digit(*p)) {
        uint64_t d = (uint64_t)(*p - '0');
        if (acc > (max - d) / 10)
            return false;
        acc = acc * 10 + d;
        p++;
        n++;
    }
    *pp = p;
    *v = acc;
    *ndigits = n;
    return true;
}

/* One whole number, then nothing or the unit: its value into *v. */
static bool whole_cell(const char *p, const char *unit, uint64_t max, uint64_t *v)
{
    int n = 0;
    *v = 0;
    return take_digits(&p, max, v, &n) && n > 0 && tail_ok(p, unit);
}

smi_cell gp_smi_parse_uint(const char *cell, const char *unit, uint64_t max, uint64_t *out)
{
    if (gp_smi_cell_is_missing(cell))
        return SMI_CELL_MISSING;
    uint64_t v;
    if (!whole_cell(cell, unit, max, &v))
        return SMI_CELL_BAD;
    *out = v;
    return SMI_CELL_VALUE;
}

smi_cell gp_smi_parse_int(const char *cell, const char *unit, int64_t min, int64_t max,
                          int64_t *out)
{
    if (gp_smi_cell_is_missing(cell))
        return SMI_CELL_MISSING;
    const char *p = cell;
    bool neg = *p == '-';
    if (*p == '-' || *p == '+')
        p++;
    uint64_t v;
    /* Magnitudes stay below INT64_MAX, so negating cannot overflow. */
    if (!whole_cell(p, unit, INT64_MAX, &v))
        return SMI_CELL_BAD;
    int64_t r = neg ? -(int64_t)v : (int64_t)v;
    if (r < min || r > max)
        return SMI_CELL_BAD;
    *out = r;
    return SMI_CELL_VALUE;
}

smi_cell gp_smi_parse_milli(const char *cell, const char *unit, uint64_t max, uint64_t *out)
{
    if (gp_smi_cell_is_missing(cell))
        return SMI_CELL_MISSING;
    const char *p = cell;
    uint64_t whole = 0;
    int n_whole = 0;
    if (!take_digits(&p, UINT64_MAX / 1000 - 1, &whole, &n_whole))
        return SMI_CELL_BAD;
    uint64_t frac = 0;
    int n_frac = 0;
    bool round_up = false;
    if (*p == '.') {
        p++;
        while (is_digit(*p)) {
            if (n_frac < 3)
                frac = frac * 10 + (uint64_t)(*p - '0');
            else if (n_frac == 3)
                round_up = *p >= '5';
            n_frac++;
            p++;
        }
    }
    if (n_whole + n_frac == 0 || !tail_ok(p, unit))
        return SMI_CELL_BAD;
    for (int i = n_frac; i < 3; i++)
        frac *= 10;
    uint64_t v = whole * 1000 + frac + (round_up ? 1 : 0);
    if (v > max)
        return SMI_CELL_BAD;
    *out = v;
    return SMI_CELL_VALUE;
}

smi_cell gp_smi_parse_hex(const char *cell, uint64_t *out)
{
    if (gp_smi_cell_is_missing(cell))
        return SMI_CELL_MISSING;
    const char *p = cell;
    if (p[0] == '0' && (p[1] == 'x' || p[1] == 'X'))
        p += 2;
    uint64_t v = 0;
    int n = 0;
    for (;; p++, n++) {
        int d;
        if (is_digit(*p))
            d = *p - '0';
        else if (*p >= 'a' && *p <= 'f')
            d = *p - 'a' + 10;
        else if (*p >= 'A' && *p <= 'F')
            d = *p - 'A' + 10;
        else
            break;
        if (n >= 16)
            return SMI_CELL_BAD;
        v = (v << 4) | (uint64_t)d;
    }
    if (n == 0 || !tail_ok(p, NULL))
        return SMI_CELL_BAD;
    *out = v;
    return SMI_CELL_VALUE;
}

static char *trim(char *s)
{
    while (is_blank(*s))
        s++;
    size_t n = strlen(s);
    while (n > 0 && is_blank(s[n - 1]))
        s[--n] = '\0';
    return s;
}

size_t gp_smi_split(char *line, char **cells, size_t max)
{
    size_t n = 0;
    char *p = line;
    for (;;) {
        char *comma = strchr(p, ',');
        if (comma)
            *comma = '\0';
        if (n < max)
            cells[n] = trim(p);
        n++;
        if (!comma)
            break;
        p = comma + 1;
    }
    return n;
}

/* Applies one parsed cell: a value sets the bit, a missing one leaves it
 * clear, garbage fails the line. */
static bool apply(smi_cell c, uint32_t bit, uint32_t *valid)
{
    if (c == SMI_CELL_BAD)
        return false;
    if (c == SMI_CELL_VALUE)
        *valid |= bit;
    return true;
}

gp_status gp_smi_parse_sample(char *line, unsigned *index, gp_device_sample *out)
{
    char *cell[SMI_SAMPLE_NFIELDS];
    if (gp_smi_split(line, cell, SMI_SAMPLE_NFIELDS) != SMI_SAMPLE_NFIELDS)
        return GP_ERR_PARSE;

    gp_device_sample s;
    memset(&s, 0, sizeof s);
    uint64_t v;
    int64_t t;

    /* Without its index a row cannot be given to a device. */
    if (gp_smi_parse_uint(cell[0], NULL, UINT32_MAX, &v) != SMI_CELL_VALUE)
        return GP_ERR_PARSE;
    unsigned idx = (unsigned)v;

    smi_cell c = gp_smi_parse_uint(cell[1], "%", 100, &v);
    if (!apply(c, GP_M_UTIL_GPU, &s.valid))
        return GP_ERR_PARSE;
    if (c == SMI_CELL_VALUE)
        s.util_gpu_pct = (uint32_t)v;

    c = gp_smi_parse_uint(cell[2], "%", 100, &v);
    if (!apply(c, GP_M_UTIL_MEM, &s.valid))
        return GP_ERR_PARSE;
    if (c == SMI_CELL_VALUE)
        s.util_mem_pct = (uint32_t)v;

    c = gp_smi_parse_uint(cell[3], "MiB", UINT64_MAX / MIB_BYTES, &v);
    if (!apply(c, GP_M_MEM_USED, &s.valid))
        return GP_ERR_PARSE;
    if (c == SMI_CELL_VALUE)
        s.mem_used_bytes = v * MIB_BYTES;

    c = gp_smi_parse_uint(cell[4], "MiB", UINT64_MAX / MIB_BYTES, &v);
    if (!apply(c, GP_M_MEM_TOTAL, &s.valid))
        return GP_ERR_PARSE;
    if (c == SMI_CELL_VALUE)
        s.mem_total_bytes = v * MIB_BYTES;

    c = gp_smi_parse_milli(cell[5], "W", UINT32_MAX, &v);
    if (!apply(c, GP_M_POWER, &s.valid))
        return GP_ERR_PARSE;
    if (c == SMI_CELL_VALUE)
        s.power_mw = (uint32_t)v;

    c = gp_smi_parse_int(cell[6], "C", -273, 1000, &t);
    if (!apply(c, GP_M_TEMP, &s.valid))
        return GP_ERR_PARSE;
    if (c == SMI_CELL_VALUE)
        s.temp_c = (int32_t)t;

    c = gp_smi_parse_uint(cell[7], "MHz", UINT32_MAX, &v);
    if (!apply(c, GP_M_CLOCK_SM, &s.valid))
        return GP_ERR_PARSE;
    if (c == SMI_CELL_VALUE)
        s.clock_sm_mhz = (uint32_t)v;

    c = gp_smi_parse_uint(cell[8], "MHz", UINT32_MAX, &v);
    if (!apply(c, GP_M_CLOCK_MEM, &s.valid))
        return GP_ERR_PARSE;
    if (c == SMI_CELL_VALUE)
        s.clock_mem_mhz = (uint32_t)v;

    c = gp_smi_parse_hex(cell[9], &v);
    if (!apply(c, GP_M_THROTTLE, &s.valid))
        return GP_ERR_PARSE;
    if (c == SMI_CELL_VALUE)
        s.throttle_reasons = v;

    *index = idx;
    *out = s;
    return GP_OK;
}

/* Copies [b, e) trimmed into dst (truncating). */
static void copy_trimmed(char *dst, size_t cap, const char *b, const char *e)
{
    while (b < e && is_blank(*b))
        b++;
    while (e > b && is_blank(e[-1]))
        e--;
    size_t n = (size_t)(e - b);
    if (cap == 0)
        return;
    if (n >= cap)
        n = cap - 1;
    memcpy(dst, b, n);
    dst[n] = '\0';
}

gp_status gp_smi_parse_device(const char *line, gp_device_info *out, char *driver,
                              size_t driver_len)
{
    /* index, <name, possibly with commas>, uuid, memory.total, driver_version */
    const char *end = line + strlen(line);
    const char *first = strchr(line, ',');
    const char *c[3] = {NULL, NULL, NULL}; /* the last three commas, last first */
    int found = 0;
    for (const char *p = end; p > line && found < 3;) {
        p--;
        if (*p == ',')
            c[found++] = p;
    }
    if (!first || found < 3 || first >= c[2])
        return GP_ERR_PARSE;

    char idx_text[32], mem_text[64];
    gp_device_info d;
    memset(&d, 0, sizeof d);
    copy_trimmed(idx_text, sizeof idx_text, line, first);
    copy_trimmed(d.name, sizeof d.name, first + 1, c[2]);
    copy_trimmed(d.uuid, sizeof d.uuid, c[2] + 1, c[1]);
    copy_trimmed(mem_text, sizeof mem_text, c[1] + 1, c[0]);

    uint64_t v;
    if (gp_smi_parse_uint(idx_text, NULL, UINT32_MAX, &v) != SMI_CELL_VALUE)
        return GP_ERR_PARSE;
    d.index = (uint32_t)v;
    smi_cell m = gp_smi_parse_uint(mem_text, "MiB", UINT64_MAX / MIB_BYTES, &v);
    if (m == SMI_CELL_BAD)
        return GP_ERR_PARSE;
    if (m == SMI_CELL_VALUE) {
        d.valid |= GP_M_MEM_TOTAL;
        d.mem_total_bytes = v * MIB_BYTES;
    }
    if (gp_smi_cell_is_missing(d.uuid))
        d.uuid[0] = '\0';
    if (driver && driver_len)
        copy_trimmed(driver, driver_len, c[0] + 1, end);
    if (driver && driver_len && gp_smi_cell_is_missing(driver))
        driver[0] = '\0';
    *out = d;
    return GP_OK;
}

/* ------------------------------------------------------------------- MIG */

/* The next line of text into buf (cut at cap - 1); NULL at the end. */
static const char *next_line(const char *p, char *buf, size_t cap)
{
    if (!p || !*p)
        return NULL;
    const char *e = strchr(p, '\n');
    size_t n = e ? (size_t)(e - p) : strlen(p);
    snprintf(buf, cap, "%.*s", (int)(n < cap ? n : cap - 1), p);
    return e ? e + 1 : p + n;
}

/* "(UUID: X)" in line: X into out; false without one. */
static bool uuid_in(const char *line, char *out, size_t cap)
{
    const char *u = strstr(line, "(UUID: ");
    const char *e = u ? strchr(u, ')') : NULL;
    if (!e)
        return false;
    copy_trimmed(out, cap, u + 7, e);
    return out[0] != '\0';
}

size_t gp_smi_parse_mig_list(const char *text, smi_mig_row *rows, size_t cap)
{
    char line[512], uuid[GP_NAME_MAX], profile[GP_MIG_PROFILE_MAX];
    size_t n = 0;
    bool have_gpu = false;
    unsigned gpu = 0, dev = 0;
    for (const char *p = text; (p = next_line(p, line, sizeof line)) != NULL;) {
        const char *t = line;
        while (is_blank(*t))
            t++;
        int used = 0;
        if (t == line && sscanf(line, "GPU %u:%n", &gpu, &used) == 1 && used > 0) {
            have_gpu = true;
            continue;
        }
        /* "MIG <profile> Device <n>: (UUID: MIG-...)", indented under its GPU. */
        if (!have_gpu || t == line || strncmp(t, "MIG ", 4) != 0)
            continue;
        const char *d = strstr(t, " Device ");
        if (!d || sscanf(d, " Device %u:", &dev) != 1 || !uuid_in(t, uuid, sizeof uuid))
            continue;
        copy_trimmed(profile, sizeof profile, t + 4, d);
        if (n < cap) {
            smi_mig_row *r = &rows[n];
            memset(r, 0, sizeof *r);
            r->gpu = gpu;
            r->mig_dev = dev;
            snprintf(r->profile, sizeof r->profile, "%s", profile);
            snprintf(r->uuid, sizeof r->uuid, "%s", uuid);
            r->gi = r->ci = -1;
        }
        n++;
    }
    return n;
}

size_t gp_smi_parse_mig_table(const char *text, smi_mig_row *rows, size_t n)
{
    char line[512];
    bool in_mig = false;
    size_t filled = 0;
    for (const char *p = text; (p = next_line(p, line, sizeof line)) != NULL;) {
        if (strstr(line, "MIG devices:")) {
            in_mig = true;
            continue;
        }
        if (strstr(line, "Processes:"))
            in_mig = false;
        unsigned gpu, gi, ci, dev;
        if (!in_mig || sscanf(line, "| %u %u %u %u |", &gpu, &gi, &ci, &dev) != 4)
            continue;
        /* The second cell: "<used>MiB / <total>MiB". */
        const char *cell = strchr(line + 1, '|');
        unsigned long long used_mib = 0, total_mib = 0;
        bool mem = cell && sscanf(cell, "| %lluMiB / %lluMiB", &used_mib, &total_mib) == 2 &&
                   total_mib <= UINT64_MAX / MIB_BYTES;
        for (size_t i = 0; i < n; i++) {
            smi_mig_row *r = &rows[i];
            if (r->gpu != gpu || r->mig_dev != dev || gi > INT32_MAX || ci > INT32_MAX)
                continue;
            r->gi = (int32_t)gi;
            r->ci = (int32_t)ci;
            r->have_mem = mem;
            r->mem_total_bytes = mem ? total_mib * MIB_BYTES : 0;
            filled++;
        }
    }
    return filled;
}
