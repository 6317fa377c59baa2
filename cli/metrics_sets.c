/*
 * metrics_sets.c - `gpu-profile metrics sets` and `metrics fits`: choosing
 * metrics for the engines that collect hardware counters.
 *
 *   sets [--engine E]  each engine's default set on a chip: every candidate
 *                      with the passes it needs alone, what the engine
 *                      schedules (by the engine's own code, through
 *                      gp_metrics_engine_choose: the range profiler per
 *                      kernel and per scope, PM sampling in one pass), the
 *                      passes of that set, and why each left-out candidate
 *                      is left out; SassMetrics' names, which only the
 *                      device can check (CUPTI's SASS metric list needs it)
 *   fits --engine E M  whether a user's list fits one pass: the passes of
 *                      each metric alone and of the list, the metrics whose
 *                      removal alone makes the rest fit, the longest prefix
 *                      kept in order, and what the engine would do with it
 *
 * Exit status 0 answered (fits or not), 1 CUPTI/the plugin failed or a
 * metric is unknown for the engine on the chip, 125 a bad option (parsed
 * in metrics.c).
 */
#include "cli.h"
#include "gpu_metrics.h"

#include <stdlib.h>
#include <string.h>

#define EXIT_FAIL 1
#define MAX_CAND 64

typedef struct cand {
    const char *name;
    unsigned slot;
    int valid;     /* the engine's profiler can collect it on the chip */
    size_t passes; /* alone; valid only */
} cand;

static int fail(const gp_error *err)
{
    cli_say("metrics: %s", err->message);
    return err->status == GP_ERR_INVALID_ARG ? CLI_EXIT_USAGE : EXIT_FAIL; /* a name it lacks */
}

/* The passes names[0..n) need: GP_OK, GP_ERR_INVALID_ARG (a metric the
 * profiler cannot collect, err names it) or another failure. */
static gp_status passes_of(gp_metrics_host *h, const char *const *names, size_t n, size_t *passes,
                           gp_error *err)
{
    uint8_t *img = NULL;
    size_t size = 0;
    gp_status st = gp_metrics_config_image(h, names, n, &img, &size, err);
    if (st == GP_OK)
        st = gp_metrics_passes(img, size, passes, err);
    gp_metrics_free_image(img);
    return st;
}

/* Each candidate alone; 0, or the exit status after a CUPTI failure. */
static int measure(gp_metrics_host *h, cand *c, size_t n)
{
    for (size_t i = 0; i < n; i++) {
        gp_error err;
        gp_status st = passes_of(h, &c[i].name, 1, &c[i].passes, &err);
        if (st != GP_OK && st != GP_ERR_INVALID_ARG)
            return fail(&err);
        c[i].valid = st == GP_OK;
    }
    return 0;
}

static int in_list(char **v, size_t n, const char *s)
{
    for (size_t i = 0; i < n; i++)
        if (strcmp(v[i], s) == 0)
            return 1;
    return 0;
}

/* Why candidate k is not in chosen[0..nc): into why. */
static void left_out_why(gp_metrics_host *h, const cand *c, size_t n, size_t k, char **chosen,
                         size_t nc, char *why, size_t len)
{
    if (!c[k].valid) {
        snprintf(why, len, "not collectable by the %s profiler on %s",
                 gp_metrics_profiler_name(gp_metrics_host_profiler(h)), gp_metrics_host_chip(h));
        return;
    }
    for (size_t i = 0; i < n; i++)
        if (i != k && c[i].slot == c[k].slot && in_list(chosen, nc, c[i].name)) {
            snprintf(why, len, "alternate of %s, which is collected", c[i].name);
            return;
        }
    const char *with[MAX_CAND + 1];
    for (size_t i = 0; i < nc; i++)
        with[i] = chosen[i];
    with[nc] = c[k].name;
    size_t p = 0;
    gp_error err;
    if (passes_of(h, with, nc + 1, &p, &err) == GP_OK)
        snprintf(why, len, "the set would need %zu passes with it (%zu alone)", p, c[k].passes);
    else
        snprintf(why, len, "the set cannot hold it: %s", err.message);
}

typedef struct mode {
    const char *name, *replay;
    int one_pass;
} mode;

static const mode rp_modes[] = {{"per_kernel", "kernel", 0}, {"per_scope", "user", 1}};
static const mode pm_modes[] = {{"sampling", "none", 1}};

static void json_names(fl_buf *b, char **v, size_t n)
{
    fl_buf_puts(b, "[");
    for (size_t i = 0; i < n; i++) {
        fl_buf_puts(b, i ? "," : "");
        fl_buf_str(b, v[i]);
    }
    fl_buf_puts(b, "]");
}

/* One mode's set: JSON object or text lines. */
static int one_set(fl_buf *b, int json, gp_metrics_host *h, gp_metrics_engine e, const mode *m,
                   const cand *c, size_t n, int first)
{
    char **chosen = NULL;
    size_t nc = 0, passes = 0;
    gp_error err;
    if (gp_metrics_engine_choose(h, e, NULL, m->one_pass, &chosen, &nc, &passes, &err) != GP_OK)
        return fail(&err);
    if (json) {
        fl_buf_puts(b, first ? "{\"mode\":" : ",{\"mode\":");
        fl_buf_str(b, m->name);
        fl_buf_puts(b, ",\"replay\":");
        fl_buf_str(b, m->replay);
        fl_buf_printf(b, ",\"one_pass_required\":%s,\"metrics\":", m->one_pass ? "true" : "false");
        json_names(b, chosen, nc);
        fl_buf_printf(b, ",\"passes\":%zu,\"fits_one_pass\":%s,\"left_out\":[", passes,
                      passes == 1 ? "true" : "false");
    } else {
        fl_buf_printf(b, "\n%s (%s%s%s): %zu metrics in %zu pass%s\n", m->name,
                      strcmp(m->replay, "none") ? m->replay : "no", " replay",
                      m->one_pass ? ", one pass required" : "", nc, passes,
                      passes == 1 ? "" : "es");
        for (size_t i = 0; i < nc; i++)
            fl_buf_printf(b, "  + %s\n", chosen[i]);
    }
    int shown = 0;
    for (size_t k = 0; k < n; k++) {
        if (in_list(chosen, nc, c[k].name))
            continue;
        char why[512];
        left_out_why(h, c, n, k, chosen, nc, why, sizeof why);
        if (json) {
            fl_buf_puts(b, shown ? ",{\"name\":" : "{\"name\":");
            fl_buf_str(b, c[k].name);
            fl_buf_puts(b, ",\"reason\":");
            fl_buf_str(b, why);
            fl_buf_puts(b, "}");
        } else {
            fl_buf_printf(b, "  - %s: %s\n", c[k].name, why);
        }
        shown++;
    }
    if (json)
        fl_buf_puts(b, "]}");
    gp_metrics_free_list(chosen);
    return 0;
}

/* The candidates of e: names (freed by the caller) into c. */
static int candidates(gp_metrics_engine e, char ***names, cand *c, size_t *n)
{
    unsigned slots[MAX_CAND];
    gp_error err;
    if (gp_metrics_engine_defaults(e, names, n, slots, MAX_CAND, &err) != GP_OK)
        return fail(&err);
    for (size_t i = 0; i < *n; i++)
        c[i] = (cand){.name = (*names)[i], .slot = slots[i]};
    return 0;
}

static void sass_set(fl_buf *b, int json, const cand *c, size_t n)
{
    const char *note = "SASS metric names are checked by cuptiSassMetricsGetProperties on the "
                       "device when the session starts (CUPTI's SASS metric list needs a GPU); "
                       "a name the chip refuses is skipped and listed in sass_config";
    if (json) {
        fl_buf_puts(b, "{\"engine\":\"SassMetrics\",\"profiler\":null,\"candidates\":[");
        for (size_t i = 0; i < n; i++) {
            fl_buf_puts(b, i ? ",{\"name\":" : "{\"name\":");
            fl_buf_str(b, c[i].name);
            fl_buf_puts(b, ",\"collectable\":null,\"passes\":null}");
        }
        fl_buf_puts(b, "],\"sets\":[{\"mode\":\"per_instruction\",\"replay\":\"none\","
                       "\"one_pass_required\":false,\"metrics\":[");
        for (size_t i = 0; i < n; i++) {
            fl_buf_puts(b, i ? "," : "");
            fl_buf_str(b, c[i].name);
        }
        fl_buf_puts(b, "],\"passes\":null,\"fits_one_pass\":null,\"left_out\":[]}],\"note\":");
        fl_buf_str(b, note);
        fl_buf_puts(b, "}");
        return;
    }
    fl_buf_printf(b, "SassMetrics: %zu metrics (patched instructions, no passes)\n", n);
    for (size_t i = 0; i < n; i++)
        fl_buf_printf(b, "  %s\n", c[i].name);
    fl_buf_printf(b, "%s\n", note);
}

/* One engine's default set on chip. */
static int engine_sets(fl_buf *b, int json, const char *chip, gp_metrics_engine e)
{
    cand c[MAX_CAND];
    char **names = NULL;
    size_t n = 0;
    int code = candidates(e, &names, c, &n);
    if (code != 0)
        return code;
    if (e == GP_METRICS_ENGINE_SASS_METRICS) {
        sass_set(b, json, c, n);
        gp_metrics_free_list(names);
        return 0;
    }
    gp_metrics_profiler prof;
    gp_metrics_host *h = NULL;
    gp_error err;
    if (gp_metrics_engine_profiler(e, &prof, &err) != GP_OK ||
        gp_metrics_host_create(chip, prof, &h, &err) != GP_OK) {
        gp_metrics_free_list(names);
        return fail(&err);
    }
    code = measure(h, c, n);
    const mode *modes = e == GP_METRICS_ENGINE_RANGE_PROFILER ? rp_modes : pm_modes;
    size_t nm = e == GP_METRICS_ENGINE_RANGE_PROFILER ? 2 : 1;
    if (code == 0 && json) {
        fl_buf_puts(b, "{\"engine\":");
        fl_buf_str(b, gp_metrics_engine_name(e));
        fl_buf_puts(b, ",\"profiler\":");
        fl_buf_str(b, gp_metrics_profiler_name(prof));
        fl_buf_puts(b, ",\"candidates\":[");
        for (size_t i = 0; i < n; i++) {
            fl_buf_puts(b, i ? ",{\"name\":" : "{\"name\":");
            fl_buf_str(b, c[i].name);
            fl_buf_printf(b, ",\"slot\":%u,\"collectable\":%s,\"passes\":", c[i].slot,
                          c[i].valid ? "true" : "false");
            if (c[i].valid)
                fl_buf_printf(b, "%zu}", c[i].passes);
            else
                fl_buf_puts(b, "null}");
        }
        fl_buf_puts(b, "],\"sets\":[");
    } else if (code == 0) {
        fl_buf_printf(b, "%s on %s (%s profiler): %zu candidates\n", gp_metrics_engine_name(e),
                      gp_metrics_host_chip(h), gp_metrics_profiler_name(prof), n);
        fl_buf_printf(b, "  %-66s %s\n", "metric", "passes alone");
        for (size_t i = 0; i < n; i++) {
            if (c[i].valid)
                fl_buf_printf(b, "  %-66s %zu\n", c[i].name, c[i].passes);
            else
                fl_buf_printf(b, "  %-66s %s\n", c[i].name, "not collectable");
        }
    }
    for (size_t m = 0; m < nm && code == 0; m++)
        code = one_set(b, json, h, e, &modes[m], c, n, m == 0);
    if (code == 0 && json)
        fl_buf_puts(b, "]}");
    gp_metrics_host_destroy(h);
    gp_metrics_free_list(names);
    return code;
}

static int emit(fl_buf *b, int code)
{
    if (code != 0) {
        fl_buf_free(b);
        return code;
    }
    int badw = b->oom || fwrite(b->p, 1, b->len, stdout) != b->len;
    fl_buf_free(b);
    if (fflush(stdout) != 0 || badw)
        return cli_stdout_failed("metrics");
    return 0;
}

static void json_head(fl_buf *b, const char *cmd, const char *chip)
{
    fl_buf_puts(b, "{\"schema\":\"gpu-profile.metrics\",\"schema_version\":1,\"command\":");
    fl_buf_str(b, cmd);
    fl_buf_printf(b, ",\"cupti_version\":%u,\"chip\":", gp_metrics_cupti_version());
    fl_buf_str(b, chip);
}

int cli_metrics_sets(const char *chip, int engine, int json)
{
    /* The chip's canonical spelling, from a host (an unknown chip fails here). */
    gp_metrics_host *h = NULL;
    gp_error err;
    if (gp_metrics_host_create(chip, GP_METRICS_RANGE, &h, &err) != GP_OK)
        return fail(&err);
    char canon[64];
    snprintf(canon, sizeof canon, "%s", gp_metrics_host_chip(h));
    gp_metrics_host_destroy(h);
    fl_buf b = {0};
    if (json) {
        json_head(&b, "sets", canon);
        fl_buf_puts(&b, ",\"engines\":[");
    }
    int code = 0;
    for (int e = 0; e < 3 && code == 0; e++) {
        if (engine >= 0 && e != engine)
            continue;
        if (!json && b.len)
            fl_buf_puts(&b, "\n");
        if (json && b.p && b.p[b.len - 1] == '}')
            fl_buf_puts(&b, ",");
        code = engine_sets(&b, json, canon, (gp_metrics_engine)e);
    }
    if (json)
        fl_buf_puts(&b, "]}\n");
    return emit(&b, code);
}

/* The user's names (comma- or blank-separated, over several arguments)
 * into v (malloc'd copies); their count, or -1 when out of memory. */
static long split_names(char **args, size_t nargs, char **v, size_t cap)
{
    size_t n = 0;
    for (size_t a = 0; a < nargs; a++)
        for (const char *p = args[a]; *p;) {
            p += strspn(p, ", \t");
            size_t l = strcspn(p, ", \t");
            if (l == 0)
                break;
            if (n == cap)
                return (long)n;
            if (!(v[n] = strndup(p, l)))
                return -1;
            n++;
            p += l;
        }
    return (long)n;
}

typedef struct fit {
    size_t passes;          /* of the whole list */
    int drop_one[MAX_CAND]; /* removing it alone makes the rest fit */
    char *keep[MAX_CAND];   /* kept in order while the set fits */
    size_t n_keep;
    char **sched; /* what the engine schedules, NULL: refused */
    size_t n_sched, sched_passes;
    char verdict[GP_ERROR_MESSAGE_MAX]; /* the engine's refusal */
} fit;

static int compute_fit(gp_metrics_host *h, gp_metrics_engine e, char **v, size_t n,
                       const char *list, fit *f)
{
    gp_error err;
    if (passes_of(h, (const char *const *)v, n, &f->passes, &err) != GP_OK)
        return fail(&err);
    const char *w[MAX_CAND];
    for (size_t i = 0; i < n && f->passes > 1; i++) {
        size_t k = 0, p = 0;
        for (size_t j = 0; j < n; j++)
            if (j != i)
                w[k++] = v[j];
        if (k && passes_of(h, w, k, &p, &err) != GP_OK)
            return fail(&err);
        f->drop_one[i] = k && p == 1;
    }
    for (size_t i = 0; i < n; i++) {
        size_t p = 0;
        f->keep[f->n_keep] = v[i];
        if (passes_of(h, (const char *const *)f->keep, f->n_keep + 1, &p, &err) != GP_OK)
            return fail(&err);
        if (p == 1)
            f->n_keep++;
    }
    gp_status st = gp_metrics_engine_choose(h, e, list, e == GP_METRICS_ENGINE_RANGE_PROFILER,
                                            &f->sched, &f->n_sched, &f->sched_passes, &err);
    if (st == GP_ERR_INVALID_ARG)
        snprintf(f->verdict, sizeof f->verdict, "%s", err.message);
    else if (st != GP_OK)
        return fail(&err);
    return 0;
}

static void fit_json(fl_buf *b, gp_metrics_host *h, gp_metrics_engine e, const cand *c, char **v,
                     size_t n, const fit *f)
{
    json_head(b, "fits", gp_metrics_host_chip(h));
    fl_buf_puts(b, ",\"engine\":");
    fl_buf_str(b, gp_metrics_engine_name(e));
    fl_buf_puts(b, ",\"profiler\":");
    fl_buf_str(b, gp_metrics_profiler_name(gp_metrics_host_profiler(h)));
    fl_buf_puts(b, ",\"metrics\":[");
    for (size_t i = 0; i < n; i++) {
        fl_buf_puts(b, i ? ",{\"name\":" : "{\"name\":");
        fl_buf_str(b, v[i]);
        fl_buf_printf(b, ",\"passes\":%zu}", c[i].passes);
    }
    fl_buf_printf(b, "],\"passes\":%zu,\"fits_one_pass\":%s,\"drop_one_of\":[", f->passes,
                  f->passes == 1 ? "true" : "false");
    int first = 1;
    for (size_t i = 0; i < n; i++)
        if (f->drop_one[i]) {
            fl_buf_puts(b, first ? "" : ",");
            fl_buf_str(b, v[i]);
            first = 0;
        }
    fl_buf_puts(b, "],\"keep_in_order\":");
    json_names(b, (char **)f->keep, f->n_keep);
    fl_buf_puts(b, ",\"engine_schedules\":");
    if (f->sched) {
        fl_buf_puts(b, "{\"metrics\":");
        json_names(b, f->sched, f->n_sched);
        fl_buf_printf(b, ",\"passes\":%zu}", f->sched_passes);
        fl_buf_puts(b, ",\"engine_refuses\":null}\n");
    } else {
        fl_buf_puts(b, "null,\"engine_refuses\":");
        fl_buf_str(b, f->verdict);
        fl_buf_puts(b, "}\n");
    }
}

static void fit_text(fl_buf *b, gp_metrics_host *h, gp_metrics_engine e, const cand *c, char **v,
                     size_t n, const fit *f)
{
    fl_buf_printf(b, "%-16s %s\n", "chip", gp_metrics_host_chip(h));
    fl_buf_printf(b, "%-16s %s (%s profiler)\n", "engine", gp_metrics_engine_name(e),
                  gp_metrics_profiler_name(gp_metrics_host_profiler(h)));
    fl_buf_printf(b, "%-16s %zu\n", "passes", f->passes);
    fl_buf_printf(b, "%-16s %s\n", "fits one pass", f->passes == 1 ? "yes" : "no");
    fl_buf_printf(b, "\n  %-66s %s\n", "metric", "passes alone");
    for (size_t i = 0; i < n; i++)
        fl_buf_printf(b, "  %-66s %zu%s\n", v[i], c[i].passes,
                      f->drop_one[i] ? "  (drop this one and the rest fit one pass)" : "");
    if (f->passes > 1) {
        fl_buf_printf(b, "\nkept in order while one pass holds them (%zu of %zu):\n", f->n_keep, n);
        for (size_t i = 0; i < f->n_keep; i++)
            fl_buf_printf(b, "  + %s\n", f->keep[i]);
        for (size_t i = 0, k = 0; i < n; i++) {
            if (k < f->n_keep && f->keep[k] == v[i])
                k++;
            else
                fl_buf_printf(b, "  - %s\n", v[i]);
        }
    }
    if (f->sched) {
        fl_buf_printf(b, "\n%s schedules %zu metric%s in %zu pass%s%s\n", gp_metrics_engine_name(e),
                      f->n_sched, f->n_sched == 1 ? "" : "s", f->sched_passes,
                      f->sched_passes == 1 ? "" : "es",
                      e == GP_METRICS_ENGINE_RANGE_PROFILER
                          ? " for per-scope ranges (per-kernel ranges replay each kernel for "
                            "every pass of the whole list)"
                          : "");
        for (size_t i = 0; i < f->n_sched; i++)
            fl_buf_printf(b, "  + %s\n", f->sched[i]);
    } else {
        fl_buf_printf(b, "\n%s refuses the list: %s\n", gp_metrics_engine_name(e), f->verdict);
    }
}

int cli_metrics_fits(const char *chip, int engine, char **args, size_t nargs, int json)
{
    char *v[MAX_CAND] = {0};
    long got = split_names(args, nargs, v, MAX_CAND);
    if (got <= 0) {
        cli_say(got < 0 ? "metrics: out of memory" : "metrics: 'fits' names no metric");
        return got < 0 ? EXIT_FAIL : CLI_EXIT_USAGE;
    }
    size_t n = (size_t)got;
    gp_metrics_engine e = (gp_metrics_engine)engine;
    gp_metrics_profiler prof;
    gp_metrics_host *h = NULL;
    gp_error err;
    fl_buf b = {0};
    fit f;
    memset(&f, 0, sizeof f);
    cand c[MAX_CAND];
    int code = 0;
    if (gp_metrics_engine_profiler(e, &prof, &err) != GP_OK ||
        gp_metrics_host_create(chip, prof, &h, &err) != GP_OK) {
        code = fail(&err);
        goto out;
    }
    for (size_t i = 0; i < n && code == 0; i++) {
        c[i] = (cand){.name = v[i]};
        if (passes_of(h, (const char *const *)&v[i], 1, &c[i].passes, &err) != GP_OK) {
            cli_say("metrics: %s cannot take '%s' on %s: %s (gpu-profile metrics list --profiler "
                    "%s --chip %s lists what it can)",
                    gp_metrics_engine_name(e), v[i], gp_metrics_host_chip(h), err.message,
                    gp_metrics_profiler_name(prof), gp_metrics_host_chip(h));
            code = err.status == GP_ERR_INVALID_ARG ? CLI_EXIT_USAGE : EXIT_FAIL;
        }
    }
    fl_buf list = {0};
    for (size_t i = 0; i < n; i++)
        fl_buf_printf(&list, "%s%s", i ? "," : "", v[i]);
    if (code == 0 && list.oom) {
        cli_say("metrics: out of memory");
        code = EXIT_FAIL;
    }
    if (code == 0)
        code = compute_fit(h, e, v, n, list.p, &f);
    fl_buf_free(&list);
    if (code == 0 && json)
        fit_json(&b, h, e, c, v, n, &f);
    else if (code == 0)
        fit_text(&b, h, e, c, v, n, &f);
    code = emit(&b, code);
out:
    gp_metrics_free_list(f.sched);
    gp_metrics_host_destroy(h);
    for (size_t i = 0; i < n; i++)
        free(v[i]);
    return code;
}
