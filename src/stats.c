/* stats.c - placeholder: running statistics (being written). */
#include "gp_internal.h"

#include <string.h>

void gp_acc_init(gp_acc *a, uint64_t t0_ns, uint64_t warmup_ns)
{
    memset(a, 0, sizeof *a);
    a->t0_ns = t0_ns;
    a->warmup_ns = warmup_ns;
}

void gp_acc_add(gp_acc *a, uint64_t t_ns, const gp_device_sample *s)
{
    (void)t_ns;
    (void)s;
    a->n++;
}

void gp_acc_summarize(const gp_acc *a, gp_summary *out)
{
    out->sample_count = a->n;
}
