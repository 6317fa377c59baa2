/*
 * metrics.c - `gpu-profile metrics chips|list|describe|passes|sets|fits`
 * (sets and fits: metrics_sets.c, the engines' metric sets): the host
 * side of hardware-counter profiling (include/gpu_metrics.h) from the
 * command line: the chips CUPTI knows, the metrics of a chip, what they
 * mean, and how many passes a set of them needs.  No GPU is needed, only
 * the CUPTI plugin (found like --engine's: $GPUFL_CUPTI_PLUGIN, beside the
 * command, ../lib, ../<libdir>).  Text is aligned; --json writes one
 * "gpu-profile.metrics" object (docs/json-schema.md).  Exit status 0, 1
 * when CUPTI or the plugin fails (the message says why), 125 for a bad
 * option.
 */
#include "cli.h"
#include "gpu_metrics.h"

#include <regex.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#define EXIT_FAIL 1

void cli_metrics_usage(FILE *f)
{
    fputs("usage: gpu-profile metrics chips [--json]\n"
          "       gpu-profile metrics list [--chip CHIP] [--type counter|ratio|throughput]\n"
          "                                [--profiler range|pm] [--grep REGEX] [--json]\n"
          "       gpu-profile metrics describe [--chip CHIP] [--profiler range|pm] [--json] "
          "NAME...\n"
          "       gpu-profile metrics passes [--chip CHIP] [--profiler range|pm] [--json] "
          "NAME...\n"
          "       gpu-profile metrics sets [--chip CHIP] [--engine ENGINE] [--json]\n"
          "       gpu-profile metrics fits [--chip CHIP] --engine ENGINE [--json] NAME[,NAME...]\n"
          "\n"
          "The host side of hardware-counter profiling (CUPTI's Profiler Host API; no GPU\n"
          "needed): the chips CUPTI supports, the base metrics of a chip, what a metric\n"
          "means (description, units, type, sub-metrics), and how many passes and how\n"
          "large a config image a set of metrics needs.  --profiler defaults to range.\n"
          "sets: each engine's default set on the chip (ENGINE: rangeprofiler, pmsampling,\n"
          "sassmetrics; default all), each metric's passes, what the engine schedules and\n"
          "why a candidate is left out.  fits: whether NAMEs fit one pass for the engine\n"
          "(rangeprofiler or pmsampling), which one to drop, what the engine would do.\n"
          "Exit status 1 when CUPTI or the plugin fails, 125 for a bad option or a chip or\n"
          "metric CUPTI does not know.  -h, --help: this text.\n",
          f);
}

typedef struct mopts {
    const char *cmd;
    const char *chip;
    int type; /* -1: all */
    gp_metrics_profiler profiler;
    const char *grep;
    int engine; /* -1: none given */
    int json;
    char **names;
    size_t n_names;
} mopts;

static int bad(const char *fmt, const char *a, const char *b)
{
    char what[1024];
    snprintf(what, sizeof what, fmt, a, b);
    cli_say("metrics: %s (see gpu-profile metrics --help)", what);
    return CLI_EXIT_USAGE;
}

/* The gp_metrics_engine of an --engine value (profiling_engine's
 * spelling, case-insensitive); -1 for another. */
static int engine_of(const char *v)
{
    if (!v)
        return -1;
    if (strcasecmp(v, "rangeprofiler") == 0 || strcasecmp(v, "range") == 0)
        return GP_METRICS_ENGINE_RANGE_PROFILER;
    if (strcasecmp(v, "pmsampling") == 0 || strcasecmp(v, "pm") == 0)
        return GP_METRICS_ENGINE_PM_SAMPLING;
    if (strcasecmp(v, "sassmetrics") == 0 || strcasecmp(v, "sass") == 0)
        return GP_METRICS_ENGINE_SASS_METRICS;
    return -1;
}

enum { K_JSON = 256, K_CHIP, K_ENGINE, K_PROFILER, K_TYPE, K_GREP };
const cli_opt cli_metrics_opts[] = {
    {"chip", K_CHIP, 1, "CHIP", "a chip name (see gpu-profile metrics chips)", NULL},
    {"type", K_TYPE, 1, "TYPE", "counter, ratio or throughput", "counter ratio throughput"},
    {"profiler", K_PROFILER, 1, "P", "range or pm", "range pm"},
    {"grep", K_GREP, 1, "REGEX", "a pattern", NULL},
    {"engine", K_ENGINE, 1, "ENGINE", "rangeprofiler, pmsampling or sassmetrics",
     "rangeprofiler pmsampling sassmetrics"},
    {"json", K_JSON, 0, NULL, NULL, NULL},
    {"help", 'h', 0, NULL, NULL, NULL},
};
const size_t cli_metrics_n_opts = sizeof cli_metrics_opts / sizeof cli_metrics_opts[0];

/* One valued option into o; CLI_EXIT_USAGE after a message. */
static int apply(int key, const char *v, mopts *o)
{
    if (key == K_CHIP) {
        o->chip = v;
    } else if (key == K_ENGINE) {
        if ((o->engine = engine_of(v)) < 0)
            return bad("--engine must be rangeprofiler, pmsampling or sassmetrics, not '%s'%s", v,
                       "");
    } else if (key == K_PROFILER) {
        if (strcmp(v, "range") == 0)
            o->profiler = GP_METRICS_RANGE;
        else if (strcmp(v, "pm") == 0 || strcmp(v, "pm_sampling") == 0)
            o->profiler = GP_METRICS_PM_SAMPLING;
        else
            return bad("--profiler must be range or pm, not '%s'%s", v, "");
    } else if (key == K_TYPE) {
        if (strcmp(v, "counter") == 0)
            o->type = GP_METRIC_COUNTER;
        else if (strcmp(v, "ratio") == 0)
            o->type = GP_METRIC_RATIO;
        else if (strcmp(v, "throughput") == 0)
            o->type = GP_METRIC_THROUGHPUT;
        else
            return bad("--type must be counter, ratio or throughput, not '%s'%s", v, "");
    } else if (key == K_GREP) {
        o->grep = v;
    }
    return 0;
}

/* 0 ok, 1 help printed, CLI_EXIT_USAGE on a bad option. */
static int parse(int argc, char **argv, mopts *o)
{
    memset(o, 0, sizeof *o);
    o->type = -1;
    o->engine = -1;
    o->profiler = GP_METRICS_RANGE;
    if (argc < 2) {
        cli_metrics_usage(stderr);
        return CLI_EXIT_USAGE;
    }
    o->cmd = argv[1];
    if (strcmp(o->cmd, "-h") == 0 || strcmp(o->cmd, "--help") == 0) {
        cli_metrics_usage(stdout);
        return 1;
    }
    if (strcmp(o->cmd, "chips") != 0 && strcmp(o->cmd, "list") != 0 &&
        strcmp(o->cmd, "describe") != 0 && strcmp(o->cmd, "passes") != 0 &&
        strcmp(o->cmd, "sets") != 0 && strcmp(o->cmd, "fits") != 0)
        return bad("unknown subcommand '%s'%s: chips, list, describe, passes, sets or fits", o->cmd,
                   "");
    int is_fits = strcmp(o->cmd, "fits") == 0, is_sets = strcmp(o->cmd, "sets") == 0;
    int takes_names = strcmp(o->cmd, "describe") == 0 || strcmp(o->cmd, "passes") == 0 || is_fits;
    int is_list = strcmp(o->cmd, "list") == 0, is_chips = strcmp(o->cmd, "chips") == 0;
    o->names = calloc((size_t)argc, sizeof *o->names);
    if (!o->names) {
        cli_say("metrics: out of memory");
        return EXIT_FAIL;
    }
    cli_getopt g;
    cli_getopt_init(&g, "metrics", cli_metrics_opts, cli_metrics_n_opts, 0);
    const char *v;
    int key;
    while ((key = cli_getopt_next(&g, argc - 1, argv + 1, &v)) != -1) {
        if (key == CLI_OPT_ERROR)
            return CLI_EXIT_USAGE;
        int ok = key == 'h' || key == K_JSON || (key == K_CHIP && !is_chips) ||
                 (key == K_ENGINE && (is_sets || is_fits)) ||
                 (key == K_PROFILER && !is_chips && !is_sets && !is_fits) ||
                 ((key == K_TYPE || key == K_GREP) && is_list);
        if (!ok)
            return bad("unknown option '--%s' for '%s'",
                       cli_opt_of(cli_metrics_opts, cli_metrics_n_opts, key)->name, o->cmd);
        if (key == 'h') {
            cli_metrics_usage(stdout);
            return 1;
        }
        if (key == K_JSON)
            o->json = 1;
        else if (apply(key, v, o) != 0)
            return CLI_EXIT_USAGE;
    }
    for (int i = optind + 1; i < argc; i++) {
        if (!takes_names)
            return bad("'%s' takes no metric names ('%s')", o->cmd, argv[i]);
        o->names[o->n_names++] = argv[i];
    }
    if (takes_names && o->n_names == 0)
        return bad("'%s' needs at least one metric NAME%s", o->cmd, "");
    if (is_fits && (o->engine < 0 || o->engine == GP_METRICS_ENGINE_SASS_METRICS))
        return bad("'fits' needs --engine rangeprofiler or pmsampling%s%s",
                   o->engine < 0 ? ""
                                 : " (SASS metrics need no passes: the engine collects its "
                                   "built-in set, see gpu-profile metrics sets --engine "
                                   "sassmetrics)",
                   "");
    if (!is_chips && !o->chip) {
        /* The local GPU's chip, when there is one. */
        static char local[64];
        gp_error err;
        if (gp_metrics_local_chip(0, local, sizeof local, &err) == GP_OK && local[0]) {
            o->chip = local;
        } else {
            cli_say("metrics: no --chip given and no local GPU chip known (%s): pass --chip (see "
                    "gpu-profile metrics chips)",
                    err.message);
            return CLI_EXIT_USAGE;
        }
    }
    return 0;
}

static int fail(const gp_error *err)
{
    cli_say("metrics: %s", err->message);
    return err->status == GP_ERR_INVALID_ARG ? CLI_EXIT_USAGE : EXIT_FAIL; /* a name it lacks */
}

static int flush_out(fl_buf *b)
{
    int badw = b->oom || fwrite(b->p, 1, b->len, stdout) != b->len;
    fl_buf_free(b);
    if (fflush(stdout) != 0 || badw)
        return cli_stdout_failed("metrics");
    return 0;
}

static void json_head(fl_buf *b, const char *cmd)
{
    fl_buf_puts(b, "{\"schema\":\"gpu-profile.metrics\",\"schema_version\":1,\"command\":");
    fl_buf_str(b, cmd);
    fl_buf_printf(b, ",\"cupti_version\":%u", gp_metrics_cupti_version());
}

static void json_host(fl_buf *b, const gp_metrics_host *h)
{
    cli_json_member_str(b, "chip", gp_metrics_host_chip(h));
    cli_json_member_str(b, "profiler", gp_metrics_profiler_name(gp_metrics_host_profiler(h)));
}

static void json_list(fl_buf *b, char **v, size_t n)
{
    fl_buf_puts(b, "[");
    for (size_t i = 0; i < n; i++) {
        if (i)
            fl_buf_puts(b, ",");
        fl_buf_str(b, v[i]);
    }
    fl_buf_puts(b, "]");
}

static int do_chips(const mopts *o)
{
    char **chips = NULL;
    size_t n = 0;
    gp_error err;
    if (gp_metrics_chips(&chips, &n, &err) != GP_OK)
        return fail(&err);
    fl_buf b = {0};
    if (o->json) {
        json_head(&b, "chips");
        fl_buf_puts(&b, ",\"chips\":");
        json_list(&b, chips, n);
        fl_buf_puts(&b, "}\n");
    } else {
        for (size_t i = 0; i < n; i++)
            fl_buf_printf(&b, "%s\n", chips[i]);
    }
    gp_metrics_free_list(chips);
    return flush_out(&b);
}

static int do_list(const mopts *o, gp_metrics_host *h)
{
    regex_t re;
    if (o->grep) {
        int rc = regcomp(&re, o->grep, REG_EXTENDED | REG_NOSUB);
        if (rc != 0) {
            char why[256];
            regerror(rc, &re, why, sizeof why);
            return bad("--grep '%s' is not a valid extended regular expression: %s", o->grep, why);
        }
    }
    fl_buf b = {0};
    int code = 0, width = 4;
    char **lists[3] = {NULL, NULL, NULL};
    size_t counts[3] = {0, 0, 0};
    for (int t = 0; t < 3; t++) {
        if (o->type >= 0 && o->type != t)
            continue;
        gp_error err;
        if (gp_metrics_base_metrics(h, (gp_metric_type)t, &lists[t], &counts[t], &err) != GP_OK) {
            code = fail(&err);
            goto out;
        }
        for (size_t i = 0; i < counts[t]; i++) {
            int l = (int)strlen(lists[t][i]);
            width = l > width ? l : width;
        }
    }
    if (o->json) {
        json_head(&b, "list");
        json_host(&b, h);
        fl_buf_puts(&b, ",\"metrics\":[");
    } else {
        fl_buf_printf(&b, "%-*s  %s\n", width, "name", "type");
    }
    size_t shown = 0;
    for (int t = 0; t < 3; t++)
        for (size_t i = 0; i < counts[t]; i++) {
            if (o->grep && regexec(&re, lists[t][i], 0, NULL, 0) != 0)
                continue;
            const char *tn = gp_metric_type_name((gp_metric_type)t);
            if (o->json) {
                fl_buf_puts(&b, shown ? ",{\"name\":" : "{\"name\":");
                fl_buf_str(&b, lists[t][i]);
                fl_buf_puts(&b, ",\"type\":");
                fl_buf_str(&b, tn);
                fl_buf_puts(&b, "}");
            } else {
                fl_buf_printf(&b, "%-*s  %s\n", width, lists[t][i], tn);
            }
            shown++;
        }
    if (o->json)
        fl_buf_puts(&b, "]}\n");
    else
        fl_buf_printf(&b, "%zu metrics (%s, %s profiler)\n", shown, gp_metrics_host_chip(h),
                      gp_metrics_profiler_name(gp_metrics_host_profiler(h)));
    code = flush_out(&b);
out:
    if (code != 0)
        fl_buf_free(&b);
    for (int t = 0; t < 3; t++)
        gp_metrics_free_list(lists[t]);
    if (o->grep)
        regfree(&re);
    return code;
}

static int do_describe(const mopts *o, gp_metrics_host *h)
{
    fl_buf b = {0};
    if (o->json) {
        json_head(&b, "describe");
        json_host(&b, h);
        fl_buf_puts(&b, ",\"metrics\":[");
    }
    for (size_t k = 0; k < o->n_names; k++) {
        const char *name = o->names[k];
        gp_metric_props p;
        gp_error err;
        char **sub = NULL;
        size_t ns = 0;
        if (gp_metrics_properties(h, name, &p, &err) != GP_OK ||
            gp_metrics_sub_metrics(h, name, p.type, &sub, &ns, &err) != GP_OK) {
            fl_buf_free(&b);
            return fail(&err);
        }
        const char *tn = gp_metric_type_name(p.type), *sn = gp_metric_scope_name(p.scope);
        if (o->json) {
            fl_buf_puts(&b, k ? ",{\"name\":" : "{\"name\":");
            fl_buf_str(&b, name);
            fl_buf_puts(&b, ",\"description\":");
            fl_buf_str(&b, p.description);
            fl_buf_puts(&b, ",\"hw_unit\":");
            fl_buf_str(&b, p.hw_unit);
            fl_buf_puts(&b, ",\"dim_unit\":");
            fl_buf_str(&b, p.dim_unit);
            fl_buf_puts(&b, ",\"type\":");
            fl_buf_str(&b, tn);
            fl_buf_puts(&b, ",\"collection_scope\":");
            fl_buf_str(&b, sn);
            fl_buf_puts(&b, ",\"sub_metrics\":");
            json_list(&b, sub, ns);
            fl_buf_puts(&b, "}");
        } else {
            fl_buf_printf(&b, "%s%s\n", k ? "\n" : "", name);
            fl_buf_printf(&b, "  %-12s %s\n", "description", p.description);
            fl_buf_printf(&b, "  %-12s %s\n", "type", tn);
            fl_buf_printf(&b, "  %-12s %s\n", "hw unit", p.hw_unit);
            fl_buf_printf(&b, "  %-12s %s\n", "unit", p.dim_unit);
            fl_buf_printf(&b, "  %-12s %s\n", "scope", sn);
            fl_buf_printf(&b, "  %-12s", "sub-metrics");
            for (size_t i = 0; i < ns; i++)
                fl_buf_printf(&b, "%s%s", i ? (i % 2 ? "  " : "\n               ") : " ", sub[i]);
            fl_buf_puts(&b, "\n");
        }
        gp_metrics_free_list(sub);
    }
    if (o->json)
        fl_buf_puts(&b, "]}\n");
    return flush_out(&b);
}

static int do_passes(const mopts *o, gp_metrics_host *h)
{
    gp_error err;
    uint8_t *img = NULL;
    size_t size = 0, passes = 0, max = 0;
    if (gp_metrics_config_image(h, (const char *const *)o->names, o->n_names, &img, &size, &err) !=
        GP_OK)
        return fail(&err);
    gp_status st = gp_metrics_passes(img, size, &passes, &err);
    gp_metrics_free_image(img);
    if (st != GP_OK)
        return fail(&err);
    if (gp_metrics_max_per_pass(gp_metrics_host_chip(h), gp_metrics_host_profiler(h), &max, &err) !=
        GP_OK)
        return fail(&err);
    fl_buf b = {0};
    if (o->json) {
        json_head(&b, "passes");
        json_host(&b, h);
        fl_buf_puts(&b, ",\"metrics\":");
        json_list(&b, o->names, o->n_names);
        fl_buf_printf(
            &b, ",\"passes\":%zu,\"config_image_bytes\":%zu,\"max_hw_metrics_per_pass\":%zu}\n",
            passes, size, max);
    } else {
        fl_buf_printf(&b, "%-24s %s (%s profiler)\n", "chip", gp_metrics_host_chip(h),
                      gp_metrics_profiler_name(gp_metrics_host_profiler(h)));
        fl_buf_printf(&b, "%-24s %zu\n", "metrics", o->n_names);
        fl_buf_printf(&b, "%-24s %zu\n", "passes", passes);
        fl_buf_printf(&b, "%-24s %zu bytes\n", "config image", size);
        fl_buf_printf(&b, "%-24s %zu\n", "max hw metrics per pass", max);
    }
    return flush_out(&b);
}

int cli_metrics_main(int argc, char **argv)
{
    mopts o;
    int p = parse(argc, argv, &o);
    if (p != 0) {
        free(o.names);
        return p == 1 ? 0 : p;
    }
    /* The plugin, where --engine finds it (the library alone looks beside
     * itself, which for an installed command is bin/, not lib/). */
    char path[4096], msg[1024];
    int found = cli_find_plugin(path, sizeof path, msg, sizeof msg);
    if (found <= 0) {
        cli_say("metrics: %s", msg);
        free(o.names);
        return EXIT_FAIL;
    }
    setenv("GPUFL_CUPTI_PLUGIN", path, 1);
    int code;
    if (strcmp(o.cmd, "chips") == 0) {
        code = do_chips(&o);
    } else if (strcmp(o.cmd, "sets") == 0) {
        code = cli_metrics_sets(o.chip, o.engine, o.json);
    } else if (strcmp(o.cmd, "fits") == 0) {
        code = cli_metrics_fits(o.chip, o.engine, o.names, o.n_names, o.json);
    } else {
        gp_metrics_host *h = NULL;
        gp_error err;
        if (gp_metrics_host_create(o.chip, o.profiler, &h, &err) != GP_OK) {
            code = fail(&err);
        } else if (strcmp(o.cmd, "list") == 0) {
            code = do_list(&o, h);
        } else if (strcmp(o.cmd, "describe") == 0) {
            code = do_describe(&o, h);
        } else {
            code = do_passes(&o, h);
        }
        gp_metrics_host_destroy(h);
    }
    gp_metrics_release_cache();
    free(o.names);
    return code;
}
