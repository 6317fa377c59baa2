/*
 * test_energy.c - the one energy rule (src/util/energy.c) and the two
 * places that use it agreeing on the same samples: the sampler's run
 * summary (gp_acc, src/sampler/stats.c) and the report of a session's logs
 * (device_metric_batch read back, src/report/figures.c).  Cases: the
 * counter moved (counter), the counter did not move (power integral - the
 * report used to say 0 J there), no counter (power integral), one power
 * reading and no counter (none), a counter that went backwards (power
 * integral, sampler).
 */
#include "fl_log.h"
#include "sampler/stats.h"
#include "util/buf.h"
#include "util/energy.h"
#include "wire/records.h"
#include "gpufl.h"

#include <sys/stat.h>

#define SID "0e0e0e0e-1111-4222-8333-444444444444"
#define T0 1760000000000000000ull
#define SEC 1000000000ull

static char g_tmp[256];

static void check_pick(void)
{
    double j = -1;
    CHECK_INT(gp_energy_pick(NULL, &j), GP_ENERGY_NONE);
    CHECK_NEAR(j, 0.0, 0);
    gp_energy_obs o = {.counter_usable = true,
                       .counter_first = 1000,
                       .counter_last = 4000,
                       .joules_per_unit = 1e-3,
                       .integral_usable = true,
                       .integral_j = 9.5};
    CHECK_INT(gp_energy_pick(&o, &j), GP_ENERGY_COUNTER);
    CHECK_NEAR(j, 3.0, 1e-12);
    o.counter_last = 1000; /* flat: not evidence of 0 J */
    CHECK_INT(gp_energy_pick(&o, &j), GP_ENERGY_POWER_INTEGRAL);
    CHECK_NEAR(j, 9.5, 0);
    o.counter_last = 999; /* backwards */
    CHECK_INT(gp_energy_pick(&o, &j), GP_ENERGY_POWER_INTEGRAL);
    o.counter_last = 4000;
    o.counter_usable = false;
    CHECK_INT(gp_energy_pick(&o, &j), GP_ENERGY_POWER_INTEGRAL);
    o.integral_usable = false;
    CHECK_INT(gp_energy_pick(&o, &j), GP_ENERGY_NONE);
    CHECK_NEAR(j, 0.0, 0);
}

/* One sample: t in seconds from T0, power in mW (0: not read), the
 * counter in mJ (0: not read). */
typedef struct smp {
    uint64_t t_s;
    uint32_t power_mw;
    uint64_t energy_mj;
} smp;

static gp_device_sample sample_of(const smp *x)
{
    gp_device_sample s;
    memset(&s, 0, sizeof s);
    s.valid = GP_M_UTIL_GPU;
    s.util_gpu_pct = 50;
    if (x->power_mw) {
        s.valid |= GP_M_POWER;
        s.power_mw = x->power_mw;
    }
    if (x->energy_mj) {
        s.valid |= GP_M_ENERGY;
        s.energy_mj = x->energy_mj;
    }
    return s;
}

/* The sampler's figure for the samples. */
static gp_energy_source sampler_energy(const smp *x, size_t n, double *j)
{
    gp_acc a;
    gp_acc_init(&a, T0, 0);
    for (size_t i = 0; i < n; i++) {
        gp_device_sample s = sample_of(&x[i]);
        gp_acc_add(&a, T0 + x[i].t_s * SEC, &s);
    }
    gp_summary out;
    memset(&out, 0, sizeof out);
    out.duration_s = 1;
    gp_acc_summarize(&a, &out);
    *j = out.energy_j;
    return out.energy_source;
}

static void write_text(const char *path, const char *text)
{
    FILE *f = fopen(path, "w");
    CHECK(f != NULL);
    if (!f)
        return;
    fputs(text, f);
    fclose(f);
}

/* The report's figure for the samples: one device_metric_batch in a
 * session's system.log, read back by gpufl_report_logs (JSON). */
static bool report_energy(const smp *x, size_t n, int k, double *j, const char **src)
{
    char dir[512];
    snprintf(dir, sizeof dir, "%s/case%d/%s", g_tmp, k, SID);
    char parent[512];
    snprintf(parent, sizeof parent, "%s/case%d", g_tmp, k);
    mkdir(g_tmp, 0755);
    mkdir(parent, 0755);
    mkdir(dir, 0755);
    fl_device_row rows[16];
    for (size_t i = 0; i < n; i++)
        rows[i] =
            (fl_device_row){.t_ns = T0 + x[i].t_s * SEC, .device_id = 0, .s = sample_of(&x[i])};
    fl_buf b = {0};
    fl_ident id = {4242, "energy", SID};
    fl_job_start js;
    memset(&js, 0, sizeof js);
    js.ts_ns = T0;
    js.session_kind = "monitor";
    fl_rec_job_start(&b, &id, &js);
    fl_rec_device_batch(&b, SID, 1, rows, n);
    fl_rec_shutdown(&b, &id, T0 + 10 * SEC);
    char path[600];
    snprintf(path, sizeof path, "%s/system.log", dir);
    write_text(path, b.p);
    fl_buf_free(&b);

    gpufl_report_options o;
    gpufl_report_options_init(&o);
    o.format = GPUFL_REPORT_JSON;
    char *out = NULL;
    gpufl_error err;
    CHECK_INT(gpufl_report_logs(dir, &o, &out, NULL, &err), GPUFL_OK);
    json_error_t je;
    json_t *r = out ? json_loads(out, 0, &je) : NULL;
    gpufl_free(out);
    CHECK(r != NULL);
    json_t *dev = json_array_get(json_object_get(r, "devices"), 0);
    CHECK(dev != NULL);
    json_t *e = json_object_get(dev, "energy_j");
    bool have = json_is_number(e);
    *j = have ? json_number_value(e) : 0;
    static char s[32];
    snprintf(s, sizeof s, "%s",
             json_string_value(json_object_get(dev, "energy_source"))
                 ? json_string_value(json_object_get(dev, "energy_source"))
                 : "(none)");
    *src = s;
    json_decref(r);
    return have;
}

/* Both figures for the samples: the same source and joules, as wanted. */
static void agree(int k, const smp *x, size_t n, gp_energy_source want, double want_j)
{
    double js = -1, jr = -1;
    const char *src = NULL;
    gp_energy_source ss = sampler_energy(x, n, &js);
    bool have = report_energy(x, n, k, &jr, &src);
    CHECK_INT(ss, want);
    CHECK_NEAR(js, want_j, 1e-9);
    CHECK_INT(have, want != GP_ENERGY_NONE);
    if (want != GP_ENERGY_NONE) {
        CHECK_STR(src, want == GP_ENERGY_COUNTER ? "counter" : "power_integral");
        CHECK_NEAR(jr, want_j, 1e-6);
    } else {
        CHECK_STR(src, "(none)");
    }
}

int main(void)
{
    snprintf(g_tmp, sizeof g_tmp, "/tmp/gp_energy_%d", (int)getpid());
    check_pick();

    /* 100 W for 2 s: a 200 J integral; the counter says 150 J. */
    const smp moved[3] = {{0, 100000, 1000000}, {1, 100000, 0}, {2, 100000, 1150000}};
    agree(1, moved, 3, GP_ENERGY_COUNTER, 150.0);
    /* The counter read at both ends, equal (it ticks every 20-100 ms):
     * the integral, in both (the report said 0.000 J here). */
    const smp flat[3] = {{0, 100000, 1000000}, {1, 100000, 0}, {2, 100000, 1000000}};
    agree(2, flat, 3, GP_ENERGY_POWER_INTEGRAL, 200.0);
    /* No counter at all. */
    const smp none[3] = {{0, 100000, 0}, {1, 200000, 0}, {2, 100000, 0}};
    agree(3, none, 3, GP_ENERGY_POWER_INTEGRAL, 300.0);
    /* One power reading, no counter: nothing to say. */
    const smp one[1] = {{0, 100000, 0}};
    agree(4, one, 1, GP_ENERGY_NONE, 0.0);

    /* A counter that went backwards in between (a driver reload): the
     * sampler sees it and integrates. */
    const smp back[3] = {{0, 100000, 5000000}, {1, 100000, 10}, {2, 100000, 5100000}};
    double j;
    CHECK_INT(sampler_energy(back, 3, &j), GP_ENERGY_POWER_INTEGRAL);
    CHECK_NEAR(j, 200.0, 1e-9);

    fl_rmtree(g_tmp);
    return check_done("test_energy");
}
