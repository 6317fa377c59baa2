/*
 * sampler/render.c - the text and sparkline renderings of a gp_summary (the
 * JSON one is render_json.c; both write through render_out.h).
 *
 * Every rendering is snprintf-style (at most cap bytes written, NUL
 * included; the full length returned), deterministic and independent of
 * the C locale: numbers are formatted here, not by printf's %f.  A metric
 * whose valid bit is clear is written as "n/a" in text and null in JSON,
 * never as 0.  A NULL summary renders as the empty string.
 */
#include "../util/error.h"
#include "../util/text.h"
#include "render_out.h"
#include "gpu_profile.h"

#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#define TEXT_WIDTH 80
#define LABEL_COLS 20 /* "  " + label padded to 18 */

const char *gp_energy_source_name(gp_energy_source src)
{
    static const char *const names[] = {[GP_ENERGY_NONE] = "none",
                                        [GP_ENERGY_COUNTER] = "counter",
                                        [GP_ENERGY_POWER_INTEGRAL] = "power_integral"};
    unsigned i = (unsigned)src;
    return i < sizeof names / sizeof names[0] ? names[i] : "none";
}

/* ------------------------------------------------------------------ GPM */

static const struct {
    const char *name;  /* JSON / recorder stem */
    const char *label; /* text */
} gpm_names[GP_GPM_COUNT] = {
    [GP_GPM_SM_ACTIVE] = {"sm_active", "SM active"},
    [GP_GPM_SM_OCCUPANCY] = {"sm_occupancy", "SM occupancy"},
    [GP_GPM_TENSOR_ACTIVE] = {"tensor_active", "tensor active"},
    [GP_GPM_TENSOR_DFMA] = {"tensor_dfma_active", "tensor DFMA"},
    [GP_GPM_TENSOR_HMMA] = {"tensor_hmma_active", "tensor HMMA"},
    [GP_GPM_TENSOR_IMMA] = {"tensor_imma_active", "tensor IMMA"},
    [GP_GPM_DRAM_ACTIVE] = {"dram_active", "DRAM bandwidth"},
    [GP_GPM_FP64_ACTIVE] = {"fp64_active", "FP64 active"},
    [GP_GPM_FP32_ACTIVE] = {"fp32_active", "FP32 active"},
    [GP_GPM_FP16_ACTIVE] = {"fp16_active", "FP16 active"},
    [GP_GPM_PCIE_TX] = {"gpm_pcie_tx", "PCIe tx (GPM)"},
    [GP_GPM_PCIE_RX] = {"gpm_pcie_rx", "PCIe rx (GPM)"},
    [GP_GPM_NVLINK_TX] = {"nvlink_tx", "NVLink tx"},
    [GP_GPM_NVLINK_RX] = {"nvlink_rx", "NVLink rx"},
};

const char *gp_gpm_metric_name(gp_gpm_metric m)
{
    return (unsigned)m < GP_GPM_COUNT ? gpm_names[m].name : NULL;
}

int gp_gpm_metric_is_rate(gp_gpm_metric m)
{
    return m >= GP_GPM_PCIE_TX && m < GP_GPM_COUNT;
}

/* ------------------------------------------------------------ terminal text */

static void put_spaces(gp_out *o, size_t n)
{
    while (n--)
        gp_out_ch(o, ' ');
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
static void put_clean(gp_out *o, const char *s, size_t n)
{
    const unsigned char *u = (const unsigned char *)s;
    size_t i = 0;
    while (i < n) {
        size_t len = gp_utf8_len(u + i, n - i);
        if (len == 0 || (len == 1 && (u[i] < 0x20 || u[i] == 0x7F))) {
            gp_out_ch(o, '?');
            i++;
        } else {
            gp_out_n(o, s + i, len);
            i += len;
        }
    }
}

/* ------------------------------------------------------------ sparkline */

static void put_sparkline(gp_out *o, const gp_summary *s, unsigned flags)
{
    static const char *const blocks[8] = {"\xe2\x96\x81", "\xe2\x96\x82", "\xe2\x96\x83",
                                          "\xe2\x96\x84", "\xe2\x96\x85", "\xe2\x96\x86",
                                          "\xe2\x96\x87", "\xe2\x96\x88"};
    static const char ascii[] = "_.-:=+*#";
    uint32_t n = gp_spark_cells(s);
    for (uint32_t i = 0; i < n; i++) {
        unsigned v = s->spark[i];
        if (v == GP_SPARK_NONE) {
            gp_out_ch(o, ' ');
            continue;
        }
        if (v > 100)
            v = 100;
        unsigned level = (v * 7 + 50) / 100;
        if (flags & GP_FMT_ASCII)
            gp_out_ch(o, ascii[level]);
        else
            gp_out_str(o, blocks[level]);
    }
}

size_t gp_summary_sparkline(const gp_summary *s, unsigned flags, char *buf, size_t cap)
{
    return gp_out_render(put_sparkline, s, flags, buf, cap);
}

/* ------------------------------------------------------------ text */

static void put_label(gp_out *o, const char *label)
{
    gp_out_str(o, "  ");
    gp_out_str(o, label);
    size_t cols = strlen(label) + 2;
    put_spaces(o, cols < LABEL_COLS ? LABEL_COLS - cols : 1);
}

static void put_pct(gp_out *o, double v, int decimals)
{
    gp_out_fixed(o, v, decimals, 0);
    gp_out_ch(o, '%');
}

/* One figure of a distribution: its name ("  p95 "), then the percentage. */
static void put_named_pct(gp_out *o, const char *name, double v, int decimals)
{
    gp_out_str(o, name);
    put_pct(o, v, decimals);
}

/* A byte count in the unit that suits `scale_bytes`, so used and total
 * read in the same unit. */
static void put_bytes(gp_out *o, uint64_t v, uint64_t scale_bytes)
{
    const double gib = 1024.0 * 1024.0 * 1024.0, mib = 1024.0 * 1024.0;
    if (scale_bytes >= (uint64_t)gib) {
        gp_out_fixed(o, (double)v / gib, 2, 0);
        gp_out_str(o, " GiB");
    } else if (scale_bytes >= (uint64_t)mib) {
        gp_out_fixed(o, (double)v / mib, 1, 0);
        gp_out_str(o, " MiB");
    } else {
        gp_out_u64(o, v);
        gp_out_str(o, " B");
    }
}

/* A byte count, or "n/a" when it is not known (!known). */
static void put_bytes_or_na(gp_out *o, bool known, uint64_t v, uint64_t scale_bytes)
{
    if (known)
        put_bytes(o, v, scale_bytes);
    else
        gp_out_str(o, "n/a");
}

/* Seconds with millisecond resolution, or n/a for nonsense. */
static void put_seconds(gp_out *o, double v)
{
    if (isfinite(v)) {
        gp_out_fixed(o, v, 3, 0);
        gp_out_str(o, " s");
    } else {
        gp_out_str(o, "n/a");
    }
}

/* A time that may be under a millisecond (an achieved interval): in ms
 * then, so the text never says "0.000 s" for what the JSON has as 0.0004. */
static void put_seconds_fine(gp_out *o, double v)
{
    if (isfinite(v) && v > 0 && v < 0.0005) {
        gp_out_fixed(o, v * 1e3, 3, 0);
        gp_out_str(o, " ms");
    } else {
        put_seconds(o, v);
    }
}

/* A figure with about three significant digits or more: small energies
 * keep their decimals, large ones do not get noisy. */
static void put_sig(gp_out *o, double v)
{
    double a = fabs(v);
    gp_out_fixed(o, v, a >= 100 ? 1 : a >= 10 ? 2 : 3, 0);
}

/* Before a word of w columns that does not start the text: a space, or,
 * past TEXT_WIDTH, a new line indented to the value column.  The new
 * column. */
static size_t space_or_wrap(gp_out *o, size_t col, size_t w)
{
    if (col + 1 + w > TEXT_WIDTH) {
        gp_out_ch(o, '\n');
        put_spaces(o, LABEL_COLS);
        return LABEL_COLS;
    }
    gp_out_ch(o, ' ');
    return col + 1;
}

/* Free text wrapped at TEXT_WIDTH, continuation lines indented to the
 * value column; `col` is where the first line starts.  Words longer than
 * a line are kept whole. */
static void put_wrapped(gp_out *o, const char *s, size_t n, size_t col)
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
            col = space_or_wrap(o, col, w);
        }
        put_clean(o, s + i, j - i);
        col += w;
        first_word = 0;
        i = j;
    }
}

/* A MIG instance's title: "MIG 1g.10gb (GI 9 CI 0) of GPU 0 <parent's
 * name>", an unknown part as n/a. */
static void mig_title(const gp_mig_info *m, char *buf, size_t cap)
{
    char gi[16] = "n/a", ci[16] = "n/a";
    if (m->gpu_instance_id >= 0)
        snprintf(gi, sizeof gi, "%d", (int)m->gpu_instance_id);
    if (m->compute_instance_id >= 0)
        snprintf(ci, sizeof ci, "%d", (int)m->compute_instance_id);
    size_t pn = gp_field_len(m->parent_name, sizeof m->parent_name);
    snprintf(buf, cap, "MIG %.*s (GI %s CI %s) of GPU %u%s%.*s",
             (int)gp_field_len(m->profile, sizeof m->profile), m->profile, gi, ci,
             (unsigned)m->parent_index, pn ? " " : "", (int)pn, m->parent_name);
}

static void put_header(gp_out *o, const gp_summary *s)
{
    char title[GP_NAME_MAX + GP_MIG_PROFILE_MAX + 64];
    const char *name = s->name;
    size_t name_n = gp_field_len(s->name, sizeof s->name);
    if (s->mig.is_mig) {
        mig_title(&s->mig, title, sizeof title);
        name = title;
        name_n = strlen(title);
    }
    size_t uuid_n = gp_field_len(s->uuid, sizeof s->uuid);
    size_t be_n = gp_field_len(s->backend, sizeof s->backend);
    char idx[24];
    snprintf(idx, sizeof idx, "GPU %u", (unsigned)s->device_index);
    gp_out_str(o, idx);
    size_t col = strlen(idx);
    if (name_n) {
        gp_out_str(o, "  ");
        put_clean(o, name, name_n);
        col += 2 + text_cols(name, name_n);
    }
    size_t tail = (uuid_n ? 2 + text_cols(s->uuid, uuid_n) : 0) + 4 +
                  (be_n ? text_cols(s->backend, be_n) : 3);
    if (col + tail > TEXT_WIDTH) {
        /* A long name: the UUID and backend go on their own line. */
        gp_out_str(o, "\n     ");
    }
    if (uuid_n) {
        gp_out_str(o, "  ");
        put_clean(o, s->uuid, uuid_n);
    }
    gp_out_str(o, "  [");
    if (be_n)
        put_clean(o, s->backend, be_n);
    else
        gp_out_str(o, "n/a");
    gp_out_str(o, "]\n");
}

static void put_throttle(gp_out *o, const gp_summary *s)
{
    put_label(o, "throttle reasons");
    if (!(s->valid & GP_M_THROTTLE)) {
        gp_out_str(o, "n/a\n");
        return;
    }
    uint64_t mask = s->throttle_reasons_seen;
    if (mask == 0) {
        gp_out_str(o, "none\n");
        return;
    }
    size_t col = LABEL_COLS;
    int first = 1;
    for (unsigned bit = 0; bit < 64; bit++) {
        if (!(mask & (1ull << bit)))
            continue;
        char name[32];
        gp_throttle_name(name, sizeof name, bit);
        size_t w = strlen(name);
        if (!first) {
            gp_out_ch(o, ',');
            col++;
            col = space_or_wrap(o, col, w);
        }
        gp_out_str(o, name);
        col += w;
        first = 0;
    }
    gp_out_ch(o, '\n');
}

/* duration, samples (and the warmup left out), interval requested and achieved */
static void put_timing(gp_out *o, const gp_summary *s)
{
    put_label(o, "duration");
    put_seconds(o, s->duration_s);
    gp_out_ch(o, '\n');

    put_label(o, "samples");
    gp_out_u64(o, s->sample_count);
    if (s->samples_warmup > 0 || s->warmup_s > 0) {
        gp_out_str(o, " (+");
        gp_out_u64(o, s->samples_warmup);
        if (s->warmup_s >= s->duration_s) {
            /* The warmup outlasted the region: say so, not "in 10 s". */
            gp_out_str(o, " dropped: the whole ");
            put_seconds(o, s->duration_s);
            gp_out_str(o, " fell within the ");
            put_seconds(o, s->warmup_s);
            gp_out_str(o, " warmup)");
        } else {
            gp_out_str(o, " dropped in ");
            put_seconds(o, s->warmup_s);
            gp_out_str(o, " warmup)");
        }
    }
    gp_out_ch(o, '\n');

    put_label(o, "interval");
    put_seconds(o, s->interval_s);
    gp_out_str(o, " requested, ");
    if (s->sample_count >= 2)
        put_seconds_fine(o, s->interval_mean_s);
    else
        gp_out_str(o, "n/a");
    gp_out_str(o, " achieved\n");
}

/* A labelled line whose value fn writes, "n/a" when fn says it has none. */
static void put_line(gp_out *o, const char *label, bool (*fn)(gp_out *, const gp_summary *),
                     const gp_summary *s)
{
    put_label(o, label);
    if (!fn(o, s))
        gp_out_str(o, "n/a");
    gp_out_ch(o, '\n');
}

static bool util_mem_value(gp_out *o, const gp_summary *s)
{
    if (!(s->valid & GP_M_UTIL_MEM))
        return false;
    put_named_pct(o, "mean ", s->util_mem_mean, 1);
    put_named_pct(o, "  max ", s->util_mem_max, 0);
    return true;
}

/* util.gpu's distribution */
static bool util_gpu_value(gp_out *o, const gp_summary *s)
{
    if (!(s->valid & GP_M_UTIL_GPU))
        return false;
    put_named_pct(o, "mean ", s->util_gpu_mean, 1);
    put_named_pct(o, "  p50 ", s->util_gpu_p50, 0);
    put_named_pct(o, "  p95 ", s->util_gpu_p95, 0);
    put_named_pct(o, "  max ", s->util_gpu_max, 0);
    /* The rest of the distribution on lines of its own under the
     * value column, so the first line reads as it always did. */
    gp_out_ch(o, '\n');
    put_spaces(o, LABEL_COLS);
    put_named_pct(o, "min ", s->util_gpu_min, 0);
    put_named_pct(o, "  p5 ", s->util_gpu_p5, 0);
    put_named_pct(o, "  p99 ", s->util_gpu_p99, 0);
    gp_out_str(o, "  std ");
    if (isfinite(s->util_gpu_std))
        put_pct(o, s->util_gpu_std, 1);
    else
        gp_out_str(o, "n/a");
    gp_out_ch(o, '\n');
    put_spaces(o, LABEL_COLS);
    put_named_pct(o, "idle (<5%) ", s->util_gpu_idle_pct, 1);
    put_named_pct(o, "  active (>=50%) ", s->util_gpu_active_pct, 1);
    return true;
}

/* memory used: the peak against the total, both in one unit, and its share */
static bool memory_value(gp_out *o, const gp_summary *s)
{
    const uint32_t v = s->valid;
    if (!(v & (GP_M_MEM_USED | GP_M_MEM_TOTAL)))
        return false;
    uint64_t used = (v & GP_M_MEM_USED) ? s->mem_used_max_bytes : 0;
    uint64_t total = (v & GP_M_MEM_TOTAL) ? s->mem_total_bytes : 0;
    uint64_t scale = used > total ? used : total;
    gp_out_str(o, "max ");
    put_bytes_or_na(o, v & GP_M_MEM_USED, used, scale);
    gp_out_str(o, " of ");
    put_bytes_or_na(o, v & GP_M_MEM_TOTAL, total, scale);
    if ((v & GP_M_MEM_USED) && (v & GP_M_MEM_TOTAL) && total > 0) {
        put_named_pct(o, " (", 100.0 * (double)used / (double)total, 1);
        gp_out_str(o, ")");
    }
    if (v & GP_M_MEM_USED) {
        gp_out_str(o, "  mean ");
        put_bytes(o, (uint64_t)(s->mem_used_mean_bytes + 0.5), scale);
    }
    return true;
}

/* power and energy, with where the energy figure comes from */
static bool power_value(gp_out *o, const gp_summary *s)
{
    if (!(s->valid & GP_M_POWER))
        return false;
    gp_out_str(o, "mean ");
    gp_out_fixed(o, s->power_mean_mw / 1000.0, 1, 0);
    gp_out_str(o, " W  max ");
    gp_out_fixed(o, s->power_max_mw / 1000.0, 1, 0);
    gp_out_str(o, " W");
    return true;
}

static bool energy_value(gp_out *o, const gp_summary *s)
{
    if (s->energy_source == GP_ENERGY_NONE || !isfinite(s->energy_j))
        return false;
    put_sig(o, s->energy_j);
    gp_out_str(o, s->energy_source == GP_ENERGY_COUNTER ? " J (counter" : " J (power integral");
    /* A figure over much less than the region is not the region's. */
    if (s->energy_span_s < 0.9 * s->duration_s) {
        gp_out_str(o, ", covers ");
        put_seconds(o, s->energy_span_s);
        gp_out_str(o, " of ");
        put_seconds(o, s->duration_s);
    }
    gp_out_ch(o, ')');
    return true;
}

/* temperature in "C", as the report and nvidia-smi write it: one
 * spelling whatever the locale (docs/json-schema.md, "Vocabulary") */
static bool temperature_value(gp_out *o, const gp_summary *s)
{
    if (!(s->valid & GP_M_TEMP))
        return false;
    gp_out_str(o, "max ");
    gp_out_i64(o, s->temp_max_c);
    gp_out_str(o, " C");
    gp_out_str(o, "  mean ");
    gp_out_fixed(o, s->temp_mean_c, 1, 0);
    gp_out_str(o, " C");
    return true;
}

/* the SM and memory clocks */
static void put_clocks(gp_out *o, const gp_summary *s)
{
    const uint32_t v = s->valid;
    put_label(o, "clocks");
    gp_out_str(o, "SM mean ");
    if (v & GP_M_CLOCK_SM) {
        gp_out_fixed(o, s->clock_sm_mean_mhz, 0, 0);
        gp_out_str(o, " MHz (max ");
        gp_out_u64(o, s->clock_sm_max_mhz);
        gp_out_str(o, " MHz)");
    } else {
        gp_out_str(o, "n/a");
    }
    gp_out_str(o, "  mem mean ");
    if (v & GP_M_CLOCK_MEM) {
        gp_out_fixed(o, s->clock_mem_mean_mhz, 0, 0);
        gp_out_str(o, " MHz");
    } else {
        gp_out_str(o, "n/a");
    }
    gp_out_ch(o, '\n');
}

/* Bytes per second in decimal units (kB/s, MB/s, GB/s), 3 digits or so. */
static void put_rate(gp_out *o, double v)
{
    static const char *const units[] = {"B/s", "kB/s", "MB/s", "GB/s", "TB/s"};
    unsigned u = 0;
    while (v >= 1000.0 && u < 4) {
        v /= 1000.0;
        u++;
    }
    put_sig(o, v);
    gp_out_ch(o, ' ');
    gp_out_str(o, units[u]);
}

static void put_gpm_value(gp_out *o, unsigned i, double v)
{
    if (gp_gpm_metric_is_rate((gp_gpm_metric)i))
        put_rate(o, v);
    else
        put_pct(o, v, 1);
}

/* The GPM headline ("util.gpu 94 % · SM active 38 % · tensor 12 % · DRAM
 * 61 %", means rounded) and a line per GPM metric the device reported;
 * nothing at all for a device without GPM. */
static void put_gpm(gp_out *o, const gp_summary *s, unsigned flags)
{
    if (!(s->valid & GP_M_GPM_ALL))
        return;
    static const struct {
        int metric; /* -1: util.gpu */
        const char *label;
    } head[] = {{-1, "util.gpu"},
                {GP_GPM_SM_ACTIVE, "SM active"},
                {GP_GPM_TENSOR_ACTIVE, "tensor"},
                {GP_GPM_DRAM_ACTIVE, "DRAM"}};
    const char *sep = (flags & GP_FMT_ASCII) ? " | " : " \xc2\xb7 ";
    put_label(o, "activity");
    for (size_t k = 0; k < sizeof head / sizeof head[0]; k++) {
        if (k)
            gp_out_str(o, sep);
        gp_out_str(o, head[k].label);
        gp_out_ch(o, ' ');
        int m = head[k].metric;
        int ok = m < 0 ? (s->valid & GP_M_UTIL_GPU) != 0 : (s->valid & GP_M_GPM(m)) != 0;
        double v = m < 0 ? s->util_gpu_mean : s->gpm_mean[m];
        if (ok) {
            gp_out_fixed(o, v, 0, 0);
            gp_out_str(o, " %");
        } else {
            gp_out_str(o, "n/a");
        }
    }
    gp_out_ch(o, '\n');
    for (unsigned i = 0; i < GP_GPM_COUNT; i++) {
        if (!(s->valid & GP_M_GPM(i)))
            continue;
        put_label(o, gpm_names[i].label);
        gp_out_str(o, "mean ");
        put_gpm_value(o, i, s->gpm_mean[i]);
        gp_out_str(o, "  p95 ");
        put_gpm_value(o, i, s->gpm_p95[i]);
        gp_out_str(o, "  max ");
        put_gpm_value(o, i, s->gpm_max[i]);
        gp_out_ch(o, '\n');
    }
}

/* A mean percentage and the device's beside it ("30.0% of 42.0%"). */
static void put_pct_of(gp_out *o, double ours, int device_ok, double device)
{
    put_pct(o, ours, 1);
    gp_out_str(o, " of ");
    if (device_ok)
        put_pct(o, device, 1);
    else
        gp_out_str(o, "n/a");
}

/* The profiled processes' share of the device (only when processes were
 * named): memory, then SM and memory utilisation, means beside the
 * device's own figures. */
static void put_process(gp_out *o, const gp_summary *s, unsigned flags)
{
    if (!s->proc_requested)
        return;
    const uint32_t v = s->valid;
    put_label(o, "process memory");
    if (v & GP_M_PROC_MEM) {
        uint64_t dev = (v & GP_M_MEM_USED) ? s->mem_used_max_bytes : 0;
        uint64_t scale = dev > s->proc_mem_used_max_bytes ? dev : s->proc_mem_used_max_bytes;
        gp_out_str(o, "max ");
        put_bytes(o, s->proc_mem_used_max_bytes, scale);
        gp_out_str(o, " of ");
        put_bytes_or_na(o, v & GP_M_MEM_USED, dev, scale);
        gp_out_str(o, " used (");
        gp_out_u64(o, s->proc_count_max);
        gp_out_str(o, s->proc_count_max == 1 ? " process)" : " processes)");
    } else {
        gp_out_str(o, "n/a");
    }
    gp_out_ch(o, '\n');
    put_label(o, "process util");
    if (v & GP_M_PROC_UTIL) {
        gp_out_str(o, "SM ");
        put_pct_of(o, s->proc_sm_mean_pct, (v & GP_M_UTIL_GPU) != 0, s->util_gpu_mean);
        gp_out_str(o, (flags & GP_FMT_ASCII) ? " | mem " : " \xc2\xb7 mem ");
        put_pct_of(o, s->proc_mem_mean_pct, (v & GP_M_UTIL_MEM) != 0, s->util_mem_mean);
        gp_out_str(o, " (means)");
    } else {
        gp_out_str(o, "n/a");
    }
    gp_out_ch(o, '\n');
}

/* busy time est. and the util.gpu sparkline */
static void put_activity(gp_out *o, const gp_summary *s, unsigned flags)
{
    put_label(o, "busy time est.");
    if ((s->valid & GP_M_UTIL_GPU) && isfinite(s->busy_time_est_s)) {
        put_seconds(o, s->busy_time_est_s);
        if (s->device_status != GP_OK && s->device_error_at_s < s->duration_s) {
            gp_out_str(o, " (live ");
            put_seconds(o, s->device_error_at_s);
            gp_out_str(o, " until it failed x mean util.gpu)");
        } else {
            gp_out_str(o, " (duration x mean util.gpu)");
        }
    } else {
        gp_out_str(o, "n/a");
    }
    gp_out_ch(o, '\n');

    put_label(o, "util.gpu trace");
    if (gp_spark_cells(s) > 0) {
        gp_out_ch(o, '|');
        put_sparkline(o, s, flags);
        gp_out_ch(o, '|');
    } else {
        gp_out_str(o, "n/a");
    }
    gp_out_ch(o, '\n');
}

/* A "busy but stuck" stretch, where one was seen (docs/concepts.md): the
 * signature of a hung collective, said where the eye looks. */
static void put_stuck(gp_out *o, const gp_summary *s)
{
    if (!s->stuck_episodes)
        return;
    put_label(o, "STUCK");
    gp_out_u64(o, s->stuck_episodes);
    gp_out_str(o, s->stuck_episodes == 1 ? " stretch" : " stretches");
    gp_out_str(o, " busy but stuck, longest ");
    put_seconds(o, s->stuck_longest_s);
    gp_out_str(o,
               ": util.gpu >= 90 % with SM activity <= 5 % at idle power (a hung collective?)\n");
}

/* One "+N what" part of the health line, where the counter rose. */
static void put_rise(gp_out *o, int *n, uint64_t v, const char *what)
{
    if (!v)
        return;
    gp_out_str(o, (*n)++ ? ", " : "");
    gp_out_ch(o, '+');
    gp_out_u64(o, v);
    gp_out_ch(o, ' ');
    gp_out_str(o, what);
}

/* An encoder / decoder line, only when it worked: an idle codec is no
 * news on a compute job. */
static void put_codec(gp_out *o, const char *label, bool ok, double mean, uint32_t max)
{
    if (!ok || !max)
        return;
    put_label(o, label);
    gp_out_str(o, "mean ");
    put_pct(o, mean, 1);
    gp_out_str(o, "  max ");
    gp_out_u64(o, max);
    gp_out_str(o, "%\n");
}

/* The health figures (docs/concepts.md, "Health"): a "health" line only
 * for what went wrong during the region (an XID, a counter that rose, a
 * remap pending or failed: the news a reader must not miss); the gauges
 * (fan, memory temperature, encoder / decoder) where the device reports
 * them, the codecs only when they worked.  Nothing for what it does not
 * report: unknown is not "healthy". */
static void put_health(gp_out *o, const gp_summary *s)
{
    uint32_t h = s->health_valid;
    bool rm = (h & GP_H_REMAP) != 0;
    bool bad = ((h & GP_H_XID) && s->xid_count) ||
               (rm && (s->remap_pending || s->remap_failure || s->remapped_rows_corr_increase ||
                       s->remapped_rows_unc_increase)) ||
               s->ecc_sbe_volatile_increase || s->ecc_dbe_volatile_increase ||
               s->retired_pages_sbe_increase || s->retired_pages_dbe_increase ||
               s->pcie_replay_increase || s->nvlink_crc_flit_increase ||
               s->nvlink_recovery_increase;
    if (bad) {
        put_label(o, "HEALTH");
        int n = 0;
        if ((h & GP_H_XID) && s->xid_count) {
            gp_out_u64(o, s->xid_count);
            gp_out_str(o, s->xid_count == 1 ? " XID" : " XIDs");
            gp_out_str(o, " (newest ");
            gp_out_u64(o, s->xid_last);
            gp_out_ch(o, ')');
            n++;
        }
        put_rise(o, &n, s->ecc_sbe_volatile_increase, "ECC SBE");
        put_rise(o, &n, s->ecc_dbe_volatile_increase, "ECC DBE");
        put_rise(o, &n, s->retired_pages_sbe_increase + s->retired_pages_dbe_increase,
                 "retired pages");
        put_rise(o, &n, s->remapped_rows_corr_increase + s->remapped_rows_unc_increase,
                 "remapped rows");
        if (rm && s->remap_pending)
            gp_out_str(o,
                       n++ ? ", remap pending (reset the GPU)" : "remap pending (reset the GPU)");
        if (rm && s->remap_failure)
            gp_out_str(o, n++ ? ", remap failed" : "remap failed");
        put_rise(o, &n, s->pcie_replay_increase, "PCIe replays");
        put_rise(o, &n, s->nvlink_crc_flit_increase + s->nvlink_recovery_increase, "NVLink errors");
        gp_out_ch(o, '\n');
    }
    if (h & GP_H_FAN) {
        put_label(o, "fan");
        gp_out_str(o, "max ");
        gp_out_u64(o, s->fan_max_pct);
        gp_out_str(o, "%\n");
    }
    if (h & GP_H_MEM_TEMP) {
        put_label(o, "memory temp");
        gp_out_str(o, "max ");
        gp_out_i64(o, s->mem_temp_max_c);
        gp_out_str(o, " C\n");
    }
    put_codec(o, "video encoder", (h & GP_H_ENC) != 0, s->enc_util_mean_pct, s->enc_util_max_pct);
    put_codec(o, "video decoder", (h & GP_H_DEC) != 0, s->dec_util_mean_pct, s->dec_util_max_pct);
}

/* The device error that ended the sampling, if one did: status, when, and
 * the backend's message wrapped under the value column. */
static void put_device_error(gp_out *o, const gp_summary *s)
{
    if (!gp_has_device_error(s))
        return;
    put_label(o, "device error");
    char head[160];
    gp_out h;
    gp_out_init(&h, head, sizeof head);
    gp_out_str(&h, gp_strerror(s->device_status));
    if (isfinite(s->device_error_at_s)) {
        gp_out_str(&h, " at ");
        put_seconds(&h, s->device_error_at_s);
    }
    gp_out_ch(&h, ':');
    gp_out_finish(&h);
    gp_out_str(o, head);
    size_t col = LABEL_COLS + strlen(head);
    size_t err_n = gp_field_len(s->device_error, sizeof s->device_error);
    if (err_n) {
        gp_out_ch(o, ' ');
        put_wrapped(o, s->device_error, err_n, col + 1);
    }
    gp_out_ch(o, '\n');
    put_label(o, "");
    gp_out_str(o, "(statistics cover the samples before it)\n");
}

static void format_text(gp_out *o, const gp_summary *s, unsigned flags)
{
    put_header(o, s);
    put_timing(o, s);
    put_line(o, "util.gpu", util_gpu_value, s);
    put_line(o, "util.mem", util_mem_value, s);
    put_gpm(o, s, flags);
    put_line(o, "memory used", memory_value, s);
    put_process(o, s, flags);
    put_line(o, "power", power_value, s);
    put_line(o, "energy", energy_value, s);
    put_line(o, "temperature", temperature_value, s);
    put_clocks(o, s);
    put_throttle(o, s);
    put_activity(o, s, flags);
    size_t note_n = gp_field_len(s->note, sizeof s->note);
    if (note_n) {
        put_label(o, "note");
        put_wrapped(o, s->note, note_n, LABEL_COLS);
        gp_out_ch(o, '\n');
    }
    put_device_error(o, s);
    put_stuck(o, s);
    put_health(o, s);
}

size_t gp_summary_format(const gp_summary *s, unsigned flags, char *buf, size_t cap)
{
    return gp_out_render(format_text, s, flags, buf, cap);
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
