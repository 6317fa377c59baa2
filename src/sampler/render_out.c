/*
 * sampler/render_out.c - the bounded writer and the field readers that the
 * text (render.c) and JSON (render_json.c) renderings share, so both
 * measure, truncate and read a gp_summary the same way.
 */
#include "../util/text.h"
#include "render_out.h"
#include "gpu_profile.h"

#include <math.h>
#include <stdio.h>
#include <string.h>

/* ------------------------------------------------------------ the buffer */

void gp_out_init(gp_out *o, char *buf, size_t cap)
{
    o->buf = buf;
    o->cap = buf ? cap : 0;
    o->len = 0;
}

void gp_out_n(gp_out *o, const char *s, size_t n)
{
    if (o->cap > 0 && o->len < o->cap - 1) {
        size_t room = o->cap - 1 - o->len;
        memcpy(o->buf + o->len, s, n < room ? n : room);
    }
    o->len += n;
}

void gp_out_str(gp_out *o, const char *s)
{
    gp_out_n(o, s, strlen(s));
}

void gp_out_ch(gp_out *o, char c)
{
    gp_out_n(o, &c, 1);
}

size_t gp_out_finish(gp_out *o)
{
    if (o->cap > 0)
        o->buf[o->len < o->cap ? o->len : o->cap - 1] = '\0';
    return o->len;
}

size_t gp_out_render(gp_summary_put put, const gp_summary *s, unsigned flags, char *buf, size_t cap)
{
    gp_out o;
    gp_out_init(&o, buf, cap);
    if (s)
        put(&o, s, flags);
    return gp_out_finish(&o);
}

void gp_out_u64(gp_out *o, uint64_t v)
{
    char tmp[24];
    snprintf(tmp, sizeof tmp, "%llu", (unsigned long long)v);
    gp_out_str(o, tmp);
}

void gp_out_i64(gp_out *o, int64_t v)
{
    char tmp[24];
    snprintf(tmp, sizeof tmp, "%lld", (long long)v);
    gp_out_str(o, tmp);
}

/* gp_out_n with the signature of the shared writers (util/text.c). */
void gp_out_emit(void *ctx, const char *p, size_t n)
{
    gp_out_n((gp_out *)ctx, p, n);
}

/* Fixed point through the shared formatter (util/text.c); NaN and
 * infinities print "n/a" (JSON callers write null before getting here). */
void gp_out_fixed(gp_out *o, double v, int decimals, int trim)
{
    if (!isfinite(v)) {
        gp_out_str(o, "n/a");
        return;
    }
    gp_format_fixed(v, decimals, trim, gp_out_emit, o);
}

/* ------------------------------------------------------------ fields */

/* The fixed-size strings of gp_summary may lack their NUL. */
size_t gp_field_len(const char *s, size_t size)
{
    const char *nul = memchr(s, '\0', size);
    return nul ? (size_t)(nul - s) : size;
}

static const char *const throttle_names[] = {
    "gpu_idle",   "app_clocks", "sw_power_cap",   "hw_slowdown",   "sync_boost",
    "sw_thermal", "hw_thermal", "hw_power_brake", "display_clock",
};
#define N_THROTTLE_NAMES (sizeof throttle_names / sizeof throttle_names[0])

/* Writes the name of bit `bit` of a throttle mask: known ones by name,
 * others as their hex value so nothing is lost. */
void gp_throttle_name(char *tmp, size_t size, unsigned bit)
{
    if (bit < N_THROTTLE_NAMES)
        snprintf(tmp, size, "%s", throttle_names[bit]);
    else
        snprintf(tmp, size, "0x%llx", 1ull << bit);
}

uint32_t gp_spark_cells(const gp_summary *s)
{
    return s->spark_len > GP_SPARK_WIDTH ? GP_SPARK_WIDTH : s->spark_len;
}

int gp_has_device_error(const gp_summary *s)
{
    return s->device_status != GP_OK || gp_field_len(s->device_error, sizeof s->device_error) > 0;
}
