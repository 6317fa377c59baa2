/* render.c - placeholder: text, JSON and sparkline renderings (being written). */
#include "gp_internal.h"

const char *gp_energy_source_name(gp_energy_source src)
{
    return src == GP_ENERGY_COUNTER ? "counter"
           : src == GP_ENERGY_POWER_INTEGRAL ? "power_integral"
                                             : "none";
}

size_t gp_summary_format(const gp_summary *s, unsigned flags, char *buf, size_t cap)
{
    (void)s;
    (void)flags;
    if (cap)
        buf[0] = '\0';
    return 0;
}

size_t gp_summary_to_json(const gp_summary *s, unsigned flags, char *buf, size_t cap)
{
    return gp_summary_format(s, flags, buf, cap);
}

size_t gp_summary_sparkline(const gp_summary *s, unsigned flags, char *buf, size_t cap)
{
    return gp_summary_format(s, flags, buf, cap);
}

gp_status gp_summary_print(const gp_summary *s, FILE *f, unsigned flags, gp_error *err)
{
    (void)s;
    (void)f;
    (void)flags;
    (void)err;
    return GP_OK;
}
