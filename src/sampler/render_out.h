/*
 * sampler/render_out.h - the writer the summary renderings share
 * (render_out.c): snprintf-style, so one pass both measures and writes,
 * and locale-independent numbers.
 */
#ifndef GP_SAMPLER_RENDER_OUT_H
#define GP_SAMPLER_RENDER_OUT_H

#include "gpu_profile.h"

#include <stddef.h>
#include <stdint.h>

/* Output that counts what it could not store. */
typedef struct gp_out {
    char *buf;
    size_t cap;
    size_t len; /* full length so far, stored or not */
} gp_out;

void gp_out_init(gp_out *o, char *buf, size_t cap);
void gp_out_n(gp_out *o, const char *s, size_t n);
void gp_out_str(gp_out *o, const char *s);
void gp_out_ch(gp_out *o, char c);
/* NUL-terminates what fits; returns the full length. */
size_t gp_out_finish(gp_out *o);
void gp_out_u64(gp_out *o, uint64_t v);
void gp_out_i64(gp_out *o, int64_t v);
/* One rendering of a summary into buf, snprintf-style (the full length
 * returned, what fits NUL-terminated): put writes s unless s is NULL. */
typedef void (*gp_summary_put)(gp_out *o, const gp_summary *s, unsigned flags);
size_t gp_out_render(gp_summary_put put, const gp_summary *s, unsigned flags, char *buf,
                     size_t cap);
/* gp_out_n with the signature of the shared writers (util/text.h). */
void gp_out_emit(void *ctx, const char *p, size_t n);
/* Fixed point, trailing zeros trimmed when trim; NaN and infinities print
 * "n/a" (JSON callers write null before getting here). */
void gp_out_fixed(gp_out *o, double v, int decimals, int trim);

/* The length of one of gp_summary's fixed-size strings, which may lack
 * their NUL. */
size_t gp_field_len(const char *s, size_t size);
/* The name of bit `bit` of a throttle mask: known ones by name, others as
 * their hex value so nothing is lost. */
void gp_throttle_name(char *tmp, size_t size, unsigned bit);
/* How many sparkline cells the summary holds. */
uint32_t gp_spark_cells(const gp_summary *s);
/* Whether a device error ended the sampling. */
int gp_has_device_error(const gp_summary *s);

#endif /* GP_SAMPLER_RENDER_OUT_H */
