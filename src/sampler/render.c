/*
 * sampler/render.c - text, JSON and sparkline renderings of a gp_summary.
 *
 * Every rendering is snprintf-style (at most cap bytes written, NUL
 * included; the full length returned), deterministic and independent of
 * the C locale: numbers are formatted here, not by printf's %f.  A metric
 * whose valid bit is clear is written as "n/a" in text and null in JSON,
 * never as 0.  A NULL summary renders as the empty string.
 */
#include "../util/error.h"
#include "../util/text.h"
#include "gpu_profile.h"

#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#define TEXT_WIDTH 80
#define LABEL_COLS 20 /* "  " + label padded to 18 */

const char *gp_energy_source_name(gp_energy_source src)
{
    switch (src) {
    case GP_ENERGY_COUNTER:
        return "counter";
    case GP_ENERGY_POWER_INTEGRAL:
        return "power_integral";
    case GP_ENERGY_NONE:
        break;
    }
    return "none";
}

/* ------------------------------------------------------------ the buffer */

/* Output that counts what it could not store, so one pass both measures
 * and writes. */
typedef struct out {
    char *buf;
    size_t cap;
    size_t len; /* full length so far, stored or not */
} out;

static void out_init(out *o, char *buf, size_t cap)
{
    o->buf = buf;
    o->cap = buf ? cap : 0;
    o->len = 0;
}

static void put_n(out *o, const char *s, size_t n)
{
    if (o->cap > 0 && o->len < o->cap - 1) {
        size_t room = o->cap - 1 - o->len;
        memcpy(o->buf + o->len, s, n < room ? n : room);
    }
    o->len += n;
}

static void put(out *o, const char *s)
{
    put_n(o, s, strlen(s));
}

static void put_ch(out *o, char c)
{
    put_n(o, &c, 1);
}

static void put_spaces(out *o, size_t n)
{
    while (n--)
        put_ch(o, ' ');
}

static size_t out_finish(out *o)
{
    if (o->cap > 0)
        o->buf[o->len < o->cap ? o->len : o->cap - 1] = '\0';
    return o->len;
}

static void put_u64(out *o, uint64_t v)
{
    char tmp[24];
    snprintf(tmp, sizeof tmp, "%llu", (unsigned long long)v);
    put(o, tmp);
}

static void put_i64(out *o, int64_t v)
{
    char tmp[24];
    snprintf(tmp, sizeof tmp, "%lld", (long long)v);
    put(o, tmp);
}

/* put_n with the signature of the shared writers (util/text.c). */
static void emit_out(void *ctx, const char *p, size_t n)
{
    put_n((out *)ctx, p, n);
}

/* Fixed point through the shared formatter (util/text.c); NaN and
 * infinities print "n/a" (JSON callers write null before getting here). */
static void put_fixed(out *o, double v, int decimals, int trim)
{
    if (!isfinite(v)) {
        put(o, "n/a");
        return;
    }
    gp_format_fixed(v, decimals, trim, emit_out, o);
}

/* ------------------------------------------------------------ utf-8 */

/* The fixed-size strings of gp_summary may lack their NUL. */
static size_t field_len(const char *s, size_t size)
{
    const char *nul = memchr(s, '\0', size);
    return nul ? (size_t)(nul - s) : size;
}

/* Columns of text, counting code points (wide glyphs are rare in device
 * names and notes, so one column each is close enough). */
static size_t text_cols(const char *s, size_t n)
{
    size_t cols = 0;
    for (size_t i = 0; i < n; i++)
        if (((unsigned char)s[i] & 0xC0) != 0x80)
            cols++;
    return cols;
}

/* Text from a backend or the user goes to a terminal: control characters
 * and broken UTF-8 become '?' so they cannot move the cursor or garble. */
static void put_clean(out *o, const char *s, size_t n)
{
    const unsigned char *u = (const unsigned char *)s;
    size_t i = 0;
    while (i < n) {
        size_t len = gp_utf8_len(u + i, n - i);
        if (len == 0 || (len == 1 && (u[i] < 0x20 || u[i] == 0x7F))) {
            put_ch(o, '?');
            i++;
        } else {
            put_n(o, s + i, len);
            i += len;
        }
    }
}

/* ------------------------------------------------------------ names */

static const char *const throttle_names[] = {
    "gpu_idle",   "app_clocks", "sw_power_cap",   "hw_slowdown",   "sync_boost",
    "sw_thermal", "hw_thermal", "hw_power_brake", "display_clock",
};
#define N_THROTTLE_NAMES (sizeof throttle_names / sizeof throttle_names[0])

/* Writes the name of bit `bit` of a throttle mask: known ones by name,
 * others as their hex value so nothing is lost. */
static void throttle_name(char *tmp, size_t size, unsigned bit)
{
    if (bit < N_THROTTLE_NAMES)
        snprintf(tmp, size, "%s", throttle_names[bit]);
    else
        snprintf(tmp, size, "0x%llx", 1ull << bit);
}

/* Stable identifiers for gp_status in JSON (gp_strerror is prose). */
static const char *status_id(gp_status st)
{
    switch (st) {
    case GP_OK:
        return "ok";
    case GP_ERR_INVALID_ARG:
        return "invalid_arg";
    case GP_ERR_NO_MEMORY:
        return "no_memory";
    case GP_ERR_BACKEND_UNAVAILABLE:
        return "backend_unavailable";
    case GP_ERR_BACKEND:
        return "backend";
    case GP_ERR_DEVICE_NOT_FOUND:
        return "device_not_found";
    case GP_ERR_DEVICE_LOST:
        return "device_lost";
    case GP_ERR_TIMEOUT:
        return "timeout";
    case GP_ERR_STATE:
        return "state";
    case GP_ERR_THREAD:
        return "thread";
    case GP_ERR_IO:
        return "io";
    case GP_ERR_NOT_SUPPORTED:
        return "not_supported";
    case GP_ERR_PARSE:
        return "parse";
    case GP_ERR_CUPTI:
        return "cupti";
    }
    return "unknown";
}

static int has_device_error(const gp_summary *s)
{
    return s->device_status != GP_OK || field_len(s->device_error, sizeof s->device_error) > 0;
}

/* ------------------------------------------------------------ sparkline */

static uint32_t spark_cells(const gp_summary *s)
{
    return s->spark_len > GP_SPARK_WIDTH ? GP_SPARK_WIDTH : s->spark_len;
}

static void put_sparkline(out *o, const gp_summary *s, unsigned flags)
{
    static const char *const blocks[8] = {"\xe2\x96\x81", "\xe2\x96\x82", "\xe2\x96\x83",
                                          "\xe2\x96\x84", "\xe2\x96\x85", "\xe2\x96\x86",
                                          "\xe2\x96\x87", "\xe2\x96\x88"};
    static const char ascii[] = "_.-:=+*#";
    uint32_t n = spark_cells(s);
    for (uint32_t i = 0; i < n; i++) {
        unsigned v = s->spark[i];
        if (v == GP_SPARK_NONE) {
            put_ch(o, ' ');
            continue;
        }
        if (v > 100)
            v = 100;
        unsigned level = (v * 7 + 50) / 100;
        if (flags & GP_FMT_ASCII)
            put_ch(o, ascii[level]);
        else
            put(o, blocks[level]);
    }
}

size_t gp_summary_sparkline(const gp_summary *s, unsigned flags, char *buf, size_t cap)
{
    out o;
    out_init(&o, buf, cap);
    if (s)
        put_sparkline(&o, s, flags);
    return out_finish(&o);
}

/* ------------------------------------------------------------ text */

static void put_label(out *o, const char *label)
{
    put(o, "  ");
    put(o, label);
    size_t cols = strlen(label) + 2;
    put_spaces(o, cols < LABEL_COLS ? LABEL_COLS - cols : 1);
}

static void put_pct(out *o, double v, int decimals)
{
    put_fixed(o, v, decimals, 0);
    put_ch(o, '%');
}

/* A byte count in the unit that suits `scale_bytes`, so used and total
 * read in the same unit. */
static void put_bytes(out *o, uint64_t v, uint64_t scale_bytes)
{
    const double gib = 1024.0 * 1024.0 * 1024.0, mib = 1024.0 * 1024.0;
    if (scale_bytes >= (uint64_t)gib) {
        put_fixed(o, (double)v / gib, 2, 0);
        put(o, " GiB");
    } else if (scale_bytes >= (uint64_t)mib) {
        put_fixed(o, (double)v / mib, 1, 0);
        put(o, " MiB");
    } else {
        put_u64(o, v);
        put(o, " B");
    }
}

/* Seconds with millisecond resolution, or n/a for nonsense. */
static void put_seconds(out *o, double v)
{
    if (isfinite(v)) {
        put_fixed(o, v, 3, 0);
        put(o, " s");
    } else {
        put(o, "n/a");
    }
}

/* A figure with about three significant digits or more: small energies
 * keep their decimals, large ones do not get noisy. */
static void put_sig(out *o, double v)
{
    double a = fabs(v);
    put_fixed(o, v, a >= 100 ? 1 : a >= 10 ? 2 : 3, 0);
}

/* Free text wrapped at TEXT_WIDTH, continuation lines indented to the
 * value column; `col` is where the first line starts.  Words longer than
 * a line are kept whole. */
static void put_wrapped(out *o, const char *s, size_t n, size_t col)
{
    size_t i = 0;
    int first_word = 1;
    while (i < n) {
        while (i < n && s[i] == ' ')
            i++;
        size_t j = i;
        while (j < n && s[j] != ' ')
            j++;
        if (j == i)
            break;
        size_t w = text_cols(s + i, j - i);
        if (!first_word) {
            if (col + 1 + w > TEXT_WIDTH) {
                put_ch(o, '\n');
                put_spaces(o, LABEL_COLS);
                col = LABEL_COLS;
            } else {
                put_ch(o, ' ');
                col++;
            }
        }
        put_clean(o, s + i, j - i);
        col += w;
        first_word = 0;
        i = j;
    }
}

static void put_header(out *o, const gp_summary *s)
{
    size_t name_n = field_len(s->name, sizeof s->name);
    size_t uuid_n = field_len(s->uuid, sizeof s->uuid);
    size_t be_n = field_len(s->backend, sizeof s->backend);
    char idx[24];
    snprintf(idx, sizeof idx, "GPU %u", (unsigned)s->device_index);
    put(o, idx);
    size_t col = strlen(idx);
    if (name_n) {
        put(o, "  ");
        put_clean(o, s->name, name_n);
        col += 2 + text_cols(s->name, name_n);
    }
    size_t tail = (uuid_n ? 2 + text_cols(s->uuid, uuid_n) : 0) + 4 +
                  (be_n ? text_cols(s->backend, be_n) : 3);
    if (col + tail > TEXT_WIDTH) {
        /* A long name: the UUID and backend go on their own line. */
        put(o, "\n     ");
    }
    if (uuid_n) {
        put(o, "  ");
        put_clean(o, s->uuid, uuid_n);
    }
    put(o, "  [");
    if (be_n)
        put_clean(o, s->backend, be_n);
    else
        put(o, "n/a");
    put(o, "]\n");
}

static void put_throttle(out *o, const gp_summary *s)
{
    put_label(o, "throttle reasons");
    if (!(s->valid & GP_M_THROTTLE)) {
        put(o, "n/a\n");
        return;
    }
    uint64_t mask = s->throttle_reasons_seen;
    if (mask == 0) {
        put(o, "none\n");
        return;
    }
    size_t col = LABEL_COLS;
    int first = 1;
    for (unsigned bit = 0; bit < 64; bit++) {
        if (!(mask & (1ull << bit)))
            continue;
        char name[32];
        throttle_name(name, sizeof name, bit);
        size_t w = strlen(name);
        if (!first) {
            put_ch(o, ',');
            col++;
            if (col + 1 + w > TEXT_WIDTH) {
                put_ch(o, '\n');
                put_spaces(o, LABEL_COLS);
                col = LABEL_COLS;
            } else {
                put_ch(o, ' ');
                col++;
            }
        }
        put(o, name);
        col += w;
        first = 0;
    }
    put_ch(o, '\n');
}

static void format_text(out *o, const gp_summary *s, unsigned flags)
{
    const uint32_t v = s->valid;
    const char *na = "n/a";
    put_header(o, s);

    put_label(o, "duration");
    put_seconds(o, s->duration_s);
    put_ch(o, '\n');

    put_label(o, "samples");
    put_u64(o, s->sample_count);
    if (s->samples_warmup > 0 || s->warmup_s > 0) {
        put(o, " (+");
        put_u64(o, s->samples_warmup);
        put(o, " dropped in ");
        put_seconds(o, s->warmup_s);
        put(o, " warmup)");
    }
    put_ch(o, '\n');

    put_label(o, "interval");
    put_seconds(o, s->interval_s);
    put(o, " requested, ");
    if (s->sample_count >= 2)
        put_seconds(o, s->interval_mean_s);
    else
        put(o, na);
    put(o, " achieved\n");

    put_label(o, "util.gpu");
    if (v & GP_M_UTIL_GPU) {
        put(o, "mean ");
        put_pct(o, s->util_gpu_mean, 1);
        put(o, "  p50 ");
        put_pct(o, s->util_gpu_p50, 0);
        put(o, "  p95 ");
        put_pct(o, s->util_gpu_p95, 0);
        put(o, "  max ");
        put_pct(o, s->util_gpu_max, 0);
    } else {
        put(o, na);
    }
    put_ch(o, '\n');

    put_label(o, "util.mem");
    if (v & GP_M_UTIL_MEM) {
        put(o, "mean ");
        put_pct(o, s->util_mem_mean, 1);
        put(o, "  max ");
        put_pct(o, s->util_mem_max, 0);
    } else {
        put(o, na);
    }
    put_ch(o, '\n');

    put_label(o, "memory used");
    if (v & (GP_M_MEM_USED | GP_M_MEM_TOTAL)) {
        uint64_t used = (v & GP_M_MEM_USED) ? s->mem_used_max_bytes : 0;
        uint64_t total = (v & GP_M_MEM_TOTAL) ? s->mem_total_bytes : 0;
        uint64_t scale = used > total ? used : total;
        put(o, "max ");
        if (v & GP_M_MEM_USED)
            put_bytes(o, used, scale);
        else
            put(o, na);
        put(o, " of ");
        if (v & GP_M_MEM_TOTAL)
            put_bytes(o, total, scale);
        else
            put(o, na);
        if ((v & GP_M_MEM_USED) && (v & GP_M_MEM_TOTAL) && total > 0) {
            put(o, " (");
            put_pct(o, 100.0 * (double)used / (double)total, 1);
            put(o, ")");
        }
    } else {
        put(o, na);
    }
    put_ch(o, '\n');

    put_label(o, "power");
    if (v & GP_M_POWER) {
        put(o, "mean ");
        put_fixed(o, s->power_mean_mw / 1000.0, 1, 0);
        put(o, " W  max ");
        put_fixed(o, s->power_max_mw / 1000.0, 1, 0);
        put(o, " W");
    } else {
        put(o, na);
    }
    put_ch(o, '\n');

    put_label(o, "energy");
    if (s->energy_source != GP_ENERGY_NONE && isfinite(s->energy_j)) {
        put_sig(o, s->energy_j);
        put(o, s->energy_source == GP_ENERGY_COUNTER ? " J (counter)" : " J (power integral)");
    } else {
        put(o, na);
    }
    put_ch(o, '\n');

    put_label(o, "temperature");
    if (v & GP_M_TEMP) {
        put(o, "max ");
        put_i64(o, s->temp_max_c);
        put(o, (flags & GP_FMT_ASCII) ? " C"
                                      : " \xc2\xb0"
                                        "C");
    } else {
        put(o, na);
    }
    put_ch(o, '\n');

    put_label(o, "clocks");
    put(o, "SM mean ");
    if (v & GP_M_CLOCK_SM) {
        put_fixed(o, s->clock_sm_mean_mhz, 0, 0);
        put(o, " MHz");
    } else {
        put(o, na);
    }
    put(o, "  mem mean ");
    if (v & GP_M_CLOCK_MEM) {
        put_fixed(o, s->clock_mem_mean_mhz, 0, 0);
        put(o, " MHz");
    } else {
        put(o, na);
    }
    put_ch(o, '\n');

    put_throttle(o, s);

    put_label(o, "busy time est.");
    if ((v & GP_M_UTIL_GPU) && isfinite(s->busy_time_est_s)) {
        put_seconds(o, s->busy_time_est_s);
        put(o, " (duration x mean util.gpu)");
    } else {
        put(o, na);
    }
    put_ch(o, '\n');

    put_label(o, "util.gpu trace");
    if (spark_cells(s) > 0) {
        put_ch(o, '|');
        put_sparkline(o, s, flags);
        put_ch(o, '|');
    } else {
        put(o, na);
    }
    put_ch(o, '\n');

    size_t note_n = field_len(s->note, sizeof s->note);
    if (note_n) {
        put_label(o, "note");
        put_wrapped(o, s->note, note_n, LABEL_COLS);
        put_ch(o, '\n');
    }
    if (has_device_error(s)) {
        put_label(o, "device error");
        char head[160];
        out h;
        out_init(&h, head, sizeof head);
        put(&h, gp_strerror(s->device_status));
        if (isfinite(s->device_error_at_s)) {
            put(&h, " at ");
            put_seconds(&h, s->device_error_at_s);
        }
        put_ch(&h, ':');
        out_finish(&h);
        put(o, head);
        size_t col = LABEL_COLS + strlen(head);
        size_t err_n = field_len(s->device_error, sizeof s->device_error);
        if (err_n) {
            put_ch(o, ' ');
            put_wrapped(o, s->device_error, err_n, col + 1);
        }
        put_ch(o, '\n');
        put_label(o, "");
        put(o, "(statistics cover the samples before it)\n");
    }
}

size_t gp_summary_format(const gp_summary *s, unsigned flags, char *buf, size_t cap)
{
    out o;
    out_init(&o, buf, cap);
    if (s)
        format_text(&o, s, flags);
    return out_finish(&o);
}

gp_status gp_summary_print(const gp_summary *s, FILE *f, unsigned flags, gp_error *err)
{
    gp_error_clear(err);
    if (!s)
        return gp_error_set(err, GP_ERR_INVALID_ARG, "gp_summary_print: summary is NULL");
    if (!f)
        return gp_error_set(err, GP_ERR_INVALID_ARG,
                            "gp_summary_print: FILE is NULL: pass an open stream such as stderr");
    size_t len = gp_summary_format(s, flags, NULL, 0);
    char *text = malloc(len + 1);
    if (!text)
        return gp_error_set(err, GP_ERR_NO_MEMORY, "gp_summary_print: cannot allocate %zu bytes",
                            len + 1);
    gp_summary_format(s, flags, text, len + 1);
    errno = 0;
    size_t wrote = fwrite(text, 1, len, f);
    free(text);
    /* Flushed so a full disk or closed pipe is reported here, not lost. */
    if (wrote != len || fflush(f) != 0 || ferror(f)) {
        int e = errno;
        return gp_error_set(err, GP_ERR_IO, "gp_summary_print: cannot write the summary: %s",
                            e ? strerror(e) : "write error");
    }
    return GP_OK;
}

/* ------------------------------------------------------------ JSON */

typedef struct json {
    out *o;
    int pretty;
    int first;
} json;

static void json_str_n(out *o, const char *s, size_t n)
{
    gp_json_quote(s, n, emit_out, o);
}

static void json_key(json *j, const char *key)
{
    if (!j->first)
        put_ch(j->o, ',');
    j->first = 0;
    if (j->pretty)
        put(j->o, "\n  ");
    put_ch(j->o, '"');
    put(j->o, key);
    put(j->o, j->pretty ? "\": " : "\":");
}

static void json_null(json *j, const char *key)
{
    json_key(j, key);
    put(j->o, "null");
}

static void json_u64(json *j, const char *key, int ok, uint64_t v)
{
    json_key(j, key);
    if (ok)
        put_u64(j->o, v);
    else
        put(j->o, "null");
}

static void json_i64(json *j, const char *key, int ok, int64_t v)
{
    json_key(j, key);
    if (ok)
        put_i64(j->o, v);
    else
        put(j->o, "null");
}

/* Doubles: fixed point, 6 decimals at most, trailing zeros trimmed. */
static void json_num(json *j, const char *key, int ok, double v)
{
    json_key(j, key);
    if (ok && isfinite(v))
        put_fixed(j->o, v, 6, 1);
    else
        put(j->o, "null");
}

/* A string field; empty means unknown and is written as null. */
static void json_field(json *j, const char *key, const char *s, size_t size)
{
    json_key(j, key);
    size_t n = field_len(s, size);
    if (n)
        json_str_n(j->o, s, n);
    else
        put(j->o, "null");
}

static void json_sep(json *j, int *first)
{
    if (!*first)
        put(j->o, j->pretty ? ", " : ",");
    *first = 0;
}

static void format_json(out *o, const gp_summary *s, unsigned flags)
{
    json j = {o, (flags & GP_FMT_PRETTY) != 0, 1};
    const uint32_t v = s->valid;
    put_ch(o, '{');

    json_key(&j, "schema");
    json_str_n(o, GP_SUMMARY_SCHEMA, strlen(GP_SUMMARY_SCHEMA));
    json_u64(&j, "schema_version", 1, GP_SUMMARY_SCHEMA_VERSION);

    json_u64(&j, "device_index", 1, s->device_index);
    json_field(&j, "name", s->name, sizeof s->name);
    json_field(&j, "uuid", s->uuid, sizeof s->uuid);
    json_field(&j, "backend", s->backend, sizeof s->backend);
    json_field(&j, "note", s->note, sizeof s->note);

    json_num(&j, "duration_s", 1, s->duration_s);
    json_num(&j, "interval_s", 1, s->interval_s);
    json_num(&j, "warmup_s", 1, s->warmup_s);
    json_u64(&j, "sample_count", 1, s->sample_count);
    json_u64(&j, "samples_warmup", 1, s->samples_warmup);
    json_num(&j, "interval_mean_s", s->sample_count >= 2, s->interval_mean_s);
    json_u64(&j, "valid_mask", 1, v);

    int ug = (v & GP_M_UTIL_GPU) != 0, um = (v & GP_M_UTIL_MEM) != 0;
    json_num(&j, "util_gpu_mean_pct", ug, s->util_gpu_mean);
    json_u64(&j, "util_gpu_p50_pct", ug, s->util_gpu_p50);
    json_u64(&j, "util_gpu_p95_pct", ug, s->util_gpu_p95);
    json_u64(&j, "util_gpu_max_pct", ug, s->util_gpu_max);
    json_num(&j, "util_mem_mean_pct", um, s->util_mem_mean);
    json_u64(&j, "util_mem_max_pct", um, s->util_mem_max);
    json_u64(&j, "mem_used_max_bytes", (v & GP_M_MEM_USED) != 0, s->mem_used_max_bytes);
    json_u64(&j, "mem_total_bytes", (v & GP_M_MEM_TOTAL) != 0, s->mem_total_bytes);
    json_num(&j, "power_mean_mw", (v & GP_M_POWER) != 0, s->power_mean_mw);
    json_u64(&j, "power_max_mw", (v & GP_M_POWER) != 0, s->power_max_mw);
    json_num(&j, "energy_j", s->energy_source != GP_ENERGY_NONE, s->energy_j);
    json_key(&j, "energy_source");
    json_str_n(o, gp_energy_source_name(s->energy_source),
               strlen(gp_energy_source_name(s->energy_source)));
    json_i64(&j, "temp_max_c", (v & GP_M_TEMP) != 0, s->temp_max_c);
    json_num(&j, "clock_sm_mean_mhz", (v & GP_M_CLOCK_SM) != 0, s->clock_sm_mean_mhz);
    json_num(&j, "clock_mem_mean_mhz", (v & GP_M_CLOCK_MEM) != 0, s->clock_mem_mean_mhz);

    if (v & GP_M_THROTTLE) {
        json_key(&j, "throttle_reasons");
        put_ch(o, '[');
        int first = 1;
        for (unsigned bit = 0; bit < 64; bit++) {
            if (!(s->throttle_reasons_seen & (1ull << bit)))
                continue;
            char name[32];
            throttle_name(name, sizeof name, bit);
            json_sep(&j, &first);
            json_str_n(o, name, strlen(name));
        }
        put_ch(o, ']');
        json_u64(&j, "throttle_reasons_mask", 1, s->throttle_reasons_seen);
    } else {
        json_null(&j, "throttle_reasons");
        json_null(&j, "throttle_reasons_mask");
    }
    json_num(&j, "busy_time_est_s", ug, s->busy_time_est_s);

    json_key(&j, "sparkline");
    put_ch(o, '[');
    int first = 1;
    for (uint32_t i = 0; i < spark_cells(s); i++) {
        json_sep(&j, &first);
        if (s->spark[i] == GP_SPARK_NONE)
            put(o, "null");
        else
            put_u64(o, s->spark[i] > 100 ? 100 : s->spark[i]);
    }
    put_ch(o, ']');

    json_key(&j, "device_status");
    json_str_n(o, status_id(s->device_status), strlen(status_id(s->device_status)));
    int failed = has_device_error(s);
    if (failed)
        json_field(&j, "device_error", s->device_error, sizeof s->device_error);
    else
        json_null(&j, "device_error");
    json_num(&j, "device_error_at_s", failed, s->device_error_at_s);

    put(o, j.pretty ? "\n}" : "}");
}

size_t gp_summary_to_json(const gp_summary *s, unsigned flags, char *buf, size_t cap)
{
    out o;
    out_init(&o, buf, cap);
    if (s)
        format_json(&o, s, flags);
    return out_finish(&o);
}
